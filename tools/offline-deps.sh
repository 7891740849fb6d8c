#!/bin/sh
# Downloads the Debian .deb files ctq needs into DIR, for GPU hosts without
# network. On the offline host: tools/unpack-deps.sh DIR PREFIX, then
# make DEPS_PREFIX=PREFIX (no root needed).
set -eu
dir=${1:-offline-deps}
mkdir -p "$dir"
pkgs="libcjson1 libcjson-dev libcsv3 libcsv-dev libpcre2-dev libpcre2-8-0 libpcre2-16-0
libpcre2-32-0 libpcre2-posix3 libcriterion3 libcriterion-dev libboxfort-dev libgit2-1.5
libnanomsg5 libhttp-parser2.9 libssh2-1 libmbedcrypto7 libmbedtls14 libmbedx509-1"
cd "$dir"
if ! apt-get download $pkgs >/dev/null 2>../ctq-offline.log; then
	echo "offline-deps: apt-get download failed (run 'apt-get update' once?):" >&2
	cat ../ctq-offline.log >&2
	exit 1
fi
rm -f ../ctq-offline.log
echo "offline-deps: $(ls *.deb | wc -l) packages in $dir"
