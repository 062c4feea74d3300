-- gpuselect: gpu_median / gpu_quantile / gpu_quantiles as window aggregates
-- with moving-aggregate support (src/moving_aggs.c) vs the built-ins over
-- the same frame.  The reference takes each row's frame from PostgreSQL
-- itself (array_agg(x) OVER the same window, which has no inverse and is
-- aggregated anew for every row) and runs percentile_disc / percentile_cont
-- over it in a LATERAL sub-select; ROWS frames are also checked against
-- frames built from explicit row numbers.  Every result is a count of
-- mismatches: 0.
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate

SELECT setseed(0.33);
CREATE TABLE gs_mv AS
SELECT id,
       id % 3 AS grp,
       id / 4 AS k,							-- peers for RANGE and GROUPS
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 20)::int2 END AS i2,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 40 - 20)::int4 END AS i4,
       CASE WHEN random() < 0.1 THEN NULL
            WHEN id % 53 = 0 THEN -9223372036854775808
            WHEN id % 59 = 0 THEN 9223372036854775807
            ELSE (random() * 1e6)::int8 END AS i8,
       CASE WHEN random() < 0.1 THEN NULL
            WHEN id % 31 = 0 THEN 'NaN'::float4
            WHEN id % 37 = 0 THEN '-0'::float4
            ELSE (random() * 10)::int::float4 END AS f4,
       CASE WHEN random() < 0.1 THEN NULL
            WHEN id % 17 = 0 THEN 'NaN'::float8
            WHEN id % 19 = 0 THEN 'Infinity'::float8
            WHEN id % 23 = 0 THEN '-Infinity'::float8
            WHEN id % 29 = 0 THEN '-0'::float8
            WHEN id % 13 = 0 THEN 0::float8
            ELSE round((random() - 0.5) * 100) / 4 END AS f8,
       -- zeros of one sign only: the sign of a zero answer is compared as text
       CASE WHEN random() < 0.1 THEN NULL
            WHEN id % 5 = 0 THEN '-0'::float8
            ELSE (random() * 6)::int + 1 END AS fz,
       CASE WHEN random() < 0.1 THEN NULL
            WHEN id % 41 = 0 THEN 'infinity'::date
            WHEN id % 43 = 0 THEN '-infinity'::date
            ELSE date '2020-01-01' + (random() * 30)::int END AS d,
       CASE WHEN random() < 0.1 THEN NULL
            WHEN id % 47 = 0 THEN 'infinity'::timestamp
            ELSE timestamp '2020-01-01' + (random() * 50)::int * interval '1 hour' END AS ts,
       CASE WHEN random() < 0.1 THEN NULL
            ELSE timestamptz '2020-01-01 00:00+00' + (random() * 50)::int * interval '1 min' END AS tstz,
       -- comparison types (re-aggregated per frame): equal values of other bytes
       CASE WHEN random() < 0.1 THEN NULL
            WHEN id % 61 = 0 THEN 'NaN'::numeric
            WHEN id % 7 = 0 THEN 1.00
            WHEN id % 11 = 0 THEN 1.0
            ELSE round((random() * 10)::numeric, 1) END AS n,
       CASE WHEN random() < 0.1 THEN NULL ELSE chr(65 + (random() * 10)::int) || (id % 3) END AS t,
       CASE WHEN random() < 0.1 THEN NULL
            WHEN id % 7 = 0 THEN interval '1 day'
            WHEN id % 11 = 0 THEN interval '24 hours'
            ELSE (random() * 48)::int * interval '1 hour' END AS iv
FROM generate_series(1, 600) id;

CREATE TABLE gs_mv_frames (name text, spec text);
INSERT INTO gs_mv_frames VALUES
  ('rows 3 preceding', 'ROWS BETWEEN 3 PRECEDING AND CURRENT ROW'),
  ('rows 7 preceding .. 2 following', 'ROWS BETWEEN 7 PRECEDING AND 2 FOLLOWING'),
  ('rows 2 following .. 6 following', 'ROWS BETWEEN 2 FOLLOWING AND 6 FOLLOWING'),
  ('rows 4 preceding .. 6 preceding (empty)', 'ROWS BETWEEN 4 PRECEDING AND 6 PRECEDING'),
  ('rows 5 preceding .. 5 preceding (restarts)', 'ROWS BETWEEN 5 PRECEDING AND 5 PRECEDING'),
  ('rows current .. unbounded following', 'ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING'),
  ('rows unbounded preceding (no moving head)', 'ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW'),
  ('range 3 preceding .. 1 following', 'RANGE BETWEEN 3 PRECEDING AND 1 FOLLOWING'),
  ('range current row (peers)', 'RANGE BETWEEN CURRENT ROW AND 2 FOLLOWING'),
  ('groups 2 preceding .. 1 following', 'GROUPS BETWEEN 2 PRECEDING AND 1 FOLLOWING'),
  ('rows exclude current row', 'ROWS BETWEEN 4 PRECEDING AND 4 FOLLOWING EXCLUDE CURRENT ROW'),
  ('range exclude group', 'RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE GROUP'),
  ('groups exclude ties', 'GROUPS BETWEEN 2 PRECEDING AND CURRENT ROW EXCLUDE TIES'),
  ('range unbounded preceding exclude ties', 'RANGE BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING EXCLUDE TIES');

