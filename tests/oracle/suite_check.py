#!/usr/bin/env python3
"""Checks suite cases against the real libraries, as semantics_diff.py compares
generated configs: each case's config is resolved by `ctq inspect --semantics
all --json`, by compressed-tensors 0.20.0 on the family's transformers 5.23
(or diffusers) model and by vLLM 0.26.0's resolver from the wheel, module by
module; a case whose config the oracle's families cannot build is skipped.

    python tests/oracle/suite_check.py --ctq build/ctq --vllm-wheel WHEEL suites/trees/oracle-families.json ...

The family comes from the config: `_class_name` (the DiT), else
`architectures[0]` (families.FAMILIES' arch, SequenceClassification -> seqcls).
Exit 1 when a case disagrees."""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import families  # noqa: E402
import semantics_diff as sd  # noqa: E402
import vllm_stub  # noqa: E402


def family_of(cfg):
    if cfg.get("_class_name") == "QwenImageTransformer2DModel":
        return families.FAMILIES["dit"]
    arch = (cfg.get("architectures") or [None])[0] or ""
    if arch.endswith("ForSequenceClassification"):
        return families.FAMILIES["seqcls"]
    for f in list(families.FAMILIES.values()) + list(families.EXTRA.values()):
        if f.arch == arch:
            return f
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ctq", default="build/ctq")
    ap.add_argument("--vllm-wheel", required=True)
    ap.add_argument("suites", nargs="+")
    a = ap.parse_args()
    sd.quiet()
    from compressed_tensors.quantization.quant_scheme import PRESET_SCHEMES
    sd.PRESET_GROUP_NAMES = sorted(PRESET_SCHEMES)
    o = sd.Oracle(a.ctq, vllm_stub.load(a.vllm_wheel), tempfile.mkdtemp(prefix="ctq-suite-check-"))
    bad = 0
    for path in a.suites:
        with open(path) as f:
            cases = json.load(f)
        for c in cases if isinstance(cases, list) else []:
            if not isinstance(c, dict):
                continue
            cfg = c.get("config")
            fam = family_of(cfg) if isinstance(cfg, dict) else None
            if fam is None or "tensors" in c or "quantization_config" not in cfg:
                print("skip   %s" % c.get("id"))
                continue
            o.fam = fam
            try:
                fam.build(cfg)
            except Exception as e:  # a config transformers cannot build (tiny odd shapes)
                print("skip   %s (the library cannot build it: %s)" % (c.get("id"), sd.fmt_exc(e)[:100]))
                continue
            try:
                res = o.evaluate(cfg)
            except Exception as e:
                print("skip   %s (%s)" % (c.get("id"), sd.fmt_exc(e)[:100]))
                continue
            dis = [(p, n, d["library"], d["ctq"]) for p in res for n, ok, _, d in res[p] if not ok]
            bad += bool(dis)
            print("%s %s (%s)%s" % ("agree " if not dis else "DIFFER", c["id"], fam.name,
                                     "".join("\n       %s %s: library %s, ctq %s" % x for x in dis[:6])))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
