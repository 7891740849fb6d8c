#!/bin/sh
# A GPU check with a time limit on every step, logging straight into OUT
# (so that a step that hangs still leaves the log of the others):
# build, the GPU test binaries, bench_ops, bench model W8A8 vs BF16 and bench gemm
# (CTQ_CHECK_BENCH=1; CTQ_CHECK_AB=DIR: the same bench model with the ctq
# tree in DIR, then this one again, and ctq compare), forced sm90 GEMM configurations (CTQ_CHECK_TILES="0 4 ..."),
# Nsight Compute sections of the GEMM / quantize kernels (CTQ_CHECK_NCU=1).
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
if [ -n "${CTQ_CHECK_AB:-}" ] && [ -d "$models/q4b-w8a8" ]; then
	# A/B against another ctq tree (e.g. `git archive main`): its bench
	# model, then this tree's again, in the same session, and ctq compare
	step "ab build $CTQ_CHECK_AB"
	timeout 300 make -C "$CTQ_CHECK_AB" -j"$(nproc)" DEPS_PREFIX="$PWD/deps-prefix" all >"$out/ab-build.log" 2>&1
	echo "rc $?" >>"$log"
	for side in ab new; do
		step "ab bench model $side"
		bin=./build/ctq
		[ "$side" = ab ] && bin="$CTQ_CHECK_AB/build/ctq"
		timeout 200 "$bin" bench model --model "$models/q4b-w8a8" --ref-model "$models/q4b" --backend cuda \
			--batch 1,8 --input-len 128,2048 --output-len 32 --warmup 1 --reps 3 \
			--out "$out/bench-$side" >"$out/bench-$side.txt" 2>&1
		echo "rc $?" >>"$log"
		grep -A6 "^batch   input    TTFT ref" "$out/bench-$side.txt" >>"$log"
	done
	./build/ctq compare "$out/bench-ab" "$out/bench-new" --out "$out/compare-ab" >"$out/compare-ab.txt" 2>&1
	echo "compare rc $?" >>"$log"
	grep -vE "^\s*$" "$out/compare-ab.txt" | head -40 >>"$log"
fi
if [ -n "${CTQ_CHECK_TILES:-}" ]; then
	# forced sm90 configurations (CTQ_SM90_TILE) at M = 256..8192: the data
	# behind ctq_gemm_sm90_pick
	for t in $CTQ_CHECK_TILES; do
		step "tile $t"
		CTQ_SM90_TILE=$t timeout 120 ./build/ctq bench gemm --shapes qwen3-4b --m 256,512,1024,2048,4096,8192 \
			--warmup 1 --samples 20 --out "$out/tile$t" >"$out/tile$t.txt" 2>&1
		echo "rc $?" >>"$log"
		grep -E "^(qkv|o_|gate|down)" "$out/tile$t.txt" >>"$log"
	done
fi
if [ -n "${CTQ_CHECK_NCU:-}" ]; then
	# the counters behind the Step 7 limits, by Nsight Compute: one launch
	# of each kernel (past the reference check) at the points that miss
	step ncu
	i=0
	for spec in gemm_w8a8_sm90:2560:6144:1024 gemm_w8a8_sm90:4096:2560:1024 gemm_w8a8_sm90:2560:6144:8192 \
		gemm_w8a8_sm90:2560:6144:16 gemv_w8a8:2560:6144:1 quantize_rows:2560:6144:8192 quantize_rows:9728:2560:128; do
		k=${spec%%:*} rest=${spec#*:}
		m=${rest##*:} kn=${rest%:*}
		i=$((i + 1))
		echo "--- ncu $k K:N $kn M $m" >>"$log"
		timeout 90 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
			--section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
			--section LaunchStats -k regex:"$k" --launch-skip 2 --launch-count 1 \
			./build/ctq bench gemm --shapes "$kn" --m "$m" --warmup 1 --samples 1 \
			--out "$out/ncu-run$i" >"$out/ncu-$i.txt" 2>&1
		echo "rc $?" >>"$log"
		grep -E "^  [a-z_ ]+[a-z_0-9]+<|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Size|Grid Size|Waves Per SM|Issue Slots Busy|Executed Ipc Active|No Eligible|Eligible Warps|Active Warps Per|L2 Hit Rate|Mem Busy|Max Bandwidth|Warp Cycles Per Issued|Dynamic Shared" \
			"$out/ncu-$i.txt" | cut -c1-160 >>"$log"
	done
fi
step done
