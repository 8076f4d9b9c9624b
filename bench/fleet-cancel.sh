#!/usr/bin/env bash
# fleet-cancel.sh measures tine tasks cancel on a fleet of one node:
# ROUNDS times, a task whose command agent sleeps is submitted; once its
# agent runs, tine tasks cancel stops it. It reports, per round, the time
# from the cancel's start until the agent's process is gone and until
# tine tasks shows the task canceled, against the cancel of a queued task
# (the command's own cost: the fleet's database alone) in the same run.
# Prints a Markdown table on stdout.
#
# Needs root (overlay mounts, supervisors), go, jq, and PostgreSQL: it
# uses $TINE_TEST_PG_URL if set, else starts a throwaway cluster
# (scripts/testpg.sh).
#
#   sudo bench/fleet-cancel.sh
#   sudo ROUNDS=10 bench/fleet-cancel.sh
set -euo pipefail

ROUNDS=${ROUNDS:-5}
cd "$(dirname "$0")/.."
. bench/fleet-setup.sh cancel
psql -q "$TINE_TEST_PG_URL" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS cancelbench CASCADE; CREATE SCHEMA cancelbench" >/dev/null
export TINE_FLEET_URL="$TINE_TEST_PG_URL&search_path=cancelbench"
TINE_HOME="$work/node" TINE_STORE_URL=$TINE_FLEET_URL "$work/tine" serve --node n1 --capacity 1 >"$work/node.log" 2>&1 &
pids+=($!)
until grep -q "taking up to" "$work/node.log"; do sleep 0.1; done

now() { date +%s.%N; }
state() { "$work/tine" tasks --json | jq -r --arg id "$1" '.tasks[] | select(.id == $id) | .state'; }
rows=()
for r in $(seq 1 "$ROUNDS"); do
	secs=$((290 + r))
	running=$("$work/tine" submit --repo "$work/repo" --command "sleep $secs" -n 1)
	queued=$("$work/tine" submit --repo "$work/repo" --command "true" -n 1)
	until pgrep -f "sleep $secs" >/dev/null; do sleep 0.02; done
	t0=$(now)
	"$work/tine" tasks cancel "$queued" >/dev/null
	tq=$(now)
	"$work/tine" tasks cancel "$running" >/dev/null
	while pgrep -f "sleep $secs" >/dev/null; do sleep 0.005; done
	tg=$(now)
	until [ "$(state "$running")" = canceled ]; do sleep 0.01; done
	tc=$(now)
	rows+=("$(awk -v a="$t0" -v q="$tq" -v g="$tg" -v c="$tc" -v r="$r" 'BEGIN { printf "| %d | %.0f | %.0f | %.0f | %.1fx |", r, (q-a)*1000, (g-q)*1000, (c-q)*1000, (g-q)/(q-a) }')")
done
echo
echo "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); one node, a task per round whose agent sleeps"
echo
echo "| round | cancel of a queued task ms | running task: agent gone ms | running task: shown canceled ms | agent gone / queued cancel |"
echo "|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
