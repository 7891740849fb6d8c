# Call C (2026-12-04 s5, issue 37): small-M GEMM variants, A/B in bench gemm
# and decode. v0 = 923a4a3's kernels (CTQ_AB_SMALL=0); v3 (the tree's
# default) as many stages as fit, two 128-byte K boxes a stage for the 32-
# and 64-wide tiles, two accumulator chains; v4 the same with one chain; v5
# four boxes a stage for the 32-wide tile.
set -u
O=$OUT/c; mkdir -p $O
CTQ_BUILD_ARCH=sm_90a timeout 150 tools/h200-session.sh $O build || exit 1
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu
ab() { # NAME DEFINES
	t0=$(date +%s)
	NVCCFLAGS="-O3 -lineinfo $2" timeout 150 make -j16 DEPS_PREFIX=deps-prefix CUDA_ARCH=sm_90a BUILD=build/$1 build/$1/ctq >$O/build-$1.log 2>&1 || { echo "build $1 failed"; tail -20 $O/build-$1.log; }
	echo "build $1 ($2): $(($(date +%s) - t0)) s"
}
ab v0 "-DCTQ_AB_SMALL=0"
ab v4 "-DCTQ_AB_SPLIT=0"
ab v5 "-DCTQ_AB_NB32=4"
mkdir -p build/v3; ln -sfn ../ctq build/v3/ctq
for r in 1 2; do
	order="0 3 4 5"; [ $r = 2 ] && order="5 4 3 0"
	for v in $order; do
		timeout 90 build/v$v/ctq bench gemm --shapes qwen3-4b --m 1,8,16,32,64 --samples 20 --out $O/g-v$v-r$r >$O/g-v$v-r$r.log 2>&1
		echo "bench gemm v$v r$r: rc $? $(grep -c '"pass"' $O/g-v$v-r$r/bench_gemm.csv) pass, $(grep -c '"fail"' $O/g-v$v-r$r/bench_gemm.csv) fail"
	done
done
M=/tmp/ctq-models; mkdir -p $M
[ -d $M/q4b ] || timeout 150 ./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 $M/q4b 2>&1 | tail -1
[ -d $M/q4b-w8a8 ] || timeout 150 ./build/ctq quantize $M/q4b $M/q4b-w8a8 2>&1 | tail -1
for r in 1 2; do
	order="0 3 4 5"; [ $r = 2 ] && order="5 4 3 0"
	for v in $order; do
		timeout 90 build/v$v/ctq bench model --model $M/q4b-w8a8 --backend cuda --batch 1,8,16 --input-len 128 --output-len 64 --warmup 1 --reps 3 --out $O/m-v$v-r$r >$O/m-v$v-r$r.log 2>&1
		echo "bench model v$v r$r: rc $? $(awk '$2==128 {printf "b%s %s  ", $1, $7}' $O/m-v$v-r$r.log)"
	done
done
date -u
rm -rf $O/g-*/bench_gemm_samples.csv
tar czf $OUT/c.tgz -C $OUT c && rm -rf $O
