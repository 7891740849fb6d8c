#!/bin/sh
# Runs every CPU test of ctq: the Criterion unit tests, the conformance
# suites, and the bad-input checks. Prints one closing line
# "tests: N passed, N failed" (N counts test programs and suites).
# Usage: tools/run-tests.sh BUILD_DIR
set -u
build=${1:-build}
passed=0
failed=0
failures=""
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
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	run "$(basename "$t")" "$t" --jobs 2
done
out=$(mktemp -d)
run "conform suites" "$build/ctq" conform --suite suites --out "$out/conform"
run "bad input" sh tests/badinput.sh "$build/ctq"
rm -rf "$out"
echo
[ -n "$failures" ] && echo "failed:$failures"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
