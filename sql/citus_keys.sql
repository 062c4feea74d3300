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
