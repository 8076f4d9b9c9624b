#!/usr/bin/env bash
# A tour of tine's commands by hand, after scripts/quickstart.sh (which runs
# tine demo, the main job): builds and installs tine, forks a sample git
# workspace three ways, changes each fork differently, diffs them, rolls one
# back, merges it into the source, discards the rest; then forks a running
# dev server. Run as root on Linux (the overlay backend mounts).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

if ! command -v go >/dev/null; then
	echo "quickstart: Go 1.26 or later is needed (https://go.dev/dl); not found on PATH" >&2
	exit 1
fi
missing=()
for c in git python3 curl; do
	command -v "$c" >/dev/null || missing+=("$c")
done
if [ ${#missing[@]} -gt 0 ]; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

step() {
	printf '\n$'
	printf ' %q' "$@"
	printf '\n'
	"$@"
}

echo "building tine..."
go build -ldflags "$(sh scripts/ldflags.sh)" -o /usr/local/bin/tine ./cmd/tine
echo "installed $(command -v tine): $(tine version)"

# A directory of its own (never another tour's or anyone's files), and
# a state directory in it; whatever way the tour ends, the servers it
# started are stopped (the files stay, to explore).
demo=$(mktemp -d /tmp/tine-tour.XXXXXX)
export TINE_HOME="$demo/state"
stop_servers() {
	tine stop --all web/source >/dev/null 2>&1 || true
}
trap stop_servers EXIT
mkdir -p "$demo/app/src"
cd "$demo/app"
printf 'def greet(name):\n    return "hello " + name\n' >src/greet.py
printf 'from greet import greet\nprint(greet("world"))\n' >src/main.py
printf '# app\nA sample workspace for tine.\n' >README.md
git init -q && git add -A && git -c user.name=demo -c user.email=demo@example.com commit -qm "sample app"

cd "$demo"
step tine init "$demo/app"
cd "$demo/app" # the workspace directory is now the source's overlay mount
step tine fork source --copies 3 --approach "f-strings" --approach "shout" --approach "delete the README"
step tine exec source-1 -- sh -c 'printf "def greet(name):\n    return f\"hello {name}\"\n" > src/greet.py'
step tine exec source-2 -- sh -c 'sed -i "s/hello/HELLO/" src/greet.py && echo "LOUD = True" > src/config.py'
step tine exec source-3 -- rm README.md
step tine exec source-1 -- cat src/greet.py
step tine exec source-2 -- cat src/greet.py
step cat src/greet.py
step tine diff source-1 --patch
step tine diff source-2
step tine diff source-3 --stat
step tine checkpoint source-2 --label loud
step tine exec source-2 -- sh -c 'echo "oops" > src/greet.py'
step tine rollback source-2 --to loud
step tine exec source-2 -- cat src/greet.py
step tine merge source-2 --dry-run
step tine merge source-2
step cat src/greet.py src/config.py
if ! step tine discard source-3; then
	echo "(refused with exit status 6: source-3 deleted a file that was never merged; --unmerged discards anyway)"
fi
step tine discard --unmerged source-1
step tine discard --unmerged source-3
step tine tree

# Live runs: a dev server declared in tine.toml, forked while it runs. Each
# fork gets its own network namespace and address, so every fork's server
# listens on the same port :8000 side by side.
mkdir -p "$demo/web"
cd "$demo/web"
echo "<h1>the source</h1>" >index.html
cat >tine.toml <<'TOML'
[network]
isolate = true

[[service]]
name = "dev"
command = "exec python3 -m http.server 8000"
ready = { port = 8000 }
TOML
cd "$demo"
step tine init "$demo/web"
cd "$demo/web"
step tine start web/source
step tine fork web/source -n 2 --wait --approach "blue" --approach "green"
step tine exec web/source-1 -- sh -c 'echo "<h1>fork 1: blue</h1>" > index.html'
step tine exec web/source-2 -- sh -c 'echo "<h1>fork 2: green</h1>" > index.html'
step tine ls web
for run in source source-1 source-2; do
	addr=$(tine ps "web/$run" --json | sed -n 's/.*"addr": *"\([0-9.]*\)".*/\1/p' | head -1)
	step curl -s "http://$addr:8000/index.html"
done
step tine port web/source-2 8000 --host-port 8002
step curl -s http://127.0.0.1:8002/index.html
step tine ps web/source-1
step tine logs web/source-1 dev --tail 3
step tine stop web/source
step tine stop web/source --all
step tine ls
printf '\nThe sample workspaces stay at %s and %s (state in %s), their servers stopped;\n' "$demo/app" "$demo/web" "$TINE_HOME"
printf 'tine release --unmerged %s %s and rm -rf %s remove them.\n' "$demo/app" "$demo/web" "$demo"
printf 'Try: TINE_HOME=%s tine exec source-2 -- python3 src/main.py\n' "$TINE_HOME"
