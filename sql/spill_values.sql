-- gpuselect.work_mem for the comparison types (numeric, text, interval,
-- uuid, ...): a group beyond it writes its values to a temporary file and is
-- selected in passes over it (datum_spill.c).  Every aggregate against the
-- built-ins on the same data with the smallest limit (64kB), ASC, DESC and
-- USING, NULLs, NaN and infinities, heavy duplicates, GROUP BY, many
-- fractions (the sort path), parallel combine, and the built-in syntax
-- rewritten under gpuselect.accelerate_builtins.  Values that compare equal
-- but differ in bytes (numeric 1.0 / 1.00) are compared with the type's "=";
-- the others by their text too.
CREATE EXTENSION IF NOT EXISTS gpuselect;
LOAD 'gpuselect';
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate
SET gpuselect.work_mem = '64kB';

SELECT setseed(0.29);
CREATE TABLE spv AS
SELECT g,
       g % 3 AS grp,
       CASE WHEN g % 17 = 0 THEN NULL ELSE md5((g * 7919 % 12007)::text) END AS t,
       CASE WHEN g % 17 = 0 THEN NULL
            WHEN g % 4 = 0 THEN 'b'
            WHEN g % 4 = 1 THEN 'a'
            ELSE 'c' || (g % 3)::text END AS few,
       CASE WHEN g % 17 = 0 THEN NULL ELSE 'same value repeated' END AS same,
       CASE WHEN g % 17 = 0 THEN NULL
            WHEN g % 101 = 0 THEN 'NaN'::numeric
            WHEN g % 103 = 0 THEN 'Infinity'::numeric
            WHEN g % 107 = 0 THEN '-Infinity'::numeric
            WHEN g % 3 = 0 THEN round((random() * 2000 - 1000)::numeric, 1)
            WHEN g % 3 = 1 THEN round((random() * 2000 - 1000)::numeric, 3)
            ELSE round((random() * 2000 - 1000)::numeric, 0) END AS nmix,
       CASE WHEN g % 17 = 0 THEN NULL ELSE round((random() * 2000 - 1000)::numeric, 2)::numeric(10,2) END AS n2,
       CASE WHEN g % 17 = 0 THEN NULL ELSE make_interval(secs => floor(random() * 86000)) END AS iv,
       CASE WHEN g % 17 = 0 THEN NULL ELSE md5(g::text)::uuid END AS u,
       CASE WHEN g % 17 = 0 THEN NULL ELSE decode(md5(g::text), 'hex') END AS b
FROM generate_series(1, 12000) g;
ALTER TABLE spv ADD COLUMN vc varchar(40);
UPDATE spv SET vc = t || '-' || (g % 10);
ANALYZE spv;

CREATE TABLE spv_fr (p float8);
INSERT INTO spv_fr VALUES (0), (1), (1.0/3), (0.5), (0.999), (1e-9), (0.4999999);

SELECT value::int8 AS spilled_before FROM gpuselect_status() WHERE name = 'states_spilled' \gset

-- disc over every fraction, ASC, DESC and USING >, per type (value and text equal)
SELECT format($q$
SELECT %1$L AS col,
       bool_and(g IS NOT DISTINCT FROM b AND g::text IS NOT DISTINCT FROM b::text) AS asc_ok,
       bool_and(gd IS NOT DISTINCT FROM bd AND gd::text IS NOT DISTINCT FROM bd::text) AS desc_ok,
       bool_and(gu IS NOT DISTINCT FROM bd AND gu::text IS NOT DISTINCT FROM bd::text) AS using_ok
FROM (SELECT p, gpu_percentile_disc(p) WITHIN GROUP (ORDER BY %1$I) AS g,
                percentile_disc(p) WITHIN GROUP (ORDER BY %1$I) AS b,
                gpu_percentile_disc(p) WITHIN GROUP (ORDER BY %1$I DESC) AS gd,
                gpu_percentile_disc(p) WITHIN GROUP (ORDER BY %1$I USING >) AS gu,
                percentile_disc(p) WITHIN GROUP (ORDER BY %1$I DESC) AS bd
      FROM spv CROSS JOIN spv_fr GROUP BY p) s$q$, c)
