-- gpuselect: group estimates for GROUP BY time buckets (src/planner/planner_groups.c).
-- Without statistics on date_trunc('hour', ts) PostgreSQL expects one group
-- per row and sorts; gpuselect.estimate_time_buckets estimates the groups from
-- ts's range and offers hashed and partial paths.  Every query runs with the
-- estimate (and the rewrite) on and with both off (the built-in, as
-- PostgreSQL plans it): the rows must be the same.
CREATE EXTENSION IF NOT EXISTS gpuselect;
LOAD 'gpuselect';
SET extra_float_digits = 0;
SET client_min_messages = warning;
SET gpuselect.device = 'cpu';
SET gpuselect.accelerate_builtins = on;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET work_mem = '4MB';	-- the plans below, whatever the server's setting

-- 6 days of events, one every 18 seconds (28800 rows: ANALYZE samples them
-- all, so the histogram's ends are the column's); ts_local without time
-- zone, d a date, epoch_i and epoch_s ts in Unix seconds (int4, int8)
CREATE TABLE tb WITH (autovacuum_enabled = off) AS
	SELECT timestamptz '2026-03-01 00:00:00+00' + i * interval '18 seconds' AS ts,
		   timestamp '2026-03-01 00:00:00' + i * interval '18 seconds' AS ts_local,
		   date '2026-03-01' + i / 4800 AS d,
		   (i * 7919 % 1009)::float8 / 7 AS latency,
		   (i % 1000)::numeric / 100 AS price,
		   i % 3 AS host,
		   1772323200 + i * 18 AS epoch_i,
		   (1772323200 + i * 18)::bigint AS epoch_s
	FROM generate_series(0, 28799) i;
ANALYZE tb;

