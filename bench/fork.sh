#!/usr/bin/env bash
# fork.sh measures, in one run on one tree, how long `tine fork` (overlay
# backend) takes to give you a private copy of a workspace, against
# `cp -a`, `cp -a --reflink=auto` and `git worktree add`, and how 1, 4 and
# 16 forks at once compare. It prints Markdown tables on stdout (progress
# goes to stderr) and removes everything it made, even on failure.
#
# Before every timed fork the source rewrites its delta (DELTA_KB of new
# data, plus small edits and deletions) and `sync`s, untimed: a fork that
# seals by renaming leaves the source an empty delta, and each fork should
# start from the same state. When the source's layer stack gets deep, the
# script rolls the source back to its init version (untimed) so that no
# timed fork of the main rows hits the stack-depth limit. Extra rows, each
# with the small delta and with a LARGE_MB one (tine may seal the two
# differently: copy or rename), measure a fork right after `git status`
# read the whole tree through the source's view and a fork with unrelated
# dirty data on the filesystem; a last row forks one source, with the large
# delta, past the depth limit.
#
# Needs root (overlay mounts), bash 5, git, jq, and go (to build tine and
# the tree generator) unless TINE and GEN name prebuilt binaries. Uses
# hyperfine, when installed, for one cross-check row.
#
#   sudo bench/fork.sh                      # 50,000 files, 500 MB
#   sudo bench/fork.sh -f 5000 -s 50 -r 5   # a quick run
set -euo pipefail

FILES=${FILES:-50000}           # files in the tree
SIZE_MB=${SIZE_MB:-500}         # their total size, in MB (10^6 bytes)
SCRATCH=${SCRATCH:-/var/tmp}    # parent of the scratch directory
REPS=${REPS:-9}                 # repetitions of each tine operation
SLOW_REPS=${SLOW_REPS:-3}       # repetitions of cp -a, cp --reflink, git worktree, and of deep forks
DELTA_KB=${DELTA_KB:-1024}      # new data the source writes before each fork, KiB
LARGE_MB=${LARGE_MB:-64}        # the large delta of the extra rows, MiB (0: skip those rows)
DIRTY_MB=${DIRTY_MB:-256}       # unrelated dirty data for the dirty-fork rows, MiB (0: skip those rows)
MAX_FORKS=${MAX_FORKS:-45}      # forks of one source to try for the deep-stack row (0: skip the row)
BASELINE=${BASELINE:-plain}     # what cp/worktree copy: plain (an unmanaged copy) or workspace
HYPERFINE=${HYPERFINE:-auto}    # auto, 1 or 0: cross-check the single fork with hyperfine
KEEP=${KEEP:-0}                 # 1: keep the scratch directory (still releases the workspace)
TINE=${TINE:-}                  # prebuilt tine binary; default: build this checkout
GEN=${GEN:-}                    # prebuilt bench/gen binary; default: build it
RESET_DEPTH=28                  # roll the source back once its stack is this deep

usage() {
	cat <<EOF
usage: $0 [-f FILES] [-s SIZE_MB] [-d SCRATCH] [-r REPS] [-c SLOW_REPS]
          [-D DELTA_KB] [-L LARGE_MB] [-y DIRTY_MB] [-m MAX_FORKS] [-b plain|workspace]
          [-H auto|1|0] [-k]
Each option also reads the environment variable named after it (defaults):
  -f FILES=$FILES  -s SIZE_MB=$SIZE_MB  -d SCRATCH=$SCRATCH  -r REPS=$REPS
  -c SLOW_REPS=$SLOW_REPS  -D DELTA_KB=$DELTA_KB  -L LARGE_MB=$LARGE_MB  -y DIRTY_MB=$DIRTY_MB
  -m MAX_FORKS=$MAX_FORKS  -b BASELINE=$BASELINE  -H HYPERFINE=$HYPERFINE
  -k KEEP=1  TINE=path/to/tine  GEN=path/to/gen
EOF
}

