-- gpuselect: plain aggregates gpu_median / gpu_quantile / gpu_quantiles vs the built-ins
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate

SELECT setseed(0.17);
CREATE TABLE gs_p AS
SELECT g,
       g % 11 AS grp,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 60000 - 30000)::int2 END AS i2,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 1000)::int4 END AS i4,
       CASE WHEN random() < 0.05 THEN NULL ELSE ((random() - 0.5) * 1e15)::int8 END AS i8,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 100)::float4 END AS f4,
       CASE WHEN random() < 0.05 THEN NULL
            WHEN g % 97 = 0 THEN 'NaN'::float8
            WHEN g % 89 = 0 THEN '-Infinity'::float8
            ELSE (random() - 0.5) * 1e6 END AS f8,
       CASE WHEN random() < 0.05 THEN NULL ELSE date '1970-01-01' + (random() * 30000)::int END AS d,
       CASE WHEN random() < 0.05 THEN NULL ELSE timestamp '1970-01-01' + random() * interval '30000 days' END AS ts,
       CASE WHEN random() < 0.05 THEN NULL ELSE timestamptz '1970-01-01 00:00+00' + random() * interval '30000 days' END AS tstz
FROM generate_series(1, 4000) g;

-- gpu_quantile(x, p) = percentile_disc(p), gpu_quantiles(x, p[]) = percentile_disc(p[]), per group
SELECT format($q$
SELECT %1$L AS col, count(*) AS groups,
       bool_and(q IS NOT DISTINCT FROM bq AND q::text IS NOT DISTINCT FROM bq::text) AS quantile_ok,
       bool_and(qs::text IS NOT DISTINCT FROM bqs::text) AS quantiles_ok
FROM (SELECT grp,
             gpu_quantile(%1$I, 0.37) AS q, percentile_disc(0.37) WITHIN GROUP (ORDER BY %1$I) AS bq,
             gpu_quantiles(%1$I, ARRAY[0.9, 0, 1, NULL, 0.07, 1.0/3, 0.5, 0.5]) AS qs,
             percentile_disc(ARRAY[0.9, 0, 1, NULL, 0.07, 1.0/3, 0.5, 0.5]) WITHIN GROUP (ORDER BY %1$I) AS bqs
      FROM gs_p GROUP BY grp) s$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8','d','ts','tstz']) c
\gexec

-- gpu_median(x) = percentile_cont(0.5) over x::float8
SELECT format($q$
SELECT %1$L AS col, count(*) AS groups,
       bool_and(m IS NOT DISTINCT FROM bm AND m::text IS NOT DISTINCT FROM bm::text) AS median_ok
FROM (SELECT grp, gpu_median(%1$I) AS m, percentile_cont(0.5) WITHIN GROUP (ORDER BY %1$I) AS bm
      FROM gs_p GROUP BY grp
      UNION ALL
      SELECT -1, gpu_median(%1$I), percentile_cont(0.5) WITHIN GROUP (ORDER BY %1$I) FROM gs_p) s$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8']) c
\gexec

-- the fraction may come from a column as long as it is the same in every row of the group
SELECT bool_and(q IS NOT DISTINCT FROM bq) AS per_group_fraction_ok
FROM (SELECT grp, gpu_quantile(i4, grp / 10.0) AS q,
             percentile_disc(grp / 10.0) WITHIN GROUP (ORDER BY i4) AS bq
      FROM gs_p GROUP BY grp) s;
SELECT bool_and(q::text IS NOT DISTINCT FROM bq::text) AS per_group_fraction_array_ok
FROM (SELECT grp, gpu_quantiles(f8, ARRAY[grp / 10.0, 1 - grp / 10.0]) AS q,
             percentile_disc(ARRAY[grp / 10.0, 1 - grp / 10.0]) WITHIN GROUP (ORDER BY f8) AS bq
      FROM gs_p GROUP BY grp) s;

-- empty and all-NULL input; NULL fraction; empty / NULL / multi-dimensional fraction arrays
SELECT gpu_median(x) AS m, gpu_quantile(x, 0.5) AS q, gpu_quantiles(x, ARRAY[0.5]) AS qs
FROM (SELECT 1::int4 AS x WHERE false) s;
SELECT gpu_median(x) AS m, gpu_quantile(x, 0.5) AS q, gpu_quantiles(x, ARRAY[0.5]) AS qs
FROM (VALUES (NULL::float8), (NULL)) s(x);
SELECT gpu_quantile(x, NULL) AS q, gpu_quantiles(x, NULL) AS qs, gpu_quantiles(x, '{}') AS qs_empty,
       pg_typeof(gpu_quantiles(x, '{}')) AS qs_type
FROM generate_series(1, 5) x;
SELECT gpu_quantiles(x, '[-3:-2][1:2]={{0,NULL},{0.5,1}}') AS g,
       percentile_disc('[-3:-2][1:2]={{0,NULL},{0.5,1}}'::float8[]) WITHIN GROUP (ORDER BY x) AS b
FROM generate_series(1, 10) x;
-- no rows: the array is not looked at (like percentile_disc(float8[]))
SELECT gpu_quantiles(x, ARRAY[2]) FROM (VALUES (NULL::int4)) s(x);
-- result types
SELECT pg_typeof(gpu_median(1::int2)), pg_typeof(gpu_quantile(1::int2, 0.5)),
       pg_typeof(gpu_quantiles(now(), ARRAY[0.5])), pg_typeof(gpu_quantile(current_date, 0.5));

-- as a window aggregate
SELECT g, gpu_median(g) OVER (ORDER BY g) AS m, gpu_quantile(g, 0.5) OVER (ORDER BY g) AS q
FROM generate_series(1, 4) g ORDER BY g;
SELECT bool_and(m IS NOT DISTINCT FROM ((g + 1) / 2.0)) AS running_median_ok
FROM (SELECT g, gpu_median(g) OVER (ORDER BY g) AS m FROM generate_series(1, 200) g) s;

-- hash aggregation that spills to disk (states rebuilt batch by batch)
CREATE TEMP TABLE gs_h AS
SELECT (random() * 3000)::int4 AS k, random() AS x, (random() * 100)::int2 AS s
FROM generate_series(1, 60000);
ANALYZE gs_h;
SET enable_sort = off;
SET work_mem = '64kB';
SET hash_mem_multiplier = 1;
EXPLAIN (COSTS OFF) SELECT k, gpu_median(x) FROM gs_h GROUP BY k;
CREATE TEMP TABLE gs_h1 AS
SELECT k, gpu_median(x) AS m, gpu_quantile(s, 0.3) AS q, gpu_quantiles(x, ARRAY[0.1, 0.9]) AS qs FROM gs_h GROUP BY k;
RESET enable_sort;
RESET work_mem;
RESET hash_mem_multiplier;
SELECT count(*) AS groups,
       bool_and(a.m = b.m AND a.q = b.q AND a.qs = b.qs) AS hashagg_spill_ok
FROM gs_h1 a JOIN
     (SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS m, percentile_disc(0.3) WITHIN GROUP (ORDER BY s) AS q,
             percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY x) AS qs
      FROM gs_h GROUP BY k) b USING (k);
DROP TABLE gs_h, gs_h1;

-- errors
SELECT gpu_quantile(x, 1.5) FROM generate_series(1, 10) x;
SELECT gpu_quantile(x, 'NaN') FROM generate_series(1, 10) x;
SELECT gpu_quantiles(x, ARRAY[0.2, 2]) FROM generate_series(1, 10) x;
-- a different fraction in a later row (22023)
SELECT gpu_quantile(x, x / 10.0) FROM generate_series(1, 10) x;
SELECT gpu_quantile(x, CASE WHEN x < 5 THEN 0.5 END) FROM generate_series(1, 10) x;
SELECT gpu_quantiles(x, ARRAY[0.5, x / 10.0]) FROM generate_series(1, 10) x;
-- the same value computed per row is fine
SELECT gpu_quantile(x, (x * 0 + 1) / 4.0) AS q, gpu_quantiles(x, ARRAY[(x * 0 + 1) / 4.0]) AS qs
FROM generate_series(1, 10) x;
\set VERBOSITY default
SELECT gpu_quantile(x, x / 10.0) FROM generate_series(1, 10) x;
-- gpu_median takes float8 and interval (as percentile_cont); gpu_quantile(s) any type with a btree ordering
SELECT gpu_median(x) FROM (VALUES (date '2020-01-01')) s(x);
SELECT gpu_median(x) FROM (SELECT 'a'::text AS x WHERE false) s;
SELECT gpu_quantile(x, 0.5) FROM (VALUES (1.5::numeric)) s(x);
SELECT gpu_quantiles(x, ARRAY[0.5]) FROM (SELECT 'a'::text AS x WHERE false) s;
\set VERBOSITY sqlstate

DROP TABLE gs_p;
