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

-- numeric as int64 keys (datum_numkey.c): a group whose values share one
-- dscale and fit int64 when scaled is selected as keys and its results
-- rebuilt; the first value that breaks the rule turns it back into values.
-- Results must be the built-in's bytes: text, numeric_send, and the datum's
-- size (1-byte header when the values came from a table, as the built-in's).
SET max_parallel_workers_per_gather = 0;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SELECT setseed(0.41);
CREATE TABLE gs_nk (grp int, n numeric);
INSERT INTO gs_nk SELECT 0, round((random() * 2000 - 1000)::numeric, 2) FROM generate_series(1, 3000);
INSERT INTO gs_nk SELECT 0, v::numeric FROM unnest(ARRAY['0.00', '-0.00', '0.00', '-1000.00', '1000.00', '0.01', '-0.01']) v;
-- 1: keys of dscale 2, then a value of dscale 1 (fallback in the middle), then more of dscale 2
INSERT INTO gs_nk SELECT 1, round((random() * 100)::numeric, 2) FROM generate_series(1, 500);
INSERT INTO gs_nk VALUES (1, 5.5), (1, 50.0), (1, 50.00);
INSERT INTO gs_nk SELECT 1, round((random() * 100)::numeric, 2) FROM generate_series(1, 500);
-- 2: NaN among keys; 3: the infinities (14+) among keys
INSERT INTO gs_nk SELECT 2, round((random() * 100)::numeric, 3) FROM generate_series(1, 300);
INSERT INTO gs_nk VALUES (2, 'NaN'), (2, 'NaN');
INSERT INTO gs_nk SELECT 3, round((random() * 100)::numeric, 3) FROM generate_series(1, 300);
INSERT INTO gs_nk VALUES (3, 'Infinity'), (3, '-Infinity');
-- 4: at the int64 limits when scaled (still keys); 5: one step beyond (values)
INSERT INTO gs_nk SELECT 4, v::numeric FROM unnest(ARRAY['92233720368547758.07', '-92233720368547758.07',
       '0.00', '1.00', '-92233720368547758.06', '10000.00', '100000000.00', '0.10']) v;
INSERT INTO gs_nk SELECT 5, v::numeric FROM unnest(ARRAY['92233720368547758.08', '-92233720368547758.07',
       '0.00', '1.00', '-92233720368547758.09']) v;
-- 6: scale 0 with whole base-10000 zero digits; 7: dscale 18; 8: dscale 30 (zero and 1e-30 fit, more does not)
INSERT INTO gs_nk SELECT 6, v::numeric FROM unnest(ARRAY['10000', '100000000', '1000000000000', '-10000', '0', '9223372036854775807',
       '-9223372036854775807', '20000', '12345678']) v;
INSERT INTO gs_nk SELECT 7, round((random() * 9 - 4)::numeric, 18) FROM generate_series(1, 200);
INSERT INTO gs_nk SELECT 8, v::numeric FROM unnest(ARRAY['0.000000000000000000000000000000', '0.000000000000000000000000000001',
       '-0.000000000000000000000000000003', '0.000000000000000000000000000002']) v;
INSERT INTO gs_nk SELECT 9, v::numeric FROM unnest(ARRAY['0.000000000000000000000000000000', '0.100000000000000000000000000001']) v;
-- 10: many scales (values from the start; distinct, so no tie of two scales); 11: one row; 12: huge (long format)
INSERT INTO gs_nk SELECT 10, round((g + 0.5 + random() / 10)::numeric, 1 + g % 4) FROM generate_series(1, 400) g;
INSERT INTO gs_nk VALUES (11, -3.140);
INSERT INTO gs_nk SELECT 12, v::numeric FROM unnest(ARRAY['1e200', '-1e200', '1e-200', '5']) v;

SELECT grp,
       gpu_percentile_disc(ARRAY[0, 0.01, 0.25, 0.5, 0.75, 0.99, 1]) WITHIN GROUP (ORDER BY n)::text
         = percentile_disc(ARRAY[0, 0.01, 0.25, 0.5, 0.75, 0.99, 1]) WITHIN GROUP (ORDER BY n)::text AS asc_text,
       gpu_percentile_disc(ARRAY[0, 0.01, 0.25, 0.5, 0.75, 0.99, 1]) WITHIN GROUP (ORDER BY n DESC)::text
         = percentile_disc(ARRAY[0, 0.01, 0.25, 0.5, 0.75, 0.99, 1]) WITHIN GROUP (ORDER BY n DESC)::text AS desc_text,
       gpu_percentile_disc(0.37) WITHIN GROUP (ORDER BY n USING >)::text
         = percentile_disc(0.37) WITHIN GROUP (ORDER BY n USING >)::text AS using_gt,
       numeric_send(gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY n))
         = numeric_send(percentile_disc(0.5) WITHIN GROUP (ORDER BY n)) AS send,
       numeric_send(gpu_quantile(n, 0.9)) = numeric_send(percentile_disc(0.9) WITHIN GROUP (ORDER BY n)) AS plain_send,
       gpu_quantiles(n, '{0.1,0.6}')::text = percentile_disc('{0.1,0.6}'::float8[]) WITHIN GROUP (ORDER BY n)::text AS plain_arr,
       numeric_send(gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY n * 1))
         = numeric_send(percentile_disc(0.5) WITHIN GROUP (ORDER BY n * 1)) AS expr_send,
       pg_column_size(gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY n * 1))
         = pg_column_size(percentile_disc(0.5) WITHIN GROUP (ORDER BY n * 1)) AS expr_size
