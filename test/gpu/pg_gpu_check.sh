#!/bin/bash
# test/gpu/pg_gpu_check.sh — the GPU inside PostgreSQL, on the GPU machine:
# every selection through the server's GPU service (the only process that
# uses CUDA).  Needs a running server with gpuselect (CUDA build) preloaded
# and its service ready (test/gpu/pg_device_run.sh's stage service-on starts one),
# and PG* set (source .gpubundle/pg-up).  Checks, against the built-in
# aggregates on the same data:
#   - large inputs of every type through the service (gpuselect.device = gpu)
#   - approximate mode on the GPU: answer in the data, within its bound,
#     identical to the CPU engine's approximate answer for the same seed
#   - faults inside the CUDA engine (gpuselect.test_service_fault 'oom':
#     device memory for the keys but none for the selection; 'launch': a
#     failed kernel launch): auto falls back with the right answer, gpu
#     raises 55000, the service answers the next job
#   - cancel during a GPU query: 57014, the backend survives, the next
#     query is right
#   - prefetch: the job reads the copies the service made during the scan;
#     off (test hook) it does not; same answers
#   - no leak: the key pool's bytes in use and the service's device bytes
#     return to baseline after 100 repetitions (errors and faults included)
#   - 16 concurrent sessions (pgbench) with correct results
# Ends with "N passed, M failed".
set -u
PSQL="psql -X -At -v ON_ERROR_STOP=1"
pass=0; fail=0
ok()   { pass=$((pass + 1)); echo "ok   - $1"; }
bad()  { fail=$((fail + 1)); echo "FAIL - $1${2:+: $2}"; }
check() { # check NAME EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "expected [$2] got [$3]"; fi
}
q() { printf '%s\n' "$1" | $PSQL -q 2>&1; }  # stdin: backslash commands allowed

GPU="SET gpuselect.device = gpu; SET gpuselect.gpu_min_rows = 0;"
N=${GS_CHECK_ROWS:-4000000}

# (a cpu_test service passes too: the script's own logic can be tried
# without a GPU; its engine faults then act as 'fail')
st=$($PSQL -c "CREATE EXTENSION IF NOT EXISTS gpuselect" -c "SELECT value FROM gpuselect_status() WHERE name = 'service_state'" 2>&1 | tail -1)
[ "$st" = ready ] || { echo "the GPU service is not ready (service_state: $st)"; echo "0 passed, 1 failed"; exit 1; }
$PSQL -c "SELECT name || ': ' || value FROM gpuselect_status() WHERE name IN ('service', 'service_device', 'gpu_available')"
$PSQL -q <<SQL >/dev/null
DROP TABLE IF EXISTS gchk;
SELECT setseed(0.42);
CREATE TABLE gchk AS
SELECT (random() * 60000 - 30000)::int2 AS i2,
       (random() * 4e9 - 2e9)::int4 AS i4,
       (random() * 9e18 - 4.5e18)::int8 AS i8,
       (CASE WHEN g % 1000 = 0 THEN 'NaN' WHEN g % 997 = 0 THEN '-Infinity' WHEN g % 991 = 0 THEN '-0'
             ELSE random() * 2 - 1 END)::float4 AS f4,
       (CASE WHEN g % 1000 = 0 THEN 'NaN' WHEN g % 997 = 0 THEN 'Infinity' WHEN g % 991 = 0 THEN '-0'
             ELSE exp(random() * 40 - 20) * sign(random() - 0.5) END)::float8 AS f8,
       date '2000-01-01' + (random() * 9000)::int AS d,
       timestamp '2020-01-01' + random() * interval '1000 days' AS ts,
       timestamptz '2020-01-01 UTC' + random() * interval '1000 days' AS tstz,
       CASE WHEN g % 50 = 0 THEN NULL ELSE floor(random() * 16) END AS few
FROM generate_series(1, $N) g;
ANALYZE gchk;
SQL

fr="array[0, 0.001, 0.01, 0.07, 0.1, 0.25, 1/3.0, 0.5, 0.9, 0.99, 0.999, 1]::float8[]"
for col in i2 i4 i8 f4 f8 d ts tstz few; do
	r=$(q "$GPU SET max_parallel_workers_per_gather = 0;
		SELECT (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY $col))::text
		     = (percentile_disc($fr) WITHIN GROUP (ORDER BY $col))::text
		   AND (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY $col DESC))::text
		     = (percentile_disc($fr) WITHIN GROUP (ORDER BY $col DESC))::text
		   AND gpu_quantiles($col, $fr)::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY $col))::text
		FROM gchk;
		SELECT value FROM gpuselect_status() WHERE name = 'last_path';")
	check "gpu disc/quantiles $col = built-in" "$(printf 't\nservice')" "$(echo "$r" | grep -v '^SET$')"
