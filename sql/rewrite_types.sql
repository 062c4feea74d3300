-- gpuselect: the planner rewrite over the comparison types (numeric, text,
-- varchar, uuid, interval, a domain): percentile_disc over any of them,
-- percentile_cont over interval (and numeric through the built-in's
-- implicit cast to float8).  As in `rewrite`, every shape runs three ways:
-- the built-in with gpuselect.accelerate_builtins off (the reference), on,
-- and gpu_percentile_*; results (or SQLSTATE and message) must be the same.
-- Values that compare equal are identical in bytes here (numeric of one
-- scale, intervals of seconds below a day, text under "C"); ties of equal
-- values that differ in bytes are compared by value at the end.  A non-C
-- collation: rewrite_collation (ICU).
CREATE EXTENSION IF NOT EXISTS gpuselect;
LOAD 'gpuselect';
SET extra_float_digits = 0;
SET client_min_messages = warning;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;

-- a query's rows as one text (or its error), with the setting given
CREATE FUNCTION pg_temp.rw_run(q text, accel bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	PERFORM set_config('gpuselect.accelerate_builtins', accel::text, true);
	EXECUTE 'SELECT coalesce(string_agg(r::text, '' | '' ORDER BY r::text), ''<no rows>'') FROM (' || q || ') r'
		INTO r;
	RETURN r;
EXCEPTION WHEN others THEN
	RETURN 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
END
$$;

-- did the planner rewrite q (with the setting given)?
CREATE FUNCTION pg_temp.rw_rewritten(q text, accel bool) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	l text;
BEGIN
	PERFORM set_config('gpuselect.accelerate_builtins', accel::text, true);
	FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
		IF l LIKE '%gs_planner_%' THEN
			RETURN true;
		END IF;
	END LOOP;
	RETURN false;
END
$$;

-- q with @percentile_disc / @percentile_cont: the three forms compared
CREATE FUNCTION pg_temp.rw_check(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	qb text := replace(q, '@', '');
	qg text := replace(q, '@', 'gpu_');
	ref text := pg_temp.rw_run(qb, false);
	onb text := pg_temp.rw_run(qb, true);
	gpu text := pg_temp.rw_run(qg, false);
BEGIN
	RETURN format('builtin: %s%s; gpu: %s%s%s',
				  CASE WHEN onb = ref THEN 'same' ELSE 'DIFFERENT ' || onb END,
				  CASE WHEN pg_temp.rw_rewritten(qb, true) THEN ' (rewritten)' ELSE '' END,
				  CASE WHEN gpu = ref THEN 'same' ELSE 'DIFFERENT ' || gpu END,
				  CASE WHEN pg_temp.rw_rewritten(qg, false) THEN ' (rewritten)' ELSE '' END,
				  CASE WHEN ref LIKE 'ERROR%' THEN '; ' || ref ELSE '' END);
END
$$;

CREATE DOMAIN rt_price AS numeric CHECK (VALUE > -1e12);
CREATE TABLE rt AS
SELECT i % 7 AS g, i % 3 AS h, i,
       CASE WHEN i % 17 = 0 THEN NULL
            WHEN i % 97 = 0 THEN 'NaN'::numeric
            WHEN i % 89 = 0 THEN 'Infinity'::numeric
            WHEN i % 83 = 0 THEN '-Infinity'::numeric
            ELSE round(((i * 7919) % 100003 - 50000) / 7.0, 2) END AS n,
       CASE WHEN i % 13 = 0 THEN NULL
            ELSE substr(md5((i % 1500)::text), 1, i % 9) END COLLATE "C" AS t,
       substr(md5(i::text), 3, 1 + i % 10)::varchar(10) AS vc,
       CASE WHEN i % 23 = 0 THEN NULL ELSE md5((i % 900)::text)::uuid END AS u,
       CASE WHEN i % 19 = 0 THEN NULL
            ELSE make_interval(days => i % 40 - 5, secs => ((i * 7919) % 57600) * 1.5) END AS iv,
       round(((i * 104729) % 10007) / 3.0, 2)::rt_price AS p,
       timestamp '2020-01-01' + ((i * 7919) % 5000) * interval '1 minute' AS ts
FROM generate_series(1, 3000) i;
ANALYZE rt;

-- percentile_disc: every type, scalar and array fractions, ASC and DESC
SELECT col, pg_temp.rw_check(format(
	'SELECT g, @percentile_disc(0.25) WITHIN GROUP (ORDER BY %1$s) AS a,
	        @percentile_disc(ARRAY[0, 0.5, NULL, 1]) WITHIN GROUP (ORDER BY %1$s DESC) AS b
	 FROM rt GROUP BY g', col)) AS result
FROM unnest(ARRAY['n', 't', 't COLLATE "C"', 'vc', 'u', 'iv', 'p', 'n * 2 - 1', 'ts - timestamp ''2020-01-01''']) col;
-- percentile_cont: interval (returns interval); numeric through float8
SELECT col, pg_temp.rw_check(format(
	'SELECT g, @percentile_cont(0.37) WITHIN GROUP (ORDER BY %1$s) AS a,
	        @percentile_cont(ARRAY[0.1, 0.5, 0.99]) WITHIN GROUP (ORDER BY %1$s DESC) AS b
	 FROM rt GROUP BY g', col)) AS result
FROM unnest(ARRAY['iv', 'n', 'p', 'ts - timestamp ''2020-01-01''']) col;
-- result types: a domain's scalar result is its base type, its array keeps the domain
SELECT pg_temp.rw_check('SELECT pg_typeof(@percentile_disc(0.5) WITHIN GROUP (ORDER BY p))::text AS s, pg_typeof(@percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY p))::text AS a, pg_typeof(@percentile_cont(0.5) WITHIN GROUP (ORDER BY iv))::text AS c FROM rt') AS result_types;
SELECT pg_temp.rw_check('SELECT (@percentile_disc(ARRAY[0.2, 0.8]) WITHIN GROUP (ORDER BY p))::text, (@percentile_disc(''{{0.1,0.2},{0.3,NULL}}''::float8[]) WITHIN GROUP (ORDER BY t))::text, (@percentile_cont(''[2:3]={0.5,0.6}''::float8[]) WITHIN GROUP (ORDER BY iv DESC))::text FROM rt') AS array_shapes;

-- GROUP BY sorted; no GROUP BY; GROUPING SETS; ROLLUP
SET enable_hashagg = off;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.5) WITHIN GROUP (ORDER BY n), @percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) FROM rt GROUP BY g') AS sorted;
RESET enable_hashagg;
SELECT pg_temp.rw_check('SELECT @percentile_disc(0.9) WITHIN GROUP (ORDER BY t DESC NULLS LAST), @percentile_cont(0.9) WITHIN GROUP (ORDER BY iv NULLS FIRST) FROM rt') AS no_group_by;
SELECT pg_temp.rw_check('SELECT g, h, @percentile_disc(0.5) WITHIN GROUP (ORDER BY t), @percentile_cont(ARRAY[0.5, 0.75]) WITHIN GROUP (ORDER BY iv) FROM rt GROUP BY GROUPING SETS ((g), (h), ())') AS grouping_sets;
SELECT pg_temp.rw_check('SELECT g, h, @percentile_disc(0.3) WITHIN GROUP (ORDER BY n DESC) FROM rt GROUP BY ROLLUP (g, h)') AS rollup;

-- HAVING, FILTER (matching nothing in some groups), ORDER BY an aggregate
SELECT pg_temp.rw_check('SELECT g FROM rt GROUP BY g HAVING @percentile_disc(0.5) WITHIN GROUP (ORDER BY n) > 70') AS having;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.5) WITHIN GROUP (ORDER BY t) FILTER (WHERE n > 0), @percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) FILTER (WHERE g = 3), @percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY u) FILTER (WHERE false) FROM rt GROUP BY g') AS filter;
SELECT pg_temp.rw_check('SELECT g FROM rt GROUP BY g ORDER BY @percentile_disc(0.5) WITHIN GROUP (ORDER BY vc), g LIMIT 3') AS order_by_agg;

-- subqueries, sublinks, CTEs, a join
SELECT pg_temp.rw_check('SELECT * FROM (SELECT g, @percentile_cont(0.95) WITHIN GROUP (ORDER BY iv) AS m FROM rt GROUP BY g) s WHERE m > interval ''10 days''') AS subquery;
SELECT pg_temp.rw_check('SELECT h, (SELECT @percentile_disc(0.5) WITHIN GROUP (ORDER BY t) FROM rt r2 WHERE r2.h = r1.h) FROM (SELECT DISTINCT h FROM rt) r1') AS sublink;
SELECT pg_temp.rw_check('WITH c AS (SELECT g, @percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY n) AS q FROM rt GROUP BY g) SELECT * FROM c') AS cte;
SELECT pg_temp.rw_check('SELECT a.g, @percentile_disc(0.5) WITHIN GROUP (ORDER BY b.u) FROM rt a JOIN rt b ON a.i = b.i + 1 GROUP BY a.g') AS join_;

-- fractions fixed per group: an integer grouping column
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(g / 10.0) WITHIN GROUP (ORDER BY t), @percentile_cont(g / 10.0) WITHIN GROUP (ORDER BY iv) FROM rt GROUP BY g') AS grouping_column;

-- not rewritten (and the same): a numeric grouping column in the fraction
-- (1.0 = 1.00: equal is not identical); an ordering operator that is not
-- the type's default (text_pattern_ops' ~<~)
SELECT pg_temp.rw_check('SELECT n, @percentile_disc(0.5 + 0 * n) WITHIN GROUP (ORDER BY t) FROM rt WHERE i < 300 AND n BETWEEN -1e6 AND 1e6 GROUP BY n') AS numeric_group;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.3) WITHIN GROUP (ORDER BY t USING ~<~) FROM rt GROUP BY g') AS using_pattern_op;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.3) WITHIN GROUP (ORDER BY t USING >) FROM rt GROUP BY g') AS using_gt;

