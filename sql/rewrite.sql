-- gpuselect: the planner rewrite (src/planner/planner.c).  Every shape runs three
-- ways on the same data: the built-in with gpuselect.accelerate_builtins off
-- (the reference), the built-in with it on, and gpu_percentile_* (always
-- rewritten when it can be); results (or SQLSTATE and message) must be the
-- same, and each line says which forms the planner rewrote (EXPLAIN VERBOSE
-- names the gs_planner_* aggregates).
CREATE EXTENSION IF NOT EXISTS gpuselect;
LOAD 'gpuselect';		-- the planner hook comes with the library
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

-- groups of different sizes; NULLs, NaN, -Infinity, -0, ties (not -0 beside
-- +0 in f8: which of the two a sort puts first is undefined in PostgreSQL)
CREATE TABLE rw AS
SELECT i % 7 AS g, i % 3 AS h, i,
       CASE WHEN i % 17 = 0 THEN NULL
            WHEN i % 101 = 0 THEN 'NaN'::float8
            WHEN i % 103 = 0 THEN '-Infinity'::float8
            WHEN i % 107 = 0 THEN '-0'::float8
            ELSE ((i * 7919) % 1009 - 500.5) / 7.0 END AS f8,
       ((i * 7919) % 1009 - 500)::float4 / 3 AS f4,
       CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 7919) % 1009 - 500 END AS i4,
       ((i * 31) % 97)::int2 AS i2,
       (i::int8 * 104729) % 1000003 - 500000 AS i8,
       date '2020-01-01' + (i * 37) % 400 AS d,
       timestamp '2020-01-01' + ((i * 7919) % 5000) * interval '1 minute' AS ts,
       timestamptz '2020-01-01 00:00+00' + ((i * 7919) % 5000) * interval '1 second' AS tz,
       ((i % 7) + 1) / 10.0 AS pg	-- a per-group fraction column, NOT a grouping column
FROM generate_series(1, 3000) i;
ANALYZE rw;

-- every supported type, scalar and array fractions, ASC and DESC
SELECT col, pg_temp.rw_check(format(
	'SELECT g, @percentile_disc(0.25) WITHIN GROUP (ORDER BY %1$s) AS a,
	        @percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY %1$s DESC) AS b
	 FROM rw GROUP BY g', col)) AS result
FROM unnest(ARRAY['f8', 'f4', 'i4', 'i2', 'i8', 'd', 'ts', 'tz']) col;
SELECT col, pg_temp.rw_check(format(
	'SELECT g, @percentile_cont(0.37) WITHIN GROUP (ORDER BY %1$s) AS a,
	        @percentile_cont(ARRAY[0.1, 0.5, 0.99]) WITHIN GROUP (ORDER BY %1$s DESC) AS b
	 FROM rw GROUP BY g', col)) AS result
FROM unnest(ARRAY['f8', 'f4', 'i4', 'i2', 'i8']) col;

-- GROUP BY hashed and sorted; no GROUP BY; expressions; NULLS FIRST/LAST; USING >
SET enable_hashagg = off;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.5) WITHIN GROUP (ORDER BY f8), @percentile_cont(0.5) WITHIN GROUP (ORDER BY i4) FROM rw GROUP BY g') AS sorted;
RESET enable_hashagg;
SELECT pg_temp.rw_check('SELECT @percentile_disc(0.9) WITHIN GROUP (ORDER BY f8 NULLS FIRST), @percentile_cont(0.9) WITHIN GROUP (ORDER BY f8 DESC NULLS LAST) FROM rw') AS no_group_by;
SELECT pg_temp.rw_check('SELECT i % 11, @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8 * 2 + i) FROM rw GROUP BY i % 11') AS expressions;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.3) WITHIN GROUP (ORDER BY ts USING >) FROM rw GROUP BY g') AS using_gt;

-- GROUPING SETS, ROLLUP, CUBE (the empty set included)
SELECT pg_temp.rw_check('SELECT g, h, @percentile_disc(0.5) WITHIN GROUP (ORDER BY i8), @percentile_cont(ARRAY[0.5, 0.75]) WITHIN GROUP (ORDER BY f4) FROM rw GROUP BY GROUPING SETS ((g), (h), ())') AS grouping_sets;
SELECT pg_temp.rw_check('SELECT g, h, @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY ROLLUP (g, h)') AS rollup;
SELECT pg_temp.rw_check('SELECT g, h, @percentile_disc(0.1) WITHIN GROUP (ORDER BY d DESC) FROM rw GROUP BY CUBE (g, h)') AS cube;

-- HAVING, FILTER (also matching nothing in some groups), ORDER BY an aggregate
SELECT pg_temp.rw_check('SELECT g FROM rw GROUP BY g HAVING @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) > 0') AS having;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.5) WITHIN GROUP (ORDER BY i4) FILTER (WHERE i4 > 0), @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FILTER (WHERE g = 3) FROM rw GROUP BY g') AS filter;
SELECT pg_temp.rw_check('SELECT g FROM rw GROUP BY g ORDER BY @percentile_disc(0.5) WITHIN GROUP (ORDER BY i2), g LIMIT 3') AS order_by_agg;

