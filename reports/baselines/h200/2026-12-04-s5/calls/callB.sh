# Call B (2026-12-04 s5, issue 37): decode A/B of call A's builds, ncu on the
# small-M GEMM and the GEMV of v3 (v0: last session's smallmprof).
set -u
O=$OUT/b; mkdir -p $O
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu
M=/tmp/ctq-models; mkdir -p $M
[ -d $M/q4b ] || timeout 150 ./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 $M/q4b 2>&1 | tail -1
[ -d $M/q4b-w8a8 ] || timeout 150 ./build/ctq quantize $M/q4b $M/q4b-w8a8 2>&1 | tail -1
for r in 1 2; do
	order="0 3 1 2"; [ $r = 2 ] && order="2 1 3 0"
	for v in $order; do
		timeout 90 build/v$v/ctq bench model --model $M/q4b-w8a8 --backend cuda --batch 1,8 --input-len 128 --output-len 64 --warmup 1 --reps 3 --out $O/m-v$v-r$r >$O/m-v$v-r$r.log 2>&1
		echo "bench model v$v r$r: rc $?"
	done
done
for v in 3; do
	CTQ_PROF_BIN=build/v$v/ctq CTQ_PROF_TAG=v$v CTQ_PROF_KERNELS="gemm_w8a8_sm90:16 gemv_w8a8:1" timeout 200 tools/h200-session.sh $O smallmprof >/dev/null 2>&1
done
grep -H "Duration\|DRAM Throughput" $O/smallmprof-*.txt | sed 's/  */ /g'
date -u