done
for col in i2 i4 i8 f4 f8 few; do
	r=$(q "$GPU SET max_parallel_workers_per_gather = 0;
		SELECT (gpu_percentile_cont($fr) WITHIN GROUP (ORDER BY $col))::text
		     = (percentile_cont($fr) WITHIN GROUP (ORDER BY $col))::text
		   AND gpu_median($col)::text = (percentile_cont(0.5) WITHIN GROUP (ORDER BY $col))::text
		FROM gchk;")
	check "gpu cont/median $col = built-in" "t" "$(echo "$r" | grep -v '^SET$')"
done

# many fractions (20000 > the engine's gs_sort_path_policy threshold): the
# GPU sorts the whole input once; f8 with 16384+ ranks had made its
# selection fail to converge (issue 18 item 7)
p="(SELECT array_agg(i / 20000.0 ORDER BY i)::float8[] FROM generate_series(0, 20000) i)"
for col in f8 i4; do
	r=$(q "$GPU SET max_parallel_workers_per_gather = 0;
		SELECT (gpu_percentile_disc($p) WITHIN GROUP (ORDER BY $col))::text
		     = (percentile_disc($p) WITHIN GROUP (ORDER BY $col))::text
		   AND (gpu_percentile_cont($p) WITHIN GROUP (ORDER BY $col))::text
		     = (percentile_cont($p) WITHIN GROUP (ORDER BY $col))::text
		FROM gchk;
		SELECT value FROM gpuselect_status() WHERE name = 'last_path';")
	check "gpu 20001 fractions $col = built-in" "$(printf 't\nservice')" "$(echo "$r" | grep -v '^SET$')"
done

# parallel plan: workers write their keys into key-pool chunks leased for the
# leader, which hands them to the service in place
r=$(q "$GPU SET max_parallel_workers_per_gather = 4; SET parallel_setup_cost = 0; SET min_parallel_table_scan_size = 0;
	SELECT gpu_quantiles(f8, $fr)::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY f8))::text FROM gchk;
	SELECT value FROM gpuselect_status() WHERE name = 'last_path';")
check "parallel gpu_quantiles = built-in, selected by the service" "$(printf 't\nservice')" "$(echo "$r" | grep -v '^SET$')"

# prefetch: the service copies the scan's full key-pool chunks to the device
# while the scan goes on, and the job reads those copies (device to device);
# with this session's prefetch off (a test hook) it copies every key at the
# job.  Same answers; the job's host bytes and copy time, both ways, printed.
pf="SELECT string_agg(name || '=' || value, ' ' ORDER BY name) FROM gpuselect_status()
	WHERE name IN ('last_bytes_copied', 'last_copy_ms')"
r=$(q "$GPU SET max_parallel_workers_per_gather = 0;
	SELECT value::bigint AS u0 FROM gpuselect_status() WHERE name = 'service_prefetch_used_bytes' \gset
	SELECT (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY f8))::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY f8))::text FROM gchk;
	$pf;
	SELECT value::bigint > :u0 FROM gpuselect_status() WHERE name = 'service_prefetch_used_bytes';
	SET gpuselect.test_service_prefetch = off;
	SELECT value::bigint AS u1 FROM gpuselect_status() WHERE name = 'service_prefetch_used_bytes' \gset
	SELECT (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY f8))::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY f8))::text FROM gchk;
	$pf;
	SELECT value::bigint = :u1 FROM gpuselect_status() WHERE name = 'service_prefetch_used_bytes';")
check "prefetch on, then off: right answers, copies read only when on" "$(printf 't
t
t
t')" "$(echo "$r" | grep -E '^[tf]$')"
echo "    (prefetch on: $(echo "$r" | grep last_ | head -1); off: $(echo "$r" | grep last_ | tail -1))"

