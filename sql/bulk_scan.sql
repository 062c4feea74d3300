-- gpuselect: the bulk scan (Custom Scan (gpuselect), scan/bulk_scan.c) gives
-- the executor plan's answers, bit for bit.  bulk_check(q) runs q with
-- gpuselect.bulk_scan on (and checks the plan has the custom scan) and off,
-- in one snapshot, and compares every row as text; errors compare by SQLSTATE
-- and message.  'same' is the only good answer.  With the scan on,
-- enable_seqscan is off, so that the plan has the scan wherever it is
-- possible, whatever a server's cost settings (the answers do not depend on
-- it; which plan wins by cost is the benchmarks' business).
LOAD 'gpuselect';
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 0;
-- the EXPLAINs show the plans under PostgreSQL's default memory setting (a
-- server's own, such as the GPU machine's 1GB, changes which is cheapest)
SET work_mem = '4MB';
-- a parallel plan wherever one is possible, and back to the session's settings
\set parallel_on 'SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;'
\set parallel_off 'RESET max_parallel_workers_per_gather; RESET parallel_setup_cost; RESET parallel_tuple_cost; RESET min_parallel_table_scan_size;'
CREATE FUNCTION bulk_check(q text, ordered bool DEFAULT false) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
	plan text := '';
	r_on text;
	r_off text;
	agg text := CASE WHEN ordered THEN 'array_agg(r::text)' ELSE 'array_agg(r::text ORDER BY r::text)' END;
BEGIN
	PERFORM set_config('gpuselect.bulk_scan', 'on', true);
	PERFORM set_config('enable_seqscan', 'off', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		plan := plan || line || E'\n';
	END LOOP;
	BEGIN
		EXECUTE 'SELECT ' || agg || ' FROM (' || q || ') r' INTO r_on;
	EXCEPTION WHEN OTHERS THEN
		r_on := 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
	END;
	PERFORM set_config('gpuselect.bulk_scan', 'off', true);
	PERFORM set_config('enable_seqscan', 'on', true);
	BEGIN
		EXECUTE 'SELECT ' || agg || ' FROM (' || q || ') r' INTO r_off;
	EXCEPTION WHEN OTHERS THEN
		r_off := 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
	END;
	PERFORM set_config('gpuselect.bulk_scan', 'on', true);
	IF plan NOT LIKE '%Custom Scan (gpuselect)%' THEN
		RETURN 'bulk scan not used';
	ELSIF r_on IS DISTINCT FROM r_off THEN
		RETURN 'DIFFERS: ' || coalesce(r_on, 'NULL') || ' <> ' || coalesce(r_off, 'NULL');
	END IF;
	RETURN 'same';
END $$;

-- instants around the 2026 DST changes of New York (03-08, 11-01) and Lord
-- Howe (04-05, a 30-minute change), every 97 s, plus the changes themselves
-- to the microsecond, infinities, NULLs; a column dropped, one added with a
-- default (attmissingval for the old rows); pages all-visible and not.
-- (autovacuum off: the plans below are those of the statistics the VACUUM
-- below makes; a run slow enough for autovacuum to analyze the changed
-- table, as through the GPU service, planned otherwise)
CREATE TABLE bs (id int8, ts timestamptz, x float8, n int4, drop_me text) WITH (autovacuum_enabled = off);
INSERT INTO bs
SELECT i, '2026-03-07 00:00+00'::timestamptz + i * interval '97 s',
       CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 7919) % 10007 / 10.0 END,
       CASE WHEN i % 11 = 0 THEN NULL ELSE i % 5 END, 'x'
FROM generate_series(1, 6000) i;
INSERT INTO bs
SELECT 6000 + i, '2026-10-31 00:00+00'::timestamptz + i * interval '97 s',
       (i * 104729) % 10007 / 10.0 - 300, i % 7, 'y'
FROM generate_series(1, 3000) i;
INSERT INTO bs
SELECT 9000 + i, t + d * interval '1 microsecond', i, i % 3, 'z'
FROM unnest(ARRAY['2026-03-08 07:00+00', '2026-11-01 06:00+00', '2026-04-04 15:00+00',
                  '2026-10-03 15:30+00']::timestamptz[]) WITH ORDINALITY u(t, i),
     generate_series(-1, 1) d;
