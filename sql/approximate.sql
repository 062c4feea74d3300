-- gpuselect: gpuselect.approximate = on returns values of the data whose rank
-- is within the reported bound (answers are not hard-coded: they depend on
-- the engine and the sample)
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate

SELECT setseed(0.77);
CREATE TABLE gs_ap AS
SELECT (random() * 1e6)::float8 AS x, (random() * 5000)::int4 AS i
FROM generate_series(1, 100000) g;

SET gpuselect.approximate = on;
SET gpuselect.approx_buckets = 64;

-- one fraction at a time: the answer occurs in the data, and its rank range
-- is within last_rank_bound of the wanted rank ceil(p*N)-1
CREATE FUNCTION gs_approx_check(p float8) RETURNS TABLE (fraction float8, in_data bool, within_bound bool, bound_ok bool)
LANGUAGE plpgsql AS $$
DECLARE
  v float8;
  n int8;
  lo int8;
  hi int8;
  r int8;
  bound int8;
BEGIN
  SELECT gpu_percentile_disc(gs_approx_check.p) WITHIN GROUP (ORDER BY x) INTO v FROM gs_ap;
  SELECT value::int8 INTO bound FROM gpuselect_status() WHERE name = 'last_rank_bound';
  SELECT count(*), count(*) FILTER (WHERE x < v), count(*) FILTER (WHERE x <= v) - 1 INTO n, lo, hi FROM gs_ap;
  r := greatest(ceil(gs_approx_check.p * n)::int8, 1) - 1;
  RETURN QUERY SELECT gs_approx_check.p,
    EXISTS (SELECT 1 FROM gs_ap WHERE x = v),
    r BETWEEN lo - bound AND hi + bound,
    bound >= 0 AND bound < n;
END $$;
SELECT c.* FROM unnest(ARRAY[0, 0.01, 0.25, 0.5, 0.75, 0.99, 1]) p, gs_approx_check(p) c;

-- array form and plain aggregates: every answer is a value of the data
SELECT bool_and(v IN (SELECT x FROM gs_ap)) AS all_in_data, count(*) AS answers
FROM unnest((SELECT gpu_percentile_disc(ARRAY[0, 0.1, 0.5, 0.9, 1]) WITHIN GROUP (ORDER BY x) FROM gs_ap)) v;
SELECT bool_and(v IN (SELECT i FROM gs_ap)) AS all_in_data, count(*) AS answers
FROM unnest((SELECT gpu_quantiles(i, ARRAY[0.2, 0.4, 0.6]) FROM gs_ap)) v;
SELECT (SELECT gpu_quantile(i, 0.3) FROM gs_ap) IN (SELECT i FROM gs_ap) AS quantile_in_data;
-- the run is recorded as approximate, with its bound
SELECT (SELECT value FROM gpuselect_status() WHERE name = 'last_approximate') AS last_approximate,
       (SELECT value::int8 >= 0 FROM gpuselect_status() WHERE name = 'last_rank_bound') AS has_bound;
-- cont interpolates between approximate neighbours: within the data's range
SELECT (SELECT gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM gs_ap) BETWEEN min(x) AND max(x) AS cont_in_range
FROM gs_ap;
-- with as many buckets as allowed the bound only shrinks toward exact answers
SET gpuselect.approx_buckets = 8192;
SELECT c.within_bound, c.in_data FROM gs_approx_check(0.5) c;
RESET gpuselect.approx_buckets;

-- exact again
SET gpuselect.approximate = off;
SELECT (SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM gs_ap) =
       (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM gs_ap) AS exact_ok,
       (SELECT value FROM gpuselect_status() WHERE name = 'last_rank_bound') AS bound,
       (SELECT value FROM gpuselect_status() WHERE name = 'last_approximate') AS last_approximate;

DROP FUNCTION gs_approx_check(float8);
DROP TABLE gs_ap;
