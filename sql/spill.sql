-- gpuselect.work_mem: a group beyond it spills its keys to a temporary file
-- and is selected in passes over it.  Every aggregate, compared with the
-- built-ins on the same data, with a tiny limit (64kB: 8192 float8 keys).
-- -0 and +0 are equal values whose order among themselves is the built-in
-- sort's accident (README, exact semantics): results compare by value, and
-- by text with the sign of zero ignored; the spilled and the in-memory path
-- are compared by text, sign of zero included.
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate
LOAD 'gpuselect';

-- the setting: -1 (work_mem) or at least 64kB, any role may set it
SHOW gpuselect.work_mem;
SET gpuselect.work_mem = 63;
SET gpuselect.work_mem = -1;
SELECT value::int8 = pg_size_bytes(current_setting('work_mem')) AS follows_work_mem
  FROM gpuselect_status() WHERE name = 'work_mem_bytes';
SET gpuselect.work_mem = '64kB';

SELECT setseed(0.17);
CREATE TABLE sp_t AS
SELECT g,
       g % 3 AS grp,
       CASE WHEN g % 19 = 0 THEN NULL ELSE (random() * 200 - 100)::int2 END AS i2,
       CASE WHEN g % 19 = 0 THEN NULL
            WHEN g % 3 = 0 THEN (random() * 50)::int4
            ELSE (random() * 4e9 - 2e9)::int4 END AS i4,
       CASE WHEN g % 19 = 0 THEN NULL ELSE ((random() - 0.5) * 1.8e19)::int8 END AS i8,
       CASE WHEN g % 19 = 0 THEN NULL
            WHEN g % 101 = 0 THEN 'NaN'::float4
            WHEN g % 103 = 0 THEN '-0'::float4
            WHEN g % 107 = 0 THEN '0'::float4
            ELSE ((random() - 0.5) * 2e6)::float4 END AS f4,
       CASE WHEN g % 19 = 0 THEN NULL
            WHEN g % 101 = 0 THEN 'NaN'::float8
            WHEN g % 103 = 0 THEN '-0'::float8
            WHEN g % 107 = 0 THEN '0'::float8
            WHEN g % 109 = 0 THEN '-Infinity'::float8
            WHEN g % 5 = 0 THEN round(random() * 10)::float8
            ELSE random() END AS f8,
       CASE WHEN g % 19 = 0 THEN NULL ELSE date '2000-01-01' + (random() * 40000 - 20000)::int END AS d,
       CASE WHEN g % 19 = 0 THEN NULL ELSE timestamp '2000-01-01' + random() * interval '20000 days' END AS ts,
       CASE WHEN g % 19 = 0 THEN NULL ELSE timestamptz '2000-01-01 00:00+00' - random() * interval '20000 days' END AS tstz,
       CASE WHEN g % 19 = 0 THEN NULL ELSE 42.5::float8 END AS same,
       CASE WHEN g % 19 = 0 THEN NULL ELSE (g % 4)::int8 END AS few
FROM generate_series(1, 60000) g;

CREATE TABLE sp_fr (p float8);
INSERT INTO sp_fr VALUES (0), (1), (0.07), (1.0/3), (2.0/3), (0.5), (0.25), (0.75),
  (0.001), (0.999), (1e-9), (1 - 1e-9), (0.4999999), (0.123456789);

