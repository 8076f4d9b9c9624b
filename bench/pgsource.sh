#!/usr/bin/env bash
# pgsource.sh measures forks of a source whose delta holds a running
# PostgreSQL's data (issue 24: "a PostgreSQL source copies the whole delta
# on every fork and keeps each copy: 14 GB after about 30 forks"). A
# PostgreSQL 15 cluster is made in the source's view (pgbench -i -s SCALE)
# and runs there, started by hand as a developer would, so it holds the
# view (a busy source); `tine serve` runs on the state directory (its
# change tracker and background seals). Then FORKS times: TXNS pgbench
# transactions, wait until a background seal begun after them is
# recorded (at most PRESEAL_WAIT seconds), and `tine fork source`. For each
# fork: its wall time, what its seal copied (tine fork --json), and the
# disk of every layer made since the fork before (background seals
# included) against the disk of the files PostgreSQL changed; at the end,
# the disk of all the layers against the cluster's size. Prints a Markdown
# table on stdout, progress on stderr.
#
# Needs root (overlay mounts), PostgreSQL 15 (Debian's postgresql-15) and
# go (to build tine) unless TINE names a prebuilt binary.
#
#   sudo bench/pgsource.sh
#   sudo SCALE=20 FORKS=30 TXNS=500 bench/pgsource.sh
set -euo pipefail

SCALE=${SCALE:-10}
FORKS=${FORKS:-10}
TXNS=${TXNS:-200}
PRESEAL_WAIT=${PRESEAL_WAIT:-120}
SCRATCH=${SCRATCH:-/var/tmp}
TINE=${TINE:-}
PG=${PG:-/usr/lib/postgresql/15/bin}
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
[[ -x $PG/postgres ]] || die "needs PostgreSQL 15 at $PG"
command -v jq >/dev/null || die "needs jq"

chmod 755 "$W"
export TINE_HOME=$W/home
WS=$W/app
DATA=$WS/pgdata
SOCK=$W/sock
serve=
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
cleanup() {
	as_pg "$PG/pg_ctl" -D "$DATA" -m immediate stop >/dev/null 2>&1 || true
	[[ -n $serve ]] && kill "$serve" 2>/dev/null && wait "$serve" 2>/dev/null
	cd /
	TINE_NO_DAEMON=1 "$TINE" release --unmerged "$WS" >/dev/null 2>&1 || true
	unmount_under "$W"
	rm -rf "$W"
}
trap cleanup EXIT
build_tine

mkdir -p "$WS" "$SOCK"
chown postgres:postgres "$SOCK"
echo "app" >"$WS/README"
TINE_NO_DAEMON=1 "$TINE" init "$WS" >/dev/null
"$TINE" serve >"$W/serve.log" 2>&1 &
serve=$!
for _ in $(seq 50); do [[ -S $TINE_HOME/ctl/tine.sock ]] && break; sleep 0.1; done

log "initdb and pgbench -i -s $SCALE in the source's view"
install -d -o postgres -g postgres "$DATA"
as_pg "$PG/initdb" -A trust -D "$DATA" >/dev/null
as_pg "$PG/pg_ctl" -D "$DATA" -l "$SOCK/pg.log" -o "-k $SOCK -c listen_addresses=''" -w start >/dev/null
pgb() { as_pg "$PG/pgbench" -h "$SOCK" "$@" postgres; }
pgb -q -i -s "$SCALE" >/dev/null 2>&1
as_pg "$PG/psql" -h "$SOCK" -qAt -c checkpoint postgres >/dev/null
cluster_kb=$(du -sk "$DATA" | cut -f1)
log "cluster: $cluster_kb KB; PostgreSQL holds the view"

layers_kb() { du -sk "$TINE_HOME"/workspaces/*/layers 2>/dev/null | cut -f1; }
# fs_kb: the space used on the filesystem holding the state directory,
# which counts blocks shared by reflinked copies once (du counts them in
# every file); meaningful when nothing else writes there (SCRATCH on a
# filesystem of its own).
fs_kb() { df -k --output=used "$TINE_HOME" | tail -1 | tr -d ' '; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f", (b - a) * 1000}'; }
ws_id=$(basename "$(dirname "$(ls -d "$TINE_HOME"/workspaces/*/layers)")")

# sealed_since T: whether a background seal of the source was recorded
# after Unix time T.
sealed_since() {
	"$TINE" tree --json app 2>/dev/null | jq -e --argjson t "$1" \
		'[.. | objects | select(.kind? == "sealed" and ((.created_at | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) >= ($t | floor)))] | length > 0' >/dev/null
}

echo "Command: \`sudo SCALE=$SCALE FORKS=$FORKS TXNS=$TXNS bench/pgsource.sh\`; tine built from \`$built\`."
echo
echo "$(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg) at the start. PostgreSQL 15 cluster of $cluster_kb KB (pgbench scale $SCALE) running in the source's view; \`tine serve\` up."
echo
echo "Filesystem of the state directory: $(findmnt -n -o FSTYPE --target "$TINE_HOME")."
echo
echo "| fork | pgbench txns before | waited for the background seal, ms | wall ms | seal ms | files copied | KB copied | presealed | KB of disk, new layers (du) | KB used on the filesystem since (df) | KB of files PostgreSQL changed | du x cluster size |"
echo "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"
before=$(layers_kb)
fs_before=$(fs_kb)
fs_start=$fs_before
stamp=$W/stamp
for i in $(seq "$FORKS"); do
	touch "$stamp"
	sleep 1.1
	pgb -n -t "$TXNS" >/dev/null 2>&1
	t=$(date +%s)
	changed_kb=$(find "$DATA" -type f -newer "$stamp" -printf '%k\n' | awk '{s += $1} END {print s + 0}')
	w0=$EPOCHREALTIME
	waited=
	while ((i > 0)); do
		if sealed_since "$t"; then
			waited=$(ms "$w0" "$EPOCHREALTIME")
			break
		fi
		(($(date +%s) - t > PRESEAL_WAIT)) && break
		sleep 0.2
	done
	t0=$EPOCHREALTIME
	out=$("$TINE" fork source --json)
	t1=$EPOCHREALTIME
	now=$(layers_kb)
	fs_now=$(fs_kb)
	read -r sms files kb pre < <(jq -r '.seal // {} | "\(.ms // "") \(.files // 0) \((.bytes // 0) / 1024 | floor) \(.presealed // false)"' <<<"$out")
	echo "| $i | $TXNS | ${waited:--} | $(ms "$t0" "$t1") | $sms | $files | $kb | $pre | $((now - before)) | $((fs_now - fs_before)) | $changed_kb | $(awk -v a="$((now - before))" -v b="$cluster_kb" 'BEGIN {printf "%.2f", a / b}') |"
	before=$now fs_before=$fs_now
done
total=$(layers_kb)
echo
echo "All layers at the end (du): $total KB, $(awk -v a="$total" -v b="$cluster_kb" 'BEGIN {printf "%.2f", a / b}')x the cluster ($cluster_kb KB) after $FORKS forks; the filesystem's use grew $(($(fs_kb) - fs_start)) KB over the forks (df); workspace $ws_id."
log "done; load average $(cut -d' ' -f1-3 /proc/loadavg)"
