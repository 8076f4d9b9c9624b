#!/usr/bin/env bash
# merge.sh measures, in one run, `tine merge` of a fork that changed 1,000
# and 10,000 files (about 7 KiB each) in each scope (--git, --filesystem,
# --paths naming the changed files' parent directories), through the CLI on
# an overlay workspace, against the alternatives on the same files in the
# same rounds: `cp -a` of the changed files into a fresh directory (with and
# without `sync -f`), and `git apply` of the equivalent patch (`git diff
# --binary` in the fork) in a clean copy of the repository (with and
# without `sync -f`).
#
# Each round, for each size and scope, it copies a fresh git repository
# (SIZE files of FILE_KB KiB in directories of PER_DIR files, one commit),
# `tine init`s it, forks it (`tine fork WS/source --name bench`), appends a
# line to every file through the fork's view (`tine path WS/bench`), takes
# the patch, then times PLAN_REPS dry-runs (`tine merge --dry-run`, the
# plan), the baselines, and one real merge (plan and apply), and checks
# that the source's files then equal the fork's (and the git apply copy's
# too). `sync` runs (untimed) before every timed command; the page cache is
# warm. Times are wall-clock milliseconds of the whole command, process
# start-up included. Release of a large tree is bench/release.sh's.
#
# Needs root (overlay mounts), git, and go (to build tine) unless TINE
# names a prebuilt binary. Prints Markdown tables on stdout, progress on
# stderr; exits non-zero if a merge or a check fails.
#
#   sudo bench/merge.sh                            # 1,000 and 10,000 files, 3 rounds
#   sudo SIZES=1000 ROUNDS=1 bench/merge.sh        # a quick run
set -euo pipefail

SIZES=${SIZES:-"1000 10000"}            # changed files per fork
SCOPES=${SCOPES:-"git filesystem paths"} # merge scopes to time
ROUNDS=${ROUNDS:-3}                     # fresh workspaces per size and scope
PLAN_REPS=${PLAN_REPS:-3}               # dry-runs per workspace
FILE_KB=${FILE_KB:-7}                   # size of each file, KiB
PER_DIR=${PER_DIR:-100}                 # files per directory
SCRATCH=${SCRATCH:-/var/tmp}            # parent of the scratch directory
TINE=${TINE:-}                          # prebuilt tine; default: build this checkout
REPO=$(cd "$(dirname "$0")/.." && pwd)

log() { printf '%s\n' "merge.sh: $*" >&2; }
die() {
	log "$*"
	exit 1
}
[[ $(id -u) == 0 ]] || die "needs root (overlay mounts)"
command -v git >/dev/null || die "needs git"

tmp=$(mktemp -d "$SCRATCH/tine-merge-bench.XXXXXX")
export TINE_HOME=$tmp/home TINE_NO_DAEMON=1
workspaces=()
cleanup() {
	local ws m
	for ws in "${workspaces[@]}"; do
		if [[ -d $ws ]]; then
			"$TINE" release --force "$ws" >/dev/null 2>&1 || true
		fi
	done
	# whatever a failed release left mounted under the scratch directory
	{ findmnt -rn -o TARGET | grep -F "$tmp" || true; } | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

if [[ -z $TINE ]]; then
	log "building tine"
	(cd "$REPO" && go build -o "$tmp/tine" ./cmd/tine)
	TINE=$tmp/tine
fi
built=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo unknown)

# ms START END: milliseconds between two EPOCHREALTIME readings.
ms() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b - a) * 1000}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

declare -A samples # "size/what" -> space-separated milliseconds
add() { samples[$1]="${samples[$1]:-} $2"; }
# timed KEY CMD...: run CMD once after a sync, add its wall time to KEY.
timed() {
	local key=$1 t0 t1
	shift
	sync
	t0=$EPOCHREALTIME
	"$@"
	t1=$EPOCHREALTIME
	add "$key" "$(ms "$t0" "$t1")"
}

dirs_of() { # dirs_of SIZE: the data directories of a tree of SIZE files
	local d
	for ((d = 0; d < $1 / PER_DIR; d++)); do printf 'd%03d\n' "$d"; done
}

# sums DIR SIZE: a digest of every data file of DIR (path and content).
sums() {
	local dirs
	mapfile -t dirs < <(dirs_of "$2")
	(cd "$1" && find "${dirs[@]}" -type f -print0 | sort -z | xargs -0 sha1sum)
}