-- disc, ASC and DESC, every type (and heavy duplicates: all equal, four values)
SELECT format($q$
SELECT %1$L AS col,
       bool_and(g IS NOT DISTINCT FROM b AND (g::text IN ('0', '-0') OR g::text IS NOT DISTINCT FROM b::text)) AS disc_ok,
       bool_and(gd IS NOT DISTINCT FROM bd AND (gd::text IN ('0', '-0') OR gd::text IS NOT DISTINCT FROM bd::text)) AS disc_desc_ok
FROM (SELECT p, gpu_percentile_disc(p) WITHIN GROUP (ORDER BY %1$I) AS g,
                percentile_disc(p) WITHIN GROUP (ORDER BY %1$I) AS b,
                gpu_percentile_disc(p) WITHIN GROUP (ORDER BY %1$I DESC) AS gd,
                percentile_disc(p) WITHIN GROUP (ORDER BY %1$I DESC) AS bd
      FROM sp_t CROSS JOIN sp_fr GROUP BY p) s$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8','d','ts','tstz','same','few']) c
\gexec

-- the groups above spilled, in passes
SELECT value::int8 > 0 AS spilled FROM gpuselect_status() WHERE name = 'states_spilled';
SELECT value LIKE 'cpu (spilled, % passes)' AS spilled_path FROM gpuselect_status() WHERE name = 'last_path';

-- cont, ASC and DESC, numeric types
SELECT format($q$
SELECT %1$L AS col,
       bool_and(g IS NOT DISTINCT FROM b AND (g::text IN ('0', '-0') OR g::text IS NOT DISTINCT FROM b::text)) AS cont_ok,
       bool_and(gd IS NOT DISTINCT FROM bd AND (gd::text IN ('0', '-0') OR gd::text IS NOT DISTINCT FROM bd::text)) AS cont_desc_ok
FROM (SELECT p, gpu_percentile_cont(p) WITHIN GROUP (ORDER BY %1$I) AS g,
                percentile_cont(p) WITHIN GROUP (ORDER BY %1$I) AS b,
                gpu_percentile_cont(p) WITHIN GROUP (ORDER BY %1$I DESC) AS gd,
                percentile_cont(p) WITHIN GROUP (ORDER BY %1$I DESC) AS bd
      FROM sp_t CROSS JOIN sp_fr GROUP BY p) s$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8','same','few']) c
\gexec

-- array fractions (with a NULL element), the plain aggregates, GROUP BY
SELECT format($q$
SELECT %1$L AS col,
       bool_and(ga IS NOT DISTINCT FROM ba AND replace(ga::text, '-0', '0') IS NOT DISTINCT FROM replace(ba::text, '-0', '0')) AS disc_multi_ok,
       bool_and(gq IS NOT DISTINCT FROM ba AND replace(gq::text, '-0', '0') IS NOT DISTINCT FROM replace(ba::text, '-0', '0')) AS quantiles_ok,
       bool_and(g1 IS NOT DISTINCT FROM b1 AND replace(g1::text, '-0', '0') IS NOT DISTINCT FROM replace(b1::text, '-0', '0')) AS quantile_ok
FROM (SELECT grp,
             gpu_percentile_disc('{0.5,0.01,NULL,0.99,0,1,0.5}'::float8[]) WITHIN GROUP (ORDER BY %1$I) AS ga,
             percentile_disc('{0.5,0.01,NULL,0.99,0,1,0.5}'::float8[]) WITHIN GROUP (ORDER BY %1$I) AS ba,
             gpu_quantiles(%1$I, '{0.5,0.01,NULL,0.99,0,1,0.5}') AS gq,
             gpu_quantile(%1$I, 0.3) AS g1,
             percentile_disc(0.3) WITHIN GROUP (ORDER BY %1$I) AS b1
      FROM sp_t GROUP BY grp) s$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8','d','ts','tstz','same','few']) c
\gexec

SELECT format($q$
SELECT %1$L AS col,
       bool_and(ga IS NOT DISTINCT FROM ba AND replace(ga::text, '-0', '0') IS NOT DISTINCT FROM replace(ba::text, '-0', '0')) AS cont_multi_ok,
       bool_and(gm IS NOT DISTINCT FROM bm AND replace(gm::text, '-0', '0') IS NOT DISTINCT FROM replace(bm::text, '-0', '0')) AS median_ok
FROM (SELECT grp,
             gpu_percentile_cont('{0.5,0.01,NULL,0.99,0,1,0.333}'::float8[]) WITHIN GROUP (ORDER BY %1$I DESC) AS ga,
             percentile_cont('{0.5,0.01,NULL,0.99,0,1,0.333}'::float8[]) WITHIN GROUP (ORDER BY %1$I DESC) AS ba,
             gpu_median(%1$I) AS gm,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY %1$I) AS bm
      FROM sp_t GROUP BY grp) s$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8','same','few']) c
\gexec

-- many fractions (4001 distinct ranks): several gather batches within the limit
SELECT replace((SELECT gpu_percentile_disc(a) WITHIN GROUP (ORDER BY f8) FROM sp_t)::text, '-0', '0')
     = replace((SELECT percentile_disc(a) WITHIN GROUP (ORDER BY f8) FROM sp_t)::text, '-0', '0') AS many_disc_ok,
       (SELECT gpu_percentile_cont(a) WITHIN GROUP (ORDER BY i8) FROM sp_t)::text
     = (SELECT percentile_cont(a) WITHIN GROUP (ORDER BY i8) FROM sp_t)::text AS many_cont_ok
FROM (SELECT array_agg(i / 4000.0 ORDER BY random()) AS a FROM generate_series(0, 4000) i) f;

-- the same group, spilled and not: one answer; approximate mode is exact once spilled
SELECT gpu_quantiles(f8, '{0.01,0.015,0.02,0.1,0.5,0.9}')::text AS spilled_f8,
       gpu_quantiles(f4, '{0.49,0.495,0.5,0.505,0.51}')::text AS spilled_f4 FROM sp_t \gset
RESET gpuselect.work_mem;
SELECT gpu_quantiles(f8, '{0.01,0.015,0.02,0.1,0.5,0.9}')::text = :'spilled_f8' AS same_unspilled_f8,
       gpu_quantiles(f4, '{0.49,0.495,0.5,0.505,0.51}')::text = :'spilled_f4' AS same_unspilled_f4,
       (SELECT count(*) FROM regexp_matches(:'spilled_f8' || :'spilled_f4', '(^|[{,])-?0([,}]|$)', 'g')) > 0 AS zeros_picked
  FROM sp_t;
SET gpuselect.work_mem = '64kB';
SET gpuselect.approximate = on;
SELECT gpu_median(f8) = (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM sp_t) AS approx_spilled_exact
  FROM sp_t;
SELECT value AS rank_bound FROM gpuselect_status() WHERE name = 'last_rank_bound';
RESET gpuselect.approximate;

-- a spilled group cannot take gpuselect.device = 'gpu' (gpu_min_rows out of
-- reach: with the GPU service a group headed for the GPU takes whole chunks
-- of the shared key pool, 4MB by default, so this small group would never
-- grow past its first chunk to gpuselect.work_mem's check)
SET gpuselect.gpu_min_rows = 1000000000;
SET gpuselect.device = 'gpu';
SELECT gpu_median(f8) FROM sp_t;
RESET gpuselect.device;
RESET gpuselect.gpu_min_rows;
SET gpuselect.device = 'cpu';

-- a window over a growing frame: a final call, then more rows, then another
SELECT count(*) FILTER (WHERE g IS DISTINCT FROM b) AS window_mismatches
FROM (SELECT g AS k, gpu_quantile(f8, 0.5) OVER (ORDER BY g ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS g
      FROM sp_t WHERE g <= 12000) w
JOIN (SELECT k, (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY f8) FROM sp_t WHERE g <= k) AS b
      FROM (VALUES (1), (8000), (9000), (11111), (12000)) v(k)) c USING (k);

-- parallel plain aggregates: workers' partial states do not spill, the
-- leader's combined state does
SELECT percentile_disc('{0.5,0.01,0.99}'::float8[]) WITHIN GROUP (ORDER BY i8)::text AS b_par,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY i4) AS b_med FROM sp_t \gset
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT gpu_quantiles(i8, '{0.5,0.01,0.99}')::text = :'b_par' AS parallel_quantiles_ok,
       gpu_median(i4) = :b_med AS parallel_median_ok
  FROM sp_t;
SELECT value LIKE 'cpu (spilled, % passes)' AS leader_spilled FROM gpuselect_status() WHERE name = 'last_path';
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;

-- temp_file_limit: the built-in's error (53400)
SET temp_file_limit = '100kB';
SELECT gpu_median(f8) FROM sp_t;
SET work_mem = '64kB';
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM sp_t;
RESET work_mem;
RESET temp_file_limit;

DROP TABLE sp_t, sp_fr;