while getopts "f:s:d:r:c:D:L:y:m:b:H:kh" opt; do
	case $opt in
	f) FILES=$OPTARG ;;
	s) SIZE_MB=$OPTARG ;;
	d) SCRATCH=$OPTARG ;;
	r) REPS=$OPTARG ;;
	c) SLOW_REPS=$OPTARG ;;
	D) DELTA_KB=$OPTARG ;;
	L) LARGE_MB=$OPTARG ;;
	y) DIRTY_MB=$OPTARG ;;
	m) MAX_FORKS=$OPTARG ;;
	b) BASELINE=$OPTARG ;;
	H) HYPERFINE=$OPTARG ;;
	k) KEEP=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || { usage >&2; exit 2; }

log() { printf '%s\n' "fork.sh: $*" >&2; }
die() { log "$*"; exit 1; }

for v in FILES SIZE_MB REPS SLOW_REPS DELTA_KB; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done
for v in LARGE_MB DIRTY_MB MAX_FORKS; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer, not '${!v}'"
done
((DELTA_KB >= 16)) || die "DELTA_KB must be at least 16"
[[ $BASELINE == plain || $BASELINE == workspace ]] || die "BASELINE must be plain or workspace"
[[ $(id -u) -eq 0 ]] || die "needs root: the overlay backend mounts"
((BASH_VERSINFO[0] >= 5)) || die "needs bash 5 (EPOCHREALTIME)"
command -v git >/dev/null || die "needs git"
command -v jq >/dev/null || die "needs jq"

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BYTES=$((SIZE_MB * 1000000))
WSNAME=tinebench
SRC_REF=$WSNAME/source
INITED=
W=

# --- clean-up, also on failure or interrupt ---------------------------------

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	[[ -n $W && -d $W ]] || exit $rc
	if [[ -n $INITED ]]; then
		log "releasing the workspace"
		"$TINE" release "$W/ws" --unmerged >/dev/null || log "tine release failed (exit $?)"
	fi
	# Anything still mounted below $W (a failed release), deepest first.
	findmnt -rn -o TARGET | awk -v p="$W/" 'index($0, p) == 1' | sort -r |
		while read -r m; do umount "$m" || log "could not unmount $m"; done
	if [[ $KEEP == 1 ]]; then
		log "kept $W"
	else
		rm -rf "$W"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- timing ------------------------------------------------------------------

