-- gpuselect: domain types.  The built-ins build array results with the sort
-- column's type as element type, a domain if it is one; gpuselect's array
-- results must carry the same element type, or they neither concatenate
-- nor compare with the built-in's.
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate

CREATE DOMAIN gs_posf AS float8 CHECK (VALUE >= 0);
CREATE DOMAIN gs_small AS int2;
CREATE DOMAIN gs_when AS timestamptz;
CREATE DOMAIN gs_day AS date NOT NULL;
SELECT setseed(0.41);
CREATE TABLE gs_dom AS
SELECT g % 3 AS grp, (random() * 1000)::float8::gs_posf AS f, (random() * 2000 - 1000)::int2::gs_small AS s,
       (timestamptz '2020-01-01 00:00+00' + random() * interval '900 days')::gs_when AS w,
       (date '2020-01-01' + (random() * 900)::int)::gs_day AS d
FROM generate_series(1, 3000) g;

-- concatenation with the built-in's result (ERROR 42804 when element types differ)
SELECT gpu_percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY f)
       || percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY f) AS os_concat,
       gpu_quantiles(f, '{0.5,0.9}') || percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY f) AS plain_concat
FROM gs_dom;
SELECT gpu_quantiles(f, '{0.5}') || percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY f::gs_posf) AS issue_example
FROM gs_dom;

-- '=' with the built-in's result (ERROR 42804 when element types differ), per type and group,
-- ascending and descending, multi-dimensional with NULL elements, and empty arrays
SELECT format($q$
SELECT %1$L AS col, count(*) AS groups,
       bool_and(gpu_os = b AND gpu_os_desc = b_desc AND gpu_plain = b AND gpu_md = b_md AND gpu_empty = b_empty
                AND gpu_plain_empty = b_empty) AS same_as_builtin
FROM (SELECT grp,
             gpu_percentile_disc(ARRAY[0, 0.25, 0.5, 1]) WITHIN GROUP (ORDER BY %1$I) AS gpu_os,
             gpu_percentile_disc(ARRAY[0, 0.25, 0.5, 1]) WITHIN GROUP (ORDER BY %1$I DESC) AS gpu_os_desc,
             gpu_quantiles(%1$I, ARRAY[0, 0.25, 0.5, 1]) AS gpu_plain,
             gpu_percentile_disc('{{0.1,NULL},{0.7,1}}'::float8[]) WITHIN GROUP (ORDER BY %1$I) AS gpu_md,
             gpu_percentile_disc('{}'::float8[]) WITHIN GROUP (ORDER BY %1$I) AS gpu_empty,
             gpu_quantiles(%1$I, '{}') AS gpu_plain_empty,
             percentile_disc(ARRAY[0, 0.25, 0.5, 1]) WITHIN GROUP (ORDER BY %1$I) AS b,
             percentile_disc(ARRAY[0, 0.25, 0.5, 1]) WITHIN GROUP (ORDER BY %1$I DESC) AS b_desc,
             percentile_disc('{{0.1,NULL},{0.7,1}}'::float8[]) WITHIN GROUP (ORDER BY %1$I) AS b_md,
             percentile_disc('{}'::float8[]) WITHIN GROUP (ORDER BY %1$I) AS b_empty
      FROM gs_dom GROUP BY grp) s$q$, c)
FROM unnest(ARRAY['f', 's', 'w', 'd']) c
\gexec

-- result types, as the built-in's
SELECT pg_typeof(gpu_quantiles(f, '{0.5}')) AS plain, pg_typeof(gpu_percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY f)) AS os,
       pg_typeof(percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY f)) AS builtin,
       pg_typeof(gpu_quantile(f, 0.5)) AS plain1, pg_typeof(percentile_disc(0.5) WITHIN GROUP (ORDER BY f)) AS builtin1,
       pg_typeof(gpu_percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY f)) AS cont,
       pg_typeof(percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY f)) AS builtin_cont
FROM gs_dom;
SELECT gpu_percentile_cont(ARRAY[0.3, 0.5]) WITHIN GROUP (ORDER BY f) = percentile_cont(ARRAY[0.3, 0.5]) WITHIN GROUP (ORDER BY f)
       AS cont_same
FROM gs_dom;

-- stored in a domain array column
CREATE TEMP TABLE gs_dom_store (src text, a gs_posf[]);
INSERT INTO gs_dom_store SELECT 'builtin', percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY f) FROM gs_dom;
INSERT INTO gs_dom_store SELECT 'ordered-set', gpu_percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY f) FROM gs_dom;
INSERT INTO gs_dom_store SELECT 'plain', gpu_quantiles(f, '{0.5,0.9}') FROM gs_dom;
SELECT count(DISTINCT a) AS distinct_arrays, count(*) AS stored,
       bool_and(a = (SELECT a FROM gs_dom_store WHERE src = 'builtin')) AS all_equal
FROM gs_dom_store;

DROP TABLE gs_dom, gs_dom_store;
DROP DOMAIN gs_posf, gs_small, gs_when, gs_day;
