-- gpuselect: the sort specifications the ordered-set forms accept.  NULL
-- inputs are ignored, so NULLS FIRST / NULLS LAST change nothing, with the
-- built-ins as with gpuselect; USING the type's default < or > is ASC or
-- DESC.  Every form against the built-in on the same data.
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
\set VERBOSITY sqlstate

SELECT setseed(0.63);
CREATE TABLE gs_sort AS
SELECT g % 4 AS grp,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 1000)::int4 END AS i,
       CASE WHEN random() < 0.1 THEN NULL ELSE random() * 200 - 100.5 END AS f,
       CASE WHEN random() < 0.1 THEN NULL ELSE timestamptz '2021-01-01 00:00+00' + random() * interval '400 days' END AS t
FROM generate_series(1, 2000) g;

SELECT format($q$
SELECT %1$L AS col, %2$L AS spec, count(*) AS groups,
       bool_and(d IS NOT DISTINCT FROM bd AND d::text IS NOT DISTINCT FROM bd::text
                AND da::text IS NOT DISTINCT FROM bda::text) AS disc_ok
FROM (SELECT grp,
             gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY %1$I %2$s) AS d,
             percentile_disc(0.3) WITHIN GROUP (ORDER BY %1$I %2$s) AS bd,
             gpu_percentile_disc(ARRAY[0, 0.1, 0.5, 0.77, 1]) WITHIN GROUP (ORDER BY %1$I %2$s) AS da,
             percentile_disc(ARRAY[0, 0.1, 0.5, 0.77, 1]) WITHIN GROUP (ORDER BY %1$I %2$s) AS bda
      FROM gs_sort GROUP BY grp) s$q$, c, spec)
FROM unnest(ARRAY['i', 'f', 't']) c,
     unnest(ARRAY['ASC NULLS FIRST', 'ASC NULLS LAST', 'NULLS FIRST', 'DESC NULLS FIRST', 'DESC NULLS LAST',
                  'USING < NULLS FIRST', 'USING > NULLS LAST', 'USING >']) spec
\gexec

-- percentile_cont (numeric types)
SELECT format($q$
SELECT %1$L AS col, %2$L AS spec,
       bool_and(c IS NOT DISTINCT FROM bc AND c::text IS NOT DISTINCT FROM bc::text
                AND ca::text IS NOT DISTINCT FROM bca::text) AS cont_ok
FROM (SELECT grp,
             gpu_percentile_cont(0.3) WITHIN GROUP (ORDER BY %1$I %2$s) AS c,
             percentile_cont(0.3) WITHIN GROUP (ORDER BY %1$I %2$s) AS bc,
             gpu_percentile_cont(ARRAY[0, 0.1, 0.5, 0.77, 1]) WITHIN GROUP (ORDER BY %1$I %2$s) AS ca,
             percentile_cont(ARRAY[0, 0.1, 0.5, 0.77, 1]) WITHIN GROUP (ORDER BY %1$I %2$s) AS bca
      FROM gs_sort GROUP BY grp) s$q$, c, spec)
FROM unnest(ARRAY['i', 'f']) c,
     unnest(ARRAY['NULLS FIRST', 'ASC NULLS LAST', 'DESC NULLS FIRST', 'DESC NULLS LAST']) spec
\gexec

DROP TABLE gs_sort;