INSERT INTO bs VALUES (9100, 'infinity', 1, 1, 'i'), (9101, '-infinity', 2, 1, 'i'),
                      (9102, NULL, 3, NULL, 'n'), (9103, NULL, NULL, 2, 'n');
ALTER TABLE bs DROP COLUMN drop_me;
ALTER TABLE bs ADD COLUMN late int4 DEFAULT 42;
VACUUM (FREEZE, ANALYZE) bs;
UPDATE bs SET late = id::int4 WHERE id % 3 = 0;
DELETE FROM bs WHERE id % 17 = 0;
INSERT INTO bs (id, ts, x, n) SELECT 20000 + i, '2026-03-08 06:30+00'::timestamptz + i * interval '1 minute', i, i % 4
FROM generate_series(1, 200) i;

-- the plans
EXPLAIN (COSTS OFF) SELECT gpu_quantiles(x, '{0.5,0.9,0.99}') FROM bs;
EXPLAIN (COSTS OFF) SELECT n, gpu_median(x) FROM bs WHERE x > 100 GROUP BY n;
EXPLAIN (COSTS OFF) SELECT date_trunc('hour', ts), gpu_quantile(x, 0.9) FROM bs GROUP BY 1;
-- what the scan does not take keeps the executor's plan
EXPLAIN (COSTS OFF) SELECT gpu_median(x), count(x) FROM bs;
SELECT bulk_check($$SELECT n, n::bit(3), gpu_median(x) FROM bs GROUP BY 1, 2$$) AS no_hash;
SET client_min_messages = debug1;
EXPLAIN (COSTS OFF) SELECT n, n::bit(3), gpu_median(x) FROM bs GROUP BY 1, 2;
SET client_min_messages = warning;
SET gpuselect.bulk_scan = off;
EXPLAIN (COSTS OFF) SELECT gpu_quantiles(x, '{0.5,0.9,0.99}') FROM bs;
RESET gpuselect.bulk_scan;

CREATE TABLE checks (q text);
INSERT INTO checks VALUES
 ($$SELECT gpu_median(x) FROM bs$$),
 ($$SELECT count(*), gpu_median(x), count(*) FROM bs$$),
 ($$SELECT n, count(*), gpu_quantile(x, 0.5) FROM bs GROUP BY n$$),
 ($$SELECT count(*), gpu_quantile(x, 0.5) FROM bs WHERE id < 0$$),
 ($$SELECT date_trunc('hour', ts), count(*), gpu_median(x) FROM bs WHERE x > 10 GROUP BY 1$$),
 ($$SELECT gpu_quantiles(x, '{0,0.1,0.5,0.9,1}'), gpu_quantile(id, 0.3), gpu_quantile(late, 0.5), gpu_quantile(ts, 0.7) FROM bs$$),
 ($$SELECT n, gpu_median(x), gpu_quantile(x, 0.9) FROM bs WHERE x > 100 GROUP BY n$$),
 ($$SELECT late, gpu_quantile(x, 0.25) FROM bs WHERE late <> 42 AND id < 3000 GROUP BY late$$),
 ($$SELECT n, gpu_median(x) FROM bs WHERE n > 2 AND x < 500 GROUP BY n HAVING gpu_median(x) > 10$$),
 ($$SELECT n + 1, gpu_median(x) FROM bs GROUP BY n HAVING n > 1 AND count(*) > 5$$),
 ($$SELECT gpu_quantile(x, 0.5) FROM bs WHERE id < 0$$),
 ($$SELECT n, gpu_quantile(x, 0.5) FROM bs WHERE id < 0 GROUP BY n$$),
 ($$SELECT gpu_median(x) FROM bs WHERE x IS NULL$$),
 ($$SELECT n, gpu_median(x) FROM bs WHERE x IS NULL GROUP BY n$$),
 ($$SELECT gpu_quantile(x, (SELECT 0.25::float8)), gpu_quantiles(x, (SELECT array_agg(i / 10.0)::float8[] FROM generate_series(0, 10) i)) FROM bs$$),
 ($$SELECT gpu_quantile(x, 1.5) FROM bs$$),
 ($$SELECT gpu_quantile(x, 1.5) FROM bs WHERE id < 0$$),
 ($$SELECT gpu_quantile(x, NULL) FROM bs$$),
 ($$SELECT date_trunc('hour', ts), gpu_quantiles(x, '{0.1,0.5,0.99}'), gpu_median(x) FROM bs GROUP BY 1$$),
 ($$SELECT date_trunc('minute', ts), gpu_median(x) FROM bs WHERE ts BETWEEN '2026-03-08 06:00+00' AND '2026-03-08 08:00+00' GROUP BY 1$$),
 ($$SELECT date_trunc('day', ts), gpu_quantile(x, 0.5) FROM bs GROUP BY 1$$),
 ($$SELECT date_trunc('week', ts), gpu_quantile(x, 0.5) FROM bs GROUP BY 1$$),
 ($$SELECT date_trunc('month', ts), gpu_quantile(x, 0.5) FROM bs GROUP BY 1$$),
 ($$SELECT ts::date, gpu_median(x) FROM bs GROUP BY 1$$),
 ($$SELECT date_trunc('hour', ts::timestamp), gpu_median(x) FROM bs GROUP BY 1$$),
 ($$SELECT date_trunc('hour', (ts::timestamp)::timestamptz), gpu_median(x) FROM bs GROUP BY 1$$),
 ($$SELECT date_trunc('day', date_bin('15 minutes', ts, '2026-01-01 00:07+00')), gpu_median(x) FROM bs GROUP BY 1$$),
 ($$SELECT (ts::date)::timestamptz, gpu_median(x) FROM bs GROUP BY 1$$),
 ($$SELECT date_bin('15 minutes', ts, '2026-01-01 00:07+00'), gpu_median(x) FROM bs GROUP BY 1$$),
 ($$SELECT floor(extract(epoch from ts) / 300) * 300, gpu_median(x) FROM bs GROUP BY 1$$),
 ($$SELECT (extract(epoch from ts) / 3600)::int8, gpu_median(x) FROM bs GROUP BY 1$$),
 ($$SELECT id / 1000, gpu_quantile(ts, 0.5) FROM bs GROUP BY 1$$),
 ($$SELECT ts, gpu_median(x) FROM bs WHERE id > 9000 GROUP BY ts$$);

