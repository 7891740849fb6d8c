#!/bin/sh
# Bad-input checks for the ctq program: each malformed input must give a
# clear error naming its path and exit 2 — never a crash, a hang or partial
# output files. Usage: tests/badinput.sh path/to/ctq
set -u
ctq=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# expect_usage ID NEEDLE CMD...: exit 2 within 30 s, stderr contains NEEDLE.
expect_usage() {
	id=$1
	needle=$2
	shift 2
	timeout 30 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -eq 2 ] && grep -qF -- "$needle" "$tmp/err"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL badinput/$id: exit $rc, stderr:"
		sed 's/^/    /' "$tmp/err" | cut -c1-300 | head -n 5
	fi
}

good_group='{"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "symmetric": true, "strategy": "channel", "dynamic": false}, "input_activations": {"num_bits": 8, "type": "int", "symmetric": true, "strategy": "token", "dynamic": true}, "format": "int-quantized"}'
model='"model_type": "qwen3", "num_hidden_layers": 2'

printf '{"quantization_config": {"config_groups": {' >"$tmp/invalid.json"
expect_usage invalid-json "$tmp/invalid.json:" "$ctq" inspect "$tmp/invalid.json"

printf '{%s, "quantization_config": {"config_groups": {"g": %s}, "ignore": "lm_head"}}' "$model" "$good_group" >"$tmp/types.json"
expect_usage wrong-type "quantization_config.ignore" "$ctq" inspect "$tmp/types.json"

printf '{%s, "quantization_config": {"config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "num_bits": 4}}}}}' "$model" >"$tmp/dup.json"
expect_usage duplicate-key "quantization_config.config_groups.g.weights.num_bits" "$ctq" inspect "$tmp/dup.json"

python3 -c "
import sys
sys.stdout.write('{\"model_type\": \"qwen3\", \"num_hidden_layers\": 1, \"quantization_config\": {\"config_groups\": {}, \"ignore\": [\"' + 'x' * (10 << 20) + '\"]}}')
" >"$tmp/bigstring.json"
expect_usage ten-megabyte-string "$tmp/bigstring.json:" "$ctq" inspect "$tmp/bigstring.json"

python3 -c "
import sys
sys.stdout.write('{\"quantization_config\": ' + '[' * 10000 + ']' * 10000 + '}')
" >"$tmp/deep.json"
expect_usage nested-10000 "nested deeper" "$ctq" inspect "$tmp/deep.json"

printf '{%s, "quantization_config": {"config_groups": {"g": {"targets": ["re:(a+)+$"], "weights": {"num_bits": 8, "strategy": "channel"}}}}}' "$model" >"$tmp/redos.json"
long=$(python3 -c "print('a' * 5000 + '!.')")
expect_usage catastrophic-regex "quantization_config.config_groups.g.targets[0]" "$ctq" inspect "$tmp/redos.json" --prefix "$long"

printf '{%s, "quantization_config": {"config_groups": {"g": {"targets": ["re:(unclosed"]}}}}' "$model" >"$tmp/badre.json"
expect_usage regex-syntax "does not compile" "$ctq" inspect "$tmp/badre.json"

printf '{%s, "quantization_config": {"config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": {"value": 4}}}}}}' "$model" >"$tmp/kimi.json"
expect_usage num-bits-object "weights.num_bits" "$ctq" inspect "$tmp/kimi.json"

expect_usage missing-file "$tmp/nope.json" "$ctq" inspect "$tmp/nope.json"
: >"$tmp/empty.json"
expect_usage empty-file "$tmp/empty.json" "$ctq" inspect "$tmp/empty.json"
printf '[1, 2]' >"$tmp/array.json"
expect_usage root-not-object "expected a config.json object" "$ctq" inspect "$tmp/array.json"
printf '{"quantization_config": {"config_groups": {}}}' >"$tmp/nomodel.json"
expect_usage no-model "--arch" "$ctq" inspect "$tmp/nomodel.json"
expect_usage bad-semantics "--semantics" "$ctq" inspect "$tmp/nomodel.json" --semantics sglang
expect_usage unknown-option "--frobnicate" "$ctq" inspect "$tmp/nomodel.json" --frobnicate
expect_usage unknown-command "frobnicate" "$ctq" frobnicate

