#!/bin/bash
# test/gpu/ship_pages_timing.sh — page shipping's cost on the GPU machine
# (issue 31, stage 1: the service extracts shipped pages on its CPU): one
# session, serial, rounds alternating, the median ms of GS_SHIP_REPS (3) of
#   sum(x)                         the executor's floor
#   gpu_quantiles(x, 101 fr)       the bulk scan, keys extracted by the scan
#   the same, bulk_scan_ship_pages the scan ships pages, the service extracts
# over GS_SHIP_ROWS (30M) float8 rows, every answer compared with the
# first.  Needs a running server with the service ready (pg_device_run.sh
# service-on) and PG* set.
set -u
PSQL="psql -X -At -v ON_ERROR_STOP=1"
ROWS=${GS_SHIP_ROWS:-30000000}
REPS=${GS_SHIP_REPS:-3}
FR="(SELECT array_agg(i / 100.0) FROM generate_series(0, 100) i)"
$PSQL -q -c "CREATE EXTENSION IF NOT EXISTS gpuselect" -c "DROP TABLE IF EXISTS gs_ship" \
	-c "CREATE TABLE gs_ship AS SELECT random() * 1e6 AS x FROM generate_series(1, $ROWS)" \
	-c "VACUUM ANALYZE gs_ship" -c "SELECT count(*) FROM gs_ship" >/dev/null || exit 1
{
	echo "SET max_parallel_workers_per_gather = 0; SET gpuselect.device = gpu; SET gpuselect.gpu_min_rows = 0;"
	echo '\timing on'
	for r in $(seq "$REPS"); do
		printf '%s\n' '\echo sum' "SELECT sum(x) FROM gs_ship;"
		printf '%s\n' "SET gpuselect.bulk_scan_ship_pages = off;" '\echo scan' "SELECT md5(gpu_quantiles(x, $FR)::text) FROM gs_ship;"
		printf '%s\n' "SET gpuselect.bulk_scan_ship_pages = on;" '\echo ship' "SELECT md5(gpu_quantiles(x, $FR)::text) FROM gs_ship;"
	done
	echo "EXPLAIN (ANALYZE, COSTS OFF) SELECT gpu_quantiles(x, $FR) FROM gs_ship;"
} | $PSQL > /tmp/ship.out 2>&1
grep -i "pages shipped\|error" /tmp/ship.out | head -5
awk '/^(sum|scan|ship)$/ {k=$1; take=1} /^Time:/ { if (take) { print k, $2; take = 0 } } /^[0-9a-f]{32}$/ { print "md5", $1 }' /tmp/ship.out > /tmp/ship.times
echo "answers: $(awk '$1 == "md5" {print $2}' /tmp/ship.times | sort -u | wc -l) distinct (1 = all equal)"
echo "| $ROWS float8 rows, 101 fractions, serial | median ms of $REPS |"
echo "|---|---|"
for k in sum scan ship; do
	echo "| $k | $(awk -v k=$k '$1 == k {print $2}' /tmp/ship.times | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') |"
done
