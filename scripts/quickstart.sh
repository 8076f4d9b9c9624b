#!/usr/bin/env bash
# Builds and installs tine, then runs its main job: tine demo forks a sample
# repository with a failing test three ways, runs a scripted agent with a
# different approach in each fork (in parallel), tests every fork, lets the
# judge pick, merges the winner and prints what happened. Run as root on
# Linux (the overlay backend mounts, agents run under supervisors).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

if ! command -v go >/dev/null; then
	echo "quickstart: Go 1.26 or later is needed (https://go.dev/dl); not found on PATH" >&2
	exit 1
fi
if ! command -v git >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null
fi
echo "building tine (a minute or two the first time: Go fetches and compiles its dependencies)..."
go build -ldflags "$(sh scripts/ldflags.sh)" -o /usr/local/bin/tine ./cmd/tine
echo "installed $(command -v tine): $(tine version)"
exec tine demo