-- the top node's estimated rows: the groups (floor(range / width) + 1 per
-- bucket; a strict < bound counts as <=, hence 13 hours in filtered_host;
-- a factor inside the bucket divides its width: epoch_ms_scaled's 5
-- minutes, half_hours' 1800 seconds)
CREATE FUNCTION pg_temp.tb_rows(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN (j -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END
$$;

-- the aggregation nodes of q's plan, outermost first
CREATE FUNCTION pg_temp.tb_plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	l text;
	nodes text[] := '{}';
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		l := substring(l FROM '^\s*(?:->  )?((?:Finalize |Partial )?(?:HashAggregate|GroupAggregate|Gather Merge|Gather|Sort))$');
		IF l IS NOT NULL THEN
			nodes := nodes || l;
		END IF;
	END LOOP;
	RETURN array_to_string(nodes, ' > ');
END
$$;

-- q's rows with the estimate and the rewrite on, against both off
CREATE FUNCTION pg_temp.tb_same(q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	a text;
	b text;
	wrapped text := 'SELECT string_agg(r::text, '' | '' ORDER BY r::text) FROM (' || q || ') r';
BEGIN
	EXECUTE wrapped INTO a;
	PERFORM set_config('gpuselect.estimate_time_buckets', 'off', true);
	PERFORM set_config('gpuselect.accelerate_builtins', 'off', true);
	EXECUTE wrapped INTO b;
	PERFORM set_config('gpuselect.estimate_time_buckets', 'on', true);
	PERFORM set_config('gpuselect.accelerate_builtins', 'on', true);
	RETURN a IS NOT NULL AND a = b;
END
$$;

CREATE TEMP TABLE tb_q (name text, q text);
INSERT INTO tb_q VALUES
 ('hour', $$SELECT date_trunc('hour', ts) AS t, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY latency) FROM tb GROUP BY 1$$),
 ('grafana_5min', $$SELECT floor(extract(epoch from ts)/300)*300 AS time, percentile_cont(0.95) WITHIN GROUP (ORDER BY latency) FROM tb GROUP BY 1 ORDER BY 1$$),
 ('metabase_day', $$SELECT date_trunc('day', ts) AS t, percentile_cont(0.5) WITHIN GROUP (ORDER BY latency) FROM tb GROUP BY 1 ORDER BY 1$$),
 ('cast_date', $$SELECT ts::date AS t, percentile_disc(0.5) WITHIN GROUP (ORDER BY price) FROM tb GROUP BY 1$$),
 ('date_bin_15min', $$SELECT date_bin('15 minutes', ts, timestamptz '2026-01-01 00:00:00+00') AS t, gpu_median(latency) FROM tb GROUP BY 1$$),
 ('trunc_zone', $$SELECT date_trunc('hour', ts, 'Europe/Berlin') AS t, gpu_quantile(latency, 0.9) FROM tb GROUP BY 1$$),
 ('local_hour', $$SELECT date_trunc('hour', ts_local) AS t, gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY latency DESC) FROM tb GROUP BY 1$$),
 ('date_week', $$SELECT date_trunc('week', d) AS t, gpu_quantiles(latency, ARRAY[0.1, 0.9]) FROM tb GROUP BY 1$$),
 ('metabase_week', $$SELECT (date_trunc('week', (ts + interval '1 day')) - interval '1 day') AS t, percentile_cont(0.5) WITHIN GROUP (ORDER BY latency) FROM tb GROUP BY 1 ORDER BY 1$$),
 ('report_zone', $$SELECT date_trunc('hour', (ts AT TIME ZONE 'America/New_York')) AS t, gpu_median(latency) FROM tb GROUP BY 1$$),
 ('to_timestamp', $$SELECT to_timestamp(floor(date_part('epoch', ts)/3600)*3600) AS t, percentile_disc(0.99) WITHIN GROUP (ORDER BY latency) FROM tb GROUP BY 1$$),
 ('filtered_host', $$SELECT date_trunc('hour', ts) AS t, host, gpu_median(latency) FROM tb WHERE ts >= '2026-03-02 00:00:00+00' AND ts < '2026-03-02 12:00:00+00' GROUP BY 1, 2 ORDER BY 1, 2$$),
 ('between', $$SELECT date_trunc('hour', ts) AS t, gpu_median(latency) FROM tb WHERE ts BETWEEN '2026-03-03 00:00:00+00' AND '2026-03-03 05:59:59+00' GROUP BY 1$$),
 ('const_left', $$SELECT date_trunc('hour', ts) AS t, gpu_median(latency) FROM tb WHERE '2026-03-06 12:00:00+00' <= ts GROUP BY 1$$),
 ('having', $$SELECT date_trunc('hour', ts) AS t, gpu_median(latency) FROM tb GROUP BY 1 HAVING gpu_quantile(latency, 0.9) > 120$$),
 ('filter_clause', $$SELECT date_trunc('hour', ts) AS t, percentile_cont(0.5) WITHIN GROUP (ORDER BY latency) FILTER (WHERE host = 1), count(*) FROM tb GROUP BY 1$$),
 ('grafana_unix_epoch', $$SELECT floor((epoch_s)/300)*300 AS time, percentile_cont(0.95) WITHIN GROUP (ORDER BY latency) FROM tb GROUP BY 1 ORDER BY 1$$),
 ('int_epoch_hour', $$SELECT epoch_i / 3600 AS h, gpu_median(latency) FROM tb WHERE epoch_i >= 1772409600 AND epoch_i < 1772452800 GROUP BY 1$$),
 ('int_epoch_day', $$SELECT (epoch_s / 86400) * 86400 AS d, percentile_disc(0.5) WITHIN GROUP (ORDER BY price) FROM tb GROUP BY 1$$),
 ('epoch_ms_scaled', $$SELECT floor((epoch_s * 1000) / 300000) * 300000 AS ms, gpu_median(latency) FROM tb GROUP BY 1$$),
 ('half_hours', $$SELECT floor(extract(epoch from ts) / 3600 * 2) AS t, gpu_median(latency) FROM tb GROUP BY 1$$);

-- plans: hashed, partial in workers, with the estimated groups
SELECT name, pg_temp.tb_plan(q) AS plan, pg_temp.tb_rows(q) AS est_groups FROM tb_q ORDER BY name;
-- the same rows as the built-in, planned by PostgreSQL alone
SELECT name, pg_temp.tb_same(q) AS same FROM tb_q ORDER BY name;
-- and with the estimate alone (rewrite on, estimate off): PostgreSQL's plan
SET gpuselect.estimate_time_buckets = off;
SELECT name, pg_temp.tb_plan(q) AS plan, pg_temp.tb_rows(q) AS est_groups FROM tb_q WHERE name IN ('hour', 'grafana_5min', 'grafana_unix_epoch') ORDER BY name;
SET gpuselect.estimate_time_buckets = on;

-- left to PostgreSQL: no gpuselect aggregate, the built-in without the
-- rewrite, grouping sets, a grouping expression that is not a bucket, and a
-- table without statistics (PostgreSQL's default guess, 200 groups, stays)
SELECT pg_temp.tb_plan($$SELECT date_trunc('hour', ts), sum(latency) FROM tb GROUP BY 1$$) AS sum_only,
       pg_temp.tb_rows($$SELECT date_trunc('hour', ts), sum(latency) FROM tb GROUP BY 1$$) AS sum_only_est_groups;
SET gpuselect.accelerate_builtins = off;
SELECT pg_temp.tb_plan($$SELECT date_trunc('hour', ts), percentile_cont(0.5) WITHIN GROUP (ORDER BY latency) FROM tb GROUP BY 1$$) AS builtin_not_rewritten;
SET gpuselect.accelerate_builtins = on;
SELECT pg_temp.tb_rows($$SELECT date_trunc('hour', ts), host, gpu_median(latency) FROM tb GROUP BY GROUPING SETS ((1), (2))$$) AS grouping_sets_est_groups;
SELECT pg_temp.tb_rows($$SELECT extract(minute from ts), gpu_median(latency) FROM tb GROUP BY 1$$) AS not_a_bucket_est_groups;
-- a division that is no bucket without floor(): numeric, not integer
SELECT pg_temp.tb_rows($$SELECT price / 2, gpu_median(latency) FROM tb GROUP BY 1$$) AS numeric_div_est_groups;
CREATE TABLE tb_nostats WITH (autovacuum_enabled = off) AS SELECT * FROM tb;
SELECT pg_temp.tb_rows($$SELECT date_trunc('hour', ts), gpu_median(latency) FROM tb_nostats GROUP BY 1$$) AS no_statistics_est_groups;
-- a generic plan's parameter leaves the column's whole range
PREPARE tb_p(timestamptz) AS SELECT date_trunc('hour', ts), gpu_median(latency) FROM tb WHERE ts >= $1 GROUP BY 1;
SET plan_cache_mode = force_generic_plan;
SELECT pg_temp.tb_rows('EXECUTE tb_p(''2026-03-06 00:00:00+00'')') AS generic_est_groups;
SET plan_cache_mode = force_custom_plan;
SELECT pg_temp.tb_rows('EXECUTE tb_p(''2026-03-06 00:00:00+00'')') AS custom_est_groups;
RESET plan_cache_mode;
DEALLOCATE tb_p;

DROP TABLE tb, tb_nostats;