SET timezone = 'UTC';
SELECT q, bulk_check(q) FROM checks;
SET timezone = 'America/New_York';
SELECT q, bulk_check(q) FROM checks WHERE q LIKE '%ts%';
SET timezone = 'Australia/Lord_Howe';
SELECT q, bulk_check(q) FROM checks WHERE q LIKE '%ts%';
SET timezone = 'Asia/Kathmandu';
SELECT q, bulk_check(q) FROM checks WHERE q LIKE '%date_trunc%';
RESET timezone;
-- the page loops' prefetch (gpuselect.test_bulk_prefetch) is a hint only:
-- none, and more tuples ahead than most pages hold, give the same answers
SET gpuselect.test_bulk_prefetch = 0;
SELECT count(*) AS checks, count(*) FILTER (WHERE bulk_check(q) = 'same') AS same FROM checks;
SET gpuselect.test_bulk_prefetch = 64;
SELECT count(*) AS checks, count(*) FILTER (WHERE bulk_check(q) = 'same') AS same FROM checks;
RESET gpuselect.test_bulk_prefetch;

-- the built-in syntax, rewritten (planner.c), then scanned
SET gpuselect.accelerate_builtins = on;
SELECT bulk_check($$SELECT date_trunc('hour', ts), percentile_disc(0.5) WITHIN GROUP (ORDER BY x DESC), percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY x), percentile_disc(ARRAY[0.1, 0.2]) WITHIN GROUP (ORDER BY ts) FROM bs GROUP BY 1$$);
SELECT bulk_check($$SELECT n, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bs GROUP BY n HAVING percentile_cont(0.5) WITHIN GROUP (ORDER BY x) > 300$$);
SELECT bulk_check($$SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.5) WITHIN GROUP (ORDER BY x DESC) FROM bs WHERE n = 3$$);
RESET gpuselect.accelerate_builtins;

-- parallel plans: each participant's partial states, combined above Gather
:parallel_on
EXPLAIN (COSTS OFF) SELECT n, gpu_median(x) FROM bs GROUP BY n;
SELECT q, bulk_check(q) FROM checks WHERE q NOT LIKE '%SELECT 0.25%';
:parallel_off

