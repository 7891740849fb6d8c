#!/usr/bin/env python3
"""Writes tests/fixtures/oracle.safetensors with the real Python `safetensors`
library, and tests/fixtures/oracle.json describing it (each tensor's name,
dtype, shape and the sha256 of its bytes, plus the whole file's sha256).

tests/test_safetensors.c reads both: ctq's reader must see exactly these
tensors, and ctq's writer, given the same tensors, must produce a
byte-identical file (the library's layout is deterministic: tensors sorted by
dtype order descending, then by name; one metadata key keeps the header
deterministic too).

Needs: pip install safetensors numpy. Run from the repository root:
    python3 tests/oracle/make_safetensors_fixture.py
"""
import hashlib
import json
import os
import sys

import numpy as np
import safetensors
from safetensors import serialize_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures")

# (name, safetensors dtype, library dtype name, numpy array holding the bytes)
# BF16 and F8_E4M3 have no numpy dtype: their bit patterns are given as
# uint16 / uint8 arrays and the library is told the real dtype by name.
TENSORS = [
    ("model.embed_tokens.weight", "F32", "float32",
     np.array([[1.0, -2.5, 3.25], [0.0, -0.0, 1e-3]], dtype=np.float32)),
    ("a.first_f32", "F32", "float32", np.array([7.0], dtype=np.float32)),
    ("layers.0.scale", "F16", "float16",
     np.array([1.0, -0.5, 65504.0, 6e-8], dtype=np.float16)),
    # 1.0, -2.0, 0.5, the smallest bf16 subnormal
    ("layers.0.weight", "BF16", "bfloat16",
     np.array([[0x3F80, 0xC000], [0x3F00, 0x0001]], dtype=np.uint16)),
    ("layers.0.q_int8", "I8", "int8",
     np.array([[-128, 127], [0, -1], [5, -5]], dtype=np.int8)),
    ("ids", "I32", "int32", np.array([2**31 - 1, -2**31, 0], dtype=np.int32)),
    ("steps", "I64", "int64", np.array([2**62, -3], dtype=np.int64)),
    ("mask_u8", "U8", "uint8", np.array([0, 1, 255, 128, 7], dtype=np.uint8)),
    ("double", "F64", "float64", np.array([0.1, -1e300], dtype=np.float64)),
    ("flags", "BOOL", "bool", np.array([True, False, True], dtype=np.bool_)),
    # 1.0, 448, -448, the smallest subnormal
    ("fp8", "F8_E4M3", "float8_e4m3fn",
     np.array([0x38, 0x7E, 0xFE, 0x01], dtype=np.uint8)),
    ("empty", "F32", "float32", np.zeros((0,), dtype=np.float32)),
    ("scalar", "I32", "int32", np.array(42, dtype=np.int32)),
]
METADATA = {"format": "pt"}


def spec(lib_dtype, arr):
    """The library's per-tensor argument; its form changed in 0.7/0.8."""
    if hasattr(safetensors, "TensorSpec"):
        return safetensors.TensorSpec(dtype=lib_dtype, shape=list(arr.shape),
                                      data_ptr=arr.ctypes.data,
                                      data_len=arr.nbytes)
    return {"dtype": lib_dtype, "shape": list(arr.shape), "data": arr.tobytes()}


def main():
    if sys.byteorder != "little":
        sys.exit("this generator assumes a little-endian host")
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "oracle.safetensors")
    # (np.ascontiguousarray would turn the 0-d scalar into shape (1,).)
    arrays = {name: a for name, _, _, a in TENSORS}
    assert all(a.flags["C_CONTIGUOUS"] for a in arrays.values())
    serialize_file({name: spec(lib, arrays[name]) for name, _, lib, _ in TENSORS},
                   path, metadata=METADATA)
    with open(path, "rb") as f:
        blob = f.read()
    oracle = {
        "generator": "tests/oracle/make_safetensors_fixture.py",
        "safetensors_version": safetensors.__version__,
        "numpy_version": np.__version__,
        "file": "oracle.safetensors",
        "file_bytes": len(blob),
        "file_sha256": hashlib.sha256(blob).hexdigest(),
        "metadata": METADATA,
        "tensors": [
            {"name": name, "dtype": st_dtype, "shape": list(arrays[name].shape),
             "sha256": hashlib.sha256(arrays[name].tobytes()).hexdigest()}
            for name, st_dtype, _, _ in TENSORS
        ],
    }
    with open(os.path.join(OUT, "oracle.json"), "w") as f:
        json.dump(oracle, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({len(blob)} bytes) with safetensors {safetensors.__version__}")


if __name__ == "__main__":
    main()