-- subqueries, sublinks, CTEs, a set operation, a join
SELECT pg_temp.rw_check('SELECT * FROM (SELECT g, @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) AS m FROM rw GROUP BY g) s WHERE m > -100') AS subquery;
SELECT pg_temp.rw_check('SELECT h, (SELECT @percentile_disc(0.5) WITHIN GROUP (ORDER BY i4) FROM rw r2 WHERE r2.h = r1.h) FROM (SELECT DISTINCT h FROM rw) r1') AS sublink;
SELECT pg_temp.rw_check('SELECT g FROM rw GROUP BY g HAVING max(f4) > (SELECT @percentile_cont(0.1) WITHIN GROUP (ORDER BY f4) FROM rw)') AS sublink_having;
SELECT pg_temp.rw_check('WITH c AS (SELECT g, @percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY tz) AS q FROM rw GROUP BY g) SELECT * FROM c') AS cte;
SELECT pg_temp.rw_check('WITH c AS MATERIALIZED (SELECT h, @percentile_cont(0.5) WITHIN GROUP (ORDER BY i8) AS q FROM rw GROUP BY h) SELECT * FROM c UNION ALL SELECT 9, @percentile_cont(0.5) WITHIN GROUP (ORDER BY i8) FROM rw') AS cte_union;
SELECT pg_temp.rw_check('SELECT a.g, @percentile_disc(0.5) WITHIN GROUP (ORDER BY b.i4) FROM rw a JOIN rw b ON a.i = b.i + 1 GROUP BY a.g') AS join_;

-- fractions fixed per group: grouping columns (int: equality is identity),
-- outer-level columns, stable expressions
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(g / 10.0) WITHIN GROUP (ORDER BY f8), @percentile_cont(g / 10.0) WITHIN GROUP (ORDER BY i4) FROM rw GROUP BY g') AS grouping_column;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(ARRAY[g / 10.0, 1 - g / 10.0]) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g') AS grouping_column_array;
SELECT pg_temp.rw_check('SELECT h, (SELECT @percentile_disc(r1.h / 4.0) WITHIN GROUP (ORDER BY i8) FROM rw r2 WHERE r2.g = r1.h) FROM (SELECT DISTINCT h FROM rw) r1') AS outer_column;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(extract(day from now()) / 100) WITHIN GROUP (ORDER BY ts) FROM rw GROUP BY g') AS stable_fraction;

-- interval (the comparison types: rewrite_types, rewrite_collation)
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(0.5) WITHIN GROUP (ORDER BY ts - timestamp ''2020-01-01'') FROM rw GROUP BY g') AS interval_type;

-- not rewritten (and the same): a volatile fraction, a fraction from a
-- functionally dependent (not grouping) column, a float8 grouping column
-- (-0 = +0: equal is not identical), a fraction inside CASE or under HAVING
-- (the no-rows check might not run), an ordering operator that is not the
-- type's default
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.5 + random() * 0) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g') AS volatile;
ALTER TABLE rw ADD PRIMARY KEY (i);
SELECT pg_temp.rw_check('SELECT i, @percentile_disc(pg) WITHIN GROUP (ORDER BY f8) FROM rw WHERE i < 50 GROUP BY i') AS dependent_column;
SELECT pg_temp.rw_check('SELECT f4, @percentile_disc(0.5 + f4 * 0) WITHIN GROUP (ORDER BY i4) FROM rw WHERE i < 500 GROUP BY f4') AS float_group;
SELECT pg_temp.rw_check('SELECT g, CASE WHEN g > 2 THEN @percentile_disc(g / 10.0) WITHIN GROUP (ORDER BY f8) END FROM rw GROUP BY g') AS in_case;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(g / 10.0) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g HAVING count(*) > 0') AS with_having;
CREATE FUNCTION pg_temp.rev_cmp(int4, int4) RETURNS int4 LANGUAGE sql IMMUTABLE AS 'SELECT btint4cmp($2, $1)';
CREATE OPERATOR pg_temp.<<< (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4gt);
CREATE OPERATOR pg_temp.<<= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4ge);
CREATE OPERATOR pg_temp.>>= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4le);
CREATE OPERATOR pg_temp.>>> (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4lt);
CREATE OPERATOR CLASS rw_rev_int4_ops FOR TYPE int4 USING btree AS
	OPERATOR 1 pg_temp.<<<, OPERATOR 2 pg_temp.<<=, OPERATOR 3 =,
	OPERATOR 4 pg_temp.>>=, OPERATOR 5 pg_temp.>>>, FUNCTION 1 pg_temp.rev_cmp(int4, int4);
