-- gpuselect: gpu_quantile / gpu_quantiles / gpu_median(interval) as moving
-- window aggregates over the comparison types (numeric, text, interval:
-- state/datum_frame.c) vs the built-ins over the same frame, and memory that
-- follows the frame.  Every result is a count of mismatches (0) or a check.
--
-- Equal values of other bytes (numeric 1 / 1.0 / 1.00, interval '1 day' /
-- '24 hours', '1 mon' / '30 days') are everywhere: the answers must equal
-- the built-in's under "=" always, and in bytes (compared as text) where the
-- built-in's sort is stable on the frame in window order -- frames of fewer
-- than 7 values (sort_template.h's insertion sort) and frames already in
-- order -- since the tree orders equal values by arrival (datum_frame.h).
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate

SELECT setseed(0.61);
CREATE TABLE gs_md AS
SELECT id,
       id % 2 AS grp,
       id / 3 AS k,								-- peers for RANGE and GROUPS
       CASE WHEN random() < 0.1 THEN NULL
            WHEN id % 41 = 0 THEN 'NaN'::numeric
            ELSE (ARRAY[1, 1.0, 1.00, 2.5, 2.50, 2.500, 0, 0.0, -3.25, 7])[1 + (random() * 9)::int]::numeric END AS n,
       CASE WHEN random() < 0.1 THEN NULL
            ELSE (ARRAY['b', 'a', 'ab', 'B', 'a b', '', 'zz', 'b'])[1 + (random() * 7)::int] || (id % 2) END
         COLLATE "C" AS t,
       CASE WHEN random() < 0.1 THEN NULL
            ELSE (ARRAY[interval '1 day', '24 hours', '1 mon', '30 days', '720 hours', '0', '-1 day', '36 hours'])
                 [1 + (random() * 7)::int] END AS iv
FROM generate_series(1, 500) id;

CREATE TABLE gs_md_frames (name text, spec text, small bool);
INSERT INTO gs_md_frames VALUES
  ('rows 3 preceding .. 2 following', 'ROWS BETWEEN 3 PRECEDING AND 2 FOLLOWING', true),
  ('rows 5 preceding', 'ROWS BETWEEN 5 PRECEDING AND CURRENT ROW', true),
  ('rows 40 preceding .. 5 following', 'ROWS BETWEEN 40 PRECEDING AND 5 FOLLOWING', false),
  ('rows 2 following .. 30 following', 'ROWS BETWEEN 2 FOLLOWING AND 30 FOLLOWING', false),
  ('rows 4 preceding .. 6 preceding (empty)', 'ROWS BETWEEN 4 PRECEDING AND 6 PRECEDING', true),
  ('rows current .. unbounded following', 'ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING', false),
  ('range 6 preceding .. 2 following', 'RANGE BETWEEN 6 PRECEDING AND 2 FOLLOWING', false),
  ('groups 3 preceding .. current row', 'GROUPS BETWEEN 3 PRECEDING AND CURRENT ROW', false),
  ('rows exclude current row', 'ROWS BETWEEN 2 PRECEDING AND 3 FOLLOWING EXCLUDE CURRENT ROW', true),
  ('rows exclude current row, wide', 'ROWS BETWEEN 20 PRECEDING AND 20 FOLLOWING EXCLUDE CURRENT ROW', false),
  ('range exclude group', 'RANGE BETWEEN 4 PRECEDING AND 4 FOLLOWING EXCLUDE GROUP', false),
  ('groups exclude ties', 'GROUPS BETWEEN 2 PRECEDING AND 1 FOLLOWING EXCLUDE TIES', false);

-- per frame: gpu_quantile(x, 0.4), gpu_quantiles(x, p[]) of each column and
-- gpu_median(iv), against percentile_disc / percentile_cont over the frame
-- PostgreSQL itself gives (array_agg(x) OVER the same window: no inverse,
-- aggregated anew for every row, its elements in window order); "=" for
-- every frame, the bytes for frames of at most 6 rows (others: NULL)
SELECT format($q$
SELECT %1$L AS frame, count(*) AS rows,
  count(*) FILTER (WHERE %2$s) AS mismatches,
  CASE WHEN %3$L THEN count(*) FILTER (WHERE %4$s) END AS byte_mismatches
FROM (SELECT %5$s FROM gs_md WINDOW w AS (PARTITION BY grp ORDER BY %6$s %7$s)) s$q$,
  f.name,
  string_agg(format($m$q_%1$s IS DISTINCT FROM (SELECT percentile_disc(0.4) WITHIN GROUP (ORDER BY v) FROM unnest(fr_%1$s) v)
    OR qs_%1$s IS DISTINCT FROM (SELECT percentile_disc('{0, 0.25, NULL, 0.5, 0.9, 1}'::float8[]) WITHIN GROUP (ORDER BY v) FROM unnest(fr_%1$s) v)$m$, c), ' OR ' ORDER BY c)
    || ' OR m_iv IS DISTINCT FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FROM unnest(fr_iv) v)',
  f.small,
  string_agg(format($m$q_%1$s::text IS DISTINCT FROM (SELECT percentile_disc(0.4) WITHIN GROUP (ORDER BY v) FROM unnest(fr_%1$s) v)::text
    OR qs_%1$s::text IS DISTINCT FROM (SELECT percentile_disc('{0, 0.25, NULL, 0.5, 0.9, 1}'::float8[]) WITHIN GROUP (ORDER BY v) FROM unnest(fr_%1$s) v)::text$m$, c), ' OR ' ORDER BY c)
    || ' OR m_iv::text IS DISTINCT FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FROM unnest(fr_iv) v)::text',
  string_agg(format($c$gpu_quantile(%1$I, 0.4) OVER w AS q_%1$s, gpu_quantiles(%1$I, '{0, 0.25, NULL, 0.5, 0.9, 1}') OVER w AS qs_%1$s, array_agg(%1$I) OVER w AS fr_%1$s$c$, c), ', ' ORDER BY c)
    || ', gpu_median(iv) OVER w AS m_iv',
  CASE WHEN f.spec LIKE 'RANGE%' THEN 'k' ELSE 'k, id' END,
  f.spec)
FROM gs_md_frames f CROSS JOIN unnest(ARRAY['n', 't', 'iv']) c
GROUP BY f.name, f.spec, f.small
ORDER BY f.name
\gexec

-- frames already in order (the values rise with id, equal ones of other
-- bytes side by side): the built-in's sort keeps them in window order, so
-- the answers are its bytes at every row, at every frame size.  The
-- reference is a LATERAL sub-select over the same rows by row number.
CREATE TABLE gs_md_sorted AS
SELECT id, (id / 12)::numeric + (ARRAY[0, 0.0, 0.00])[1 + id % 3] AS n,
       interval '1 day' * (id / 12) + (ARRAY[interval '1 day', '24 hours', '1440 minutes'])[1 + id % 3] AS iv
FROM generate_series(1, 400) id;
SELECT w, count(*) AS rows,
       count(*) FILTER (WHERE o.q::text IS DISTINCT FROM r.q::text OR o.qs::text IS DISTINCT FROM r.qs::text
                        OR o.qi::text IS DISTINCT FROM r.qi::text OR o.m::text IS DISTINCT FROM r.m::text) AS byte_mismatches
FROM unnest(ARRAY[2, 7, 30, 150]) w
CROSS JOIN LATERAL (
  SELECT id, gpu_quantile(n, 0.35) OVER x AS q, gpu_quantiles(n, '{0.1, 0.5, 0.77}') OVER x AS qs,
         gpu_quantile(iv, 0.6) OVER x AS qi, gpu_median(iv) OVER x AS m
  FROM gs_md_sorted WINDOW x AS (ORDER BY id ROWS BETWEEN w - 1 PRECEDING AND CURRENT ROW)) o
JOIN LATERAL (
  SELECT percentile_disc(0.35) WITHIN GROUP (ORDER BY n) AS q,
         percentile_disc('{0.1, 0.5, 0.77}'::float8[]) WITHIN GROUP (ORDER BY n) AS qs,
         percentile_disc(0.6) WITHIN GROUP (ORDER BY iv) AS qi,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) AS m
  FROM (SELECT n, iv FROM gs_md_sorted b WHERE b.id BETWEEN o.id - w + 1 AND o.id ORDER BY b.id) f) r ON true
