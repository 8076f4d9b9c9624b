#!/usr/bin/env bash
# display.sh measures, in one run, what a display costs a fork (issue 29):
# a workspace whose service serves a page whose colour comes from a file
# and, with a display, Chromium showing it. For ROUNDS rounds it forks the
# running source once without a display (the baseline: the fork's dev
# server ready, tine fork --wait) and once with one, timing from the fork
# command to the fork's screen showing the app (tine screen, pixel
# checked) and to its display stack being ready; then reads each display
# fork's memory: the display stack's proportional set size (Xvnc and
# openbox; tine stats shows their resident memory), the browser's, and the
# fork's whole cgroup against the baseline fork's. Prints a Markdown table on stdout.
#
# Needs root, Xvnc, openbox, xdotool, xwd (tine doctor names what is
# missing), chromium, python3, jq, and go unless TINE names a built binary.
#
#   sudo bench/display.sh
#   sudo ROUNDS=5 bench/display.sh
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SCRATCH=${SCRATCH:-/var/tmp}
TINE=${TINE:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)

log() { echo "display.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (supervisors, overlay mounts)"
for p in jq chromium Xvnc openbox xdotool xwd; do command -v $p >/dev/null || die "needs $p"; done
PY=/usr/bin/python3
[[ -x $PY ]] || die "needs /usr/bin/python3"

W=$(mktemp -d "$SCRATCH/tine-display-bench.XXXXXX")
export TINE_HOME=$W/home TINE_NO_DAEMON=1
cleanup() {
	for ws in "$W"/plain "$W"/desk; do
		[[ -d $ws ]] && "$TINE" release --unmerged "$ws" >/dev/null 2>&1 || true
	done
	rm -rf "$W"
}
trap cleanup EXIT

if [[ -z $TINE ]]; then
	(cd "$REPO" && go build -o "$W/tine" ./cmd/tine)
	TINE=$W/tine
fi

ms() { date +%s%N | cut -c1-13; }

# pixel PNG: "R G B" of the pixel a third of the way in, by a PNG decoder
# in Python's standard library terms (zlib, the five row filters).
pixel() {
	"$PY" - "$1" <<'PY'
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
pos, idat, w, h, ct = 8, b"", 0, 0, 2
while pos < len(b):
    n, kind = struct.unpack(">I4s", b[pos:pos + 8]); data = b[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b"IHDR": w, h, _, ct = struct.unpack(">IIBB", data[:10])
    elif kind == b"IDAT": idat += data
bpp = 4 if ct == 6 else 3
raw, stride, prev, rows, i = zlib.decompress(idat), w * bpp, bytearray(w * bpp), [], 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; up = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + up) & 255
        elif f == 3: line[x] = (line[x] + (a + up) // 2) & 255
        elif f == 4:
            p = a + up - c; pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
    rows.append(line); prev = line
px = rows[h // 3][(w // 3) * bpp:(w // 3) * bpp + 3]
print(px[0], px[1], px[2])
PY
}

# pss_mib PIDS: the proportional set size of the processes PIDS (shared
# pages divided among their sharers), in MiB.
pss_mib() {
	local kb=0 p v
	for p in $1; do
		v=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
		kb=$((kb + ${v:-0}))
	done
	jq -n "$kb / 1024"
}

# until_red RUN: waits until RUN's screen shows the page (red).
until_red() {
	local shot=$W/shot.png
	for _ in $(seq 600); do
		if "$TINE" screen "$1" -o "$shot" 2>/dev/null && [[ $(pixel "$shot") == "255 0 0" ]]; then
			return 0
		fi
		sleep 0.1
	done
	die "$1 never showed its app"
}

web='[[service]]
name = "web"
command = "exec /usr/bin/python3 -m http.server 8000 --bind 127.0.0.1"
ready = { port = 8000 }
'
browser='[display]
enabled = true
size = "1280x800"

[[service]]
name = "browser"
display = true
command = "exec chromium --no-sandbox --user-data-dir=/tmp/chromium --no-first-run --disable-gpu --disable-dev-shm-usage --kiosk --window-position=0,0 --window-size=1280,800 http://127.0.0.1:8000/page.html"
'
page='<html><body style="margin:0;height:100vh"><script>function f(){fetch("colour",{cache:"no-store"}).then(r=>r.text()).then(c=>{document.body.style.background="#"+c.trim()})}f();setInterval(f,250)</script></body></html>'
for ws in plain desk; do
	mkdir -p "$W/$ws"
	printf '%s\n' "$page" >"$W/$ws/page.html"
	echo ff0000 >"$W/$ws/colour"
done
printf '%s' "$web" >"$W/plain/tine.toml"
printf '%s%s' "$web" "$browser" >"$W/desk/tine.toml"
"$TINE" init "$W/plain" --name plain >/dev/null
"$TINE" init "$W/desk" --name desk >/dev/null
"$TINE" start plain/source >/dev/null
"$TINE" start desk/source >/dev/null
until_red desk/source

echo "| round | fork, no display: services ready (ms) | fork with display: stack ready (ms) | fork with display: app on screen (ms) | x baseline | display stack PSS (MiB) | browser PSS (MiB) | fork cgroup, no display (MiB) | fork cgroup, display + browser (MiB) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for i in $(seq "$ROUNDS"); do
	t0=$(ms)
	"$TINE" fork plain/source --wait --json >/dev/null
	plain_ms=$(($(ms) - t0))
	t0=$(ms)
	"$TINE" fork desk/source --wait --json >/dev/null
	stack_ms=$(($(ms) - t0))
	until_red "desk/source-$i"
	app_ms=$(($(ms) - t0))
	sleep 2 # the browser settles
	ps=$("$TINE" ps "desk/source-$i" --json)
	stack=$(pss_mib "$(jq -r '.processes[] | select(.service == "tine-display" or .service == "tine-wm") | .pid' <<<"$ps")")
	browser_pss=$(pss_mib "$(jq -r '.processes[] | select(.service == "browser") | .pid' <<<"$ps")")
	cg_desk=$(jq '.stats.memory_bytes / 1048576' <<<"$ps")
	cg_plain=$("$TINE" ps "plain/source-$i" --json | jq '.stats.memory_bytes / 1048576')
	printf '| %d | %d | %d | %d | %.1fx | %.1f | %.1f | %.1f | %.1f |\n' "$i" "$plain_ms" "$stack_ms" "$app_ms" \
		"$(jq -n "$app_ms / $plain_ms")" "$stack" "$browser_pss" "$cg_plain" "$cg_desk"
done
