-- gpuselect: a fraction that does not depend on the row is computed once
-- per query, not per row (src/planner/planner_fraction.c): the planner hook
-- makes it an InitPlan, in the rewritten built-ins, gpu_percentile_* and
-- gpu_quantile(s).  Every shape runs three ways on the same data: the
-- built-in with gpuselect.accelerate_builtins off (the reference), the
-- built-in with it on, and gpu_percentile_*; results (or SQLSTATE and
-- message) must be the same.  Each line says which forms were rewritten and
-- whether the plan computes the fraction in an InitPlan.
CREATE EXTENSION IF NOT EXISTS gpuselect;
LOAD 'gpuselect';		-- the planner hook comes with the library
SET extra_float_digits = 0;
SET client_min_messages = warning;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;

-- a query's rows as one text (or its error), with the setting given
CREATE FUNCTION pg_temp.fo_run(q text, accel bool) RETURNS text LANGUAGE plpgsql AS $$
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

-- how q is planned (with the setting given): rewritten? an InitPlan?
CREATE FUNCTION pg_temp.fo_shape(q text, accel bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	l text;
	rewritten bool := false;
	initplan bool := false;
BEGIN
	PERFORM set_config('gpuselect.accelerate_builtins', accel::text, true);
	FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
		rewritten := rewritten OR l LIKE '%gs_planner_%';
		initplan := initplan OR l LIKE '%InitPlan%';
	END LOOP;
	RETURN CASE WHEN rewritten THEN ' (rewritten' || CASE WHEN initplan THEN ', InitPlan)' ELSE ')' END
				WHEN initplan THEN ' (InitPlan)' ELSE '' END;
END
$$;

-- q with @percentile_disc / @percentile_cont: the three forms compared
CREATE FUNCTION pg_temp.fo_check(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	qb text := replace(q, '@', '');
	qg text := replace(q, '@', 'gpu_');
	ref text := pg_temp.fo_run(qb, false);
	onb text := pg_temp.fo_run(qb, true);
	gpu text := pg_temp.fo_run(qg, false);
BEGIN
	RETURN format('builtin: %s%s; gpu: %s%s%s',
				  CASE WHEN onb = ref THEN 'same' ELSE 'DIFFERENT ' || onb END,
				  pg_temp.fo_shape(qb, true),
				  CASE WHEN gpu = ref THEN 'same' ELSE 'DIFFERENT ' || gpu END,
				  pg_temp.fo_shape(qg, false),
				  CASE WHEN ref LIKE 'ERROR%' THEN '; ' || ref ELSE '' END);
END
$$;

CREATE TABLE fo AS
SELECT i % 5 AS g, i,
       CASE WHEN i % 19 = 0 THEN NULL ELSE ((i * 7919) % 1009 - 500.5) / 7.0 END AS f8,
       (i * 7919) % 1009 - 500 AS i4
FROM generate_series(1, 4000) i;
ANALYZE fo;
CREATE TABLE fo_fr (id int, fr numeric[], p numeric);
INSERT INTO fo_fr VALUES (1, '{0.1,0.25,0.5,0.9}', 0.3), (2, '{0.5}', 0.75);
SET gs.fractions = '{0.05,0.5,0.95}';
SET gs.fraction = '0.6';

-- uncorrelated sub-selects: scalar and array, float8 and numeric (cast once)
SELECT pg_temp.fo_check('SELECT g, @percentile_disc((SELECT 0.25::float8)) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS subselect_float8;
SELECT pg_temp.fo_check('SELECT g, @percentile_cont((SELECT p FROM fo_fr WHERE id = 2)) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS subselect_numeric;
SELECT pg_temp.fo_check('SELECT @percentile_disc((SELECT array_agg(i / 20.0) FROM generate_series(0, 20) i)) WITHIN GROUP (ORDER BY i4) FROM fo') AS subselect_array;
SELECT pg_temp.fo_check('SELECT g, @percentile_cont((SELECT fr FROM fo_fr WHERE id = 1)) WITHIN GROUP (ORDER BY f8 DESC) FROM fo GROUP BY g') AS subselect_array_grouped;
SELECT pg_temp.fo_check('SELECT g, @percentile_disc(ARRAY(SELECT i / 4.0 FROM generate_series(0, 4) i)::float8[]) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS array_sublink;
SELECT pg_temp.fo_check('SELECT g, @percentile_disc((SELECT fr FROM fo_fr WHERE id = 1)) WITHIN GROUP (ORDER BY i4) FROM fo GROUP BY ROLLUP (g)') AS subselect_rollup;

-- stable expressions: a setting, casts of it
SELECT pg_temp.fo_check('SELECT g, @percentile_disc(current_setting(''gs.fractions'')::float8[]) WITHIN GROUP (ORDER BY f8), @percentile_cont(current_setting(''gs.fraction'')::numeric) WITHIN GROUP (ORDER BY i4) FROM fo GROUP BY g') AS setting;

-- the no-rows check: a scalar sub-select is validated for a group with no rows
SELECT pg_temp.fo_check('SELECT g, @percentile_cont((SELECT 0.4)) WITHIN GROUP (ORDER BY f8) FILTER (WHERE g = 9) FROM fo GROUP BY g') AS no_rows_ok;
SELECT pg_temp.fo_check('SELECT g, @percentile_cont((SELECT 1.5)) WITHIN GROUP (ORDER BY f8) FILTER (WHERE g = 9) FROM fo GROUP BY g') AS no_rows_bad;
SELECT pg_temp.fo_check('SELECT @percentile_disc((SELECT -0.5)) WITHIN GROUP (ORDER BY f8) FROM fo WHERE false') AS empty_table_bad;
SELECT pg_temp.fo_check('SELECT @percentile_disc((SELECT fr FROM fo_fr WHERE id = 1)) WITHIN GROUP (ORDER BY f8) FROM fo WHERE false') AS empty_table_array;

-- bad values and errors of the fraction itself: the built-in's
SELECT pg_temp.fo_check('SELECT g, @percentile_disc((SELECT ''NaN''::float8)) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS subselect_nan;
SELECT pg_temp.fo_check('SELECT g, @percentile_disc((SELECT array_agg(i / 2.0) FROM generate_series(0, 3) i)) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS subselect_array_bad;
SELECT pg_temp.fo_check('SELECT g, @percentile_disc((SELECT NULL::float8)) WITHIN GROUP (ORDER BY f8), @percentile_cont((SELECT NULL::float8[])) WITHIN GROUP (ORDER BY i4) FROM fo GROUP BY g') AS subselect_null;
SELECT pg_temp.fo_check('SELECT g, @percentile_disc((SELECT p FROM fo_fr)) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS subselect_two_rows;

-- an outer query's column in the sub-select (an InitPlan of the inner level)
SELECT pg_temp.fo_check('SELECT id, (SELECT @percentile_disc((SELECT o.fr)) WITHIN GROUP (ORDER BY f8) FROM fo) FROM fo_fr o') AS outer_column;

-- not rewritten (and the same): a correlated sub-select, a volatile one, an
-- array computed per row from a grouping column (costlier per row than the
-- built-in's sort); a scalar from a grouping column is rewritten, per row
SELECT pg_temp.fo_check('SELECT g, @percentile_disc((SELECT 0.1 * g)) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS correlated;
SELECT pg_temp.fo_check('SELECT g, @percentile_disc((SELECT 0.5 + random() * 0)) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS volatile;
SELECT pg_temp.fo_check('SELECT g, @percentile_disc(ARRAY[g / 10.0, 0.5]) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS array_per_group;
SELECT pg_temp.fo_check('SELECT g, @percentile_disc(g / 10.0) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS scalar_per_group;

-- gpu_quantile(s): the same, against the built-in on the same data
SELECT (SELECT value::int8 FROM gpuselect_status() WHERE name = 'fraction_full_compares') AS c0 \gset
SELECT gpu_quantiles(f8, (SELECT fr FROM fo_fr WHERE id = 1))::text
       = (percentile_disc((SELECT fr FROM fo_fr WHERE id = 1)) WITHIN GROUP (ORDER BY f8))::text AS quantiles_subselect_ok,
       gpu_quantile(i4, current_setting('gs.fraction')::numeric)
       = percentile_disc(0.6) WITHIN GROUP (ORDER BY i4) AS quantile_setting_ok
FROM fo;
SELECT (SELECT value::int8 FROM gpuselect_status() WHERE name = 'fraction_full_compares') - :c0 AS full_compares;
SELECT pg_temp.fo_shape('SELECT g, gpu_quantiles(f8, (SELECT fr FROM fo_fr WHERE id = 1)) FROM fo GROUP BY g', false) AS quantiles_shape;
-- an outer query's column that the planner replaces by an expression
-- (subquery pull-up): computed once per outer row, not per inner row
SELECT bool_and(a::text = b::text) AS outer_expression_ok
FROM (SELECT (SELECT gpu_quantiles(f8, o.a) FROM fo) AS a,
             (SELECT percentile_disc(o.a) WITHIN GROUP (ORDER BY f8) FROM fo) AS b
      FROM (SELECT ARRAY[g / 10.0, 0.5]::float8[] AS a FROM generate_series(1, 3) g) o) s;
SELECT pg_temp.fo_shape('SELECT (SELECT gpu_quantiles(f8, o.a) FROM fo) FROM (SELECT ARRAY[g / 10.0, 0.5]::float8[] AS a FROM generate_series(1, 3) g) o', false) AS outer_expression_shape;
-- over no rows: a constant is still validated, a computed fraction is not looked at
\set VERBOSITY sqlstate
SELECT gpu_quantile(f8, 1.5) FROM fo WHERE false;
\set VERBOSITY default
SELECT gpu_quantile(f8, (SELECT 1.5)) IS NULL AS no_rows_null FROM fo WHERE false;
-- as a window aggregate
SELECT bool_and(a::text = b::text) AS window_ok
FROM (SELECT gpu_quantiles(f8, current_setting('gs.fractions')::float8[]) OVER w AS a,
             gpu_quantiles(f8, '{0.05,0.5,0.95}') OVER w AS b
      FROM fo WINDOW w AS (ORDER BY i ROWS 50 PRECEDING)) s;

-- a generic plan's numeric[] parameter: cast once (InitPlan), not per row
PREPARE fo_q(numeric[], numeric) AS
SELECT g, percentile_disc($1) WITHIN GROUP (ORDER BY f8) AS d, percentile_cont($2) WITHIN GROUP (ORDER BY i4) AS c
FROM fo GROUP BY g ORDER BY g;
SET plan_cache_mode = force_generic_plan;
SET gpuselect.accelerate_builtins = on;
CREATE TEMP TABLE fo_on AS EXECUTE fo_q('{0.1,0.5,0.99}', 0.3);
DEALLOCATE fo_q;
SET gpuselect.accelerate_builtins = off;
PREPARE fo_q(numeric[], numeric) AS
SELECT g, percentile_disc($1) WITHIN GROUP (ORDER BY f8) AS d, percentile_cont($2) WITHIN GROUP (ORDER BY i4) AS c
FROM fo GROUP BY g ORDER BY g;
CREATE TEMP TABLE fo_off AS EXECUTE fo_q('{0.1,0.5,0.99}', 0.3);
DEALLOCATE fo_q;
SELECT (SELECT string_agg(r::text, ',' ORDER BY g) FROM fo_on r) = (SELECT string_agg(r::text, ',' ORDER BY g) FROM fo_off r) AS generic_same;
SET gpuselect.accelerate_builtins = on;
PREPARE fo_q(numeric[]) AS SELECT percentile_disc($1) WITHIN GROUP (ORDER BY f8) FROM fo;
\set VERBOSITY sqlstate
EXECUTE fo_q('{0.5,1.5}');
\set VERBOSITY default
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE fo_q('{0.1,0.5}');
-- a custom plan: the parameter is a constant, no InitPlan
SET plan_cache_mode = force_custom_plan;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE fo_q('{0.1,0.5}');
RESET plan_cache_mode;
DEALLOCATE fo_q;

-- EXPLAIN: the InitPlan, serial and parallel (its value passed to the workers)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT g, percentile_cont((SELECT array_agg(i / 4.0) FROM generate_series(0, 4) i)) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT gpu_quantiles(f8, current_setting('gs.fractions')::float8[]) FROM fo;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT percentile_disc((SELECT array_agg(i / 4.0) FROM generate_series(0, 4) i)) WITHIN GROUP (ORDER BY i4) FROM fo;
SELECT pg_temp.fo_check('SELECT @percentile_disc((SELECT fr FROM fo_fr WHERE id = 1)) WITHIN GROUP (ORDER BY i4), @percentile_cont((SELECT p FROM fo_fr WHERE id = 1)) WITHIN GROUP (ORDER BY f8) FROM fo') AS parallel_plain;
SELECT pg_temp.fo_check('SELECT g, @percentile_disc(current_setting(''gs.fractions'')::float8[]) WITHIN GROUP (ORDER BY f8) FROM fo GROUP BY g') AS parallel_grouped;
RESET max_parallel_workers_per_gather;

DROP TABLE fo, fo_fr;
