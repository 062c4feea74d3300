-- gpuselect: the fraction argument of the plain aggregates must be the same
-- in every row of a group; checking that costs nothing per row when the
-- argument cannot change during the scan (constant, parameter, stable
-- function, uncorrelated subquery) and when rows point at one stored value.
-- fraction_full_compares in gpuselect_status() counts the comparisons that
-- read a whole array.
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET extra_float_digits = 0;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate

CREATE FUNCTION pg_temp.full_compares() RETURNS int8 LANGUAGE sql AS
$$ SELECT value::int8 FROM gpuselect_status() WHERE name = 'fraction_full_compares' $$;

SELECT setseed(0.29);
CREATE TABLE gs_fr AS
SELECT g, g % 3 AS grp, random() AS x FROM generate_series(1, 100000) g;
-- fraction arrays stored out of line (TOAST), uncompressed
CREATE TABLE gs_fr_arr (id int, fr float8[]);
ALTER TABLE gs_fr_arr ALTER fr SET STORAGE EXTERNAL;
INSERT INTO gs_fr_arr SELECT 1, array_agg(g / 2000.0) FROM generate_series(0, 1999) g;
INSERT INTO gs_fr_arr SELECT 2, fr FROM gs_fr_arr WHERE id = 1;   -- equal, stored twice
INSERT INTO gs_fr_arr SELECT 3, fr[1:1999] FROM gs_fr_arr WHERE id = 1;   -- different

-- an uncorrelated subquery (an InitPlan): no comparison per row, same answers as the built-in
SELECT pg_temp.full_compares() AS c0 \gset
SELECT gpu_quantiles(x, (SELECT array_agg(g / 2000.0::float8) FROM generate_series(0, 1999) g))::text
       = (percentile_disc((SELECT array_agg(g / 2000.0::float8) FROM generate_series(0, 1999) g))
            WITHIN GROUP (ORDER BY x))::text AS subquery_ok
FROM gs_fr;
SELECT bool_and(q::text = b::text) AS subquery_per_group_ok, count(*) AS groups
FROM (SELECT grp,
             gpu_quantiles(x, (SELECT fr FROM gs_fr_arr WHERE id = 1)) AS q,
             gpu_quantile(x, (SELECT fr[7] FROM gs_fr_arr WHERE id = 1)) AS q1,
             percentile_disc((SELECT fr FROM gs_fr_arr WHERE id = 1)) WITHIN GROUP (ORDER BY x) AS b
      FROM gs_fr GROUP BY grp) s;
-- a stable function of a setting
SET gs.fractions = '{0.1,0.5,0.9}';
SELECT gpu_quantiles(x, current_setting('gs.fractions')::float8[])
       = percentile_disc('{0.1,0.5,0.9}'::float8[]) WITHIN GROUP (ORDER BY x) AS stable_ok
FROM gs_fr;
SELECT pg_temp.full_compares() - :c0 AS full_compares;

-- a stored array joined to every row: recognised by its TOAST pointer
SELECT pg_temp.full_compares() AS c0 \gset
SELECT gpu_quantiles(x, a.fr)::text
       = (SELECT (percentile_disc((SELECT fr FROM gs_fr_arr WHERE id = 1)) WITHIN GROUP (ORDER BY x))::text FROM gs_fr)
       AS stored_ok
FROM gs_fr, gs_fr_arr a WHERE a.id = 1;
-- two stored copies of the same array: at most one full comparison
SELECT cardinality(gpu_quantiles(x, a.fr)) AS two_copies_ok FROM gs_fr, gs_fr_arr a WHERE a.id IN (1, 2);
SELECT pg_temp.full_compares() - :c0 <= 1 AS few_full_compares;

-- arrays computed per row are compared in full, row by row
SELECT pg_temp.full_compares() AS c0 \gset
SELECT gpu_quantiles(x, ARRAY[(g * 0 + 1) / 4.0, 0.5]) = percentile_disc(ARRAY[0.25, 0.5]) WITHIN GROUP (ORDER BY x)
       AS per_row_equal_ok
FROM gs_fr WHERE g <= 1000;
SELECT pg_temp.full_compares() - :c0 AS full_compares;

-- a different array in a later row is still an ERROR (22023)
SELECT gpu_quantiles(x, ARRAY[0.5, (g > 500)::int / 2.0]) FROM gs_fr WHERE g <= 1000;
SELECT gpu_quantiles(x, ARRAY[random()]) FROM gs_fr WHERE g <= 1000;
SELECT gpu_quantile(x, random()) FROM gs_fr WHERE g <= 1000;
SELECT gpu_quantiles(x, a.fr) FROM gs_fr, gs_fr_arr a WHERE a.id IN (1, 3);
-- a correlated subquery runs per row: compared, and a change is caught
SELECT gpu_quantiles(x, (SELECT fr FROM gs_fr_arr a WHERE a.id = 1 + (s.g % 2) * 2)) FROM gs_fr s WHERE g <= 1000;
SELECT gpu_quantiles(x, (SELECT fr FROM gs_fr_arr a WHERE a.id = 1 + (s.g % 2))) = percentile_disc((SELECT fr FROM gs_fr_arr WHERE id = 1)) WITHIN GROUP (ORDER BY x)
       AS correlated_equal_ok
FROM gs_fr s WHERE g <= 1000;

DROP TABLE gs_fr, gs_fr_arr;