-- (the rewrite leaves that call as it is; gpu_percentile_disc selects it by
-- comparison with that operator, datum_select.c)
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.2) WITHIN GROUP (ORDER BY i4 USING OPERATOR(pg_temp.<<<)) FROM rw GROUP BY g') AS using_other_opclass;

-- NULL fractions: constant, per group, parameter; NULL array elements; 2-D
-- and empty arrays; a NULL array
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(NULL) WITHIN GROUP (ORDER BY f8), @percentile_cont(NULL::float8[]) WITHIN GROUP (ORDER BY i4) FROM rw GROUP BY g') AS null_constant;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(CASE WHEN g < 3 THEN NULL ELSE 0.5 END) WITHIN GROUP (ORDER BY f8), @percentile_cont(CASE WHEN g < 3 THEN NULL ELSE ARRAY[0.5] END) WITHIN GROUP (ORDER BY i4) FROM rw GROUP BY g') AS null_per_group;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(ARRAY[0.5, NULL, 0.1]) WITHIN GROUP (ORDER BY ts), @percentile_cont(ARRAY[NULL, 0.3]::float8[]) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g') AS null_elements;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(''{{0.1,0.2},{0.3,NULL}}''::float8[]) WITHIN GROUP (ORDER BY i8), @percentile_cont(''[2:3]={0.5,0.6}''::float8[]) WITHIN GROUP (ORDER BY i2 DESC) FROM rw GROUP BY g') AS shapes;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(''{}''::float8[]) WITHIN GROUP (ORDER BY f8), @percentile_cont(''{}''::float8[]) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g') AS empty_array;

-- bad fractions, with and without rows: the built-in's error (or none)
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(1.5) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g') AS bad_constant;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(ARRAY[0.5, 1.5]) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g') AS bad_array_element;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(ARRAY[0.5, ''NaN'']) WITHIN GROUP (ORDER BY f8) FILTER (WHERE false) FROM rw GROUP BY g') AS bad_array_no_rows;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(g / 5.0) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g') AS bad_per_group;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(g / 5.0) WITHIN GROUP (ORDER BY f8) FILTER (WHERE g < 5) FROM rw GROUP BY g') AS bad_per_group_no_rows;
SELECT pg_temp.rw_check('SELECT @percentile_disc(-0.5) WITHIN GROUP (ORDER BY f8) FROM rw WHERE false') AS bad_empty_table;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(''NaN'') WITHIN GROUP (ORDER BY f8) FROM rw WHERE false GROUP BY GROUPING SETS ((g), ())') AS bad_empty_grouping_set;

-- parameters: prepared statements, generic and custom plans; a statement
-- keeps the setting in force when it was planned
PREPARE rw_q(float8) AS SELECT g, percentile_disc($1) WITHIN GROUP (ORDER BY f8) AS d,
	percentile_cont($1) WITHIN GROUP (ORDER BY i4) FILTER (WHERE g <> 2) AS c FROM rw GROUP BY g;
SET plan_cache_mode = force_generic_plan;
SET gpuselect.accelerate_builtins = on;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE rw_q(0.5);
CREATE TEMP TABLE rw_on AS EXECUTE rw_q(0.5);
-- planned with the setting on: still rewritten after it is turned off
SET gpuselect.accelerate_builtins = off;
EXPLAIN (COSTS OFF) EXECUTE rw_q(0.5);
DEALLOCATE rw_q;
PREPARE rw_q(float8) AS SELECT g, percentile_disc($1) WITHIN GROUP (ORDER BY f8) AS d,
	percentile_cont($1) WITHIN GROUP (ORDER BY i4) FILTER (WHERE g <> 2) AS c FROM rw GROUP BY g;
