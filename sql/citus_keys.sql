-- gpuselect: the functions the Citus exchange's rounds run on the workers
-- (src/aggs/citus_exchange.c), checked without Citus.  gs_citus_key(x) is
-- gpuselect's order as int8: sorting by it is sorting by the aggregates'
-- order (-0 below +0, NaN above Infinity); gs_citus_bucket(x, t) is
-- width_bucket(gs_citus_key(x), t), each compared with PostgreSQL's own.
CREATE TABLE ck (f8 float8, f4 float4, i2 int2, i4 int4, i8 int8, d date, ts timestamp, tz timestamptz);
INSERT INTO ck VALUES
 ('-Infinity', '-Infinity', -32768, -2147483648, -9223372036854775808, '-infinity', '-infinity', '-infinity'),
 (-1e300, -1e30, -7, -7, -7, '1999-12-31', '1999-12-31 23:59', '1999-12-31 23:59+00'),
 ('-0', '-0', -1, -1, -1, '2000-01-01', '2000-01-01', '2000-01-01+00'),
 (0, 0, 0, 0, 0, '2000-01-02', '2000-01-02', '2000-01-02+00'),
 (1.5, 1.5, 1, 1, 1, '2026-11-27', '2026-11-27 12:00', '2026-11-27 12:00+00'),
 (1.5, 1.5, 1, 1, 1, '2026-11-27', '2026-11-27 12:00', '2026-11-27 12:00+00'),
 (1e300, 1e30, 32767, 2147483647, 9223372036854775807, 'infinity', 'infinity', 'infinity'),
 ('Infinity', 'Infinity', 2, 2, 2, '2026-11-28', '2026-11-28', '2026-11-28+00'),
 ('NaN', 'NaN', 3, 3, 3, '2026-11-29', '2026-11-29', '2026-11-29+00'),
 (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
-- the key's order is the type's (with -0 < +0 and NaN last) for each type
SELECT c, bool_and(ok) AS ordered FROM (
  SELECT 'f8' c, (lag(k) OVER (ORDER BY v, s) <= k) IS NOT FALSE ok FROM (SELECT f8 v, (f8::text <> '-0') s, gs_citus_key(f8) k FROM ck) a
  UNION ALL SELECT 'f4', (lag(k) OVER (ORDER BY v, s) <= k) IS NOT FALSE FROM (SELECT f4 v, (f4::text <> '-0') s, gs_citus_key(f4) k FROM ck) a
  UNION ALL SELECT 'i8', (lag(k) OVER (ORDER BY v) < k) IS NOT FALSE OR v IS NULL FROM (SELECT DISTINCT i8 v, gs_citus_key(i8) k FROM ck) a
  UNION ALL SELECT 'tz', (lag(k) OVER (ORDER BY v) < k) IS NOT FALSE OR v IS NULL FROM (SELECT DISTINCT tz v, gs_citus_key(tz) k FROM ck) a
) x GROUP BY c ORDER BY c;
SELECT gs_citus_key('-0'::float8) < gs_citus_key('0'::float8) AS minus_zero_first,
       gs_citus_key('NaN'::float8) > gs_citus_key('Infinity'::float8) AS nan_last;
-- gs_citus_bucket against width_bucket over every column's keys, with
-- thresholds that repeat a key (a heavy value's v, v+1), sit below, at and
-- above every key, and an empty array
-- (mismatches / distinct buckets seen: a check that can fail)
CREATE FUNCTION ck_buckets(t int8[]) RETURNS text LANGUAGE sql AS $$
  SELECT count(*) FILTER (WHERE b IS DISTINCT FROM w) || ' / ' || count(DISTINCT b) FROM ck, LATERAL (VALUES
    (gs_citus_bucket(f8, t), width_bucket(gs_citus_key(f8), t)),
    (gs_citus_bucket(f4, t), width_bucket(gs_citus_key(f4), t)),
    (gs_citus_bucket(i2, t), width_bucket(gs_citus_key(i2), t)),
    (gs_citus_bucket(i4, t), width_bucket(gs_citus_key(i4), t)),
    (gs_citus_bucket(i8, t), width_bucket(gs_citus_key(i8), t)),
    (gs_citus_bucket(d, t), width_bucket(gs_citus_key(d), t)),
    (gs_citus_bucket(ts, t), width_bucket(gs_citus_key(ts), t)),
    (gs_citus_bucket(tz, t), width_bucket(gs_citus_key(tz), t))) v(b, w)
$$;
SELECT ck_buckets((SELECT array_agg(k ORDER BY k) FROM (SELECT gs_citus_key(f8) k FROM ck WHERE f8 IS NOT NULL
                   UNION ALL SELECT gs_citus_key(f8) + 1 FROM ck WHERE f8 = 1.5) s)) AS f8_keys_as_thresholds,
       ck_buckets((SELECT array_agg(k ORDER BY k) FROM (SELECT gs_citus_key(i8) k FROM ck WHERE i8 IS NOT NULL) s)) AS i8_keys_as_thresholds,
       ck_buckets('{-9223372036854775808, 0, 0, 9223372036854775807}') AS extremes,
       ck_buckets((SELECT array_agg(g ORDER BY g) FROM generate_series(-9223372036854775807, 9223372036854775807, 36028797018963968) g)) AS spread,
       ck_buckets('{}') AS empty;
SELECT gs_citus_bucket(1.0::float8, '{1, NULL}');
SELECT gs_citus_bucket(1.0::float8, '{{1, 2}}');
SELECT gs_citus_key('x'::text);
DROP FUNCTION ck_buckets(int8[]);
DROP TABLE ck;
-- gs_citus_histogram(b): the counts round's histogram (element b + 1 counts
-- bucket b), against GROUP BY count(*) on the same rows: skewed buckets, a
-- gap, rows in bucket order (the state grows often) and in a scrambled one
CREATE TABLE hb AS
SELECT g, CASE WHEN g % 3 = 0 THEN 0 WHEN g % 7 = 0 THEN 57 ELSE (g * 7919) % 40 END::int4 AS b
FROM generate_series(1, 5000) g;
CREATE FUNCTION hb_counts(upto int) RETURNS int8[] LANGUAGE sql AS $$
  SELECT array_agg(coalesce(c, 0) ORDER BY i) FROM generate_series(0, upto) i
  LEFT JOIN (SELECT b, count(*) c FROM hb GROUP BY b) s ON s.b = i
$$;
SELECT h[1:58] = hb_counts(57) AS same, array_length(h, 1) >= 58 AS long_enough,
       coalesce(h[59:] = array_fill(0::int8, ARRAY[array_length(h, 1) - 58]), true) AS zeros_after
FROM (SELECT gs_citus_histogram(b) h FROM hb) s;
SELECT (SELECT gs_citus_histogram(b ORDER BY b) FROM hb)[1:58] = hb_counts(57) AS in_order,
       (SELECT gs_citus_histogram(b ORDER BY b DESC) FROM hb)[1:58] = hb_counts(57) AS reversed;
SELECT gs_citus_histogram(b) FROM hb WHERE g < 0;
SELECT gs_citus_histogram(NULLIF(b, b)) FROM hb;
-- the combine function adds element by element and drops trailing zeros
SELECT gs_citus_histogram_merge('{1, 2, 0, 0}', '{3}'), gs_citus_histogram_merge('{}', '{0, 5}'),
       gs_citus_histogram_merge('{0, 0}', '{}');
-- bad input: clean ERRORs
SELECT gs_citus_histogram(b - 1) FROM hb;
SELECT gs_citus_histogram(1048576);
SELECT gs_citus_histogram_add('{}', 1);
SELECT gs_citus_histogram_merge('{{1}}', '{}');
SELECT gs_citus_histogram_merge('{1, NULL}', '{}');
SELECT gs_citus_histogram_merge('{9223372036854775807}', '{1}');
DROP FUNCTION hb_counts(int);
DROP TABLE hb;
-- gs_citus_shard_histogram(shards, col, t) and gs_citus_shard_keys(shards,
-- col, bounds): the exchange's first counts round and its gather over some
-- shards, C scans (src/scan/bulk_shard_scan.c), against GROUP BY
-- gs_citus_bucket(col, t) and WHERE gs_citus_bucket(col, bounds) % 2 = 1 on
-- the same rows, for every key type: the counts of its length(t) + 1
-- buckets (thresholds: some rows' keys, a heavy value's v, v + 1) summed
-- over two tables, and the keys inside the bounds' ranges (from
-- -infinity, and not); the column found by name after a column before it
-- was dropped and in a table with its columns in another order; what the
-- statement's snapshot sees (rows deleted in this transaction)
CREATE TABLE sh (gone int4, id int4, f8 float8, f4 float4, i2 int2, i4 int4, i8 int8, d date, ts timestamp, tz timestamptz);
INSERT INTO sh SELECT g, g,
  CASE WHEN g % 50 = 0 THEN NULL WHEN g % 7 = 0 THEN 1.5 WHEN g % 333 = 0 THEN 'NaN' WHEN g % 111 = 0 THEN '-0'
       ELSE (g * 7919) % 1000 - 500.25 END,
  (g * 31) % 977 / 3.0, (g % 601 - 300)::int2, (g * 7919) % 100003 - 50000, (g::int8 * 104729) % 1000003 - 500000,
  date '2026-01-01' + (g % 400 - 200), timestamp '2026-01-01' + g * interval '7 minutes',
  timestamptz '2026-01-01 00:00+00' + ((g * 13) % 3000) * interval '13 seconds'
