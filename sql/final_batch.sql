-- gpuselect: a hashed aggregation's groups selected all at once on helper
-- threads (src/aggs/final_batch.c): the same answers as the built-ins and as one
-- group at a time, for every final function, NULL and per-group fractions,
-- DESC, states shared by two aggregates, a spilled hash aggregate, a
-- cancel inside a batch; the plans it is costed into.
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET client_min_messages = warning;
SET gpuselect.device = 'cpu';	-- batches take CPU groups only
SET jit = off;
-- the library now, not inside fb_answers below: loaded by a statement while
-- accelerate_builtins is on, it would warn that earlier statements were
-- not rewritten (sql/preload.sql tests that)
LOAD 'gpuselect';
\set VERBOSITY sqlstate

SELECT setseed(0.25);
CREATE TABLE fb AS
SELECT g % 40 AS grp,
       CASE WHEN g % 997 = 0 THEN NULL
            WHEN g % 1999 = 0 THEN 'NaN'::float8
            WHEN g % 3001 = 0 THEN '-0'::float8
            ELSE (random() * 2e6 - 1e6)::float8 END AS f8,
       (random() * 30000)::int4 AS i4,
       (random() * 3)::int2 AS i2,
       timestamp '2026-01-01' + random() * interval '30 days' AS ts
FROM generate_series(1, 120000) g;
ANALYZE fb;

-- one query of every shape, run with the batch off (0) and on (3 threads)
CREATE FUNCTION fb_answers(threads int) RETURNS TABLE (q text, md5 text)
LANGUAGE plpgsql AS $$
DECLARE
  shapes text[] := ARRAY[
    'SELECT grp, gpu_median(f8) FROM fb GROUP BY grp',
    'SELECT grp, gpu_quantile(i4, 0.9) FROM fb GROUP BY grp',
    'SELECT grp, gpu_quantiles(f8, ARRAY[0, 0.01, 0.5, NULL, 0.99, 1]) FROM fb GROUP BY grp',
    'SELECT grp, gpu_quantile(f8, grp / 40.0) FROM fb GROUP BY grp',
    'SELECT grp, gpu_quantile(f8, CASE WHEN grp = 7 THEN NULL ELSE 0.3 END) FROM fb GROUP BY grp',
    'SELECT grp, percentile_cont(0.75) WITHIN GROUP (ORDER BY f8) FROM fb GROUP BY grp',
    'SELECT grp, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY f8 DESC) FROM fb GROUP BY grp',
    'SELECT grp, percentile_disc(ARRAY[0.1, 0.5]) WITHIN GROUP (ORDER BY ts) FROM fb GROUP BY grp',
    'SELECT grp, percentile_disc(0.5) WITHIN GROUP (ORDER BY i2), percentile_cont(0.5) WITHIN GROUP (ORDER BY i2) FROM fb GROUP BY grp',
    'SELECT grp, percentile_disc(0.5) WITHIN GROUP (ORDER BY f8), percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM fb GROUP BY grp',
    'SELECT grp, percentile_cont(grp / 80.0) WITHIN GROUP (ORDER BY i4) FROM fb GROUP BY grp HAVING count(*) > 0',
    'SELECT grp % 4, i2, gpu_median(i4) FROM fb GROUP BY GROUPING SETS ((grp % 4), (i2), ())'
  ];
  s text;
BEGIN
  EXECUTE format('SET LOCAL gpuselect.finalize_threads = %s', threads);
  SET LOCAL gpuselect.accelerate_builtins = on;
  SET LOCAL enable_sort = off;			-- hashed, serial
  SET LOCAL max_parallel_workers_per_gather = 0;
  FOREACH s IN ARRAY shapes LOOP
    q := s;
    EXECUTE format('SELECT md5(string_agg(r::text, '','' ORDER BY r::text)) FROM (%s) r', s) INTO md5;
    RETURN NEXT;
  END LOOP;
END $$;