CREATE TEMP TABLE rw_off AS EXECUTE rw_q(0.5);
-- planned with the setting off: not rewritten after it is turned on
SET gpuselect.accelerate_builtins = on;
EXPLAIN (COSTS OFF) EXECUTE rw_q(0.5);
SELECT (SELECT string_agg(r::text, ',' ORDER BY g) FROM rw_on r) = (SELECT string_agg(r::text, ',' ORDER BY g) FROM rw_off r) AS prepared_same;
-- a bad parameter, with rows and in a group with no rows (FILTER)
SET gpuselect.accelerate_builtins = on;
DEALLOCATE rw_q;
PREPARE rw_q(float8) AS SELECT g, percentile_cont($1) WITHIN GROUP (ORDER BY i4) FILTER (WHERE g = 99) FROM rw GROUP BY g;
\set VERBOSITY sqlstate
EXECUTE rw_q(1.5);
CREATE TEMP TABLE rw_null AS EXECUTE rw_q(NULL);
SELECT count(*) AS groups, count(percentile_cont) AS non_null FROM rw_null;
\set VERBOSITY default
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE rw_q(0.5);
SET plan_cache_mode = force_custom_plan;
\set VERBOSITY sqlstate
EXECUTE rw_q(-1);
\set VERBOSITY default
RESET plan_cache_mode;
SET gpuselect.accelerate_builtins = off;
\set VERBOSITY sqlstate
EXECUTE rw_q(-1);
\set VERBOSITY default
DEALLOCATE rw_q;

-- views keep their stored definition; the plan is rewritten when the view is used
CREATE VIEW rw_view AS
SELECT g, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY f8) AS qs,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY ts DESC) AS d
FROM rw GROUP BY g;
CREATE TEMP TABLE rw_viewdef AS SELECT pg_get_viewdef('rw_view'::regclass) AS def;
SET gpuselect.accelerate_builtins = on;
SELECT pg_temp.rw_rewritten('SELECT * FROM rw_view', true) AS view_rewritten;
SELECT pg_temp.rw_run('SELECT * FROM rw_view', true) = pg_temp.rw_run('SELECT * FROM rw_view', false) AS view_same;
SELECT def = pg_get_viewdef('rw_view'::regclass) AS viewdef_unchanged FROM rw_viewdef;
SELECT strpos(def, 'percentile_cont(') > 0 AND strpos(def, 'gs_planner') = 0 AS viewdef_builtin FROM rw_viewdef;

-- several percentiles of one value, merged into one array aggregate
-- (planner_merge.c): a dashboard's p50/p90/p99; disc and cont and each
-- direction apart; a fraction twice; FILTERs apart; in expressions, HAVING
-- and ORDER BY; groups with no rows (FILTER); every type; parallel plans
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8), @percentile_cont(0.9) WITHIN GROUP (ORDER BY f8), @percentile_cont(0.99) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g') AS merged_dashboard;
SELECT pg_temp.rw_check('SELECT h, @percentile_disc(0.5) WITHIN GROUP (ORDER BY i4), @percentile_cont(0.5) WITHIN GROUP (ORDER BY i4), @percentile_disc(0.9) WITHIN GROUP (ORDER BY i4 DESC), @percentile_disc(0.1) WITHIN GROUP (ORDER BY i4), @percentile_disc(0.5) WITHIN GROUP (ORDER BY i4), @percentile_disc(0.2) WITHIN GROUP (ORDER BY i4 DESC), @percentile_cont(1) WITHIN GROUP (ORDER BY i4), @percentile_disc(0) WITHIN GROUP (ORDER BY i4) FROM rw GROUP BY h') AS merged_mixed;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(0.25) WITHIN GROUP (ORDER BY f8) FILTER (WHERE h = 1), @percentile_cont(0.75) WITHIN GROUP (ORDER BY f8) FILTER (WHERE h = 1), @percentile_cont(0.75) WITHIN GROUP (ORDER BY f8) FILTER (WHERE g = 99), @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FILTER (WHERE g = 99), @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g') AS merged_filters;
SELECT pg_temp.rw_check('SELECT g, (@percentile_cont(0.9) WITHIN GROUP (ORDER BY f4) - @percentile_cont(0.1) WITHIN GROUP (ORDER BY f4)) * 2 AS spread FROM rw GROUP BY g HAVING @percentile_cont(0.5) WITHIN GROUP (ORDER BY f4) > -1000 ORDER BY @percentile_cont(0.99) WITHIN GROUP (ORDER BY f4), g') AS merged_expressions;
SELECT col, pg_temp.rw_check(format(
	'SELECT @percentile_disc(0.1) WITHIN GROUP (ORDER BY %1$s), @percentile_disc(0.6) WITHIN GROUP (ORDER BY %1$s), @percentile_disc(0.6) WITHIN GROUP (ORDER BY %1$s DESC), @percentile_disc(0.95) WITHIN GROUP (ORDER BY %1$s DESC) FROM rw', col)) AS merged_types
