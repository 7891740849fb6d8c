# Call E1 (2026-12-04 s5, issue 37): the final revision's GPU tests, qwen3-4b
# probes, bench gemm over every M, Nsight Compute on the small-M GEMM.
set -u
O=$OUT/e1; mkdir -p $O
CTQ_BUILD_ARCH=sm_90a timeout 150 tools/h200-session.sh $O build || exit 1
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu
cat build/build-revision.txt 2>/dev/null
timeout 240 tools/h200-session.sh $O gputests 2>&1 | grep -E "Synthesis|FAIL|Assert"
echo "== probes"; timeout 120 ./build/ctq probe --shapes qwen3-4b --backend cuda --m 1,7,64,257 --seed 1 --out $O/probe >$O/probe.txt 2>&1; tail -3 $O/probe.txt
echo "== bench gemm"; timeout 200 ./build/ctq bench gemm --shapes qwen3-4b --samples 20 --out $O/gemm >$O/gemm.log 2>&1; echo "rc $?"; grep -A46 "^shape " $O/gemm.log
CTQ_PROF_KERNELS="gemm_w8a8_sm90:16" timeout 150 tools/h200-session.sh $O smallmprof >/dev/null 2>&1
grep -H "Duration\|DRAM Throughput" $O/smallmprof-*.txt | sort -u
date -u
rm -rf $O/gemm/bench_gemm_samples.csv $O/smallmprof-run
tar czf $OUT/e1.tgz -C $OUT e1 && rm -rf $O
