#!/usr/bin/env bash
# start.sh measures what tine binaries cost before they do any work: their
# size, the time their packages' init functions take (GODEBUG=inittrace=1,
# summed) and the wall time of `tine version`, which does nothing else.
# The binaries are run alternately in the same rounds, so that their
# figures compare; medians of REPS (default 21). Prints one line per
# binary.
#
#   bench/start.sh /tmp/tine-before /tmp/tine-after
#   REPS=51 bench/start.sh OLD NEW
set -euo pipefail
REPS=${REPS:-21}
(($# > 0)) || {
	echo "usage: bench/start.sh TINE..." >&2
	exit 2
}
med() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
declare -A init wall
for ((i = 0; i < REPS; i++)); do
	for b in "$@"; do
		init[$b]+="$(GODEBUG=inittrace=1 "$b" version 2>&1 >/dev/null | awk '{ms += $5} END {printf "%.2f", ms}') "
		t0=$EPOCHREALTIME
		"$b" version >/dev/null
		t1=$EPOCHREALTIME
		wall[$b]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", (b - a) * 1000}') "
	done
done
echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); medians of $REPS runs"
for b in "$@"; do
	pkgs=$(GODEBUG=inittrace=1 "$b" version 2>&1 >/dev/null | wc -l)
	echo "$b: $(stat -c %s "$b") bytes, $pkgs packages with init; init $(med <<<"${init[$b]}") ms; tine version $(med <<<"${wall[$b]}") ms"
done