# conform: a file that is not a case; nothing may be written.
mkdir -p "$tmp/suite/a"
printf '{"id": "a/ok", "config": {"quantization_config": {"config_groups": {}}}, "model": {"arch": "qwen3", "layers": 1}, "expect": {"modules": {"lm_head": {"scheme": "unquantized"}}}}' >"$tmp/suite/a/ok.json"
printf '{"hello": "world"}' >"$tmp/suite/a/zz-not-a-case.json"
expect_usage not-a-case "zz-not-a-case.json" "$ctq" conform --suite "$tmp/suite" --out "$tmp/run1"
if [ -e "$tmp/run1" ] || ls "$tmp" | grep -q 'run1.tmp'; then
	fail=$((fail + 1))
	echo "FAIL badinput/not-a-case-leaves-nothing: $tmp/run1 exists"
else
	pass=$((pass + 1))
fi
rm "$tmp/suite/a/zz-not-a-case.json"
printf '[{"id": "a/empty", "config": {"quantization_config": {"config_groups": {}}}, "model": {"arch": "qwen3", "layers": 1}, "expect": {}}]' >"$tmp/suite/a/empty.json"
expect_usage case-checks-nothing "nothing to check" "$ctq" conform --suite "$tmp/suite" --out "$tmp/run2"
rm "$tmp/suite/a/empty.json"
printf '{"id": "a/ok", "config": {}, "model": {"arch": "qwen3", "layers": 1}, "expect": {"modules": {"lm_head": {"scheme": "unquantized"}}}}' >"$tmp/suite/a/dup.json"
expect_usage duplicate-case-id "duplicate id" "$ctq" conform --suite "$tmp/suite" --out "$tmp/run3"
rm "$tmp/suite/a/dup.json"
printf '{"id": "a/bad-class", "config": {}, "model": {"arch": "qwen3", "layers": 1}, "expect": {"error": {"class": "oops"}}}' >"$tmp/suite/a/badclass.json"
expect_usage unknown-error-class "error class" "$ctq" conform --suite "$tmp/suite" --out "$tmp/run4"
rm "$tmp/suite/a/badclass.json"
# conform: the module tree's keys (tensors, absent, guessed) are validated.
printf '{"id": "a/bad-shape", "config": {}, "tensors": {"x.weight": [2, -1]}, "expect": {"modules": {"x": {"guessed": true}}}}' >"$tmp/suite/a/badshape.json"
expect_usage tensors-bad-shape "non-negative integers" "$ctq" conform --suite "$tmp/suite" --out "$tmp/run4b"
rm "$tmp/suite/a/badshape.json"
printf '{"id": "a/two-trees", "config": {}, "model": {"arch": "qwen3", "layers": 1}, "tensors": {"x.weight": [2, 2]}, "expect": {"modules": {"x": {"absent": true}}}}' >"$tmp/suite/a/twotrees.json"
expect_usage model-and-tensors "one of model, modules and tensors" "$ctq" conform --suite "$tmp/suite" --out "$tmp/run4c"
rm "$tmp/suite/a/twotrees.json"
printf '{"id": "a/absent-and-scheme", "config": {}, "model": {"arch": "qwen3", "layers": 1}, "expect": {"modules": {"lm_head": {"absent": true, "scheme": "unquantized"}}}}' >"$tmp/suite/a/absent.json"
expect_usage absent-alone "absent is true and alone" "$ctq" conform --suite "$tmp/suite" --out "$tmp/run4d"
rm "$tmp/suite/a/absent.json"

# conform: a numeric case is bounded by its checkpoint's bytes (the product
# of its fields), not only field by field; nothing may be written.
mkdir -p "$tmp/suitebig/a"
printf '{"id": "a/big", "checkpoint": {"arch": "qwen3", "preset": "tiny", "hidden_size": 8192, "intermediate_size": 32768, "num_hidden_layers": 64}, "numeric_tp": [2], "expect": {"numeric": "pass"}}' >"$tmp/suitebig/a/big.json"
expect_usage numeric-case-bytes "at most 64 MiB" "$ctq" conform --suite "$tmp/suitebig" --out "$tmp/runbig"
if [ -e "$tmp/runbig" ]; then
	fail=$((fail + 1))
	echo "FAIL badinput/numeric-case-bytes: $tmp/runbig was written"
fi

