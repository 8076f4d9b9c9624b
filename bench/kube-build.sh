#!/usr/bin/env bash
# kube-build.sh measures what the TineTask controller (kube/, the
# controller-runtime and Kubernetes API server modules) adds to a build:
# with an empty build cache, it builds BASE (a commit before the
# controller; default the branch's merge base with main) and then, on that
# warmed cache, this tree: go build ./... and the tine binary, and the
# race-enabled test binary of kube/kubetest (the in-process API server and
# etcd, as go test -race ./... in .ci/run compiles them). CPU seconds
# (user+sys) are the figure to compare on a shared machine; the binary
# sizes are printed last.
#
#   bench/kube-build.sh               # BASE=$(git merge-base HEAD main)
#   BASE=4a5c455 bench/kube-build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin" GOFLAGS=-buildvcs=false
BASE=${BASE:-$(git merge-base HEAD main)}
work=$(mktemp -d /tmp/kube-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
export GOCACHE=$work/cache
mkdir "$work/base"
git archive "$BASE" | tar -x -C "$work/base"
here=$PWD
step() {
	local name=$1 dir=$2
	shift 2
	local out
	out=$( { cd "$dir" && /usr/bin/time -f "%U %S %e" "$@" >/dev/null; } 2>&1 | tail -n 1)
	read -r u s e <<<"$out"
	printf '| %s | %.0f | %.0f |\n' "$name" "$(echo "$u + $s" | bc)" "$e"
}
echo "| step | CPU s | wall s |"
echo "|---|---:|---:|"
step "base: go build ./... (empty cache)" "$work/base" go build ./...
step "base: go build ./cmd/tine" "$work/base" go build -o "$work/tine-base" ./cmd/tine
step "this tree: go build ./... (cache warmed by base)" "$here" go build ./...
step "this tree: go build ./cmd/tine" "$here" go build -o "$work/tine-here" ./cmd/tine
step "this tree: go test -race -c ./kube/kubetest" "$here" go test -race -c -o /dev/null ./kube/kubetest
echo
echo "tine binary: base $(stat -c %s "$work/tine-base") bytes, this tree $(stat -c %s "$work/tine-here") bytes"
