-- gpuselect: ordered-set aggregates compared with the built-ins on the same data
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
\set VERBOSITY sqlstate

SELECT setseed(0.42);
CREATE TABLE gs_t AS
SELECT g,
       g % 7 AS grp,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 200 - 100)::int2 END AS i2,
       CASE WHEN random() < 0.05 THEN NULL
            WHEN g % 3 = 0 THEN (random() * 50)::int4
            ELSE (random() * 4e9 - 2e9)::int4 END AS i4,
       CASE WHEN random() < 0.05 THEN NULL ELSE ((random() - 0.5) * 1.8e19)::int8 END AS i8,
       CASE WHEN random() < 0.05 THEN NULL ELSE ((random() - 0.5) * 2e6)::float4 END AS f4,
       CASE WHEN random() < 0.05 THEN NULL
            WHEN g % 5 = 0 THEN round(random() * 10)::float8
            ELSE (random() - 0.5) * 1e12 END AS f8,
       CASE WHEN random() < 0.05 THEN NULL ELSE date '2000-01-01' + (random() * 40000 - 20000)::int END AS d,
       CASE WHEN random() < 0.05 THEN NULL ELSE timestamp '2000-01-01' + random() * interval '20000 days' END AS ts,
       CASE WHEN random() < 0.05 THEN NULL ELSE timestamptz '2000-01-01 00:00+00' - random() * interval '20000 days' END AS tstz
FROM generate_series(1, 3000) g;

CREATE TABLE gs_fr (p float8);
INSERT INTO gs_fr VALUES (0), (1), (0.07), (1.0/3), (2.0/3), (0.5), (0.25), (0.75),
  (0.001), (0.999), (0.1), (0.9), (1e-9), (1 - 1e-9), (0.5000001), (0.4999999), (0.123456789);

