-- gpuselect: text under a non-C collation (ICU "en-US-x-icu", and a
-- case-insensitive nondeterministic one), against the built-ins on the same
-- data.  Skipped where the server has no ICU (expected/types_collation_1.out).
CREATE EXTENSION IF NOT EXISTS gpuselect;
SET gpuselect.device = 'cpu';
SET max_parallel_workers_per_gather = 0;
\set VERBOSITY sqlstate
SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'en-US-x-icu') AS gs_have_icu \gset
\if :gs_have_icu
SELECT setseed(0.77);
CREATE TABLE gs_coll AS
SELECT g % 3 AS grp,
       (ARRAY['apple', 'Apple', 'APPLE', 'banana', 'Banana', 'cherry', 'éclair', 'eclair', 'Eclair', 'zebra',
              'Zebra', 'a-b', 'ab', 'a b', '', ' ', '10', '9', 'ß', 'ss'])[1 + (random() * 19)::int]
         || CASE WHEN g % 4 = 0 THEN substr(md5(random()::text), 1, g % 5) ELSE '' END AS t
FROM generate_series(1, 3000) g;
CREATE COLLATION gs_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- en-US: ordered-set (ORDER BY's collation) and plain (the argument's collation), ASC and DESC
SELECT grp,
       gpu_percentile_disc(ARRAY[0, 0.1, 0.33, 0.5, 0.9, 1]) WITHIN GROUP (ORDER BY t COLLATE "en-US-x-icu")
         = percentile_disc(ARRAY[0, 0.1, 0.33, 0.5, 0.9, 1]) WITHIN GROUP (ORDER BY t COLLATE "en-US-x-icu") AS os,
       gpu_percentile_disc(ARRAY[0, 0.1, 0.33, 0.5, 0.9, 1]) WITHIN GROUP (ORDER BY t COLLATE "en-US-x-icu" DESC)
         = percentile_disc(ARRAY[0, 0.1, 0.33, 0.5, 0.9, 1]) WITHIN GROUP (ORDER BY t COLLATE "en-US-x-icu" DESC) AS os_desc,
       gpu_quantiles(t COLLATE "en-US-x-icu", ARRAY[0, 0.1, 0.33, 0.5, 0.9, 1])
         = percentile_disc(ARRAY[0, 0.1, 0.33, 0.5, 0.9, 1]) WITHIN GROUP (ORDER BY t COLLATE "en-US-x-icu") AS plain,
       -- the order differs from "C": a test that would catch a lost collation
       percentile_disc(ARRAY[0.1, 0.33, 0.5, 0.9]) WITHIN GROUP (ORDER BY t COLLATE "en-US-x-icu")::text COLLATE "C"
         <> percentile_disc(ARRAY[0.1, 0.33, 0.5, 0.9]) WITHIN GROUP (ORDER BY t COLLATE "C")::text AS differs_from_c
FROM gs_coll GROUP BY grp ORDER BY grp;

-- a column declared with the collation
CREATE TABLE gs_coll2 AS SELECT grp, t COLLATE "en-US-x-icu" AS t FROM gs_coll;
SELECT gpu_quantile(t, 0.3) = percentile_disc(0.3) WITHIN GROUP (ORDER BY t) AS plain,
       gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY t) = percentile_disc(0.3) WITHIN GROUP (ORDER BY t) AS os
FROM gs_coll2;

-- case-insensitive (nondeterministic): values equal under the collation may
-- differ in bytes ('apple' / 'Apple'); results are compared with the collation's "="
SELECT gpu_percentile_disc(ARRAY[0.05, 0.25, 0.5, 0.75, 1]) WITHIN GROUP (ORDER BY t COLLATE gs_ci)
         = percentile_disc(ARRAY[0.05, 0.25, 0.5, 0.75, 1]) WITHIN GROUP (ORDER BY t COLLATE gs_ci) AS ci,
       gpu_quantile(t COLLATE gs_ci, 0.5) = percentile_disc(0.5) WITHIN GROUP (ORDER BY t COLLATE gs_ci) AS ci_plain
FROM gs_coll;

-- parallel: the collation travels with the partial states
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT grp, gpu_quantiles(t, '{0.2,0.8}') = percentile_disc('{0.2,0.8}'::float8[]) WITHIN GROUP (ORDER BY t) AS same
FROM gs_coll2 GROUP BY grp ORDER BY grp;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