-- groups in the GROUP BY's order: the scan sorts its groups, so that a
-- sorted Finalize Aggregate (under Gather Merge in parallel) holds one
-- group's states at a time and an ORDER BY of the group needs no Sort;
-- bulk_check(q, true) compares the rows in order
CREATE TABLE ochecks (q text);
INSERT INTO ochecks VALUES
 ($$SELECT n, gpu_median(x) FROM bs GROUP BY n ORDER BY n$$),
 ($$SELECT n, gpu_median(x), count(*) FROM bs GROUP BY n ORDER BY n DESC$$),
 ($$SELECT n, gpu_median(x) FROM bs GROUP BY n ORDER BY n NULLS FIRST$$),
 ($$SELECT n, gpu_median(x) FROM bs GROUP BY n ORDER BY n DESC NULLS LAST$$),
 ($$SELECT date_trunc('hour', ts), gpu_quantile(x, 0.9) FROM bs GROUP BY 1 ORDER BY 1$$),
 ($$SELECT date_trunc('hour', ts), gpu_quantiles(x, '{0.5,0.99}') FROM bs GROUP BY 1 ORDER BY 1 DESC LIMIT 7$$),
 ($$SELECT floor(extract(epoch from ts) / 300) * 300, gpu_median(x) FROM bs GROUP BY 1 ORDER BY 1$$),
 ($$SELECT floor(extract(epoch from ts) / 3600) * 3600, gpu_median(x) FROM bs GROUP BY 1 ORDER BY 1 DESC NULLS LAST$$),
 ($$SELECT date_trunc('hour', ts), n, gpu_quantile(x, 0.95) FROM bs GROUP BY 1, 2 ORDER BY 1, 2$$),
 ($$SELECT date_trunc('hour', ts), n, gpu_median(x) FROM bs GROUP BY 1, 2 ORDER BY 1 DESC, 2 NULLS FIRST$$),
 ($$SELECT n, date_trunc('day', ts), gpu_median(x), count(*) FROM bs GROUP BY 2, 1 ORDER BY 1 DESC NULLS LAST, 2 LIMIT 9$$),
 ($$SELECT floor(extract(epoch from ts) / 3600) * 3600, n, id % 2, gpu_median(x) FROM bs GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LIMIT 40$$);
SELECT q, bulk_check(q, true) FROM ochecks;
:parallel_on
-- (the states, 8 bytes a row, past hash_mem)
SET work_mem = '64kB';
SET hash_mem_multiplier = 1;
EXPLAIN (COSTS OFF) SELECT n, gpu_median(x) FROM bs GROUP BY n ORDER BY n DESC;
EXPLAIN (COSTS OFF) SELECT date_trunc('hour', ts), n, gpu_median(x) FROM bs GROUP BY 1, 2 ORDER BY 1 DESC, 2 NULLS FIRST LIMIT 5;
SELECT q, bulk_check(q, true) FROM ochecks;
SET gpuselect.accelerate_builtins = on;
EXPLAIN (COSTS OFF) SELECT date_trunc('hour', ts), percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.99) WITHIN GROUP (ORDER BY x) FROM bs GROUP BY 1 ORDER BY 1;
SELECT bulk_check($$SELECT date_trunc('hour', ts), percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.99) WITHIN GROUP (ORDER BY x), percentile_disc(0.9) WITHIN GROUP (ORDER BY x) FROM bs GROUP BY 1 ORDER BY 1$$, true);
RESET gpuselect.accelerate_builtins;
SET work_mem = '4MB';
RESET hash_mem_multiplier;
:parallel_off

