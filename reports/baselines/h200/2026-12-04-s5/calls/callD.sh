# Call D (2026-12-04 s5, issue 37): the small-M table of call C's winners
# (the tree's default: v7) against v6, the same with two K boxes a stage for
# the 160-wide tile at M <= 32 (4 stages); test_kernels on both.
set -u
O=$OUT/d; mkdir -p $O
CTQ_BUILD_ARCH=sm_90a timeout 150 tools/h200-session.sh $O build || exit 1
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu
t0=$(date +%s)
NVCCFLAGS="-O3 -lineinfo -DCTQ_AB_NB160=2" timeout 150 make -j16 DEPS_PREFIX=deps-prefix CUDA_ARCH=sm_90a BUILD=build/v6 build/v6/ctq build/v6/tests/gpu/test_kernels >$O/build-v6.log 2>&1 || { echo "build v6 failed"; tail -20 $O/build-v6.log; }
echo "build v6: $(($(date +%s) - t0)) s"
mkdir -p build/v7; ln -sfn ../ctq build/v7/ctq
echo "== test_kernels v7"; timeout 150 ./build/tests/gpu/test_kernels --jobs 1 2>&1 | tail -3
echo "== test_kernels v6 (sm90 small M)"; timeout 100 ./build/v6/tests/gpu/test_kernels --jobs 1 --filter 'kernels/sm90_small*' 2>&1 | tail -3
for r in 1 2; do
	order="7 6"; [ $r = 2 ] && order="6 7"
	for v in $order; do
		timeout 90 build/v$v/ctq bench gemm --shapes qwen3-4b --m 8,16,32 --samples 20 --out $O/g-v$v-r$r >$O/g-v$v-r$r.log 2>&1
		echo "bench gemm v$v r$r: rc $? $(grep -c '"pass"' $O/g-v$v-r$r/bench_gemm.csv) pass, $(grep -c '"fail"' $O/g-v$v-r$r/bench_gemm.csv) fail"
	done
done
M=/tmp/ctq-models; mkdir -p $M
[ -d $M/q4b ] || timeout 150 ./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 $M/q4b 2>&1 | tail -1
[ -d $M/q4b-w8a8 ] || timeout 150 ./build/ctq quantize $M/q4b $M/q4b-w8a8 2>&1 | tail -1
for r in 1 2; do
	order="7 6"; [ $r = 2 ] && order="6 7"
	for v in $order; do
		timeout 90 build/v$v/ctq bench model --model $M/q4b-w8a8 --backend cuda --batch 8,16,32 --input-len 128 --output-len 64 --warmup 1 --reps 3 --out $O/m-v$v-r$r >$O/m-v$v-r$r.log 2>&1
		echo "bench model v$v r$r: rc $? $(awk '$2==128 {printf "b%s %s  ", $1, $7}' $O/m-v$v-r$r.log)"
	done
done
date -u
rm -rf $O/g-*/bench_gemm_samples.csv
tar czf $OUT/d.tgz -C $OUT d && rm -rf $O
