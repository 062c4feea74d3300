-- gpuselect: parallel plans (partial aggregation, combine, serialize/deserialize)
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET client_min_messages = warning;
-- groups this large may run on a GPU in CUDA builds; a CPU-only build uses the CPU
SET gpuselect.gpu_min_rows = 0;
\set VERBOSITY sqlstate

SELECT setseed(0.5);
CREATE TABLE gs_par AS
SELECT g % 13 AS grp,
       CASE WHEN g % 1000 = 0 THEN NULL
            WHEN g % 777 = 0 THEN 'NaN'::float8
            ELSE (random() * 2e6 - 1e6)::float8 END AS f8,
       (g * 7919) % 100003 AS i4,
       CASE WHEN g % 500 = 0 THEN NULL ELSE g::int8 * 104729 END AS i8,
       (random() * 1000)::int2 AS i2,
       date '2000-01-01' + (g % 9000) AS d,
       timestamp '2000-01-01' + g * interval '1 minute' AS ts
FROM generate_series(1, 200000) g;
ANALYZE gs_par;

CREATE TABLE gs_par_expect AS
SELECT percentile_disc(ARRAY[0, 0.001, 0.1, 1.0/3, 0.5, 0.9, 0.999, 1]) WITHIN GROUP (ORDER BY f8) AS qs_f8,
       percentile_disc(ARRAY[0, 0.001, 0.1, 1.0/3, 0.5, 0.9, 0.999, 1]) WITHIN GROUP (ORDER BY d) AS qs_d,
       percentile_disc(0.37) WITHIN GROUP (ORDER BY i8) AS q_i8,
       percentile_disc(0.37) WITHIN GROUP (ORDER BY ts) AS q_ts,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) AS m_f8,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY i4) AS m_i4,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY i2) AS m_i2
FROM gs_par;

SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;

-- the plans are parallel with partial aggregation (the executor's: the bulk
-- scan's own parallel plans are bulk_scan.sql's; its answers are checked below)
SET gpuselect.bulk_scan = off;
CREATE FUNCTION gs_plan_has(q text, pat text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
  l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF l LIKE '%' || pat || '%' THEN
      RETURN true;
    END IF;
  END LOOP;
  RETURN false;
END $$;
SELECT gs_plan_has('SELECT gpu_quantiles(f8, ARRAY[0.1, 0.5]) FROM gs_par', 'Partial Aggregate') AS quantiles_partial,
       gs_plan_has('SELECT gpu_quantile(i8, 0.37) FROM gs_par', 'Partial Aggregate') AS quantile_partial,
       gs_plan_has('SELECT gpu_median(f8) FROM gs_par', 'Partial Aggregate') AS median_partial,
       gs_plan_has('SELECT gpu_median(f8), gpu_quantile(ts, 0.2) FROM gs_par', 'Gather') AS gather,
       gs_plan_has('SELECT grp, gpu_median(f8) FROM gs_par GROUP BY grp', 'Partial') AS grouped_partial;
EXPLAIN (COSTS OFF) SELECT gpu_quantiles(f8, ARRAY[0.1, 0.5]), gpu_median(f8), gpu_quantile(i4, 0.5) FROM gs_par;

-- and give the built-ins' answers
SELECT (SELECT gpu_quantiles(f8, ARRAY[0, 0.001, 0.1, 1.0/3, 0.5, 0.9, 0.999, 1]) FROM gs_par)::text = qs_f8::text AS qs_f8,
       (SELECT gpu_quantiles(d, ARRAY[0, 0.001, 0.1, 1.0/3, 0.5, 0.9, 0.999, 1]) FROM gs_par) = qs_d AS qs_d,
       (SELECT gpu_quantile(i8, 0.37) FROM gs_par) = q_i8 AS q_i8,
       (SELECT gpu_quantile(ts, 0.37) FROM gs_par) = q_ts AS q_ts,
       (SELECT gpu_median(f8) FROM gs_par)::text = m_f8::text AS m_f8,
       (SELECT gpu_median(i4) FROM gs_par) = m_i4 AS m_i4,
       (SELECT gpu_median(i2) FROM gs_par) = m_i2 AS m_i2
FROM gs_par_expect;

SELECT bool_and(g IS NOT DISTINCT FROM b) AS grouped_median_ok, count(*) AS groups
FROM (SELECT grp, gpu_median(f8) AS g FROM gs_par GROUP BY grp) x
JOIN (SELECT grp, percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) AS b FROM gs_par GROUP BY grp) y USING (grp);
SELECT bool_and(g::text IS NOT DISTINCT FROM b::text) AS grouped_quantiles_ok, count(*) AS groups
FROM (SELECT grp, gpu_quantiles(i4, ARRAY[0.25, NULL, 0.75]) AS g FROM gs_par GROUP BY grp) x
JOIN (SELECT grp, percentile_disc(ARRAY[0.25, NULL, 0.75]) WITHIN GROUP (ORDER BY i4) AS b FROM gs_par GROUP BY grp) y USING (grp);

-- the same answers through the bulk scan's parallel plan (partial states
-- built by each participant's Custom Scan, combined above Gather)
SET gpuselect.bulk_scan = on;
SELECT gs_plan_has('SELECT gpu_median(f8) FROM gs_par', 'Parallel Custom Scan (gpuselect)') AS bulk_plain,
       gs_plan_has('SELECT grp, gpu_median(f8) FROM gs_par GROUP BY grp', 'Parallel Custom Scan (gpuselect)') AS bulk_grouped;
SELECT (SELECT gpu_quantiles(f8, ARRAY[0, 0.001, 0.1, 1.0/3, 0.5, 0.9, 0.999, 1]) FROM gs_par)::text = qs_f8::text AS qs_f8,
       (SELECT gpu_quantiles(d, ARRAY[0, 0.001, 0.1, 1.0/3, 0.5, 0.9, 0.999, 1]) FROM gs_par) = qs_d AS qs_d,
       (SELECT gpu_quantile(i8, 0.37) FROM gs_par) = q_i8 AS q_i8,
       (SELECT gpu_quantile(ts, 0.37) FROM gs_par) = q_ts AS q_ts,
       (SELECT gpu_median(f8) FROM gs_par)::text = m_f8::text AS m_f8,
       (SELECT gpu_median(i4) FROM gs_par) = m_i4 AS m_i4,
       (SELECT gpu_median(i2) FROM gs_par) = m_i2 AS m_i2
FROM gs_par_expect;

SELECT bool_and(g IS NOT DISTINCT FROM b) AS grouped_median_ok, count(*) AS groups
FROM (SELECT grp, gpu_median(f8) AS g FROM gs_par GROUP BY grp) x
JOIN (SELECT grp, percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) AS b FROM gs_par GROUP BY grp) y USING (grp);
SELECT bool_and(g::text IS NOT DISTINCT FROM b::text) AS grouped_quantiles_ok, count(*) AS groups
FROM (SELECT grp, gpu_quantiles(i4, ARRAY[0.25, NULL, 0.75]) AS g FROM gs_par GROUP BY grp) x
JOIN (SELECT grp, percentile_disc(ARRAY[0.25, NULL, 0.75]) WITHIN GROUP (ORDER BY i4) AS b FROM gs_par GROUP BY grp) y USING (grp);

-- a differing fraction is caught across workers as well
SELECT gpu_quantile(f8, CASE WHEN i4 < 50000 THEN 0.1 ELSE 0.2 END) FROM gs_par;

RESET max_parallel_workers_per_gather;
DROP TABLE gs_par, gs_par_expect;
DROP FUNCTION gs_plan_has(text, text);
