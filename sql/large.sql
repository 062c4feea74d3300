-- gpuselect: larger differential test (300k rows per type, 101 fractions), so
-- the selection engines' multi-level paths run; compared with the built-ins
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 0;
-- CUDA builds run these on the GPU; CPU-only builds on the CPU
SET gpuselect.gpu_min_rows = 0;
\set VERBOSITY sqlstate

SELECT setseed(0.31);
CREATE TABLE gs_big AS
SELECT CASE WHEN g % 101 = 0 THEN NULL ELSE (random() * 65535 - 32768)::int2 END AS i2,
       CASE WHEN g % 3 = 0 THEN (random() * 100)::int4 ELSE (random() * 4e9 - 2e9)::int4 END AS i4,
       ((random() - 0.5) * 1.8e19)::int8 AS i8,
       CASE WHEN g % 5 = 0 THEN round(random() * 3)::float4 ELSE (random() * 2e5 - 1e5)::float4 END AS f4,
       CASE WHEN g % 1009 = 0 THEN 'NaN'::float8
            WHEN g % 1013 = 0 THEN '-Infinity'::float8
            WHEN g % 1019 = 0 THEN 'Infinity'::float8
            ELSE exp(random() * 40 - 20) * sign(random() - 0.3) END AS f8,
       date '2000-01-01' + (random() * 100000 - 50000)::int AS d,
       timestamp '2000-01-01' + (random() - 0.5) * interval '200000 days' AS ts,
       timestamptz '2000-01-01 00:00+00' + (g % 1000) * interval '1 hour' AS tstz
FROM generate_series(1, 300000) g;

-- 101 fractions in random order, as a float8[] literal in :fr
SELECT array_agg(p ORDER BY o)::text AS fr
FROM (SELECT (g / 100.0)::float8 AS p, random() AS o FROM generate_series(0, 100) g) s \gset

SELECT format($q$
SELECT %1$L AS col,
  (gpu_percentile_disc(%2$L::float8[]) WITHIN GROUP (ORDER BY %1$I))::text = (percentile_disc(%2$L::float8[]) WITHIN GROUP (ORDER BY %1$I))::text AS disc_ok,
  (gpu_percentile_disc(%2$L::float8[]) WITHIN GROUP (ORDER BY %1$I DESC))::text = (percentile_disc(%2$L::float8[]) WITHIN GROUP (ORDER BY %1$I DESC))::text AS disc_desc_ok,
  gpu_quantiles(%1$I, %2$L::float8[])::text = (percentile_disc(%2$L::float8[]) WITHIN GROUP (ORDER BY %1$I))::text AS quantiles_ok
FROM gs_big$q$, c, :'fr')
FROM unnest(ARRAY['i2','i4','i8','f4','f8','d','ts','tstz']) c
\gexec

SELECT format($q$
SELECT %1$L AS col,
  (gpu_percentile_cont(%2$L::float8[]) WITHIN GROUP (ORDER BY %1$I))::text = (percentile_cont(%2$L::float8[]) WITHIN GROUP (ORDER BY %1$I))::text AS cont_ok,
  (gpu_percentile_cont(%2$L::float8[]) WITHIN GROUP (ORDER BY %1$I DESC))::text = (percentile_cont(%2$L::float8[]) WITHIN GROUP (ORDER BY %1$I DESC))::text AS cont_desc_ok,
  gpu_median(%1$I)::text = (percentile_cont(0.5) WITHIN GROUP (ORDER BY %1$I))::text AS median_ok
FROM gs_big$q$, c, :'fr')
FROM unnest(ARRAY['i2','i4','i8','f4','f8']) c
\gexec

-- single fractions over the big input
SELECT bool_and(g IS NOT DISTINCT FROM b) AS single_disc_ok, count(*) AS fractions
FROM (SELECT p, gpu_percentile_disc(p) WITHIN GROUP (ORDER BY f8) AS g,
                percentile_disc(p) WITHIN GROUP (ORDER BY f8) AS b
      FROM gs_big, unnest(ARRAY[0, 1, 0.07, 1.0/3, 0.5, 0.999999]) p GROUP BY p) s;

DROP TABLE gs_big;
