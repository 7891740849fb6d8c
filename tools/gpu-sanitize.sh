#!/bin/sh
# The GPU code under compute-sanitizer's four tools (memcheck, racecheck,
# synccheck, initcheck), each run with a time limit, one line per (tool,
# target) and a closing "gpu-sanitize: N passed, N failed":
#   ctq generate --backend cuda on a tiny qwen2 (q/k/v biases) in BF16 and W8A8,
#   ctq probe --backend cuda on the tiny geometries, and the GPU test
#   programs test_dense and test_attention (Criterion: --target-processes all).
# A target passes when the tool reports no error and the program succeeds.
# initcheck runs with CTQ_SANITIZE_MEMSET_CUBLAS=1: it does not see cuBLAS's
# stores (tools/initcheck-cublas.cu shows it on the H200: a fresh cuBLAS
# output read back reports every element uninitialized although the GEMM
# wrote all of them correctly), so ctq clears cuBLAS outputs first there.
# usage: tools/gpu-sanitize.sh BUILD OUT [seconds per run]   (make test-gpu-sanitize)
set -u
build=${1:-build}
out=${2:-$build/gpu-sanitize}
lim=${3:-240}
mkdir -p "$out"
cs=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
[ -x "$cs" ] || { echo "gpu-sanitize: compute-sanitizer not found (CUDA toolkit bin/)"; exit 3; }
ctq=$build/ctq
models=$out/models
pass=0
fail=0
if [ ! -d "$models/q2-w8a8" ]; then
	"$ctq" make-model --arch qwen2 --preset tiny --seed 1 "$models/q2" >"$out/make.log" 2>&1 &&
		"$ctq" quantize "$models/q2" "$models/q2-w8a8" >>"$out/make.log" 2>&1 ||
		{ echo "gpu-sanitize: cannot make the tiny models:"; tail -5 "$out/make.log"; exit 2; }
fi
check() {
	tool=$1
	name=$2
	shift 2
	log="$out/$tool-$name.log"
	env=
	[ "$tool" = initcheck ] && env=CTQ_SANITIZE_MEMSET_CUBLAS=1
	env $env timeout "$lim" "$cs" --tool "$tool" --error-exitcode 99 --target-processes all "$@" >"$log" 2>&1
	rc=$?
	summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $tool $name: ${summary:-no summary}"
	else
		fail=$((fail + 1))
		why="exit $rc"
		[ "$rc" -eq 124 ] && why="past its ${lim} s limit"
		echo "FAIL $tool $name: $why${summary:+, $summary} — $log"
		grep -m 3 -E "^========= (Invalid|Uninitialized|Race|Barrier|Error)" "$log" | sed 's/^/    /'
	fi
}
for tool in memcheck racecheck synccheck initcheck; do
	check "$tool" generate-bf16 "$ctq" generate --model "$models/q2" --backend cuda --ids 1,2,3,4,5 --max-new-tokens 4
	check "$tool" generate-w8a8 "$ctq" generate --model "$models/q2-w8a8" --backend cuda --ids 1,2,3,4,5 --max-new-tokens 4
	check "$tool" probe "$ctq" probe --model "$models/q2-w8a8" --backend cuda --out "$out/probe-$tool" --force
	for t in test_dense test_attention; do
		[ -x "$build/tests/gpu/$t" ] && check "$tool" "$t" "$build/tests/gpu/$t" --jobs 1
	done
done
echo "gpu-sanitize: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
