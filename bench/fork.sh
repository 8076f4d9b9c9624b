#!/usr/bin/env bash
# fork.sh measures, in one run on one tree, how long `tine fork` (overlay
# backend) takes to give you a private copy of a workspace, against
# `cp -a`, `cp -a --reflink=auto` and `git worktree add`, and how 1, 4 and
# 16 forks at once compare. It prints Markdown tables on stdout (progress
# goes to stderr) and removes everything it made, even on failure.
#
# Needs root (overlay mounts), bash 5, git, and go (to build tine and the
# tree generator) unless TINE and GEN name prebuilt binaries. Uses
# hyperfine, when installed, for one cross-check row.
#
#   sudo bench/fork.sh                      # 50,000 files, 500 MB
#   sudo bench/fork.sh -f 5000 -s 50 -r 5   # a quick run
set -euo pipefail

FILES=${FILES:-50000}           # files in the tree
SIZE_MB=${SIZE_MB:-500}         # their total size, in MB (10^6 bytes)
SCRATCH=${SCRATCH:-/var/tmp}    # parent of the scratch directory
REPS=${REPS:-9}                 # repetitions of each tine operation
SLOW_REPS=${SLOW_REPS:-3}       # repetitions of cp -a, cp --reflink, git worktree
DELTA_KB=${DELTA_KB:-1024}      # new data written into the source before forking, KiB
BASELINE=${BASELINE:-plain}     # what cp/worktree copy: plain (an unmanaged copy) or workspace
HYPERFINE=${HYPERFINE:-auto}    # auto, 1 or 0: cross-check the single fork with hyperfine
KEEP=${KEEP:-0}                 # 1: keep the scratch directory (still releases the workspace)
TINE=${TINE:-}                  # prebuilt tine binary; default: build this checkout
GEN=${GEN:-}                    # prebuilt bench/gen binary; default: build it

usage() {
	cat <<EOF
usage: $0 [-f FILES] [-s SIZE_MB] [-d SCRATCH] [-r REPS] [-c SLOW_REPS]
          [-D DELTA_KB] [-b plain|workspace] [-H auto|1|0] [-k]
Each option also reads the environment variable named after it (defaults):
  -f FILES=$FILES  -s SIZE_MB=$SIZE_MB  -d SCRATCH=$SCRATCH  -r REPS=$REPS
  -c SLOW_REPS=$SLOW_REPS  -D DELTA_KB=$DELTA_KB  -b BASELINE=$BASELINE
  -H HYPERFINE=$HYPERFINE  -k KEEP=1  TINE=path/to/tine  GEN=path/to/gen
EOF
}

while getopts "f:s:d:r:c:D:b:H:kh" opt; do
	case $opt in
	f) FILES=$OPTARG ;;
	s) SIZE_MB=$OPTARG ;;
	d) SCRATCH=$OPTARG ;;
	r) REPS=$OPTARG ;;
	c) SLOW_REPS=$OPTARG ;;
	D) DELTA_KB=$OPTARG ;;
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
[[ $BASELINE == plain || $BASELINE == workspace ]] || die "BASELINE must be plain or workspace"
[[ $(id -u) -eq 0 ]] || die "needs root: the overlay backend mounts"
((BASH_VERSINFO[0] >= 5)) || die "needs bash 5 (EPOCHREALTIME)"
command -v git >/dev/null || die "needs git"

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BYTES=$((SIZE_MB * 1000000))
WSNAME=tinebench
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
		"$TINE" release "$W/ws" --force >/dev/null || log "tine release failed (exit $?)"
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
	SAMPLES[$op]+="$((STAMP - t0)) "
}

# stats OP prints "n median min max" in milliseconds.
stats() {
	tr ' ' '\n' <<<"${SAMPLES[$1]}" | awk 'NF' | sort -n | awk '
		{ v[NR] = $1 / 1000 }
		END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%d %.1f %.1f %.1f\n", NR, m, v[1], v[NR]
		}'
}

median() { stats "$1" | awk '{ print $2 }'; }

# --- setup ---------------------------------------------------------------------

[[ -d $SCRATCH ]] || die "no scratch directory $SCRATCH"
avail=$(df --output=avail -B1 "$SCRATCH" | tail -1)
need=$((BYTES * 5))
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

if [[ $BASELINE == plain ]]; then
	log "copying it to $W/plain for the baselines"
	cp -a "$W/ws" "$W/plain"
	SRC=$W/plain
else
	SRC=$W/ws
fi

