#!/bin/sh
# tools/lint.sh on small trees: clean passes; each kind of violation fails
# with FILE:LINE: RULE. Usage: tests/lint-selftest.sh  (from the repository)
set -u
lint=$(cd "$(dirname "$0")/.." && pwd)/tools/lint.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # expect-rc label tree [expected output lines...]
	want=$1 label=$2 tree=$3
	shift 3
	out=$(sh "$lint" "$tree" 2>&1)
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "lint self-test $label: exit $rc, expected $want; output:"
		echo "$out"
		fail=1
	fi
	for line in "$@"; do
		case "$out" in
		*"$line"*) ;;
		*) echo "lint self-test $label: no \"$line\" in:"; echo "$out"; fail=1 ;;
		esac
	done
}
mk() { mkdir -p "$(dirname "$1")" && printf '%b' "$2" >"$1"; }

clean=$tmp/clean
mk "$clean/core/a.h" '/* a */\n'
mk "$clean/bench/b.c" '#include "families/f.h"\n#include "core/a.h"\n#include <stdlib.h>\n'
mk "$clean/backend/knobs.c" 'const char *v = getenv("CTQ_X");\n'
mk "$clean/plugins/p.c" '#include "ctq_kernel_plugin.h"\nconst char *e = getenv("CTQ_P");\n'
mk "$clean/tests/t.c" 'const char *e = getenv("HOME");\n#include "harness/x.h"\n'
mk "$clean/kernels/k.cu" '/* never call getenv here */\n#include "backend/backend.h"\n'
check 0 clean "$clean" "lint: floors, file sizes and getenv clean"

bad=$tmp/bad
cp -R "$clean" "$bad"
mk "$bad/core/up.c" '/* up */\n#include "core/a.h"\n#include "quant/q.h"\n'
mk "$bad/families/f.h" '#include "bench/gemm.h"\n'
mk "$bad/net/side.c" '#include "backend/backend.h"\n'
mk "$bad/model/env.c" 'int f(void)\n{\n\treturn getenv ("CTQ_FOO") != 0;\n}\n'
mk "$bad/plugins/q.c" '#include "core/status.h"\n'
mkdir -p "$bad/quant"
awk 'BEGIN { for (i = 0; i < 1201; i++) print "/* line */" }' >"$bad/quant/big.c"
check 1 violations "$bad" \
	'core/up.c:3: floors: core/ (floor 1) includes "quant/q.h"' \
	'families/f.h:1: floors: families/ (floor 5) includes "bench/gemm.h"' \
	'net/side.c:1: floors: net/ (floor 2) includes "backend/backend.h"' \
	'model/env.c:3: getenv: getenv(CTQ_FOO) outside backend/knobs.c' \
	'plugins/q.c:1: floors: a plug-in includes "core/status.h"' \
	'quant/big.c:1201: size: 1201 lines, over the limit of 1200' \
	'lint: 6 violation(s)'

check 2 "missing tree" "$tmp/none" "is not a folder"
[ "$fail" -eq 0 ] && echo "lint self-test: passed"
exit "$fail"
