#!/bin/sh
# Installs the Debian packages ctq needs when any is missing. Idempotent:
# when all are present it only checks (no network, well under a second).
# Usage: tools/deps.sh PKG...
set -u
if [ -n "${DEPS_PREFIX:-}" ]; then
	echo "deps: using packages unpacked under DEPS_PREFIX=$DEPS_PREFIX"
	exit 0
fi
if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps: dpkg-query not found: not a Debian-like system. Install by hand: $*" >&2
	echo "deps: (or build with make DEPS_PREFIX=DIR against unpacked .deb files)" >&2
	exit 1
fi
missing=""
for p in "$@"; do
	s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
	case "$s" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0
echo "deps: installing:$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo -n"
	else
		echo "deps: need root to install$missing (no sudo). Run as root: apt-get install$missing" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
# Another apt (unattended-upgrades, a second make) may hold the dpkg lock:
# wait for it, up to 10 minutes, rather than fail at once. The log is this
# run's own, so it never shows another process's lines.
APT="apt-get -o DPkg::Lock::Timeout=600"
log=$(mktemp "${TMPDIR:-/tmp}/ctq-deps.XXXXXX") || { echo "deps: cannot create a log file" >&2; exit 1; }
# Install from the current lists first; refresh them only when that fails.
if ! $SUDO $APT install -y -q --no-install-recommends $missing >"$log" 2>&1; then
	if ! { $SUDO $APT update -q && $SUDO $APT install -y -q --no-install-recommends $missing; } >>"$log" 2>&1; then
		echo "deps: apt-get could not install$missing; see $log:" >&2
		tail -n 15 "$log" >&2
		exit 1
	fi
fi
rm -f "$log"
echo "deps: installed:$missing"