GROUP BY w ORDER BY w;

-- the same frames unsorted, the LATERAL reference: "=" everywhere
SELECT w, count(*) AS rows,
       count(*) FILTER (WHERE o.q IS DISTINCT FROM r.q OR o.t IS DISTINCT FROM r.t
                        OR o.m IS DISTINCT FROM r.m) AS mismatches
FROM unnest(ARRAY[1, 3, 25, 120]) w
CROSS JOIN LATERAL (
  SELECT id, gpu_quantile(n, 0.8) OVER x AS q, gpu_quantile(t, 0.3) OVER x AS t, gpu_median(iv) OVER x AS m
  FROM gs_md WINDOW x AS (ORDER BY id ROWS BETWEEN w - 1 PRECEDING AND CURRENT ROW)) o
JOIN LATERAL (
  SELECT percentile_disc(0.8) WITHIN GROUP (ORDER BY n) AS q,
         percentile_disc(0.3) WITHIN GROUP (ORDER BY t) AS t,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) AS m
  FROM gs_md b WHERE b.id BETWEEN o.id - w + 1 AND o.id) r ON true
GROUP BY w ORDER BY w;

-- numeric of one scale: the append phase keeps int64 keys (datum_numkey.c),
-- the tree rebuilds the values from them; the leaving rows' bytes must match
CREATE TABLE gs_md_scale AS
SELECT id, CASE WHEN id % 17 = 0 THEN NULL ELSE round((random() * 100)::numeric, 2) END AS n
FROM generate_series(1, 600) id;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE q IS DISTINCT FROM (SELECT percentile_disc(0.3) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)) AS mismatches
FROM (SELECT gpu_quantile(n, 0.3) OVER w AS q, array_agg(n) OVER w AS fr
      FROM gs_md_scale WINDOW w AS (ORDER BY id ROWS BETWEEN 40 PRECEDING AND 3 FOLLOWING)) s;

