#!/bin/sh
# One batched GPU session on an offline H200 host (see docs/gpu.md "GPU hosts (offline)"):
# builds against the carried .deb files, runs the GPU tests, produces the
# transformers goldens for the tiny synthetic models, then probes and
# benchmarks the qwen3-4b-shape synthetic model in BF16 and W8A8.
# Usage: tools/h200-session.sh OUT_DIR [stage...]
#   stages: build tests oracle probe bench smollm2 (and, by name: recipes tp tpeval
#   gputests benchref quick gemm serve servecmp decodeprof
#   prefillprof ops plugin wna16 trees cost knobab peers archs tiles tilesprof
#   smallmprof)
# CTQ_BUILD_ARCH: the build's CUDA_ARCH (default: the Makefile's fat list).
# archs: the GPU code of every architecture (Step 17): cuobjdump's listing
# of build/ctq, the GPU kernel tests at the GPU's own dispatch and under
# CTQ_ARCH=$CTQ_ARCHS_FORCE (default sm_86: the compute 8.x path), bench
# gemm with every path side by side (--paths), a short bench model and the
# qwen3-4b shape probes under the forced architecture; into OUT/archs-*.
# tiles: build/tools/bench_tiles (each sm80 tile, the pick, the GEMV).
# smallmprof: Nsight Compute (issue 37) on the sm90 GEMM at small M
# (CTQ_PROF_M, 16), the GEMV at M = 1 and the per-token quantization at M =
# 8192, on each qwen3-4b shape (CTQ_PROF_SHAPES, K:N): speed of light, memory
# tables, warp stalls, occupancy; into OUT/smallmprof-KERNEL-mM-KxN.txt.
# CTQ_PROF_KERNELS replaces the kernel list (words KERNEL:M, e.g.
# "gemv_w8a8:1"); CTQ_PROF_BIN profiles another ctq build (an A/B side),
# CTQ_PROF_TAG goes into the file names.
# tilesprof: Nsight Compute on single sm80 tiles (CTQ_PROF_TILES, indices
# into the tile table; default 0 1) at CTQ_PROF_SHAPE (gate_up) and
# CTQ_PROF_M (4096): speed of light, warp stalls, memory tables; into
# OUT/tilesprof-T.txt.
# knobab: interleaved A/B of dispatch knobs (backend/knobs.h) on bench model,
# W8A8 against BF16 at 128-token prompts: CTQ_AB_VARIANTS is a list of
# variants separated by ';', each a space-separated list of VAR=value (or
# '-' for the defaults), run CTQ_AB_ROUNDS times (2) in turn at batches
# CTQ_AB_BATCH (1,8), e.g.
#   CTQ_AB_VARIANTS='-;CTQ_NO_PDL=1;CTQ_GEMV_MAX_M=0' tools/h200-session.sh OUT build knobab
# into OUT/knobab/vN-rR/ with a table of decode tok/s and TTFT in the log.
# peers: the gpt-fast PyTorch peer (bf16, batch 1 and 8) and the Triton
# W8A8 GEMM peer, from gpu-carry/ (copy them there from ../shared/anchors:
# ../shared does not travel), into OUT/peer-*.csv; run them in the same call
# as the ctq figures they are compared with. CTQ_PEER_BATCH: gpt-fast's
# batches (default 1,8).
# plugin: the cuBLASLt kernel plug-in (build/plugins/cublaslt_w8a8.so) through
# tests/gpu/test_plugin_gpu, ctq probe --kernel-lib beside --backend cuda, and
# ctq bench gemm --impl on the qwen3-4b shapes.
# wna16: the CUDA weight-only plug-in (build/plugins/cuda_wna16.so) through
# tests/gpu/test_plugin_wna16_gpu, ctq probe --kernel-lib on the qwen3-4b
# shapes, and ctq bench gemm --impl (every default layout beside cuBLAS BF16
# and ctq's W8A8) into OUT/wna16-*.
# trees: synthetic Qwen3-MoE and Qwen-Image DiT checkpoints (make-model,
# tiny and one layer/block of the real shapes), quantized, then ctq probe
# --model on the CUDA kernels and the CPU reference (CTQ_TREES picks the
# models); into OUT/trees-*.
# cost: wall time of `ctq probe --shapes qwen3-4b --backend both` and of
# `ctq run plans/qualify.json` (README, "The cost"); CTQ_COST_PLAN_S bounds
# the plan (default 420); into OUT/cost-*.
# gemm: ctq bench gemm on the qwen3-4b shapes (4 shapes x 11 M x 5
# implementations, 30 samples), then ctq report on it.
# smollm2: the SmolLM2 GGUF arrives in parts (the device tool carries at most
# 64 MiB per call): smollm2.gguf.part-* in gpu-carry/ or other gpu-*/
# folders are kept in $CTQ_PERSIST between calls and assembled once all are
# there (sha256 in smollm2.gguf.sha256); then import, quantize, and the paired
# BF16 vs W8A8 evaluations on MMLU val (5-shot) and C-Eval val.
# recipes: issue 35 over all the MMLU + C-Eval val text (792 windows of 512):
# tests/oracle/llmc_recipes.py on the SmolLM2 of those parts, calibrated on
# the test splits as tools/fixtures.sh does (datasets from ../shared, else
# gpu-carry/datasets or a carried datasets.tar.xz), llm-compressor from
# carried wheels (whl/, installed into /tmp/site: the host has no
# registry), ctq's calibrations and every eval kld on CUDA, the library's
# SmoothQuant+GPTQ run as every other run's --reference-run. Steps done stay
# in $CTQ_PERSIST/oracle-all, so a later call on the same warm machine goes
# on where one stopped (CTQ_RECIPES_S bounds one call's share, default 480);
# into OUT/recipes/.
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

