#!/usr/bin/env bash
# busy.sh measures, in one run, forks of a busy source: a process holds its
# cwd and an open file in the source's view (a developer's shell or
# editor), so tine cannot seal it by rename. For each delta size it inits
# a small tree (overlay backend), starts the holder, writes DELTA files of
# about 2 KB into the source (the delta, as an `npm install` in that shell
# would), then times fork 1 (which copies the whole delta) and forks
# 2..FORKS, each after a change of CHANGE files; it reads what each fork
# copied from tine fork --json, the disk each fork's new layer uses and
# the disk of all the layers made since the fork before (background seals
# included), and times `cp -a` of the delta and of the whole tree from
# the source's view as the baselines (page cache warm, each after a sync
# but not synced, as the forks), on the same filesystem in the same run.
# At the end of the CLI's set it kills the holder and times one idle fork
# (sealed by rename). Prints a Markdown table on stdout.
#
# MODE=cli (the default) measures root's CLI without the daemon
# (TINE_NO_DAEMON=1). MODE=daemon measures that set and then, for each
# delta, starts `tine serve` on the same TINE_HOME (its change tracker
# and background seals of busy runs) and sends the forks through it, in
# two more sets, each on a fresh workspace with the same delta:
#   - "at once": fork 1 right after the delta is written, forks 2..FORKS
#     right after each change (the daemon's tracked seal); the daemon may
#     have sealed part of the delta in the background while it was
#     written;
#   - "after its seal": before each fork, wait until `tine tree --json`
#     lists a version of kind sealed (a background seal) of the source
#     begun after the delta or the change was written ("waited" is that
#     time, PRESEAL_WAIT seconds at most), then fork.
# The daemon's stderr is printed to stderr at the end ("serve:" lines).
#
# Needs root (overlay mounts, the daemon's fanotify tracker) and go (to
# build tine and bench/gen) unless TINE and GEN name prebuilt binaries.
#
#   sudo bench/busy.sh                       # deltas of 5,000 and 20,000 files
#   sudo DELTAS="5000 20000 120000" bench/busy.sh
#   sudo MODE=daemon DELTAS="5000 20000" bench/busy.sh
set -euo pipefail

DELTAS=${DELTAS:-5000 20000}
FORKS=${FORKS:-10}
CHANGE=${CHANGE:-10}
MODE=${MODE:-cli}
PRESEAL_WAIT=${PRESEAL_WAIT:-300}
SCRATCH=${SCRATCH:-/var/tmp}
TINE=${TINE:-}
GEN=${GEN:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)