-- NULL fractions; bad fractions, with and without rows
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(NULL) WITHIN GROUP (ORDER BY n), @percentile_cont(NULL::float8[]) WITHIN GROUP (ORDER BY iv) FROM rt GROUP BY g') AS null_constant;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(CASE WHEN g < 3 THEN NULL ELSE 0.5 END) WITHIN GROUP (ORDER BY t), @percentile_cont(CASE WHEN g < 3 THEN NULL ELSE ARRAY[0.5] END) WITHIN GROUP (ORDER BY iv) FROM rt GROUP BY g') AS null_per_group;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(1.5) WITHIN GROUP (ORDER BY n) FROM rt GROUP BY g') AS bad_constant;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(ARRAY[0.5, ''NaN'']) WITHIN GROUP (ORDER BY iv) FROM rt GROUP BY g') AS bad_array_element;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(g / 5.0) WITHIN GROUP (ORDER BY t) FROM rt GROUP BY g') AS bad_per_group;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(g / 5.0) WITHIN GROUP (ORDER BY iv) FILTER (WHERE g < 5) FROM rt GROUP BY g') AS bad_per_group_no_rows;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(g / 5.0) WITHIN GROUP (ORDER BY n) FILTER (WHERE g < 5) FROM rt GROUP BY g') AS bad_per_group_no_rows_numeric;
SELECT pg_temp.rw_check('SELECT @percentile_disc(-0.5) WITHIN GROUP (ORDER BY t) FROM rt WHERE false') AS bad_empty_table;
-- the interpolation's own error (interval out of range: the built-in's functions)
SELECT pg_temp.rw_check('SELECT @percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) FROM (VALUES (interval ''-178000000 years''), (interval ''178000000 years'')) v(iv)') AS interval_overflow;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(''NaN''::float8) WITHIN GROUP (ORDER BY iv) FROM rt WHERE false GROUP BY GROUPING SETS ((g), ())') AS bad_empty_grouping_set;

