#!/bin/sh
# Prints the go build -ldflags that stamp tine's commit (and, on a commit a
# tag names, that version) into internal/buildinfo, so tine version names
# them even where the toolchain's own VCS stamp is missing (a git worktree,
# -buildvcs=false). Prints nothing outside a git checkout.
cd "$(dirname "$0")/.." || exit 0
pkg=github.com/tinehq/tine/internal/buildinfo
rev=$(git rev-parse HEAD 2>/dev/null) || exit 0
flags="-X $pkg.commit=$rev"
if tag=$(git describe --tags --exact-match 2>/dev/null); then
	flags="$flags -X $pkg.version=$tag"
fi
printf '%s\n' "$flags"
