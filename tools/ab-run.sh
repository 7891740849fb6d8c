#!/bin/sh
# Interleaved A/B runs of one plan by two ctq builds, for `ctq compare --ab`.
#
#   tools/ab-run.sh BASE_CTQ NEW_CTQ PLAN OUT [PAIRS]
#
# Runs PLAN PAIRS times (default 8) with each binary, alternating the order
# of the two within each pair (base, new, then new, base, ...) so that
# neither side always runs first, into OUT/base/rep-NN and OUT/new/rep-NN.
# A pair's two runs are back to back and share the host's drift (runs of one
# build on the 2-core CPU correlate 0.15-0.7 with their neighbour), which is
# what the paired verdict needs. Then:
#
#   ctq compare --ab OUT/base OUT/new
#
# OUT must not exist or be empty. Each run's console output goes to
# OUT/ab-run.log. Exit: 0 all runs finished (their own verdicts are theirs;
# a failing step still leaves a finished run), 2 bad usage, 3 a run could
# not be written.
set -eu
if [ $# -lt 4 ] || [ $# -gt 5 ]; then
	echo "usage: tools/ab-run.sh BASE_CTQ NEW_CTQ PLAN OUT [PAIRS]" >&2
	exit 2
fi
base=$1 new=$2 plan=$3 out=$4 pairs=${5:-8}
case $pairs in '' | *[!0-9]*) echo "ab-run: PAIRS must be a positive integer, not '$pairs'" >&2; exit 2 ;; esac
if [ "$pairs" -lt 1 ]; then echo "ab-run: PAIRS must be at least 1" >&2; exit 2; fi
for b in "$base" "$new"; do
	if [ ! -x "$b" ]; then echo "ab-run: $b is not an executable ctq" >&2; exit 2; fi
done
if [ ! -f "$plan" ]; then echo "ab-run: plan $plan is not a file" >&2; exit 2; fi
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
	echo "ab-run: $out exists and is not empty (nothing is replaced)" >&2
	exit 2
fi
mkdir -p "$out/base" "$out/new"
log=$out/ab-run.log
: >"$log"
one() { # SIDE BIN REP
	d=$out/$1/rep-$3
	echo "== $1 rep-$3: $2 run $plan --out $d" >>"$log"
	rc=0
	"$2" run "$plan" --out "$d" --no-report >>"$log" 2>&1 || rc=$?
	if [ ! -f "$d/manifest.json" ]; then
		echo "ab-run: $1 rep-$3 left no run directory (exit $rc; see $log)" >&2
		exit 3
	fi
}
i=1
while [ "$i" -le "$pairs" ]; do
	rep=$(printf '%02d' "$i")
	if [ $((i % 2)) -eq 1 ]; then
		one base "$base" "$rep"; one new "$new" "$rep"
	else
		one new "$new" "$rep"; one base "$base" "$rep"
	fi
	printf 'ab-run: pair %s of %s done\n' "$i" "$pairs" >&2
	i=$((i + 1))
done
echo "ab-run: $pairs pairs in $out/base and $out/new; next: ctq compare --ab $out/base $out/new" >&2
