#!/bin/bash
# test/gpu/bulk_scan_profile.sh — where a bulk-scan query's time goes, on
# the GPU machine, against the server test/gpu/pg_device_run.sh service-on
# started (table bulk_f8_N from test/bench/bulk_scan_bench.sh; made here if
# missing).  For each worker count in GS_PROF_WORKERS and device: the
# query's time in psql, EXPLAIN ANALYZE's Scan Time (the leader's) and
# Execution Time, and gpuselect.debug's line (keys copied to the device,
# copy and select time).  Rounds alternate; the first warms up.
set -u -o pipefail
cd "$(dirname "$0")/../.."
n=${GS_PROF_ROWS:-100000000}
t=bulk_f8_$n
PSQL="psql -X -q -v ON_ERROR_STOP=1"
if ! $PSQL -Atc "SELECT 1 FROM pg_class WHERE relname = '$t'" | grep -q 1; then
	$PSQL -c "CREATE TABLE $t (x float8) WITH (autovacuum_enabled = off)" \
		-c "INSERT INTO $t SELECT random() * 1e6 FROM generate_series(1, $n)" \
		-c "VACUUM (FREEZE, ANALYZE) $t" || exit 1
fi
F101="'{$(seq -s, 0 100 | sed 's/\([0-9]*\)/\1e-2/g')}'::float8[]"
par="SET max_parallel_workers = 8; SET min_parallel_table_scan_size = 0; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
for r in 0 1 2; do
	for w in ${GS_PROF_WORKERS:-0 8}; do
		for dev in gpu cpu; do
			out=$($PSQL -c "LOAD 'gpuselect'" -c "SET jit = off; $par SET max_parallel_workers_per_gather = $w" \
				-c "SET gpuselect.device = $dev; SET gpuselect.gpu_min_rows = 0; SET gpuselect.debug = on" \
				-c "\\timing on" -c "SELECT gpu_quantiles(x, $F101) IS NOT NULL FROM $t" \
				-c "EXPLAIN (ANALYZE, COSTS OFF) SELECT gpu_quantiles(x, $F101) FROM $t" 2>&1)
			echo "round $r, $w workers, $dev: query $(echo "$out" | grep -m1 '^Time:' | cut -d' ' -f2) ms;" \
				"$(echo "$out" | grep -E 'Scan Time|Execution Time|Workers Launched' | tr -s ' ' | paste -sd';')" \
				"$(echo "$out" | grep -m1 'NOTICE:' | sed 's/.*gpuselect: //')"
		done
	done
done
