#!/bin/bash
# test/gpu/service_tail.sh — the latency distribution of many sessions'
# small selections, on the CPU and through the GPU service (issues 29, 35):
# a mean that hides a tail of lost wake-ups shows here as a cluster at one
# of the waits' poll steps.  Against the server pg_device_run.sh started.
#   GS_TAIL_ROWS (100000) rows, GS_TAIL_CLIENTS (64) pgbench clients x
#   GS_TAIL_TX (60) queries, serial sessions, gpuselect.device cpu then gpu.
# Prints a histogram (ms) per device setting, then the service's counters.
set -u -o pipefail
cd "$(dirname "$0")/../.."
rows=${GS_TAIL_ROWS:-100000}
clients=${GS_TAIL_CLIENTS:-64}
tx=${GS_TAIL_TX:-60}
PSQL="psql -X -q -At -v ON_ERROR_STOP=1"
work=$(mktemp -d /tmp/gs-tail.XXXXXX)
chmod 777 "$work"
trap 'rm -rf "$work"' EXIT
$PSQL -c "DROP TABLE IF EXISTS gs_tail" -c "CREATE TABLE gs_tail AS SELECT random() AS x FROM generate_series(1, $rows)" \
	-c "VACUUM ANALYZE gs_tail" || exit 1
echo "SELECT gpu_quantiles(x, '{0.01,0.5,0.99}') FROM gs_tail;" >"$work/q.sql"
echo "$rows rows, $clients clients x $tx queries; bins in ms"
for mode in ${GS_TAIL_MODES:-cpu gpu}; do
	rm -f "$work"/log.*
	PGOPTIONS="-c gpuselect.device=$mode -c max_parallel_workers_per_gather=0" \
		pgbench -n -c "$clients" -j "$clients" -t "$tx" -f "$work/q.sql" -l --log-prefix="$work/log" >"$work/pgb.out" 2>&1 ||
		grep -iE 'error|abort' "$work/pgb.out" | head -3
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without.*/\1/p' "$work/pgb.out")
	cat "$work"/log.* | awk -v m="$mode" -v tps="$tps" '
		BEGIN { split("10 20 30 45 70 95 130 1e9", up, " ") }
		{ l = $3 / 1000; for (i = 1; l >= up[i]; i++) ; h[i]++; n++; s += l }
		END { printf "%-4s q/s %6.0f mean %6.1f |", m, tps, s / n; lo = 0
			for (i = 1; i <= 8; i++) { printf " %s-%s: %d", lo, (i < 8 ? up[i] : "") , h[i] + 0; lo = up[i] } printf "\n" }'
done
$PSQL -c "SELECT string_agg(name || '=' || value, ' ') FROM gpuselect_status() WHERE name ~ '^(service_(served|requeued|fallen_back|timed_out|pool_exhausted|pool_waits|restart_waits)|device_[0-9]+_served)$'"
