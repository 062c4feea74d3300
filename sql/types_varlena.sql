-- gpuselect: the types without an integer key (numeric, interval, text,
-- varchar, bpchar, uuid, money, bool, bytea, inet, domains over them), on the
-- comparison path (datum_select.c), against the built-ins on the same data.
-- Results are compared with the type's "=" (IS NOT DISTINCT FROM): values
-- that compare equal but differ in bytes (numeric 1.0 and 1.00) may be
-- either one, as with the built-in (README: ties).
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate

SELECT setseed(0.23);
CREATE TABLE gs_v (grp int, n numeric, iv interval, t text, vc varchar(12), bp char(6),
                   u uuid, m money, b bool, by bytea, ip inet);
-- groups 0..3: random values, NULLs, ties; numeric of many scales
INSERT INTO gs_v
SELECT g % 4,
       CASE WHEN g % 17 = 0 THEN NULL
            WHEN g % 5 = 0 THEN round((random() * 2000 - 1000)::numeric, (g % 7))
            WHEN g % 5 = 1 THEN (random() * 1e6)::numeric(20, 2) * (g % 3 - 1)
            ELSE round((random() * 50)::numeric, 1) END,
       CASE WHEN g % 19 = 0 THEN NULL
            ELSE make_interval(months => (random() * 3)::int, days => (random() * 40)::int - 10,
                               secs => random() * 90000 - 2000) END,
       CASE WHEN g % 13 = 0 THEN NULL ELSE substr(md5(random()::text), 1, (g % 9)) END,
       CASE WHEN g % 11 = 0 THEN NULL ELSE substr(md5(random()::text), 1, 1 + g % 12) END,
       CASE WHEN g % 7 = 0 THEN NULL ELSE substr(md5(random()::text), 1, g % 6) END,
       CASE WHEN g % 23 = 0 THEN NULL ELSE md5(random()::text)::uuid END,
       CASE WHEN g % 29 = 0 THEN NULL ELSE (random() * 100000 - 20000)::numeric(12, 2)::money END,
       CASE WHEN g % 31 = 0 THEN NULL ELSE random() < 0.3 END,
       CASE WHEN g % 37 = 0 THEN NULL ELSE decode(substr(md5(random()::text), 1, 2 * (g % 5)), 'hex') END,
       CASE WHEN g % 41 = 0 THEN NULL
            WHEN g % 3 = 0 THEN ('10.' || (g % 250) || '.' || (random() * 255)::int || '.0/' || (8 + g % 25))::inet
            ELSE ('2001:db8::' || to_hex(g))::inet END
FROM generate_series(1, 4000) g;
-- numeric specials and ties of different scales (group 4)
INSERT INTO gs_v (grp, n)
SELECT 4, v::numeric FROM unnest(ARRAY['NaN', 'Infinity', '-Infinity', '1.0', '1.00', '1', '1.000',
       '-0.5', '-0.50', '0', '0.000', '1e20', '-1e-20', 'NaN', '2.5', '2.50']) v;
-- a group whose values are all NULL (5), and a one-row group (6)
INSERT INTO gs_v (grp) SELECT 5 FROM generate_series(1, 3);
INSERT INTO gs_v VALUES (6, 7.25, '1 day', 'x', 'y', 'z', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 3.5, true, '\x00', '::1');

-- percentile_disc, ordered-set and plain forms, per column and group, ASC
-- and DESC, single fractions and an array with NULL elements
SELECT format($q$
SELECT %1$L AS col, count(*) AS groups,
       bool_and(d1 IS NOT DISTINCT FROM b1 AND d2 IS NOT DISTINCT FROM b2 AND dd IS NOT DISTINCT FROM bd
                AND da IS NOT DISTINCT FROM ba AND dad IS NOT DISTINCT FROM bad
                AND q1 IS NOT DISTINCT FROM b1 AND qa IS NOT DISTINCT FROM ba) AS same_as_builtin
FROM (SELECT grp,
             gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY %1$I) AS d1,
             gpu_percentile_disc(0) WITHIN GROUP (ORDER BY %1$I) AS d2,
             gpu_percentile_disc(0.9) WITHIN GROUP (ORDER BY %1$I DESC) AS dd,
             gpu_percentile_disc('{{0.1,NULL},{0.37,1}}'::float8[]) WITHIN GROUP (ORDER BY %1$I) AS da,
             gpu_percentile_disc(ARRAY[1, 0.01, 0.5, NULL, 0.99, 0.5]) WITHIN GROUP (ORDER BY %1$I DESC) AS dad,
             gpu_quantile(%1$I, 0.5) AS q1,
             gpu_quantiles(%1$I, '{{0.1,NULL},{0.37,1}}') AS qa,
             percentile_disc(0.5) WITHIN GROUP (ORDER BY %1$I) AS b1,
             percentile_disc(0) WITHIN GROUP (ORDER BY %1$I) AS b2,
             percentile_disc(0.9) WITHIN GROUP (ORDER BY %1$I DESC) AS bd,
             percentile_disc('{{0.1,NULL},{0.37,1}}'::float8[]) WITHIN GROUP (ORDER BY %1$I) AS ba,
             percentile_disc(ARRAY[1, 0.01, 0.5, NULL, 0.99, 0.5]) WITHIN GROUP (ORDER BY %1$I DESC) AS bad
      FROM gs_v GROUP BY grp) s$q$, c)
