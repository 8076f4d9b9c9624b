#!/usr/bin/env bash
# Times the same tine commands with two tine binaries in one run, side by
# side (hyperfine, interleaved by alternating the commands), so that a
# change's cost is a ratio measured on the same machine at the same time.
#
#   sudo bench/compare-binaries.sh OLD_TINE NEW_TINE [FILES] [RUNS]
#
# Each binary gets its own state directory and an identical git workspace
# of FILES files (default 2000): a fork of the idle source, a fork of the
# running source (a service runs, so the fork freezes it), and a git-scope
# merge --dry-run of a fork that changed 20 files. Forks are kept (a
# discarded fork's name stays taken) and released with the workspace.
set -euo pipefail
old=${1:?old tine binary}
new=${2:?new tine binary}
files=${3:-2000}
runs=${4:-20}
[ "$(id -u)" = 0 ] || { echo "needs root (overlay mounts)" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
tmp=$(mktemp -d /var/tmp/tine-cmp.XXXXXX)
cleanup() {
	for b in old new; do
		TINE_HOME=$tmp/$b-home "$tmp/$b-tine" release --force "$tmp/$b-ws" >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
cp "$old" "$tmp/old-tine"
cp "$new" "$tmp/new-tine"
for b in old new; do
	ws=$tmp/$b-ws
	mkdir -p "$ws/src"
	for i in $(seq "$files"); do printf 'file %d\n' "$i" >"$ws/src/f$i.txt"; done
	printf '[[service]]\nname = "idle"\ncommand = "exec sleep 100000"\n' >"$ws/tine.toml"
	git -C "$ws" init -q && git -C "$ws" add -A && git -C "$ws" -c user.name=b -c user.email=b@b commit -qm base
	TINE_HOME=$tmp/$b-home "$tmp/$b-tine" init "$ws" >/dev/null
	planned=$(TINE_HOME=$tmp/$b-home "$tmp/$b-tine" fork source --name planned --json | python3 -c "import json,sys; print(json.load(sys.stdin)[\"forks\"][0][\"name\"])")
	for i in $(seq 20); do echo changed >>"$(TINE_HOME=$tmp/$b-home "$tmp/$b-tine" path "$planned")/src/f$i.txt"; done
done
run() { echo "env TINE_HOME=$tmp/$1-home $tmp/$1-tine"; }
echo "== fork of the idle source ($files files)"
hyperfine -N --runs "$runs" "$(run old) fork source" "$(run new) fork source"
for b in old new; do TINE_HOME=$tmp/$b-home "$tmp/$b-tine" start source >/dev/null; done
echo "== fork of the running source (frozen while it seals)"
hyperfine -N --runs "$runs" "$(run old) fork source --live none" "$(run new) fork source --live none"
echo "== merge --dry-run, git scope, a fork that changed 20 files"
hyperfine -N --runs "$runs" "$(run old) merge $planned --dry-run" "$(run new) merge $planned --dry-run"
for b in old new; do TINE_HOME=$tmp/$b-home "$tmp/$b-tine" stop source >/dev/null; done
