# Issue 31, "Exactness (the contract)": the bulk scan (Custom Scan
# (gpuselect), gpuselect.bulk_scan) answers exactly what the executor's plan
# answers under the same snapshot, while other sessions write.
#
# What is provable, and how each comparison gets the same snapshot:
#   REPEATABLE READ, SERIALIZABLE: every statement of the transaction uses
#     the transaction's snapshot, so one transaction runs each query with
#     SET LOCAL gpuselect.bulk_scan = on, then off, then the built-in
#     ordered-set form (accelerate_builtins off: PostgreSQL's own sort), then
#     on again (after the others have set hint bits and pruned pages), and
#     the four texts must be equal.
#   READ COMMITTED: a snapshot per statement, and bulk_scan cannot be on for
#     one part of a statement and off for another; so one statement holds
#     two scalar subqueries, the query (the bulk scan) and its executor twin
#     (the built-in ordered-set form; for the built-in syntax under
#     accelerate_builtins, the same query over an OFFSET 0 subquery, which
#     the bulk scan cannot take), and compares their texts: both share the
#     statement's snapshot, so this too must be equal.
#   EXPLAIN in the same transaction (and the same session for READ
#   COMMITTED) shows that the bulk scan ran, so the test cannot compare the
#   executor with itself.  What no test proves: states the writers happened
#   not to produce at a snapshot.  The holder session keeps a transaction
#   with uncommitted inserts, updates and deletes open nearly all the time,
#   and before the writers start a fixed set of states (frozen pages,
#   all-visible pages, pages that are not, an aborted transaction, an open
#   one) is compared without concurrency.
#
# Data: float8/int8/timestamptz columns with NULLs (and NaN, +-Infinity), a
# varlena before the column (no cached offset), a column added later with a
# default (attmissingval) and one without, a dropped column, fillfactor 80 so
# updates of unindexed columns are HOT; a partitioned table with a default
# partition and a partition of another physical layout (a dropped column,
# other column order).  Writers: two churn sessions (inserts, HOT and
# non-HOT updates, rows that move pages and partitions, deletes, aborted
# transactions, aborted subtransactions inside committed ones), a holder
# (open transactions of ~1.5 s, committed or rolled back), and VACUUM in a
# loop; each writes only rows of its own id residue, so they never wait on
# each other.  Shapes: no GROUP BY (gpu_quantiles with 101 fractions, several
# aggregates over several columns), WHERE (comparisons; any qual), GROUP BY
# date_trunc('hour', ts) across a DST change and GROUP BY a column, the
# built-in syntax under accelerate_builtins, the partitioned table; serial
# and with 2 workers forced.  Last, a write skew under SERIALIZABLE: the
# bulk scan must take the relation's predicate lock as a SeqScan does.
#
# Core Perl and GsTest's psql sessions (as the other scripts): PG 15's TAP
# modules need IPC::Run, and BackgroundPsql exists only in some versions.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;
use Time::HiRes qw(time);

# The bulk scan is the same code in both builds (no GPU is reached by it
# here): its concurrency test runs once per version, with the cpu build.
plan skip_all => 'the bulk scan is tested with the cpu build (the same code)'
  if ($ENV{GS_VARIANT} // 'cpu') eq 'cuda';

my $t_start = time;
sub phase_done { note(sprintf('%s done at %.1f s', $_[0], time - $t_start)); }

my $rounds = $ENV{GS_BULK_ROUNDS} // 2;	# rounds with the writers
my $F101 = "'{" . join(',', map { $_ / 100 } 0 .. 100) . "}'::float8[]";
my $F3 = "'{0.5,0.9,0.99}'::float8[]";

# ---- is the bulk scan there? (main has no gpuselect.bulk_scan yet) ----
my $has_bulk = psql_value(q{CREATE EXTENSION IF NOT EXISTS gpuselect; LOAD 'gpuselect';
SELECT count(*) FROM pg_settings WHERE name = 'gpuselect.bulk_scan';}) eq '1';
ok($has_bulk, 'the setting gpuselect.bulk_scan exists');

# SET [LOCAL] gpuselect.bulk_scan, or nothing where it does not exist (the
# EXPLAIN checks then fail, and the answers compare executor with executor)
sub bulk
{
	my ($on, $local) = @_;
	return '' unless $has_bulk;
	return 'SET ' . ($local ? 'LOCAL ' : '') . 'gpuselect.bulk_scan = ' . ($on ? 'on' : 'off') . ";\n";
}

sub accel
{
	my ($on, $local) = @_;
	return 'SET ' . ($local ? 'LOCAL ' : '') . 'gpuselect.accelerate_builtins = ' . ($on ? 'on' : 'off') . ";\n";
}

# ---- the tables ----
psql_value(q{
-- committed for sure before VACUUM runs (the test cluster commits
-- asynchronously, and a hint bit waits for the commit record to be flushed:
-- no all-visible pages otherwise)
SET synchronous_commit = on;
DROP TABLE IF EXISTS bulk_t, bulk_pt, bulk_ctl, bulk_skew CASCADE;
DROP SEQUENCE IF EXISTS bulk_ids;
CREATE TABLE bulk_ctl (stop bool NOT NULL, quiet_done bool NOT NULL);
INSERT INTO bulk_ctl VALUES (false, false);
CREATE TABLE bulk_skew (v int);
CREATE SEQUENCE bulk_ids START 100000;

-- gone: dropped below (a, after it, is at a fixed offset that counts it);
-- note: a varlena before x, so x has no fixed offset
-- ts2 (d, lt: its date and timestamp in UTC): two years in random heap
-- order, every time zone's 2025-2026 transitions, an 1883 one (local mean
-- time to standard time, not a whole minute), +-infinity
CREATE TABLE bulk_t (id int8 NOT NULL, gone int4, a float8, note text, x float8,
                     n int8, k int4, ts timestamptz, ts2 timestamptz, d date, lt timestamp)
  WITH (fillfactor = 80, autovacuum_enabled = off);
INSERT INTO bulk_t
  SELECT g,
         g,
         CASE WHEN g % 11 = 0 THEN NULL ELSE (g % 1000) / 8.0 END,
         CASE WHEN g % 5 = 0 THEN NULL ELSE repeat(chr(97 + g % 26), g % 40) END,
         CASE WHEN g % 13 = 0 THEN NULL
              WHEN g % 4001 = 0 THEN 'NaN'::float8
              WHEN g % 3001 = 0 THEN 'Infinity'::float8
              WHEN g % 3003 = 0 THEN '-Infinity'::float8
              ELSE random() * 2e6 - 1e6 END,
         (g * 7919) % 100003 - 50000,
         CASE WHEN g % 101 = 0 THEN NULL ELSE g % 7 END,
         CASE WHEN g % 97 = 0 THEN NULL
              ELSE '2026-03-07 00:00-05'::timestamptz + g * interval '4.32 s' END,
         t2, (t2 AT TIME ZONE 'UTC')::date, t2 AT TIME ZONE 'UTC'
  FROM (SELECT g,
               -- 1867-10-18/20 in Sitka, in time order (a run of pages): when
               -- Alaska changed hands its clocks went from Oct 19 15:30 back
               -- to Oct 18 15:30, so a floor in the session zone is not
               -- monotone across that change
               CASE WHEN g BETWEEN 20001 AND 20300
                      THEN '1867-10-17 11:01:13+00'::timestamptz + (g - 20001) * interval '10 min'
                    WHEN g % 89 = 0 THEN NULL
                    WHEN g % 7919 = 0 THEN 'infinity'::timestamptz
                    WHEN g % 7907 = 0 THEN '-infinity'::timestamptz
                    WHEN g % 50 = 1 THEN '1883-11-18 15:00+00'::timestamptz + (g / 50) * interval '17 s'
                    ELSE '2025-01-01 00:00+00'::timestamptz + random() * interval '730 days' END AS t2
        FROM generate_series(1, 40000) g) s;
-- y: a default kept as attmissingval for the rows above; z: NULL for them
ALTER TABLE bulk_t ADD COLUMN y float8 DEFAULT 2.5;
ALTER TABLE bulk_t ADD COLUMN z int8;
-- w: an integer group key from attmissingval
ALTER TABLE bulk_t ADD COLUMN w int4 DEFAULT 3;
ALTER TABLE bulk_t DROP COLUMN gone;
CREATE INDEX ON bulk_t (n);

CREATE TABLE bulk_pt (id int8 NOT NULL, x float8, n int8, ts timestamptz) PARTITION BY RANGE (ts);
CREATE TABLE bulk_pt_0 PARTITION OF bulk_pt FOR VALUES FROM (MINVALUE) TO ('2026-03-08 00:00-05');
CREATE TABLE bulk_pt_1 PARTITION OF bulk_pt FOR VALUES FROM ('2026-03-08 00:00-05') TO ('2026-03-09 00:00-04');
CREATE TABLE bulk_pt_d PARTITION OF bulk_pt DEFAULT;
-- a partition of its own layout: a dropped column first, the others reordered
CREATE TABLE bulk_pt_2 (junk text, ts timestamptz, n int8, x float8, id int8 NOT NULL);
INSERT INTO bulk_pt_2 SELECT repeat('j', id::int % 50), ts, n, x, id
  FROM bulk_t WHERE id % 2 = 0 AND ts >= '2026-03-09 00:00-04';
ALTER TABLE bulk_pt_2 DROP COLUMN junk;
ALTER TABLE bulk_pt ATTACH PARTITION bulk_pt_2 FOR VALUES FROM ('2026-03-09 00:00-04') TO (MAXVALUE);
INSERT INTO bulk_pt SELECT id, x, n, ts FROM bulk_t
  WHERE id % 2 = 0 AND (ts < '2026-03-09 00:00-04' OR ts IS NULL);
ALTER TABLE bulk_pt_0 SET (autovacuum_enabled = off);
ALTER TABLE bulk_pt_1 SET (autovacuum_enabled = off);
ALTER TABLE bulk_pt_2 SET (autovacuum_enabled = off);
ALTER TABLE bulk_pt_d SET (autovacuum_enabled = off);
CREATE INDEX ON bulk_pt (n);
});
# frozen and all-visible pages, then the first fifth of bulk_t's pages
# (and one partition) changed again: not all-visible
psql_value('SET synchronous_commit = on; VACUUM (FREEZE) bulk_t; VACUUM bulk_pt;');
psql_value(q{
UPDATE bulk_t SET x = x + 0.5, y = id / 7.0 WHERE id <= 8000 AND id % 3 = 0;
UPDATE bulk_pt SET x = x + 0.5 WHERE id % 5 = 0 AND ts < '2026-03-08 00:00-05';
ANALYZE bulk_t, bulk_pt;
});
my ($relpages, $allvis) = split /\|/, psql_value(
	q{SELECT relpages, relallvisible FROM pg_class WHERE oid = 'bulk_t'::regclass});
