# Call G (2026-12-04 s5, issue 37): where a W8A8 batch-1 decode step goes at
# the final revision (tools/decode-breakdown.sh, W8A8 only).
set -u
O=$OUT/g; mkdir -p $O
CTQ_BUILD_ARCH=sm_90a timeout 100 tools/h200-session.sh $O build || exit 1
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu
CTQ_BREAKDOWN_MODELS=q4b-w8a8 timeout 170 tools/decode-breakdown.sh $O/bd 1 2>&1 | tail -24
rm -rf $O/bd/ncu-* $O/bd/run-*/bench_model_samples.csv
tar czf $OUT/g.tgz -C $OUT g && rm -rf $O