-- per frame: every column, gpu_quantile(x, 0.3), gpu_quantiles(x, p[]) and,
-- for the numeric types and interval, gpu_median(x); ours in one query, the
-- reference frames in another, joined by id.  ORDER BY k, id: ROWS frames
-- are deterministic; RANGE (ORDER BY k: offsets take one column) and GROUPS
-- frames are sets of peer groups.
CREATE TABLE gs_mv_cols (c text, med text);
INSERT INTO gs_mv_cols VALUES
  ('i2', 'float8'), ('i4', 'float8'), ('i8', 'float8'), ('f4', 'float8'), ('f8', 'float8'),
  ('fz', 'float8'), ('d', NULL), ('ts', NULL), ('tstz', NULL), ('n', NULL), ('t', NULL),
  ('iv', 'interval');

SELECT format($q$
WITH ours AS MATERIALIZED (
  SELECT id, %2$s
  FROM gs_mv WINDOW w AS (PARTITION BY grp ORDER BY %6$s %1$s)),
ref AS MATERIALIZED (
  SELECT id, %3$s
  FROM gs_mv WINDOW w AS (PARTITION BY grp ORDER BY %6$s %1$s))
SELECT %4$L AS frame, count(*) AS rows, %5$s AS mismatches
FROM ours JOIN ref USING (id)$q$,
  f.spec,
  string_agg(format('gpu_quantile(%1$I, 0.3) OVER w AS q_%1$s, gpu_quantiles(%1$I, ''{0.9, 0, 1, NULL, 0.5, 0.07}'') OVER w AS qs_%1$s', c)
             || CASE WHEN med IS NOT NULL THEN format(', gpu_median(%1$I) OVER w AS m_%1$s', c) ELSE '' END, ', '),
  string_agg(format('array_agg(%1$I) OVER w AS fr_%1$s', c), ', '),
  f.name,
  string_agg(format($m$count(*) FILTER (WHERE q_%1$s IS DISTINCT FROM (SELECT percentile_disc(0.3) WITHIN GROUP (ORDER BY v) FROM unnest(fr_%1$s) v)
       OR qs_%1$s IS DISTINCT FROM (SELECT percentile_disc('{0.9, 0, 1, NULL, 0.5, 0.07}'::float8[]) WITHIN GROUP (ORDER BY v) FROM unnest(fr_%1$s) v)%2$s%3$s)$m$,
       c,
       CASE med WHEN 'float8' THEN format(' OR m_%1$s IS DISTINCT FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v::float8) FROM unnest(fr_%1$s) v)', c)
                WHEN 'interval' THEN format(' OR m_%1$s IS DISTINCT FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FROM unnest(fr_%1$s) v)', c)
                ELSE '' END,
       CASE WHEN c = 'fz' THEN format($z$ OR q_fz::text IS DISTINCT FROM (SELECT percentile_disc(0.3) WITHIN GROUP (ORDER BY v) FROM unnest(fr_fz) v)::text
       OR qs_fz::text IS DISTINCT FROM (SELECT percentile_disc('{0.9, 0, 1, NULL, 0.5, 0.07}'::float8[]) WITHIN GROUP (ORDER BY v) FROM unnest(fr_fz) v)::text
       OR m_fz::text IS DISTINCT FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FROM unnest(fr_fz) v)::text$z$) ELSE '' END),
     ' + '),
  CASE WHEN f.spec LIKE 'RANGE%' THEN 'k' ELSE 'k, id' END)
FROM gs_mv_frames f CROSS JOIN gs_mv_cols
GROUP BY f.name, f.spec
ORDER BY f.name
\gexec

-- ROWS frames against frames of explicit row numbers (no window machinery
-- in the reference): moving medians and p95 over w = 1, 2, 10, 50 rows
CREATE TABLE gs_mv_rn AS
SELECT id, grp, f8, i4, row_number() OVER (PARTITION BY grp ORDER BY id) AS rn FROM gs_mv;
SELECT w, count(*) AS rows,
       count(*) FILTER (WHERE o.m IS DISTINCT FROM r.m OR o.q IS DISTINCT FROM r.q
                        OR o.qi IS DISTINCT FROM r.qi) AS mismatches