# The good suite still runs, and a failing expectation exits 1.
timeout 30 "$ctq" conform --suite "$tmp/suite" --out "$tmp/run5" >"$tmp/out" 2>&1
if [ $? -eq 0 ] && [ -f "$tmp/run5/conform.csv" ] && [ -f "$tmp/run5/junit.xml" ]; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL badinput/good-suite-runs"
	cat "$tmp/out"
fi
printf '{"id": "a/wrong", "config": {}, "model": {"arch": "qwen3", "layers": 1}, "expect": {"modules": {"lm_head": {"scheme": "w8a8-int8"}}}}' >"$tmp/suite/a/wrong.json"
timeout 30 "$ctq" conform --suite "$tmp/suite" --out "$tmp/run6" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "1 passed, 1 failed" "$tmp/out"; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL badinput/failing-check-exits-1: exit $rc"
	cat "$tmp/out"
fi

# report and compare read finished run directories only.
mkdir -p "$tmp/emptyrun"
expect_usage report-empty-folder "$tmp/emptyrun" "$ctq" report "$tmp/emptyrun"
cp -r "$tmp/run5" "$tmp/run5.tmp-Zz9Yy8"
expect_usage report-killed-run "did not finish" "$ctq" report "$tmp/run5.tmp-Zz9Yy8"
expect_usage compare-killed-run "did not finish" "$ctq" compare "$tmp/run5" "$tmp/run5.tmp-Zz9Yy8" --out "$tmp/cmp1"

# --out never deletes what is not a ctq run directory, and replaces one
# only with --force.
mkdir -p "$tmp/victim/sub"
echo keep >"$tmp/victim/important.txt"
expect_usage out-not-a-run-dir "$tmp/victim" "$ctq" conform --suite "$tmp/suite" --out "$tmp/victim"
if [ -f "$tmp/victim/important.txt" ] && [ -d "$tmp/victim/sub" ]; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL badinput/out-not-a-run-dir-kept: $tmp/victim lost its files"
fi
echo keep >"$tmp/victim-file"
expect_usage out-is-a-file "$tmp/victim-file" "$ctq" conform --suite "$tmp/suite" --out "$tmp/victim-file" --force
expect_usage out-run-dir-needs-force "--force" "$ctq" conform --suite "$tmp/suite" --out "$tmp/run5"
rm "$tmp/suite/a/wrong.json"
rm -rf "$tmp/run5.tmp-Zz9Yy8"
timeout 30 "$ctq" conform --suite "$tmp/suite" --out "$tmp/run5" --force >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -f "$tmp/victim-file" ] && [ -f "$tmp/run5/conform.csv" ] &&
	! ls "$tmp" | grep -q 'run5\.\(tmp\|old\)-'; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL badinput/out-force-replaces-run-dir: exit $rc"
	cat "$tmp/out"
fi

# A FIFO where a file is expected is refused at once (io-error naming it),
# never opened for a read that waits for a writer. timeout 10 bounds a
# regression.
expect_fifo() {
	id=$1
	needle=$2
	shift 2
	timeout 10 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	if [ "$rc" -eq 2 ] && grep -qF -- "$needle" "$tmp/err" && grep -q "FIFO" "$tmp/err"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL badinput/$id: exit $rc (124: it blocked on the FIFO), stderr:"
		sed 's/^/    /' "$tmp/err" | cut -c1-300 | head -n 5
	fi
}
mkfifo "$tmp/fifo.json" "$tmp/fifo.gguf"
expect_fifo fifo-config "$tmp/fifo.json" "$ctq" inspect "$tmp/fifo.json"
expect_fifo fifo-plan "$tmp/fifo.json" "$ctq" run "$tmp/fifo.json" --out "$tmp/fiforun"
expect_fifo fifo-gguf "$tmp/fifo.gguf" "$ctq" import-gguf "$tmp/fifo.gguf" "$tmp/fifo-out"
mkdir -p "$tmp/fifosuite/a"
mkfifo "$tmp/fifosuite/a/case.json"
expect_fifo fifo-case "$tmp/fifosuite/a/case.json" "$ctq" conform --suite "$tmp/fifosuite" --out "$tmp/fiforun"
mkdir -p "$tmp/fifockpt"
printf '{"model_type": "llama", "num_hidden_layers": 1}' >"$tmp/fifockpt/config.json"
mkfifo "$tmp/fifockpt/model.safetensors"
expect_fifo fifo-checkpoint "$tmp/fifockpt/model.safetensors" "$ctq" quantize "$tmp/fifockpt" "$tmp/fifo-q"
"$ctq" make-model --arch llama --preset tiny "$tmp/tiny" >/dev/null 2>&1
mkfifo "$tmp/fifo-tokenizer.json"
expect_fifo fifo-tokenizer "$tmp/fifo-tokenizer.json" "$ctq" eval mmlu --model "$tmp/tiny" --tokenizer "$tmp/fifo-tokenizer.json" --backend reference --out "$tmp/fiforun"
cp -r "$(dirname "$0")/../datasets/mmlu" "$tmp/fifo-mmlu"
rm "$tmp/fifo-mmlu/dev/philosophy_dev.csv"
mkfifo "$tmp/fifo-mmlu/dev/philosophy_dev.csv"
expect_fifo fifo-dataset-csv "$tmp/fifo-mmlu/dev/philosophy_dev.csv" "$ctq" eval mmlu --model "$tmp/tiny" --data "$tmp/fifo-mmlu" --backend reference --out "$tmp/fiforun"