FROM unnest(ARRAY['n', 'iv', 't', 'vc', 'bp', 'u', 'm', 'b', 'by', 'ip']) c
\gexec

-- result types are the built-in's
SELECT pg_typeof(gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY n)) AS n1,
       pg_typeof(gpu_quantiles(vc, '{0.5}')) AS vca, pg_typeof(gpu_quantile(bp, 0.5)) AS bp1,
       pg_typeof(gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY iv)) AS ivc,
       pg_typeof(gpu_percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY iv)) AS ivca,
       pg_typeof(gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY n)) AS nc,
       pg_typeof(gpu_median(iv)) AS ivm, pg_typeof(gpu_median(n)) AS nm
FROM gs_v;

-- numeric specials: NaN sorts last, Infinity before it, ties of different scales
SELECT gpu_percentile_disc(ARRAY[0, 0.1, 0.3, 0.5, 0.7, 0.9, 1]) WITHIN GROUP (ORDER BY n)
       = percentile_disc(ARRAY[0, 0.1, 0.3, 0.5, 0.7, 0.9, 1]) WITHIN GROUP (ORDER BY n) AS specials,
       gpu_percentile_disc(1) WITHIN GROUP (ORDER BY n)::text AS last,
       gpu_percentile_disc(0.01) WITHIN GROUP (ORDER BY n DESC)::text AS first_desc
FROM gs_v WHERE grp = 4;

-- percentile_cont and gpu_median: interval (interpolated as the built-in) and
-- float8 with the built-in's implicit casts (numeric, integer)
SELECT grp,
       gpu_percentile_cont(0.37) WITHIN GROUP (ORDER BY iv) = percentile_cont(0.37) WITHIN GROUP (ORDER BY iv) AS iv1,
       gpu_percentile_cont(0.37) WITHIN GROUP (ORDER BY iv DESC) = percentile_cont(0.37) WITHIN GROUP (ORDER BY iv DESC) AS iv1d,
       gpu_percentile_cont(ARRAY[0, 0.25, NULL, 0.5, 0.999, 1]) WITHIN GROUP (ORDER BY iv)
         = percentile_cont(ARRAY[0, 0.25, NULL, 0.5, 0.999, 1]) WITHIN GROUP (ORDER BY iv) AS iva,
       gpu_median(iv) = percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) AS ivm,
       gpu_percentile_cont(0.37) WITHIN GROUP (ORDER BY n) = percentile_cont(0.37) WITHIN GROUP (ORDER BY n) AS n1,
       gpu_median(n) = percentile_cont(0.5) WITHIN GROUP (ORDER BY n) AS nm,
       gpu_percentile_cont(0.2) WITHIN GROUP (ORDER BY length(t)) = percentile_cont(0.2) WITHIN GROUP (ORDER BY length(t)) AS i1
FROM gs_v WHERE grp <> 4 GROUP BY grp ORDER BY grp;
-- the interpolated value itself, beside the built-in's
SELECT gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY v) AS gpu, percentile_cont(0.5) WITHIN GROUP (ORDER BY v) AS builtin
FROM (VALUES ('1 day 3 hours'::interval), ('1 mon 1 second')) x(v);

-- infinite intervals (PostgreSQL 17 and later; on older servers the group is empty)
CREATE TABLE gs_vinf AS
SELECT s::interval AS iv FROM unnest(ARRAY['infinity', '-infinity', '-infinity', '5 days', '1 hour', 'infinity']) s
WHERE current_setting('server_version_num')::int >= 170000;
SELECT gpu_percentile_disc(ARRAY[0, 0.2, 0.5, 0.8, 1]) WITHIN GROUP (ORDER BY iv)
         IS NOT DISTINCT FROM percentile_disc(ARRAY[0, 0.2, 0.5, 0.8, 1]) WITHIN GROUP (ORDER BY iv) AS disc,
       gpu_percentile_cont(ARRAY[0, 0.2, 0.4, 0.6, 1]) WITHIN GROUP (ORDER BY iv)
         IS NOT DISTINCT FROM percentile_cont(ARRAY[0, 0.2, 0.4, 0.6, 1]) WITHIN GROUP (ORDER BY iv) AS cont
