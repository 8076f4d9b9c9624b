#!/bin/sh
# run.sh runs the whole selection benchmark (bench/selection): every task
# through tine fork-run, then every judge replayed on the forks' evidence.
# It prints a Markdown table on stdout (progress on stderr). Needs root,
# python3 and go. Extra arguments go to selbench (-tasks REGEXP, -v, -keep).
#
#   sudo bench/selection/run.sh
#   sudo bench/selection/run.sh -tasks 'python' -v
set -eu
cd "$(dirname "$0")/../.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/tine" ./cmd/tine
go build -o "$bin/selbench" ./bench/selection/selbench
"$bin/selbench" -tine "$bin/tine" "$@"
