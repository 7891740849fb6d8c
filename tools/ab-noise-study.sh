#!/bin/sh
# The real-data check of `ctq compare --ab` (issue "Step 11"): N back-to-back
# runs of one build and plan, cut into interleaved sets of PAIRS pairs (runs
# 2i and 2i+1 form pair i, alternately base-new and new-base, as
# tools/ab-run.sh orders them), each set compared with `ctq compare --ab`;
# every regression is a false one, since both sides are the same build.
#
#   tools/ab-noise-study.sh CTQ PLAN OUT [N [PAIRS]]     (defaults 400, 8)
#
# Prints the count of sets that regressed, then compares every pair one run
# a side (`ctq compare RUN_2i-1 RUN_2i`, as a nightly without --ab does) and
# prints how many pairs regressed and how many had a timing called
# ambiguous (busy host) (docs/nightly.md). With --load CMD, CMD runs in the
# background (sh -c, restarted when it ends) for as long as the runs take:
# the competing job of a shared runner, e.g. --load 'make -C CLONE clean all'.
# With --plant F, each pair's new side is also compared with its bench
# model timings (ttft_ms, decode_ms_per_step of every bench_model.csv)
# multiplied by F: how many planted slowdowns the one-run gate catches.
# The planted half (+30% on one
# family) and the drift statistics (sd, lag-1 autocorrelation, stalls) of
# the same runs: tests/oracle/ab_noise_study.py OUT/runs (Python with scipy).
# Measured 2026-12-02 on the 2-core CI-sized VM, 400 runs of
# plans/default.json: 0 of 49 sets regressed; docs/nightly.md "What a timing gate can see" (figures in reports/baselines/README.md).
set -eu
load= plant=
while :; do
	case ${1:-} in
	--load) load=${2:?--load needs a command}; shift 2 ;;
	--plant) plant=${2:?--plant needs a factor}; shift 2 ;;
	*) break ;;
	esac
done
if [ $# -lt 3 ] || [ $# -gt 5 ]; then
	echo "usage: tools/ab-noise-study.sh [--load CMD] [--plant F] CTQ PLAN OUT [N [PAIRS]]" >&2
	exit 2
fi
ctq=$1 plan=$2 out=$3 n=${4:-400} pairs=${5:-8}
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
	echo "ab-noise-study: $out exists and is not empty" >&2
	exit 2
fi
mkdir -p "$out/runs" "$out/sets" "$out/pairs"
lpid=
if [ -n "$load" ]; then
	(while :; do sh -c "$load" >>"$out/load.log" 2>&1; done) &
	lpid=$!
	trap 'kill "$lpid" 2>/dev/null; pkill -P "$lpid" 2>/dev/null' EXIT INT TERM
	sleep 2
fi
i=1
while [ "$i" -le "$n" ]; do
	"$ctq" run "$plan" --out "$out/runs/run$(printf '%04d' "$i")" --no-report >/dev/null 2>&1 || true
	[ $((i % 50)) -eq 0 ] && echo "ab-noise-study: $i of $n runs" >&2
	i=$((i + 1))
done
if [ -n "$lpid" ]; then
	pkill -P "$lpid" 2>/dev/null
	kill "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null || true
	lpid=
fi
sets=0 regressed=0 k=0
per=$((2 * pairs))
while [ $(((k + 1) * per)) -le "$n" ]; do
	s=$out/sets/set$k
	mkdir -p "$s/base" "$s/new"
	j=0
	while [ "$j" -lt "$pairs" ]; do
		a=$((k * per + 2 * j + 1)) b=$((k * per + 2 * j + 2))
		if [ $((j % 2)) -eq 1 ]; then t=$a; a=$b; b=$t; fi
		rep=rep-$(printf '%02d' $((j + 1)))
		ln -s "$(cd "$out/runs" && pwd)/run$(printf '%04d' "$a")" "$s/base/$rep"
		ln -s "$(cd "$out/runs" && pwd)/run$(printf '%04d' "$b")" "$s/new/$rep"
		j=$((j + 1))
	done
	rc=0
	"$ctq" compare --ab "$s/base" "$s/new" --out "$s/compare" --quiet >"$s/compare.txt" 2>&1 || rc=$?
	case $rc in
	0) ;;
	1) regressed=$((regressed + 1)) ;;
	*) echo "ab-noise-study: compare of set $k failed (exit $rc): $(tail -1 "$s/compare.txt")" >&2; exit 1 ;;
	esac
	sets=$((sets + 1)) k=$((k + 1))
done
echo "ab-noise-study: $n runs, $sets sets of $pairs interleaved pairs: $regressed regressed"
# one run a side: pair i is runs 2i-1 and 2i
npairs=0 preg=0 pbusy=0 pcaught=0
i=1
while [ $((i + 1)) -le "$n" ]; do
	a=$out/runs/run$(printf '%04d' "$i") b=$out/runs/run$(printf '%04d' $((i + 1)))
	p=$out/pairs/pair$(printf '%03d' $((npairs + 1)))
	rc=0
	"$ctq" compare "$a" "$b" --out "$p" >"$p.txt" 2>&1 || rc=$?
	case $rc in
	0) ;;
	1) preg=$((preg + 1)) ;;
	*) echo "ab-noise-study: compare of pair $((npairs + 1)) failed (exit $rc): $(tail -1 "$p.txt")" >&2; exit 1 ;;
	esac
	grep -q 'busy host' "$p.txt" && pbusy=$((pbusy + 1))
	if [ -n "$plant" ]; then
		cp -r "$b" "$p-planted-run"
		for f in "$p-planted-run"/*/bench_model.csv; do
			[ -f "$f" ] || continue
			awk -v F="$plant" 'BEGIN { FS = OFS = "," }
				function uq(x) { gsub(/^"|"$/, "", x); return x }
				NR == 1 { for (j = 1; j <= NF; j++) if (uq($j) == "ttft_ms" || uq($j) == "decode_ms_per_step") c[j] = 1; print; next }
				{ for (j in c) $j = "\"" sprintf("%.6f", uq($j) * F) "\""; print }' "$f" >"$f.tmp" && mv "$f.tmp" "$f"
		done
		rc=0
		"$ctq" compare "$a" "$p-planted-run" --out "$p-planted" >"$p-planted.txt" 2>&1 || rc=$?
		case $rc in
		0) ;;
		1) pcaught=$((pcaught + 1)) ;;
		*) echo "ab-noise-study: planted compare of pair $((npairs + 1)) failed (exit $rc): $(tail -1 "$p-planted.txt")" >&2; exit 1 ;;
		esac
	fi
	npairs=$((npairs + 1)) i=$((i + 2))
done
echo "ab-noise-study: $npairs pairs compared one run a side: $preg regressed, $pbusy with a timing ambiguous (busy host)"
[ -n "$plant" ] && echo "ab-noise-study: ${plant}x planted on the bench model timings of each pair's new side: $pcaught of $npairs gated"
true