ok($allvis > 0 && $allvis < $relpages, "bulk_t has all-visible pages and others ($allvis of $relpages)");

# ---- the writers ----
# churn: me and nw give the rows it owns (id % nw = me)
psql_value(q{
CREATE OR REPLACE PROCEDURE bulk_churn(me int, nw int) LANGUAGE plpgsql AS $$
DECLARE
	i int := 0;
	c int;
	r float8;
	t0 timestamptz := clock_timestamp();
BEGIN
	LOOP
		EXIT WHEN (SELECT stop FROM bulk_ctl) OR clock_timestamp() > t0 + interval '300 s';
		i := i + 1;
		c := (i * 37 + me * 11) % 499;
		r := random();
		IF r < 0.25 THEN
			INSERT INTO bulk_t (id, a, note, x, n, k, ts, y, z, ts2)
			  SELECT nextval('bulk_ids') * nw + me, CASE WHEN g = 1 THEN NULL ELSE g * 0.125 END,
			         repeat('i', g * 7), CASE WHEN g = 2 THEN NULL ELSE random() * 2e6 - 1e6 END,
			         (random() * 100000)::int8 - 50000, g % 7,
			         '2026-03-07 00:00-05'::timestamptz + random() * interval '49 hours',
			         random() * 10, CASE WHEN g = 3 THEN NULL ELSE g END,
			         '2025-01-01 00:00+00'::timestamptz + random() * interval '730 days'
			  FROM generate_series(1, 6) g;
			INSERT INTO bulk_pt (id, x, n, ts)
			  SELECT nextval('bulk_ids') * nw + me, random() * 2e6 - 1e6, g,
			         '2026-03-07 00:00-05'::timestamptz + random() * interval '60 hours'
			  FROM generate_series(1, 3) g;
		ELSIF r < 0.45 THEN
			-- HOT: no indexed column changes
			UPDATE bulk_t SET x = x + 1, y = coalesce(y, 0) + 0.25, ts = ts + interval '7 min',
			                  w = CASE WHEN i % 3 = 0 THEN NULL ELSE i % 5 END
			  WHERE id % nw = me AND id % 499 = c;
		ELSIF r < 0.60 THEN
			-- not HOT: n is indexed
			UPDATE bulk_t SET n = n + 1, z = id WHERE id % nw = me AND id % 499 = c;
		ELSIF r < 0.68 THEN
			-- the row outgrows its page's free space
			UPDATE bulk_t SET note = repeat('w', 200 + i % 300) WHERE id % nw = me AND id % 499 = c;
		ELSIF r < 0.85 THEN
			DELETE FROM bulk_t WHERE id % nw = me AND id % 499 = c;
		ELSE
			-- rows that move to another partition; deletes
			UPDATE bulk_pt SET ts = ts + interval '20 hours', x = x + 2 WHERE id % nw = me AND id % 499 = c;
			DELETE FROM bulk_pt WHERE id % nw = me AND id % 997 = c;
		END IF;
		IF i % 5 = 0 THEN ROLLBACK; ELSE COMMIT; END IF;
		IF i % 7 = 0 THEN
			-- an aborted subtransaction inside a committed transaction
			BEGIN
				UPDATE bulk_t SET x = x * 3 WHERE id % nw = me AND id % 499 = (c + 1) % 499;
				INSERT INTO bulk_t (id, x, n, ts) VALUES (nextval('bulk_ids') * nw + me, 1e300, 7, now());
				DELETE FROM bulk_pt WHERE id % nw = me AND id % 499 = (c + 3) % 499;
				RAISE EXCEPTION 'bulk_churn: aborted subtransaction';
			EXCEPTION WHEN raise_exception THEN
				NULL;
			END;
			UPDATE bulk_t SET a = coalesce(a, 0) + 1 WHERE id % nw = me AND id % 499 = (c + 2) % 499;
			COMMIT;
		END IF;
		PERFORM pg_sleep(0.005);
	END LOOP;
END
$$;

-- holder: a transaction with uncommitted inserts, updates and deletes open
-- ~1.5 s at a time, then committed or rolled back
CREATE OR REPLACE PROCEDURE bulk_hold(me int, nw int) LANGUAGE plpgsql AS $$
DECLARE
	i int := 0;
	t0 timestamptz := clock_timestamp();
	t1 timestamptz;
BEGIN
	LOOP
		EXIT WHEN (SELECT stop FROM bulk_ctl) OR clock_timestamp() > t0 + interval '300 s';
		i := i + 1;
		INSERT INTO bulk_t (id, x, n, k, ts)
		  SELECT nextval('bulk_ids') * nw + me, g * 1000.5, g, g % 7,
		         '2026-03-08 01:30-05'::timestamptz + g * interval '1 min'
		  FROM generate_series(1, 50) g;
		UPDATE bulk_t SET x = x - 3 WHERE id % nw = me AND id % 97 = i % 97;
		UPDATE bulk_t SET n = n - 3 WHERE id % nw = me AND id % 97 = (i + 1) % 97;
		DELETE FROM bulk_t WHERE id % nw = me AND id % 97 = (i + 2) % 97;
		UPDATE bulk_pt SET x = x - 3 WHERE id % nw = me AND id % 97 = i % 97;
		t1 := clock_timestamp();
		WHILE clock_timestamp() < t1 + interval '1.5 s' AND NOT (SELECT stop FROM bulk_ctl) LOOP
			PERFORM pg_sleep(0.05);
		END LOOP;
		IF i % 2 = 0 THEN ROLLBACK; ELSE COMMIT; END IF;
	END LOOP;
END
$$;
});

