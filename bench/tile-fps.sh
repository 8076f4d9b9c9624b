#!/usr/bin/env bash
# tile-fps.sh measures, in one run, the frames per second a dashboard tile
# gets of a fork's display through the daemon's WebSocket bridge on
# loopback (issue 29), against the same VNC client connected straight to
# the fork's X server (the baseline): a workspace whose display service
# animates (ico, a rotating polyhedron, redrawn without pause) is forked,
# tine serve runs, and bench/tilefps counts framebuffer updates for
# SECONDS each way, ROUNDS times, alternating. It also times, per round,
# a fork's display waking from an idle stop (idle_timeout = "2s"): from
# tine screen on the stopped display to the screenshot. Prints a Markdown
# table on stdout.
#
# Needs root, Xvnc, openbox, xwd and ico (Debian's x11-apps), jq, and go.
#
#   sudo bench/tile-fps.sh
#   sudo ROUNDS=5 SECONDS_EACH=20 SIZE=640x480 bench/tile-fps.sh
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-10}
SIZE=${SIZE:-1280x800}
SCRATCH=${SCRATCH:-/var/tmp}
REPO=$(cd "$(dirname "$0")/.." && pwd)

log() { echo "tile-fps.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (supervisors, overlay mounts)"
for p in jq go Xvnc openbox xwd ico; do command -v $p >/dev/null || die "needs $p"; done

W=$(mktemp -d "$SCRATCH/tine-tilefps.XXXXXX")
export TINE_HOME=$W/home TINE_NO_DAEMON=1
SERVE=
cleanup() {
	[[ -n $SERVE ]] && kill "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null || true
	"$W/tine" release --force "$W/ws" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT
(cd "$REPO" && go build -o "$W/tine" ./cmd/tine && go build -o "$W/tilefps" ./bench/tilefps)
TINE=$W/tine

ms() { date +%s%N | cut -c1-13; }

mkdir -p "$W/ws"
cat >"$W/ws/tine.toml" <<TOML
[display]
enabled = true
size = "$SIZE"
idle_timeout = "2s"

[[service]]
name = "anim"
display = true
command = "exec ico -faces -geometry 600x600+0+0 -size 500x500"
TOML
"$TINE" init "$W/ws" --name fps >/dev/null
"$TINE" start fps/source >/dev/null
"$TINE" fork fps/source --wait >/dev/null
"$TINE" serve >"$W/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 100); do [[ -S $TINE_HOME/ctl/tine.sock ]] && break; sleep 0.1; done
RUN=$("$TINE" ps fps/source-1 --json | jq -r .run.id)

xvnc_pid() { "$TINE" ps fps/source-1 --json | jq -r '.processes[] | select(.service == "tine-display") | .pid' | head -1; }

echo "| round | direct to Xvnc (updates/s) | through the bridge (updates/s) | x baseline | direct (MB/s) | bridge (MB/s) | idle display woken by tine screen (ms) |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for i in $(seq "$ROUNDS"); do
	# Stopped while idle between rounds: wake it by a screenshot, timed.
	for _ in $(seq 200); do
		[[ $("$TINE" ps fps/source-1 --json | jq -r '.display_idle != null') == true ]] && break
		sleep 0.1
	done
	t0=$(ms)
	"$TINE" screen fps/source-1 -o "$W/shot.png" >/dev/null
	wake_ms=$(($(ms) - t0))
	# A bridged client that asks for nothing keeps the display watched (the
	# daemon counts its bridges, not a direct client) while both measure.
	"$W/tilefps" -sock "$TINE_HOME/ctl/tine.sock" -run "$RUN" -hold -seconds 3600 &
	holder=$!
	sleep 0.5
	direct=$("$W/tilefps" -direct "$(xvnc_pid)" -seconds "$SECONDS_EACH")
	bridge=$("$W/tilefps" -sock "$TINE_HOME/ctl/tine.sock" -run "$RUN" -seconds "$SECONDS_EACH")
	kill "$holder"; wait "$holder" 2>/dev/null || true
	printf '| %d | %.1f | %.1f | %.2fx | %.1f | %.1f | %d |\n' "$i" \
		"$(jq .fps <<<"$direct")" "$(jq .fps <<<"$bridge")" \
		"$(jq -n "$(jq .fps <<<"$bridge") / $(jq .fps <<<"$direct")")" \
		"$(jq .mb_per_s <<<"$direct")" "$(jq .mb_per_s <<<"$bridge")" "$wake_ms"
done
