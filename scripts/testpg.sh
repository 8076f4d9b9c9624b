#!/usr/bin/env bash
# A throwaway PostgreSQL for tine's tests: a cluster made by initdb in a
# temporary directory, listening on the loopback only, run as the
# "postgres" user (initdb refuses root), with trust authentication for
# local connections.
#
#   eval "$(scripts/testpg.sh start)"   # exports TINE_TEST_PG_URL and TINE_TEST_PG_DIR
#   scripts/testpg.sh stop "$TINE_TEST_PG_DIR"
#
# TESTPG_FSYNC=on makes a cluster that syncs its log at every commit, as a
# real server does, for benchmarks that compare it with SQLite's
# synchronous=FULL; by default a test cluster does not sync.
#
# It needs Debian's postgresql package (PostgreSQL 15 on Debian 12); the
# tests that need a PostgreSQL skip, saying why, when TINE_TEST_PG_URL is
# not set or does not answer.
set -euo pipefail

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bin" ]; then
	echo "testpg: no PostgreSQL in /usr/lib/postgresql (apt-get install postgresql)" >&2
	exit 1
fi

as_postgres() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

start() {
	local dir port
	dir=$(mktemp -d /tmp/tine-pg.XXXXXX)
	chmod 0755 "$dir"
	[ "$(id -u)" = 0 ] && chown postgres: "$dir"
	as_postgres "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
	for port in $(seq 55432 55462); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			break
		fi
	done
	# fsync off unless asked: a test database need not survive a power
	# cut, and the machine's disk is shared.
	as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=${TESTPG_FSYNC:-off} -c max_connections=200" start >/dev/null ||
		{ cat "$dir/server.log" >&2; exit 1; }
	echo "export TINE_TEST_PG_URL='postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable'"
	echo "export TINE_TEST_PG_DIR='$dir'"
}

stop() {
	local dir=$1
	[ -d "$dir/data" ] || return 0
	as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
	rm -rf "$dir"
}

case "${1:-}" in
start) start ;;
stop) stop "${2:?testpg.sh stop DIR}" ;;
*)
	echo "usage: testpg.sh start | stop DIR" >&2
	exit 2
	;;
esac