-- prepared statements: a generic plan (the fraction checked above the
-- aggregate), a bad parameter in a group with no rows
SET gpuselect.accelerate_builtins = on;
SET plan_cache_mode = force_generic_plan;
PREPARE rt_q(float8) AS SELECT g, percentile_disc($1) WITHIN GROUP (ORDER BY n) AS d,
	percentile_cont($1) WITHIN GROUP (ORDER BY iv) FILTER (WHERE g = 99) AS c FROM rt GROUP BY g;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE rt_q(0.5);
CREATE TEMP TABLE rt_on AS EXECUTE rt_q(0.5);
\set VERBOSITY sqlstate
EXECUTE rt_q(1.5);
\set VERBOSITY default
DEALLOCATE rt_q;
SET gpuselect.accelerate_builtins = off;
PREPARE rt_q(float8) AS SELECT g, percentile_disc($1) WITHIN GROUP (ORDER BY n) AS d,
	percentile_cont($1) WITHIN GROUP (ORDER BY iv) FILTER (WHERE g = 99) AS c FROM rt GROUP BY g;
CREATE TEMP TABLE rt_off AS EXECUTE rt_q(0.5);
\set VERBOSITY sqlstate
EXECUTE rt_q(1.5);
\set VERBOSITY default
SELECT (SELECT string_agg(r::text, ',' ORDER BY g) FROM rt_on r) = (SELECT string_agg(r::text, ',' ORDER BY g) FROM rt_off r) AS prepared_same;
DEALLOCATE rt_q;
RESET plan_cache_mode;