# What does not fit one call (the device tool carries at most 64 MiB a call)
# arrives over the calls of one warm machine, in gpu-carry/ or other carried
# gpu-*/ folders, and is gathered into $CTQ_PERSIST as it comes: the SmolLM2
# GGUF's parts (smollm2.gguf.part-*, with smollm2.gguf.sha256), wheels
# (whl/*.whl) and datasets.tar.xz.
persist=${CTQ_PERSIST:-/tmp/ctq-persist}
mkdir -p "$persist/whl"
for d in gpu-carry gpu-*; do
	[ -d "$d" ] || continue
	cp "$d"/smollm2.gguf.part-* "$d"/smollm2.gguf.sha256 "$d"/datasets.tar.xz "$persist"/ 2>/dev/null
	cp "$d"/whl/*.whl "$persist/whl/" 2>/dev/null
done

if has build; then
	step build
	# offline-deps/ (make offline-deps), else offline-deps-build/ (make
	# offline-deps OFFLINE_PLOTS=0 OFFLINE_DIR=offline-deps-build: 12 MB to carry, no plots)
	deps=offline-deps
	[ -d "$deps" ] || deps=offline-deps-build
	sh tools/unpack-deps.sh "$deps" deps-prefix >>"$log" 2>&1
	t0=$(date +%s)
	make -j"$(nproc)" DEPS_PREFIX=deps-prefix ${CTQ_BUILD_ARCH:+CUDA_ARCH="$CTQ_BUILD_ARCH"} all \
		build/tests/gpu/test_kernels build/tests/gpu/test_runner_gpu \
		build/tests/gpu/test_tp_gpu build/tests/gpu/test_bench_gemm_gpu build/tests/gpu/test_attention build/tests/gpu/test_dense \
		build/tools/bench_ops build/tools/bench_tiles build/tools/mma_peak build/tests/test_runner >>"$log" 2>&1 || { tail -30 "$log"; exit 1; }
	echo "build: $(($(date +%s) - t0)) s with -j$(nproc), CUDA_ARCH ${CTQ_BUILD_ARCH:-(Makefile default)}" | tee -a "$log"
fi
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# ctq's plots take the unpacked gnuplot (results/plot.c)
[ -d deps-prefix ] && export DEPS_PREFIX="$PWD/deps-prefix"
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
if has probe || has bench || has knobab; then
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
	./build/ctq probe --model "$models/q4b-w8a8" --backend cuda --m 64 --out "$out/probe-4b" \
		>"$out/probe-4b.txt" 2>&1
	tail -3 "$out/probe-4b.txt" | tee -a "$log"
fi
if has tp; then
	step "tp: NCCL tensor parallelism over $(nvidia-smi -L | wc -l) GPU(s)"
	NCCL_NVLS_ENABLE=0 ./build/tests/gpu/test_tp_gpu --jobs 1 --verbose 2>&1 | grep -E "tp2|FAIL|SKIP|Assert|Synthesis|rel-L2" | tee -a "$log"
fi
if has tpeval; then
	# eval and bench at --tp 2 against --tp 1 (needs 2 GPUs): answer agreement
	# of the same W8A8 checkpoint through ctq compare; SmolLM2 (9 heads, 3 KV
	# heads) only divides over 3 ranks, so it runs at --tp 3 on hosts with 3+.
	ngpu=$(nvidia-smi -L | wc -l)
	step "tpeval over $ngpu GPU(s)"
	for m in "q06 qwen3-0.6b-shape" "q4b qwen3-4b-shape --outliers"; do
		set -- $m
		name=$1 preset=$2
		shift 2
		if [ ! -d "$models/$name-w8a8" ]; then
			./build/ctq make-model --arch qwen3 --preset "$preset" "$@" --seed 1 "$models/$name" 2>&1 | tail -1 | tee -a "$log"
			./build/ctq quantize "$models/$name" "$models/$name-w8a8" 2>&1 | tail -1 | tee -a "$log"
		fi
	done
	data=../shared/datasets
	[ -d "$data" ] || data=gpu-carry/datasets
	for t in 1 2; do
		NCCL_NVLS_ENABLE=0 ./build/ctq eval mmlu --model "$models/q06-w8a8" \
			--tokenizer tests/fixtures/tokenizers/gpt2-small --data "$data/mmlu" --split val \
			--shots 5 --backend cuda --tp $t --out "$out/tpeval-q06-tp$t" 2>&1 | tail -3 | tee -a "$log"
		NCCL_NVLS_ENABLE=0 ./build/ctq bench model --model "$models/q4b-w8a8" --backend cuda --tp $t \
			--batch 1,8 --input-len 128,2048 --output-len 32 --warmup 1 --reps 3 \
			--out "$out/tpbench-q4b-tp$t" 2>&1 | tail -8 | tee -a "$log"
		NCCL_NVLS_ENABLE=0 ./build/ctq bench serve --model "$models/q4b-w8a8" --backend cuda --tp $t \
			--requests 128 --concurrency 16 --input-len 512 --output-len 128 \
			--out "$out/tpserve-q4b-tp$t" 2>&1 | tail -8 | tee -a "$log"
	done
	./build/ctq compare "$out/tpeval-q06-tp1" "$out/tpeval-q06-tp2" --out "$out/tpeval-compare" 2>&1 |
		grep -E "agreement|accuracy|compare:" | tee -a "$log"
	if [ "$ngpu" -ge 3 ] && [ -d "$models/smollm2-w8a8" ]; then
		for t in 1 3; do
			NCCL_NVLS_ENABLE=0 ./build/ctq eval mmlu --model "$models/smollm2-w8a8" --data "$data/mmlu" \
				--split val --shots 5 --backend cuda --tp $t --out "$out/tpeval-smollm2-tp$t" 2>&1 |
				tail -3 | tee -a "$log"
		done
		./build/ctq compare "$out/tpeval-smollm2-tp1" "$out/tpeval-smollm2-tp3" --out "$out/tpeval-smollm2-compare" 2>&1 |
			grep -E "agreement|accuracy|compare:" | tee -a "$log"
	fi
fi
if has gputests; then
	step gpu tests
	./build/tests/gpu/test_kernels --jobs 1 2>&1 | tail -2 | tee -a "$log"
	./build/tests/gpu/test_attention --jobs 1 --verbose 2>&1 | grep -E "worst|FAIL|Assert|Synthesis" | tee -a "$log"
	./build/tests/gpu/test_dense --jobs 1 --verbose 2>&1 | grep -E "worst|FAIL|Assert|Synthesis" | tee -a "$log"
	CTQ_FIXTURES=tests/fixtures ./build/tests/gpu/test_runner_gpu --jobs 1 2>&1 | grep -E "FAIL|Assert|Synthesis|rel-L2" | tee -a "$log"
fi
if has benchref; then
	if [ ! -d "$models/q4b" ]; then
		./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 "$models/q4b" 2>&1 | tail -1 | tee -a "$log"
		./build/ctq quantize "$models/q4b" "$models/q4b-w8a8" 2>&1 | tail -1 | tee -a "$log"
	fi
	step bench W8A8 against BF16
	./build/ctq bench model --model "$models/q4b-w8a8" --ref-model "$models/q4b" --backend cuda --batch 1,8 \
		--input-len 128,2048 --output-len 32 --warmup 1 --reps 3 --out "$out/bench-ref" 2>&1 | tee -a "$log"
fi
if has quick; then
	step quick: GPU runner tests and a graph check
	CTQ_FIXTURES="$out" ./build/tests/gpu/test_runner_gpu --jobs 1 2>&1 | grep -E "FAIL|Assert|Synthesis|graph" | tee -a "$log"
	./build/ctq bench model --model "$models/q4b-w8a8" --backend cuda --batch 1,8 --input-len 128 \
		--output-len 32 --warmup 1 --reps 2 --out "$out/bench-quick" 2>&1 | tee -a "$log"
fi
if has bench; then
	for v in q4b q4b-w8a8; do
		step bench $v
		./build/ctq bench model --model "$models/$v" --backend cuda --batch 1 --input-len 128,2048 \
			--output-len 64 --warmup 1 --reps 3 --out "$out/bench-$v" 2>&1 | tee -a "$log"
	done
fi
if has gemm; then
	step bench gemm qwen3-4b
	./build/tests/gpu/test_bench_gemm_gpu --jobs 1 2>&1 | tail -2 | tee -a "$log"
	./build/ctq bench gemm --shapes qwen3-4b --out "$out/bench-gemm" 2>"$out/bench-gemm.log" | tee -a "$log"
	./build/ctq report "$out/bench-gemm" 2>&1 | tee -a "$log"
fi
if has serve; then
	# serving load on the qwen3-4b-shape model, BF16 then W8A8 (Step 8)
	if [ ! -d "$models/q4b" ]; then
		./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 "$models/q4b" 2>&1 | tail -1 | tee -a "$log"
		./build/ctq quantize "$models/q4b" "$models/q4b-w8a8" 2>&1 | tail -1 | tee -a "$log"
	fi
	for v in q4b q4b-w8a8; do
		step bench serve $v
		timeout 200 ./build/ctq bench serve --model "$models/$v" --backend cuda --requests 64 --concurrency 16 \
			--input-len 512 --output-len 64 --out "$out/serve-$v" 2>&1 | tail -9 | tee -a "$log"
	done
fi
if has servecmp; then
	# Step 18: the one batching engine, in process (ctq bench serve) against
	# ctq serve over HTTP (ctq bench serve --url), the same workload: 512 + 64
	# tokens, concurrency 16 (64 requests) and 64 (256 requests), BF16 and
	# W8A8. The HTTP client needs a tokenizer of the model's vocabulary:
	# CTQ_SERVE_TOKENIZER (default gpu-carry/tok: fixtures/tokenizers/qwen2's
	# tokenizer.json and tokenizer_config.json, copied into each model folder).
	tok=${CTQ_SERVE_TOKENIZER:-gpu-carry/tok}
	if [ ! -d "$models/q4b" ]; then
		./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 "$models/q4b" 2>&1 | tail -1 | tee -a "$log"
		./build/ctq quantize "$models/q4b" "$models/q4b-w8a8" 2>&1 | tail -1 | tee -a "$log"
	fi
	for v in q4b q4b-w8a8; do
		cp "$tok/tokenizer.json" "$tok/tokenizer_config.json" "$models/$v/" 2>>"$log"
		for cn in ${CTQ_SERVECMP:-16:64 64:256}; do
			c=${cn%:*} n=${cn#*:}
			for round in 1 2; do
				step "servecmp: in process $v concurrency $c ($n requests), round $round"
				timeout 200 ./build/ctq bench serve --model "$models/$v" --backend cuda --requests "$n" \
					--concurrency "$c" --input-len 512 --output-len 64 --out "$out/sc-inproc-$v-c$c-r$round" \
					>"$out/sc-inproc-$v-c$c-r$round.txt" 2>&1
				grep -E "requests/s|errors" "$out/sc-inproc-$v-c$c-r$round.txt" | tee -a "$log"
			done
			step "servecmp: ctq serve over HTTP $v concurrency $c ($n requests)"
			./build/ctq serve --model "$models/$v" --backend cuda --port 8011 --max-batch "$c" --max-len 576 \
				--quiet >"$out/sc-server-$v-c$c.log" 2>&1 &
			sp=$!
			for i in $(seq 1 120); do
				LD_LIBRARY_PATH= curl -s -o /dev/null http://127.0.0.1:8011/v1/models && break
				sleep 1
			done
			timeout 200 ./build/ctq bench serve --url http://127.0.0.1:8011/v1 --tokenizer "$models/$v" \
				--requests "$n" --concurrency "$c" --input-len 512 --output-len 64 \
				--out "$out/sc-http-$v-c$c" >"$out/sc-http-$v-c$c.txt" 2>&1
			grep -iE "requests/s|errors" "$out/sc-http-$v-c$c.txt" | head -3 | tee -a "$log"
			kill "$sp"
			wait "$sp" 2>/dev/null
		done
	done
fi
if has decodeprof; then
	# per-kernel device time of decode steps (batch 1, 128-token context) by
	# Nsight Compute, graphs profiled node by node: where a token's time goes
	step decode kernel times
	timeout 240 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 2000 \
		--launch-count 400 ./build/ctq bench model --model "$models/q4b-w8a8" --backend cuda --batch 1 \
		--input-len 128 --output-len 8 --warmup 0 --reps 1 --out "$out/decodeprof-run" \
		>"$out/decodeprof.csv" 2>"$out/decodeprof.log"
	python3 tools/ncu-summary.py "$out/decodeprof.csv" | tee -a "$log"
fi
if has ops; then
	# device time per launch of the model ops at the Qwen3-4B shapes
	step ops
	./build/tools/bench_ops 2>&1 | tee -a "$log"
fi
if has prefillprof; then
	# per-kernel device time of the 128-token prefill (batch 1): ncu with the
	# caches left warm (--cache-control none), then the sum of kernel times
	# against the TTFT the bench measured without the profiler
	step prefill kernel times
	timeout 240 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
		--launch-count 3000 ./build/ctq bench model --model "$models/${CTQ_PROF_MODEL:-q4b}" --backend cuda \
		--batch 1 --input-len 128 --output-len 1 --warmup 0 --reps 1 --out "$out/prefillprof-run" \
		>"$out/prefillprof.csv" 2>"$out/prefillprof.log"
	python3 tools/ncu-summary.py "$out/prefillprof.csv" | tee -a "$log"
fi
# The SmolLM2 GGUF from its parts (every part in $persist and the sha256
# matching), imported once into $models/smollm2-bf16. Returns 1 while parts
# are missing.
smollm2_bf16() {
	gguf="$persist/smollm2.gguf"
	want=$(cat "$persist/smollm2.gguf.sha256" 2>/dev/null)
	if [ ! -f "$gguf" ] && [ -n "$want" ]; then
		cat "$persist"/smollm2.gguf.part-* >"$gguf.tmp" 2>/dev/null
		if [ "$(sha256sum "$gguf.tmp" | cut -c1-64)" = "$want" ]; then mv "$gguf.tmp" "$gguf"; else rm -f "$gguf.tmp"; fi
	fi
	if [ ! -f "$gguf" ]; then
		step "smollm2: parts not complete yet in $persist ($(ls "$persist" | tr '\n' ' '))"
		return 1
	fi
	[ -d "$models/smollm2-bf16" ] || ./build/ctq import-gguf "$gguf" "$models/smollm2-bf16" 2>&1 | tail -1 | tee -a "$log"
	[ -f "$models/smollm2-bf16/config.json" ]
}
# The datasets: ../shared/datasets, else gpu-carry/datasets, else
# datasets.tar.xz (mmlu/ and ceval/, unpacked once into $persist).
datasets_dir() {
	if [ -d ../shared/datasets ]; then echo ../shared/datasets
	elif [ -d gpu-carry/datasets ]; then echo gpu-carry/datasets
	else
		[ -d "$persist/datasets/mmlu" ] || { mkdir -p "$persist/datasets" &&
			tar xJf "$persist/datasets.tar.xz" -C "$persist/datasets"; } >&2
		echo "$persist/datasets"
	fi
}
if has smollm2; then
	if smollm2_bf16; then
		step smollm2 quantize
		[ -d "$models/smollm2-w8a8" ] || ./build/ctq quantize "$models/smollm2-bf16" "$models/smollm2-w8a8" 2>&1 | tail -1 | tee -a "$log"
		./build/ctq generate --model "$models/smollm2-w8a8" --backend cuda --chat --max-new-tokens 48 \
			--prompt "Give three tips for staying healthy." 2>&1 | tee -a "$log"
		data=$(datasets_dir)
		step eval mmlu val 5-shot
		./build/ctq eval mmlu --model "$models/smollm2-w8a8" --ref-model "$models/smollm2-bf16" \
			--data "$data/mmlu" --split val --shots 5 --backend cuda --out "$out/eval-mmlu" 2>&1 | tail -16 | tee -a "$log"
		step eval ceval val 5-shot
		./build/ctq eval ceval --model "$models/smollm2-w8a8" --ref-model "$models/smollm2-bf16" \
			--data "$data/ceval" --split val --shots 5 --backend cuda --out "$out/eval-ceval" 2>&1 | tail -12 | tee -a "$log"
	fi
fi
if has recipes; then
	if smollm2_bf16; then
		step recipes: ctq against llm-compressor over all MMLU + C-Eval val text
		data=$(datasets_dir)
		calib="$persist/calib-mmlu-ceval-test.txt"
		# as tools/fixtures.sh writes it: the test CSVs, MMLU's then C-Eval's
		[ -s "$calib" ] || cat "$data"/mmlu/test/*.csv "$data"/ceval/test/*.csv >"$calib"
		if ls "$persist"/whl/*.whl >/dev/null 2>&1 && [ ! -f /tmp/site/.ctq-installed ]; then
			python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
				--target /tmp/site "$persist"/whl/*.whl >>"$log" 2>&1 && touch /tmp/site/.ctq-installed
		fi
		[ -d /tmp/site ] && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
		python3 -c 'import llmcompressor, compressed_tensors, transformers, torch; print("llmcompressor", llmcompressor.__version__, "compressed-tensors", compressed_tensors.__version__, "transformers", transformers.__version__, "torch", torch.__version__)' 2>&1 | tail -1 | tee -a "$log"
		{ PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 timeout "${CTQ_RECIPES_S:-480}" python3 tests/oracle/llmc_recipes.py \
			--ctq build/ctq --out "$persist/oracle-all" --bf16 "$models/smollm2-bf16" --calib "$calib" \
			--datasets "$data" --kld-max-tokens 0 --kld-backend cuda --calib-backend cuda \
			--reference-recipe sqgptq; echo $? >"$persist/recipes.rc"; } 2>&1 | tee -a "$log" | tail -60
		echo "recipes: exit $(cat "$persist/recipes.rc") (124: its time ran out; the steps done stay in $persist/oracle-all)" | tee -a "$log"
		mkdir -p "$out/recipes"
		o=$(cd "$out" && pwd)
		(cd "$persist/oracle-all" && cp summary.md summary.json ./*.log ./*.seconds ./*.cmd "$o/recipes/" 2>/dev/null
		 for d in kld-*; do [ -d "$d" ] && mkdir -p "$o/recipes/$d" &&
			cp "$d"/eval_kld_summary.csv "$d"/eval_kld.csv "$d"/summary.md "$d"/manifest.json "$o/recipes/$d/" 2>/dev/null; done
		 for d in ctq-* llmc-*; do [ -f "$d/recipe.yaml" ] && mkdir -p "$o/recipes/$d" && cp "$d"/recipe.yaml "$d"/config.json "$o/recipes/$d/"; done) 2>/dev/null
	fi
fi
if has plugin; then
	step plugin
	make -j"$(nproc)" DEPS_PREFIX=deps-prefix ${CTQ_BUILD_ARCH:+CUDA_ARCH="$CTQ_BUILD_ARCH"} all build/tests/gpu/test_plugin_gpu >>"$log" 2>&1 || { tail -30 "$log"; exit 1; }
	./build/tests/gpu/test_plugin_gpu --jobs 1 2>&1 | tail -3 | tee -a "$log"
	./build/ctq probe --kernel-lib build/plugins/cublaslt_w8a8.so --backend cuda --shapes qwen3-4b \
		--m 1,64,256 --out "$out/probe-plugin" >"$out/probe-plugin.txt" 2>&1
	echo "probe --kernel-lib: exit $?" | tee -a "$log"
	tail -3 "$out/probe-plugin.txt" | tee -a "$log"
	./build/ctq bench gemm --impl build/plugins/cublaslt_w8a8.so --shapes qwen3-4b \
		--m 1,16,128,1024,4096 --out "$out/gemm-plugin" >"$out/gemm-plugin.txt" 2>&1
	echo "bench gemm --impl: exit $?" | tee -a "$log"
	tail -24 "$out/gemm-plugin.txt" | tee -a "$log"
fi
if has wna16; then
	step "wna16: the CUDA weight-only plug-in"
	make -j"$(nproc)" DEPS_PREFIX=deps-prefix ${CTQ_BUILD_ARCH:+CUDA_ARCH="$CTQ_BUILD_ARCH"} all build/tests/gpu/test_plugin_wna16_gpu >>"$log" 2>&1 || { tail -30 "$log"; exit 1; }
	timeout 600 ./build/tests/gpu/test_plugin_wna16_gpu --jobs 1 --verbose >"$out/wna16-test.txt" 2>&1
	echo "test_plugin_wna16_gpu: exit $?" | tee -a "$log"
	grep -E "Synthesis|FAIL|Assert" "$out/wna16-test.txt" | tail -8 | tee -a "$log"
	timeout 300 ./build/ctq probe --kernel-lib build/plugins/cuda_wna16.so --shapes qwen3-4b --m 1,17,64 \
		--weights random --out "$out/wna16-probe" >"$out/wna16-probe.txt" 2>&1
	echo "probe --kernel-lib cuda_wna16: exit $?" | tee -a "$log"
	tail -3 "$out/wna16-probe.txt" | tee -a "$log"
	timeout 300 ./build/ctq bench gemm --impl build/plugins/cuda_wna16.so --shapes qwen3-4b \
		--m ${CTQ_WNA16_M:-1,16,64,256} --samples 20 --out "$out/wna16-gemm" >"$out/wna16-gemm.txt" 2>&1
	echo "bench gemm --impl cuda_wna16: exit $?" | tee -a "$log"
	grep -E "plug-in cuda_wna16|^bench gemm \[" "$out/wna16-gemm.txt" | tee -a "$log"
fi
if has trees; then
	# CTQ_TREES: the models, ';'-separated "arch preset [make-model options]"
	IFS=';'
	# shellcheck disable=SC2086 # split on ';' only
	set -- ${CTQ_TREES:-qwen3_moe tiny;qwen3_moe qwen3-30b-a3b-shape --layers 1;qwen_image_dit tiny;qwen_image_dit qwen-image-shape --layers 1}
	unset IFS
	for a in "$@"; do
		# shellcheck disable=SC2086 # words: arch, preset, extra options
		set -- $a
		name="$1-$2"
		arch=$1 preset=$2
		shift 2
		step "trees: $name"
		d="$models/tree-$name"
		[ -d "$d" ] || ./build/ctq make-model --arch "$arch" --preset "$preset" "$@" --seed 1 "$d" >>"$log" 2>&1
		[ -d "$d-w8a8" ] || ./build/ctq quantize "$d" "$d-w8a8" 2>&1 | tail -1 | tee -a "$log"
		for be in cuda reference; do
			timeout 300 ./build/ctq probe --model "$d-w8a8" --backend $be --m 1,16,64 \
				--out "$out/trees-$name-$be" >"$out/trees-$name-$be.txt" 2>&1
			echo "probe --model $name --backend $be: exit $?" | tee -a "$log"
			tail -2 "$out/trees-$name-$be.txt" | tee -a "$log"
		done
	done
fi
if has cost; then
	step "cost: probe --backend both"
	/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KB" -o "$out/cost-probe-both.time" \
		./build/ctq probe --shapes qwen3-4b --backend both --m 1,7,64,257 --seed 1 --out "$out/cost-probe-both" \
		>"$out/cost-probe-both.txt" 2>&1
	echo "probe --backend both: exit $?; $(cat "$out/cost-probe-both.time")" | tee -a "$log"
	tail -2 "$out/cost-probe-both.txt" | tee -a "$log"
	step "cost: ctq run plans/qualify.json"
	/usr/bin/time -f "%e s wall, %U s user, %S s sys" -o "$out/cost-qualify.time" \
		timeout "${CTQ_COST_PLAN_S:-420}" ./build/ctq run plans/qualify.json --out "$models/qualify-run" \
		>"$out/cost-qualify.txt" 2>&1
	echo "run plans/qualify.json: exit $?; $(cat "$out/cost-qualify.time")" | tee -a "$log"
	tail -30 "$out/cost-qualify.txt" | tee -a "$log"
	cp "$models/qualify-run/plan.csv" "$models/qualify-run/manifest.json" "$out/" 2>/dev/null
	rm -rf "$models/qualify-run/models"
fi
if has knobab; then
	rounds=${CTQ_AB_ROUNDS:-2}
	batch=${CTQ_AB_BATCH:-1,8}
	variants=${CTQ_AB_VARIANTS:--}
	mkdir -p "$out/knobab"
	step "knobab: $rounds round(s) of [$variants] at batch $batch"
	r=1
	while [ "$r" -le "$rounds" ]; do
		i=0
		rest="$variants;"
		while [ -n "$rest" ]; do
			v=${rest%%;*}
			rest=${rest#*;}
			[ -n "$v" ] || continue
			i=$((i + 1))
			envs=$v
			[ "$v" = "-" ] && envs=
			d="$out/knobab/v$i-r$r"
			# shellcheck disable=SC2086 # envs: the variant's words
			env $envs ./build/ctq bench model --model "$models/q4b-w8a8" --ref-model "$models/q4b" \
				--backend cuda --batch "$batch" --input-len 128 --output-len 32 --warmup 1 --reps 3 \
				--out "$d" >"$d.txt" 2>&1
			echo "v$i r$r [$v] exit $?" | tee -a "$log"
			# batch, input, TTFT ref/new, ..., decode ref/new (bench_model_gains.csv)
			awk -F, 'NR > 1 { gsub(/"/, ""); printf "  batch %s: TTFT %.2f / %.2f ms, decode %.1f / %.1f tok/s (BF16 / W8A8)\n", $1, $4, $5, $10, $11 }' \
				"$d/bench_model_gains.csv" 2>/dev/null | tee -a "$log"
		done
		r=$((r + 1))
	done
fi
if has peers; then
	for f in gptfast_qwen3.py triton_w8a8.py; do
		[ -f "gpu-carry/$f" ] || echo "peers: gpu-carry/$f missing (copy it from ../shared/anchors)" | tee -a "$log"
	done
	if [ -f gpu-carry/gptfast_qwen3.py ]; then
		step peer gpt-fast bf16
		timeout 300 python3 gpu-carry/gptfast_qwen3.py bf16 "${CTQ_PEER_BATCH:-1,8}" >"$out/peer-gptfast-bf16.csv" 2>"$out/peer-gptfast.log"
		tee -a "$log" <"$out/peer-gptfast-bf16.csv"
	fi
	if [ -f gpu-carry/triton_w8a8.py ]; then
		step peer triton w8a8
		timeout 300 python3 gpu-carry/triton_w8a8.py >"$out/peer-triton-w8a8.csv" 2>"$out/peer-triton.log"
		tee -a "$log" <"$out/peer-triton-w8a8.csv"
	fi
fi
if has tiles; then
	step "tiles: sm80 tiles, pick, gemv"
	./build/tools/mma_peak 2>&1 | tee -a "$out/tiles.txt" | tee -a "$log"
	timeout 300 ./build/tools/bench_tiles ${CTQ_TILES_M:-} 2>&1 | tee -a "$out/tiles.txt" | tee -a "$log"
fi
if has smallmprof; then
	# issue 37's limiters: the small-M Hopper GEMM (CTQ_PROF_M, default 16)
	# and the GEMV (M = 1) on each qwen3-4b shape, and the per-token
	# quantization at M = 8192, one launch each after the bit-exact check's
	for sh in ${CTQ_PROF_SHAPES:-2560:6144 4096:2560 2560:19456 9728:2560}; do
		for k in ${CTQ_PROF_KERNELS:-gemm_w8a8_sm90:${CTQ_PROF_M:-16} gemv_w8a8:1 quantize_rows_kernel:8192}; do
			kn=${k%%:*} km=${k#*:}
			f="$out/smallmprof${CTQ_PROF_TAG:+-$CTQ_PROF_TAG}-$kn-m$km-$(echo "$sh" | tr : x).txt"
			step "smallmprof: ncu on $kn at $sh, M = $km"
			timeout 120 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
				--section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section Occupancy \
				--section LaunchStats --section SchedulerStats --print-details all -k "regex:$kn" \
				--launch-skip 1 --launch-count 1 "${CTQ_PROF_BIN:-./build/ctq}" bench gemm --shapes "$sh" --m "$km" --samples 1 \
				--warmup 0 --check-rows 1 --out "$out/smallmprof${CTQ_PROF_TAG:+-$CTQ_PROF_TAG}-run" --force >"$f" 2>&1
			grep -E "Duration|DRAM Throughput|Memory Throughput|Busy|Stall|Warp Cycles|Issued|Eligible|Achieved Occ|Registers|Grid Size|Block Size" \
				"$f" | head -24 | tee -a "$log"
		done
	done
fi
if has tilesprof; then
	for t in ${CTQ_PROF_TILES:-0 1}; do
		step "tilesprof: ncu on sm80 tile $t"
		BENCH_TILES_SHAPES=${CTQ_PROF_SHAPE:-gate_up} BENCH_TILES_ONLY=$t timeout 240 \
			ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
			--section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section Occupancy \
			--section LaunchStats --section SchedulerStats --print-details all -k regex:gemm_w8a8_sm80 --launch-skip 20 --launch-count 1 \
			./build/tools/bench_tiles "${CTQ_PROF_M:-4096}" >"$out/tilesprof-$t.txt" 2>&1
		grep -E "Duration|Throughput|Busy|Pipe|Stall|Warp Cycles|Issued|Eligible|Achieved Occ|Registers|L2 Hit|Bank" \
			"$out/tilesprof-$t.txt" | head -60 | tee -a "$log"
	done
fi
# archs is the five below; each may be named alone
has archs && stages="$stages archs-code archs-tests archs-gemm archs-model archs-probe"
force=${CTQ_ARCHS_FORCE:-sm_86}
if has archs-code; then
	step "archs: GPU code carried"
	if command -v cuobjdump >/dev/null 2>&1; then
		{ cuobjdump --list-elf build/ctq | sed 's/.*\.\(sm_[0-9a-z]*\)\.cubin/\1/' | sort | uniq -c
		  cuobjdump --list-ptx build/ctq | sed 's/.*\.\(compute_[0-9a-z]*\)\.ptx/\1/' | sort | uniq -c
		  cuobjdump --list-elf build/ctq | head -3
		  cuobjdump -sass -arch sm_90a build/ctq 2>/dev/null | grep -cE "IMMA" | sed 's/^/IMMA instructions in the sm_90a SASS: /'
		  cuobjdump -sass -arch sm_86 build/ctq 2>/dev/null | grep -cE "IMMA" | sed 's/^/IMMA instructions in the sm_86 SASS: /'
		} 2>&1 | tee "$out/archs-cuobjdump.txt" | tee -a "$log"
	else
		echo "cuobjdump not on this host" | tee -a "$log"
	fi
	./build/ctq --version | tee -a "$log"
fi
if has archs-tests; then
	# CTQ_ARCHS_TESTS: the dispatches tested (default: own, then the forced one)
	for v in ${CTQ_ARCHS_TESTS:-own $force}; do
		envs=
		[ "$v" = own ] || envs="CTQ_ARCH=$v"
		step "archs: GPU tests, dispatch $v"
		for t in test_kernels test_dense test_runner_gpu; do
			# shellcheck disable=SC2086 # envs: empty or one VAR=value
			env $envs CTQ_FIXTURES=tests/fixtures timeout ${CTQ_ARCHS_TEST_S:-200} ./build/tests/gpu/$t --jobs 1 2>&1 |
				grep -E "FAIL|Assert|Synthesis|SKIP|test_.*\.c:" | head -20 | sed "s/^/$t: /" | tee -a "$log"
		done
	done
fi
if has archs-gemm; then
	step "archs: bench gemm, every path"
	timeout 300 ./build/ctq bench gemm --shapes qwen3-4b --m ${CTQ_ARCHS_M:-1,16,128,1024,2048,4096,8192} \
		--paths sm90-wgmma,sm80-mma,gemv --out "$out/archs-gemm" >"$out/archs-gemm.txt" 2>&1
	echo "bench gemm --paths: exit $?" | tee -a "$log"
	./build/ctq report "$out/archs-gemm" >/dev/null 2>&1
	grep -A12 "sm80-mma / cublaslt_i8" "$out/archs-gemm/summary.md" | tee -a "$log"
fi
if has archs-model; then
	if [ ! -d "$models/q4b-w8a8" ]; then
		./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 "$models/q4b" 2>&1 | tail -1 | tee -a "$log"
		./build/ctq quantize "$models/q4b" "$models/q4b-w8a8" 2>&1 | tail -1 | tee -a "$log"
	fi
	for v in own "$force"; do
		step "archs: bench model W8A8 decode, dispatch $v"
		envs=
		[ "$v" = own ] || envs="CTQ_ARCH=$v"
		# shellcheck disable=SC2086 # envs: empty or one VAR=value
		env $envs ./build/ctq bench model --model "$models/q4b-w8a8" --backend cuda \
			--batch 1,8 --input-len 128 --output-len 64 --warmup 1 --reps 3 --out "$out/archs-bench-$v" \
			>"$out/archs-bench-$v.txt" 2>&1
		echo "exit $?" | tee -a "$log"
		awk -F, 'NR > 1 { gsub(/"/, ""); print "  " $0 }' "$out/archs-bench-$v/bench_model.csv" 2>/dev/null | cut -c1-160 | tee -a "$log"
		grep -o '"kernel_paths":[^}]*}' "$out/archs-bench-$v/manifest.json" 2>/dev/null | tee -a "$log"
	done
	# the generated tokens (output_digest) of each (batch, rep) under both dispatches
	for v in own "$force"; do
		awk -F, 'NR > 1 { print $4 "," $7 "," $NF }' "$out/archs-bench-$v/bench_model.csv" >"$out/archs-digest-$v.txt" 2>/dev/null
	done
	if [ -s "$out/archs-digest-own.txt" ] && cmp -s "$out/archs-digest-own.txt" "$out/archs-digest-$force.txt"; then
		echo "output digests: identical under own dispatch and CTQ_ARCH=$force ($(wc -l <"$out/archs-digest-own.txt") runs)" | tee -a "$log"
	else
		echo "output digests: DIFFER (or missing) between own dispatch and CTQ_ARCH=$force" | tee -a "$log"
		paste "$out/archs-digest-own.txt" "$out/archs-digest-$force.txt" | tee -a "$log"
	fi
fi
if has archs-probe; then
	# CTQ_ARCHS_PROBE: the dispatches probed (default: the forced one, then own)
	for v in ${CTQ_ARCHS_PROBE:-$force own}; do
		step "archs: probe qwen3-4b shapes, dispatch $v"
		envs=
		[ "$v" = own ] || envs="CTQ_ARCH=$v"
		# shellcheck disable=SC2086 # envs: empty or one VAR=value
		env $envs timeout 400 ./build/ctq probe --shapes qwen3-4b --backend cuda --m ${CTQ_PROBE_M:-1,7,64,257} \
			--out "$out/archs-probe-$v" >"$out/archs-probe-$v.txt" 2>&1
		echo "probe ($v): exit $?" | tee -a "$log"
		tail -3 "$out/archs-probe-$v.txt" | tee -a "$log"
		awk -F, 'NR > 1 { print $8 }' "$out/archs-probe-$v/probe.csv" 2>/dev/null | sort | uniq -c | tee -a "$log"
	done
fi
step "done"