-- GROUP BY several expressions (a Grafana multi-series query: a time
-- bucket and a host): at most one has the cached range, the others are
-- evaluated per row; NULL is a value of its own in each
EXPLAIN (COSTS OFF) SELECT date_trunc('hour', ts), n, gpu_quantile(x, 0.95) FROM bs GROUP BY 1, 2;
CREATE TABLE mchecks (q text);
INSERT INTO mchecks VALUES
 ($$SELECT n, id % 3, gpu_median(x), count(*) FROM bs GROUP BY 1, 2$$),
 ($$SELECT date_trunc('hour', ts), n, gpu_quantile(x, 0.95) FROM bs GROUP BY 1, 2$$),
 ($$SELECT n, date_trunc('day', ts), gpu_median(x), count(*) FROM bs GROUP BY 1, 2$$),
 ($$SELECT date_trunc('day', ts), n, gpu_median(x) FROM bs GROUP BY 2, 1$$),
 ($$SELECT floor(extract(epoch from ts) / 3600) * 3600 AS time, n, gpu_quantiles(x, '{0.5,0.95}') FROM bs GROUP BY 1, 2$$),
 ($$SELECT date_trunc('hour', ts), date_trunc('day', ts), gpu_median(x) FROM bs GROUP BY 1, 2$$),
 ($$SELECT n, late, id % 2 = 0, gpu_median(x) FROM bs WHERE id > 100 GROUP BY 1, 2, 3$$),
 ($$SELECT date_trunc('hour', ts), n, gpu_median(x) FILTER (WHERE id % 2 = 0), count(*) FILTER (WHERE x > 300) FROM bs WHERE id > 50 GROUP BY 1, 2 HAVING count(*) > 2$$),
 ($$SELECT id / 1000, n, gpu_quantile(ts, 0.5) FROM bs GROUP BY 1, 2$$),
 ($$SELECT ts::date, n, gpu_median(x) FROM bs WHERE n IS NULL OR ts IS NULL GROUP BY 1, 2$$);
SET timezone = 'UTC';
SELECT q, bulk_check(q) FROM mchecks;
SET timezone = 'America/New_York';
SELECT q, bulk_check(q) FROM mchecks WHERE q LIKE '%ts%';
RESET timezone;
SET gpuselect.accelerate_builtins = on;
SELECT bulk_check($$SELECT floor(extract(epoch from ts) / 3600) * 3600 AS time, n, percentile_cont(0.95) WITHIN GROUP (ORDER BY x) FROM bs GROUP BY 1, 2 ORDER BY 1$$) AS grafana_series;
RESET gpuselect.accelerate_builtins;
:parallel_on
SELECT q, bulk_check(q) FROM mchecks;
:parallel_off

-- GROUP BY text, varchar, numeric (equality not bitwise), beside other
-- expressions or alone: compared by the GROUP BY's equality operator under
-- the expression's collation, hashed by its hash function, each group's
-- first value copied (bulk_groups.c).  host in the database's default
-- collation (Host-07 and host-07 both), dc in "C"; NULLs in every column;
-- hosts compressed inline and TOASTed out of line; 24 hours x 20 hosts every
-- 2 minutes.  (sql/bulk_scan_icu.sql: a nondeterministic collation.)
CREATE TABLE bt (ts timestamptz, host text, dc text COLLATE "C", k int4, x float8) WITH (autovacuum_enabled = off);
INSERT INTO bt
SELECT CASE WHEN i % 101 = 0 THEN NULL ELSE '2026-05-01 00:00+00'::timestamptz + (i / 20) * interval '2 min' END,
       CASE WHEN i % 97 = 0 THEN NULL WHEN i % 40 = 7 THEN 'Host-07' ELSE 'host-' || lpad((i % 20)::text, 2, '0') END,
       CASE WHEN i % 89 = 0 THEN NULL ELSE (ARRAY['eu-1', 'EU-2', 'us-1', 'b', 'B', 'a'])[i % 6 + 1] END,
       CASE WHEN i % 83 = 0 THEN NULL ELSE i % 7 END,
       CASE WHEN i % 31 = 0 THEN NULL ELSE (i * 7919) % 10007 / 10.0 END
FROM generate_series(0, 14399) i;
INSERT INTO bt SELECT '2026-05-01 03:00+00'::timestamptz + i * interval '1 min', repeat('long-host-', 400), 'eu-1', i % 2, i
FROM generate_series(1, 30) i;
INSERT INTO bt SELECT '2026-05-01 05:00+00'::timestamptz + i * interval '1 min', h, NULL, i % 2, i
FROM generate_series(1, 30) i, (SELECT string_agg(md5(j::text), '') AS h FROM generate_series(1, 120) j) l;
VACUUM ANALYZE bt;
SELECT count(*) FILTER (WHERE pg_column_size(host) < 100 AND length(host) > 1000) AS compressed,
       count(*) FILTER (WHERE pg_column_size(host) > 3000) AS long FROM bt;