-- a frame past gpuselect.work_mem (64kB) while PostgreSQL adds it: the
-- append phase's store does not spill, the tree is taken; every 100th row
CREATE TABLE gs_md_big AS
SELECT g, CASE WHEN g % 13 = 0 THEN NULL ELSE ((g * 7919) % 4001)::numeric / 8 END AS n,
       md5(g::text) AS t
FROM generate_series(1, 6000) g;
SET gpuselect.work_mem = 64;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE q IS DISTINCT FROM (SELECT percentile_disc(0.7) WITHIN GROUP (ORDER BY n) FROM gs_md_big b WHERE b.g >= o.g)
                        OR qt IS DISTINCT FROM (SELECT percentile_disc(0.2) WITHIN GROUP (ORDER BY t) FROM gs_md_big b WHERE b.g >= o.g)) AS mismatches
FROM (SELECT g, gpu_quantile(n, 0.7) OVER w AS q, gpu_quantile(t, 0.2) OVER w AS qt
      FROM gs_md_big WINDOW w AS (ORDER BY g ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)) o
WHERE g % 100 = 1;
SELECT value::int8 = 0 AS nothing_spilled FROM gpuselect_status() WHERE name = 'states_spilled';
RESET gpuselect.work_mem;

-- memory follows the frame, not the partition (gpuselect_status's peaks of
-- one moving state, reset by a new session): 30,000 rows in one partition,
-- 500-byte text values, a frame of 100 rows: the values that left were
-- freed (kept, they would take 15 MB); a frame of 3,000 rows holds more
CREATE TABLE gs_md_mem AS
SELECT g, repeat(chr(97 + g % 26), 490) || g AS t, (g % 1000)::float8 AS f, (g % 997)::numeric / 7 AS n
FROM generate_series(1, 30000) g;
\c
SET gpuselect.device = 'cpu';
SELECT count(q) FROM (SELECT gpu_quantile(t, 0.5) OVER (ORDER BY g ROWS BETWEEN 99 PRECEDING AND CURRENT ROW) AS q FROM gs_md_mem) s;
SELECT max(value) FILTER (WHERE name = 'moving_peak_values') AS peak_values,
       max(value::int8) FILTER (WHERE name = 'moving_peak_bytes') < 512 * 1024 AS text_w100_under_512kB
FROM gpuselect_status();
\c
SET gpuselect.device = 'cpu';
SELECT count(qn), count(qf)
FROM (SELECT gpu_quantile(n, 0.5) OVER w AS qn, gpu_quantile(f, 0.5) OVER w AS qf
      FROM gs_md_mem WINDOW w AS (ORDER BY g ROWS BETWEEN 99 PRECEDING AND CURRENT ROW)) s;
SELECT max(value) FILTER (WHERE name = 'moving_peak_values') AS peak_values,
       max(value::int8) FILTER (WHERE name = 'moving_peak_bytes') < 256 * 1024 AS numeric_float8_w100_under_256kB
FROM gpuselect_status();
\c
SET gpuselect.device = 'cpu';
SELECT count(q) FROM (SELECT gpu_quantile(t, 0.5) OVER (ORDER BY g ROWS BETWEEN 2999 PRECEDING AND CURRENT ROW) AS q FROM gs_md_mem) s;
SELECT max(value) FILTER (WHERE name = 'moving_peak_values') AS peak_values,
       max(value::int8) FILTER (WHERE name = 'moving_peak_bytes') BETWEEN 1500 * 1024 AND 8 * 1024 * 1024 AS text_w3000_1_5_to_8MB
FROM gpuselect_status();

DROP TABLE gs_md, gs_md_frames, gs_md_sorted, gs_md_scale, gs_md_big, gs_md_mem;