# make_orig SIZE: a git repository of SIZE files of about FILE_KB KiB.
make_orig() {
	local size=$1 o=$tmp/orig-$1 body line d f
	line=$(printf '%071d' 0 | tr 0 x)
	body=$(for ((f = 0; f < FILE_KB * 1024 / 72; f++)); do printf '%05d %s\n' "$f" "${line:6}"; done)
	mkdir -p "$o"
	for d in $(dirs_of "$size"); do
		mkdir "$o/$d"
		for ((f = 0; f < PER_DIR; f++)); do
			printf '%s/f%03d.txt\n%s\n' "$d" "$f" "$body" >"$o/$d/f$(printf %03d "$f").txt"
		done
	done
	git -C "$o" init -q
	git -C "$o" add .
	# no background auto gc racing the copies of the repository: pack it now
	git -C "$o" -c gc.auto=0 -c user.name=bench -c user.email=bench@localhost commit -qm "base: $size files"
	git -C "$o" gc -q
}

# edit VIEW SIZE ROUND: append a line to every data file under VIEW.
edit() {
	local d f
	for d in $(dirs_of "$2"); do
		for f in "$1/$d"/*.txt; do
			echo "changed in the run, round $3" >>"$f"
		done
	done
}

merge_flags() { # merge_flags SCOPE SIZE: the scope's flags
	case $1 in
	git) echo --git ;;
	filesystem) echo --filesystem ;;
	paths) dirs_of "$2" | sed 's/^/--paths /' ;;
	*) die "unknown scope $1" ;;
	esac
}

# merge_ok SIZE SCOPE REF FLAGS...: tine merge, failing the run on any error.
merge_ok() {
	local size=$1 scope=$2 ref=$3 rc=0
	shift 3
	"$TINE" merge "$ref" "$@" >"$tmp/merge.out" 2>&1 || rc=$?
	if ((rc != 0)); then
		tail -5 "$tmp/merge.out" >&2
		die "$size files, $scope: tine merge $ref ${*: -1} exited $rc"
	fi
}

cp_sync() { cp -a "$@" && sync -f "${*: -1}"; }
gapply() { git -C "$1" apply "$2"; }
gapply_sync() { git -C "$1" apply "$2" && sync -f "$1"; }

log "scratch $tmp; tine built from $built"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for size in $SIZES; do
	((size % PER_DIR == 0)) || die "SIZES must be multiples of PER_DIR ($PER_DIR)"
	log "$size files: writing the repository"
	make_orig "$size"
	mapfile -t dirs < <(dirs_of "$size")
	for ((r = 1; r <= ROUNDS; r++)); do
		for scope in $SCOPES; do
			name=w$size-$scope-$r ws=$tmp/w$size-$scope-$r
			cp -a "$tmp/orig-$size" "$ws"
			workspaces+=("$ws")
			"$TINE" init "$ws" >/dev/null
			"$TINE" fork "$name/source" --name bench >/dev/null
			view=$("$TINE" path "$name/bench")
			edit "$view" "$size" "$r"
			git --no-optional-locks -C "$view" diff --binary >"$tmp/patch"
			sums "$view" "$size" >"$tmp/want"
			mapfile -t flags < <(merge_flags "$scope" "$size" | tr ' ' '\n')

			for ((i = 0; i < PLAN_REPS; i++)); do
				timed "$size/plan/$scope" merge_ok "$size" "$scope" "$name/bench" "${flags[@]}" --dry-run
			done
			grep -q 'would merge cleanly' "$tmp/merge.out" || die "$size files, $scope: unexpected dry-run: $(tail -1 "$tmp/merge.out")"
			grep -q "^paths: $size take\$" "$tmp/merge.out" || die "$size files, $scope: the plan does not take $size paths"

			# baselines, on the same files
			mkdir "$tmp/cp"
			timed "$size/cp" cp -a "${dirs[@]/#/$view/}" "$tmp/cp/"
			rm -rf "$tmp/cp" && mkdir "$tmp/cp"
			timed "$size/cpsync" cp_sync "${dirs[@]/#/$view/}" "$tmp/cp/"
			cmp -s "$tmp/want" <(sums "$tmp/cp" "$size") || die "cp -a copied something else"
			rm -rf "$tmp/cp"
			cp -a "$tmp/orig-$size" "$tmp/g"
			timed "$size/gitapply" gapply "$tmp/g" "$tmp/patch"
			cmp -s "$tmp/want" <(sums "$tmp/g" "$size") || die "git apply gave other files than the fork's"
			rm -rf "$tmp/g" && cp -a "$tmp/orig-$size" "$tmp/g"
			timed "$size/gitapplysync" gapply_sync "$tmp/g" "$tmp/patch"
			rm -rf "$tmp/g"

			timed "$size/merge/$scope" merge_ok "$size" "$scope" "$name/bench" "${flags[@]}"
			grep -q "merged $size path(s)" "$tmp/merge.out" || die "$size files, $scope: unexpected merge: $(tail -1 "$tmp/merge.out")"
			cmp -s "$tmp/want" <(sums "$ws" "$size") || die "$size files, $scope: the source's files differ from the fork's after the merge"
			log "$size files, $scope, round $r: plan${samples[$size/plan/$scope]} ms; merge $(echo "${samples[$size/merge/$scope]}" | awk '{print $NF}') ms; cp -a $(echo "${samples[$size/cp]}" | awk '{print $NF}') ms"

			"$TINE" release --force "$ws" >/dev/null
			rm -rf "$ws"
		done
	done
	rm -rf "$tmp/orig-$size"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

med() { # med KEY: the median of KEY's samples
	# shellcheck disable=SC2086 # the samples are words
	median ${samples[$1]}
}
count() { wc -w <<<"${samples[$1]}"; }

echo "Command: \`sudo SIZES=\"$SIZES\" ROUNDS=$ROUNDS PLAN_REPS=$PLAN_REPS FILE_KB=$FILE_KB bench/merge.sh\`; tine built from \`$built\`."
echo
echo "$(nproc) CPUs; load average $load_start at the start, $load_end at the end. Medians, wall-clock ms of the whole command."
echo
echo "| files | what | runs | median ms | all runs (ms) |"
echo "|---:|---|---:|---:|---|"
for size in $SIZES; do
	for scope in $SCOPES; do
		echo "| $size | \`tine merge --$scope --dry-run\` (plan) | $(count "$size/plan/$scope") | $(med "$size/plan/$scope") |${samples[$size/plan/$scope]} |"
		echo "| $size | \`tine merge --$scope\` (plan + apply) | $(count "$size/merge/$scope") | $(med "$size/merge/$scope") |${samples[$size/merge/$scope]} |"
	done
	echo "| $size | \`cp -a\` of the changed files | $(count "$size/cp") | $(med "$size/cp") |${samples[$size/cp]} |"
	echo "| $size | \`cp -a\` + \`sync -f\` | $(count "$size/cpsync") | $(med "$size/cpsync") |${samples[$size/cpsync]} |"
	echo "| $size | \`git apply\` of the patch | $(count "$size/gitapply") | $(med "$size/gitapply") |${samples[$size/gitapply]} |"
	echo "| $size | \`git apply\` + \`sync -f\` | $(count "$size/gitapplysync") | $(med "$size/gitapplysync") |${samples[$size/gitapplysync]} |"
done
echo
echo "| files | scope | plan ms | merge ms | merge / cp -a | merge / (cp -a + sync) | merge / git apply | merge / (git apply + sync) |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|"
for size in $SIZES; do
	for scope in $SCOPES; do
		m=$(med "$size/merge/$scope")
		echo "| $size | $scope | $(med "$size/plan/$scope") | $m | $(ratio "$m" "$(med "$size/cp")") | $(ratio "$m" "$(med "$size/cpsync")") | $(ratio "$m" "$(med "$size/gitapply")") | $(ratio "$m" "$(med "$size/gitapplysync")") |"
	done
done
echo
echo "| target (issue 12) | scope | measured | met |"
echo "|---|---|---:|:---:|"
for size in $SIZES; do
	[[ $size == 10000 ]] || continue
	for scope in $SCOPES; do
		m=$(med "$size/merge/$scope") c=$(med "$size/cp") p=$(med "$size/plan/$scope")
		met=$(awk -v a="$m" -v b="$c" 'BEGIN {print (a <= 3 * b) ? "yes" : "**no**"}')
		echo "| merge of 10,000 changed files within 3x \`cp -a\` | $scope | $(ratio "$m" "$c")x | $met |"
		met=$(awk -v a="$p" 'BEGIN {print (a < 300) ? "yes" : "**no**"}')
		echo "| plan of 10,000 paths under 300 ms | $scope | $p ms | $met |"
	done
done