log() { echo "busy.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (overlay mounts)"
command -v jq >/dev/null || die "needs jq"
[[ $MODE == cli || $MODE == daemon ]] || die "MODE is cli or daemon, not $MODE"

W=$(mktemp -d "$SCRATCH/tine-busy-bench.XXXXXX")
export TINE_HOME=$W/home TINE_NO_DAEMON=1
HOLDER=
DAEMON=
SAMPLER=
stop_holder() {
	[[ -n $HOLDER ]] || return 0
	kill "$HOLDER" 2>/dev/null || true
	wait "$HOLDER" 2>/dev/null || true
	HOLDER=
}
stop_daemon() {
	[[ -n $DAEMON ]] || return 0
	kill -TERM "$DAEMON" 2>/dev/null || true
	wait "$DAEMON" 2>/dev/null || true
	! kill -0 "$DAEMON" 2>/dev/null || die "tine serve (pid $DAEMON) still runs after TERM"
	DAEMON=
}
cleanup() {
	[[ -n $SAMPLER ]] && kill "$SAMPLER" 2>/dev/null || true
	stop_holder
	stop_daemon
	[[ -s $W/serve.err ]] && sed 's/^/busy.sh: serve: /' "$W/serve.err" >&2
	for ws in "$W"/ws-*; do
		[[ -d $ws ]] || continue
		"$TINE" release --unmerged "$ws" >/dev/null 2>&1 || umount -R "$ws" 2>/dev/null || true
	done
	findmnt -rn -o TARGET | grep "^$W/" | sort -r | xargs -r umount 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

if [[ -z $TINE ]]; then
	(cd "$REPO" && go build -o "$W/tine" ./cmd/tine)
	TINE=$W/tine
fi
if [[ -z $GEN ]]; then
	(cd "$REPO" && go build -o "$W/gen" ./bench/gen)
	GEN=$W/gen
fi

ms() { date +%s%N | cut -c1-13; }
kb() { du -sk "$1" | cut -f1; }
# dt runs tine through the daemon when one answers on $TINE_HOME/ctl.
dt() { env -u TINE_NO_DAEMON "$TINE" "$@"; }

start_daemon() {
	# Not through dt: $! must be tine's own pid (env execs it), for the
	# TERM at the end to reach it.
	env -u TINE_NO_DAEMON "$TINE" serve >"$W/serve.out" 2>>"$W/serve.err" &
	DAEMON=$!
	for _ in $(seq 200); do
		grep -q "listening on" "$W/serve.out" 2>/dev/null && return
		kill -0 "$DAEMON" 2>/dev/null || die "tine serve exited: $(cat "$W/serve.err")"
		sleep 0.1
	done
	die "tine serve did not start in 20 s"
}

# wsid WS: the id of the workspace at path WS.
wsid() {
	"$TINE" tree --json | jq -r --arg p "$1" '.[] | select(.workspace.path == $p) | .workspace.id'
}

# new_layers_kb ID: disk used by workspace ID's layers made since the
# last call for it (a fork's layer and any background seal's before it).
new_layers_kb() {
	local dir=$TINE_HOME/workspaces/$1/layers seen=$W/layers-$1 new
	touch "$seen"
	new=$(ls "$dir" | sort | comm -13 "$seen" -)
	ls "$dir" | sort >"$seen"
	if [[ -z $new ]]; then echo 0; return; fi
	(cd "$dir" && du -sck $new | tail -1 | cut -f1)
}

# sealed_after WS T: the start (ms) of the first background seal (a
# version of kind sealed) of workspace WS begun after T (ms), if any.
sealed_after() {
	dt tree --json 2>/dev/null | jq -r --arg p "$1" --argjson t "$2" '
		[.[] | select(.workspace.path == $p) | .versions[] | select(.kind == "sealed")
		 | .created_at
		 | ((sub("\\.[0-9]*Z$"; "Z") | fromdate) * 1000
		    + (((capture("\\.(?<f>[0-9]+)Z$").f) // "0") | "0." + . | tonumber * 1000 | floor))
		 | select(. > $t)] | first // empty'
}

# wait_seal WS T: waits until a background seal of WS begun after T (ms)
# is recorded; prints how long after T that was (ms), or "timeout".
wait_seal() {
	local deadline=$(($(ms) + PRESEAL_WAIT * 1000))
	while (($(ms) < deadline)); do
		if [[ -n $(sealed_after "$1" "$2") ]]; then
			echo $(($(ms) - $2))
			return
		fi
		sleep 0.2
	done
	echo timeout
}

# The 1-minute load average every 5 s, for the end's summary.
(while :; do cut -d' ' -f1 /proc/loadavg; sleep 5; done) >"$W/load" &
SAMPLER=$!
log "start: $(uptime)"

echo "| delta files | set | step | wall ms | seal ms | waited for the background seal, ms | files copied | KB copied | presealed | tracked | KB of disk, fork's layer | KB of disk, all new layers | x cp -a of the delta, time | % of cp -a of the delta, disk | x the change, disk |"
echo "|---:|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|"

# row N SET WALL WAITED CHANGE_KB LAYER_KB NEW_KB JSON: a fork's row.
row() {
	jq -r --arg n "$1" --arg set "$2" --arg wall "$3" --arg waited "$4" --arg chkb "$5" --arg lkb "$6" --arg nkb "$7" \
		--arg cpms "$cp_ms" --arg cpkb "$cp_kb" --arg i "$i" '
		def r(x; d): ((x * d) | floor) / d;
		"| \($n) | \($set) | fork \($i)\(if .seal.whole then " (whole delta)" else "" end) | \($wall) | \(.seal.ms | floor) | \($waited) | \(.seal.files) | \((.seal.bytes / 1024) | floor) | \(if .seal.presealed then "yes" else "no" end) | \(if .seal.tracked then "yes" else "no" end) | \($lkb) | \($nkb) | \(r(($wall | tonumber) / ($cpms | tonumber); 1000)) | \(r(($nkb | tonumber) / ($cpkb | tonumber) * 100; 100)) | \(r(($nkb | tonumber) / ($chkb | tonumber); 100)) |"' <<<"$8"
}

# forks N SET TINE...: one set on a fresh workspace: init, holder, delta,
# fork 1, forks 2..FORKS after a change each. SET names the set (cli,
# at once, after its seal); the rest is how tine is called.
forks() {
	local n=$1 set=$2 ws id first t0 out wall waited chkb lkb nkb written
	shift 2
	ws=$W/ws-$n-${set// /-}
	"$GEN" -dir "$ws" -files 200 -bytes 400000 >/dev/null
	"$@" init --backend overlay "$ws" >/dev/null
	id=$(wsid "$ws")
	new_layers_kb "$id" >/dev/null
	first=$(cd "$ws" && find . -type f -print -quit)
	(cd "$ws" && exec 3<"$first" && exec sleep 3600) &
	HOLDER=$!
	sleep 0.2
	cp -a "$W/delta-$n" "$ws/node_modules"
	written=$(ms)
	sync
	if [[ $set == cli ]]; then
		# The baselines, from this source's view.
		t0=$(ms)
		cp -a "$ws/node_modules" "$W/cp-$n"
		cp_ms=$(($(ms) - t0))
		cp_kb=$(kb "$W/cp-$n")
		rm -rf "$W/cp-$n"
		echo "| $n | baseline | \`cp -a\` of the delta | $cp_ms | | | $n | | | | | $cp_kb | 1 | 100 | |"
		sync # not the first copy's writeback
		t0=$(ms)
		cp -a "$ws" "$W/cp-$n"
		tree_ms=$(($(ms) - t0))
		tree_kb=$(kb "$W/cp-$n")
		rm -rf "$W/cp-$n"
		echo "| $n | baseline | \`cp -a\` of the tree | $tree_ms | | | | | | | | $tree_kb | $(awk "BEGIN{printf \"%.3f\", $tree_ms/$cp_ms}") | $(awk "BEGIN{printf \"%.2f\", 100*$tree_kb/$cp_kb}") | |"
	fi
	mapfile -t files < <(cd "$ws" && find node_modules -type f | sed "${CHANGE}q")
	chkb=$cp_kb
	for i in $(seq 1 "$FORKS"); do
		if ((i > 1)); then
			for f in "${files[@]}"; do printf 'change %d\n' "$i" >>"$ws/$f"; done
			written=$(ms)
			chkb=$(cd "$ws" && du -ck "${files[@]}" | tail -1 | cut -f1)
			sleep 0.05
		fi
		waited=
		if [[ $set == "after its seal" ]]; then
			waited=$(wait_seal "$ws" "$written")
			[[ $waited == timeout ]] && log "$n, $set, fork $i: no background seal after ${PRESEAL_WAIT} s; forking anyway"
		fi
		t0=$(ms)
		out=$("$@" fork source --name "f$i" --json)
		wall=$(($(ms) - t0))
		lkb=$(kb "$TINE_HOME/workspaces/$id/layers/$(jq -r '.version.layers[-1]' <<<"$out")")
		nkb=$(new_layers_kb "$id")
		row "$n" "$set" "$wall" "$waited" "$chkb" "$lkb" "$nkb" "$out"
		if [[ $set != cli ]] && ((i > 1)) && ! jq -e '.seal.tracked or .seal.whole' <<<"$out" >/dev/null; then
			log "$n, $set, fork $i: seal.tracked is not set (not through the daemon?)"
		fi
		if [[ $set == "after its seal" && $waited != timeout ]] && ! jq -e '.seal.presealed' <<<"$out" >/dev/null; then
			log "$n, $set, fork $i: not presealed after a background seal: $(jq -c '.seal | del(.holders)' <<<"$out")"
		fi
	done
	stop_holder
	if [[ $set == cli ]]; then
		printf 'idle\n' >>"$ws/${files[0]}"
		t0=$(ms)
		out=$("$@" fork source --name idle --json)
		wall=$(($(ms) - t0))
		echo "| $n | cli | fork, source idle (sealed $(jq -r 'if .seal then "by copy" else "by rename" end' <<<"$out")) | $wall | | | | | | | | | $(awk "BEGIN{printf \"%.3f\", $wall/$cp_ms}") | | |"
	fi
	"$@" release --unmerged "$ws" >/dev/null
}

for n in $DELTAS; do
	"$GEN" -dir "$W/delta-$n" -files "$n" -bytes $((n * 2048)) >/dev/null
	forks "$n" cli "$TINE"
	if [[ $MODE == daemon ]]; then
		echo "-- delta $n" >>"$W/serve.err"
		start_daemon
		log "$n: tine serve started (pid $DAEMON); load average $(cut -d' ' -f1-3 /proc/loadavg)"
		forks "$n" "at once" dt
		forks "$n" "after its seal" dt
		stop_daemon
	fi
	rm -rf "$W/delta-$n"
	log "$n done; load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
log "end: $(uptime)"
log "1-minute load average during the run: $(sort -n "$W/load" | sed -n '1p;$p' | paste -sd-) (median $(sort -n "$W/load" | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')); $(nproc) CPUs; scratch $W on $(df -T "$W" | awk 'NR==2{print $2}')"