FROM gs_nk GROUP BY grp ORDER BY grp;
-- the groups that stay keys return a 1-byte-header datum, as the built-in
-- (the comparison path widens headers: its sizes differ, its bytes do not)
SELECT grp, pg_column_size(gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY n))
              = pg_column_size(percentile_disc(0.5) WITHIN GROUP (ORDER BY n)) AS size,
       pg_column_size(gpu_quantile(n, 0.2)) = pg_column_size(percentile_disc(0.2) WITHIN GROUP (ORDER BY n)) AS plain_size
FROM gs_nk WHERE grp IN (0, 4, 6, 7, 8, 11) GROUP BY grp ORDER BY grp;

-- every display scale 0..18: groups 0..18 all within int64 when scaled (keys
-- throughout: their result datums have the built-in's 1-byte header, which
-- the comparison path would widen), groups 19..37 up to 10^20 scaled (some
-- values past the limit: back to values); 101 fractions, each element's bytes
SELECT setseed(0.59);
CREATE TABLE gs_nk3 AS
SELECT s + 19 * k AS grp, round(((random() - 0.5) * 10 ^ (random() * (18 - s + 2 * k)))::numeric, s) AS n
FROM generate_series(0, 18) s, generate_series(0, 1) k, generate_series(1, 300) g;
SELECT count(*) AS groups,
       bool_and(ga::text = ba::text) AS same_text,
       bool_and(gs = bs) AS same_send,
       bool_and(gd::text = bd::text) AS same_desc,
       bool_and(grp > 18 OR gz = bz) AS keyed_size
FROM (SELECT grp,
             gpu_quantiles(n, f) AS ga, percentile_disc(f) WITHIN GROUP (ORDER BY n) AS ba,
             gpu_percentile_disc(f) WITHIN GROUP (ORDER BY n DESC) AS gd,
             percentile_disc(f) WITHIN GROUP (ORDER BY n DESC) AS bd,
             (SELECT array_agg(numeric_send(e)) FROM unnest(gpu_quantiles(n, f)) e) AS gs,
             (SELECT array_agg(numeric_send(e)) FROM unnest(percentile_disc(f) WITHIN GROUP (ORDER BY n)) e) AS bs,
             pg_column_size(gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY n)) AS gz,
             pg_column_size(percentile_disc(0.5) WITHIN GROUP (ORDER BY n)) AS bz
      FROM gs_nk3, (SELECT array_agg(i / 100.0)::float8[] AS f FROM generate_series(0, 100) i) fr
      GROUP BY grp, f) s;