FROM unnest(ARRAY['t', 'few', 'same', 'n2', 'iv', 'u', 'b', 'vc']) c
\gexec

-- the groups above spilled, and were selected in passes
SELECT value::int8 > :spilled_before AS spilled FROM gpuselect_status() WHERE name = 'states_spilled';
SELECT value LIKE 'cpu (values spilled, % passes)' AS spilled_path FROM gpuselect_status() WHERE name = 'last_path';

-- numeric of mixed scales, NaN and infinities: equal by value (1.0 = 1.00)
SELECT bool_and(g IS NOT DISTINCT FROM b) AS nmix_asc_ok, bool_and(gd IS NOT DISTINCT FROM bd) AS nmix_desc_ok
FROM (SELECT p, gpu_percentile_disc(p) WITHIN GROUP (ORDER BY nmix) AS g,
                percentile_disc(p) WITHIN GROUP (ORDER BY nmix) AS b,
                gpu_percentile_disc(p) WITHIN GROUP (ORDER BY nmix DESC) AS gd,
                percentile_disc(p) WITHIN GROUP (ORDER BY nmix DESC) AS bd
      FROM spv CROSS JOIN spv_fr GROUP BY p) s;

-- collations: "C" and "POSIX" explicitly (prefix keys in memory, comparison once spilled)
SELECT bool_and(g IS NOT DISTINCT FROM b) AS c_ok, bool_and(gd IS NOT DISTINCT FROM bd) AS posix_desc_ok
FROM (SELECT p, gpu_percentile_disc(p) WITHIN GROUP (ORDER BY t COLLATE "C") AS g,
                percentile_disc(p) WITHIN GROUP (ORDER BY t COLLATE "C") AS b,
                gpu_percentile_disc(p) WITHIN GROUP (ORDER BY vc COLLATE "POSIX" DESC) AS gd,
                percentile_disc(p) WITHIN GROUP (ORDER BY vc COLLATE "POSIX" DESC) AS bd
      FROM spv CROSS JOIN spv_fr GROUP BY p) s;
-- a collation that is not byte order (ICU, where the server has it): the same line either way
SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'en-US-x-icu') AS gs_have_icu \gset
\if :gs_have_icu
-- (upper and lower case hex: "C" puts every upper case letter first, en-US does not)
SELECT bool_and(g IS NOT DISTINCT FROM b) AND bool_and(gq IS NOT DISTINCT FROM b)
       AND bool_and(gd IS NOT DISTINCT FROM bd) AND bool_or(b::text COLLATE "C" <> bc::text) AS non_c_ok
FROM (SELECT p, gpu_percentile_disc(p) WITHIN GROUP (ORDER BY m COLLATE "en-US-x-icu") AS g,
                gpu_quantile(m COLLATE "en-US-x-icu", p) AS gq,
                percentile_disc(p) WITHIN GROUP (ORDER BY m COLLATE "en-US-x-icu") AS b,
                gpu_percentile_disc(p) WITHIN GROUP (ORDER BY m COLLATE "en-US-x-icu" DESC) AS gd,
                percentile_disc(p) WITHIN GROUP (ORDER BY m COLLATE "en-US-x-icu" DESC) AS bd,
                percentile_disc(p) WITHIN GROUP (ORDER BY m COLLATE "C") AS bc
      FROM (SELECT CASE WHEN g % 2 = 0 THEN upper(t) ELSE t END AS m FROM spv) x
      CROSS JOIN spv_fr WHERE p > 0 AND p < 1 GROUP BY p) s \gset
\else
SELECT true AS non_c_ok \gset
\endif
SELECT :'non_c_ok' AS non_c_ok;