# ---- the shapes ----
# q: the query the bulk scan takes (run with bulk_scan on and off); ref: the
# executor's twin (the built-in ordered-set form, accelerate_builtins off);
# accel: q is the built-in syntax, run under accelerate_builtins (its ref is
# q itself with the setting off); params/args: q and ref are prepared
# statements with those parameters, run as generic plans (the parameters
# reach the scan's quals and fractions as Params); scan: whether the bulk
# scan takes q ('yes', the default; 'no': outside its scope, the executor
# compared with itself on purpose; 'any': either, the test says which ran);
# no_gather: no parallel plan even with workers forced
my @shapes = (
	{ name => 'quantiles_101',
	  q => "SELECT gpu_quantiles(x, $F101) FROM bulk_t",
	  ref => "SELECT percentile_disc($F101) WITHIN GROUP (ORDER BY x) FROM bulk_t" },
	{ name => 'columns',
	  q => "SELECT gpu_median(x), gpu_quantile(n, 0.37), gpu_quantile(ts, 0.9), gpu_median(y),"
		. " gpu_quantiles(z, $F3), gpu_median(a), count(*) FROM bulk_t",
	  ref => "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.37) WITHIN GROUP (ORDER BY n),"
		. " percentile_disc(0.9) WITHIN GROUP (ORDER BY ts), percentile_cont(0.5) WITHIN GROUP (ORDER BY y),"
		. " percentile_disc($F3) WITHIN GROUP (ORDER BY z), percentile_cont(0.5) WITHIN GROUP (ORDER BY a), count(*) FROM bulk_t" },
	{ name => 'where_comparisons',
	  q => "SELECT gpu_quantiles(x, $F3), gpu_quantile(n, 0.5) FROM bulk_t"
		. " WHERE x > -250000 AND n < 20000 AND ts >= '2026-03-07 12:00-05'",
	  ref => "SELECT percentile_disc($F3) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY n)"
		. " FROM bulk_t WHERE x > -250000 AND n < 20000 AND ts >= '2026-03-07 12:00-05'" },
	{ name => 'where_any',
	  q => "SELECT gpu_quantile(x, 0.25), gpu_quantile(y, 0.75) FROM bulk_t"
		. " WHERE note LIKE 'b%' OR y > 2.5 OR id % 10 = 3",
	  ref => "SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY x), percentile_disc(0.75) WITHIN GROUP (ORDER BY y)"
		. " FROM bulk_t WHERE note LIKE 'b%' OR y > 2.5 OR id % 10 = 3" },
	{ name => 'where_nothing',
	  q => "SELECT gpu_median(x), gpu_quantiles(ts, $F3) FROM bulk_t WHERE y > 1000000",
	  ref => "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc($F3) WITHIN GROUP (ORDER BY ts)"
		. " FROM bulk_t WHERE y > 1000000" },
	# a qual without columns: a one-time filter (a Result above the scan)
	{ name => 'where_one_time',
	  q => "SELECT gpu_quantiles(x, $F3) FROM bulk_t WHERE current_setting('TimeZone') = 'America/New_York' AND x < 0",
	  ref => "SELECT percentile_disc($F3) WITHIN GROUP (ORDER BY x) FROM bulk_t"
		. " WHERE current_setting('TimeZone') = 'America/New_York' AND x < 0" },
	# an index scan may be cheaper
	{ name => 'where_indexed', scan => 'any',
	  q => "SELECT gpu_median(x), gpu_quantile(n, 0.5) FROM bulk_t WHERE n BETWEEN 100 AND 400",
	  ref => "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY n)"
		. " FROM bulk_t WHERE n BETWEEN 100 AND 400" },
	{ name => 'prepared_generic', params => 'float8, float8, timestamptz', args => "-1000, 0.42, '2026-03-08 01:00-05'",
	  q => "SELECT gpu_quantile(x, \$2), gpu_quantile(n, 0.5) FROM bulk_t WHERE x > \$1 AND ts < \$3",
	  ref => "SELECT percentile_disc(\$2) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY n)"
		. " FROM bulk_t WHERE x > \$1 AND ts < \$3" },
	{ name => 'group_hour',
	  q => "SELECT date_trunc('hour', ts) AS h, gpu_quantiles(x, $F3), gpu_quantile(n, 0.5), count(*) FROM bulk_t GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('hour', ts) AS h, percentile_disc($F3) WITHIN GROUP (ORDER BY x),"
		. " percentile_disc(0.5) WITHIN GROUP (ORDER BY n), count(*) FROM bulk_t GROUP BY 1 ORDER BY 1" },
	{ name => 'group_hour_qual', scan => 'any',
	  q => "SELECT date_trunc('hour', ts) AS h, gpu_median(x) FROM bulk_t"
		. " WHERE date_trunc('hour', ts) >= '2026-03-08 00:00-05' AND ts IS NOT NULL GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('hour', ts) AS h, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bulk_t"
		. " WHERE date_trunc('hour', ts) >= '2026-03-08 00:00-05' AND ts IS NOT NULL GROUP BY 1 ORDER BY 1" },
	{ name => 'group_column',
	  q => "SELECT k, gpu_median(x), gpu_quantile(n, 0.9), k * 10 + 1 FROM bulk_t WHERE x IS NOT NULL GROUP BY k"
		. " HAVING gpu_quantile(n, 0.9) > -100000 AND k IS DISTINCT FROM 2 ORDER BY k",
	  ref => "SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.9) WITHIN GROUP (ORDER BY n), k * 10 + 1"
		. " FROM bulk_t WHERE x IS NOT NULL GROUP BY k HAVING percentile_disc(0.9) WITHIN GROUP (ORDER BY n) > -100000"
		. " AND k IS DISTINCT FROM 2 ORDER BY k" },
	# the group key from attmissingval for most rows, NULL for some
	{ name => 'group_missing_column',
	  q => "SELECT w, gpu_quantiles(x, $F3), gpu_quantile(ts, 0.5) FROM bulk_t GROUP BY w ORDER BY w",
	  ref => "SELECT w, percentile_disc($F3) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY ts)"
		. " FROM bulk_t GROUP BY w ORDER BY w" },
	# a subquery run once per outer row, its qual reading the outer row: rescans
	{ name => 'correlated', no_gather => 1,
	  q => "SELECT o.k, (SELECT gpu_quantiles(x, $F3) FROM bulk_t WHERE bulk_t.k = o.k AND x > -900000)"
		. " FROM (VALUES (0), (3), (6), (NULL::int4)) o(k) ORDER BY 1",
	  ref => "SELECT o.k, (SELECT percentile_disc($F3) WITHIN GROUP (ORDER BY x) FROM bulk_t WHERE bulk_t.k = o.k AND x > -900000)"
		. " FROM (VALUES (0), (3), (6), (NULL::int4)) o(k) ORDER BY 1" },
	{ name => 'builtin_dashboard', accel => 1,
	  q => "SELECT date_trunc('hour', ts) AS h, percentile_cont(0.5) WITHIN GROUP (ORDER BY x),"
		. " percentile_cont(0.9) WITHIN GROUP (ORDER BY x), percentile_cont(0.99) WITHIN GROUP (ORDER BY x)"
		. " FROM bulk_t WHERE ts >= '2026-03-07 06:00-05' GROUP BY 1 ORDER BY 1" },
	{ name => 'builtin_101', accel => 1,
	  q => "SELECT percentile_disc($F101) WITHIN GROUP (ORDER BY x), percentile_cont($F3) WITHIN GROUP (ORDER BY x)"
		. " FROM bulk_t" },
	# GROUP BY a floor of one column (light: not run while the writers run):
	# the scan caches the column range of a group, found by probing the
	# expression, stopping at the session zone's offset changes (tz: the
	# session's TimeZone for the shape)
	{ name => 'zone_day_lord_howe', light => 1, tz => 'Australia/Lord_Howe',
	  q => "SELECT date_trunc('day', ts2) AS b, gpu_quantiles(x, $F3), gpu_quantile(n, 0.5) FROM bulk_t"
		. " WHERE ts2 > '2025-01-01' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('day', ts2) AS b, percentile_disc($F3) WITHIN GROUP (ORDER BY x),"
		. " percentile_disc(0.5) WITHIN GROUP (ORDER BY n) FROM bulk_t WHERE ts2 > '2025-01-01' GROUP BY 1 ORDER BY 1" },
	{ name => 'zone_hour_lord_howe', light => 1, tz => 'Australia/Lord_Howe',
	  q => "SELECT date_trunc('hour', ts2) AS b, gpu_median(x) FROM bulk_t"
		. " WHERE ts2 >= '2026-03-25' AND ts2 < '2026-04-15' OR ts2 >= '2026-09-25' AND ts2 < '2026-10-10' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('hour', ts2) AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bulk_t"
		. " WHERE ts2 >= '2026-03-25' AND ts2 < '2026-04-15' OR ts2 >= '2026-09-25' AND ts2 < '2026-10-10' GROUP BY 1 ORDER BY 1" },
	{ name => 'zone_hour_casablanca', light => 1, tz => 'Africa/Casablanca',
	  q => "SELECT date_trunc('hour', ts2) AS b, gpu_median(x) FROM bulk_t"
		. " WHERE ts2 >= '2026-02-10' AND ts2 < '2026-03-30' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('hour', ts2) AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bulk_t"
		. " WHERE ts2 >= '2026-02-10' AND ts2 < '2026-03-30' GROUP BY 1 ORDER BY 1" },
	{ name => 'zone_minute_lmt', light => 1, tz => 'America/New_York',
	  q => "SELECT date_trunc('minute', ts2) AS b, gpu_median(x) FROM bulk_t WHERE ts2 < '1900-01-01' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('minute', ts2) AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bulk_t"
		. " WHERE ts2 < '1900-01-01' GROUP BY 1 ORDER BY 1" },
	{ name => 'zone_date_sitka_1867', light => 1, tz => 'America/Sitka',
	  q => "SELECT ts2::date AS b, gpu_median(x), gpu_quantile(ts2, 0.5) FROM bulk_t WHERE ts2 < '1880-01-01' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT ts2::date AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY ts2)"
		. " FROM bulk_t WHERE ts2 < '1880-01-01' GROUP BY 1 ORDER BY 1" },
	{ name => 'zone_day_sitka_1867', light => 1, tz => 'America/Sitka',
	  q => "SELECT date_trunc('day', ts2) AS b, gpu_median(x) FROM bulk_t WHERE ts2 < '1880-01-01' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('day', ts2) AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x)"
		. " FROM bulk_t WHERE ts2 < '1880-01-01' GROUP BY 1 ORDER BY 1" },
	{ name => 'zone_date_chatham', light => 1, tz => 'Pacific/Chatham',
	  q => "SELECT ts2::date AS b, gpu_quantile(x, 0.9) FROM bulk_t WHERE ts2 > '2025-01-01' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT ts2::date AS b, percentile_disc(0.9) WITHIN GROUP (ORDER BY x) FROM bulk_t WHERE ts2 > '2025-01-01'"
		. " GROUP BY 1 ORDER BY 1" },
	{ name => 'zone_week_st_johns', light => 1, tz => 'America/St_Johns',
	  q => "SELECT date_trunc('week', ts2) AS b, gpu_quantiles(x, $F3) FROM bulk_t WHERE ts2 > '2025-01-01' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('week', ts2) AS b, percentile_disc($F3) WITHIN GROUP (ORDER BY x) FROM bulk_t"
		. " WHERE ts2 > '2025-01-01' GROUP BY 1 ORDER BY 1" },
	{ name => 'zone_local_timestamp_dublin', light => 1, tz => 'Europe/Dublin',
	  q => "SELECT date_trunc('hour', ts2::timestamp) AS b, gpu_median(x) FROM bulk_t"
		. " WHERE ts2 >= '2026-10-20' AND ts2 < '2026-11-05' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('hour', ts2::timestamp) AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bulk_t"
		. " WHERE ts2 >= '2026-10-20' AND ts2 < '2026-11-05' GROUP BY 1 ORDER BY 1" },
	{ name => 'zone_explicit', light => 1,
	  q => "SELECT date_trunc('day', ts2, 'Australia/Lord_Howe') AS b, gpu_median(x) FROM bulk_t"
		. " WHERE ts2 > '2025-01-01' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('day', ts2, 'Australia/Lord_Howe') AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x)"
		. " FROM bulk_t WHERE ts2 > '2025-01-01' GROUP BY 1 ORDER BY 1" },
	{ name => 'date_bin_odd', light => 1,
	  q => "SELECT date_bin('25 minutes', ts2, '2001-01-01 00:07:00+00') AS b, gpu_median(x) FROM bulk_t"
		. " WHERE ts2 BETWEEN '2026-03-01' AND '2026-03-11' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_bin('25 minutes', ts2, '2001-01-01 00:07:00+00') AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x)"
		. " FROM bulk_t WHERE ts2 BETWEEN '2026-03-01' AND '2026-03-11' GROUP BY 1 ORDER BY 1" },
	{ name => 'epoch_floor', light => 1,
	  q => "SELECT floor(extract(epoch FROM ts2) / 86400) * 86400 AS b, gpu_quantile(x, 0.5) FROM bulk_t"
		. " WHERE ts2 > '2025-01-01' GROUP BY 1 ORDER BY 1",
	  ref => "SELECT floor(extract(epoch FROM ts2) / 86400) * 86400 AS b, percentile_disc(0.5) WITHIN GROUP (ORDER BY x)"
		. " FROM bulk_t WHERE ts2 > '2025-01-01' GROUP BY 1 ORDER BY 1" },
	{ name => 'integer_division', light => 1,
	  q => "SELECT n / 1000 AS b, gpu_median(x), gpu_quantile(ts, 0.5) FROM bulk_t GROUP BY 1 ORDER BY 1",
	  ref => "SELECT n / 1000 AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY ts)"
		. " FROM bulk_t GROUP BY 1 ORDER BY 1" },
	{ name => 'date_month', light => 1, tz => 'Europe/Dublin',
	  q => "SELECT date_trunc('month', d::timestamp) AS b, gpu_median(x) FROM bulk_t GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('month', d::timestamp) AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x)"
		. " FROM bulk_t GROUP BY 1 ORDER BY 1" },
	{ name => 'date_week_zone', light => 1, tz => 'Pacific/Chatham',
	  q => "SELECT date_trunc('week', d) AS b, gpu_median(x) FROM bulk_t GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('week', d) AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bulk_t GROUP BY 1 ORDER BY 1" },
	{ name => 'timestamp_hour', light => 1,
	  q => "SELECT date_trunc('hour', lt) AS b, gpu_median(x) FROM bulk_t WHERE lt >= '2026-03-26' AND lt < '2026-04-03'"
		. " GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('hour', lt) AS b, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bulk_t"
		. " WHERE lt >= '2026-03-26' AND lt < '2026-04-03' GROUP BY 1 ORDER BY 1" },
	# a scan per partition (one of another layout, with a dropped column)
	{ name => 'partitioned',
	  q => "SELECT gpu_quantiles(x, $F3), gpu_quantile(n, 0.5) FROM bulk_pt",
	  ref => "SELECT percentile_disc($F3) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY n)"
		. " FROM bulk_pt" },
	{ name => 'partitioned_hour',
	  q => "SELECT date_trunc('hour', ts) AS h, gpu_median(x) FROM bulk_pt WHERE n > -40000 GROUP BY 1 ORDER BY 1",
	  ref => "SELECT date_trunc('hour', ts) AS h, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bulk_pt"
		. " WHERE n > -40000 GROUP BY 1 ORDER BY 1" },
);
for my $s (@shapes)
{
	$s->{scan} //= 'yes';
	next unless $s->{accel};
	$s->{ref} = $s->{q};
	# the executor's twin within one statement: an OFFSET 0 subquery the
	# bulk scan cannot take (the rewrite still applies)
	($s->{rc_ref} = $s->{q}) =~ s/\bFROM (bulk_\w+)/FROM (SELECT * FROM $1 OFFSET 0) $1/;
}