EXPLAIN (COSTS OFF) SELECT date_trunc('hour', ts) AS time, host, gpu_quantile(x, 0.9) FROM bt GROUP BY 1, 2;
CREATE TABLE tchecks (q text);
INSERT INTO tchecks VALUES
 ($$SELECT date_trunc('hour', ts) AS time, host, gpu_quantile(x, 0.9) FROM bt GROUP BY 1, 2$$),
 ($$SELECT host, k, gpu_median(x), count(*) FROM bt GROUP BY 1, 2$$),
 ($$SELECT host, dc, gpu_median(x) FROM bt GROUP BY 1, 2$$),
 ($$SELECT host, gpu_quantiles(x, '{0.1,0.9}') FROM bt GROUP BY 1$$),
 ($$SELECT dc, host COLLATE "C", date_trunc('hour', ts), gpu_median(x) FROM bt WHERE k > 1 GROUP BY 1, 2, 3$$),
 ($$SELECT lower(host), k % 3, gpu_median(x) FILTER (WHERE k <> 2), count(*) FROM bt GROUP BY 1, 2 HAVING count(*) > 3$$),
 ($$SELECT host::varchar(12), dc::char(4), k / 2.0, gpu_median(x) FROM bt GROUP BY 1, 2, 3$$),
 ($$SELECT date_trunc('hour', ts), dc, gpu_median(x) FROM bt WHERE host IS NULL OR dc IS NULL OR ts IS NULL GROUP BY 1, 2$$),
 ($$SELECT host, date_trunc('day', ts), k, gpu_median(x) FROM bt WHERE length(host) > 100 GROUP BY 1, 2, 3$$);
CREATE TABLE tochecks (q text);
INSERT INTO tochecks VALUES
 ($$SELECT date_trunc('hour', ts), host, gpu_quantile(x, 0.9) FROM bt GROUP BY 1, 2 ORDER BY 1, 2$$),
 ($$SELECT host, dc, gpu_median(x), count(*) FROM bt GROUP BY 1, 2 ORDER BY 1 DESC, 2 NULLS FIRST$$),
 ($$SELECT dc, k, gpu_median(x) FROM bt GROUP BY 1, 2 ORDER BY 1, 2 DESC NULLS LAST LIMIT 9$$),
 ($$SELECT host COLLATE "C", date_trunc('hour', ts), gpu_median(x) FROM bt GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 30$$);
SELECT q, bulk_check(q) FROM tchecks;
SELECT q, bulk_check(q, true) FROM tochecks;
SET gpuselect.accelerate_builtins = on;
SELECT bulk_check($$SELECT date_trunc('hour', ts) AS time, host, percentile_cont(0.9) WITHIN GROUP (ORDER BY x) FROM bt WHERE ts BETWEEN '2026-05-01 02:00+00' AND '2026-05-01 20:00+00' GROUP BY 1, 2 ORDER BY 1$$) AS grafana_text_series;
RESET gpuselect.accelerate_builtins;
:parallel_on
SELECT q, bulk_check(q) FROM tchecks;
-- (the states past hash_mem: sorted Finalize under Gather Merge, each
-- text column in its collation)
SET work_mem = '64kB';
SET hash_mem_multiplier = 1;
EXPLAIN (COSTS OFF) SELECT host, dc, gpu_median(x), count(*) FROM bt GROUP BY 1, 2 ORDER BY 1 DESC, 2 NULLS FIRST;
SELECT q, bulk_check(q, true) FROM tochecks;
SELECT q, bulk_check(q) FROM tchecks;
SET work_mem = '4MB';
RESET hash_mem_multiplier;
:parallel_off
DROP TABLE tchecks, tochecks, bt;

