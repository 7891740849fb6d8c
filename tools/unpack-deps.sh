#!/bin/sh
# Unpacks every .deb of DIR into PREFIX with dpkg -x (never into /), fixing
# the absolute symlinks Debian's -dev packages carry for .so files.
set -eu
dir=$1
prefix=$2
mkdir -p "$prefix"
for f in "$dir"/*.deb; do
	dpkg -x "$f" "$prefix"
done
libdir="$prefix/usr/lib/x86_64-linux-gnu"
for l in "$libdir"/*.so; do
	[ -L "$l" ] || continue
	t=$(readlink "$l")
	case "$t" in
	/*) ln -sf "$(basename "$t")" "$l" ;;
	esac
done
echo "unpack-deps: $(ls "$dir"/*.deb | wc -l) packages unpacked into $prefix"
