#!/usr/bin/env bash
# fleet.sh measures a fleet on one machine: 1, 2 and 3 nodes (tine serve
# --node, each with a state directory of its own and CAPACITY tasks at
# once) on one PostgreSQL take TASKS fork-run tasks (a command agent that
# commits a file, -n FORKS) submitted at once. It reports tasks per minute
# (first submit to last finish) and the time from submit to start (the
# node's claim), median and worst, with ratios against one node measured
# in the same run. Prints a Markdown table on stdout.
#
# Needs root (overlay mounts, supervisors), go, and PostgreSQL: it uses
# $TINE_TEST_PG_URL if set, else starts a throwaway cluster
# (scripts/testpg.sh).
#
#   sudo bench/fleet.sh
#   sudo TASKS=24 CAPACITY=1 bench/fleet.sh
set -euo pipefail

TASKS=${TASKS:-12}
CAPACITY=${CAPACITY:-2}
FORKS=${FORKS:-2}
cd "$(dirname "$0")/.."
. bench/fleet-setup.sh fleet
agent='echo "fork $TINE_FORK_INDEX" > "f$TINE_FORK_INDEX.txt" && git add . && git -c user.name=a -c user.email=a@a commit -qm fork'

# wait_final URL K: waits until the fleet at URL has K tasks, all final.
wait_final() {
	until TINE_FLEET_URL=$1 "$work/tine" tasks --json |
		jq -e "[.tasks[] | select(.state == \"done\" or .state == \"failed\" or .state == \"lost\")] | length == $2" >/dev/null; do
		sleep 0.1
	done
}

# run N: N nodes in schema fleetN take TASKS tasks; prints "N tpm median worst idle notdone".
run() {
	local n=$1 schema=fleet$1 url i
	psql -q "$TINE_TEST_PG_URL" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema" >/dev/null
	url="$TINE_TEST_PG_URL&search_path=$schema"
	pids=()
	for i in $(seq 1 "$n"); do
		TINE_HOME="$work/$schema/node$i" TINE_STORE_URL=$url "$work/tine" serve --node "node$i" \
			--capacity "$CAPACITY" --heartbeat 1s >"$work/$schema-node$i.log" 2>&1 &
		pids+=($!)
	done
	for i in $(seq 1 "$n"); do
		until grep -q "taking up to" "$work/$schema-node$i.log"; do sleep 0.1; done
	done
	TINE_FLEET_URL=$url "$work/tine" submit --repo "$work/repo" --command "$agent" -n "$FORKS" --count "$TASKS" >/dev/null
	wait_final "$url" "$TASKS"
	# one more, with every node idle: the pick-up latency alone
	TINE_FLEET_URL=$url "$work/tine" submit --repo "$work/repo" --command "$agent" -n "$FORKS" >/dev/null
	wait_final "$url" $((TASKS + 1))
	TINE_FLEET_URL=$url "$work/tine" tasks --json | jq -r --arg n "$n" '
		def t: sub("\\.[0-9]+"; "") as $s | (capture("\\.(?<f>[0-9]+)") // {f: "0"}) as $c | ($s | sub("Z$"; "") | strptime("%Y-%m-%dT%H:%M:%S") | mktime) + ("0." + $c.f | tonumber);
		(.tasks[-1] | (.started_at | t) - (.submitted_at | t)) as $idle
		| .tasks[:-1] as $ts
		| ([$ts[] | select(.state != "done")] | length) as $bad
		| ($ts | map(.submitted_at | t) | min) as $first
		| ($ts | map(.finished_at | t) | max) as $last
		| ($ts | map((.started_at | t) - (.submitted_at | t)) | sort) as $s2s
		| "\($n) \(($ts | length) / (($last - $first) / 60)) \($s2s[($s2s | length) / 2 | floor]) \($s2s[-1]) \($idle) \($bad)"'
	for p in "${pids[@]}"; do kill "$p"; done
	wait 2>/dev/null || true
	pids=()
}

results=()
for n in 1 2 3; do
	results+=("$(run "$n")")
	echo "nodes ${results[-1]}" >&2
done
echo
echo "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $TASKS tasks of $FORKS forks (command agent), capacity $CAPACITY per node, one PostgreSQL $(psql -tA "$TINE_TEST_PG_URL" -c 'SHOW server_version')"
echo
echo "| nodes | tasks/min | vs 1 node | submit→start median | submit→start worst | submit→start, idle fleet | not done |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
base=$(awk '{print $2}' <<<"${results[0]}")
for r in "${results[@]}"; do
	awk -v b="$base" '{ printf "| %d | %.1f | %.2fx | %.2f s | %.2f s | %.3f s | %d |\n", $1, $2, $2 / b, $3, $4, $5, $6 }' <<<"$r"
done
