#!/usr/bin/env bash
# Builds CRIU 4 from Debian's own source package and installs it as
# /usr/local/sbin/criu, for tine's CRIU live-fork engine (tine fork
# --live=criu). Debian 12's criu 3.17 fails on newer kernels; 4.2.1 builds
# from the forky source package with build dependencies all from Debian 12.
#
# Only a deb-src entry is added for forky: no binary package is ever
# installed from it. The upstream tarball is pinned by version and checked
# against its sha256 before it is built. Does nothing when criu 4 or later is
# already on PATH (pass --force to rebuild). Run as root on Debian 12.
set -euo pipefail

version=4.2.1
orig_sha256=29ec0ee09e296479fe7048c80980e8ef1d0684d0b0204c2b101dfea19f6725b9
sources=/etc/apt/sources.list.d/tine-criu-src.sources
prefix=/usr/local

die() {
	echo "install-criu: $*" >&2
	exit 1
}

# criu_major prints the major version of the criu on PATH, or 0.
criu_major() {
	local v
	v=$(criu --version 2>/dev/null | sed -n 's/^Version: *\([0-9][0-9]*\)\..*/\1/p')
	echo "${v:-0}"
}

if [ "${1:-}" != --force ] && [ "$(criu_major)" -ge 4 ]; then
	echo "install-criu: $(command -v criu) is $(criu --version | head -1), nothing to do"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root (apt-get, install to $prefix/sbin)"
command -v apt-get >/dev/null || die "needs apt-get (Debian 12)"

cat >"$sources" <<'EOF'
# Source packages only (deb-src), for building CRIU 4 (tine's
# scripts/install-criu.sh). Never install binary packages from this suite.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: forky
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	build-essential curl xz-utils patch pkg-config libprotobuf-c-dev protobuf-c-compiler \
	libprotobuf-dev protobuf-compiler python3-protobuf libnl-3-dev libnet1-dev \
	libcap-dev libbsd-dev libaio-dev libgnutls28-dev libnftables-dev libdrm-dev \
	uuid-dev >/dev/null

# The Debian revision of $version that forky carries now (4.2.1-1, -2, ...).
debver=$(apt-cache showsrc criu | sed -n "s/^Version: \($version-[0-9][0-9.]*\)$/\1/p" | head -1)
[ -n "$debver" ] || die "Debian forky no longer carries criu $version (it has: $(apt-cache showsrc criu | sed -n 's/^Version: //p' | tr '\n' ' ')); update the pin in $0"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# apt-get source gives the files' addresses; the orig tarball is what is
# built, checked against the pin (not only apt's own hash). Debian's patches
# are applied when its debian tarball can be fetched too (some mirrors lack it).
apt-get source -qq --print-uris "criu=$debver" 2>/dev/null | sed -n "s/^'\([^']*\)' \([^ ]*\) .*/\1 \2/p" >uris
orig_url=$(awk -v f="criu_$version.orig.tar.xz" '$2 == f {print $1}' uris)
[ -n "$orig_url" ] || die "apt-get source lists no criu_$version.orig.tar.xz for criu=$debver"
curl -fsSL -o "criu_$version.orig.tar.xz" "$orig_url" || die "could not fetch $orig_url"
echo "$orig_sha256  criu_$version.orig.tar.xz" | sha256sum -c --quiet - ||
	die "criu_$version.orig.tar.xz does not match its pinned sha256"
mkdir src
tar -xJf "criu_$version.orig.tar.xz" -C src --strip-components=1
deb_url=$(awk -v f="criu_$debver.debian.tar.xz" '$2 == f {print $1}' uris)
if [ -n "$deb_url" ] && curl -fsSL -o debian.tar.xz "$deb_url" 2>/dev/null; then
	tar -xJf debian.tar.xz -C src
	if [ -f src/debian/patches/series ]; then
		grep -v '^#' src/debian/patches/series | while read -r patch _; do
			[ -n "$patch" ] && patch -s -d src -p1 <"src/debian/patches/$patch"
		done
	fi
else
	echo "install-criu: Debian's criu_$debver.debian.tar.xz is not reachable; building the upstream tarball unpatched"
fi
cd src
make -s -j"$(nproc)" criu >"$work/build.log" 2>&1 || { tail -20 "$work/build.log" >&2; die "make criu failed"; }
install -D -m 0755 criu/criu "$prefix/sbin/criu"
hash -r
echo "install-criu: installed $prefix/sbin/criu: $("$prefix/sbin/criu" --version | head -1)"
"$prefix/sbin/criu" check || echo "install-criu: criu check fails on this kernel; tine falls back to restart" >&2
