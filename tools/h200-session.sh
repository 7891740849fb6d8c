#!/bin/sh
# One batched GPU session on an offline H200 host (see README "GPU hosts"):
# builds against the carried .deb files, runs the GPU tests, produces the
# transformers goldens for the tiny synthetic models, then probes and
# benchmarks the qwen3-4b-shape synthetic model in BF16 and W8A8.
# Usage: tools/h200-session.sh OUT_DIR [stage...]   stages: build tests oracle probe bench
set -u
out=${1:?usage: tools/h200-session.sh OUT_DIR [stage...]}
shift
stages=${*:-build tests oracle probe bench}
mkdir -p "$out"
log="$out/session.log"
models=${CTQ_MODELS:-/tmp/ctq-models}
mkdir -p "$models"
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
step() { echo "=== $* ($(date -u +%H:%M:%S))" | tee -a "$log"; }

if has build; then
	step build
	sh tools/unpack-deps.sh offline-deps /tmp/deps >>"$log" 2>&1
	make -j16 DEPS_PREFIX=/tmp/deps all build/tests/gpu/test_kernels build/tests/gpu/test_runner_gpu \
		build/tests/test_runner >>"$log" 2>&1 || { tail -30 "$log"; exit 1; }
fi
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv >>"$log" 2>&1

if has oracle; then
	step oracle
	for a in qwen3 qwen2 llama; do
		[ -d "$models/$a-tiny" ] || ./build/ctq make-model --arch $a --preset tiny --seed 1 "$models/$a-tiny" >>"$log" 2>&1
	done
	python3 tests/oracle/hf_logits.py "$out/oracle" qwen3-tiny="$models/qwen3-tiny" \
		qwen2-tiny="$models/qwen2-tiny" llama-tiny="$models/llama-tiny" 2>&1 | tee -a "$log"
fi
if has tests; then
	step tests
	./build/tests/gpu/test_kernels --jobs 1 2>&1 | tail -3 | tee -a "$log"
	CTQ_FIXTURES="$out" ./build/tests/gpu/test_runner_gpu --jobs 1 --verbose 2>&1 | grep -vE '^\[----\] *$' | tail -12 | tee -a "$log"
	CTQ_FIXTURES="$out" ./build/tests/test_runner --verbose 2>&1 | tail -6 | tee -a "$log"
fi
if has probe || has bench; then
	if [ ! -d "$models/q4b" ]; then
		step make-model qwen3-4b-shape --outliers
		./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 "$models/q4b" 2>&1 | tail -1 | tee -a "$log"
	fi
	if [ ! -d "$models/q4b-w8a8" ]; then
		step quantize
		./build/ctq quantize "$models/q4b" "$models/q4b-w8a8" 2>&1 | tail -1 | tee -a "$log"
	fi
fi
if has probe; then
	step probe
	./build/ctq probe --model "$models/q4b-w8a8" --backend both --m 64 --out "$out/probe-4b" \
		>"$out/probe-4b.txt" 2>&1
	tail -3 "$out/probe-4b.txt" | tee -a "$log"
fi
if has bench; then
	for v in q4b q4b-w8a8; do
		step bench $v
		./build/ctq bench model --model "$models/$v" --backend cuda --batch 1 --input-len 128,2048 \
			--output-len 64 --warmup 1 --reps 3 --out "$out/bench-$v" 2>&1 | tee -a "$log"
	done
fi
step done
