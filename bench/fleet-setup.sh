# fleet-setup.sh is sourced by the fleet's bench scripts (fleet.sh,
# fleet-cancel.sh), from the repository's root: it makes $work (a
# temporary directory named after $1), builds $work/tine, uses
# $TINE_TEST_PG_URL or starts a throwaway PostgreSQL, and makes a sample
# repository at $work/repo with one commit. On exit it kills the processes
# in $pids (the nodes), stops what it started and unmounts and removes
# $work.
work=$(mktemp -d "/tmp/tine-$1-bench.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${pgdir:-}" ] && scripts/testpg.sh stop "$pgdir"
	# the nodes' views and clones stay mounted after tine serve: unmount
	# them (deepest first) before removing the directory
	awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r | xargs -r -n 1 umount -l
	rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT

go build -o "$work/tine" ./cmd/tine
if [ -z "${TINE_TEST_PG_URL:-}" ]; then
	eval "$(scripts/testpg.sh start)"
	pgdir=$TINE_TEST_PG_DIR
fi
git init -q -b main "$work/repo"
echo hello >"$work/repo/a.txt"
git -C "$work/repo" add a.txt
git -C "$work/repo" -c user.name=b -c user.email=b@b commit -qm init