# READ COMMITTED: one statement computes both, so they share its snapshot
sub rc_statement
{
	my ($s) = @_;
	my $ref = $s->{rc_ref} // $s->{ref};
	return "SELECT CASE WHEN b IS NOT DISTINCT FROM e THEN 'same'"
	  . " ELSE 'DIFFERENT' || E'\\n  bulk: ' || coalesce(b, '<null>') || E'\\n  executor: ' || coalesce(e, '<null>') END"
	  . " FROM (SELECT (SELECT string_agg(s::text, E'\\n' ORDER BY s::text) FROM ($s->{q}) s) AS b,"
	  . " (SELECT string_agg(s::text, E'\\n' ORDER BY s::text) FROM ($ref) s) AS e) v";
}

# the statement that runs shape $s as $which: on, off (q), ref, twin (the
# READ COMMITTED statement's executor side), rc (that statement)
sub stmt
{
	my ($s, $which) = @_;
	if ($s->{params})
	{
		my $p = { on => 'on', off => 'off', ref => 'ref', twin => 'twin', rc => 'rc' }->{$which};
		return "EXECUTE bulk_${p}_$s->{name}($s->{args})";
	}
	return $s->{q} if $which eq 'on' || $which eq 'off';
	return $s->{ref} if $which eq 'ref';
	return $s->{rc_ref} // $s->{ref} if $which eq 'twin';
	return rc_statement($s);
}

