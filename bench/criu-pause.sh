#!/usr/bin/env bash
# Live fork by CRIU against a restart, for a threaded Python HTTP server
# (5 threads) holding SIZE MB, under the default confinement: N times,
# `tine fork --live criu --wait -n FORKS` (the parent's pause: criu's
# frozen time; the whole dump + restore; and the whole command, until every
# fork's service answers its ready check), then N times the same fork with
# --live rerun (a restart: until the restarted servers answer). Prints
# p50/p90. Root, CRIU 4 (scripts/install-criu.sh), tine on PATH or TINE=path.
# Usage: bench/criu-pause.sh [N] [SIZE_MB] [FORKS]
set -euo pipefail
n=${1:-20}
size=${2:-100}
forks=${3:-1}
tine=${TINE:-tine}
export TINE_HOME=$(mktemp -d /tmp/criu-bench-home.XXXX)
ws=$(mktemp -d /tmp/criu-bench-ws.XXXX)
name=$(basename "$ws")
cleanup() {
	$tine release --unmerged "$ws" >/dev/null 2>&1 || true
	rm -rf "$ws" "$TINE_HOME"
}
trap cleanup EXIT
cat >"$ws/srv.py" <<PY
import http.server, socketserver, threading, os
ballast = bytearray(os.urandom($size << 20))
secret = os.urandom(8).hex()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = secret.encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
for i in range(4):
    threading.Thread(target=threading.Event().wait, daemon=True).start()
S(("0.0.0.0", 8000), H).serve_forever()
PY
printf '[network]\nisolate = true\n[[service]]\nname = "web"\ncommand = "exec python3 srv.py"\nready = { port = 8000 }\n' >"$ws/tine.toml"
$tine init "$ws" >/dev/null
$tine start "$name/source" >/dev/null
sleep $((2 + size / 200))
pct() { sort -n | awk '{a[NR]=$1} END {printf "p50 %.1f ms, p90 %.1f ms (n=%d)", a[int((NR+1)*0.5)], a[int(NR*0.9+0.5)], NR}'; }
group() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["group"]["id"])' "$1"; }
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
: >"$ws/criu.tsv"
: >"$ws/criu-whole.tsv"
for _ in $(seq "$n"); do
	s=$(date +%s%N)
	$tine fork "$name/source" -n "$forks" --live criu --wait --json >"$ws/out.json"
	ms "$s" >>"$ws/criu-whole.tsv"
	python3 - "$ws/out.json" >>"$ws/criu.tsv" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
for l in out["live"]:
    for f in l.get("forked", []):
        if f.get("took_ms"):
            print(f["pause_ms"], f["took_ms"])
            break
PY
	$tine discard --unmerged "$(group "$ws/out.json")" >/dev/null
done
: >"$ws/rerun.tsv"
for _ in $(seq "$n"); do
	s=$(date +%s%N)
	$tine fork "$name/source" -n "$forks" --live rerun --wait --json >"$ws/out.json"
	ms "$s" >>"$ws/rerun.tsv"
	$tine discard --unmerged "$(group "$ws/out.json")" >/dev/null
done
echo "$size MB, $forks fork(s) each, $n times"
echo "criu pause (parent frozen):            $(cut -d' ' -f1 "$ws/criu.tsv" | pct)"
echo "criu dump + restore:                   $(cut -d' ' -f2 "$ws/criu.tsv" | pct)"
echo "criu, whole tine fork --wait:          $(pct <"$ws/criu-whole.tsv")"
echo "restart, whole tine fork --wait:       $(pct <"$ws/rerun.tsv")"
