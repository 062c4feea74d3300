#!/bin/bash
# test/gpu/pg_gpu_check.sh — the GPU path inside PostgreSQL, on the GPU machine.
# Needs a running server with gpuselect (CUDA build) installed and PG* set
# (source .gpubundle/pg-up; make USE_CUDA=1 install).  Checks, against the
# built-in aggregates on the same data:
#   - large inputs of every type through the GPU (gpuselect.device = gpu)
#   - approximate mode on the GPU: answer in the data, within its bound,
#     identical to the CPU engine's approximate answer for the same seed
#   - faults: device out of memory (test hook), failing launch (test hook):
#     auto falls back with a NOTICE and the right answer, gpu raises ERROR
#   - cancel during a GPU query: 57014, the backend survives, the next
#     query is right
#   - no leak: device and pinned bytes in use return to baseline after 100
#     repetitions (errors included); the pool of page-locked chunks is
#     reused and held to gpuselect.pinned_pool_size
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

$PSQL -q <<SQL >/dev/null
CREATE EXTENSION IF NOT EXISTS gpuselect;
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
	check "gpu disc/quantiles $col = built-in" "$(printf 't\ngpu')" "$(echo "$r" | grep -v '^SET$')"
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
	check "gpu 20001 fractions $col = built-in" "$(printf 't\ngpu')" "$(echo "$r" | grep -v '^SET$')"
done

# parallel plan: workers fill partial states on the CPU side, the leader selects on the GPU
r=$(q "$GPU SET max_parallel_workers_per_gather = 4; SET parallel_setup_cost = 0; SET min_parallel_table_scan_size = 0;
	SELECT gpu_quantiles(f8, $fr)::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY f8))::text FROM gchk;
	SELECT value FROM gpuselect_status() WHERE name = 'last_path';")
check "parallel gpu_quantiles = built-in, selected on the GPU" "$(printf 't\ngpu')" "$(echo "$r" | grep -v '^SET$')"

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

# faults: out of device memory
r=$(q "SET gpuselect.device = auto; SET gpuselect.gpu_min_rows = 0; SET gpuselect.test_device_memory_cap_mb = 1;
	SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) = percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) FROM gchk;
	SELECT value LIKE 'cpu (fallback%' FROM gpuselect_status() WHERE name = 'last_path';")
check "device OOM in auto: NOTICE, CPU fallback, right answer" "$(printf 't\nt')" "$(echo "$r" | grep -E '^[tf]$')"
echo "$r" | grep -q 'NOTICE:  gpuselect: using the CPU path' && ok "device OOM NOTICE shown" || bad "device OOM NOTICE shown" "$r"
r=$(q "SET gpuselect.device = gpu; SET gpuselect.gpu_min_rows = 0; SET gpuselect.test_device_memory_cap_mb = 1;
	\set VERBOSITY sqlstate
	SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) FROM gchk;")
check "device OOM in gpu mode: ERROR 53200" "ERROR:  53200" "$(echo "$r" | grep ERROR)"

# faults: failing launch
r=$(q "SET gpuselect.device = auto; SET gpuselect.gpu_min_rows = 0; SET gpuselect.test_fail_launches = 1;
	SELECT gpu_quantiles(i8, $fr) = percentile_disc($fr) WITHIN GROUP (ORDER BY i8) FROM gchk;
	SELECT value LIKE 'cpu (fallback%' FROM gpuselect_status() WHERE name = 'last_path';
	SELECT gpu_quantiles(i8, $fr) = percentile_disc($fr) WITHIN GROUP (ORDER BY i8) FROM gchk;
	SELECT value FROM gpuselect_status() WHERE name = 'last_path';")
check "failing launch in auto: CPU fallback, right answer, GPU used again next time" "$(printf 't\nt\nt\ngpu')" "$(echo "$r" | grep -E '^([tf]|gpu)$')"
r=$(q "SET gpuselect.device = gpu; SET gpuselect.gpu_min_rows = 0; SET gpuselect.test_fail_launches = 1;
	\set VERBOSITY sqlstate
	SELECT gpu_quantiles(i8, $fr) FROM gchk;")
echo "$r" | grep -q '^ERROR:' && ok "failing launch in gpu mode: clean ERROR" || bad "failing launch in gpu mode: clean ERROR" "$r"

# cancel, then the same backend goes on
r=$(q "$GPU SET max_parallel_workers_per_gather = 0; SET statement_timeout = '300ms';
	\set VERBOSITY sqlstate
	\set ON_ERROR_STOP off
	SELECT gpu_quantiles(f8, $fr) FROM gchk, generate_series(1, 8);
	RESET statement_timeout;
	SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) = percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) FROM gchk;")
check "cancel: 57014, backend survives, next answer right" "$(printf 'ERROR:  57014\nt')" "$(echo "$r" | grep -E '^(ERROR|[tf]$)')"

# leaks: 100 repetitions, errors included, in one session
r=$(q "$GPU SET max_parallel_workers_per_gather = 0;
	SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY i4) FROM gchk;
	SELECT string_agg(value, ',' ORDER BY name) AS before FROM gpuselect_status()
	 WHERE name IN ('gpu_device_bytes_in_use', 'gpu_pinned_bytes_in_use') \gset
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
	        PERFORM set_config('gpuselect.test_fail_launches', '1', true);
	        SELECT gpu_percentile_cont(0.3) WITHIN GROUP (ORDER BY f8) INTO v FROM gchk;
	      EXCEPTION WHEN OTHERS THEN NULL;
	      END;
	    END IF;
	  END LOOP;
	END \$\$;
	SELECT string_agg(value, ',' ORDER BY name) = :'before' FROM gpuselect_status()
	 WHERE name IN ('gpu_device_bytes_in_use', 'gpu_pinned_bytes_in_use');
	SELECT :'before';")
check "no device/pinned leak after 100 repetitions" "t" "$(echo "$r" | grep -E '^[tf]$')"
echo "    (device,pinned bytes in use at baseline: $(echo "$r" | tail -1))"

# the pool of page-locked chunks: filled by a query, reused by the next (no
# new chunk is registered: in-use bytes come back from it), held to
# gpuselect.pinned_pool_size, emptied by 0
pool() { echo "SELECT value::bigint AS $1 FROM gpuselect_status() WHERE name = 'gpu_pinned_pool_bytes' \\gset"; }
same() { echo "SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY $1) = percentile_disc(0.5) WITHIN GROUP (ORDER BY $1) AS $2 FROM gchk \\gset"; }
r=$(q "$GPU SET max_parallel_workers_per_gather = 0;
	$(same f8 a1)
	$(pool p1)
	$(same f8 a2)
	$(pool p2)
	SET gpuselect.pinned_pool_size = '8MB';
	$(same i4 a3)
	$(pool p3)
	SET gpuselect.pinned_pool_size = 0;
	$(same i4 a4)
	$(pool p4)
	SELECT concat_ws(' ', :'a1', :'a2', :'a3', :'a4', :p1 > 0, :p2 = :p1, :p3 <= 8 * 1024 * 1024, :p4, :p1, :p2, :p3);" | tail -1)
set -- $r
check "pinned pool: filled by a query, reused by the next, right answers" "t t t t" "${1:-} ${2:-} ${5:-} ${6:-}"
check "pinned pool: held to pinned_pool_size, emptied by 0" "t t t 0" "${3:-} ${4:-} ${7:-} ${8:-}"
echo "    (pool bytes: after query 1 ${9:-?}, after query 2 ${10:-?}, at 8MB ${11:-?}, at 0 ${8:-?})"

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
