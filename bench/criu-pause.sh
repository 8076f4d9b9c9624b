#!/usr/bin/env bash
# Pause of a live fork by CRIU against a restart, for a threaded Python HTTP
# server holding ~100 MB (5 threads): N single forks with --live=criu
# (the parent's pause, criu's frozen time, and the whole dump + restore),
# then N with --live=rerun (until the restarted server answers its ready
# check). Prints p50/p90. Root, CRIU 4 (scripts/install-criu.sh), tine on
# PATH or TINE=path. Usage: bench/criu-pause.sh [N]
set -euo pipefail
n=${1:-20}
tine=${TINE:-tine}
export TINE_HOME=$(mktemp -d /tmp/criu-bench-home.XXXX)
ws=$(mktemp -d /tmp/criu-bench-ws.XXXX)
trap '$tine stop "$(basename "$ws")/source" >/dev/null 2>&1 || true' EXIT
cat >"$ws/srv.py" <<'PY'
import http.server, socketserver, threading, os
ballast = bytearray(os.urandom(100 << 20))
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
printf '[network]\nisolate = true\n[confine]\noff = true\n[[service]]\nname = "web"\ncommand = "exec python3 srv.py"\nready = { port = 8000 }\n' >"$ws/tine.toml"
name=$(basename "$ws")
$tine init "$ws" >/dev/null
$tine start "$name/source" >/dev/null
sleep 2
pct() { sort -n | awk '{a[NR]=$1} END {printf "p50 %.1f ms, p90 %.1f ms (n=%d)", a[int((NR+1)*0.5)], a[int(NR*0.9+0.5)], NR}'; }
: >"$ws/criu.tsv"
for i in $(seq "$n"); do
	$tine fork "$name/source" --live criu --wait --json >"$ws/out.json"
	python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["live"][0]["forked"][0]; print(f["pause_ms"], f["took_ms"])' "$ws/out.json" >>"$ws/criu.tsv"
	$tine discard "$name/source-$i" >/dev/null
done
: >"$ws/rerun.tsv"
for i in $(seq "$n"); do
	s=$(date +%s%N)
	$tine fork "$name/source" --live rerun --wait >/dev/null
	echo $((($(date +%s%N) - s) / 1000000)) >>"$ws/rerun.tsv"
	$tine discard "$name/source-$((n + i))" >/dev/null
done
echo "criu pause (parent frozen):   $(cut -d' ' -f1 "$ws/criu.tsv" | pct)"
echo "criu dump + restore:          $(cut -d' ' -f2 "$ws/criu.tsv" | pct)"
echo "restart, whole tine fork:     $(pct <"$ws/rerun.tsv")"
