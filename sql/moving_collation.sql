-- gpuselect: moving window aggregates over text under ICU collations (the
-- frame's values ordered by the call's collation: state/datum_frame.c), vs
-- the built-ins over the same frame.  A case-insensitive nondeterministic
-- collation makes 'apple' and 'APPLE' equal values of other bytes: the
-- answers must equal the built-in's under the collation's "=" at every row,
-- and its bytes where its sort is stable on the frame in window order
-- (frames of at most 6 rows, frames already in order).  Skipped where the
-- server has no ICU (expected/moving_collation_1.out).
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate
SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu') AS gs_have_icu \gset
\if :gs_have_icu
SELECT setseed(0.29);
CREATE COLLATION gs_mv_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE gs_mvc AS
SELECT id, id / 3 AS k,
       CASE WHEN random() < 0.1 THEN NULL
            ELSE (ARRAY['apple', 'Apple', 'APPLE', 'banana', 'Banana', 'éclair', 'eclair', 'Eclair', 'zebra',
                        'a-b', 'ab', 'a b', '', '10', '9', 'ß', 'ss'])[1 + (random() * 16)::int] END AS t
FROM generate_series(1, 400) id;

-- the root collation orders differently from "C" (a lost collation would show)
SELECT count(*) FILTER (WHERE q IS DISTINCT FROM (SELECT percentile_disc(0.3) WITHIN GROUP (ORDER BY v COLLATE "und-x-icu") FROM unnest(fr) v)
                        OR qs IS DISTINCT FROM (SELECT percentile_disc('{0.1, 0.5, 0.9}'::float8[]) WITHIN GROUP (ORDER BY v COLLATE "und-x-icu") FROM unnest(fr) v)) AS mismatches,
       count(*) FILTER (WHERE q::bytea IS DISTINCT FROM qc::bytea) > 0 AS differs_from_c
FROM (SELECT gpu_quantile(t COLLATE "und-x-icu", 0.3) OVER w AS q,
             gpu_quantiles(t COLLATE "und-x-icu", '{0.1, 0.5, 0.9}') OVER w AS qs,
             gpu_quantile(t COLLATE "C", 0.3) OVER w AS qc, array_agg(t) OVER w AS fr
      FROM gs_mvc WINDOW w AS (ORDER BY id ROWS BETWEEN 30 PRECEDING AND 10 FOLLOWING)) s;

-- case-insensitive: "=" under the collation at every frame, bytes for the small frames
SELECT format($q$
SELECT %1$L AS frame,
  count(*) FILTER (WHERE q IS DISTINCT FROM (SELECT percentile_disc(0.4) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)
                   OR qs IS DISTINCT FROM (SELECT percentile_disc('{0, 0.3, 0.5, 1}'::float8[]) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)) AS mismatches,
  CASE WHEN %2$L THEN count(*) FILTER (WHERE q::bytea IS DISTINCT FROM (SELECT percentile_disc(0.4) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)::bytea
                   OR qs::text::bytea IS DISTINCT FROM (SELECT percentile_disc('{0, 0.3, 0.5, 1}'::float8[]) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)::text::bytea) END AS byte_mismatches
FROM (SELECT gpu_quantile(t COLLATE gs_mv_ci, 0.4) OVER w AS q, gpu_quantiles(t COLLATE gs_mv_ci, '{0, 0.3, 0.5, 1}') OVER w AS qs,
             array_agg(t COLLATE gs_mv_ci) OVER w AS fr
      FROM gs_mvc WINDOW w AS (ORDER BY k, id %1$s)) s$q$, spec, small)
FROM (VALUES ('ROWS BETWEEN 5 PRECEDING AND CURRENT ROW', true),
             ('ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW', true),
             ('ROWS BETWEEN 50 PRECEDING AND 3 FOLLOWING', false),
             ('GROUPS BETWEEN 4 PRECEDING AND 1 FOLLOWING', false)) f(spec, small)
\gexec

-- frames already in order (case-insensitively), equal values of other case
-- side by side: the built-in's bytes at every row
CREATE TABLE gs_mvc_sorted AS
SELECT id, lpad((id / 40)::text, 3, '0') || CASE WHEN id % 3 = 0 THEN 'x' ELSE 'X' END AS t
FROM generate_series(1, 300) id;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE q::bytea IS DISTINCT FROM (SELECT percentile_disc(0.45) WITHIN GROUP (ORDER BY v) FROM unnest(fr) v)::bytea) AS byte_mismatches
FROM (SELECT gpu_quantile(t COLLATE gs_mv_ci, 0.45) OVER w AS q, array_agg(t COLLATE gs_mv_ci) OVER w AS fr
      FROM gs_mvc_sorted WINDOW w AS (ORDER BY id ROWS BETWEEN 99 PRECEDING AND CURRENT ROW)) s;

DROP TABLE gs_mvc, gs_mvc_sorted;
DROP COLLATION gs_mv_ci;
\endif
