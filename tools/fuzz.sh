#!/bin/sh
# Replays each target's reproducers of earlier crashes (tests/fuzz/regress/
# <target>/: every file once), then runs the target for SECONDS on a writable copy of
# its seed corpus (tests/fuzz/corpus/<target>/ copied to FUZZ_DIR/corpus/),
# crash artifacts in FUZZ_DIR/artifacts/<target>/, the log in
# FUZZ_DIR/<target>.log. Prints one line per target (executions, exec/s, new
# corpus units); exit 1 when any target crashed, leaked, timed out or ran out
# of memory, with the reproducer's path and the command that replays it.
# Usage: tools/fuzz.sh FUZZ_DIR SECONDS TARGET...
set -u
dir=$1 secs=$2
shift 2
fail=0
# Stacks for UBSan findings too (ASan prints its own); no finding is silenced.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
for t in "$@"; do
	bin=$dir/fuzz_$t
	corpus=$dir/corpus/$t
	art=$dir/artifacts/$t
	log=$dir/$t.log
	tmp=$dir/tmp/$t
	rm -rf "$tmp"
	mkdir -p "$corpus" "$art" "$tmp"
	TMPDIR=$(cd "$tmp" && pwd)
	export TMPDIR
	if ls tests/fuzz/regress/"$t"/* >/dev/null 2>&1; then
		if ! "$bin" tests/fuzz/regress/"$t"/* >"$dir/$t.regress.log" 2>&1; then
			fail=1
			echo "fuzz $t: a regression reproducer fails again; log $dir/$t.regress.log"
			grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' \
				"$dir/$t.regress.log" | sed 's/^/  /'
			echo "  replay:     $bin tests/fuzz/regress/$t/*"
		fi
	fi
	cp -p tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null
	"$bin" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -max_len=1048576 \
		-print_final_stats=1 -artifact_prefix="$art/" "$corpus" >"$log" 2>&1
	rc=$?
	rm -rf "$tmp"
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	units=$(ls "$corpus" | wc -l)
	if [ "$rc" != 0 ]; then
		fail=1
		repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
		echo "fuzz $t: FAILED (exit $rc) after ${runs:-?} executions; log $log"
		grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log" | sed 's/^/  /'
		if [ -n "$repro" ]; then
			echo "  reproducer: $repro"
			echo "  replay:     $bin $repro"
		fi
	else
		echo "fuzz $t: ok, ${runs:-?} executions, ${eps:-?} exec/s, corpus $units unit(s), ${secs}s"
	fi
done
exit $fail
