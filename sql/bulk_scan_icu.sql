-- gpuselect: the bulk scan's GROUP BY under a nondeterministic (ICU,
-- case-insensitive) collation: 'web-1' and 'WEB-1' are one group, as the
-- executor groups them (the clause's equality under the collation, hashed
-- by text's hash under it), and the group's value is the first row's, as a
-- HashAggregate over a SeqScan returns it.  Skipped where the server has no
-- ICU (expected/bulk_scan_icu_1.out).
LOAD 'gpuselect';
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 0;
SET work_mem = '4MB';
-- (a build without ICU still lists ICU collations, e.g. PostgreSQL 16's
-- "unicode", but cannot make one)
DO $$
BEGIN
	CREATE COLLATION gs_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
EXCEPTION WHEN OTHERS THEN
	NULL;
END $$;
SELECT NOT EXISTS (SELECT FROM pg_collation WHERE collname = 'gs_ci') AS no_icu \gset
\if :no_icu
SELECT 'no ICU: skipped' AS bulk_scan_icu;
\quit
\endif
-- hosts in three cases, the first row of each group (heap order) in a
-- different one; NULLs; a second text column in "C"
CREATE TABLE bci (ts timestamptz, host text COLLATE gs_ci, dc text COLLATE "C", x float8) WITH (autovacuum_enabled = off);
INSERT INTO bci
SELECT '2026-05-01 00:00+00'::timestamptz + i * interval '1 min',
       CASE WHEN i % 53 = 0 THEN NULL
            WHEN i % 3 = 0 THEN upper('web-' || (i % 5))
            WHEN i % 3 = 1 THEN 'web-' || (i % 5)
            ELSE 'Web-' || (i % 5) END,
       CASE WHEN i % 41 = 0 THEN NULL ELSE (ARRAY['b', 'B', 'a'])[i % 3 + 1] END,
       CASE WHEN i % 29 = 0 THEN NULL ELSE (i * 7919) % 10007 / 10.0 END
FROM generate_series(0, 11999) i;
VACUUM ANALYZE bci;
-- the executor's HashAggregate over its SeqScan (the first row's value) and
-- the bulk scan give the same rows, values included
CREATE FUNCTION ci_check(q text, ordered bool DEFAULT false) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	plan text := '';
	line text;
	r_on text;
	r_off text;
	agg text := CASE WHEN ordered THEN 'array_agg(r::text)' ELSE 'array_agg(r::text ORDER BY r::text COLLATE "C")' END;
BEGIN
	PERFORM set_config('gpuselect.bulk_scan', 'on', true);
	PERFORM set_config('enable_seqscan', 'off', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		plan := plan || line || E'\n';
	END LOOP;
	EXECUTE 'SELECT ' || agg || ' FROM (' || q || ') r' INTO r_on;
	PERFORM set_config('gpuselect.bulk_scan', 'off', true);
	PERFORM set_config('enable_seqscan', 'on', true);
	PERFORM set_config('enable_sort', 'off', true);
	EXECUTE 'SELECT ' || agg || ' FROM (' || q || ') r' INTO r_off;
	PERFORM set_config('gpuselect.bulk_scan', 'on', true);
	PERFORM set_config('enable_sort', 'on', true);
	IF plan NOT LIKE '%Custom Scan (gpuselect)%' THEN
		RETURN 'bulk scan not used';
	ELSIF r_on IS DISTINCT FROM r_off THEN
		RETURN 'DIFFERS: ' || coalesce(r_on, 'NULL') || ' <> ' || coalesce(r_off, 'NULL');
	END IF;
	RETURN 'same';
END $$;
EXPLAIN (COSTS OFF) SELECT host, gpu_median(x) FROM bci GROUP BY 1;
SELECT host, gpu_median(x), count(*) FROM bci GROUP BY 1 ORDER BY 1;
SELECT ci_check($$SELECT host, gpu_median(x), count(*) FROM bci GROUP BY 1$$) AS alone,
       ci_check($$SELECT date_trunc('hour', ts), host, gpu_quantile(x, 0.9) FROM bci GROUP BY 1, 2$$) AS bucket_host,
       ci_check($$SELECT host, dc, gpu_median(x) FROM bci GROUP BY 1, 2$$) AS host_dc,
       ci_check($$SELECT host, dc, gpu_median(x) FROM bci GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 5$$, true) AS ordered;
-- parallel: which participant met a group first decides its value (so it
-- does in the executor's parallel plan); the groups and their order under
-- the collation (Gather Merge, sorted Finalize) are the executor's
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET work_mem = '64kB';
SET hash_mem_multiplier = 1;
EXPLAIN (COSTS OFF) SELECT host, dc, gpu_median(x) FROM bci GROUP BY 1, 2 ORDER BY 1 DESC, 2;
SELECT ci_check($$SELECT lower(host), dc, m FROM (SELECT host, dc, gpu_median(x) AS m FROM bci GROUP BY 1, 2 ORDER BY 1 DESC, 2) s$$, true) AS parallel_sorted,
       ci_check($$SELECT lower(h), t, q FROM (SELECT host AS h, date_trunc('hour', ts) AS t, gpu_quantile(x, 0.9) AS q FROM bci GROUP BY 1, 2) s$$) AS parallel_hashed;
DROP FUNCTION ci_check(text, bool);
DROP TABLE bci;
DROP COLLATION gs_ci;
