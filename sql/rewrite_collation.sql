-- gpuselect: the planner rewrite over text under non-C collations (ICU
-- "en-US-x-icu", and a case-insensitive nondeterministic one), against the
-- built-in with gpuselect.accelerate_builtins off, on, and gpu_percentile_disc.
-- The sort expression's collation must reach the rewritten aggregate's value
-- store, also through parallel workers' partial states.  Skipped where the
-- server has no ICU (expected/rewrite_collation_1.out).
CREATE EXTENSION IF NOT EXISTS gpuselect;
LOAD 'gpuselect';
SET client_min_messages = warning;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'en-US-x-icu') AS gs_have_icu \gset
\if :gs_have_icu
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

-- q with @percentile_disc, columns (g, v): the three forms compared with the
-- "=" of v's collation (a nondeterministic collation's equal values may
-- differ in bytes: which of them a sort leaves at a position is not defined)
CREATE FUNCTION pg_temp.rw_check_eq(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	d_on bigint;
	d_gpu bigint;
BEGIN
	PERFORM set_config('gpuselect.accelerate_builtins', 'off', true);
	EXECUTE 'CREATE TEMP TABLE rw_ref AS ' || replace(q, '@', '');
	EXECUTE 'CREATE TEMP TABLE rw_gpu AS ' || replace(q, '@', 'gpu_');
	PERFORM set_config('gpuselect.accelerate_builtins', 'on', true);
	EXECUTE 'CREATE TEMP TABLE rw_on AS ' || replace(q, '@', '');
	SELECT count(*) INTO d_on FROM rw_ref a FULL JOIN rw_on b USING (g) WHERE a.v IS DISTINCT FROM b.v;
	SELECT count(*) INTO d_gpu FROM rw_ref a FULL JOIN rw_gpu b USING (g) WHERE a.v IS DISTINCT FROM b.v;
	DROP TABLE rw_ref, rw_gpu, rw_on;
	RETURN format('builtin: %s%s; gpu: %s%s',
				  CASE WHEN d_on = 0 THEN 'same' ELSE d_on || ' DIFFERENT' END,
				  CASE WHEN pg_temp.rw_rewritten(replace(q, '@', ''), true) THEN ' (rewritten)' ELSE '' END,
				  CASE WHEN d_gpu = 0 THEN 'same' ELSE d_gpu || ' DIFFERENT' END,
				  CASE WHEN pg_temp.rw_rewritten(replace(q, '@', 'gpu_'), false) THEN ' (rewritten)' ELSE '' END);
END
$$;

SELECT setseed(0.77);
CREATE TABLE rc AS
SELECT g % 5 AS g, g % 2 AS h,
       (ARRAY['apple', 'Apple', 'APPLE', 'banana', 'Banana', 'cherry', 'éclair', 'eclair', 'Eclair', 'zebra',
              'Zebra', 'a-b', 'ab', 'a b', '', ' ', '10', '9', 'ß', 'ss'])[1 + (random() * 19)::int]
         || CASE WHEN g % 4 = 0 THEN substr(md5(random()::text), 1, g % 5) ELSE '' END AS t
FROM generate_series(1, 3000) g;
CREATE TABLE rc_en AS SELECT g, h, t COLLATE "en-US-x-icu" AS t FROM rc;
ANALYZE rc, rc_en;
CREATE COLLATION rc_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- en-US (deterministic: equal means identical): the ORDER BY's COLLATE, a
-- column declared with it; ASC, DESC, arrays, GROUPING SETS
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.3) WITHIN GROUP (ORDER BY t COLLATE "en-US-x-icu"), @percentile_disc(ARRAY[0, 0.1, 0.5, 0.9, 1]) WITHIN GROUP (ORDER BY t COLLATE "en-US-x-icu" DESC) FROM rc GROUP BY g') AS en_us;
SELECT pg_temp.rw_check('SELECT g, h, @percentile_disc(0.5) WITHIN GROUP (ORDER BY t), @percentile_disc(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY t DESC) FROM rc_en GROUP BY GROUPING SETS ((g), (h), ())') AS en_us_column;
-- the rewritten answer under en-US differs from the one under "C": a lost
-- collation would show
SELECT pg_temp.rw_run('SELECT g, percentile_disc(ARRAY[0.1, 0.3, 0.5, 0.7, 0.9]) WITHIN GROUP (ORDER BY t) FROM rc_en GROUP BY g', true)
    <> pg_temp.rw_run('SELECT g, percentile_disc(ARRAY[0.1, 0.3, 0.5, 0.7, 0.9]) WITHIN GROUP (ORDER BY t COLLATE "C") FROM rc_en GROUP BY g', true) AS differs_from_c;
-- "C" over a column declared en-US: the ORDER BY's COLLATE wins
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY t COLLATE "C" DESC) FROM rc_en GROUP BY g') AS c_over_en_us;

-- case-insensitive (nondeterministic): compared with its "="
SELECT pg_temp.rw_check_eq('SELECT g, @percentile_disc(0.5) WITHIN GROUP (ORDER BY t COLLATE rc_ci) AS v FROM rc GROUP BY g') AS ci;
SELECT pg_temp.rw_check_eq('SELECT g, @percentile_disc(ARRAY[0.05, 0.25, 0.5, 0.75, 1]) WITHIN GROUP (ORDER BY t COLLATE rc_ci DESC) AS v FROM rc GROUP BY g') AS ci_desc;

-- parallel: the collation and direction travel with the partial states
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET gpuselect.accelerate_builtins = on;
EXPLAIN (COSTS OFF) SELECT g, percentile_disc(0.5) WITHIN GROUP (ORDER BY t DESC) FROM rc_en GROUP BY g;
EXPLAIN (COSTS OFF) SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY t COLLATE rc_ci) FROM rc;
SET gpuselect.accelerate_builtins = off;
SELECT pg_temp.rw_check('SELECT g, @percentile_disc(0.3) WITHIN GROUP (ORDER BY t), @percentile_disc(ARRAY[0, 0.1, 0.5, 0.9, 1]) WITHIN GROUP (ORDER BY t DESC) FROM rc_en GROUP BY g') AS parallel_en_us;
SELECT pg_temp.rw_check('SELECT @percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY t COLLATE "en-US-x-icu" DESC) FROM rc') AS parallel_plain;
SELECT pg_temp.rw_check_eq('SELECT 0 AS g, @percentile_disc(ARRAY[0.05, 0.5, 0.95]) WITHIN GROUP (ORDER BY t COLLATE rc_ci) AS v FROM rc') AS parallel_ci;

DROP TABLE rc, rc_en;
DROP COLLATION rc_ci;
\else
\echo 'skipped: this server has no ICU collation "en-US-x-icu"'
\endif
