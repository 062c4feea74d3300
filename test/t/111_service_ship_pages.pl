# Page shipping (issue #31; gpuselect.bulk_scan_ship_pages): the bulk scan
# pins the pages it checked and the GPU service (cpu_test here: a lane's
# thread; with the CUDA engine its device) extracts the column's keys from
# the shared buffers, while the scan goes on (two batches in flight, each
# in a page slot of its own).  gpuselect.device = gpu here, so that the scan
# waits for the service instead of extracting a batch itself when the
# service is behind (auto does that), and every page is shipped; the
# parallel cases run under auto.  Differential: every
# answer is compared with the executor's plan (the built-in percentile_disc
# with accelerate_builtins off) under the same snapshot, while other
# sessions insert, update, delete, abort and VACUUM:
#   READ COMMITTED: one statement, two scalar subqueries (the shipped scan
#     and the executor's twin) share the statement's snapshot;
#   REPEATABLE READ: one transaction runs both;
#   SERIALIZABLE: as READ COMMITTED, in one transaction (heap_getnext reads
#     the pages there, for its per-tuple conflict checks; elsewhere the scan
#     reads them itself, and with every page taken as all-visible this
#     script fails 41 checks).
# Columns: every key width, NULLs in the column and before it (the offset
# then follows from the NULL bitmap), an int2 before an int8 (alignment), a
# dropped column before them, a column added later with a default
# (attmissingval) and one without (NULL).  EXPLAIN ANALYZE must show every
# page shipped, so the comparison is never executor against itself.  The
# same with two parallel workers shipping too, and a partitioned table (one
# leaf's columns in another order).  Then:
# the setting is superuser-only; a column after a varlena is not shipped
# (same answer); a cancel while the service holds the job leaves no pin
# (pg_buffercache) and the pool empty; the service failing page jobs: the scan
# extracts the pages itself (same answer, none shipped).
# Checked by hand: with gs_page_tuple_key's NULL-bitmap offset broken
# (skipping the alignment of a column after a NULL) the answers differ and
# this script fails.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

plan skip_all => 'the service runs in the cuda build'
  if ($ENV{GS_VARIANT} // 'cuda') ne 'cuda';

my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.key_pool_size = 64MB",
	"gpuselect.key_pool_chunk_size = 64kB",
	"autovacuum = off");
END { GsTest::service_cluster_stop($h) if $h; }

psql_value('CREATE EXTENSION gpuselect;');
ok(GsTest::wait_for(sub { GsTest::service_status()->{service_state} eq 'ready' }, 30),
	'the service is ready');

psql_value(q{
SET synchronous_commit = on;
CREATE TABLE ctl (stop bool NOT NULL);
INSERT INTO ctl VALUES (false);
-- gone: dropped; s (int2) before i8: i8 is aligned past it; a: NULLs before
-- the aggregated columns; the rest the key types
CREATE TABLE sp (id int8 NOT NULL, gone int4, s int2, a int4, i8 int8, f8 float8,
                 i4 int4, f4 float4, i2 int2, d date, ts timestamptz)
  WITH (fillfactor = 90, autovacuum_enabled = off);
INSERT INTO sp
  SELECT g, g, (g % 5)::int2,
         CASE WHEN g % 3 = 0 THEN NULL ELSE g END,
         CASE WHEN g % 11 = 0 THEN NULL ELSE (g * 7919) % 100003 - 50000 END,
         CASE WHEN g % 13 = 0 THEN NULL WHEN g % 4001 = 0 THEN 'NaN'
              WHEN g % 3001 = 0 THEN '-Infinity' ELSE random() * 2e6 - 1e6 END,
         CASE WHEN g % 7 = 0 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END,
         CASE WHEN g % 17 = 0 THEN NULL WHEN g % 89 = 0 THEN '-0'::float4
              ELSE (random() * 2e4 - 1e4)::float4 END,
         CASE WHEN g % 19 = 0 THEN NULL ELSE (g % 30000 - 15000)::int2 END,
         CASE WHEN g % 23 = 0 THEN NULL ELSE date '2020-01-01' + g % 3000 END,
         CASE WHEN g % 29 = 0 THEN NULL
              ELSE '2026-03-07 00:00-05'::timestamptz + g * interval '4.32 s' END
  FROM generate_series(1, 30000) g;
ALTER TABLE sp ADD COLUMN m float8 DEFAULT 2.5;	-- attmissingval for the rows above
ALTER TABLE sp ADD COLUMN z int8;				-- NULL for them
ALTER TABLE sp DROP COLUMN gone;
CREATE INDEX ON sp (i4);
-- a varlena before x: no fixed offset, not shipped
CREATE TABLE sv (id int8, note text, x float8);
INSERT INTO sv SELECT g, repeat('v', g % 30), random() FROM generate_series(1, 5000) g;
});
# all-visible pages, then a part changed again (not all-visible)
psql_value('SET synchronous_commit = on; VACUUM (FREEZE) sp;');
psql_value('UPDATE sp SET f8 = f8 + 1, z = id WHERE id <= 6000 AND id % 3 = 0; ANALYZE sp, sv;');