-- the built-ins (and gpu_* on one group at a time, which other suites
-- compare with them)
CREATE TEMP TABLE fb_off AS SELECT * FROM fb_answers(0);
SELECT name, value::int8 AS batches_before FROM gpuselect_status() WHERE name = 'final_batches' \gset
CREATE TEMP TABLE fb_on AS SELECT * FROM fb_answers(3);
SELECT count(*) AS shapes, count(*) FILTER (WHERE fb_on.md5 IS DISTINCT FROM fb_off.md5) AS differ
FROM fb_on JOIN fb_off USING (q);
-- every shape but the grouping sets one (sorted and hashed sets mixed) batched
SELECT (value::int8 - :batches_before) >= 11 AS batched FROM gpuselect_status() WHERE name = 'final_batches';
SELECT value AS last_path FROM gpuselect_status() WHERE name = 'last_path';
-- the helper threads are gone once a batch returns (Linux: the backend's
-- own thread count)
CREATE FUNCTION fb_threads() RETURNS int LANGUAGE sql AS
$$ SELECT (regexp_match(pg_read_file('/proc/self/status'), 'Threads:\s+(\d+)'))[1]::int $$;
SELECT fb_threads() AS threads_after_batches;

-- gpu_percentile_* (ordered-set: rewritten to plain aggregates, batched)
-- against the built-ins, batch on
SET gpuselect.finalize_threads = 3;
SET enable_sort = off;
SET max_parallel_workers_per_gather = 0;
SELECT count(*) AS differ FROM
  (SELECT grp, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY f8) AS p,
          percentile_disc(0.5) WITHIN GROUP (ORDER BY i4 DESC) AS d FROM fb GROUP BY grp) a
  FULL JOIN (SELECT grp, gpu_percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY f8) AS p,
                    gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY i4 DESC) AS d FROM fb GROUP BY grp) b
  USING (grp)
WHERE a.p IS DISTINCT FROM b.p OR a.d IS DISTINCT FROM b.d;
RESET enable_sort;

-- a bad fraction in one group: the built-in's error, batch on or off
SET gpuselect.finalize_threads = 3;
SELECT grp, percentile_disc(CASE WHEN grp = 9 THEN 2 ELSE 0.5 END) WITHIN GROUP (ORDER BY f8) FROM fb GROUP BY grp;
SET gpuselect.accelerate_builtins = off;	-- the built-in from here on
SELECT grp, percentile_disc(CASE WHEN grp = 9 THEN 2 ELSE 0.5 END) WITHIN GROUP (ORDER BY f8) FROM fb GROUP BY grp;

-- a hash aggregate that spills into several batches: each batch of groups
-- is selected at once (the registry goes with each batch's hash table).
-- The groups come one after another (a hash table spills new groups, not
-- growing ones), two of 40k keys fit the 1MB of each batch
CREATE TEMP TABLE fb_spill AS
SELECT g / 40000 AS k, (random() * 1e6)::float8 AS f8 FROM generate_series(0, 479999) g;
SELECT value::int8 AS batches_before FROM gpuselect_status() WHERE name = 'final_batches' \gset
SET work_mem = '1MB';
SET hash_mem_multiplier = 1;
-- the executor's hashed aggregation, which spills (the bulk scan's serial
-- states stay out of its hash table)
SET gpuselect.bulk_scan = off;
SET enable_sort = off;
SET max_parallel_workers_per_gather = 0;
SELECT count(*) AS differ FROM
  (SELECT k, gpu_quantiles(f8, ARRAY[0.25, 0.75]) AS p FROM fb_spill GROUP BY 1) a
  FULL JOIN (SELECT k, percentile_disc(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY f8) AS p
             FROM fb_spill GROUP BY 1) b USING (k)
WHERE a.p IS DISTINCT FROM b.p;
SELECT value::int8 - :batches_before >= 2 AS several_batches FROM gpuselect_status() WHERE name = 'final_batches';
RESET work_mem;
RESET gpuselect.bulk_scan;
RESET hash_mem_multiplier;

-- more groups than one engine call takes (4096): the batch goes in slices;
-- groups under 256 keys go one by one
CREATE TEMP TABLE fb_many AS
SELECT g % 4100 AS k, (random() * 1e6)::float8 AS f8 FROM generate_series(1, 4100 * 256) g
UNION ALL SELECT 5000 + g % 7, g FROM generate_series(1, 70) g;
SELECT value::int8 AS groups_before FROM gpuselect_status() WHERE name = 'final_batch_groups' \gset
SELECT count(*) AS differ FROM
  (SELECT k, gpu_quantile(f8, 0.5) AS p FROM fb_many GROUP BY 1) a
  FULL JOIN (SELECT k, percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) AS p FROM fb_many GROUP BY 1) b
  USING (k)
WHERE a.p IS DISTINCT FROM b.p;
SELECT value::int8 - :groups_before AS batched_groups FROM gpuselect_status() WHERE name = 'final_batch_groups';

