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
DROP FUNCTION sh_check(text);
DROP TABLE sh, sh2, shn;
