#!/usr/bin/env bash
# history.sh measures what a command costs as the store's history grows
# (issue 24): `tine ls` and `tine path` on a state directory with 10
# recorded runs against one with HISTORY (default 1,000) recorded runs,
# all but the source discarded (forks made 64 at a time and discarded as
# a group), in the same run, alternating between the two stores, with
# `git status` of the same workspace as the baseline. Each state directory
# holds one workspace of a small git repository (overlay backend). With
# BEFORE naming another tine binary (the one before a change), each command
# is timed with it too, on the same stores in the same rounds. Prints a
# Markdown table on stdout, progress on stderr.
#
# Needs root (overlay mounts), git, and go (to build tine) unless TINE
# names a prebuilt binary.
#
#   sudo bench/history.sh
#   sudo HISTORY=10000 REPS=11 bench/history.sh
#   sudo BEFORE=/tmp/tine-main bench/history.sh
set -euo pipefail

HISTORY=${HISTORY:-1000} # runs recorded in the large store
SMALL=${SMALL:-10}       # runs recorded in the small store
REPS=${REPS:-21}         # timed runs of each command per store
SCRATCH=${SCRATCH:-/var/tmp}
TINE=${TINE:-}
BEFORE=${BEFORE:-} # another tine binary to time alongside
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || die "needs jq"
export TINE_NO_DAEMON=1
cleanup() {
	local h
	for h in "$W"/home-*; do
		TINE_HOME=$h "$TINE" release --unmerged "$W/ws-${h##*-}" >/dev/null 2>&1 || true
	done
	unmount_under "$W"
	rm -rf "$W"
}
trap cleanup EXIT
build_tine

# store N: a state directory home-N with one workspace ws-N and N recorded
# runs, the source and N-1 discarded forks.
store() {
	local n=$1 left batch group
	export TINE_HOME=$W/home-$n
	mkdir -p "$W/ws-$n"
	for f in $(seq 1 50); do echo "file $f" >"$W/ws-$n/f$f.txt"; done
	git -C "$W/ws-$n" init -q && git -C "$W/ws-$n" add . &&
		git -C "$W/ws-$n" -c user.name=b -c user.email=b@localhost commit -qm base
	"$TINE" init "$W/ws-$n" >/dev/null
	for ((left = n - 1; left > 0; left -= batch)); do
		batch=$((left < 64 ? left : 64))
		group=$("$TINE" fork "ws-$n/source" -n "$batch" --json | jq -r .group.id)
		"$TINE" discard --unmerged "$group" >/dev/null
	done
	log "store of $n runs made"
}

ms() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b - a) * 1000}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
declare -A samples
# timed KEY CMD...: run CMD, add its wall time to KEY.
timed() {
	local key=$1 t0 t1
	shift
	t0=$EPOCHREALTIME
	"$@" >/dev/null
	t1=$EPOCHREALTIME
	samples[$key]="${samples[$key]:-} $(ms "$t0" "$t1")"
}

store "$SMALL"
store "$HISTORY"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < REPS; i++)); do
	for n in "$SMALL" "$HISTORY"; do
		export TINE_HOME=$W/home-$n
		timed "$n/ls" "$TINE" ls
		timed "$n/path" "$TINE" path "ws-$n/source"
		if [[ -n $BEFORE ]]; then
			timed "$n/ls (before)" "$BEFORE" ls
			timed "$n/path (before)" "$BEFORE" path "ws-$n/source"
		fi
		timed "$n/git" git -C "$W/ws-$n" status
	done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

med() { # shellcheck disable=SC2086 # the samples are words
	median ${samples[$1]}
}
echo "Command: \`sudo HISTORY=$HISTORY REPS=$REPS ${BEFORE:+BEFORE=$BEFORE }bench/history.sh\`; tine built from \`$built\`."
echo
echo "$(nproc) CPUs; load average $load_start at the start, $load_end at the end. Medians of $REPS runs, wall-clock ms of the whole command."
echo
echo "| command | $SMALL runs recorded | $HISTORY runs recorded | ratio | x \`git status\` ($HISTORY) |"
echo "|---|---:|---:|---:|---:|"
g=$(med "$HISTORY/git")
whats=(ls path)
[[ -n $BEFORE ]] && whats+=("ls (before)" "path (before)")
for what in "${whats[@]}" git; do
	a=$(med "$SMALL/$what") b=$(med "$HISTORY/$what")
	case $what in
	git) label="\`git status\`" ;;
	*" (before)") label="\`tine ${what% (before)}\`, before" ;;
	*) label="\`tine $what\`" ;;
	esac
	echo "| $label | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", b / a}') | $(awk -v b="$b" -v g="$g" 'BEGIN {printf "%.2f", b / g}') |"
done