# approximate: GPU and CPU engines draw the same sample, so give the same answers
r=$(q "SET gpuselect.approximate = on; SET gpuselect.gpu_min_rows = 0; SET max_parallel_workers_per_gather = 0;
	CREATE TEMP TABLE a AS SELECT 1;
	SET gpuselect.device = gpu;
	SELECT gpu_quantiles(f8, $fr)::text AS g FROM gchk \gset
	SELECT value::bigint AS gb FROM gpuselect_status() WHERE name = 'last_rank_bound' \gset
	SET gpuselect.device = cpu;
	SELECT gpu_quantiles(f8, $fr)::text AS c FROM gchk \gset
	SELECT (:'g' = :'c') AS same, (:gb <= $N / 1000) AS bounded;" )
check "approximate: GPU = CPU for the same seed, bound <= 0.1% of n" "t|t" "$(echo "$r" | tail -1)"

# faults inside the CUDA engine: auto falls back with the right answer, gpu
# is a clean 55000, and the service answers the next job
for f in oom launch; do
	r=$(q "SET gpuselect.device = auto; SET gpuselect.gpu_min_rows = 0; SET gpuselect.test_service_fault = $f;
		SELECT gpu_quantiles(i8, $fr) = percentile_disc($fr) WITHIN GROUP (ORDER BY i8) FROM gchk;
		SELECT value LIKE 'cpu (fallback: GPU service:%' FROM gpuselect_status() WHERE name = 'last_path';
		RESET gpuselect.test_service_fault;
		SELECT gpu_quantiles(i8, $fr) = percentile_disc($fr) WITHIN GROUP (ORDER BY i8) FROM gchk;
		SELECT value FROM gpuselect_status() WHERE name = 'last_path';")
	check "engine fault $f in auto: CPU fallback, right answer, the service next time" \
		"$(printf 't\nt\nt\nservice')" "$(echo "$r" | grep -E '^([tf]|service)$')"
	r=$(q "SET gpuselect.device = gpu; SET gpuselect.gpu_min_rows = 0; SET gpuselect.test_service_fault = $f;
		\set VERBOSITY sqlstate
		SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) FROM gchk;")
	check "engine fault $f in gpu mode: ERROR 55000" "ERROR:  55000" "$(echo "$r" | grep ERROR)"
done

# cancel, then the same backend goes on
r=$(q "$GPU SET max_parallel_workers_per_gather = 0; SET statement_timeout = '300ms';
	\set VERBOSITY sqlstate
	\set ON_ERROR_STOP off
	SELECT gpu_quantiles(f8, $fr) FROM gchk, generate_series(1, 8);
	RESET statement_timeout;
	SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) = percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) FROM gchk;")
check "cancel: 57014, backend survives, next answer right" "$(printf 'ERROR:  57014\nt')" "$(echo "$r" | grep -E '^(ERROR|[tf]$)')"

# leaks: 100 repetitions, errors and engine faults included, in one session;
# measured once the service has dropped the prefetched copies of the last
# query's chunks (it does so right after they are freed) and its lane has
# sampled the device memory since
settle="DO \$\$ BEGIN
	  FOR i IN 1..100 LOOP
	    EXIT WHEN (SELECT value::bigint FROM gpuselect_status() WHERE name = 'service_prefetch_resident_bytes') = 0;
	    PERFORM pg_sleep(0.05);
	  END LOOP;
	  PERFORM pg_sleep(1.2);
	END \$\$;"
mem="SELECT string_agg(value, ',' ORDER BY name) FROM gpuselect_status()
	 WHERE name IN ('key_pool_used_bytes', 'service_device_bytes', 'service_slots_in_use')"
r=$(q "$GPU SET max_parallel_workers_per_gather = 0;
	SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY i4) FROM gchk;
	$settle
	$mem \gset before_
	DO \$\$
	DECLARE v float8; k int;
	BEGIN
	  FOR k IN 1..100 LOOP
	    SELECT gpu_percentile_cont(0.3) WITHIN GROUP (ORDER BY f8) INTO v FROM gchk WHERE i4 > k * 1000;
	    BEGIN
	      SELECT gpu_percentile_disc(1.5) WITHIN GROUP (ORDER BY f8) INTO v FROM gchk;
	    EXCEPTION WHEN numeric_value_out_of_range THEN NULL;
	    END;
	    IF k % 10 = 0 THEN
	      BEGIN
	        PERFORM set_config('gpuselect.test_service_fault', CASE WHEN k % 20 = 0 THEN 'oom' ELSE 'launch' END, true);
	        SELECT gpu_percentile_cont(0.3) WITHIN GROUP (ORDER BY f8) INTO v FROM gchk;
	      EXCEPTION WHEN OTHERS THEN NULL;
	      END;
	      PERFORM set_config('gpuselect.test_service_fault', 'none', true);
	    END IF;
	  END LOOP;
	END \$\$;
	$settle
	SELECT (string_agg(value, ',' ORDER BY name) = :'before_string_agg')::text FROM gpuselect_status()
	 WHERE name IN ('key_pool_used_bytes', 'service_device_bytes', 'service_slots_in_use');
	SELECT :'before_string_agg';")
check "no key-pool/device leak after 100 repetitions" "true" "$(echo "$r" | grep -E '^(true|false)$')"
echo "    (key pool used, device bytes, slots in use at baseline: $(echo "$r" | tail -1))"

# 16 concurrent sessions
$PSQL -q -c "DROP TABLE IF EXISTS gchk_expect; CREATE TABLE gchk_expect AS
	SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) AS m,
	       percentile_disc($fr) WITHIN GROUP (ORDER BY i8) AS q FROM gchk;" >/dev/null
cat > /tmp/gs_pgbench.sql <<SQL
SET gpuselect.device = gpu;
SET gpuselect.gpu_min_rows = 0;
SET max_parallel_workers_per_gather = 0;
SELECT (SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) FROM gchk) = (SELECT m FROM gchk_expect)
   AND (SELECT gpu_quantiles(i8, $fr) FROM gchk) = (SELECT q FROM gchk_expect) AS ok \gset
\if :ok
\else
SELECT 1 / 0;
\endif
SQL
out=$(pgbench -n -c 16 -j 16 -t 3 -f /tmp/gs_pgbench.sql 2>&1)
if echo "$out" | grep -q 'number of transactions actually processed: 48/48' && ! echo "$out" | grep -qi 'error'; then
	ok "16 concurrent GPU sessions, correct results ($(echo "$out" | grep -E '^latency average' ))"
else
	bad "16 concurrent GPU sessions" "$(echo "$out" | tail -15)"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
