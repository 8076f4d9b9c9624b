#!/usr/bin/env bash
# merge-new.sh measures, in one run, `tine merge` of a fork that added
# FILES new files (bench/gen's tree of about 2 KB a file, under new/)
# against `cp -a` of the same files from the fork's view into a fresh
# directory, on the same filesystem, page cache warm, without sync and
# with one (tine merge syncs the filesystem once before it commits)
# (issue 24: a merge of a fork that added 40k files took 5.1-10.7 s and
# printed 40,042 lines). Each round makes a fresh workspace (a small tree,
# overlay backend, filesystem scope), forks it, writes the files through
# the fork's view, times `cp -a`, a dry run (the plan) and the merge (plan
# and apply, the whole command), checks that the source then has the
# fork's files, and counts the lines the merge printed. Prints a Markdown
# table on stdout, progress on stderr.
#
# Needs root (overlay mounts) and go (to build tine and bench/gen) unless
# TINE and GEN name prebuilt binaries.
#
#   sudo bench/merge-new.sh                  # 40,000 files, 3 rounds
#   sudo FILES=5000 ROUNDS=1 bench/merge-new.sh
set -euo pipefail

FILES=${FILES:-40000}
ROUNDS=${ROUNDS:-3}
SCRATCH=${SCRATCH:-/var/tmp}
TINE=${TINE:-}
GEN=${GEN:-}
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
export TINE_HOME=$W/home TINE_NO_DAEMON=1
cleanup() {
	local ws
	for ws in "$W"/ws-*; do
		[[ -d $ws ]] && "$TINE" release --unmerged "$ws" >/dev/null 2>&1 || true
	done
	unmount_under "$W"
	rm -rf "$W"
}
trap cleanup EXIT
build_tine

if [[ -z $GEN ]]; then
	(cd "$REPO" && go build -o "$W/gen" ./bench/gen)
	GEN=$W/gen
fi

ms() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b - a) * 1000}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
declare -A samples
# timed KEY CMD...: run CMD (its output to $W/out), add its wall time to KEY.
timed() {
	local key=$1 t0 t1
	shift
	t0=$EPOCHREALTIME
	"$@" >"$W/out"
	t1=$EPOCHREALTIME
	samples[$key]="${samples[$key]:-} $(ms "$t0" "$t1")"
}
cp_sync() { cp -a "$1" "$2" && sync -f "$2"; }
sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha1sum); }

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
lines= ratios=
for ((r = 1; r <= ROUNDS; r++)); do
	ws=$W/ws-$r
	"$GEN" -dir "$ws" -files 200 -bytes 400000 >/dev/null
	"$TINE" init --backend overlay "$ws" >/dev/null
	"$TINE" fork "ws-$r/source" --name add >/dev/null
	view=$("$TINE" path "ws-$r/add")
	"$GEN" -dir "$view/new" -files "$FILES" -bytes $((FILES * 2048)) >/dev/null
	sync
	timed cp cp -a "$view/new" "$W/cp-$r"
	rm -rf "$W/cp-$r"
	sync
	timed cpsync cp_sync "$view/new" "$W/cp-$r"
	timed plan "$TINE" merge "ws-$r/add" --filesystem --dry-run
	timed merge "$TINE" merge "ws-$r/add" --filesystem
	lines=$(wc -l <"$W/out")
	ratios="$ratios $(awk -v a="$(echo "${samples[merge]}" | awk '{print $NF}')" -v b="$(echo "${samples[cp]}" | awk '{print $NF}')" 'BEGIN {printf "%.2f", a / b}')"
	cmp -s <(sums "$view/new") <(sums "$ws/new") || die "round $r: the source's new/ differs from the fork's"
	log "round $r: cp -a$(echo "${samples[cp]}" | awk '{print " " $NF}') ms, merge$(echo "${samples[merge]}" | awk '{print " " $NF}') ms, $lines lines printed"
	rm -rf "$W/cp-$r"
	"$TINE" release --unmerged "$ws" >/dev/null
	rm -rf "$ws"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

med() { # shellcheck disable=SC2086 # the samples are words
	median ${samples[$1]}
}
c=$(med cp)
echo "Command: \`sudo FILES=$FILES ROUNDS=$ROUNDS bench/merge-new.sh\`; tine built from \`$built\`."
echo
echo "$(nproc) CPUs; load average $load_start at the start, $load_end at the end. Medians of $ROUNDS rounds, wall-clock ms of the whole command; the merge printed $lines lines."
echo
echo "| what | median ms | x \`cp -a\` | all rounds (ms) |"
echo "|---|---:|---:|---|"
for what in cp cpsync plan merge; do
	case $what in
	cp) label="\`cp -a\` of the new files" ;;
	cpsync) label="\`cp -a\` + \`sync -f\`" ;;
	plan) label="\`tine merge --dry-run\` (plan)" ;;
	merge) label="\`tine merge\` (plan + apply)" ;;
	esac
	m=$(med "$what")
	echo "| $label | $m | $(awk -v a="$m" -v b="$c" 'BEGIN {printf "%.2f", a / b}') |${samples[$what]} |"
done
echo
echo "tine merge / cp -a, round by round (the same round's files and load):$ratios"