-- every type, every fraction: disc (single), and ::text to catch representation differences
SELECT format($q$
SELECT %1$L AS col, count(*) AS fractions,
       bool_and(g IS NOT DISTINCT FROM b AND g::text IS NOT DISTINCT FROM b::text) AS disc_ok
FROM (SELECT p, gpu_percentile_disc(p) WITHIN GROUP (ORDER BY %1$I) AS g,
                percentile_disc(p) WITHIN GROUP (ORDER BY %1$I) AS b
      FROM gs_t CROSS JOIN gs_fr GROUP BY p) s$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8','d','ts','tstz']) c
\gexec

-- DESC, the same
SELECT format($q$
SELECT %1$L AS col, count(*) AS fractions,
       bool_and(g IS NOT DISTINCT FROM b AND g::text IS NOT DISTINCT FROM b::text) AS disc_desc_ok
FROM (SELECT p, gpu_percentile_disc(p) WITHIN GROUP (ORDER BY %1$I DESC) AS g,
                percentile_disc(p) WITHIN GROUP (ORDER BY %1$I DESC) AS b
      FROM gs_t CROSS JOIN gs_fr GROUP BY p) s$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8','d','ts','tstz']) c
\gexec

-- cont (numeric types; the built-in sees x::float8), ASC and DESC
SELECT format($q$
SELECT %1$L AS col, count(*) AS fractions,
       bool_and(g IS NOT DISTINCT FROM b AND g::text IS NOT DISTINCT FROM b::text) AS cont_ok,
       bool_and(gd IS NOT DISTINCT FROM bd AND gd::text IS NOT DISTINCT FROM bd::text) AS cont_desc_ok
FROM (SELECT p, gpu_percentile_cont(p) WITHIN GROUP (ORDER BY %1$I) AS g,
                percentile_cont(p) WITHIN GROUP (ORDER BY %1$I) AS b,
                gpu_percentile_cont(p) WITHIN GROUP (ORDER BY %1$I DESC) AS gd,
                percentile_cont(p) WITHIN GROUP (ORDER BY %1$I DESC) AS bd
      FROM gs_t CROSS JOIN gs_fr GROUP BY p) s$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8']) c
\gexec

-- array forms: all fractions at once, unsorted, duplicated, NULL elements
SELECT format($q$
SELECT %1$L AS col,
  (gpu_percentile_disc(a) WITHIN GROUP (ORDER BY %1$I))::text = (percentile_disc(a) WITHIN GROUP (ORDER BY %1$I))::text AS disc_arr_ok,
  (gpu_percentile_disc(a) WITHIN GROUP (ORDER BY %1$I DESC))::text = (percentile_disc(a) WITHIN GROUP (ORDER BY %1$I DESC))::text AS disc_arr_desc_ok
FROM gs_t, (SELECT array_agg(p ORDER BY random()) || ARRAY[NULL, 0.5, 0.5, NULL, 1, 0]::float8[] AS a FROM gs_fr) f
GROUP BY a$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8','d','ts','tstz']) c
\gexec

SELECT format($q$
SELECT %1$L AS col,
  (gpu_percentile_cont(a) WITHIN GROUP (ORDER BY %1$I))::text = (percentile_cont(a) WITHIN GROUP (ORDER BY %1$I))::text AS cont_arr_ok,
  (gpu_percentile_cont(a) WITHIN GROUP (ORDER BY %1$I DESC))::text = (percentile_cont(a) WITHIN GROUP (ORDER BY %1$I DESC))::text AS cont_arr_desc_ok
FROM gs_t, (SELECT array_agg(p ORDER BY random()) || ARRAY[NULL, 0.5, 0.5, NULL, 1, 0]::float8[] AS a FROM gs_fr) f
GROUP BY a$q$, c)
FROM unnest(ARRAY['i2','i4','i8','f4','f8']) c
\gexec

-- GROUP BY, FILTER, both directions, several aggregates in one query
SELECT bool_and(a IS NOT DISTINCT FROM b AND c IS NOT DISTINCT FROM d AND e IS NOT DISTINCT FROM f
                AND h IS NOT DISTINCT FROM i) AS group_filter_ok, count(*) AS groups
FROM (SELECT grp,
             gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY i4) FILTER (WHERE g % 2 = 0) AS a,
             percentile_disc(0.3) WITHIN GROUP (ORDER BY i4) FILTER (WHERE g % 2 = 0) AS b,
             gpu_percentile_cont(0.3) WITHIN GROUP (ORDER BY f8 DESC) FILTER (WHERE i2 > 0) AS c,
             percentile_cont(0.3) WITHIN GROUP (ORDER BY f8 DESC) FILTER (WHERE i2 > 0) AS d,
             gpu_percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY ts) AS e,
             percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY ts) AS f,
             gpu_percentile_cont(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY i8) FILTER (WHERE false) AS h,
             percentile_cont(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY i8) FILTER (WHERE false) AS i
      FROM gs_t GROUP BY grp) s;

-- shared state: disc and cont over the same x in one query (one transition state)
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) AS disc,
       gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS cont,
       gpu_percentile_disc(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY x) AS disc_arr,
       gpu_percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY x) AS cont_arr,
       gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x DESC) AS cont_desc,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY x) AS b_disc,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS b_cont
FROM generate_series(1, 10) x;
SELECT max(value) FILTER (WHERE name = 'cpu_runs') AS runs_before,
       max(value) FILTER (WHERE name = 'states_created') AS states_before
FROM gpuselect_status() \gset
-- (over float8: percentile_cont takes float8, so over an integer x its
-- argument is x::float8, another expression than gpu_percentile_disc's x)
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x), gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x),
       gpu_percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY x)
FROM (SELECT g::float8 AS x FROM generate_series(1, 10) g) s;
-- three final functions ran on two transition states: the planner rewrite
-- (planner.c) plans these as plain aggregates whose fraction is an argument,
-- so the two scalar 0.5 calls share one state and the array call has its own
SELECT max(value::int8) FILTER (WHERE name = 'cpu_runs') - :runs_before AS runs,
       max(value::int8) FILTER (WHERE name = 'states_created') - :states_before AS states