FROM unnest(ARRAY[1, 2, 10, 50]) w
CROSS JOIN LATERAL (
  SELECT id, gpu_median(f8) OVER x AS m, gpu_quantile(f8, 0.95) OVER x AS q,
         gpu_quantile(i4, 0.5) OVER x AS qi
  FROM gs_mv_rn WINDOW x AS (PARTITION BY grp ORDER BY id ROWS BETWEEN w - 1 PRECEDING AND CURRENT ROW)) o
JOIN LATERAL (
  SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY b.f8) AS m,
         percentile_disc(0.95) WITHIN GROUP (ORDER BY b.f8) AS q,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY b.i4) AS qi
  FROM gs_mv_rn a JOIN gs_mv_rn b ON b.grp = a.grp AND b.rn BETWEEN a.rn - w + 1 AND a.rn
  WHERE a.id = o.id) r ON true
GROUP BY w ORDER BY w;

-- several aggregates over one window (one WindowAgg: moving ones, and sum
-- and array_agg, which restart), a fraction per partition (equal within
-- each frame), a NULL fraction
SELECT count(*) AS rows,
       count(*) FILTER (WHERE q1 IS DISTINCT FROM (SELECT percentile_disc(0.95) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)
                        OR q2 IS DISTINCT FROM (SELECT percentile_disc(grp / 4.0) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)
                        OR qs IS DISTINCT FROM (SELECT percentile_disc('{0.5,0.9,0.99}'::float8[]) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)
                        OR m IS DISTINCT FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)
                        OR s IS DISTINCT FROM (SELECT sum(v) FROM unnest(fr) v)
                        OR qn IS NOT NULL OR qsn IS NOT NULL) AS mismatches
FROM (SELECT grp, gpu_quantile(f8, 0.95) OVER w AS q1, gpu_quantile(f8, grp / 4.0) OVER w AS q2,
             gpu_quantiles(f8, '{0.5,0.9,0.99}') OVER w AS qs, gpu_median(f8) OVER w AS m,
             sum(f8) OVER w AS s, array_agg(f8) OVER w AS fr,
             gpu_quantile(f8, NULL) OVER w AS qn, gpu_quantiles(f8, NULL) OVER w AS qsn
      FROM gs_mv WINDOW w AS (PARTITION BY grp ORDER BY id ROWS BETWEEN 6 PRECEDING AND 1 FOLLOWING)) s;

-- a frame beyond gpuselect.work_mem (64kB: 8192 keys of 8 bytes) goes to
-- the tree while PostgreSQL adds it, before the append phase would spill;
-- the reference for every 250th row
CREATE TABLE gs_mv_big AS
SELECT g, CASE WHEN g % 13 = 0 THEN NULL ELSE ((g * 7919) % 4001) / 4.0 END::float8 AS x
FROM generate_series(1, 9000) g;
SET gpuselect.work_mem = 64;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE q IS DISTINCT FROM (SELECT percentile_disc(0.7) WITHIN GROUP (ORDER BY x) FROM gs_mv_big b WHERE b.g >= o.g)
                        OR m IS DISTINCT FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM gs_mv_big b WHERE b.g >= o.g)) AS mismatches
FROM (SELECT g, gpu_quantile(x, 0.7) OVER w AS q, gpu_median(x) OVER w AS m
      FROM gs_mv_big WINDOW w AS (ORDER BY g ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)) o
WHERE g % 250 = 1;
RESET gpuselect.work_mem;

-- fractions: checked as the plain aggregates check them
SELECT gpu_quantile(x, 1.5) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
FROM generate_series(1, 3) x;
-- a fraction that differs within a frame
SELECT gpu_quantile(x, x / 10.0) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
FROM generate_series(1, 3) x;
SELECT gpu_quantiles(x, ARRAY[x / 10.0]) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
FROM generate_series(1, 3) x;
-- ... but not within any frame: no error
SELECT x, gpu_quantile(x, x / 10.0) OVER (ORDER BY x ROWS BETWEEN CURRENT ROW AND CURRENT ROW)
FROM generate_series(1, 3) x;
-- not a window: grouped and plain answers as before
SELECT grp, gpu_quantile(f8, 0.3) IS NOT DISTINCT FROM percentile_disc(0.3) WITHIN GROUP (ORDER BY f8) AS ok
FROM gs_mv GROUP BY grp ORDER BY grp;

DROP TABLE gs_mv, gs_mv_frames, gs_mv_cols, gs_mv_rn, gs_mv_big;
