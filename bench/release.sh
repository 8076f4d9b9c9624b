#!/usr/bin/env bash
# release.sh measures, in one run on one tree, `tine release` (overlay
# backend) of a workspace whose source has a small delta, against `cp -a`
# of the same tree, and checks that the released tree equals the source's
# view (type, mode, content, symlink target of every entry). Each round
# makes a fresh tree, inits it, writes the delta (DELTA_KB in 16 new files,
# an edit of 8 files and the deletion of 2), syncs and drops caches
# (untimed), then times the release; `cp -a` is timed on the same tree,
# with the same cache state. Prints a Markdown table on stdout.
#
# Needs root (overlay mounts) and go (to build tine and bench/gen) unless
# TINE and GEN name prebuilt binaries.
#
#   sudo bench/release.sh                  # 50,000 files, 850 MB, 3 rounds
#   sudo FILES=5000 SIZE_MB=85 bench/release.sh
#
# MODE=history builds issue 24's case instead: a tree of FILES files
# (SIZE_MB), then FORKS forks, each editing EDIT files (appending a line)
# and adding one, merged into the source and left live (a long history:
# the source's stack of layers, every fork's delta and version). It times
# the release of that workspace against `cp -a` of its delta (the paths
# the merges changed, copied with their parents) and, with EDIT=all, a
# whole-tree delta (every file edited in one fork and merged) against
# `cp -a` of the tree. The released tree is checked against the view.
#
#   sudo MODE=history FILES=10000 SIZE_MB=40 FORKS=19 EDIT=200 bench/release.sh
#   sudo MODE=history FILES=10000 SIZE_MB=40 FORKS=1 EDIT=all bench/release.sh
#
# A release returns once the workspace's state is renamed into the trash;
# tine release starts tine gc --trash to delete it. The history mode also
# times, from the release's return, until that deletion is over (a tine gc
# --trash of its own, which waits for the background one), so no round's
# timings share the disk with the previous round's deletion.
set -euo pipefail

FILES=${FILES:-50000}
SIZE_MB=${SIZE_MB:-850}
DELTA_KB=${DELTA_KB:-1024}
ROUNDS=${ROUNDS:-3}
SCRATCH=${SCRATCH:-/var/tmp}
TINE=${TINE:-}
GEN=${GEN:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)