-- a view keeps its stored definition; its plan is rewritten
CREATE VIEW rt_view AS
SELECT g, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY iv) AS qs,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY n DESC) AS d, percentile_disc(0.5) WITHIN GROUP (ORDER BY t) AS s
FROM rt GROUP BY g;
SELECT pg_temp.rw_rewritten('SELECT * FROM rt_view', true) AS view_rewritten;
SELECT pg_temp.rw_run('SELECT * FROM rt_view', true) = pg_temp.rw_run('SELECT * FROM rt_view', false) AS view_same;
SELECT strpos(pg_get_viewdef('rt_view'::regclass), 'gs_planner') = 0 AS viewdef_builtin;

-- ties of values equal under "=" but different in bytes (numeric scales,
-- '1 day' / '24:00:00'): either may be the answer, as in the built-in's
-- sort; compared by value
CREATE TABLE rt_ties AS
SELECT i % 3 AS g, (ARRAY['1.0', '1.00', '1', '2.50', '2.5', 'NaN', '-0.0', '0'])[1 + i % 8]::numeric AS n,
       (ARRAY['1 day', '24:00:00', '1 mon', '30 days', '720:00:00', '-1 day', '-24:00:00'])[1 + i % 7]::interval AS iv
FROM generate_series(1, 500) i;
SELECT pg_temp.rw_check('SELECT g, (@percentile_disc(0.5) WITHIN GROUP (ORDER BY n))::numeric(10,3), (@percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY n DESC))::numeric(10,3)[], extract(epoch from @percentile_cont(0.3) WITHIN GROUP (ORDER BY iv)), extract(epoch from @percentile_disc(0.7) WITHIN GROUP (ORDER BY iv DESC)) FROM rt_ties GROUP BY g') AS ties;

-- EXPLAIN: hashed and partial plans
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
SET gpuselect.accelerate_builtins = on;
EXPLAIN (COSTS OFF) SELECT g, percentile_disc(0.5) WITHIN GROUP (ORDER BY n), percentile_cont(0.95) WITHIN GROUP (ORDER BY iv) FROM rt GROUP BY g;
EXPLAIN (COSTS OFF) SELECT percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY t DESC) FROM rt;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT g, gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY u DESC) FROM rt GROUP BY g;
SET max_parallel_workers_per_gather = 2;
-- and the original plans where it must not
EXPLAIN (COSTS OFF) SELECT g, percentile_disc(0.3) WITHIN GROUP (ORDER BY t USING ~<~) FROM rt GROUP BY g;
SET gpuselect.accelerate_builtins = off;
EXPLAIN (COSTS OFF) SELECT g, percentile_disc(0.5) WITHIN GROUP (ORDER BY n) FROM rt GROUP BY g;
-- the same parallel answers: partial states carry the values, the
-- direction and the collation (datum_state.c's serial form) to the leader
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.5) WITHIN GROUP (ORDER BY n DESC), @percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY t DESC), @percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY iv DESC) FROM rt GROUP BY g') AS parallel_grouped;
SELECT pg_temp.rw_check('SELECT @percentile_disc(0.5) WITHIN GROUP (ORDER BY vc), @percentile_cont(0.25) WITHIN GROUP (ORDER BY iv), @percentile_disc(ARRAY[0.01, 0.99]) WITHIN GROUP (ORDER BY u DESC) FROM rt') AS parallel_plain;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(g / 5.0) WITHIN GROUP (ORDER BY p) FILTER (WHERE g < 5) FROM rt GROUP BY g') AS parallel_bad_no_rows;
SELECT pg_temp.rw_check('SELECT g, h, @percentile_disc(0.5) WITHIN GROUP (ORDER BY t) FROM rt GROUP BY ROLLUP (g, h)') AS parallel_rollup;

DROP VIEW rt_view;
DROP TABLE rt, rt_ties;
DROP DOMAIN rt_price;