-- interval: cont (interpolated as percentile_cont does), median, arrays with a NULL element
SELECT bool_and(g IS NOT DISTINCT FROM b AND g::text IS NOT DISTINCT FROM b::text) AS cont_ok,
       bool_and(gd IS NOT DISTINCT FROM bd AND gd::text IS NOT DISTINCT FROM bd::text) AS cont_desc_ok
FROM (SELECT p, gpu_percentile_cont(p) WITHIN GROUP (ORDER BY iv) AS g,
                percentile_cont(p) WITHIN GROUP (ORDER BY iv) AS b,
                gpu_percentile_cont(p) WITHIN GROUP (ORDER BY iv DESC) AS gd,
                percentile_cont(p) WITHIN GROUP (ORDER BY iv DESC) AS bd
      FROM spv CROSS JOIN spv_fr GROUP BY p) s;
SELECT grp,
       gpu_median(iv) = percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) AS median_ok,
       gpu_percentile_cont('{0.5,0.01,NULL,0.99,0,1,0.333}'::float8[]) WITHIN GROUP (ORDER BY iv)::text
         = percentile_cont('{0.5,0.01,NULL,0.99,0,1,0.333}'::float8[]) WITHIN GROUP (ORDER BY iv)::text AS cont_multi_ok,
       gpu_quantiles(t, '{0.5,0.01,NULL,0.99,0,1,0.5}')
         = percentile_disc('{0.5,0.01,NULL,0.99,0,1,0.5}'::float8[]) WITHIN GROUP (ORDER BY t) AS quantiles_ok,
       gpu_quantiles(nmix, '{0.5,0.01,NULL,0.99,0,1}')
         = percentile_disc('{0.5,0.01,NULL,0.99,0,1}'::float8[]) WITHIN GROUP (ORDER BY nmix) AS quantiles_nmix_ok,
       gpu_quantile(u, 0.3) = percentile_disc(0.3) WITHIN GROUP (ORDER BY u) AS quantile_ok
FROM spv GROUP BY grp ORDER BY grp;

-- a group of NULLs only (never spills) beside spilled ones
SELECT grp, gpu_quantile(t, 0.5) IS NOT DISTINCT FROM percentile_disc(0.5) WITHIN GROUP (ORDER BY t) AS ok
FROM (SELECT grp, CASE WHEN grp = 1 THEN NULL ELSE t END AS t FROM spv) s GROUP BY grp ORDER BY grp;

-- many fractions (more wanted ranks than the pivots can split: tuplesort)
SELECT (SELECT gpu_percentile_disc(a) WITHIN GROUP (ORDER BY t) FROM spv)
     = (SELECT percentile_disc(a) WITHIN GROUP (ORDER BY t) FROM spv) AS many_disc_ok,
       (SELECT gpu_percentile_cont(a) WITHIN GROUP (ORDER BY iv DESC) FROM spv)::text
     = (SELECT percentile_cont(a) WITHIN GROUP (ORDER BY iv DESC) FROM spv)::text AS many_cont_ok
FROM (SELECT array_agg(i / 200.0 ORDER BY random()) AS a FROM generate_series(0, 200) i) f;
SELECT value LIKE 'cpu (values spilled, % passes, sorted)' AS sorted_path FROM gpuselect_status() WHERE name = 'last_path';

-- the same group, spilled and not: one answer
SELECT gpu_quantiles(t, '{0.01,0.5,0.9}')::text AS spilled_t,
       gpu_quantiles(nmix, '{0.01,0.5,0.9}')::text AS spilled_nmix FROM spv \gset
RESET gpuselect.work_mem;
SELECT value::int8 AS spilled_before FROM gpuselect_status() WHERE name = 'states_spilled' \gset
SELECT gpu_quantiles(t, '{0.01,0.5,0.9}')::text = :'spilled_t' AS same_unspilled_t,
       gpu_quantiles(nmix, '{0.01,0.5,0.9}') = :'spilled_nmix'::numeric[] AS same_unspilled_nmix