FROM gpuselect_status();
-- ASC and DESC cannot share
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x), gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x DESC)
FROM generate_series(1, 10) x;
SELECT max(value::int8) FILTER (WHERE name = 'states_created') - :states_before AS states
FROM gpuselect_status();

-- ---------------- edge cases ----------------
-- empty input, all-NULL input: NULL (single, array, cont)
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) AS disc,
       gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS cont,
       gpu_percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY x) AS disc_arr,
       gpu_percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY x) AS cont_arr
FROM (SELECT 1::int4 AS x WHERE false) s;
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) AS disc,
       gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS cont,
       gpu_percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY x) AS disc_arr,
       gpu_percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY x) AS cont_arr,
       percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY x) AS b_disc_arr
FROM (VALUES (NULL::float8), (NULL)) s(x);
-- NULL fraction -> NULL; NULL fraction array -> NULL; empty array -> empty array
SELECT gpu_percentile_disc(NULL) WITHIN GROUP (ORDER BY x) AS disc,
       gpu_percentile_cont(NULL) WITHIN GROUP (ORDER BY x) AS cont,
       gpu_percentile_disc(NULL::float8[]) WITHIN GROUP (ORDER BY x) AS disc_arr,
       gpu_percentile_cont(NULL::float8[]) WITHIN GROUP (ORDER BY x) AS cont_arr,
       gpu_percentile_disc('{}'::float8[]) WITHIN GROUP (ORDER BY x) AS disc_empty,
       gpu_percentile_cont('{}'::float8[]) WITHIN GROUP (ORDER BY x) AS cont_empty,
       percentile_disc('{}'::float8[]) WITHIN GROUP (ORDER BY x) AS b_disc_empty,
       pg_typeof(gpu_percentile_disc('{}'::float8[]) WITHIN GROUP (ORDER BY x)) AS disc_empty_type
