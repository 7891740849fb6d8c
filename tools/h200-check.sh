#!/bin/sh
# A GPU check with a time limit on every step, logging straight into OUT
# (so that a step that hangs still leaves the log of the others):
# build, the GPU test binaries, bench_ops, bench model W8A8 vs BF16 and bench gemm
# (CTQ_CHECK_BENCH=1), Nsight Compute sections of the GEMM / quantize kernels
# (CTQ_CHECK_NCU=1).
# usage: tools/h200-check.sh OUT [step-seconds]
set -u
out=${1:?usage: tools/h200-check.sh OUT [step-seconds]}
lim=${2:-60}
mkdir -p "$out"
log="$out/check.log"
models=${CTQ_MODELS:-/tmp/ctq-models}
step() { echo "=== $* ($(date -u +%H:%M:%S))" >>"$log"; }
step build
sh tools/unpack-deps.sh offline-deps deps-prefix >/dev/null 2>&1
timeout 300 make -j"$(nproc)" DEPS_PREFIX=deps-prefix all build/tests/gpu/test_kernels build/tests/gpu/test_runner_gpu \
	build/tests/gpu/test_attention build/tests/gpu/test_dense build/tools/bench_ops >"$out/build.log" 2>&1 ||
	{ tail -20 "$out/build.log" >>"$log"; exit 1; }
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for t in test_attention test_dense test_kernels test_runner_gpu; do
	step "$t"
	# test_kernels runs about 100 s on an H200 (the quantize shapes alone 78 s)
	tl=$lim
	[ "$t" = test_kernels ] && tl=$((lim * 3))
	CTQ_FIXTURES=tests/fixtures timeout "$tl" ./build/tests/gpu/$t --jobs 1 --verbose >"$out/$t.log" 2>&1
	echo "rc $?" >>"$log"
	grep -E "worst|FAIL|Assert|Synthesis|rel-L2|Timeout|timed out|Crash|signal" "$out/$t.log" | grep -v "^\[----\] attention" | tail -30 >>"$log"
done
step ops
timeout "$lim" ./build/tools/bench_ops >>"$log" 2>&1
echo "rc $?" >>"$log"
if [ -n "${CTQ_CHECK_BENCH:-}" ]; then
	if [ ! -d "$models/q4b-w8a8" ]; then
		./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 "$models/q4b" >/dev/null 2>&1
		./build/ctq quantize "$models/q4b" "$models/q4b-w8a8" >/dev/null 2>&1
	fi
	step bench model
	timeout 200 ./build/ctq bench model --model "$models/q4b-w8a8" --ref-model "$models/q4b" --backend cuda --batch 1,8 \
		--input-len 128,2048 --output-len 32 --warmup 1 --reps 3 --out "$out/bench-ref" >"$out/bench-ref.txt" 2>&1
	echo "rc $?" >>"$log"
	grep -A6 "^batch   input    TTFT ref" "$out/bench-ref.txt" >>"$log"
	step bench gemm
	timeout 90 ./build/ctq bench gemm --shapes qwen3-4b --out "$out/bench-gemm" >"$out/bench-gemm.txt" 2>&1
	echo "rc $?" >>"$log"
	grep -E "^(qkv|o_|gate|down)|miss|pass" "$out/bench-gemm.txt" >>"$log"
fi
if [ -n "${CTQ_CHECK_NCU:-}" ]; then
	# the counters behind the Step 7 limits: the small-M GEMM and GEMV
	# (M = 1, 16) and the quantize kernel at M = 8192, by Nsight Compute
	step ncu
	timeout 200 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
		--section ComputeWorkloadAnalysis --section WarpStateStats \
		-k regex:'gemm_w8a8_sm90_kernel|quantize_rows_kernel|gemv_w8a8_kernel' --launch-count 40 \
		./build/ctq bench gemm --shapes 2560:6144,4096:2560,9728:2560 --m 1,16,1024,8192 --warmup 1 --samples 1 \
		--out "$out/ncu-gemm-run" >"$out/ncu-gemm.txt" 2>&1
	echo "rc $?" >>"$log"
	grep -E "gemm_w8a8_sm90|quantize_rows|gemv_w8a8|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Duration|Block Size|Grid Size|Registers|Issue Slots|Stall|Executed Ipc" \
		"$out/ncu-gemm.txt" | head -300 >>"$log"
fi
step done