# a session's settings: serial, or 2 workers forced; the prepared shapes
sub prelude
{
	my ($par) = @_;
	my $sql = "LOAD 'gpuselect';\nSET TimeZone = 'America/New_York';\nSET statement_timeout = '120s';\n"
	  . "SET plan_cache_mode = force_generic_plan;\n"
	  . accel(0, 0) . ($par ? force_parallel(2) : "SET max_parallel_workers_per_gather = 0;\n");
	for my $s (grep { $_->{params} } @shapes)
	{
		my $n = $s->{name};
		my %body = (on => $s->{q}, off => $s->{q}, ref => $s->{ref}, twin => $s->{rc_ref} // $s->{ref},
			rc => rc_statement($s));
		$sql .= "PREPARE bulk_${_}_$n($s->{params}) AS $body{$_};\n" for sort keys %body;
	}
	return $sql;
}

my $CUSTOM = qr/Custom Scan \(gpuselect\)/;

# a shape's session time zone, and back to the prelude's
sub tz_on
{
	my ($s, $local) = @_;
	return $s->{tz} ? 'SET ' . ($local ? 'LOCAL ' : '') . "TimeZone = '$s->{tz}';\n" : '';
}

sub tz_off
{
	my ($s, $local) = @_;
	return $s->{tz} ? 'SET ' . ($local ? 'LOCAL ' : '') . "TimeZone = 'America/New_York';\n" : '';
}