FROM generate_series(1, 5) x;
-- empty array with no rows: NULL (no rows is checked first)
SELECT gpu_percentile_disc('{}'::float8[]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_disc('{}'::float8[]) WITHIN GROUP (ORDER BY x) AS b
FROM generate_series(1, 0) x;

-- multi-dimensional fraction arrays, non-default lower bounds, NULL elements
SELECT gpu_percentile_disc('[2:3][-1:1]={{0.1,NULL,0.5},{1,0,0.33}}'::float8[]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_disc('[2:3][-1:1]={{0.1,NULL,0.5},{1,0,0.33}}'::float8[]) WITHIN GROUP (ORDER BY x) AS b
FROM generate_series(1, 100) x;
SELECT gpu_percentile_cont('[0:1][5:6]={{0.1,NULL},{1,0.33}}'::float8[]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_cont('[0:1][5:6]={{0.1,NULL},{1,0.33}}'::float8[]) WITHIN GROUP (ORDER BY x) AS b
FROM generate_series(1, 100) x;
SELECT gpu_percentile_disc(ARRAY[NULL, NULL]::float8[]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_disc(ARRAY[NULL, NULL]::float8[]) WITHIN GROUP (ORDER BY x) AS b
FROM generate_series(1, 3) x;

-- one row, two rows
SELECT gpu_percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS g1,
       gpu_percentile_cont(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS c1
FROM (VALUES (42::int2)) s(x);
SELECT gpu_percentile_disc(ARRAY[0, 0.5, 0.50001, 1]) WITHIN GROUP (ORDER BY x) AS g2,
       percentile_disc(ARRAY[0, 0.5, 0.50001, 1]) WITHIN GROUP (ORDER BY x) AS b2,
       gpu_percentile_cont(ARRAY[0, 0.25, 1]) WITHIN GROUP (ORDER BY x DESC) AS c2,
       percentile_cont(ARRAY[0, 0.25, 1]) WITHIN GROUP (ORDER BY x DESC) AS bc2
FROM (VALUES (7::int8), (-3)) s(x);

-- extreme integer values
SELECT gpu_percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS b,
       gpu_percentile_cont(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS gc,
       percentile_cont(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS bc
FROM (VALUES ('-9223372036854775808'::int8), (9223372036854775807), (0), (-1)) s(x);
SELECT gpu_percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS b
FROM (VALUES ('-32768'::int2), (32767), (0), (-1)) s(x);
SELECT gpu_percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS b
FROM (VALUES ('-infinity'::timestamptz), ('infinity'), ('2020-01-01 00:00+00'), ('4713-01-01 BC 00:00+00')) s(x);
SELECT gpu_percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_disc(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS b
FROM (VALUES ('-infinity'::date), ('infinity'), ('2020-01-01'), ('4713-01-01 BC')) s(x);

-- special floats: NaN above +Infinity, NaNs equal, -Infinity, -0 = 0
CREATE TABLE gs_special AS
SELECT v::float8 AS f8, v::float4 AS f4
FROM unnest(ARRAY['NaN', 'Infinity', '-Infinity', '0', '-0', '1', '-1', 'NaN', '1e30', '-1e-30',
                  'Infinity', '3.5', '-Infinity', '2', 'NaN']) v;
SELECT format($q$
SELECT %1$L AS col, count(*) AS fractions,
       bool_and(gd IS NOT DISTINCT FROM bd) AS disc_ok,
       bool_and(gdd IS NOT DISTINCT FROM bdd) AS disc_desc_ok,
       bool_and(gc IS NOT DISTINCT FROM bc) AS cont_ok,
       bool_and(gcd IS NOT DISTINCT FROM bcd) AS cont_desc_ok
FROM (SELECT p, gpu_percentile_disc(p) WITHIN GROUP (ORDER BY %1$I) AS gd,
                percentile_disc(p) WITHIN GROUP (ORDER BY %1$I) AS bd,
                gpu_percentile_disc(p) WITHIN GROUP (ORDER BY %1$I DESC) AS gdd,
                percentile_disc(p) WITHIN GROUP (ORDER BY %1$I DESC) AS bdd,
                gpu_percentile_cont(p) WITHIN GROUP (ORDER BY %1$I) AS gc,
                percentile_cont(p) WITHIN GROUP (ORDER BY %1$I) AS bc,
                gpu_percentile_cont(p) WITHIN GROUP (ORDER BY %1$I DESC) AS gcd,
                percentile_cont(p) WITHIN GROUP (ORDER BY %1$I DESC) AS bcd
      FROM gs_special CROSS JOIN (SELECT p FROM gs_fr UNION ALL SELECT g / 20.0 FROM generate_series(0, 20) g) f
      GROUP BY p) s$q$, c)
FROM unnest(ARRAY['f4','f8']) c
\gexec
SELECT gpu_percentile_disc(ARRAY[0, 0.1, 0.2, 0.5, 0.8, 0.9, 1]) WITHIN GROUP (ORDER BY f8) AS g,
       percentile_disc(ARRAY[0, 0.1, 0.2, 0.5, 0.8, 0.9, 1]) WITHIN GROUP (ORDER BY f8) AS b
FROM gs_special;
-- {-Infinity, +Infinity} interpolates to NaN, as float8_lerp does
SELECT gpu_percentile_cont(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_cont(ARRAY[0, 0.5, 1]) WITHIN GROUP (ORDER BY x) AS b,
       gpu_median(x) AS m
FROM (VALUES ('-Infinity'::float8), ('Infinity')) s(x);
SELECT gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS g,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS b
FROM (VALUES ('Infinity'::float8), ('Infinity')) s(x);
SELECT gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS g,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS b
FROM (VALUES ('NaN'::float8), ('1')) s(x);
-- data holding only -0: the stored datum comes back (text shows -0)
SELECT (gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x))::text AS g,
       (percentile_disc(0.5) WITHIN GROUP (ORDER BY x))::text AS b,
       (gpu_percentile_disc(ARRAY[0, 1]) WITHIN GROUP (ORDER BY x DESC))::text AS g_arr,
       (percentile_disc(ARRAY[0, 1]) WITHIN GROUP (ORDER BY x DESC))::text AS b_arr,
       (gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::text AS gc,
       (percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::text AS bc,
       gpu_quantile(x, 0.5)::text AS q,
       gpu_median(x)::text AS m
FROM (VALUES ('-0'::float8), ('-0'), ('-0')) s(x);
SELECT (gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x))::text AS g,
       (percentile_disc(0.5) WITHIN GROUP (ORDER BY x))::text AS b
FROM (VALUES ('-0'::float4), ('-0')) s(x);
-- duplicates
SELECT gpu_percentile_disc(ARRAY[0, 0.2, 0.4, 0.6, 0.8, 1]) WITHIN GROUP (ORDER BY x) AS g,
       percentile_disc(ARRAY[0, 0.2, 0.4, 0.6, 0.8, 1]) WITHIN GROUP (ORDER BY x) AS b,
       gpu_percentile_cont(ARRAY[0, 0.2, 0.4, 0.6, 0.8, 1]) WITHIN GROUP (ORDER BY x) AS gc,
       percentile_cont(ARRAY[0, 0.2, 0.4, 0.6, 0.8, 1]) WITHIN GROUP (ORDER BY x) AS bc
FROM (SELECT (g % 3)::int4 AS x FROM generate_series(1, 1000) g) s;

-- ---------------- errors (SQLSTATE) ----------------
-- out-of-range fractions: 22003, raised even with no rows (single form)
SELECT gpu_percentile_disc(1.5) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 10) x;
SELECT gpu_percentile_disc(-0.1) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 0) x;
SELECT gpu_percentile_cont('NaN') WITHIN GROUP (ORDER BY x) FROM generate_series(1, 0) x;
SELECT percentile_cont('NaN') WITHIN GROUP (ORDER BY x) FROM generate_series(1, 0) x;
SELECT gpu_percentile_disc(ARRAY[0.5, 2]) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 10) x;
SELECT gpu_percentile_cont(ARRAY[NULL, -1]) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 10) x;
-- array form with no rows: NULL before the array is looked at
SELECT gpu_percentile_disc(ARRAY[0.5, 2]) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 0) x;
-- the message, as PostgreSQL words it
\set VERBOSITY default
SELECT gpu_percentile_disc(1.5) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 10) x;
SELECT gpu_percentile_cont(ARRAY[0.5, -0.25]) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 10) x;
-- types beyond the eight key types: percentile_disc takes any type with a
-- btree ordering (by comparison, types_varlena.sql); percentile_cont takes
-- float8 and interval, as the built-in, so other types are its 42883
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES ('a'::text)) s(x);
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM (SELECT 1.5::numeric AS x WHERE false) s;
SELECT gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (date '2020-01-01')) s(x);
SELECT gpu_percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY x) FROM (SELECT now() AS x WHERE false) s;
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (interval '1 day')) s(x);
-- ORDER BY ... USING an operator other than the type's default < or >: the
-- comparison path selects in that ordering, as the built-in sorts in it
CREATE FUNCTION gs_abs_cmp(int4, int4) RETURNS int4 LANGUAGE sql IMMUTABLE AS 'SELECT btint4cmp(abs($1), abs($2))';
CREATE FUNCTION gs_abs_lt(int4, int4) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT abs($1) < abs($2)';
CREATE FUNCTION gs_abs_le(int4, int4) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT abs($1) <= abs($2)';
CREATE FUNCTION gs_abs_eq(int4, int4) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT abs($1) = abs($2)';
CREATE FUNCTION gs_abs_ge(int4, int4) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT abs($1) >= abs($2)';
CREATE FUNCTION gs_abs_gt(int4, int4) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT abs($1) > abs($2)';
CREATE OPERATOR <<<< (LEFTARG = int4, RIGHTARG = int4, FUNCTION = gs_abs_lt);
CREATE OPERATOR <<<= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = gs_abs_le);
CREATE OPERATOR ==== (LEFTARG = int4, RIGHTARG = int4, FUNCTION = gs_abs_eq);
CREATE OPERATOR >>>= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = gs_abs_ge);
CREATE OPERATOR >>>> (LEFTARG = int4, RIGHTARG = int4, FUNCTION = gs_abs_gt);
CREATE OPERATOR CLASS gs_abs_ops FOR TYPE int4 USING btree AS
  OPERATOR 1 <<<<, OPERATOR 2 <<<=, OPERATOR 3 ====, OPERATOR 4 >>>=, OPERATOR 5 >>>>,
  FUNCTION 1 gs_abs_cmp(int4, int4);
SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY x USING <<<<) AS builtin_abs_order
FROM (VALUES (-5), (1), (-2), (3)) s(x);
SELECT gpu_percentile_disc(0.25) WITHIN GROUP (ORDER BY x USING <<<<) FROM (VALUES (-5), (1), (-2), (3)) s(x);
SELECT gpu_percentile_cont(0.25) WITHIN GROUP (ORDER BY x USING >>>>) FROM (VALUES (-5), (1), (-2), (3)) s(x);
\set VERBOSITY sqlstate
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x USING <) AS asc_using,
       gpu_percentile_disc(0.2) WITHIN GROUP (ORDER BY x USING >) AS desc_using
FROM generate_series(1, 10) x;

-- gpuselect_status(): settings and run record (rows common to every build)
SET gpuselect.approximate = on;
SET gpuselect.approx_buckets = 100;
SET gpuselect.gpu_min_rows = 12345;
SELECT name, value FROM gpuselect_status()
WHERE name IN ('device', 'gpu_min_rows', 'approximate', 'approx_buckets', 'seed', 'debug')
ORDER BY name;
RESET gpuselect.approximate;
RESET gpuselect.approx_buckets;
RESET gpuselect.gpu_min_rows;
SELECT gpu_percentile_disc(ARRAY[0.1, 0.2, NULL]) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 77) x;
SELECT name, value FROM gpuselect_status()
WHERE name IN ('last_path', 'last_n', 'last_ranks', 'last_approximate', 'last_bytes_copied', 'last_rank_bound')
ORDER BY name;
SELECT count(*) AS common_rows FROM gpuselect_status()
WHERE name IN ('device', 'gpu_min_rows', 'approximate', 'approx_buckets', 'seed', 'debug', 'gpu_available',
               'gpu_runs', 'cpu_runs', 'states_created', 'last_path', 'last_n', 'last_ranks',
               'last_approximate', 'last_bytes_copied', 'last_copy_ms', 'last_select_ms', 'last_rank_bound');
