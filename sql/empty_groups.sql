-- gpuselect: plain aggregates over no rows.  percentile_disc(p) validates
-- p in its final function even when there are no rows; gpu_quantile(x, p)
-- sees p only in rows, so over no rows it validates p when p is a constant
-- (as the built-in: same SQLSTATE and message).  Array forms do not look at
-- the array when there are no rows, in both.
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;

-- a query's value, or its error as SQLSTATE and message
CREATE FUNCTION pg_temp.outcome(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	EXECUTE q INTO r;
	RETURN coalesce('value ' || r, 'NULL');
EXCEPTION WHEN others THEN
	RETURN 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
END
$$;

CREATE TABLE gs_empty (x float8, i int4, t timestamptz);
CREATE TABLE gs_nulls AS SELECT NULL::float8 AS x, NULL::int4 AS i, NULL::timestamptz AS t FROM generate_series(1, 3);

-- single fraction: no rows, all-NULL rows, GROUP BY (), each type
SELECT src, col, p, g AS gpuselect, b AS builtin, g = b AS same
FROM (SELECT src, col, p,
             pg_temp.outcome(format('SELECT gpu_quantile(%s, (%s)::float8)::text FROM %s', col, p, src)) AS g,
             pg_temp.outcome(format('SELECT (percentile_disc((%s)::float8) WITHIN GROUP (ORDER BY %s))::text FROM %s', p, col, src)) AS b
      FROM unnest(ARRAY['gs_empty', 'gs_nulls', 'gs_empty GROUP BY ()']) src,
           unnest(ARRAY['x', 'i', 't']) col,
           unnest(ARRAY['1.5', '-0.1', '''NaN''', '''-Infinity''', 'NULL', '0', '0.5', '1', '1.0 / 0.5']) p) s
ORDER BY src, col, p;

-- fraction arrays: never looked at without rows, in either
SELECT src, p, g AS gpuselect, b AS builtin, g = b AS same
FROM (SELECT src, p,
             pg_temp.outcome(format('SELECT gpu_quantiles(x, %s)::text FROM %s', p, src)) AS g,
             pg_temp.outcome(format('SELECT (percentile_disc(%s::float8[]) WITHIN GROUP (ORDER BY x))::text FROM %s', p, src)) AS b
      FROM unnest(ARRAY['gs_empty', 'gs_nulls']) src,
           unnest(ARRAY['''{1.5}''', '''{NULL}''', '''{{0.5,2},{0,1}}''', '''{}''', 'NULL', '''{0.5}''']) p) s
ORDER BY src, p;

-- a parallel plan over no rows (Finalize Aggregate -> Gather -> Partial Aggregate)
CREATE TABLE gs_par AS SELECT g::float8 AS x FROM generate_series(1, 200000) g;
ANALYZE gs_par;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (COSTS OFF) SELECT gpu_quantile(x, 1.5) FROM gs_par WHERE x < 0;
SELECT p, g AS gpuselect, b AS builtin, g = b AS same
FROM (SELECT p, pg_temp.outcome(format('SELECT gpu_quantile(x, %s)::text FROM gs_par WHERE x < 0', p)) AS g,
             pg_temp.outcome(format('SELECT (percentile_disc(%s) WITHIN GROUP (ORDER BY x))::text FROM gs_par WHERE x < 0', p)) AS b
      FROM unnest(ARRAY['1.5', '''NaN''', 'NULL', '0.5']) p) s
ORDER BY p;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- a constant parameter of a custom plan is a constant too
PREPARE gs_q(float8) AS SELECT gpu_quantile(x, $1) FROM gs_empty;
SET plan_cache_mode = force_custom_plan;
SELECT pg_temp.outcome('EXECUTE gs_q(1.5)') AS custom_plan;
-- a fraction that is not a constant cannot be seen without a row: NULL,
-- where the built-in (which evaluates its direct argument) raises
SET plan_cache_mode = force_generic_plan;
SELECT pg_temp.outcome('EXECUTE gs_q(1.5)') AS generic_plan;
RESET plan_cache_mode;
SELECT pg_temp.outcome('SELECT gpu_quantile(x, (SELECT 1.5::float8))::text FROM gs_empty') AS subquery,
       pg_temp.outcome('SELECT (percentile_disc((SELECT 1.5::float8)) WITHIN GROUP (ORDER BY x))::text FROM gs_empty') AS builtin;
DEALLOCATE gs_q;

DROP TABLE gs_empty, gs_nulls, gs_par;