log "tine init (overlay)"
stamp; t0=$STAMP
init_json=$("$TINE" init "$W/ws" --backend overlay --name "$WSNAME" --json)
stamp; init_us=$((STAMP - t0))
INITED=1
src_id=$(tr -d ' \n' <<<"$init_json" | grep -o '"Run":{"id":"[^"]*"' | cut -d'"' -f6)
src_upper=$(echo "$TINE_HOME"/workspaces/*/runs/"$src_id"/upper)
[[ -d $src_upper ]] || die "cannot find the source's upper directory ($src_upper)"

# write_delta DIR: the parent's change since init, DELTA_KB KiB of new
# files plus small edits and deletions of existing ones.
write_delta() {
	local d=$1 i per=$((DELTA_KB / 16))
	mkdir -p "$d/bench-delta"
	for i in $(seq -w 1 16); do
		head -c $((per * 1024)) "$W/delta.bin" >"$d/bench-delta/new$i.bin"
	done
	for i in 1 2 3 4 5 6 7 8; do
		echo "// edited $i" >>"$d/src/a000/b0$i/file0001.txt"
	done
	rm -f "$d/src/a001/b00/file0002.txt" "$d/src/a001/b00/file0003.txt"
}
head -c $((DELTA_KB * 1024)) /dev/urandom >"$W/delta.bin"
write_delta "$W/ws" # through the workspace path: the source's view
[[ $BASELINE == plain ]] && write_delta "$W/plain"
delta_bytes=$(du -sb "$src_upper" | cut -f1)
delta_entries=$(find "$src_upper" -mindepth 1 | wc -l)

# checked_fork: the first fork after init, timed on its own into first_us,
# whose files are checked against the source.
checked_fork() {
	local out run view t0
	stamp; t0=$STAMP
	"$TINE" fork "$WSNAME/source" --json >"$W/fork.json"
	stamp; first_us=$((STAMP - t0))
	out=$(<"$W/fork.json")
	run=$(group_or_run "$out" run)
	view=$("$TINE" path "$run")
	cmp -s "$view/bench-delta/new01.bin" "$W/ws/bench-delta/new01.bin" || die "fork $run does not see the delta"
	[[ ! -e $view/src/a001/b00/file0002.txt ]] || die "fork $run sees a file the source deleted"
	"$TINE" discard "$(group_or_run "$out" group)" --force >/dev/null
}

# group_or_run JSON group|run: the group id, or the first fork's id, of tine fork --json.
group_or_run() {
	local flat
	flat=$(tr -d ' \n' <<<"$1")
	if [[ $2 == group ]]; then
		grep -o '"group":{"id":"[^"]*"' <<<"$flat"
	else
		grep -o '"forks":\[{"id":"[^"]*"' <<<"$flat"
	fi | head -1 | cut -d'"' -f6
}

log "warming the page cache and checking a fork"
sync
tar -cf - -C "$W/ws" . | cat >/dev/null
[[ $SRC == "$W/ws" ]] || tar -cf - -C "$SRC" . | cat >/dev/null
checked_fork

# --- measurements ----------------------------------------------------------------

# fork_reps N: REPS forks of N copies, each discarded (timed apart) before the next.
fork_reps() {
	local n=$1 i out
	log "tine fork -n $n, $REPS times"
	for ((i = 0; i < REPS; i++)); do
		sync
		timed "fork$n" "$TINE" fork "$WSNAME/source" -n "$n" --json >"$W/fork.json"
		out=$(<"$W/fork.json")
		timed "discard$n" "$TINE" discard "$(group_or_run "$out" group)" --force >/dev/null
	done
}

# copy_reps OP CMD...: SLOW_REPS runs of CMD with the target appended, each
# into a fresh directory that is removed (untimed) afterwards.
copy_reps() {
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

log "tine ls, $REPS times (CLI start-up floor)"
for ((i = 0; i < REPS; i++)); do timed ls "$TINE" ls >/dev/null; done
log "tine diff source, $REPS times"
for ((i = 0; i < REPS; i++)); do timed diff "$TINE" diff "$WSNAME/source" >/dev/null; done
fork_reps 1
fork_reps 4
fork_reps 16
copy_reps cp cp -a "$SRC"
copy_reps reflink cp -a --reflink=auto "$SRC"
copy_reps worktree git -C "$SRC" worktree add -q --detach

hf=
if [[ $HYPERFINE == 1 || ($HYPERFINE == auto && -n $(command -v hyperfine)) ]]; then
	command -v hyperfine >/dev/null || die "HYPERFINE=1 but hyperfine is not installed"
	log "hyperfine cross-check of tine fork, $REPS runs"
	command -v jq >/dev/null || die "the hyperfine cross-check needs jq (or run with -H 0)"
	# Before each run (no shell in the timed command), discard the last run's fork.
	cat >"$W/hf-prepare.sh" <<-EOF
		for g in \$("$TINE" ls --json $WSNAME | jq -r '.[] | select(.role == "fork") | .group' | sort -u); do
			"$TINE" discard "\$g" --force >/dev/null
		done
		sync
	EOF
	hyperfine -N --style none --runs "$REPS" --warmup 1 --prepare "bash $W/hf-prepare.sh" \
		--export-json "$W/hf.json" "$TINE fork $WSNAME/source" >&2
	bash "$W/hf-prepare.sh"
	hf=$(jq -r '.results[0] | "\(.times | length) \(.median * 1000) \(.min * 1000) \(.max * 1000)"' "$W/hf.json" |
		awk '{ printf "%d %.1f %.1f %.1f\n", $1, $2, $3, $4 }')
fi

# --- report ------------------------------------------------------------------------

fstype=$(findmnt -n -o FSTYPE -T "$W")
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
cmdline="sudo bench/fork.sh -f $FILES -s $SIZE_MB -d $SCRATCH -r $REPS -c $SLOW_REPS -D $DELTA_KB -b $BASELINE"

row() { # row LABEL OP COPIES
	local n med min max per
	read -r n med min max <<<"$(stats "$2")"
	per=$(awk -v m="$med" -v c="$3" 'BEGIN { printf "%.1f", m / c }')
	printf '| %s | %d | %s | %s | %s | %s |\n' "$1" "$n" "$med" "$min" "$max" "$per"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", a / b }'; }
yesno() { awk "BEGIN { print ($1) ? \"**yes**\" : \"**no**\" }"; }

m1=$(median fork1) m16=$(median fork16) mcp=$(median cp) mrl=$(median reflink) mwt=$(median worktree)
src_desc="an unmanaged copy of the same tree ($SRC)"
[[ $BASELINE == workspace ]] && src_desc="the workspace path itself (read through the source's overlay mount)"

cat <<EOF
Command: \`$cmdline\`

Tree: $FILES files, $BYTES bytes of file data in $(find "$W/ws" -path "$W/ws/.git" -prune -o -type d -print | wc -l) directories, plus a $gitbytes-byte \`.git\`;
$fstype at \`$W\`. Parent delta (the source's upper directory before each fork): $delta_bytes bytes in $delta_entries entries.
cp -a and git worktree copy $src_desc, onto the same filesystem.
Page cache warm (the tree was read once before timing; \`sync\` before each repetition; no cache drop).
Times are wall-clock milliseconds of the whole command, including process start-up.
Load average (1, 5, 15 min) $load_start at the start, $load_end at the end; $(nproc) CPUs.
\`tine init\` (untimed setup) took $((init_us / 1000)) ms; the first fork after init (warm-up, not in the stats) took $((first_us / 1000)) ms.

| operation | runs | median ms | min ms | max ms | median ms per copy |
|---|---:|---:|---:|---:|---:|
$(row "\`tine fork\` (1 fork)" fork1 1)
$(row "\`tine fork -n 4\`" fork4 4)
$(row "\`tine fork -n 16\`" fork16 16)
$(row "\`cp -a\`" cp 1)
$(row "\`cp -a --reflink=auto\`" reflink 1)
$(row "\`git worktree add --detach\`" worktree 1)
$(row "\`tine discard GROUP --force\` (1 fork)" discard1 1)
$(row "\`tine discard GROUP --force\` (16 forks)" discard16 16)
$(row "\`tine diff source\` (the delta, since init)" diff 1)
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
| \`cp -a --reflink=auto\` / \`tine fork\` | $(ratio "$mrl" "$m1")x |
| \`git worktree add\` / \`tine fork\` | $(ratio "$mwt" "$m1")x |
| 16 x \`cp -a\` (extrapolated) / \`tine fork -n 16\` | $(ratio "$(awk -v m="$mcp" 'BEGIN { print 16 * m }')" "$m16")x |
| 16 x \`git worktree add\` (extrapolated) / \`tine fork -n 16\` | $(ratio "$(awk -v m="$mwt" 'BEGIN { print 16 * m }')" "$m16")x |

| target | measured | met |
|---|---:|:---:|
| single fork, $DELTA_KB KiB delta: median < 20 ms | $m1 ms | $(yesno "$m1 < 20") |
| single fork at least 100x faster than \`cp -a\` | $(ratio "$mcp" "$m1")x | $(yesno "$mcp / $m1 >= 100") |
| 16-way fork: median < 300 ms | $m16 ms | $(yesno "$m16 < 300") |
EOF