-- each row's kind: what an operator reads set apart from internal counters;
-- booleans spelled on / off only
SELECT name, kind FROM gpuselect_status()
WHERE name IN ('version', 'accelerate_builtins', 'device', 'gpu_available', 'gpu_runs', 'states_spilled',
               'states_created', 'fraction_full_compares', 'last_path', 'service', 'service_state')
ORDER BY name;
SELECT kind, count(*) > 0 AS present FROM gpuselect_status() GROUP BY kind ORDER BY kind;
SELECT name, value FROM gpuselect_status() WHERE value IN ('true', 'false', 't', 'f', 'yes', 'no');

-- settings (the default as built; a session may run with another, e.g. PGOPTIONS)
SELECT boot_val FROM pg_settings WHERE name = 'gpuselect.device';
SELECT boot_val, unit FROM pg_settings WHERE name = 'gpuselect.parallel_arena_size';
SET gpuselect.parallel_arena_size = -1;
SET gpuselect.device = 'tpu';
SET gpuselect.approx_buckets = 1;
SET gpuselect.approx_buckets = 8193;
SET gpuselect.nonexistent = 1;
RESET gpuselect.device;

DROP TABLE gs_t, gs_fr, gs_special;
DROP OPERATOR CLASS gs_abs_ops USING btree;
DROP OPERATOR FAMILY gs_abs_ops USING btree;
DROP OPERATOR <<<< (int4, int4), <<<= (int4, int4), ==== (int4, int4), >>>= (int4, int4), >>>> (int4, int4);
DROP FUNCTION gs_abs_cmp(int4, int4), gs_abs_lt(int4, int4), gs_abs_le(int4, int4), gs_abs_eq(int4, int4),
  gs_abs_ge(int4, int4), gs_abs_gt(int4, int4);
