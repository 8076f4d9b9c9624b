#!/usr/bin/env bash
# display-live.sh measures, in one run, the time for a fork's display to
# show its app when forked live by CRIU against restarted (issue 29): a
# 320x240 display with xlogo (green) as a display = true service. For
# ROUNDS rounds it forks the running source with --live criu and with
# --live rerun, timing from the fork command until the fork's screen (tine
# screen, pixel checked) shows the app. Prints a Markdown table.
#
# Needs root, CRIU 4, Xvnc, openbox, xlogo, xwd, python3, and go unless
# TINE names a built binary.
#
#   sudo bench/display-live.sh
#   sudo ROUNDS=5 bench/display-live.sh
set -euo pipefail

ROUNDS=${ROUNDS:-3}
TINE=${TINE:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /var/tmp/tine-display-live.XXXXXX)
export TINE_HOME=$W/home TINE_NO_DAEMON=1
cleanup() {
	[[ -d $W/ws ]] && "$TINE" release --unmerged "$W/ws" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT
if [[ -z $TINE ]]; then
	(cd "$REPO" && go build -o "$W/tine" ./cmd/tine)
	TINE=$W/tine
fi
ms() { date +%s%N | cut -c1-13; }

# green RUN: whether RUN's screen shows the app at 10,50 (#00ff00).
green() {
	"$TINE" screen "$1" -o "$W/shot.png" >/dev/null 2>&1 || return 1
	/usr/bin/python3 - "$W/shot.png" <<'PY'
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
px = rows[50][10 * bpp:10 * bpp + 3]
sys.exit(0 if (px[0], px[1], px[2]) == (0, 255, 0) else 1)
PY
}
until_green() {
	for _ in $(seq 600); do green "$1" && return 0; sleep 0.05; done
	echo "display-live.sh: $1 never showed its app" >&2; exit 1
}

mkdir -p "$W/ws"
cat >"$W/ws/tine.toml" <<'TOML'
[display]
enabled = true
size = "320x240"

[[service]]
name = "logo"
display = true
command = "exec xlogo -bg '#00ff00' -fg '#0000ff' -geometry 100x100+0+0"
TOML
"$TINE" init "$W/ws" --name ws >/dev/null
"$TINE" start ws/source >/dev/null
until_green ws/source

echo "| round | live-forked by CRIU: app on screen (ms) | restarted: app on screen (ms) | restarted / CRIU |"
echo "|---:|---:|---:|---:|"
n=0
for i in $(seq "$ROUNDS"); do
	n=$((n + 1)); t0=$(ms)
	out=$("$TINE" fork ws/source --live criu --wait)
	grep -q "display forked live by CRIU" <<<"$out" || { echo "display-live.sh: not forked live: $out" >&2; exit 1; }
	until_green "ws/source-$n"
	live=$(($(ms) - t0))
	"$TINE" stop "ws/source-$n" >/dev/null
	n=$((n + 1)); t0=$(ms)
	"$TINE" fork ws/source --live rerun --wait >/dev/null
	until_green "ws/source-$n"
	rerun=$(($(ms) - t0))
	"$TINE" stop "ws/source-$n" >/dev/null
	printf '| %d | %d | %d | %.2fx |\n' "$i" "$live" "$rerun" "$(python3 -c "print($rerun / $live)")"
done
