#!/bin/bash
# test/gpu/ship_pages_timing.sh — page shipping against the scan's own
# extraction on the GPU machine (issue 31): one session, rounds alternating,
# the median ms of GS_SHIP_REPS (3), over GS_SHIP_ROWS (100M) float8 rows
# (every page in shared buffers, all-visible), gpu_quantiles(x, 101
# fractions), every answer compared:
#   serial:    sum(x) (the executor's floor); the bulk scan extracting the
#              keys itself (GPU service selects; CPU engine); shipping pages
#              with the device extracting, under device = gpu (the scan
#              waits for the service) and auto (it extracts a batch itself
#              when the service is behind); shipping with a lane's CPU
#              thread extracting (gpuselect.test_ship_pages_cpu)
#   GS_SHIP_WORKERS (8) workers: sum(x); the bulk scan; shipping (gpu, auto);
#              the CPU engine
# Needs a running server with the service ready (pg_device_run.sh service-on,
# GS_WORKER_PROCESSES=8 for 8 workers) and PG* set.  Output: a table.
set -u
PSQL="psql -X -At -v ON_ERROR_STOP=1"
ROWS=${GS_SHIP_ROWS:-100000000}
REPS=${GS_SHIP_REPS:-3}
W=${GS_SHIP_WORKERS:-8}
FR="(SELECT array_agg(i / 100.0) FROM generate_series(0, 100) i)"
have=$($PSQL -c "SELECT count(*) FROM pg_class WHERE relname = 'gs_ship'" 2>/dev/null)
[ "$have" = 1 ] && [ "$($PSQL -c "SELECT reltuples::int8 FROM pg_class WHERE relname = 'gs_ship'")" = "$ROWS" ] || {
	$PSQL -q -c "CREATE EXTENSION IF NOT EXISTS gpuselect" -c "DROP TABLE IF EXISTS gs_ship" \
		-c "CREATE TABLE gs_ship AS SELECT random() * 1e6 AS x FROM generate_series(1, $ROWS)" \
		-c "VACUUM (FREEZE, ANALYZE) gs_ship" >/dev/null || exit 1
}
$PSQL -q -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" -c "SELECT pg_prewarm('gs_ship')" >/dev/null 2>&1
BASE="SET gpuselect.gpu_min_rows = 0; SET gpuselect.bulk_scan_ship_pages = off; SET gpuselect.test_ship_pages_cpu = off;"
q() { # q NAME SETTINGS QUERY
	printf '%s\n' "$BASE $2" "\\echo $1" "$3"
}
Q="SELECT md5(gpu_quantiles(x, $FR)::text) FROM gs_ship;"
{
	echo '\timing on'
	for r in $(seq "$REPS"); do
		S="SET max_parallel_workers_per_gather = 0;"
		q s_sum "$S" "SELECT sum(x) FROM gs_ship;"
		q s_scan "$S SET gpuselect.device = gpu;" "$Q"
		q s_ship "$S SET gpuselect.device = gpu; SET gpuselect.bulk_scan_ship_pages = on;" "$Q"
		q s_shipauto "$S SET gpuselect.device = auto; SET gpuselect.bulk_scan_ship_pages = on;" "$Q"
		q s_shipcpu "$S SET gpuselect.device = gpu; SET gpuselect.bulk_scan_ship_pages = on; SET gpuselect.test_ship_pages_cpu = on;" "$Q"
		q s_cpu "$S SET gpuselect.device = cpu;" "$Q"
		P="SET max_parallel_workers_per_gather = $W; SET parallel_setup_cost = 0; SET min_parallel_table_scan_size = 0;"
		q p_sum "$P" "SELECT sum(x) FROM gs_ship;"
		q p_scan "$P SET gpuselect.device = gpu;" "$Q"
		q p_ship "$P SET gpuselect.device = gpu; SET gpuselect.bulk_scan_ship_pages = on;" "$Q"
		q p_shipauto "$P SET gpuselect.device = auto; SET gpuselect.bulk_scan_ship_pages = on;" "$Q"
		q p_cpu "$P SET gpuselect.device = cpu;" "$Q"
	done
	q explain "SET max_parallel_workers_per_gather = 0; SET gpuselect.device = gpu; SET gpuselect.bulk_scan_ship_pages = on;" "EXPLAIN (ANALYZE, COSTS OFF) $Q"
	q explainp "SET max_parallel_workers_per_gather = $W; SET parallel_setup_cost = 0; SET min_parallel_table_scan_size = 0; SET gpuselect.device = auto; SET gpuselect.bulk_scan_ship_pages = on;" "EXPLAIN (ANALYZE, COSTS OFF) $Q"
	q explainps "SET max_parallel_workers_per_gather = $W; SET parallel_setup_cost = 0; SET min_parallel_table_scan_size = 0; SET gpuselect.device = gpu;" "EXPLAIN (ANALYZE, COSTS OFF) $Q"
	echo "SELECT name || ' = ' || value FROM gpuselect_status() WHERE name LIKE 'service_pages%' OR name = 'service_fallen_back';"
} | $PSQL > /tmp/ship.out 2>&1
cp /tmp/ship.out "${OUT:-/tmp}/ship.out" 2>/dev/null
grep -iE "pages|workers launched|execution time|error|service_" /tmp/ship.out | grep -v "^Time" | head -40
awk '/^[sp]_[a-z]+$/ {k=$1; take=1} /^Time:/ { if (take) { print k, $2; take = 0 } } /^[0-9a-f]{32}$/ { print "md5", $1 }' /tmp/ship.out > /tmp/ship.times
echo "answers: $(awk '$1 == "md5" {print $2}' /tmp/ship.times | sort -u | wc -l) distinct (1 = all equal)"
med() { awk -v k="$1" '$1 == k {print $2}' /tmp/ship.times | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| $ROWS float8 rows, 101 fractions | median ms of $REPS | / sum(x) |"
echo "|---|---:|---:|"
for b in s p; do
	base=$(med ${b}_sum)
	for k in sum scan ship shipauto shipcpu cpu; do
		v=$(med ${b}_$k)
		[ -n "$v" ] && echo "| $b $k | $v | $(awk -v v="$v" -v b="$base" 'BEGIN {printf "%.2f", v / b}') |"
	done
done