log() { echo "release.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (overlay mounts)"

W=$(mktemp -d "$SCRATCH/tine-release-bench.XXXXXX")
export TINE_HOME=$W/home TINE_NO_DAEMON=1
cleanup() {
	umount -R "$W/ws" 2>/dev/null || true
	[[ -x ${TINE:-} ]] && "$TINE" release --unmerged "$W/ws" >/dev/null 2>&1 || true
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

ms() { date +%s%3N; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# manifest DIR: one line per entry: path, type and mode, content digest or target.
manifest() {
	(cd "$1" && find . -path ./.tine-workspace -prune -o -printf '%p %M %l\n' | sort) >"$2.meta"
	(cd "$1" && find . -type f ! -name .tine-workspace -print0 | sort -z | xargs -0 sha1sum) >"$2.sums"
}

write_delta() {
	local d=$1 i per=$((DELTA_KB / 16))
	mkdir -p "$d/delta"
	for i in $(seq 0 15); do head -c $((per * 1024)) /dev/urandom >"$d/delta/new$i.bin"; done
	find "$d" -path "$d/delta" -prune -o -type f -print | head -10 >"$W/picked" || true
	head -8 "$W/picked" | while read -r f; do echo edited >>"$f"; done
	tail -2 "$W/picked" | while read -r f; do rm -f "$f"; done
}

MODE=${MODE:-delta}
FORKS=${FORKS:-19}
EDIT=${EDIT:-200}

# history_round R: builds the workspace of MODE=history, times cp -a of its
# delta (or, with EDIT=all, of the tree) and its release.
history_round() {
	local r=$1 k f
	rm -rf "$W/ws" "$W/cp" "$W/changed"
	log "round $r: writing $FILES files, $SIZE_MB MB; $FORKS forks editing $EDIT files each"
	"$GEN" -dir "$W/ws" -files "$FILES" -bytes $((SIZE_MB * 1000000)) -seed "$r" >/dev/null
	"$TINE" init "$W/ws" >/dev/null
	(cd "$W/ws" && find . -type f ! -name .tine-workspace | sort) >"$W/all"
	for k in $(seq 1 "$FORKS"); do
		"$TINE" fork source --name "f$k" >/dev/null
		local view
		view=$("$TINE" path "f$k")
		if [[ $EDIT == all ]]; then cp "$W/all" "$W/picked"; else shuf -n "$EDIT" --random-source=<(yes "$r$k") "$W/all" >"$W/picked"; fi
		while read -r f; do echo "edited by f$k" >>"$view/$f"; done <"$W/picked"
		echo "new in f$k" >"$view/new-f$k.txt"
		cat "$W/picked" >>"$W/changed"
		echo "./new-f$k.txt" >>"$W/changed"
		"$TINE" merge "f$k" --filesystem >/dev/null
	done
	sort -u "$W/changed" -o "$W/changed"
	manifest "$W/ws" "$W/view"
	drop
	local t0 t1
	if [[ $EDIT == all ]]; then
		t0=$(ms); cp -a "$W/ws" "$W/cp"; t1=$(ms)
	else
		mkdir "$W/cp"
		t0=$(ms); (cd "$W/ws" && xargs -d '\n' cp -a --parents -t "$W/cp" <"$W/changed"); t1=$(ms)
	fi
	cps+=($((t1 - t0)))
	rm -rf "$W/cp"
	drop
	t0=$(ms); "$TINE" release --unmerged "$W/ws" >/dev/null; t1=$(ms); rel+=($((t1 - t0)))
	"$TINE" gc --trash >/dev/null 2>&1 || true # a tine without a trash deleted before returning
	t2=$(ms); bgs+=($((t2 - t1)))
	manifest "$W/ws" "$W/released"
	cmp -s "$W/view.meta" "$W/released.meta" && cmp -s "$W/view.sums" "$W/released.sums" ||
		die "round $r: the released tree differs from the view"
	log "round $r: release ${rel[-1]} ms (its deletion over ${bgs[-1]} ms later), cp -a ${cps[-1]} ms ($(wc -l <"$W/changed") changed paths)"
}

rel=() cps=() bgs=()
if [[ $MODE == history ]]; then
	for r in $(seq 1 "$ROUNDS"); do history_round "$r"; done
	median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
	mr=$(median "${rel[@]}") mc=$(median "${cps[@]}")
	what="its delta"
	[[ $EDIT == all ]] && what="the tree"
	echo "| $FILES files, $SIZE_MB MB, $FORKS forks editing $EDIT files each, merged | median of $ROUNDS | all rounds (ms) |"
	echo "|---|---|---|"
	echo "| tine release --unmerged | $mr ms | ${rel[*]} |"
	echo "| its deletion in the background, after it returned | $(median "${bgs[@]}") ms | ${bgs[*]} |"
	echo "| cp -a of $what | $mc ms | ${cps[*]} |"
	echo "| ratio release / cp -a | $(awk -v a="$mr" -v b="$mc" 'BEGIN {printf "%.2f", a / b}') | |"
	exit 0
fi
for r in $(seq 1 "$ROUNDS"); do
	rm -rf "$W/ws" "$W/cp"
	log "round $r: writing $FILES files, $SIZE_MB MB"
	"$GEN" -dir "$W/ws" -files "$FILES" -bytes $((SIZE_MB * 1000000)) -seed "$r" >/dev/null
	drop
	t0=$(ms); cp -a "$W/ws" "$W/cp"; t1=$(ms); cps+=($((t1 - t0)))
	rm -rf "$W/cp"
	"$TINE" init "$W/ws" >/dev/null
	write_delta "$W/ws"
	manifest "$W/ws" "$W/view"
	drop
	t0=$(ms); "$TINE" release --force "$W/ws" >/dev/null; t1=$(ms); rel+=($((t1 - t0)))
	manifest "$W/ws" "$W/released"
	cmp -s "$W/view.meta" "$W/released.meta" && cmp -s "$W/view.sums" "$W/released.sums" ||
		die "round $r: the released tree differs from the view"
	log "round $r: release ${rel[-1]} ms, cp -a ${cps[-1]} ms"
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mr=$(median "${rel[@]}") mc=$(median "${cps[@]}")
echo "| $FILES files, $SIZE_MB MB, ${DELTA_KB} KiB delta | median of $ROUNDS | all rounds (ms) |"
echo "|---|---|---|"
echo "| tine release | $mr ms | ${rel[*]} |"
echo "| cp -a | $mc ms | ${cps[*]} |"
echo "| ratio release / cp -a | $(awk -v a="$mr" -v b="$mc" 'BEGIN {printf "%.3f", a / b}') | |"