FROM generate_series(1, 3000) g;
ALTER TABLE sh DROP COLUMN gone;
CREATE TABLE sh2 (tz timestamptz, ts timestamp, d date, i8 int8, i4 int4, i2 int2, f4 float4, f8 float8, id int4);
INSERT INTO sh2 (id, f8, f4, i2, i4, i8, d, ts, tz)
  SELECT id + 3000, f8 * 2, f4 + 1, i2, i4 - 7, i8 / 3, d + 11, ts + interval '1 day', tz - interval '5 hours'
  FROM sh WHERE id % 4 <> 0;
CREATE FUNCTION sh_check(col text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t int8[];
  b1 int8[];
  b2 int8[];
  got int8[];
  want int8[];
  gotq int8[];
  wantq int8[];
  -- a WHERE over other columns (a cast, an operator, a function, NULLs)
  q text := 'i4 % 3 <> 0 AND (d > date ''2026-01-05'' OR f8 IS NULL) AND abs(i2) < 250';
  keys1 boolean;
  keys2 boolean;
  nkeys int;
  rows text := '(SELECT * FROM ONLY sh UNION ALL SELECT id, f8, f4, i2, i4, i8, d, ts, tz FROM sh2) u';
BEGIN
  EXECUTE format('SELECT array_agg(k ORDER BY k) FROM (SELECT DISTINCT gs_citus_key(%1$I) k FROM %2$s WHERE id %% 97 = 0 AND %1$I IS NOT NULL'
                 ' UNION SELECT gs_citus_key(%1$I) + 1 FROM sh WHERE id = 7) s', col, rows) INTO t;
  got := gs_citus_shard_histogram('{sh, sh2}', col, t, '');
  gotq := gs_citus_shard_histogram('{sh, sh2}', col, t, q);
  EXECUTE format('SELECT array_agg(coalesce(c, 0) ORDER BY i) FROM generate_series(0, %3$s) i'
                 ' LEFT JOIN (SELECT gs_citus_bucket(%1$I, $1) b, count(*) c FROM %2$s WHERE %1$I IS NOT NULL GROUP BY 1) s ON s.b = i',
                 col, rows, array_length(t, 1)) USING t INTO want;
  EXECUTE format('SELECT array_agg(coalesce(c, 0) ORDER BY i) FROM generate_series(0, %3$s) i'
                 ' LEFT JOIN (SELECT gs_citus_bucket(%1$I, $1) b, count(*) c FROM %2$s WHERE %1$I IS NOT NULL AND (%4$s) GROUP BY 1) s ON s.b = i',
                 col, rows, array_length(t, 1), q) USING t INTO wantq;
  -- the gather's bounds: every third threshold, from -infinity (odd: the last range open) and not
  b1 := '{-9223372036854775808}'::int8[] || ARRAY(SELECT k FROM unnest(t) WITH ORDINALITY u(k, i) WHERE i % 3 = 1 ORDER BY i);
  b2 := ARRAY(SELECT k FROM unnest(t) WITH ORDINALITY u(k, i) WHERE i % 5 = 2 ORDER BY i);
  EXECUTE format('SELECT (SELECT array_agg(k ORDER BY k) FROM unnest(gs_citus_shard_keys(''{sh, sh2}'', %3$L, $1, '''')) k)'
                 ' IS NOT DISTINCT FROM (SELECT array_agg(gs_citus_key(%1$I) ORDER BY gs_citus_key(%1$I)) FROM %2$s WHERE gs_citus_bucket(%1$I, $1) %% 2 = 1),'
                 ' (SELECT count(*) FROM unnest(gs_citus_shard_keys(''{sh, sh2}'', %3$L, $1, '''')))',
                 col, rows, col) USING b1 INTO keys1, nkeys;
  EXECUTE format('SELECT (SELECT array_agg(k ORDER BY k) FROM unnest(gs_citus_shard_keys(''{sh2, sh}'', %3$L, $1, %4$L)) k)'
                 ' IS NOT DISTINCT FROM (SELECT array_agg(gs_citus_key(%1$I) ORDER BY gs_citus_key(%1$I)) FROM %2$s WHERE gs_citus_bucket(%1$I, $1) %% 2 = 1 AND (%4$s))',
                 col, rows, col, q) USING b2 INTO keys2;
  RETURN (got = want) || ' ' || (gotq = wantq) || ' ' || array_length(got, 1) || ' ' || (SELECT sum(c) FROM unnest(got) c)
         || ' ' || (SELECT count(*) FROM unnest(got) c WHERE c > 0) || ' ' || keys1 || ' ' || keys2 || ' ' || nkeys;
END $$;
SELECT c, sh_check(c) AS "counts: same, WHERE, buckets, rows, non-empty; keys: same x2, n" FROM unnest('{f8, f4, i2, i4, i8, d, ts, tz}'::text[]) c;
SELECT gs_citus_shard_histogram('{sh}', 'i4', '{}', ''), gs_citus_shard_histogram('{}', 'i4', '{1}', ''),
  gs_citus_shard_keys('{sh}', 'i4', '{}', ''), array_length(gs_citus_shard_keys('{sh}', 'i4', '{-9223372036854775808}', ''), 1);
BEGIN;
DELETE FROM sh WHERE id % 3 = 0;
SELECT sh_check('f8') AS after_own_delete, sh_check('ts') AS ts_after_own_delete;
ROLLBACK;
-- refused: clean ERRORs (the coordinator falls back to the distributed query)
SELECT gs_citus_shard_histogram('{sh}', 'nope', '{1}', '');
SELECT gs_citus_shard_keys('{sh2, sh}', 'gone', '{1}', '');
SELECT gs_citus_shard_histogram('{sh}', 'id', '{3, 1}', '');
SELECT gs_citus_shard_keys('{sh}', 'id', '{3, 1}', '');
SELECT gs_citus_shard_histogram('{sh}', 'id', '{1, NULL}', '');
SELECT gs_citus_shard_histogram('{sh, NULL}', 'id', '{1}', '');
SELECT gs_citus_shard_keys('{{sh}}', 'id', '{1}', '');
SELECT gs_citus_shard_histogram('{sh}', 'id', '{{1}}', '');
-- quals: one condition on the shard's plain columns, nothing else
SELECT gs_citus_shard_histogram('{sh}', 'id', '{1}', 'id IN (SELECT 1)');
SELECT gs_citus_shard_histogram('{sh}', 'id', '{1}', 'ctid > ''(0,1)''');
SELECT gs_citus_shard_histogram('{sh}', 'id', '{1}', 'true; DROP TABLE sh');
SELECT gs_citus_shard_histogram('{sh}', 'id', '{1}', 'true GROUP BY id');
SELECT gs_citus_shard_histogram('{sh}', 'id', '{1}', 'true FOR UPDATE');
SELECT gs_citus_shard_histogram('{sh}', 'id', '{1}', 'true UNION SELECT');
SELECT gs_citus_shard_keys('{sh}', 'id', '{1}', 'nope > 1');
SELECT gs_citus_shard_keys('{sh}', 'id', '{-9223372036854775808}', 'id < 3 AND sh.i4 IS NOT NULL');
CREATE TABLE shn (n numeric, v int4);
SELECT gs_citus_shard_histogram('{shn}', 'n', '{1}', '');
CREATE VIEW shv AS SELECT * FROM sh;
SELECT gs_citus_shard_histogram('{shv}', 'id', '{1}', '');
-- row-level security: refused for a role it applies to; no SELECT: refused
CREATE ROLE regress_gs_shard;
GRANT SELECT ON sh, shn TO regress_gs_shard;
ALTER TABLE sh ENABLE ROW LEVEL SECURITY;
CREATE POLICY sh_some ON sh FOR SELECT USING (id < 100);
SET ROLE regress_gs_shard;
SELECT gs_citus_shard_histogram('{sh}', 'id', '{1}', '');
SELECT gs_citus_shard_keys('{sh}', 'id', '{1}', '');
SELECT gs_citus_shard_histogram('{shn}', 'v', '{1}', '');
RESET ROLE;
REVOKE SELECT ON shn FROM regress_gs_shard;
SET ROLE regress_gs_shard;
SELECT gs_citus_shard_histogram('{shn}', 'v', '{1}', '');
RESET ROLE;
-- the column alone may be read; a WHERE on another column may not
GRANT SELECT (v) ON shn TO regress_gs_shard;
SET ROLE regress_gs_shard;
SELECT gs_citus_shard_histogram('{shn}', 'v', '{1}', 'v > 0');
SELECT gs_citus_shard_histogram('{shn}', 'v', '{1}', 'n > 0');
RESET ROLE;
REVOKE SELECT (v) ON shn FROM regress_gs_shard;
DROP POLICY sh_some ON sh;
REVOKE ALL ON sh FROM regress_gs_shard;
DROP ROLE regress_gs_shard;
DROP VIEW shv;
-- gs_citus_shard_group_histogram / gs_citus_shard_group_keys: the same
-- rounds grouped by an expression of the columns (the grouped exchange by
-- shard scans, src/aggs/citus_shard_groups.c), against GROUP BY on the same
-- rows: per group (its value as the int8 point, the NULL group flagged) and
-- bucket the counts, and per group the keys inside its own ranges (the
-- rows of a group left out counted where their keys are inside some
-- group's ranges).  The
-- group expressions: hours of a timestamptz under zones of +05:30 and
-- -03:30 (the session's: the workers' connections'), days of a timestamp,
-- a date column, an integer division, one with a NULL group; a WHERE.
CREATE FUNCTION shg_check(col text, gexpr text, pexpr text, q text, zone text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t int8[];
  got int8[];
  gotk int8[];
  nb int;
  ng int;
  rows text := '(SELECT * FROM ONLY sh UNION ALL SELECT id, f8, f4, i2, i4, i8, d, ts, tz FROM sh2) u';
  b1 int8[];
  b2 int8[];
  groups int8[];
  bounds int8[];
  offs int8[];
  want text[];
  have text[];
  wantk text[];
  havek text[];
  pos int;
  n int8;
  unknown int8;
BEGIN
  EXECUTE format('SELECT array_agg(k ORDER BY k) FROM (SELECT DISTINCT gs_citus_key(%1$I) k FROM %2$s WHERE id %% 89 = 0 AND %1$I IS NOT NULL) s',
                 col, rows) INTO t;
  nb := array_length(t, 1) + 1;
  -- (under the session's zone, as the GROUP BY below)
  PERFORM set_config('TimeZone', zone, true);
  got := gs_citus_shard_group_histogram('{sh, sh2}', col, t, gexpr, q);
  ng := got[1];
  SELECT array_agg(r ORDER BY r) INTO have FROM (
    SELECT got[2 + (g - 1) * (nb + 2)] || '|' || got[3 + (g - 1) * (nb + 2)] || '|' || (b - 1) || '|' || got[3 + (g - 1) * (nb + 2) + b] r
    FROM generate_series(1, ng) g, generate_series(0, nb) b
    WHERE b = 0 OR got[3 + (g - 1) * (nb + 2) + b] > 0) s;
  EXECUTE format('SELECT array_agg(r ORDER BY r) FROM ('
                 ' SELECT (g IS NULL)::int || ''|'' || coalesce(%5$s, 0) || ''|'' || coalesce(b, -1) || ''|'' || coalesce(c, 0) r FROM'
                 '  (SELECT g, b, count(*) c FROM (SELECT (%3$s) g, gs_citus_bucket(%1$I, $1) b FROM %2$s WHERE %4$s) s WHERE b IS NOT NULL GROUP BY 1, 2'
                 '   UNION ALL SELECT DISTINCT (%3$s), NULL::int, NULL::int8 FROM %2$s WHERE %4$s) s2'
                 ' ) s3', col, rows, gexpr, CASE WHEN q = '' THEN 'true' ELSE q END,
                 replace(pexpr, '$g', 'g')) USING t INTO want;
  -- (the presence rows: bucket -1, the got side's element 0 is the NULL flag)
  SELECT array_agg(CASE WHEN split_part(r, '|', 3) = '-1' THEN split_part(r, '|', 1) || '|' || split_part(r, '|', 2) || '|-1|' ELSE r END ORDER BY 1) INTO want FROM unnest(want) r;
  SELECT array_agg(CASE WHEN split_part(r, '|', 3) = '-1' THEN split_part(r, '|', 1) || '|' || split_part(r, '|', 2) || '|-1|' ELSE r END ORDER BY 1) INTO have FROM unnest(have) r;
  SELECT array_agg(r ORDER BY r) INTO want FROM unnest(want) r;
  SELECT array_agg(r ORDER BY r) INTO have FROM unnest(have) r;
  -- the keys: the NULL group the ranges of every 5th threshold, the others
  -- of every 3rd from -infinity; one group left out: its rows are unknown
  b1 := '{-9223372036854775808}'::int8[] || ARRAY(SELECT k FROM unnest(t) WITH ORDINALITY u(k, i) WHERE i % 3 = 1 ORDER BY i);
  b2 := ARRAY(SELECT k FROM unnest(t) WITH ORDINALITY u(k, i) WHERE i % 5 = 2 ORDER BY i);
  SELECT array_agg(p ORDER BY p) INTO groups FROM (SELECT got[3 + (g - 1) * (nb + 2)] p FROM generate_series(1, ng) g
    WHERE got[2 + (g - 1) * (nb + 2)] = 0 ORDER BY 1 OFFSET 1) s;
  groups := coalesce(groups, '{}');
  bounds := b2;
  offs := ARRAY[0, array_length(b2, 1)]::int8[];
  FOR gi IN 1 .. coalesce(array_length(groups, 1), 0) LOOP
    bounds := bounds || b1;
    offs := offs || array_length(bounds, 1)::int8;
  END LOOP;
  gotk := gs_citus_shard_group_keys('{sh2, sh}', col, bounds, gexpr, groups, offs, q);
  unknown := gotk[1];
  havek := '{}';
  pos := 2;
  FOR s IN 0 .. coalesce(array_length(groups, 1), 0) LOOP
    n := gotk[pos];
    havek := havek || ARRAY(SELECT s || ':' || k FROM unnest(gotk[pos + 1 : pos + n]) k);
    pos := pos + 1 + n;
  END LOOP;
  SELECT array_agg(r ORDER BY r) INTO havek FROM unnest(havek) r;
  EXECUTE format('SELECT array_agg(r ORDER BY r) FROM (SELECT slot || '':'' || gs_citus_key(%1$I) r FROM'
                 ' (SELECT *, CASE WHEN (%3$s) IS NULL THEN 0 ELSE array_position($2, %5$s) END slot FROM %2$s WHERE %4$s) s'
                 ' WHERE slot IS NOT NULL AND gs_citus_bucket(%1$I, $1[$3[slot + 1] + 1 : $3[slot + 2]]) %% 2 = 1) s2',
                 col, rows, gexpr, CASE WHEN q = '' THEN 'true' ELSE q END,
                 replace(pexpr, '$g', '(' || gexpr || ')')) USING bounds, groups, offs INTO wantk;
  -- (counted only where the key is inside some group's ranges: the rest is
  -- not looked at)
  EXECUTE format('SELECT count(*) FROM %1$s WHERE (%3$s) AND (%2$s) IS NOT NULL AND NOT (%4$s = ANY ($1))'
                 ' AND %5$I IS NOT NULL AND (gs_citus_bucket(%5$I, $2) %% 2 = 1 OR gs_citus_bucket(%5$I, $3) %% 2 = 1)',
                 rows, gexpr, CASE WHEN q = '' THEN 'true' ELSE q END, replace(pexpr, '$g', '(' || gexpr || ')'), col)
    USING groups, b1, b2 INTO n;
  RETURN (have = want) || ' ' || ng || ' ' || (havek IS NOT DISTINCT FROM wantk) || ' ' || coalesce(array_length(havek, 1), 0)
         || ' ' || (unknown = n) || ' ' || (n > 0);
END $$;
SELECT g, z, shg_check(c, g, p, q, z) AS "counts: same, groups; keys: same, n; unknown: same, some"
FROM (VALUES
  ('f8', 'date_trunc(''hour'', tz)', '(extract(epoch from $g - timestamptz ''2000-01-01 00:00+00'') * 1000000)::int8', '', 'Asia/Kolkata'),
  ('i4', 'date_trunc(''hour'', tz)', '(extract(epoch from $g - timestamptz ''2000-01-01 00:00+00'') * 1000000)::int8', 'abs(i2) < 250', 'America/St_Johns'),
  ('tz', 'date_trunc(''day'', ts)', '(extract(epoch from $g - timestamp ''2000-01-01'') * 1000000)::int8', '', 'UTC'),
  ('ts', 'd', '($g - date ''2000-01-01'')::int8', 'f8 IS NULL OR f8 > 0', 'UTC'),
  ('i8', 'i4 / 10000', '$g::int8', '', 'UTC'),
  ('f4', 'nullif(i2 % 4, 0)', '$g::int8', '', 'UTC')) v(c, g, p, q, z);
-- refused: clean ERRORs
SELECT gs_citus_shard_group_histogram('{sh}', 'f8', '{1}', 'f8::text', '');
SELECT gs_citus_shard_group_histogram('{sh}', 'f8', '{1}', 'i4 + random()::int', '');
SELECT gs_citus_shard_group_histogram('{sh}', 'f8', '{1}', 'i4, i2', '');
SELECT gs_citus_shard_group_histogram('{sh}', 'f8', '{1}', '(SELECT 1)', '');
SELECT gs_citus_shard_group_histogram('{sh}', 'f8', '{1}', 'xmin::text::int', '');
SELECT gs_citus_shard_group_histogram('{sh}', 'f8', '{1}', 'i4) FROM sh; SELECT (1', '');
SELECT gs_citus_shard_group_keys('{sh}', 'f8', '{1}', 'i4', '{2, 1}', '{0, 0, 1, 1}', '');
SELECT gs_citus_shard_group_keys('{sh}', 'f8', '{1}', 'i4', '{1}', '{0, 1}', '');
SELECT gs_citus_shard_group_keys('{sh}', 'f8', '{3, 1}', 'i4', '{1}', '{0, 0, 2}', '');
SELECT gs_citus_shard_group_keys('{sh}', 'f8', '{1}', 'i4', '{1}', '{0, 1, 0}', '');
-- the spool (src/scan/shard_spool.c): gs_citus_shard_group_spool counts as
-- gs_citus_shard_group_histogram and keeps every counted key in a file that
-- gs_citus_shard_group_spool_keys reads (its answer: 1, then
-- gs_citus_shard_group_keys's) and deletes; without a spool of its id, tag,
-- role and database it scans (0, then the same).  The counts call's rows:
-- a write after it is not seen.  Compared with the calls without a spool on
-- the same rows; the files counted in the spool directory.
CREATE FUNCTION spool_files() RETURNS int8 LANGUAGE sql AS
  $$SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false) f WHERE f LIKE 'pgsql_tmpgpuselect_spool.%'$$;
-- (a gather's answer with each slot's keys sorted: a scan after a write
-- meets the rows in another order)
CREATE FUNCTION spool_norm(k int8[], nslots int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  pos int := 2;
  out text := k[1]::text;
BEGIN
  FOR s IN 1 .. nslots LOOP
    out := out || ' ' || k[pos] || ':' || coalesce((SELECT array_agg(v ORDER BY v) FROM unnest(k[pos + 1 : pos + k[pos]]) v)::text, '{}');
    pos := pos + 1 + k[pos];
  END LOOP;
  RETURN out || ' ' || (pos = array_length(k, 1) + 1);
END $$;
CREATE FUNCTION spool_check(col text, gexpr text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t int8[] := ARRAY(SELECT gs_citus_key(f8) FROM sh WHERE id % 97 = 0 ORDER BY 1);
  b int8[] := '{-9223372036854775808}'::int8[] || t[1:3];
  nb int := array_length(t, 1) + 1;
  groups int8[];
  bounds int8[] := '{}';
  offs int8[] := '{0}';
  c1 int8[];
  c2 int8[];
  k1 int8[];
  k2 int8[];
  k3 int8[];
  files int8;
BEGIN
  c1 := gs_citus_shard_group_spool('{sh2, sh}', col, t, gexpr, 4242, q);
  files := spool_files();
  c2 := gs_citus_shard_group_histogram('{sh2, sh}', col, t, gexpr, q);
  -- every group the counts met but the first, each (and the NULL group) with the ranges b
  groups := coalesce(ARRAY(SELECT c1[3 + (g - 1) * (nb + 2)] FROM generate_series(1, c1[1]) g
                           WHERE c1[2 + (g - 1) * (nb + 2)] = 0 ORDER BY 1 OFFSET 1), '{}');
  FOR i IN 0 .. coalesce(array_length(groups, 1), 0) LOOP
    bounds := bounds || b;
    offs := offs || array_length(bounds, 1)::int8;
  END LOOP;
  -- (a write now: the spool still has the counts call's rows)
  UPDATE sh SET f8 = -f8 WHERE id % 3 = 0;
  k1 := gs_citus_shard_group_spool_keys('{sh2, sh}', col, bounds, gexpr, groups, offs, 4242, q);
  UPDATE sh SET f8 = -f8 WHERE id % 3 = 0;
  k2 := gs_citus_shard_group_keys('{sh2, sh}', col, bounds, gexpr, groups, offs, q);
  k3 := gs_citus_shard_group_spool_keys('{sh2, sh}', col, bounds, gexpr, groups, offs, 4242, q);
  RETURN (c1 = c2) || ' ' || files || ' ' || k1[1] || ' ' || (spool_norm(k1[2:], array_length(offs, 1) - 1) = spool_norm(k2, array_length(offs, 1) - 1))
         || ' ' || k3[1] || ' ' || (k3[2:] = k2) || ' ' || array_length(k2, 1) || ' ' || spool_files();
END $$;
SELECT g, spool_check(c, g, q) AS "counts, files; from spool, keys; scanned, keys; n; files"
FROM (VALUES ('f8', 'i4 / 10000', ''), ('i8', 'date_trunc(''hour'', tz)', 'f8 > 0'), ('f4', 'nullif(i2 % 4, 0)', '')) v(c, g, q);
-- not this gather's spool: another id, another WHERE, another shard order,
-- another role (0: scanned); a drop deletes it ({1}, then {0})
SELECT gs_citus_shard_group_spool('{sh2}', 'f8', '{0}', 'i4 / 10000', 7, '') IS NOT NULL AS counted, spool_files();
SELECT (gs_citus_shard_group_spool_keys('{sh2}', 'f8', '{0}', 'i4 / 10000', '{}', '{0, 1}', 8, ''))[1] AS other_id,
       (gs_citus_shard_group_spool_keys('{sh2}', 'f8', '{0}', 'i4 / 10000', '{}', '{0, 1}', 7, 'f8 > 0'))[1] AS other_where,
       (gs_citus_shard_group_spool_keys('{sh2}', 'i8', '{0}', 'i4 / 10000', '{}', '{0, 1}', 7, ''))[1] AS other_column,
       spool_files();
CREATE ROLE regress_gs_spool;
GRANT SELECT ON sh2 TO regress_gs_spool;
SET ROLE regress_gs_spool;
SELECT (gs_citus_shard_group_spool_keys('{sh2}', 'f8', '{0}', 'i4 / 10000', '{}', '{0, 1}', 7, ''))[1] AS other_role;
SELECT gs_citus_shard_spool_drop('{sh2}', 'f8', 'i4 / 10000', 7, '') AS other_role_drop;
RESET ROLE;
SELECT spool_files(), gs_citus_shard_spool_drop('{sh2}', 'f8', 'i4 / 10000', 7, '') AS dropped,
       gs_citus_shard_spool_drop('{sh2}', 'f8', 'i4 / 10000', 7, '') AS again, spool_files();
REVOKE ALL ON sh2 FROM regress_gs_spool;
DROP ROLE regress_gs_spool;
-- temp_file_limit: no room for a block, no spool; room for one of 20000
-- rows' three blocks, given up at the second (no file left); the counts
-- as without a spool either way
CREATE TABLE shs AS SELECT g id, (g * 0.5)::float8 f8, g % 7 i4 FROM generate_series(1, 20000) g;
SET temp_file_limit = 100;
SELECT gs_citus_shard_group_spool('{shs}', 'f8', '{5000}', 'i4', 9, '') = gs_citus_shard_group_histogram('{shs}', 'f8', '{5000}', 'i4', '') AS same,
       spool_files();
SET temp_file_limit = 200;
SELECT gs_citus_shard_group_spool('{shs}', 'f8', '{5000}', 'i4', 9, '') = gs_citus_shard_group_histogram('{shs}', 'f8', '{5000}', 'i4', '') AS same,
       spool_files();
RESET temp_file_limit;
SELECT gs_citus_shard_group_spool('{shs}', 'f8', '{5000}', 'i4', 9, '') IS NOT NULL AS counted, spool_files(),
       gs_citus_shard_spool_drop('{shs}', 'f8', 'i4', 9, '') AS dropped, spool_files();
-- an ERROR in the counts call (a WHERE that divides by zero on some row)
-- leaves no spool
SELECT gs_citus_shard_group_spool('{shs}', 'f8', '{5000}', 'i4', 9, '1 / (id - 15000) < 1');
SELECT spool_files();
DROP TABLE shs;
DROP FUNCTION spool_check(text, text, text);
DROP FUNCTION spool_norm(int8[], int);
DROP FUNCTION spool_files();
DROP FUNCTION shg_check(text, text, text, text, text);
DROP FUNCTION sh_check(text);
DROP TABLE sh, sh2, shn;