FROM spv;
SELECT value::int8 = :spilled_before AS in_memory FROM gpuselect_status() WHERE name = 'states_spilled';
SET gpuselect.work_mem = '64kB';

-- a window over a growing frame: a final call, then more rows, then another
SELECT count(*) FILTER (WHERE g IS DISTINCT FROM b) AS window_mismatches
FROM (SELECT g AS k, gpu_quantile(t, 0.5) OVER (ORDER BY g ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS g
      FROM spv WHERE g <= 3000) w
JOIN (SELECT g AS k, (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY t) FROM spv s2 WHERE s2.g <= s1.g) AS b
      FROM spv s1 WHERE g <= 3000 AND g % 500 = 0) r USING (k);

-- the built-in syntax, rewritten (gpuselect.accelerate_builtins): spilled, the built-in's answers
CREATE FUNCTION pg_temp.plan_has(q text, what text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	l text;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || q LOOP
		IF l LIKE '%' || what || '%' THEN
			RETURN true;
		END IF;
	END LOOP;
	RETURN false;
END
$$;
SET gpuselect.accelerate_builtins = off;
SELECT percentile_disc(0.37) WITHIN GROUP (ORDER BY t)::text AS b_t,
       percentile_disc(0.37) WITHIN GROUP (ORDER BY nmix DESC)::text AS b_n,
       percentile_cont(0.37) WITHIN GROUP (ORDER BY iv)::text AS b_iv,
       percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY u)::text AS b_u,
       percentile_disc(0.37) WITHIN GROUP (ORDER BY n2)::text AS b_n2
FROM spv \gset
SET gpuselect.accelerate_builtins = on;
SELECT value::int8 AS spilled_before FROM gpuselect_status() WHERE name = 'states_spilled' \gset
SELECT percentile_disc(0.37) WITHIN GROUP (ORDER BY t)::text = :'b_t' AS rw_t,
       percentile_disc(0.37) WITHIN GROUP (ORDER BY nmix DESC) = :'b_n'::numeric AS rw_n,
       percentile_cont(0.37) WITHIN GROUP (ORDER BY iv)::text = :'b_iv' AS rw_iv,
       percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY u)::text = :'b_u' AS rw_u
FROM spv;
SELECT value::int8 - :spilled_before AS rewritten_spilled FROM gpuselect_status() WHERE name = 'states_spilled';
SELECT pg_temp.plan_has('SELECT percentile_disc(0.37) WITHIN GROUP (ORDER BY t) FROM spv', 'gs_planner_builtin_disc')
       AS rewritten;

-- parallel: the leader's combined state spills as the values come in
-- (numeric(10,2): keys, turned into values); the partial states that pass
-- the limit (workers' and, if it scanned enough, the leader's own) spill into
-- files the leader reads (test/t/015 checks those)
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT pg_temp.plan_has('SELECT percentile_disc(0.37) WITHIN GROUP (ORDER BY t) FROM spv', 'Partial Aggregate')
       AS parallel_plan;
SELECT value::int8 AS spilled_before FROM gpuselect_status() WHERE name = 'states_spilled' \gset
SELECT percentile_disc(0.37) WITHIN GROUP (ORDER BY t)::text = :'b_t' AS par_t,
       percentile_disc(0.37) WITHIN GROUP (ORDER BY nmix DESC) = :'b_n'::numeric AS par_n,
       percentile_cont(0.37) WITHIN GROUP (ORDER BY iv)::text = :'b_iv' AS par_iv,
       percentile_disc(0.37) WITHIN GROUP (ORDER BY n2)::text = :'b_n2' AS par_n2
FROM spv;
SELECT value::int8 - :spilled_before >= 4 AS par_spilled FROM gpuselect_status() WHERE name = 'states_spilled';
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET gpuselect.accelerate_builtins;

DROP TABLE spv, spv_fr;
RESET gpuselect.work_mem;