my $F = "'{0,0.01,0.25,0.5,0.77,0.99,1}'::float8[]";
my @cols = qw(i8 f8 i4 f4 i2 d ts m z);
my $ship = "SET gpuselect.bulk_scan_ship_pages = on;\nSET gpuselect.accelerate_builtins = off;\n"
  . "SET gpuselect.device = gpu;\n";

# the shipped scan and the executor's twin in one statement (one snapshot)
sub same_statement
{
	my ($c, $where) = @_;
	$where //= '';
	return "SELECT (SELECT gpu_quantiles($c, $F)::text FROM sp $where)"
	  . " IS NOT DISTINCT FROM (SELECT (percentile_disc($F) WITHIN GROUP (ORDER BY $c))::text FROM sp $where);";
}

# ---- quiet: every column, the plan shows every page shipped ----
for my $c (@cols)
{
	is(psql_value($ship . same_statement($c)), 't', "$c: shipped scan equals the executor");
}
my $plan = psql_value($ship . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT gpu_quantiles(i8, $F) FROM sp;");
my ($pages) = $plan =~ /Pages: (\d+)/;
my ($shipped) = $plan =~ /Pages Shipped: (\d+)/;
ok(defined $shipped && $pages > 50 && $shipped == $pages, "every page shipped ($plan)");
like(psql_value("SET gpuselect.accelerate_builtins = off;\n"
		. "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT gpu_quantiles(i8, $F) FROM sp;"),
	qr/^(?!.*Pages Shipped)/s, 'off by default: nothing shipped');
# cpu_test: the lanes' threads extracted them; with the CUDA engine the device
my $st0 = GsTest::service_status();
my ($by, $not) = GsTest::service_mode() eq 'cpu_test'
  ? ('service_pages_on_cpu', 'service_pages_on_device')
  : ('service_pages_on_device', 'service_pages_on_cpu');
ok($st0->{$by} >= $pages && $st0->{$not} == 0,
	"status: $by $st0->{$by}, $not $st0->{$not}");
my $cpu0 = $st0->{service_pages_on_cpu};
is(psql_value($ship . "SET gpuselect.test_ship_pages_cpu = on;\n" . same_statement('f8')), 't',
	'the test hook: extracted on a lane thread, same answer');
ok(GsTest::service_status()->{service_pages_on_cpu} > $cpu0, '... and counted there');

# parallel workers ship their pages too
my $par = $ship . "SET gpuselect.device = auto; SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;\n"
  . "SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;\n";
my $pplan = psql_value($par . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT gpu_quantiles(i8, $F) FROM sp;");
like($pplan, qr/Workers Launched: [12]/, 'parallel: workers launched') or diag($pplan);
my ($pshipped) = $pplan =~ /Pages Shipped: (\d+)/;
ok(defined $pshipped && $pshipped > 0, "parallel: pages shipped ($pplan)");
for my $c (qw(i8 f4 ts m))
{
	is(psql_value($par . same_statement($c)), 't', "parallel, $c: shipped scan equals the executor");
}

# ---- with writers ----
psql_value(q{
CREATE PROCEDURE churn(me int, nw int) LANGUAGE plpgsql AS $$
DECLARE
	i int := 0;
	c int;
	r float8;
BEGIN
	LOOP
		EXIT WHEN (SELECT stop FROM ctl) OR i > 4000;
		i := i + 1;
		c := (i * 37 + me * 11) % 499;
		r := random();
		IF r < 0.3 THEN
			INSERT INTO sp (id, s, a, i8, f8, i4, f4, i2, d, ts, m, z)
			  SELECT 100000 + i * nw * 10 + me * 10 + g, 1, CASE WHEN g = 1 THEN NULL ELSE g END,
			         CASE WHEN g = 2 THEN NULL ELSE (random() * 1e6)::int8 END, random() * 1e6,
			         g, g, g::int2, date '2021-01-01' + g, now(),
			         CASE WHEN g = 3 THEN NULL ELSE random() END, g
			  FROM generate_series(1, 5) g;
		ELSIF r < 0.55 THEN
			UPDATE sp SET i8 = i8 + 1, f8 = f8 * 2, m = coalesce(m, 0) + 1, a = NULL
			  WHERE id % nw = me AND id % 499 = c;
		ELSIF r < 0.7 THEN
			UPDATE sp SET i4 = i4 + 1, z = NULL WHERE id % nw = me AND id % 499 = c;
		ELSE
			DELETE FROM sp WHERE id % nw = me AND id % 499 = c;
		END IF;
		IF i % 4 = 0 THEN ROLLBACK; ELSE COMMIT; END IF;
		PERFORM pg_sleep(0.002);
	END LOOP;
END
$$;
});
my @bg = map { GsTest::psql_bg("CALL churn($_, 2);") } 0 .. 1;
my $vac = GsTest::psql_bg(join('', map { "VACUUM sp; SELECT pg_sleep(0.2);\n" } 1 .. 15));

# the writers under way (their first transactions committed) before the rounds
select(undef, undef, undef, 1.0);
my $rounds = 3;
for my $r (1 .. $rounds)
{
	for my $c (@cols)
	{
		is(psql_value($ship . same_statement($c)), 't', "round $r, read committed, $c");
	}
	is(psql_value($par . same_statement('f8')), 't', "round $r, read committed, parallel, f8");
	# repeatable read: the shipped scan, then the executor, in one transaction
	for my $c (qw(i8 f8 m))
	{
		my $out = psql_value($ship . "BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
			  . "SELECT gpu_quantiles($c, $F)::text FROM sp;\n"
			  . "SELECT pg_sleep(0.3);\n"
			  . "SELECT (percentile_disc($F) WITHIN GROUP (ORDER BY $c))::text FROM sp;\n"
			  . "COMMIT;");
		my @l = grep { $_ ne '' } split /\n/, $out;
		ok(@l == 2 && $l[0] eq $l[1], "round $r, repeatable read, $c") or diag($out);
	}
	# serializable (heap_getnext reads the pages; the writers, in READ
	# COMMITTED, take no part in SSI, so this reader never fails)
	is(psql_value($ship . "BEGIN ISOLATION LEVEL SERIALIZABLE;\n" . same_statement('i8') . "\nCOMMIT;"),
		't', "round $r, serializable, i8");
}
psql_value('UPDATE ctl SET stop = true;');
for my $b (@bg, $vac)
{
	my ($rc, $out) = GsTest::psql_wait($b);
	is($rc, 0, 'a writer ran to its end') or diag($out);
}

# ---- the setting, the scope ----
my ($rc, $out) = GsTest::psql("CREATE ROLE nosu; SET ROLE nosu; SET gpuselect.bulk_scan_ship_pages = on;");
like($out, qr/permission denied/, 'the setting is superuser-only');
($rc, $out) = GsTest::psql("SET ROLE nosu; SET gpuselect.test_ship_pages_cpu = on;");
like($out, qr/permission denied/, 'the test hook is superuser-only');
is(psql_value($ship . "SELECT (SELECT gpu_quantiles(x, $F)::text FROM sv)"
		. " = (SELECT (percentile_disc($F) WITHIN GROUP (ORDER BY x))::text FROM sv);"), 't',
	'a column after a varlena: same answer');
unlike(psql_value($ship . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT gpu_quantiles(x, $F) FROM sv;"),
	qr/Pages Shipped/, '... not shipped');

# a partitioned table: each leaf's scan ships its own pages
psql_value(q{
CREATE TABLE spp (id int8, v float8) PARTITION BY RANGE (id);
CREATE TABLE spp1 PARTITION OF spp FOR VALUES FROM (0) TO (15000);
CREATE TABLE spp2 (v float8, id int8);	-- its columns in another order
ALTER TABLE spp ATTACH PARTITION spp2 FOR VALUES FROM (15000) TO (40000);
INSERT INTO spp SELECT g, CASE WHEN g % 31 = 0 THEN NULL ELSE random() END FROM generate_series(1, 30000) g;
ANALYZE spp;
});
is(psql_value($ship . "SELECT (SELECT gpu_quantiles(v, $F)::text FROM spp)"
		. " = (SELECT (percentile_disc($F) WITHIN GROUP (ORDER BY v))::text FROM spp);"), 't',
	'a partitioned table: same answer');
like(psql_value($ship . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT gpu_quantiles(v, $F) FROM spp;"),
	qr/Pages Shipped: [1-9].*Pages Shipped: [1-9]/s, '... each leaf shipped its pages');

# serializable: heap_getnext reads the pages (its per-tuple conflict checks)
is(psql_value($ship . "BEGIN ISOLATION LEVEL SERIALIZABLE;\n" . same_statement('f8') . "\nCOMMIT;"), 't',
	'serializable: same answer');
# a temporary table: local buffers, which the service cannot read: not shipped
like(psql_value($ship . "CREATE TEMP TABLE tt AS SELECT * FROM sp;\n"
		. "SELECT (SELECT gpu_quantiles(f8, $F)::text FROM tt)"
		. " = (SELECT (percentile_disc($F) WITHIN GROUP (ORDER BY f8))::text FROM tt);\n"
		. "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT gpu_quantiles(f8, $F) FROM tt;"),
	qr/^t\n(?!.*Pages Shipped)/s, 'a temporary table: same answer, not shipped');
unlike(psql_value($ship . "SET gpuselect.device = 'cpu';\n"
		. "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT gpu_quantiles(i8, $F) FROM sp;"),
	qr/Pages Shipped/, 'gpuselect.device = cpu: not shipped');

# ---- a cancel while the service holds the job: no pin left, pool empty ----
($rc, $out) = GsTest::psql($ship . "SET gpuselect.test_service_delay = 2000;\n"
	  . "SET statement_timeout = 300;\nSELECT gpu_quantiles(i8, $F) FROM sp;");
like($out, qr/statement timeout/, 'a cancel during a page job');
ok(GsTest::service_pool_baseline(20), 'the pool is back to empty');
SKIP:
{
	my ($brc) = GsTest::psql('CREATE EXTENSION pg_buffercache;');
	skip 'no pg_buffercache', 1 if $brc != 0;
	is(psql_value("SELECT count(*) FROM pg_buffercache WHERE pinning_backends > 0"
			. " AND relfilenode = pg_relation_filenode('sp')"), '0', 'no page of sp is pinned');
}
is(psql_value($ship . same_statement('i8')), 't', 'after the cancel: same answer');

# ---- the service fails every page job: the scan extracts the pages itself ----
my $fail = $ship . "SET gpuselect.device = auto; SET gpuselect.test_service_fault = 'fail';\n";
is(psql_value($fail . same_statement('f8')), 't', 'page jobs failing: same answer');
$plan = psql_value($fail . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT gpu_quantiles(i8, $F) FROM sp;");
like($plan, qr/Pages Shipped: 0\b/, '... none shipped');
ok(GsTest::service_pool_baseline(20), 'the pool is back to empty at the end');
done_testing();