# A plan step naming more "after" ids than there can be steps (a write past
# the step's array before) is a bad plan.
python3 -c "
import json, sys
steps = [{'id': 's0', 'command': 'inspect', 'args': ['x']},
         {'id': 's1', 'command': 'inspect', 'args': ['x'], 'after': ['s0'] * 300}]
json.dump({'name': 'p', 'steps': steps}, sys.stdout)
" >"$tmp/after.json"
expect_usage plan-after-overflow "steps[1].after" "$ctq" run "$tmp/after.json" --out "$tmp/afterrun"
if [ -e "$tmp/afterrun" ]; then
	fail=$((fail + 1))
	echo "FAIL badinput/plan-after-overflow-runs-nothing: $tmp/afterrun exists"
else
	pass=$((pass + 1))
fi

# Help and version: exit 0 with the text on stdout.
expect_ok() {
	id=$1
	needle=$2
	shift 2
	timeout 30 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -eq 0 ] && grep -qF -- "$needle" "$tmp/out"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL badinput/$id: exit $rc, stdout:"
		sed 's/^/    /' "$tmp/out" | cut -c1-300 | head -n 5
	fi
}
expect_ok version "(revision " "$ctq" --version
expect_ok help-help "usage: ctq <command>" "$ctq" help --help
expect_ok run-help-no-report "[--no-report]" "$ctq" run --help
expect_ok run-help-force "--force" "$ctq" run --help
if grep -q '"build_revision"' "$tmp/run5/manifest.json" && grep -q '"version"' "$tmp/run5/manifest.json"; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL badinput/manifest-version: $tmp/run5/manifest.json has no ctq version and build revision"
fi