# the shapes a round runs: the light ones only serially and while nothing
# writes (whether the planner takes the bulk scan for them with workers is
# a matter of costs)
my $with_light = 1;
sub round_shapes
{
	my ($par) = @_;
	return grep { !$_->{light} || ($with_light && !$par) } @shapes;
}

# psql output with \echo ==TAG lines -> { TAG => text }
sub sections
{
	my ($out) = @_;
	my (%s, $cur);
	for my $l (split /\n/, $out)
	{
		if ($l =~ /^==(\S+)$/) { $cur = $1; $s{$cur} = ''; next; }
		$s{$cur} .= "$l\n" if defined $cur;
	}
	return \%s;
}

sub first_difference
{
	my ($got, $want) = @_;
	my @a = split /\n/, $got;
	my @b = split /\n/, $want;
	for my $i (0 .. ($#a > $#b ? $#a : $#b))
	{
		my ($x, $y) = ($a[$i] // '<none>', $b[$i] // '<none>');
		return "line " . ($i + 1) . ":\n  got:  " . substr($x, 0, 400) . "\n  want: " . substr($y, 0, 400)
		  if $x ne $y;
	}
	return 'none';
}

# the plan of a shape's bulk-scan run is what the shape expects; a name for
# the test line ('' and a diag when not)
sub plan_as_expected
{
	my ($s, $plan) = @_;
	my $used = ($plan // '') =~ $CUSTOM;
	my $ran = $used ? 'bulk scan' : 'executor';
	return $ran if $s->{scan} eq 'any' || ($s->{scan} eq 'yes') == $used;
	diag("$s->{name}: expected " . ($s->{scan} eq 'yes' ? 'the bulk scan' : 'the executor') . ", plan:\n"
		  . ($plan // '<none>'));
	return '';
}

# one REPEATABLE READ or SERIALIZABLE transaction: every shape with the bulk
# scan on, off, the executor's twin, and on again; its EXPLAIN first
sub snapshot_round
{
	my ($iso, $par, $label, $pre, $end) = @_;
	my $sql = prelude($par) . "BEGIN ISOLATION LEVEL $iso;\n" . ($pre // '');
	for my $s (round_shapes($par))
	{
		my $acc = $s->{accel} ? 1 : 0;
		my $n = $s->{name};
		$sql .= tz_on($s, 1) . bulk(1, 1) . accel($acc, 1)
		  . "\\echo ==$n:plan\nEXPLAIN (COSTS OFF) " . stmt($s, 'on') . ";\n"
		  . "\\echo ==$n:on\n" . stmt($s, 'on') . ";\n"
		  . bulk(0, 1) . "\\echo ==$n:off\n" . stmt($s, 'off') . ";\n"
		  . accel(0, 1) . "\\echo ==$n:ref\n" . stmt($s, 'ref') . ";\n"
		  . bulk(1, 1) . accel($acc, 1) . "\\echo ==$n:on2\n" . stmt($s, 'on') . ";\n" . tz_off($s, 1);
	}
	$sql .= ($end // "COMMIT;\n");
	my ($rc, $out) = psql($sql);
	if ($rc != 0)
	{
		fail("$label: the transaction ran");
		diag(substr($out, -3000));
		return;
	}
	my $sec = sections($out);
	for my $s (round_shapes($par))
	{
		my $n = $s->{name};
		my $want = $sec->{"$n:ref"} // '<missing>';
		my @bad;
		for my $k (qw(on off on2))
		{
			my $got = $sec->{"$n:$k"} // '<missing>';
			push @bad, "$k differs from the executor's built-in, " . first_difference($got, $want)
			  if $got ne $want;
		}
		my $ran = plan_as_expected($s, $sec->{"$n:plan"});
		ok(!@bad && $ran, "$label $n: " . ($ran || 'UNEXPECTED PLAN') . ', same answers');
		diag("$label $n: " . join("\n", @bad)) if @bad;
	}
	return $sec;
}

sub read_committed_round
{
	my ($par, $label) = @_;
	my $sql = prelude($par) . bulk(1, 0);
	for my $s (round_shapes($par))
	{
		my $st = stmt($s, 'rc');
		$sql .= tz_on($s, 0) . accel($s->{accel} ? 1 : 0, 0)
		  . "\\echo ==$s->{name}:plan\nEXPLAIN (COSTS OFF) $st;\n\\echo ==$s->{name}:rc\n$st;\n" . tz_off($s, 0);
	}
	# a cursor runs at FETCH, after the writers have committed more, but
	# under the snapshot of its DECLARE: both sides of the statement must
	# use that one (a scan that took a fresh snapshot would differ)
	my @cursors = grep { !$_->{params} && !$_->{light} && $_->{scan} eq 'yes' } @shapes;
	$sql .= "\\echo ==cursors\nBEGIN;\n";
	$sql .= accel($_->{accel} ? 1 : 0, 0) . "DECLARE bulk_c_$_->{name} NO SCROLL CURSOR FOR " . stmt($_, 'rc') . ";\n"
	  for @cursors;
	$sql .= "SELECT pg_sleep(0.3);\n";
	$sql .= "\\echo ==$_->{name}:cursor\nFETCH ALL FROM bulk_c_$_->{name};\n" for @cursors;
	$sql .= "COMMIT;\n";
	my ($rc, $out) = psql($sql);
	if ($rc != 0)
	{
		fail("$label: the statements ran");
		diag(substr($out, -3000));
		return;
	}
	my $sec = sections($out);
	for my $s (round_shapes($par))
	{
		my $n = $s->{name};
		my $res = $sec->{"$n:rc"} // '<missing>';
		my $ran = plan_as_expected($s, $sec->{"$n:plan"});
		ok($res eq "same\n" && $ran, "$label $n: " . ($ran || 'UNEXPECTED PLAN') . ', same answer');
		diag("$label $n: " . substr($res, 0, 2000)) if $res ne "same\n";
		next if $s->{params} || $s->{light} || $s->{scan} ne 'yes';
		$res = $sec->{"$n:cursor"} // '<missing>';
		is($res, "same\n", "$label $n: a cursor fetched later, same answer");
	}
}

# the reader's own writes, uncommitted (rows nobody else writes: negative
# ids, z < 0): inserted, updated (HOT and not) and deleted rows of its own
# transaction, an aborted subtransaction of its own; parallel workers must
# see them as the leader does.  Then a data-modifying CTE: the aggregation
# in the same statement must not see the statement's own update.  Rolled
# back at the end.
my $own_writes = q{
INSERT INTO bulk_t (id, x, n, k, ts, y, z)
  SELECT -(nextval('bulk_ids') * 3 + 1), g * 1.5, g, g % 7, '2026-03-08 03:00-04'::timestamptz + g * interval '1 min', g, -g
  FROM generate_series(1, 300) g;
UPDATE bulk_t SET x = x * 2, ts = ts + interval '1 hour' WHERE z < 0 AND z % 2 = 0;
UPDATE bulk_t SET n = n + 100000 WHERE z < 0 AND z % 7 = 0;
DELETE FROM bulk_t WHERE z < 0 AND z % 5 = 0;
SAVEPOINT bulk_own;
UPDATE bulk_t SET x = 0 WHERE z < 0 AND z % 3 = 0;
DELETE FROM bulk_t WHERE z < 0 AND z % 11 = 0;
ROLLBACK TO SAVEPOINT bulk_own;
};
# (the WHERE makes the update run first: a one-time filter above the scan;
# the update moves 240 rows across the median)
my $cte_q = "WITH u AS (UPDATE bulk_t SET x = x - 2000000, z = -z WHERE z < 0 RETURNING 1)"
  . " SELECT gpu_quantiles(x, $F3), gpu_quantile(z, 0.5), (SELECT count(*) FROM u) FROM bulk_t"
  . " WHERE (SELECT count(*) FROM u) > 0";
my $cte_ref = "WITH u AS (UPDATE bulk_t SET x = x - 2000000, z = -z WHERE z < 0 RETURNING 1)"
  . " SELECT percentile_disc($F3) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY z),"
  . " (SELECT count(*) FROM u) FROM bulk_t WHERE (SELECT count(*) FROM u) > 0";

sub own_writes_round
{
	my ($par, $label) = @_;
	my $end = "SAVEPOINT bulk_cte;\n" . accel(0, 1) . bulk(1, 1) . "\\echo ==cte:plan\nEXPLAIN (COSTS OFF) $cte_q;\n"
	  . "\\echo ==cte:on\n$cte_q;\nROLLBACK TO SAVEPOINT bulk_cte;\n"
	  . bulk(0, 1) . "\\echo ==cte:off\n$cte_q;\nROLLBACK TO SAVEPOINT bulk_cte;\n"
	  . "\\echo ==cte:ref\n$cte_ref;\nROLLBACK;\n";
	my $sec = snapshot_round('REPEATABLE READ', $par, $label, $own_writes, $end);
	return unless $sec;
	my ($on, $off, $ref) = map { $sec->{"cte:$_"} // '<missing>' } qw(on off ref);
	my $used = ($sec->{'cte:plan'} // '') =~ $CUSTOM;
	ok($on eq $ref && $off eq $ref && $used,
		"$label: a data-modifying CTE's aggregation (" . ($used ? 'bulk scan' : 'NOT THE BULK SCAN')
		  . ') misses its own update')
	  or diag("on: $on\noff: $off\nref: $ref\nplan: " . ($sec->{'cte:plan'} // ''));
}

sub all_rounds
{
	my ($tag, $i) = @_;
	for my $par (0, 1)
	{
		my $p = $par ? 'parallel' : 'serial';
		read_committed_round($par, "$tag READ COMMITTED $p");
		snapshot_round('REPEATABLE READ', $par, "$tag REPEATABLE READ $p");
		snapshot_round('SERIALIZABLE', $par, "$tag SERIALIZABLE $p");
		# serial in odd rounds, parallel in even ones (time)
		own_writes_round($par, "$tag own writes $p") if $par == 1 - $i % 2;
	}
}

# ---- the plans: the bulk scan when on (workers under Gather when forced),
# never when off, never in the twins ----
for my $par (0, 1)
{
	my $p = $par ? 'parallel' : 'serial';
	my $sql = prelude($par);
	for my $s (round_shapes($par))
	{
		my $n = $s->{name};
		$sql .= tz_on($s, 0) . accel($s->{accel} ? 1 : 0, 0)
		  . bulk(1, 0) . "\\echo ==$n:on\nEXPLAIN (COSTS OFF) " . stmt($s, 'on') . ";\n"
		  . "\\echo ==$n:twin\nEXPLAIN (COSTS OFF) " . stmt($s, 'twin') . ";\n"
		  . bulk(0, 0) . "\\echo ==$n:off\nEXPLAIN (COSTS OFF) " . stmt($s, 'off') . ";\n" . tz_off($s, 0);
	}
	my $sec = sections(psql_value($sql));
	for my $s (round_shapes($par))
	{
		my $n = $s->{name};
		ok(plan_as_expected($s, $sec->{"$n:on"}), "$p $n: the plan with bulk_scan on is the expected one ($s->{scan})");
		if ($par && $s->{scan} ne 'any' && !$s->{no_gather})
		{
			like($sec->{"$n:on"}, qr/Gather/, "$p $n: under Gather, bulk_scan on");
			like($sec->{"$n:off"}, qr/Gather/, "$p $n: under Gather, bulk_scan off");
		}
		unlike($sec->{"$n:off"}, $CUSTOM, "$p $n: no custom scan with bulk_scan off");
		unlike($sec->{"$n:twin"}, $CUSTOM, "$p $n: no custom scan in the executor's twin");
	}
	# EXPLAIN ANALYZE runs the scan and says what it read
	my ($rc, $out) = psql(prelude($par) . bulk(1, 0)
		  . join('', map { tz_on($_, 0) . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " . stmt($_, 'on') . ";\n" . tz_off($_, 0) }
			  grep { !$_->{accel} && $_->{scan} eq 'yes' } round_shapes($par)));
	ok($rc == 0 && $out =~ $CUSTOM, "$p: EXPLAIN ANALYZE of every shape runs") or diag(substr($out, -2000));
}

phase_done('setup and plans');
# ---- fixed states, no concurrency: an aborted transaction's tuples (hint
# bits not yet set), and an open transaction's uncommitted changes ----
psql_value(q{
BEGIN;
INSERT INTO bulk_t (id, x, n, ts) SELECT nextval('bulk_ids') * 3 + 2, g, g, now() FROM generate_series(1, 200) g;
UPDATE bulk_t SET x = x + 7 WHERE id % 3 = 2 AND id % 11 = 1;
DELETE FROM bulk_t WHERE id % 3 = 2 AND id % 11 = 2;
DELETE FROM bulk_pt WHERE id % 3 = 2 AND id % 11 = 2;
ROLLBACK;
});
my $quiet_holder = GsTest::psql_bg(q{
BEGIN;
INSERT INTO bulk_t (id, x, n, ts) SELECT nextval('bulk_ids') * 3 + 2, -g, g, now() FROM generate_series(1, 200) g;
UPDATE bulk_t SET x = x + 9 WHERE id % 3 = 2 AND id % 11 = 3;
UPDATE bulk_t SET n = n + 9 WHERE id % 3 = 2 AND id % 11 = 4;
DELETE FROM bulk_t WHERE id % 3 = 2 AND id % 11 = 5;
UPDATE bulk_pt SET ts = ts + interval '1 day' WHERE id % 3 = 2 AND id % 11 = 3;
DO $$ /* bulk_quiet_wait */
BEGIN
	FOR i IN 1 .. 2400 LOOP
		EXIT WHEN (SELECT quiet_done FROM bulk_ctl);
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
ROLLBACK;
});
ok(GsTest::wait_for(sub {
	psql_value(q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%bulk_quiet_wait%' AND backend_xid IS NOT NULL
	  AND pid <> pg_backend_pid()}) eq '1' }, 60), 'an open transaction holds uncommitted changes');
for my $par (0, 1)
{
	my $p = $par ? 'parallel' : 'serial';
	read_committed_round($par, "quiet READ COMMITTED $p");
	snapshot_round('REPEATABLE READ', $par, "quiet REPEATABLE READ $p");
}
psql_value('UPDATE bulk_ctl SET quiet_done = true;');
my ($qrc, $qout) = GsTest::psql_wait($quiet_holder);
is($qrc, 0, 'the open transaction ended') or diag($qout);

phase_done('fixed states');
# ---- concurrent writers ----
my $started = 1;
END { if ($started) { local $?; psql('UPDATE bulk_ctl SET stop = true;'); } }
my @writers = (
	[ 'churn 0', GsTest::psql_bg('CALL bulk_churn(0, 3);') ],
	[ 'churn 1', GsTest::psql_bg('CALL bulk_churn(1, 3);') ],
	[ 'holder', GsTest::psql_bg('CALL bulk_hold(2, 3);') ],
);
my $vac = '';
for my $i (1 .. 600)
{
	my $cmd = ('VACUUM bulk_t;', 'VACUUM bulk_pt;', 'VACUUM (FREEZE) bulk_t;', 'VACUUM (FREEZE) bulk_pt;')[$i % 4];
	$vac .= "SELECT stop FROM bulk_ctl \\gset\n\\if :stop\n\\q\n\\endif\n$cmd\nSELECT pg_sleep(0.2);\n";
}
push @writers, [ 'vacuum', GsTest::psql_bg($vac) ];
# the writers have started writing
GsTest::wait_for(sub { psql_value(q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CALL bulk_%'
	  AND backend_xid IS NOT NULL}) >= 2 }, 30);

$with_light = 0;
all_rounds("round $_", $_) for 1 .. $rounds;
$with_light = 1;

phase_done('concurrent rounds');
psql_value('UPDATE bulk_ctl SET stop = true;');
for my $w (@writers)
{
	my ($rc, $out) = GsTest::psql_wait($w->[1]);
	is($rc, 0, "writer $w->[0] ran without error") or diag(substr($out, -2000));
}
$started = 0;

# the writers did what they should have (the counters: once the writers'
# backends have exited and flushed them)
ok(GsTest::wait_for(sub {
	my ($hot, $upd, $del, $ins) = split /\|/, psql_value(q{SELECT pg_stat_clear_snapshot();
SELECT n_tup_hot_upd, n_tup_upd, n_tup_del, n_tup_ins FROM pg_stat_user_tables WHERE relid = 'bulk_t'::regclass});
	$hot > 0 && $upd > $hot && $del > 0 && $ins > 40000 }, 20),
	'the writers made HOT and non-HOT updates, deletes and inserts');

# ---- after the writers: dead tuples, pruned pages ----
snapshot_round('REPEATABLE READ', 1, 'after REPEATABLE READ parallel');

phase_done('after the writers');
# ---- SERIALIZABLE write skew: F reads bulk_t through the bulk scan and
# writes bulk_skew; T2 reads bulk_skew and writes bulk_t, committing first.
# F must then fail with 40001, which needs the relation's predicate lock.
# Advisory locks order the steps: F holds 1515001 until it has read; T2
# holds 1515002 until it has committed. ----
my $skew_q = "SELECT gpu_median(x) FROM bulk_t WHERE n > 0";
for my $case ([ 1, 0 ], [ 1, 1 ], [ 0, 0 ])
{
	my ($on, $par) = @$case;
	my $t2 = GsTest::psql_bg(q{
SET lock_timeout = '60s';
DO $$ BEGIN
	FOR i IN 1 .. 3000 LOOP
		EXIT WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 1515001 AND granted);
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$;
SELECT pg_advisory_lock(1515002);
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) FROM bulk_skew;
SELECT pg_advisory_lock(1515001);
INSERT INTO bulk_t (id, x, n, ts) VALUES (nextval('bulk_ids') * 3, 5, 5, now());
COMMIT;
SELECT pg_advisory_unlock(1515002);
});
	my ($rc, $out) = psql(prelude($par) . bulk($on, 0) . q{
SET lock_timeout = '60s';
SELECT pg_advisory_lock(1515001);
DO $$ BEGIN
	FOR i IN 1 .. 3000 LOOP
		EXIT WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 1515002 AND granted
		                  AND pid <> pg_backend_pid());
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$;
BEGIN ISOLATION LEVEL SERIALIZABLE;
\echo ==plan
EXPLAIN (COSTS OFF) } . "$skew_q;\n\\echo ==read\n$skew_q;\n" . q{
SELECT pg_advisory_unlock(1515001);
SELECT pg_advisory_lock(1515002);
\echo ==write
INSERT INTO bulk_skew VALUES (1);
COMMIT;
}, on_error_stop => 0);
	my ($rc2, $out2) = GsTest::psql_wait($t2);
	is($rc2, 0, "write skew ($on, $par): T2 committed") or diag($out2);
	my $sec = sections($out);
	my $p = ($on ? 'bulk scan' : 'executor') . ($par ? ', parallel' : '');
	like($sec->{write} // '', qr/40001/, "write skew ($p): the reader's transaction fails with 40001")
	  or diag($out);
	if ($on) { like($sec->{plan} // '', $CUSTOM, "write skew ($p): the read used the bulk scan"); }
	else { unlike($sec->{plan} // '', $CUSTOM, "write skew ($p): the read used the executor"); }
	like($sec->{plan} // '', qr/Gather/, "write skew ($p): with workers") if $par;
	psql_value('TRUNCATE bulk_skew;');
}

phase_done('write skew');
# GS_BULK_KEEP=1 keeps the tables to look at
psql_value('DROP TABLE bulk_t, bulk_pt, bulk_ctl, bulk_skew; DROP SEQUENCE bulk_ids;'
	  . ' DROP PROCEDURE bulk_churn(int, int), bulk_hold(int, int);') unless $ENV{GS_BULK_KEEP};
done_testing();
