-- gpuselect: a view over the aggregates deparses (pg_get_viewdef) and runs.
-- A test of its own because the deparsed text differs between versions:
-- PostgreSQL 15 qualifies the columns of a one-table view (gs_vt.grp),
-- 16 and later do not (expected/viewdef_1.out).
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';

CREATE TABLE gs_vt AS
SELECT g,
       g % 7 AS grp,
       ((g::int8 * 7919) % 100003 - 50000)::int4 AS i4,
       CASE WHEN g % 20 = 0 THEN NULL ELSE ((g::int8 * 104729) % 1000003) / 7.0 - 70000 END::float8 AS f8,
       (((g * 31) % 1009) / 3.0)::float4 AS f4,
       date '2000-01-01' + (g * 37) % 20000 AS d,
       timestamp '2000-01-01' + ((g::int8 * 7919) % 100000) * interval '1 minute' AS ts
FROM generate_series(1, 3000) g;

CREATE VIEW gs_v AS
SELECT grp,
       gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY i4 DESC) AS d,
       gpu_percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY f8) FILTER (WHERE g > 10) AS c,
       gpu_median(f4) AS m, gpu_quantile(d, 0.9) AS q, gpu_quantiles(ts, ARRAY[0.1, 0.2]) AS qs
FROM gs_vt GROUP BY grp;
SELECT pg_get_viewdef('gs_v'::regclass, true);

-- the view's rows are the built-ins' answers
SELECT count(*) AS view_rows,
       count(*) FILTER (WHERE (v.d, v.c, v.m, v.q, v.qs) IS NOT DISTINCT FROM (b.d, b.c, b.m, b.q, b.qs)) AS equal_rows
FROM gs_v v JOIN (
  SELECT grp,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY i4 DESC) AS d,
         percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY f8) FILTER (WHERE g > 10) AS c,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY f4) AS m,
         percentile_disc(0.9) WITHIN GROUP (ORDER BY d) AS q,
         percentile_disc(ARRAY[0.1, 0.2]) WITHIN GROUP (ORDER BY ts) AS qs
  FROM gs_vt GROUP BY grp) b USING (grp);

DROP VIEW gs_v;
DROP TABLE gs_vt;