-- aggregate FILTERs: evaluated per row after WHERE, per aggregate (equal
-- ones once), count(*) FILTER counted beside; serial and parallel
EXPLAIN (COSTS OFF) SELECT n, gpu_median(x) FILTER (WHERE id % 2 = 0), count(*) FILTER (WHERE x > 500) FROM bs WHERE id > 10 GROUP BY n;
CREATE TABLE fchecks (q text);
INSERT INTO fchecks VALUES
 ($$SELECT gpu_quantile(x, 0.9) FILTER (WHERE n >= 3), gpu_median(x) FILTER (WHERE id % 2 = 0), gpu_median(x) FROM bs$$),
 ($$SELECT gpu_quantiles(x, '{0.5,0.9}') FILTER (WHERE x > 100000), count(*) FILTER (WHERE x > 100000), gpu_median(x) FROM bs$$),
 ($$SELECT count(*) FILTER (WHERE n = 1), count(*), gpu_median(x) FILTER (WHERE n = 1), count(*) FILTER (WHERE x IS NULL) FROM bs WHERE id < 5000$$),
 ($$SELECT n, gpu_median(x) FILTER (WHERE x > 500), count(*) FILTER (WHERE x > 500), gpu_quantile(x, 0.1) FILTER (WHERE n > 2) FROM bs GROUP BY n$$),
 ($$SELECT date_trunc('hour', ts), gpu_quantile(x, 0.5) FILTER (WHERE late = 42), gpu_quantile(ts, 0.5) FILTER (WHERE x < 0), count(*) FROM bs WHERE id > 100 GROUP BY 1$$),
 ($$SELECT n, gpu_median(x) FILTER (WHERE x > 100000) FROM bs GROUP BY n HAVING count(*) FILTER (WHERE id % 3 = 0) > 10$$),
 ($$SELECT gpu_median(x) FILTER (WHERE 10 / (n - 2) > 0) FROM bs$$);
SELECT q, bulk_check(q) FROM fchecks;
SET gpuselect.accelerate_builtins = on;
SELECT bulk_check($$SELECT date_trunc('hour', ts), percentile_cont(0.9) WITHIN GROUP (ORDER BY x) FILTER (WHERE n >= 3), percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FILTER (WHERE n >= 3), percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FILTER (WHERE n < 2), percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bs GROUP BY 1$$) AS builtin_filters;
RESET gpuselect.accelerate_builtins;
:parallel_on
EXPLAIN (COSTS OFF) SELECT n, gpu_median(x) FILTER (WHERE id % 2 = 0) FROM bs GROUP BY n;
SELECT q, bulk_check(q) FROM fchecks;
:parallel_off
-- FILTERs it does not take: the executor's plan, and the DEBUG1 line why
SELECT bulk_check($$SELECT gpu_median(x) FILTER (WHERE random() < 2) FROM bs$$) AS volatile_filter;
SELECT bulk_check($$SELECT date_trunc('hour', ts), gpu_median(x) FILTER (WHERE date_trunc('hour', ts) > '2026-03-08') FROM bs GROUP BY 1$$) AS group_filter;
SET client_min_messages = debug1;
EXPLAIN (COSTS OFF) SELECT gpu_median(x) FILTER (WHERE random() < 2) FROM bs;
SET client_min_messages = warning;
DROP TABLE fchecks;

-- EXPLAIN ANALYZE counts every participant's tuples and keys (the workers'
-- too), and pg_stat's seq_tup_read the tuples the scan read, as a SeqScan's
CREATE FUNCTION bulk_counts(q text, OUT tuples bigint, OUT keys bigint) LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
BEGIN
	PERFORM set_config('enable_seqscan', 'off', true);
	EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ' || q INTO j;
	SELECT (n->>'Tuples Visible')::bigint, (n->>'Keys')::bigint INTO tuples, keys
	FROM jsonb_path_query(j, 'strict $[*].**  ? (@."Custom Plan Provider" == "gpuselect")') n;
	PERFORM set_config('enable_seqscan', 'on', true);
END $$;
SELECT tuples = (SELECT count(*) FROM bs) AS all_tuples, keys = (SELECT count(x) FROM bs) AS all_keys
FROM bulk_counts('SELECT gpu_median(x) FROM bs');
:parallel_on
SET parallel_leader_participation = off;	-- (the workers read every page)
SELECT tuples = (SELECT count(*) FROM bs) AS all_tuples, keys = (SELECT count(x) FROM bs) AS all_keys
FROM bulk_counts('SELECT n, gpu_median(x) FROM bs GROUP BY n');
RESET parallel_leader_participation;
:parallel_off
SET stats_fetch_consistency = none;
SELECT pg_stat_force_next_flush();
SELECT seq_tup_read AS tup_before FROM pg_stat_user_tables WHERE relname = 'bs' \gset
SELECT bulk_check($$SELECT gpu_median(x) FROM bs$$);
SELECT pg_stat_force_next_flush();
-- bulk_check read bs twice: with the scan, then with the executor's plan
SELECT seq_tup_read - :tup_before = 2 * (SELECT count(*) FROM bs) AS seq_tup_read_counted
FROM pg_stat_user_tables WHERE relname = 'bs';
RESET stats_fetch_consistency;
DROP FUNCTION bulk_counts(text);

