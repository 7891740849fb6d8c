#!/bin/sh
# Runs every CPU test of ctq: the Criterion unit tests, the conformance
# suites, the bad-input checks and the self-test of tools/lint.sh. Prints one closing line
# "tests: N passed, N failed, N skipped" (N counts test programs and suites):
# a Criterion program that ran no test (every test skipped, e.g. missing
# fixtures) is skipped with its reason, not passed; skipped tests inside a
# program that ran others are listed with their reasons.
# Usage: tools/run-tests.sh BUILD_DIR
set -u
build=${1:-build}
# tests that run the ctq binary itself (test_http_e2e) take this one
export CTQ_BIN="$build/ctq"
passed=0
failed=0
skipped=0
failures=""
skips=""
run() {
	name=$1
	shift
	echo "== $name"
	if "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures="$failures $name"
	fi
}
# A Criterion program: verbose output less the RUN / PASS lines, then its
# Synthesis line decides passed, failed or skipped.
criterion() {
	name=$1
	t=$2
	echo "== $name"
	log=$(mktemp)
	"$t" --jobs 2 --verbose >"$log" 2>&1
	rc=$?
	grep -v '^\[RUN \]\|^\[PASS\]' "$log"
	tested=$(sed -n 's/.*Synthesis: Tested: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
	nskip=$(grep -c '^\[SKIP\]' "$log")
	reason=$(sed -n 's/^\[SKIP\] [^:]*::[^:]*: //p' "$log" | head -n 1)
	rm -f "$log"
	if [ "$rc" -ne 0 ]; then
		failed=$((failed + 1))
		failures="$failures $name"
	elif [ "${tested:-0}" -eq 0 ]; then
		skipped=$((skipped + 1))
		skips="$skips
  $name: skipped, no test ran (${reason:-no reason given})"
	else
		passed=$((passed + 1))
		[ "$nskip" -gt 0 ] && skips="$skips
  $name: $nskip test(s) skipped (${reason:-no reason given})"
	fi
}
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	criterion "$(basename "$t")" "$t"
done
out=$(mktemp -d)
run "conform suites" "$build/ctq" conform --suite suites --out "$out/conform"
run "bad input" sh tests/badinput.sh "$build/ctq"
run "lint self-test" sh tests/lint-selftest.sh
rm -rf "$out"
echo
[ -n "$skips" ] && echo "skipped:$skips"
[ -n "$failures" ] && echo "failed:$failures"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