-- a cancel inside a batch (the backend polls before its first group): the
-- statement's ERROR, no batch counted, then the session goes on
SELECT value::int8 AS batches_before FROM gpuselect_status() WHERE name = 'final_batches' \gset
SET gpuselect.test_cancel_at_poll = 1;
SELECT grp, gpu_median(f8) FROM fb GROUP BY grp;
RESET gpuselect.test_cancel_at_poll;
SELECT value::int8 = :batches_before AS none_counted FROM gpuselect_status() WHERE name = 'final_batches';
SELECT fb_threads() AS threads_after_cancel;
-- two harmless interrupts (memory-context log requests) first: the batch
-- lets the groups under way finish, absorbs each with no helper alive and
-- goes on with the rest; the third poll's cancel ends it
SELECT value::int8 AS absorbed_before FROM gpuselect_status() WHERE name = 'interrupts_absorbed' \gset
SET gpuselect.test_cancel_at_poll = 3;
SELECT grp, gpu_median(f8) FROM fb GROUP BY grp;
RESET gpuselect.test_cancel_at_poll;
SELECT value::int8 - :absorbed_before AS absorbed FROM gpuselect_status() WHERE name = 'interrupts_absorbed';
SELECT fb_threads() AS threads_after_drain;
SELECT count(m) AS groups FROM (SELECT grp, gpu_median(f8) AS m FROM fb GROUP BY grp) r;
SELECT value::int8 = :batches_before + 1 AS then_one FROM gpuselect_status() WHERE name = 'final_batches';

-- any role may ask for 64 helpers and raise max_parallel_workers: a batch
-- still gets no more than the superuser's gpuselect.max_finalize_threads
-- (default 8) and the server's parallel-worker budget (max_worker_processes)
CREATE ROLE regress_fb_plain;
GRANT SELECT ON fb TO regress_fb_plain;
SET ROLE regress_fb_plain;
SET gpuselect.finalize_threads = 64;
SET max_parallel_workers = 1024;
SELECT count(m) AS groups FROM (SELECT grp, gpu_median(f8) AS m FROM fb GROUP BY grp) r;
SELECT value::int = least(8, current_setting('max_worker_processes')::int) AS capped
FROM gpuselect_status() WHERE name = 'final_batch_threads';
SET gpuselect.max_finalize_threads = 64;
RESET ROLE;
SET gpuselect.max_finalize_threads = 2;
SET ROLE regress_fb_plain;
SELECT count(m) AS groups FROM (SELECT grp, gpu_median(f8) AS m FROM fb GROUP BY grp) r;
SELECT value AS threads FROM gpuselect_status() WHERE name = 'final_batch_threads';
RESET ROLE;
RESET gpuselect.max_finalize_threads;
RESET max_parallel_workers;
SET gpuselect.finalize_threads = 3;
REVOKE SELECT ON fb FROM regress_fb_plain;
DROP ROLE regress_fb_plain;

-- a window aggregate is never batched (its states grow after a final call)
SELECT count(DISTINCT m) > 1 AS moving FROM
  (SELECT gpu_median(f8) OVER (PARTITION BY grp ORDER BY i4 ROWS BETWEEN 100 PRECEDING AND CURRENT ROW) AS m
   FROM fb WHERE grp < 2) w;
RESET enable_sort;

-- the plans: hashed, serial and parallel, when a batch can run; as before
-- when it cannot (finalize_threads = 0, or value types)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET gpuselect.finalize_threads = -1;
SET gpuselect.accelerate_builtins = on;
EXPLAIN (COSTS OFF) SELECT grp, percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM fb GROUP BY grp;
SET gpuselect.finalize_threads = 0;
EXPLAIN (COSTS OFF) SELECT grp, percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM fb GROUP BY grp;
RESET gpuselect.finalize_threads;
EXPLAIN (COSTS OFF) SELECT grp, percentile_disc(0.5) WITHIN GROUP (ORDER BY f8::numeric) FROM fb GROUP BY grp;
-- parallel answers with the batch in the leader, against the built-in
SET gpuselect.accelerate_builtins = off;
CREATE TEMP TABLE fb_builtin AS
SELECT grp, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY f8) AS p FROM fb GROUP BY grp;
SET gpuselect.accelerate_builtins = on;
SELECT count(*) AS differ FROM fb_builtin a
  FULL JOIN (SELECT grp, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY f8) AS p
             FROM fb GROUP BY grp) b USING (grp)
WHERE a.p IS DISTINCT FROM b.p;