# stamp sets STAMP to the time in microseconds without forking a process.
stamp() { STAMP=${EPOCHREALTIME//[!0-9]/}; }

declare -A SAMPLES # operation -> space-separated durations in microseconds

# timed OP CMD...: runs CMD once and appends its wall time to SAMPLES[OP].
timed() {
	local op=$1 t0
	shift
	stamp; t0=$STAMP
	"$@"
	stamp
	LAST_US=$((STAMP - t0))
	SAMPLES[$op]+="$LAST_US "
}

# stats OP prints "n median min max" in milliseconds, or "0 - - -".
stats() {
	tr ' ' '\n' <<<"${SAMPLES[$1]:-}" | awk 'NF' | sort -n | awk '
		{ v[NR] = $1 / 1000 }
		END {
			if (NR == 0) { print "0 - - -"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%d %.1f %.1f %.1f\n", NR, m, v[1], v[NR]
		}'
}

median() { stats "$1" | awk '{ print $2 }'; }

# --- setup ---------------------------------------------------------------------

[[ -d $SCRATCH ]] || die "no scratch directory $SCRATCH"
avail=$(df --output=avail -B1 "$SCRATCH" | tail -1)
# The tree, its copy, one cp target, git objects; renamed large deltas and
# compacted layers stay on disk as layers of the source's versions.
need=$((BYTES * 5 + DIRTY_MB * 1048576 + LARGE_MB * 1048576 * (3 * REPS + MAX_FORKS)))
((MAX_FORKS == 0)) || need=$((need + BYTES * 2 * (SLOW_REPS + 1)))
((avail > need)) || die "$SCRATCH has $((avail / 1000000)) MB free; this run needs about $((need / 1000000)) MB"
W=$(mktemp -d "$SCRATCH/tine-bench.XXXXXX")
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
export TINE_HOME=$W/home
log "scratch directory $W"

if [[ -z $TINE ]]; then
	command -v go >/dev/null || die "needs go to build tine (or set TINE)"
	log "building tine"
	(cd "$REPO" && go build -o "$W/tine" ./cmd/tine)
	TINE=$W/tine
fi
if [[ -z $GEN ]]; then
	log "building the tree generator"
	(cd "$REPO" && go build -o "$W/gen" ./bench/gen)
	GEN=$W/gen
fi

log "writing $FILES files, $SIZE_MB MB"
stamp; t0=$STAMP
"$GEN" -dir "$W/ws" -files "$FILES" -bytes "$BYTES"
stamp; log "  took $(((STAMP - t0) / 1000)) ms"

log "committing it to git"
git -C "$W/ws" init -q
git -C "$W/ws" add -A
git -C "$W/ws" -c user.name=bench -c user.email=bench@localhost -c commit.gpgsign=false commit -q -m tree
gitbytes=$(du -sb "$W/ws/.git" | cut -f1)
ndirs=$(find "$W/ws" -path "$W/ws/.git" -prune -o -type d -print | wc -l)

# write_delta DIR [ROUND [KB]]: the source's change before a fork: KB
# (default DELTA_KB) KiB in 16 new files (fresh random bytes each round),
# an edit of 8 existing files and the deletion of 2. Rewriting it every
# round keeps the delta the same size whether or not the previous fork
# moved it away.
write_delta() {
	local d=$1 round=${2:-0} i per=$((${3:-$DELTA_KB} / 16))
	mkdir -p "$d/bench-delta"
	for i in $(seq -w 1 16); do
		head -c $((per * 1024)) /dev/urandom >"$d/bench-delta/new$i.bin"
	done
	for i in 1 2 3 4 5 6 7 8; do
		echo "// edited in round $round" >>"$d/src/a000/b0$i/file0001.txt"
	done
	rm -f "$d/src/a001/b00/file0002.txt" "$d/src/a001/b00/file0003.txt"
}

if [[ $BASELINE == plain ]]; then
	log "copying it to $W/plain for the baselines"
	cp -a "$W/ws" "$W/plain"
	write_delta "$W/plain"
	SRC=$W/plain
else
	SRC=$W/ws
fi

log "tine init (overlay)"
stamp; t0=$STAMP
init_json=$("$TINE" init "$W/ws" --backend overlay --name "$WSNAME" --json)
stamp; init_us=$((STAMP - t0))
INITED=1
src_id=$(jq -r '(.run // .Run).id' <<<"$init_json")
init_version=$(jq -r '(.run // .Run).base' <<<"$init_json")
src_upper=$TINE_HOME/workspaces/$(jq -r '(.workspace // .Workspace).id' <<<"$init_json")/runs/$src_id/upper
[[ -d $src_upper ]] || die "cannot find the source's upper directory ($src_upper)"

write_delta "$W/ws" # through the workspace path: the source's view
delta_bytes=$(du -sb "$src_upper" | cut -f1)
delta_entries=$(find "$src_upper" -mindepth 1 | wc -l)

# --- forks ---------------------------------------------------------------------

ROUND=0
DEPTH=1    # layers in the last fork's version
RESETS=0
PRE=()     # a command fork_once runs (untimed) just before the fork
DKB=$DELTA_KB # the delta fork_once writes, KiB

# fork_once OP N [DIRTY [DISCARD_OP]]: rewrite the delta, sync, [write
# DIRTY MiB of unrelated data], then time one `tine fork -n N` into
# SAMPLES[OP] and its discard into SAMPLES[DISCARD_OP] (default discardN).
# Sets FORK_US, DEPTH and FORK_JSON.
fork_once() {
	local op=$1 n=$2 dirty=${3:-0} dop=${4:-discard$2}
	ROUND=$((ROUND + 1))
	write_delta "$W/ws" "$ROUND" "$DKB"
	sync
	if ((${#PRE[@]} > 0)); then
		"${PRE[@]}" >/dev/null
	fi
	if ((dirty > 0)); then
		head -c $((dirty * 1048576)) /dev/zero >"$W/unrelated.bin"
	fi
	timed "$op" "$TINE" fork "$SRC_REF" -n "$n" --json >"$W/fork.json"
	FORK_US=$LAST_US
	FORK_JSON=$(<"$W/fork.json")
	DEPTH=$(jq '.version.layers | length' <<<"$FORK_JSON")
	timed "$dop" "$TINE" discard "$(jq -r .group.id <<<"$FORK_JSON")" --unmerged >/dev/null
	if ((dirty > 0)); then
		rm -f "$W/unrelated.bin"
		sync
	fi
}

# reset_stack rolls the source back to its init version when a fork left
# its stack RESET_DEPTH deep or more (a fork that seals by renaming adds a
# layer to the source's own stack), untimed.
reset_stack() {
	if ((DEPTH >= ${1:-$RESET_DEPTH})); then
		"$TINE" rollback "$SRC_REF" --to "$init_version" >/dev/null
		RESETS=$((RESETS + 1))
		DEPTH=1
	fi
}

# fork_reps N: REPS forks of N copies.
fork_reps() {
	local n=$1 i
	log "tine fork -n $n, $REPS times"
	for ((i = 0; i < REPS; i++)); do
		reset_stack
		fork_once "fork$n" "$n"
	done
}

log "warming the page cache and checking a fork"
sync
tar -cf - -C "$W/ws" . | cat >/dev/null
[[ $SRC == "$W/ws" ]] || tar -cf - -C "$SRC" . | cat >/dev/null
fork_once first 1 0 discard_other
# The fork is discarded; check a second one before discarding it.
ROUND=$((ROUND + 1))
write_delta "$W/ws" "$ROUND"
check_json=$("$TINE" fork "$SRC_REF" --json)
view=$("$TINE" path "$(jq -r '.forks[0].id' <<<"$check_json")")
cmp -s "$view/bench-delta/new01.bin" "$W/ws/bench-delta/new01.bin" || die "the fork does not see the source's delta"
[[ ! -e $view/src/a001/b00/file0002.txt ]] || die "the fork sees a file the source deleted"
"$TINE" discard "$(jq -r .group.id <<<"$check_json")" --unmerged >/dev/null
DEPTH=$(jq '.version.layers | length' <<<"$check_json")

log "tine ls, $REPS times (CLI start-up floor)"
for ((i = 0; i < REPS; i++)); do timed ls "$TINE" ls >/dev/null; done
log "tine diff source, $REPS times"
for ((i = 0; i < REPS; i++)); do timed diff "$TINE" diff "$SRC_REF" >/dev/null; done

fork_reps 1

hf=
if [[ $HYPERFINE == 1 || ($HYPERFINE == auto && -n $(command -v hyperfine)) ]]; then
	command -v hyperfine >/dev/null || die "HYPERFINE=1 but hyperfine is not installed"
	log "hyperfine cross-check of tine fork, $REPS runs"
	reset_stack $((RESET_DEPTH - REPS - 1))
	# Before each run (the timed command has no shell), discard the last
	# run's fork, rewrite the delta and sync.
	# shellcheck disable=SC2016 # $g and $(...) belong to the generated script
	{
		declare -f write_delta
		printf 'DELTA_KB=%q\n' "$DELTA_KB"
		printf 'for g in $(%q ls --json %q | jq -r %q | sort -u); do\n' \
			"$TINE" "$WSNAME" '.[] | select(.role == "fork") | .group'
		printf '\t%q discard "$g" --unmerged >/dev/null\ndone\n' "$TINE"
		printf 'write_delta %q hyperfine\nsync\n' "$W/ws"
	} >"$W/hf-prepare.sh"
	hyperfine -N --style none --runs "$REPS" --warmup 1 --prepare "bash $W/hf-prepare.sh" \
		--export-json "$W/hf.json" "$TINE fork $SRC_REF" >&2
	bash "$W/hf-prepare.sh"
	hf=$(jq -r '.results[0] | "\(.times | length) \(.median * 1000) \(.min * 1000) \(.max * 1000)"' "$W/hf.json" |
		awk '{ printf "%d %.1f %.1f %.1f\n", $1, $2, $3, $4 }')
	DEPTH=$RESET_DEPTH # unknown: reset before the next fork
fi

fork_reps 4
fork_reps 16

# extra_rows SUFFIX: the git-status and dirty-data rows with the delta DKB.
extra_rows() {
	local i
	log "tine fork right after git status in the source ($DKB KiB delta), $REPS times"
	PRE=(git -C "$W/ws" status --porcelain)
	for ((i = 0; i < REPS; i++)); do
		reset_stack
		fork_once "scanned$1" 1 0 discard_other
	done
	PRE=()
	if ((DIRTY_MB > 0)); then
		log "tine fork with $DIRTY_MB MiB of unrelated dirty data ($DKB KiB delta), $REPS times"
		for ((i = 0; i < REPS; i++)); do
			reset_stack
			fork_once "dirty$1" 1 "$DIRTY_MB" discard_other
		done
	fi
}
extra_rows ""
if ((LARGE_MB > 0)); then
	DKB=$((LARGE_MB * 1024))
	log "tine fork with a $LARGE_MB MiB delta, $REPS times"
	for ((i = 0; i < REPS; i++)); do
		reset_stack
		fork_once large 1 0 discard_other
	done
	extra_rows _large
fi

# Deep stack: fork one source up to MAX_FORKS times without resetting;
# forks whose version is a single layer after the first were compacted.
deep_note="not measured (MAX_FORKS=0)"
if ((MAX_FORKS > 0)); then
	log "forking one source up to $MAX_FORKS times with a $((DKB / 1024)) MiB delta (stack depth)"
	reset_stack 2
	deep_max=0 ndeep=0
	for ((i = 1; i <= MAX_FORKS && ndeep < SLOW_REPS; i++)); do
		fork_once chain 1 0 discard_other
		if ((DEPTH > deep_max)); then deep_max=$DEPTH; fi
		if ((DEPTH == 1 && i > 1)); then
			ndeep=$((ndeep + 1))
			SAMPLES[deep]+="$FORK_US "
		fi
	done
	deep_note="$((i - 1)) successive forks of one source, each after a $((DKB / 1024)) MiB delta; deepest fork version: $deep_max layers; forks that compacted the whole tree: $ndeep"
	DEPTH=$RESET_DEPTH
fi

copy_reps() { # copy_reps OP CMD...: SLOW_REPS runs of CMD TARGET, each into a fresh directory
	local op=$1 i t
	shift
	log "$op, $SLOW_REPS times"
	mkdir -p "$W/t"
	for ((i = 0; i < SLOW_REPS; i++)); do
		t=$W/t/$op-$i
		sync
		timed "$op" "$@" "$t"
		if [[ $op == worktree ]]; then
			git -C "$SRC" worktree remove --force "$t"
		else
			rm -rf "$t"
		fi
	done
	git -C "$SRC" worktree prune
	sync
}
copy_reps cp cp -a "$SRC"
copy_reps reflink cp -a --reflink=auto "$SRC"
copy_reps worktree git -C "$SRC" worktree add -q --detach

sealed=$("$TINE" log "$SRC_REF" --json | jq -r '[.[] | select(.kind == "forked") | .detail.sealed_by // "copy (no sealed_by field)"] | group_by(.) | map("\(length) by \(.[0])") | join(", ")')

log "tine release --unmerged"
stamp; t0=$STAMP
"$TINE" release "$W/ws" --unmerged >/dev/null
stamp; release_us=$((STAMP - t0))
INITED=

# --- report ------------------------------------------------------------------------

fstype=$(findmnt -n -o FSTYPE -T "$W")
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
cmdline="sudo bench/fork.sh -f $FILES -s $SIZE_MB -d $SCRATCH -r $REPS -c $SLOW_REPS -D $DELTA_KB -L $LARGE_MB -y $DIRTY_MB -m $MAX_FORKS -b $BASELINE"

row() { # row LABEL OP COPIES
	local n med min max per
	read -r n med min max <<<"$(stats "$2")"
	((n > 0)) || return 0
	per=$(awk -v m="$med" -v c="$3" 'BEGIN { printf "%.1f", m / c }')
	printf '| %s | %d | %s | %s | %s | %s |\n' "$1" "$n" "$med" "$min" "$max" "$per"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", a / b }'; }
yesno() { awk "BEGIN { print ($1) ? \"**yes**\" : \"**no**\" }"; }

m1=$(median fork1) m16=$(median fork16) mcp=$(median cp) mrl=$(median reflink) mwt=$(median worktree)
mincp=$(stats cp | awk '{ print $3 }')
src_desc="an unmanaged copy of the same tree (with the same delta)"
[[ $BASELINE == workspace ]] && src_desc="the workspace path itself (read through the source's overlay mount)"

cat <<EOF
Command: \`$cmdline\`

Tree: $FILES files, $BYTES bytes of file data in $ndirs directories, plus a $gitbytes-byte \`.git\`;
$fstype at \`$W\`. Parent delta before each fork of the main rows: $delta_bytes bytes in $delta_entries entries of the source's upper directory.
cp -a and git worktree copy $src_desc, onto the same filesystem.
Page cache warm (the tree was read once before timing; \`sync\` before each repetition; no cache drop).
Times are wall-clock milliseconds of the whole command, including process start-up.
Load average (1, 5, 15 min) $load_start at the start, $load_end at the end; $(nproc) CPUs.
Run once, not in the stats: \`tine init\` took $((init_us / 1000)) ms, the first fork after init $(median first) ms,
and \`tine release --force\` at the end (copies the source's files back out) $((release_us / 1000)) ms.
Forks of the source: $sealed. Stack resets (untimed rollbacks to the init version): $RESETS.
Deep stack: $deep_note.

| operation | runs | median ms | min ms | max ms | median ms per copy |
|---|---:|---:|---:|---:|---:|
$(row "\`tine fork\` (1 fork)" fork1 1)
$(row "\`tine fork -n 4\`" fork4 4)
$(row "\`tine fork -n 16\`" fork16 16)
$(row "\`tine fork\` right after \`git status\` in the source" scanned 1)
$(row "\`tine fork\` with $DIRTY_MB MiB of unrelated dirty data on the filesystem" dirty 1)
$(row "\`tine fork\`, $LARGE_MB MiB delta" large 1)
$(row "\`tine fork\`, $LARGE_MB MiB delta, right after \`git status\`" scanned_large 1)
$(row "\`tine fork\`, $LARGE_MB MiB delta, $DIRTY_MB MiB of unrelated dirty data" dirty_large 1)
$(row "\`tine fork\`, $LARGE_MB MiB delta, past the stack-depth limit (compacts the tree)" deep 1)
$(row "\`cp -a\`" cp 1)
$(row "\`cp -a --reflink=auto\`" reflink 1)
$(row "\`git worktree add --detach\`" worktree 1)
$(row "\`tine discard GROUP --force\` (1 fork)" discard1 1)
$(row "\`tine discard GROUP --force\` (4 forks)" discard4 4)
$(row "\`tine discard GROUP --force\` (16 forks)" discard16 16)
$(row "\`tine diff source\` (the delta)" diff 1)
$(row "\`tine ls\` (CLI start-up floor)" ls 1)
EOF
if [[ -n $hf ]]; then
	read -r n med min max <<<"$hf"
	# shellcheck disable=SC2016 # backquotes are Markdown
	printf '| `tine fork` (1 fork), hyperfine | %d | %s | %s | %s | %s |\n' "$n" "$med" "$min" "$max" "$med"
fi
cat <<EOF

| ratio (medians) | value |
|---|---:|
| \`cp -a\` / \`tine fork\` | $(ratio "$mcp" "$m1")x |
| fastest \`cp -a\` / median \`tine fork\` | $(ratio "$mincp" "$m1")x |
| \`cp -a --reflink=auto\` / \`tine fork\` | $(ratio "$mrl" "$m1")x |
| \`git worktree add\` / \`tine fork\` | $(ratio "$mwt" "$m1")x |
| 16 x \`cp -a\` (extrapolated) / \`tine fork -n 16\` | $(ratio "$(awk -v m="$mcp" 'BEGIN { print 16 * m }')" "$m16")x |
| 16 x \`git worktree add\` (extrapolated) / \`tine fork -n 16\` | $(ratio "$(awk -v m="$mwt" 'BEGIN { print 16 * m }')" "$m16")x |

| target | measured | met |
|---|---:|:---:|
| single fork, $DELTA_KB KiB delta: median < 20 ms | $m1 ms | $(yesno "$m1 < 20") |
| single fork at least 100x faster than \`cp -a\` (medians) | $(ratio "$mcp" "$m1")x | $(yesno "$mcp / $m1 >= 100") |
| 16-way fork: median < 300 ms | $m16 ms | $(yesno "$m16 < 300") |
EOF
