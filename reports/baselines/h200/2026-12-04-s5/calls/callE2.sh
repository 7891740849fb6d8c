# Call E2 (2026-12-04 s5, issue 37): decode at batch 1, 8, 32 (BF16, W8A8),
# serving at concurrency 64, and the peers in the same call.
set -u
O=$OUT/e2; mkdir -p $O
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu
[ -x build/ctq ] || { CTQ_BUILD_ARCH=sm_90a timeout 150 tools/h200-session.sh $O build || exit 1; }
cat build/build-revision.txt 2>/dev/null
M=/tmp/ctq-models; mkdir -p $M
[ -d $M/q4b ] || timeout 150 ./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 $M/q4b 2>&1 | tail -1
[ -d $M/q4b-w8a8 ] || timeout 150 ./build/ctq quantize $M/q4b $M/q4b-w8a8 2>&1 | tail -1
for v in q4b q4b-w8a8; do
	echo "== bench model $v"; timeout 120 ./build/ctq bench model --model $M/$v --backend cuda --batch 1,8,32 --input-len 128 --output-len 64 --warmup 1 --reps 3 --out $O/bench-$v >$O/bench-$v.log 2>&1; echo "rc $?"; grep -E "^  (1|8|32) " $O/bench-$v.log
done
for v in q4b q4b-w8a8; do
	echo "== bench serve $v, concurrency 64, 256 requests"; timeout 150 ./build/ctq bench serve --model $M/$v --backend cuda --requests 256 --concurrency 64 --input-len 512 --output-len 64 --out $O/serve-$v >$O/serve-$v.log 2>&1; echo "rc $?"; grep -E "requests/s|TPOT|errors" $O/serve-$v.log | head -4
done
CTQ_PEER_BATCH=1,8,32 timeout 330 tools/h200-session.sh $O peers 2>&1 | grep -v "^===" | head -30
date -u
tar czf $OUT/e2.tgz -C $OUT e2 && rm -rf $O