# Step 11: a checkpoint path that does not exist is said first (io-error
# naming it, exit 2), before the tokenizer or the CUDA backend.
expect_usage eval-model-missing "io-error at $tmp/no-model: --model" "$ctq" eval mmlu --model "$tmp/no-model" --backend cuda
expect_usage eval-ref-model-missing "io-error at $tmp/no-ref: --ref-model" "$ctq" eval mmlu --model . --ref-model "$tmp/no-ref"
expect_usage bench-model-missing "io-error at $tmp/no-model: --model" "$ctq" bench model --model "$tmp/no-model" --backend cuda
# The same check after option parsing in each command (a plan step of
# `ctq run` calls them directly), and a regular file is not a checkpoint
# folder either. The message names the path, not the tokenizer or CUDA.
expect_not() {
	id=$1
	unwanted=$2
	if grep -qiF -- "$unwanted" "$tmp/err"; then
		fail=$((fail + 1))
		echo "FAIL badinput/$id: stderr mentions $unwanted:"
		sed 's/^/    /' "$tmp/err" | cut -c1-300 | head -n 5
	else
		pass=$((pass + 1))
	fi
}
expect_usage eval-model-nonexistent "io-error at /nonexistent: --model" "$ctq" eval mmlu --model /nonexistent
expect_not eval-model-nonexistent-no-tokenizer tokenizer
expect_usage bench-model-nonexistent "io-error at /nonexistent: --model" "$ctq" bench model --model /nonexistent --backend cuda
expect_not bench-model-nonexistent-no-cuda cuda
printf 'not a checkpoint\n' >"$tmp/model-file"
expect_usage eval-model-file "io-error at $tmp/model-file: --model: not a folder" "$ctq" eval mmlu --model "$tmp/model-file"
expect_not eval-model-file-no-tokenizer tokenizer
mkdir -p "$tmp/objmodel"
printf '{}' >"$tmp/objmodel/config.json"
expect_usage eval-ref-model-file "io-error at $tmp/model-file: --ref-model: not a folder" "$ctq" eval mmlu --model "$tmp/objmodel" --ref-model "$tmp/model-file"
expect_usage bench-model-file "io-error at $tmp/model-file: --model: not a folder" "$ctq" bench model --model "$tmp/model-file" --backend cuda
expect_not bench-model-file-no-cuda cuda
expect_usage bench-serve-file "io-error at $tmp/model-file: --model: not a folder" "$ctq" bench serve --model "$tmp/model-file" --backend cuda
expect_usage generate-model-file "io-error at $tmp/model-file: --model: not a folder" "$ctq" generate --model "$tmp/model-file" --prompt hi
# one seconds parser for every timeout option (harness/common.c): HTTP
# timeouts are whole milliseconds, where 0 would mean none
expect_usage bench-url-timeout-sub-ms "--request-timeout is \"0.0004\"; expected seconds in [0.001, 1e7]" "$ctq" bench serve --url http://127.0.0.1:9 --model m --request-timeout 0.0004 --out "$tmp/url-run"
expect_usage bench-url-total-timeout-zero "--timeout is \"0\"; expected seconds in [0.001, 1e7]" "$ctq" bench serve --url http://127.0.0.1:9 --model m --timeout 0 --out "$tmp/url-run"
expect_usage eval-timeout-nan "--request-timeout is \"nan\"; expected seconds in [0.001, 1e7]" "$ctq" eval mmlu --model . --request-timeout nan
expect_usage bench-url-arrival "--arrival is \"poisson:inf\"; expected closed or poisson:RATE" "$ctq" bench serve --url http://127.0.0.1:9 --model m --arrival poisson:inf --out "$tmp/url-run"
# one list splitter (core/split.h) for --m, --batch, --input-len, --acts,
# --weights, --paths, --subjects and --wna16: an empty entry, too many
# entries or a long list are refused, never skipped or cut short
expect_usage probe-m-empty-entry '--m is "1,,2"; an entry is empty' "$ctq" probe --m 1,,2
expect_usage probe-m-too-many "expected at most 16 entries" "$ctq" probe --m "$(seq -s, 1 17)"
expect_usage bench-gemm-m-too-many "expected at most 32 entries" "$ctq" bench gemm --m "$(seq -s, 1 33)"
expect_usage bench-model-batch-empty '--batch is empty; expected ENTRY[,ENTRY...]' "$ctq" bench model --batch ""
expect_usage bench-model-len-trailing-comma '--input-len is "8,"; an entry is empty' "$ctq" bench model --input-len 8,
expect_usage probe-acts-empty-entry '--acts is "gaussian,"; an entry is empty' "$ctq" probe --acts gaussian,
expect_usage probe-weights-unknown '--weights names "pm128"; it takes random, pm127, constant, zero-row' "$ctq" probe --weights random,pm128
expect_usage bench-gemm-paths-empty-entry '--paths is "gemv,,dp4a"; an entry is empty' "$ctq" bench gemm --paths gemv,,dp4a
expect_usage eval-subjects-empty-entry '--subjects is "anatomy,,virology"; an entry is empty' "$ctq" eval mmlu --subjects anatomy,,virology

