#!/usr/bin/env bash
# busy.sh measures, in one run, forks of a busy source: a process holds its
# cwd and an open file in the source's view (a developer's shell or
# editor), so tine cannot seal it by rename. For each delta size it inits
# a small tree (overlay backend), writes DELTA files of about 2 KB into the
# source (the delta), starts the holder, then times fork 1 (which copies
# the whole delta) and forks 2..FORKS, each after a change of CHANGE files;
# it reads what each fork copied from tine fork --json and the disk each
# fork's new layer uses, and times `cp -a` of the delta from the source's
# view as the baseline (page cache warm, no sync, as the forks), on the
# same filesystem in the same run. At the end
# it kills the holder and times one idle fork (sealed by rename). Prints a
# Markdown table on stdout.
#
# Needs root (overlay mounts) and go (to build tine and bench/gen) unless
# TINE and GEN name prebuilt binaries.
#
#   sudo bench/busy.sh                       # deltas of 5,000 and 20,000 files
#   sudo DELTAS="5000 20000 120000" bench/busy.sh
set -euo pipefail

DELTAS=${DELTAS:-5000 20000}
FORKS=${FORKS:-10}
CHANGE=${CHANGE:-10}
SCRATCH=${SCRATCH:-/var/tmp}
TINE=${TINE:-}
GEN=${GEN:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)

log() { echo "busy.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (overlay mounts)"
command -v jq >/dev/null || die "needs jq"

W=$(mktemp -d "$SCRATCH/tine-busy-bench.XXXXXX")
export TINE_HOME=$W/home TINE_NO_DAEMON=1
HOLDER=
cleanup() {
	[[ -n $HOLDER ]] && kill "$HOLDER" 2>/dev/null || true
	for ws in "$W"/ws-*; do
		[[ -d $ws ]] || continue
		"$TINE" release --unmerged "$ws" >/dev/null 2>&1 || umount -R "$ws" 2>/dev/null || true
	done
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

# layer_kb WS JSON: disk used by the top layer of the version a fork made.
layer_kb() {
	local id top
	id=$(jq -r .version.workspace <<<"$2")
	top=$(jq -r '.version.layers[-1]' <<<"$2")
	kb "$TINE_HOME/workspaces/$id/layers/$top"
}

echo "| delta files | step | wall ms | seal ms | files copied | KB copied | KB of disk (new layer) | x cp -a time | % of cp -a disk |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for n in $DELTAS; do
	ws=$W/ws-$n
	"$GEN" -dir "$ws" -files 200 -bytes 400000 >/dev/null
	"$TINE" init --backend overlay "$ws" >/dev/null
	"$GEN" -dir "$W/delta-$n" -files "$n" -bytes $((n * 2048)) >/dev/null
	cp -a "$W/delta-$n" "$ws/node_modules"
	rm -rf "$W/delta-$n"
	sync
	# cp -a of the delta, from the source's view, as the baseline.
	t0=$(ms)
	cp -a "$ws/node_modules" "$W/cp-$n"
	cp_ms=$(($(ms) - t0))
	cp_kb=$(kb "$W/cp-$n")
	rm -rf "$W/cp-$n"
	echo "| $n | \`cp -a\` of the delta | $cp_ms | | $n | | $cp_kb | 1 | 100 |"
	first=$(cd "$ws/node_modules" && find . -type f -print -quit)
	(cd "$ws" && exec 3<"node_modules/$first" && exec sleep 3600) &
	HOLDER=$!
	sleep 0.2
	mapfile -t files < <(cd "$ws" && find node_modules -type f | sed "${CHANGE}q")
	for i in $(seq 1 "$FORKS"); do
		if ((i > 1)); then
			for f in "${files[@]}"; do printf 'change %d\n' "$i" >>"$ws/$f"; done
			sleep 0.05
		fi
		t0=$(ms)
		out=$("$TINE" fork source --name "f$i" --json)
		wall=$(($(ms) - t0))
		lkb=$(layer_kb "$ws" "$out")
		jq -r --arg n "$n" --arg i "$i" --arg wall "$wall" --arg lkb "$lkb" --arg cpms "$cp_ms" --arg cpkb "$cp_kb" '
			"| \($n) | fork \($i)\(if .seal.whole then " (whole delta)" else "" end) | \($wall) | \(.seal.ms) | \(.seal.files) | \((.seal.bytes / 1024) | floor) | \($lkb) | \((($wall | tonumber) / ($cpms | tonumber) * 1000 | floor) / 1000) | \((($lkb | tonumber) / ($cpkb | tonumber) * 10000 | floor) / 100) |"' <<<"$out"
	done
	kill "$HOLDER"
	wait "$HOLDER" 2>/dev/null || true
	HOLDER=
	printf 'idle\n' >>"$ws/${files[0]}"
	t0=$(ms)
	out=$("$TINE" fork source --name idle --json)
	wall=$(($(ms) - t0))
	echo "| $n | fork, source idle (sealed $(jq -r 'if .seal then "by copy" else "by rename" end' <<<"$out")) | $wall | | | | | $(awk "BEGIN{printf \"%.3f\", $wall/$cp_ms}") | |"
	"$TINE" release --unmerged "$ws" >/dev/null
done
log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; scratch $W on $(df -T "$W" | awk 'NR==2{print $2}')"
