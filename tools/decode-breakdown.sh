#!/bin/sh
# Per-kernel breakdown of ctq's decode step on a GPU host (issue "Step 13"),
# with Nsight Compute over `ctq bench model` on the Qwen3-4B-shape model
# (BF16 and W8A8; batches BATCHES, default "1 8"; 128-token prompts).
#
# Each point is profiled twice, one run each (no warm-up), generating 3 and
# 1 tokens: a kernel's decode cost per step is its GPU time (ncu
# gpu__time_duration, every kernel of the CUDA graphs, --graph-profiling
# node, caches and clocks left as they run) in the first minus the second,
# over 2 steps. ncu runs each kernel alone, so the sum is the step's kernel
# time without overlap or launch gaps. The step's wall time comes from an
# unprofiled bench model of 129 tokens (decode_ms_per_step, median of 3);
# the difference is the unitemised remainder (graph gaps, host work, syncs).
#
#   tools/decode-breakdown.sh OUT [BATCHES]
#
# CTQ_BREAKDOWN_MODELS: which of q4b (BF16) and q4b-w8a8 (default both).
#
# Writes OUT/<model>-b<batch>-<n>.csv (ncu's raw CSV), OUT/<model>-b<batch>.per-step
# (us, calls per step, kernel) and OUT/breakdown.txt. Needs ncu on the PATH
# and ./build/ctq built with CUDA.
set -u
out=${1:?usage: tools/decode-breakdown.sh OUT [BATCHES]}
batches=${2:-1 8}
models=${CTQ_MODELS:-/tmp/ctq-models}
mkdir -p "$out" "$models"
command -v ncu >/dev/null 2>&1 || { echo "decode-breakdown: ncu not on the PATH" >&2; exit 3; }
if [ ! -d "$models/q4b-w8a8" ]; then
	./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 --quiet "$models/q4b" || exit 1
	./build/ctq quantize "$models/q4b" "$models/q4b-w8a8" --quiet || exit 1
fi
: >"$out/breakdown.txt"
for m in ${CTQ_BREAKDOWN_MODELS:-q4b q4b-w8a8}; do
	for b in $batches; do
		./build/ctq bench model --model "$models/$m" --backend cuda --batch "$b" --input-len 128 \
			--output-len 129 --warmup 1 --reps 3 --out "$out/run-$m-b$b" >"$out/run-$m-b$b.log" 2>&1
		step=$(awk -F, 'NR==1{for(i=1;i<=NF;i++){h=$i; gsub(/"/,"",h); if(h=="decode_ms_per_step")c=i}} NR>1&&c{v=$c; gsub(/"/,"",v); print v}' \
			"$out/run-$m-b$b/bench_model.csv" | sort -n | awk '{v[NR]=$1} END{if(NR) print v[int((NR+1)/2)]}')
		for n in 3 1; do
			ncu --graph-profiling node --metrics gpu__time_duration.sum --csv --print-units base \
				--cache-control none --clock-control none \
				./build/ctq bench model --model "$models/$m" --backend cuda --batch "$b" \
				--input-len 128 --output-len "$n" --warmup 0 --reps 1 --out "$out/ncu-$m-b$b-$n" \
				>"$out/$m-b$b-$n.csv" 2>"$out/$m-b$b-$n.err"
		done
		echo "== $m batch $b: decode step $step ms (bench model, 129 tokens, median of 3 runs)" >>"$out/breakdown.txt"
		awk -F'","' '
			function clean(s) { gsub(/"/, "", s); return s }
			/^"ID"/ { for (i = 1; i <= NF; i++) { h = clean($i); if (h == "Kernel Name") nm = i; if (h == "Metric Value") val = i; if (h == "Metric Name") mn = i } f++; next }
			!nm || clean($mn) != "gpu__time_duration.sum" { next }
			{ v = clean($val); gsub(/,/, "", v) }
			f == 1 { L[clean($nm)] += v; LI[clean($nm)]++; next }
			f == 2 { S[clean($nm)] += v; SI[clean($nm)]++ }
			END { for (k in L) { d = (L[k] - S[k]) / 2 / 1e3; if (d > 0.0005) printf "%.3f %.1f %.100s\n", d, (LI[k] - SI[k]) / 2, k } }' \
			"$out/$m-b$b-3.csv" "$out/$m-b$b-1.csv" | sort -rn >"$out/$m-b$b.per-step"
		head -16 "$out/$m-b$b.per-step" | awk '{ us = $1; c = $2; $1 = ""; $2 = ""; printf "   %8.1f us  %5.1f calls/step %s\n", us, c, $0 }' >>"$out/breakdown.txt"
		awk -v step="$step" '{ tot += $1; n++ } END {
			printf "   %8.1f us  all kernels of a decode step (%d kinds)\n", tot, n
			if (step != "") printf "   %8.1f us  step wall time; unitemised %.1f us (%.0f%%)\n", step * 1e3, step * 1e3 - tot, 100 * (step * 1e3 - tot) / (step * 1e3) }' \
			"$out/$m-b$b.per-step" >>"$out/breakdown.txt"
	done
done
cat "$out/breakdown.txt"