FROM unnest(ARRAY['f8', 'f4', 'i4', 'i2', 'i8', 'd', 'ts', 'tz', 'i::numeric', 'i::text', '(i * interval ''1 minute'')']) col;
SELECT pg_temp.rw_check('SELECT @percentile_cont(0.5) WITHIN GROUP (ORDER BY i * interval ''1 s''), @percentile_cont(0.9) WITHIN GROUP (ORDER BY i * interval ''1 s'') FROM rw WHERE g = 99') AS merged_no_rows;
EXPLAIN (VERBOSE, COSTS OFF) SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY f8), percentile_cont(0.9) WITHIN GROUP (ORDER BY f8) * 1000, percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g;

-- EXPLAIN: hashed and partial plans where the rewrite applies
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT g, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g;
EXPLAIN (COSTS OFF) SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM rw;
EXPLAIN (COSTS OFF) SELECT g, gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY i4 DESC) FROM rw GROUP BY g;
EXPLAIN (VERBOSE, COSTS OFF) SELECT g, percentile_disc(g / 10.0) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g;
-- and the original plans where it must not
EXPLAIN (COSTS OFF) SELECT g, percentile_disc(0.5 + random() * 0) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g;
EXPLAIN (COSTS OFF) SELECT g, percentile_disc(0.2) WITHIN GROUP (ORDER BY i4 USING OPERATOR(pg_temp.<<<)) FROM rw GROUP BY g;
SET gpuselect.accelerate_builtins = off;
EXPLAIN (COSTS OFF) SELECT g, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY f8) FROM rw GROUP BY g;
-- the same parallel answers
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY f8), @percentile_disc(0.5) WITHIN GROUP (ORDER BY ts DESC) FROM rw GROUP BY g') AS parallel_grouped;
SELECT pg_temp.rw_check('SELECT @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8), @percentile_disc(ARRAY[0.01, 0.99]) WITHIN GROUP (ORDER BY i8) FROM rw') AS parallel_plain;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(g / 10.0) WITHIN GROUP (ORDER BY f8), @percentile_cont(ARRAY[g / 10.0]) WITHIN GROUP (ORDER BY i4 DESC) FROM rw GROUP BY g') AS parallel_per_group;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(g / 5.0) WITHIN GROUP (ORDER BY f8) FILTER (WHERE g < 5) FROM rw GROUP BY g') AS parallel_bad_no_rows;
SELECT pg_temp.rw_check('SELECT g, h, @percentile_disc(0.5) WITHIN GROUP (ORDER BY d) FROM rw GROUP BY ROLLUP (g, h)') AS parallel_rollup;
SELECT pg_temp.rw_check('SELECT g, @percentile_cont(0.5) WITHIN GROUP (ORDER BY f8), @percentile_cont(0.9) WITHIN GROUP (ORDER BY f8), @percentile_disc(0.99) WITHIN GROUP (ORDER BY i8 DESC), @percentile_disc(0.01) WITHIN GROUP (ORDER BY i8 DESC) FROM rw GROUP BY g') AS parallel_merged;

-- gpuselect.approximate does not make a rewritten built-in approximate
SET gpuselect.approximate = on;
SET gpuselect.approx_buckets = 16;
SELECT pg_temp.rw_run('SELECT percentile_disc(0.37) WITHIN GROUP (ORDER BY f8) FROM rw', true)
     = pg_temp.rw_run('SELECT percentile_disc(0.37) WITHIN GROUP (ORDER BY f8) FROM rw', false) AS builtin_stays_exact;
RESET gpuselect.approximate;
RESET gpuselect.approx_buckets;

DROP VIEW rw_view;
DROP OPERATOR CLASS rw_rev_int4_ops USING btree;
DROP OPERATOR FAMILY rw_rev_int4_ops USING btree;
DROP TABLE rw;
