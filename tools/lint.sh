#!/bin/sh
# make lint: what review keeps finding, checked over the product sources.
#
#   floors   an #include "DIR/..." of another folder points down the floors
#            of docs/architecture.md (a lower floor only; never sideways or
#            up); include/ (the public plug-in contract) is below every
#            floor; plugins/ include only that contract.
#   size     no product file over 1200 lines (docs/architecture.md, "Rules
#            that keep it so"); the generated text/nfc_data.h is excepted.
#   getenv   the environment is read in backend/knobs.c only. tests/ and
#            tools/ are exempt (they are not the product: fixtures and dev
#            tools set up their own environment), and so is plugins/ (a
#            plug-in is built against the public header alone and cannot
#            reach knobs.c). The reads below that predate this check are
#            listed by file and variable, so a new one fails.
#
# Usage: tools/lint.sh [ROOT]   (ROOT: the tree to check, default the
# repository holding this script). Prints FILE:LINE: RULE: message per
# violation and exits 1 when there is one, 0 otherwise; 2 on bad usage.
set -u
root=${1:-$(dirname "$0")/..}
if [ ! -d "$root" ]; then
	echo "lint: $root is not a folder" >&2
	exit 2
fi
cd "$root" || exit 2

# Folder floor, ground first; keep in step with docs/architecture.md.
floors='include 0
core 1
net 2
quant 2
backend 2
stats 2
checkpoint 3
reference 3
kernels 3
conform 4
model 4
text 4
results 4
families 5
bench 6
serve 6
reports 7
eval 7
plan 8
harness 9'
size_limit=1200
size_except='text/nfc_data.h'
# FILE:VARIABLE pairs read outside knobs.c before the check existed (see
# CONTRIBUTING.md: new environment reads go to backend/knobs.c).
# net/http.c asks whether the user set curl's own no_proxy before it keeps
# loopback servers direct; net/ is on backend/'s floor and cannot include
# knobs.h (docs/knobs.md, "Other environment variables").
getenv_known='net/http.c:no_proxy
net/http.c:NO_PROXY'

dirs=$(echo "$floors" | awk '{print $1}')
files=$(for d in $dirs plugins; do
	[ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \)
done | LC_ALL=C sort)
[ -n "$files" ] || { echo "lint: no product sources under $root" >&2; exit 2; }

# shellcheck disable=SC2086
echo "$files" | awk -v floors="$floors" -v limit="$size_limit" -v except="$size_except" \
	-v known="$getenv_known" '
BEGIN {
	n = split(floors, fl, "\n")
	for (i = 1; i <= n; i++) { split(fl[i], p, " "); floor[p[1]] = p[2] + 0 }
	n = split(known, kn, "\n")
	for (i = 1; i <= n; i++) ok_env[kn[i]] = 1
	bad = 0
}
function report(file, line, rule, msg) {
	printf "%s:%d: %s: %s\n", file, line, rule, msg
	bad++
}
{
	file = $0
	split(file, parts, "/")
	own = parts[1]
	lines = 0
	while ((getline text < file) > 0) {
		lines++
		# floors: #include "DIR/..." of a known folder
		if (text ~ /^[ \t]*#[ \t]*include[ \t]*"/) {
			inc = text
			sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
			sub(/".*/, "", inc)
			if (own == "plugins") {
				if (inc !~ /^(include\/)?ctq_kernel_plugin\.h$/)
					report(file, lines, "floors", "a plug-in includes \"" inc "\"; plug-ins include only include/ctq_kernel_plugin.h")
			} else if (index(inc, "/")) {
				dir = substr(inc, 1, index(inc, "/") - 1)
				if ((dir in floor) && dir != own && floor[dir] >= floor[own])
					report(file, lines, "floors", own "/ (floor " floor[own] ") includes \"" inc "\" (" dir "/, floor " floor[dir] "); includes point down only (docs/architecture.md)")
			}
		}
		# getenv outside backend/knobs.c
		t = text
		while (match(t, /(secure_)?getenv[ \t]*\([ \t]*"?[A-Za-z_0-9]*/)) {
			call = substr(t, RSTART, RLENGTH)
			t = substr(t, RSTART + RLENGTH)
			if (substr(text, 1, 2) == " *" || text ~ /^[ \t]*\/[*\/]/)
				break
			var = call
			sub(/^(secure_)?getenv[ \t]*\([ \t]*"?/, "", var)
			if (file != "backend/knobs.c" && own != "plugins" && !((file ":" var) in ok_env))
				report(file, lines, "getenv", "getenv(" (var != "" ? var : "...") ") outside backend/knobs.c; read the environment there (CONTRIBUTING.md, knobs)")
		}
	}
	close(file)
	if (lines > limit && file != except)
		report(file, lines, "size", lines " lines, over the limit of " limit " (docs/architecture.md); split the file")
}
END {
	if (bad) {
		printf "lint: %d violation(s)\n", bad
		exit 1
	}
}'
rc=$?
[ "$rc" -eq 0 ] && echo "lint: floors, file sizes and getenv clean"
exit "$rc"
