# Call A (2026-12-04 s5, issue 37): the small-M GEMM and GEMV variants A/B.
# v0 = the kernels of 923a4a3 (CTQ_AB_SMALL=0, GEMV_U 4); v1 as many stages
# as fit + GEMV_U 8; v2 + two accumulator chains; v3 (the tree's default)
# + two 128-byte K boxes per stage for the 32/64-wide tiles.
set -u
O=$OUT/a; mkdir -p $O
CTQ_BUILD_ARCH=sm_90a timeout 150 tools/h200-session.sh $O build || exit 1
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu
for v in 0 1 2; do u=8; [ $v = 0 ] && u=4
	t0=$(date +%s)
	NVCCFLAGS="-O3 -lineinfo -DCTQ_AB_SMALL=$v -DCTQ_AB_GEMV_U=$u" timeout 150 make -j16 DEPS_PREFIX=deps-prefix CUDA_ARCH=sm_90a BUILD=build/v$v build/v$v/ctq >$O/build-v$v.log 2>&1 || { echo "build v$v failed"; tail -20 $O/build-v$v.log; }
	echo "build v$v: $(($(date +%s) - t0)) s"
done
mkdir -p build/v3; ln -sfn ../ctq build/v3/ctq
echo "== test_kernels (v3, the default build)"; timeout 150 ./build/tests/gpu/test_kernels --jobs 1 2>&1 | tail -3
for r in 1 2; do
	order="0 1 2 3"; [ $r = 2 ] && order="3 2 1 0"
	for v in $order; do
		timeout 90 build/v$v/ctq bench gemm --shapes qwen3-4b --m 1,4,8,16,32,64 --samples 20 --out $O/g-v$v-r$r >$O/g-v$v-r$r.log 2>&1
		echo "bench gemm v$v r$r: rc $? $(grep -c '"pass"' $O/g-v$v-r$r/bench_gemm.csv) pass, $(grep -c '"fail"' $O/g-v$v-r$r/bench_gemm.csv) fail"
	done
done
date -u