# inspect matches each re: target and ignore entry against each module:
# more than 6554000 (entry, module) pairs is refused before resolving
# (docs/semantics.md "Cost of inspect"). regex_config LAYERS TARGETS IGNORES.
regex_config() {
	awk -v L="$1" -v T="$2" -v I="$3" 'BEGIN {
		printf "{\"model_type\": \"qwen3\", \"num_hidden_layers\": %d, \"quantization_config\": {\"config_groups\": {\"g\": {\"targets\": [", L
		for (t = 0; t < T - 1; t++)
			printf "\"re:.*layers\\\\.%d\\\\.mlp\\\\.down_proj$\", ", t % L
		printf "\"re:.*_proj$\"], \"weights\": {\"num_bits\": 8, \"type\": \"int\", \"symmetric\": true, \"strategy\": \"channel\", \"dynamic\": false}, \"input_activations\": {\"num_bits\": 8, \"type\": \"int\", \"symmetric\": true, \"strategy\": \"token\", \"dynamic\": true}}}, \"ignore\": [\"lm_head\""
		for (i = 0; i < I; i++)
			printf ", \"re:.*layers\\\\.%d\\\\.mlp\\\\.gate_proj$\"", i % L
		printf "]}}\n"
	}'
}
regex_config 4096 201 0 >"$tmp/regex-targets.json"
expect_usage inspect-regex-targets-bound "invalid-config at $tmp/regex-targets.json: 201 re: targets and ignore entries x 32770 modules" "$ctq" inspect "$tmp/regex-targets.json" --semantics all
regex_config 4096 1 200 >"$tmp/regex-ignore.json"
expect_usage inspect-regex-ignore-bound "inspect takes at most 6554000" "$ctq" inspect "$tmp/regex-ignore.json"
regex_config 64 2000 0 >"$tmp/regex-small-model.json"
expect_ok inspect-regex-below-bound "model.layers.63.mlp.down_proj" "$ctq" inspect "$tmp/regex-small-model.json"

