# lib.sh is sourced by the bench scripts that work on a scratch state
# directory of their own (history.sh, merge-new.sh, pgsource.sh): after
# setting SCRATCH and TINE (a prebuilt binary, or empty to build one), a
# script sources it to get log and die (prefixed with its name), a root
# check, REPO, a work directory $W under $SCRATCH, unmount_under, which its
# own cleanup calls before removing $W, and build_tine, which it calls
# once that cleanup is its EXIT trap.
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=$(basename "$0")

log() { echo "$bench: $*" >&2; }
die() {
	log "$*"
	exit 1
}
[[ $(id -u) == 0 ]] || die "needs root (overlay mounts)"

W=$(mktemp -d "$SCRATCH/tine-${bench%.sh}-bench.XXXXXX")

# unmount_under unmounts every mount below dir, deepest first.
unmount_under() {
	{ findmnt -rn -o TARGET | grep -F "$1" || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

# build_tine builds $W/tine into TINE unless TINE names a binary, and
# sets built to the commit the tree is at.
build_tine() {
	if [[ -z $TINE ]]; then
		log "building tine"
		(cd "$REPO" && go build -o "$W/tine" ./cmd/tine)
		TINE=$W/tine
	fi
	built=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
}
