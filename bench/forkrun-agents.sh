#!/usr/bin/env bash
# forkrun-agents.sh measures fork-run's overhead with the real Claude Code
# and Codex CLIs, each pointed at its mock API on loopback
# (internal/agentmock: a tool call that writes one file, then an answer),
# beside the command agent that writes the same file, for N = 1, 4 and 16
# forks, in one process (forkrun's BenchmarkForkRunAgents). Overhead is
# the fork-run's total minus the agents' own time (the slowest fork's
# agent, since they run in parallel). Prints a Markdown table on stdout.
#
# Needs root (overlay mounts, supervisors), go, and claude and codex on
# PATH (an agent that is missing is skipped).
#
#   sudo bench/forkrun-agents.sh            # 3 fork-runs per row
#   sudo REPS=1 bench/forkrun-agents.sh     # a quick run
set -euo pipefail

REPS=${REPS:-3}   # fork-runs per row (go test -benchtime REPSx)
cd "$(dirname "$0")/.."

out=$(go test ./forkrun -run '^$' -bench 'ForkRunAgents' -benchtime "${REPS}x" -timeout 60m | tee /dev/stderr)
echo
echo "claude $(claude --version 2>/dev/null | head -1), codex $(codex --version 2>/dev/null | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $REPS fork-runs per row (means)"
echo
echo "| agent | N | fork-run total | agents' own (slowest) | **overhead** |"
echo "|---|---:|---:|---:|---:|"
awk '/^BenchmarkForkRunAgents\// {
	split($1, p, "/"); sub("-[0-9]+$", "", p[3])
	for (i = 3; i < NF; i++) m[$(i+1)] = $i
	printf "| %s | %s | %.0f ms | %.0f ms | **%.0f ms** |\n", p[2], p[3], m["ms/forkrun"], m["agent-ms"], m["overhead-ms"]
}' <<<"$out"
