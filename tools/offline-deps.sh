#!/bin/sh
# Downloads the Debian .deb files ctq needs into DIR, for GPU hosts without
# network: the build's libraries, and gnuplot (gnuplot-nox) with its whole
# dependency closure (cairo, pango, fonts, ...), so that the report made on
# the offline host has plots. What every Debian host has (dpkg, apt, debconf
# and their closure: libc, libstdc++, zlib, ...) is left out. On the offline host:
# tools/unpack-deps.sh DIR PREFIX, then make DEPS_PREFIX=PREFIX (no root
# needed); ctq finds PREFIX/usr/bin/gnuplot through DEPS_PREFIX.
# --no-plots leaves gnuplot's closure out: the build's and HTTP's packages
# alone (48 files, 12 MB against 110 and 33 MB), for a device call whose
# carry limit (64 MiB with the working tree) is better spent elsewhere; the
# report is then written without plots.
# Usage: tools/offline-deps.sh [--no-plots] [DIR]   or   tools/offline-deps.sh [--no-plots] --list
set -eu
plots=1
if [ "${1:-}" = "--no-plots" ]; then
	plots=0
	shift
fi
dir=${1:-offline-deps}
build_pkgs="libcjson1 libcjson-dev libcsv3 libcsv-dev libpcre2-dev libpcre2-8-0 libpcre2-16-0
libpcre2-32-0 libpcre2-posix3 libcriterion3 libcriterion-dev libboxfort-dev libgit2-1.5
libnanomsg5 libhttp-parser2.9 libssh2-1 libmbedcrypto7 libmbedtls14 libmbedx509-1
libmicrohttpd-dev libcurl4-openssl-dev"
plot_root="gnuplot-nox"
# ctq serve (libmicrohttpd) and the HTTP client (libcurl): their runtime
# libraries with their closure (gnutls, nghttp2, ldap, ...)
http_root="libmicrohttpd12 libcurl4"

# The closure of a package list (Depends and Pre-Depends, recursively).
closure() {
	apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "$@" 2>/dev/null | grep '^[a-z0-9]' | sort -u
}
plot_all=$(closure $plot_root)
if [ -z "$plot_all" ]; then
	echo "offline-deps: apt-cache knows no $plot_root (run 'apt-get update' once?)" >&2
	exit 1
fi
# What every Debian host has: dpkg, apt and debconf with their closure (libc,
# libstdc++, zlib, ...).
base=$(closure dpkg apt debconf)
# apt-cache lists every alternative of an "A | B | C" dependency:
# fontconfig-config's fonts are such a list, and one of them is enough
# (fonts-dejavu-core, the first); the others are 30 MB the host never reads.
plot_pkgs=$(printf '%s\n' $plot_all | grep -vxF "$base" |
	grep -vE '^(fonts-(croscore|freefont-otf|freefont-ttf|liberation|liberation2|texgyre|urw-base35)|ttf-bitstream-vera)$' || true)
# A GPU host image need not carry what libcurl links (libunistring, gnutls,
# nettle, ...) even where it has dpkg and apt: take the whole closure but the
# C runtime itself.
http_pkgs=$(printf '%s\n' $(closure $http_root) | grep -vxE 'libc6|libgcc-s1|gcc-12-base|zlib1g' || true)
[ "$plots" = 1 ] || plot_pkgs=""
pkgs=$(printf '%s\n' $build_pkgs $plot_pkgs $http_pkgs | sort -u)
if [ "$dir" = "--list" ]; then
	printf '%s\n' $pkgs
	exit 0
fi

mkdir -p "$dir"
log=$(mktemp "${TMPDIR:-/tmp}/ctq-offline.XXXXXX")
cd "$dir"
if ! apt-get download $pkgs >/dev/null 2>"$log"; then
	echo "offline-deps: apt-get download failed (run 'apt-get update' once?):" >&2
	cat "$log" >&2
	rm -f "$log"
	exit 1
fi
rm -f "$log"
echo "offline-deps: $(ls *.deb | wc -l) packages in $dir ($(echo $plot_pkgs | wc -w) for gnuplot, $(echo $http_pkgs | wc -w) for HTTP)"
