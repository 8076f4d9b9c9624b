#!/bin/sh
# Start time of a normal user's tine exec in a fork without the daemon (the
# sandbox): its network of its own (the default) against fork_network =
# "host", alternating, 30 execs of `true` per figure. Run as a normal user:
#   TINE=/path/to/tine scripts/bench-sandbox-exec.sh
set -e
T=${TINE:-tine}
d=$(mktemp -d); cd "$d"; mkdir ws; cd ws; echo hi > a.txt
export TINE_HOME="$d/state" TINE_NO_DAEMON=1
trap 'cd /; rm -rf "$d"' EXIT
$T init --backend copy . >/dev/null; $T fork ws/source -n 1 >/dev/null
t() { s=$(date +%s%N); for i in $(seq 30); do $T exec ws/source-1 -- true; done; echo $(( ($(date +%s%N) - s) / 30000 )); }
for round in 1 2 3 4 5; do
  printf '' > tine.toml; own=$(t)
  printf '[network]\nfork_network = "host"\n' > tine.toml; host=$(t)
  echo "round $round: own ${own}us host ${host}us"
done