-- the values past the limit are there: some groups 19..37 are not all keys
SELECT count(*) FILTER (WHERE abs(n) * 10 ^ scale(n) > 9223372036854775807) > 0 AS past_limit,
       count(*) FILTER (WHERE grp <= 18 AND abs(n) * 10 ^ scale(n) > 9223372036854775807) = 0 AS keyed_fit
FROM gs_nk3;

-- parallel: partial states in both modes (keys of one dscale, keys of
-- another, values), serialized and combined in every order
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
CREATE TABLE gs_nk2 (grp int, n numeric) WITH (parallel_workers = 2);
INSERT INTO gs_nk2 SELECT g % 3, round((random() * 1000)::numeric, 2) FROM generate_series(1, 30000) g;
INSERT INTO gs_nk2 SELECT 1, round((random() * 1000)::numeric, 3) FROM generate_series(1, 300) g;
INSERT INTO gs_nk2 SELECT g % 3, round((random() * 1000)::numeric, 2) FROM generate_series(1, 30000) g;
INSERT INTO gs_nk2 SELECT 2, 'NaN' FROM generate_series(1, 3);
EXPLAIN (COSTS OFF) SELECT grp, gpu_quantiles(n, '{0.5}') FROM gs_nk2 GROUP BY grp;
SELECT grp, gpu_quantiles(n, '{0,0.1,0.5,0.99,1}')::text
              = percentile_disc('{0,0.1,0.5,0.99,1}'::float8[]) WITHIN GROUP (ORDER BY n)::text AS same,
       numeric_send(gpu_quantile(n, 0.5)) = numeric_send(percentile_disc(0.5) WITHIN GROUP (ORDER BY n)) AS send
FROM gs_nk2 GROUP BY grp ORDER BY grp;
SELECT gpu_quantiles(n, '{0,0.3,0.5,1}')::text = percentile_disc('{0,0.3,0.5,1}'::float8[]) WITHIN GROUP (ORDER BY n)::text AS whole
FROM gs_nk2 WHERE grp = 0;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE gs_nk, gs_nk2, gs_nk3;

-- text of every short length (0..126 bytes: the values with a 1-byte header
-- that the store copies word by word, datum_state.c's gs_copy_short), five
-- of each, at 101 fractions: the same strings as the built-in's, under "C"
-- (prefix keys) and the database's collation (the comparison path)
CREATE TABLE gs_len AS
	SELECT l, substr(repeat(md5(l || '-' || k), 4), 1 + k, l) AS t
	FROM generate_series(0, 126) l, generate_series(1, 5) k;
SELECT count(DISTINCT length(t)) AS lengths,
       (SELECT gpu_percentile_disc(f) WITHIN GROUP (ORDER BY t COLLATE "C") FROM gs_len)::text =
       (SELECT percentile_disc(f) WITHIN GROUP (ORDER BY t COLLATE "C") FROM gs_len)::text AS same_c,
       (SELECT gpu_percentile_disc(f) WITHIN GROUP (ORDER BY t) FROM gs_len)::text =
       (SELECT percentile_disc(f) WITHIN GROUP (ORDER BY t) FROM gs_len)::text AS same_default,
       (SELECT gpu_percentile_disc(f) WITHIN GROUP (ORDER BY length(t)::text || t COLLATE "C") FROM gs_len)::text =
       (SELECT percentile_disc(f) WITHIN GROUP (ORDER BY length(t)::text || t COLLATE "C") FROM gs_len)::text AS same_by_length
FROM gs_len, (SELECT array_agg(i / 100.0) AS f FROM generate_series(0, 100) i) fr
GROUP BY f;
DROP TABLE gs_len;