-- with timing, EXPLAIN ANALYZE gives the scan's time and the finals' selections' time
CREATE FUNCTION bulk_times(q text, OUT scan_time bool, OUT select_time bool) LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
BEGIN
	PERFORM set_config('enable_seqscan', 'off', true);
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO j;
	SELECT (n->>'Scan Time')::float8 >= 0, (n->>'Select Time')::float8 >= 0 INTO scan_time, select_time
	FROM jsonb_path_query(j, 'strict $[*].**  ? (@."Custom Plan Provider" == "gpuselect")') n;
	PERFORM set_config('enable_seqscan', 'on', true);
END $$;
SELECT * FROM bulk_times('SELECT gpu_median(x) FROM bs');
DROP FUNCTION bulk_times(text);

-- a partitioned table (a sub-partitioned part; one partition's columns in
-- another order) and an inheritance tree: one scan per leaf under an Append
CREATE TABLE bp (ts timestamptz, x float8, k int) PARTITION BY RANGE (ts);
CREATE TABLE bp1 PARTITION OF bp FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE bp2 PARTITION OF bp FOR VALUES FROM ('2026-02-01') TO ('2026-03-01') PARTITION BY HASH (k);
CREATE TABLE bp2a PARTITION OF bp2 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE bp2b (x float8, k int, ts timestamptz);
ALTER TABLE bp2 ATTACH PARTITION bp2b FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO bp SELECT '2026-01-01'::timestamptz + i * interval '7 min', (i * 7919) % 997, i % 5
FROM generate_series(1, 12000) i;
CREATE TABLE bi (x float8, k int);
CREATE TABLE bi_child (extra text) INHERITS (bi);
INSERT INTO bi SELECT i % 101, i % 3 FROM generate_series(1, 3000) i;
INSERT INTO bi_child SELECT i % 103, i % 4, 'e' FROM generate_series(1, 3000) i;
ANALYZE bp, bi, bi_child;
EXPLAIN (COSTS OFF) SELECT date_trunc('day', ts), gpu_median(x) FROM bp WHERE k < 4 GROUP BY 1;
CREATE TABLE pchecks (q text);
INSERT INTO pchecks VALUES
 ($$SELECT date_trunc('day', ts), gpu_median(x), count(*) FROM bp GROUP BY 1$$),
 ($$SELECT k, gpu_quantiles(x, '{0.1,0.9}') FROM bp WHERE ts > '2026-02-10' GROUP BY k$$),
 ($$SELECT gpu_quantile(x, 0.5) FROM bp WHERE x < 0$$),
 ($$SELECT gpu_quantile(x, 1.5) FROM bp WHERE x < 0$$),
 ($$SELECT k, gpu_median(x), count(*) FROM bi GROUP BY k$$),
 ($$SELECT gpu_quantile(x, 0.3) FROM ONLY bi$$),
 ($$SELECT date_trunc('day', ts), k, gpu_median(x) FROM bp GROUP BY 1, 2$$),
 ($$SELECT date_trunc('day', ts), 'k' || k, gpu_median(x) FROM bp GROUP BY 1, 2$$),
 ($$SELECT k::text, x > 50, gpu_median(x), count(*) FROM bi GROUP BY 1, 2$$);
SELECT q, bulk_check(q) FROM pchecks;
:parallel_on
SELECT q, bulk_check(q) FROM pchecks;
:parallel_off
DROP TABLE pchecks, bp, bi CASCADE;

-- a correlated subquery: the scan is rescanned with each outer value
SELECT bulk_check($$SELECT o.k, (SELECT gpu_median(x) FROM bs WHERE bs.n = o.k) FROM generate_series(0, 5) o(k)$$);

DROP TABLE checks, ochecks, mchecks;
DROP TABLE bs;
DROP FUNCTION bulk_check(text, bool);