# check ID CONDITION-EXIT-STATUS MESSAGE: counts a shell check.
check() {
	if [ "$2" -eq 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL badinput/$1: $3"
	fi
}
root=$(cd "$(dirname "$0")/.." && pwd)

# A checkpoint whose config.json is a JSON array: every command that takes a
# model folder says the same thing (invalid-config, exit 2) naming the file,
# before any backend opens or tokenizer loads (core/hf_config.h).
mkdir -p "$tmp/arrmodel"
printf '[1, 2]' >"$tmp/arrmodel/config.json"
arrmsg="invalid-config at $tmp/arrmodel/config.json: is a JSON array at its root"
expect_usage array-config-inspect "$arrmsg" "$ctq" inspect "$tmp/arrmodel"
expect_usage array-config-quantize "$arrmsg" "$ctq" quantize "$tmp/arrmodel" "$tmp/arrmodel-q"
expect_usage array-config-generate "$arrmsg" "$ctq" generate --model "$tmp/arrmodel" --prompt hi
expect_usage array-config-serve "$arrmsg" "$ctq" serve --model "$tmp/arrmodel" --port 0
expect_usage array-config-eval "$arrmsg" "$ctq" eval mmlu --model "$tmp/arrmodel" --data "$tmp"
expect_usage array-config-eval-kld "$arrmsg" "$ctq" eval kld --model "$tmp/arrmodel" --ref-model "$tmp/arrmodel" --text "$tmp/nonexistent.txt"
expect_usage array-config-bench-model "$arrmsg" "$ctq" bench model --model "$tmp/arrmodel"
expect_usage array-config-bench-serve "$arrmsg" "$ctq" bench serve --model "$tmp/arrmodel"
expect_usage array-config-probe "$arrmsg" "$ctq" probe --model "$tmp/arrmodel"

# generate on a checkpoint without a tokenizer (ctq make-model writes none)
# says how to give one.
"$ctq" make-model --arch qwen3 --preset tiny --seed 1 --quiet "$tmp/notok" >/dev/null 2>&1
expect_usage generate-hints-tokenizer "--tokenizer PATH, or --ids LIST" "$ctq" generate --model "$tmp/notok" --prompt hi --backend reference

# quantize --recipe smoothquant / gptq: a model without tokenizer.json, a
# text too short for one window, an unknown recipe, gptq without
# calibration, a strength or dampening outside [0, 1], a GPTQ option under
# rtn; OUT is never created.
printf 'calibration text' >"$tmp/calib.txt"
expect_usage quantize-calib-no-tokenizer "notok/tokenizer.json: is missing" "$ctq" quantize "$tmp/notok" "$tmp/notok-sq" --recipe smoothquant --calib "$tmp/calib.txt" --quiet
cp "$root/tests/fixtures/tokenizers/gpt2-small/tokenizer.json" "$tmp/notok/"
expect_usage quantize-calib-short "calib.txt: holds" "$ctq" quantize "$tmp/notok" "$tmp/notok-sq" --recipe smoothquant --calib "$tmp/calib.txt" --quiet
expect_usage quantize-recipe-unknown "--recipe awq is unknown" "$ctq" quantize "$tmp/notok" "$tmp/notok-sq" --recipe awq
expect_usage quantize-gptq-no-calib "--recipe gptq needs --calib FILE" "$ctq" quantize "$tmp/notok" "$tmp/notok-sq" --recipe gptq
expect_usage quantize-dampening-range "--dampening-frac 1.5 is not a number in [0, 1]" "$ctq" quantize "$tmp/notok" "$tmp/notok-sq" --recipe gptq --calib "$tmp/calib.txt" --dampening-frac 1.5
expect_usage quantize-block-size-rtn "--block-size belongs to --recipe gptq" "$ctq" quantize "$tmp/notok" "$tmp/notok-sq" --block-size 64
expect_usage quantize-strength-range "--smoothing-strength 2 is not a number in [0, 1]" "$ctq" quantize "$tmp/notok" "$tmp/notok-sq" --recipe smoothquant --calib "$tmp/calib.txt" --smoothing-strength 2
check quantize-sq-no-out "$([ -e "$tmp/notok-sq" ] && echo 1 || echo 0)" "a refused quantize --recipe smoothquant created OUT"

# make help prints the targets and nothing else (no build banner, no stray
# Makefile lines).
# (MAKEFLAGS cleared: under `make -jN test` the inherited jobserver would
# make the child print "jobserver unavailable")
help_out=$(MAKEFLAGS= MFLAGS= make -C "$root" --no-print-directory -s help 2>&1)
check make-help-clean "$(printf '%s\n' "$help_out" | grep -qv '^make ' && echo 1 || echo 0)" \
	"$(printf '%s\n' "$help_out" | grep -v '^make ' | head -3)"

# tools/deps.sh waits for another apt's lock and logs to a private file.
mkdir -p "$tmp/fakebin" "$tmp/deps-tmp"
printf '#!/bin/sh\nexit 1\n' >"$tmp/fakebin/dpkg-query"
printf '#!/bin/sh\necho 0\n' >"$tmp/fakebin/id"
printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt-args"\necho "E: fake apt failure"\nexit 100\n' "$tmp" >"$tmp/fakebin/apt-get"
chmod +x "$tmp/fakebin/dpkg-query" "$tmp/fakebin/id" "$tmp/fakebin/apt-get"
PATH="$tmp/fakebin:$PATH" TMPDIR="$tmp/deps-tmp" sh "$root/tools/deps.sh" ctq-no-such-pkg >"$tmp/deps-out" 2>&1
rc=$?
check deps-lock-timeout "$([ "$rc" -eq 1 ] && grep -q -- "-o DPkg::Lock::Timeout=600 install" "$tmp/apt-args" &&
	grep -q -- "-o DPkg::Lock::Timeout=600 update" "$tmp/apt-args" && echo 0 || echo 1)" \
	"exit $rc; apt-get calls: $(tr '\n' ';' <"$tmp/apt-args" 2>/dev/null)"
check deps-private-log "$(grep -qF "see $tmp/deps-tmp/ctq-deps." "$tmp/deps-out" && grep -qF "E: fake apt failure" "$tmp/deps-out" && echo 0 || echo 1)" \
	"$(head -c 300 "$tmp/deps-out")"

# tools/offline-deps.sh carries gnuplot and its dependency closure, not the
# base system.
if command -v apt-cache >/dev/null 2>&1 && apt-cache show gnuplot-nox >/dev/null 2>&1; then
	sh "$root/tools/offline-deps.sh" --list >"$tmp/offline-list" 2>&1
	ok=0
	for p in gnuplot-nox gnuplot-data libcairo2 libgd3 libpango-1.0-0 libcjson1; do
		grep -qx "$p" "$tmp/offline-list" || ok=1
	done
	grep -qx libc6 "$tmp/offline-list" && ok=1
	check offline-deps-gnuplot "$ok" "tools/offline-deps.sh --list: $(tr '\n' ' ' <"$tmp/offline-list" | head -c 300)"
fi

echo "badinput: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