DROP TABLE gs_coll, gs_coll2;
DROP COLLATION gs_ci;
\else
\echo 'skipped: this server has no ICU collation "en-US-x-icu"'
\endif

-- text and varchar under "C" (memcmp order): selected by 8-byte prefix keys
-- and text's comparator among the values sharing the selected prefix
-- (datum_textkey.c).  Values shorter and longer than 8 bytes, long shared
-- prefixes, empty strings, bytes above 0x7F, every fraction of 101, against
-- the built-in, ASC and DESC, ordered-set and plain forms.
SELECT setseed(0.31);
CREATE TABLE gs_ctext AS
SELECT g % 5 AS grp,
       CASE g % 5
         WHEN 0 THEN substr(md5(random()::text), 1, (random() * 20)::int)
         WHEN 1 THEN 'prefix__' || substr(md5(random()::text), 1, (random() * 3)::int)
         WHEN 2 THEN repeat('a', (random() * 12)::int) || CASE WHEN random() < 0.5 THEN 'b' ELSE '' END
         WHEN 3 THEN (ARRAY['é', 'e', 'z', 'É', 'ß', 'ss', '', ' ', '~', 'zzzzzzzz', 'zzzzzzzzz', 'zzzzzzz'])[1 + (random() * 11)::int]
                     || substr(md5(random()::text), 1, (random() * 2)::int)
         ELSE 'same-long-prefix-' || (random() * 30)::int
       END AS t
FROM generate_series(1, 5000) g;
SELECT count(*) AS groups,
       bool_and(ga = ba) AS asc_c, bool_and(gd = bd) AS desc_c, bool_and(gp = ba) AS plain_c,
       bool_and(gv = ba) AS varchar_c, bool_and(gposix COLLATE "C" = ba) AS posix, bool_and(gu = bd) AS using_gt
FROM (SELECT grp,
             gpu_percentile_disc(f) WITHIN GROUP (ORDER BY t COLLATE "C")::text AS ga,
             percentile_disc(f) WITHIN GROUP (ORDER BY t COLLATE "C")::text AS ba,
             gpu_percentile_disc(f) WITHIN GROUP (ORDER BY t COLLATE "C" DESC)::text AS gd,
             percentile_disc(f) WITHIN GROUP (ORDER BY t COLLATE "C" DESC)::text AS bd,
             gpu_quantiles(t COLLATE "C", f)::text AS gp,
             gpu_percentile_disc(f) WITHIN GROUP (ORDER BY t::varchar(40) COLLATE "C")::text AS gv,
             gpu_percentile_disc(f) WITHIN GROUP (ORDER BY t COLLATE "POSIX")::text AS gposix,
             gpu_percentile_disc(f) WITHIN GROUP (ORDER BY t COLLATE "C" USING >)::text AS gu
      FROM gs_ctext, (SELECT array_agg(i / 100.0)::float8[] AS f FROM generate_series(0, 100) i) fr
      GROUP BY grp, f) s;
-- single fractions, repeated and NULL fractions, one group
SELECT gpu_percentile_disc(ARRAY[0.5, NULL, 0.5, 0, 1, 0.999]) WITHIN GROUP (ORDER BY t COLLATE "C")
         = percentile_disc(ARRAY[0.5, NULL, 0.5, 0, 1, 0.999]) WITHIN GROUP (ORDER BY t COLLATE "C") AS arr,
       gpu_percentile_disc(0.37) WITHIN GROUP (ORDER BY t COLLATE "C")
         = percentile_disc(0.37) WITHIN GROUP (ORDER BY t COLLATE "C") AS one,
       gpu_quantile(t COLLATE "C", 0.61) = percentile_disc(0.61) WITHIN GROUP (ORDER BY t COLLATE "C") AS plain
FROM gs_ctext;
-- parallel partial states under "C"
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT grp, gpu_quantiles(t COLLATE "C", '{0,0.2,0.5,0.8,1}')
              = percentile_disc('{0,0.2,0.5,0.8,1}'::float8[]) WITHIN GROUP (ORDER BY t COLLATE "C") AS same
FROM gs_ctext GROUP BY grp ORDER BY grp;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;
DROP TABLE gs_ctext;
