#!/bin/sh
# Call C: the old scheduler (6d5cec8, ab-old/, built fat like this tree) against the engine,
# interleaved, then ctq serve over HTTP; same workloads as tools/h200-session.sh servecmp.
set -u
o=$1; mkdir -p $o; log=$o/ab.log; m=/tmp/ctq-models; mkdir -p $m
st() { echo "=== $* ($(date -u +%H:%M:%S))" | tee -a $log; }
st build new
sh tools/h200-session.sh $o/new build >/dev/null 2>&1; tail -3 $o/new/session.log >>$log
st build old
( cd ab-old && rm -rf build && make -j16 DEPS_PREFIX=$PWD/../deps-prefix CTQ_REVISION=6d5cec8 build/ctq >$o/old-build.log 2>&1 ) || { tail -20 $o/old-build.log; exit 1; }
export LD_LIBRARY_PATH=$PWD/deps-prefix/usr/lib/x86_64-linux-gnu
st models
[ -d $m/q4b-w8a8 ] || { ./build/ctq make-model --arch qwen3 --preset qwen3-4b-shape --outliers --seed 1 --quiet $m/q4b && ./build/ctq quantize $m/q4b $m/q4b-w8a8; } >$o/models.log 2>&1
for v in q4b q4b-w8a8; do
  cp gpu-carry/tok/tokenizer.json gpu-carry/tok/tokenizer_config.json $m/$v/
  for cn in 16:64 64:256; do c=${cn%:*} n=${cn#*:}
    for r in 1 2; do for b in old new; do
      bin=./build/ctq; [ $b = old ] && bin=./ab-old/build/ctq
      timeout 200 $bin bench serve --model $m/$v --backend cuda --requests $n --concurrency $c --input-len 512 --output-len 64 \
        --out $o/ip-$b-$v-c$c-r$r >$o/ip-$b-$v-c$c-r$r.txt 2>&1
      echo "$b $v c$c r$r: $(grep -o '[0-9.]* requests/s' $o/ip-$b-$v-c$c-r$r.txt) $(grep -o '[0-9]* forward calls' $o/ip-$b-$v-c$c-r$r.txt)" | tee -a $log
    done; done
    ./build/ctq serve --model $m/$v --backend cuda --port 8011 --max-batch $c --max-len 576 --quiet >$o/server-$v-c$c.log 2>&1 &
    sp=$!
    for i in $(seq 1 120); do LD_LIBRARY_PATH= curl -s -o /dev/null http://127.0.0.1:8011/v1/models && break; sleep 1; done
    timeout 200 ./build/ctq bench serve --url http://127.0.0.1:8011/v1 --tokenizer $m/$v --requests $n --concurrency $c \
      --input-len 512 --output-len 64 --out $o/http-$v-c$c >$o/http-$v-c$c.txt 2>&1
    echo "http $v c$c: $(grep -o '[0-9.]* requests/s' $o/http-$v-c$c.txt)" | tee -a $log
    kill $sp; wait $sp 2>/dev/null
  done
done
st probes
CTQ_ARCHS_PROBE="own sm_86" sh tools/h200-session.sh $o/probe archs-probe >/dev/null 2>&1; grep -vE "^name|^NVIDIA" $o/probe/session.log | tee -a $log
st done