FROM gs_vinf;

-- text with an explicit collation, and the argument's collation in plain forms
SELECT gpu_percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY t COLLATE "C")
         = percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY t COLLATE "C") AS os_c,
       gpu_quantiles(t COLLATE "C", ARRAY[0.1, 0.5, 0.9])
         = percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY t COLLATE "C") AS plain_c,
       gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY t USING ~>~)
         = percentile_disc(0.3) WITHIN GROUP (ORDER BY t USING ~>~) AS using_op
FROM gs_v;

-- empty input, empty groups, NULL and bad fractions, in the built-in's order
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY n) AS os, gpu_quantile(t, 0.5) AS plain,
       gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) AS cont, gpu_median(iv) AS med,
       gpu_percentile_disc(NULL::float8) WITHIN GROUP (ORDER BY u) AS nullfrac
FROM gs_v WHERE false;
SELECT gpu_percentile_disc(1.5) WITHIN GROUP (ORDER BY n) FROM gs_v WHERE false;
SELECT percentile_disc(1.5) WITHIN GROUP (ORDER BY n) FROM gs_v WHERE false;
SELECT gpu_percentile_cont(ARRAY[0.5, -1]) WITHIN GROUP (ORDER BY iv) FROM gs_v;
SELECT percentile_cont(ARRAY[0.5, -1]) WITHIN GROUP (ORDER BY iv) FROM gs_v;

-- the built-in's errors: percentile_cont over text, a type without ordering
SELECT gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY t) FROM gs_v;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY t) FROM gs_v;
SELECT gpu_median(t) FROM gs_v;
SELECT gpu_quantile(point(1, 2), 0.5);
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY point(1, 2));

-- domains over these types: results carry the domain, as the built-in's
CREATE DOMAIN gs_price AS numeric(12, 2) CHECK (VALUE > -1e9);
CREATE DOMAIN gs_label AS text;
SELECT gpu_quantiles(n::gs_price, '{0.5,0.9}') || percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY n::gs_price)
         = (percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY n::gs_price)
            || percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY n::gs_price)) AS price,
       pg_typeof(gpu_percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY t::gs_label)) AS label_type,
       gpu_percentile_disc(0.4) WITHIN GROUP (ORDER BY t::gs_label) = percentile_disc(0.4) WITHIN GROUP (ORDER BY t::gs_label) AS label
FROM gs_v WHERE grp < 4;

-- window use of the plain aggregates
SELECT bool_and(w IS NOT DISTINCT FROM b) AS window_same
FROM (SELECT gpu_quantile(n, 0.5) OVER (PARTITION BY grp ORDER BY n) AS w,
             n, grp
      FROM gs_v WHERE grp < 4) s
     CROSS JOIN LATERAL (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY v.n) AS b
                         FROM gs_v v WHERE v.grp = s.grp AND v.n IS NOT NULL AND v.n <= s.n) l
WHERE s.n IS NOT NULL AND s.grp = 1;

-- parallel plans: partial states serialized, combined and deserialized
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT gpu_quantile(t, 0.5) FROM gs_v;
SELECT gpu_quantile(n, 0.5) = percentile_disc(0.5) WITHIN GROUP (ORDER BY n) AS n1,
       gpu_quantiles(t, '{0,0.3,0.99,1}') = percentile_disc('{0,0.3,0.99,1}'::float8[]) WITHIN GROUP (ORDER BY t) AS ta,
       gpu_median(iv) = percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) AS ivm,
       gpu_quantile(u, 0.77) = percentile_disc(0.77) WITHIN GROUP (ORDER BY u) AS u1,
       gpu_quantile(by, 0.2) = percentile_disc(0.2) WITHIN GROUP (ORDER BY by) AS by1
FROM gs_v;
SELECT grp, gpu_quantile(n, 0.5) IS NOT DISTINCT FROM percentile_disc(0.5) WITHIN GROUP (ORDER BY n) AS n1,
       gpu_quantiles(ip, '{0.1,0.9}') IS NOT DISTINCT FROM percentile_disc('{0.1,0.9}'::float8[]) WITHIN GROUP (ORDER BY ip) AS ipa,
       gpu_median(iv) IS NOT DISTINCT FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) AS ivm
FROM gs_v GROUP BY grp ORDER BY grp;
RESET parallel_leader_participation;

DROP TABLE gs_v, gs_vinf;
DROP DOMAIN gs_price, gs_label;
