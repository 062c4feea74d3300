#!/bin/bash
# test/gpu/split_sql_check.sh — split jobs through PostgreSQL on the GPU
# machine (issue 35): a group streamed through every device
# (gpuselect.test_service_split_keys, 8 MB a device, so the narrowing takes
# several levels and batches) answers exactly as the built-ins, for 2-, 4-
# and 8-byte keys, 1, 3 and 101 fractions; then, in one session, rounds
# alternating: the ordinary service path, the split path, the CPU engine
# and sum(x), each the median of GS_SPLIT_REPS (3) runs.  Needs a running
# server with the CUDA build preloaded and the service ready
# (pg_device_run.sh's service-on stage), PG* set.  Ends with
# "N passed, M failed" after the timing table.
set -u
PSQL="psql -X -At -v ON_ERROR_STOP=1"
ROWS=${GS_SPLIT_ROWS:-20000000}
REPS=${GS_SPLIT_REPS:-3}
pass=0; fail=0
SPLIT="SET gpuselect.device = gpu; SET gpuselect.gpu_min_rows = 0; SET gpuselect.test_service_split_keys = 1000;"
$PSQL -q -c "CREATE EXTENSION IF NOT EXISTS gpuselect" -c "DROP TABLE IF EXISTS gs_split" \
	-c "SELECT setseed(0.35)" \
	-c "CREATE TABLE gs_split AS SELECT (random() * 1e6 - 5e5)::float8 AS f8, (random() * 2e6)::int4 AS i4,
	      (random() * 60000 - 30000)::int2 AS i2, (g % 7)::float8 AS few FROM generate_series(1, $ROWS) g" \
	-c "VACUUM ANALYZE gs_split" || { echo "0 passed, 1 failed"; exit 1; }
s0=$($PSQL -c "SELECT value FROM gpuselect_status() WHERE name = 'service_split_jobs'")
for col in f8 i4 i2 few; do
	for fr in "0.5" "0.5, 0.9, 0.99" "$(seq -s, 0 0.01 1 | sed 's/,$//')"; do
		got=$($PSQL -q -c "$SPLIT" -c "SELECT gpu_quantiles($col, ARRAY[$fr]::float8[])::text FROM gs_split" -c "SELECT value FROM gpuselect_status() WHERE name = 'last_path'" | tr '\n' ' ')
		want=$($PSQL -c "SELECT (percentile_disc(ARRAY[$fr]::float8[]) WITHIN GROUP (ORDER BY $col))::text FROM gs_split")
		n=$(echo "$fr" | tr ',' '\n' | wc -l)
		if [ "$got" = "$want service " ]; then pass=$((pass + 1)); echo "ok   - $col, $n fractions: split job = built-in";
		else fail=$((fail + 1)); echo "FAIL - $col, $n fractions: got [$got] want [$want service]"; fi
	done
done
s1=$($PSQL -c "SELECT value FROM gpuselect_status() WHERE name = 'service_split_jobs'")
if [ $((s1 - s0)) -eq 12 ]; then pass=$((pass + 1)); echo "ok   - 12 split jobs counted";
else fail=$((fail + 1)); echo "FAIL - split jobs counted: $((s1 - s0)), want 12"; fi

# timing: one session, the paths alternating; \timing's ms of each run
FR="ARRAY[0.5, 0.9, 0.99]::float8[]"
{
	echo "SET gpuselect.gpu_min_rows = 0; SET max_parallel_workers_per_gather = 0; \\timing on"
	for r in $(seq "$REPS"); do
		printf '%s\n' "\\echo sum" "SELECT sum(f8) FROM gs_split;"
		printf '%s\n' "SET gpuselect.device = gpu; SET gpuselect.test_service_split_keys = 0;" "\\echo service" "SELECT gpu_quantiles(f8, $FR) FROM gs_split;"
		printf '%s\n' "SET gpuselect.test_service_split_keys = 1000;" "\\echo split" "SELECT gpu_quantiles(f8, $FR) FROM gs_split;"
		printf '%s\n' "SET gpuselect.test_service_split_keys = 0; SET gpuselect.device = cpu;" "\\echo cpu" "SELECT gpu_quantiles(f8, $FR) FROM gs_split;"
	done
} | $PSQL 2>&1 | awk '/^(sum|service|split|cpu)$/ {k=$1; take=1} /^Time:/ { if (take) { print k, $2; take=0 } }' > /tmp/split_times.txt
echo
echo "| $ROWS float8 rows, 3 fractions, serial | median ms of $REPS |"
echo "|---|---|"
for k in sum service split cpu; do
	echo "| $k | $(awk -v k=$k '$1 == k {print $2}' /tmp/split_times.txt | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') |"
done
echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
