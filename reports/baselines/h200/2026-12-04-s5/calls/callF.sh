# Call F (2026-12-04 s5, issue 37): Nsight Compute on the large-M GEMM
# (qkv and gate_up at M = 2048 and 8192), unchanged by this session.
set -u
O=$OUT/f; mkdir -p $O
CTQ_BUILD_ARCH=sm_90a timeout 150 tools/h200-session.sh $O build || exit 1
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu
CTQ_PROF_SHAPES="2560:6144 2560:19456" CTQ_PROF_KERNELS="gemm_w8a8_sm90:2048 gemm_w8a8_sm90:8192" timeout 200 tools/h200-session.sh $O smallmprof >/dev/null 2>&1
for f in $O/smallmprof-*.txt; do echo "== $f"; grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Tensor|Issue Slots Busy|Eligible Warps|Achieved Occ|SM Busy|Executed Ipc A" $f | sort -u | head -14; done
rm -rf $O/smallmprof-run
tar czf $OUT/f.tgz -C $OUT f && rm -rf $O
