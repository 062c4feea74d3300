# gpuselect on Citus: a coordinator and two workers on this machine
# (docs/citus.md).  Skipped when the server under test has no citus
# extension (test/run-all.sh builds Citus for PostgreSQL 16, 17 and 18:
# GS_CITUS_PG).
#
# - Every gpuselect aggregate -- plain, ordered-set, and the built-ins under
#   gpuselect.accelerate_builtins -- answers on a distributed and on a
#   reference table exactly as the built-in on the same data: without GROUP
#   BY, grouped by the distribution column (the whole query pushed down) and
#   by other expressions (partial aggregates: worker_partial_agg on every
#   shard, coord_combine_agg on the coordinator), with WHERE, in subqueries
#   and CTEs.  Each side runs as a query of its own: a built-in in the same
#   query makes Citus send the rows, and both then run on the coordinator.
# - The plans are the partial ones (the typed twins, planner.c).
# - The bytes the coordinator receives: Citus's own counter, "Tuple data
#   received from nodes" of EXPLAIN ANALYZE, for gpu_quantiles (the partial
#   aggregates: gpuselect.citus_exchange off; the exchange, which an
#   ungrouped query over a distributed table runs by default, is
#   018_citus_exchange.pl's) and for the built-in; printed, and gpuselect's
#   must not exceed the built-in's rows.
# - A worker stopped while a query runs: a clean ERROR on the coordinator,
#   no crash; with the worker back, the same query answers right.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my ($have) = psql_value(q{SELECT count(*) FROM pg_available_extensions WHERE name = 'citus'});
plan skip_all => 'no citus extension in this server (test/run-all.sh builds it for GS_CITUS_PG)'
  if $have == 0;

# ---- three clusters: the coordinator first, then the workers ----
my @conf = ("shared_preload_libraries = 'citus'", "session_preload_libraries = 'gpuselect'",
	'max_parallel_workers_per_gather = 0', "citus.shard_count = 8");
my @nodes = GsTest::citus_cluster_start(@conf);
END { GsTest::citus_cluster_stop(\@nodes) if @nodes; }

# run SQL on node $n (0: coordinator)
sub on { return GsTest::citus_on(\@nodes, @_); }

# values of every kind the twins cover, NULLs, NaN, -0 and duplicates among
# them; text (a type without a twin: gathered) under "C"
my $rows = 24000;
on(0, qq{
SELECT setseed(0.15);
CREATE TABLE dist AS
SELECT g::int8 AS id, g % 9 AS grp,
       CASE WHEN g % 101 = 0 THEN NULL WHEN g % 997 = 0 THEN 'NaN'::float8
            WHEN g % 499 = 0 THEN '-0'::float8 ELSE round((random() * 2e4 - 1e4)::numeric, 2)::float8 END AS f8,
       (g % 30011 - 15000)::int2 AS i2, ((g * 7919) % 100003)::int4 AS i4, (g::int8 * 104729) % 1000003 AS i8,
       (random() * 1e3)::float4 AS f4, ((g % 5000)::numeric / 7)::numeric(12, 3) AS n,
       date '2026-01-01' + (g % 400) AS d, timestamp '2026-01-01' + g * interval '7 minutes' AS ts,
       timestamptz '2026-01-01 00:00+00' + g * interval '13 seconds' AS tz,
       (g % 3000) * interval '1 second' AS iv, md5((g % 500)::text) COLLATE "C" AS tx
FROM generate_series(1, $rows) g;
CREATE TABLE ref AS SELECT * FROM dist WHERE id % 4 = 0;
SELECT create_distributed_table('dist', 'id');
SELECT create_reference_table('ref');
});

my $fr = q{'{0, 0.1, 0.5, 0.9, 0.99, 1}'::float8[]};

# [gpuselect query, built-in query]; the built-in side runs with
# accelerate_builtins off, the gpuselect side as written
my @pairs;
for my $t (qw(dist ref))
{
	push @pairs,
	  # plain aggregates, every type
	  ["SELECT gpu_quantiles(f8, $fr), gpu_median(f8), gpu_quantile(i4, 0.3) FROM $t",
		"SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8), percentile_cont(0.5) WITHIN GROUP (ORDER BY f8),"
		  . " percentile_disc(0.3) WITHIN GROUP (ORDER BY i4) FROM $t"],
	  map({ ["SELECT gpu_quantiles($_, $fr) FROM $t", "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY $_) FROM $t"] }
		  qw(i2 i8 f4 n d ts tz iv tx)),
	  ["SELECT gpu_median(iv), gpu_quantile(tx, 0.7), gpu_quantile(n, 1) FROM $t",
		"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY iv), percentile_disc(0.7) WITHIN GROUP (ORDER BY tx),"
		  . " percentile_disc(1) WITHIN GROUP (ORDER BY n) FROM $t"],
	  # ordered-set forms, ASC and DESC, scalar and array
	  ["SELECT gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY i8 DESC), gpu_percentile_cont(0.37) WITHIN GROUP (ORDER BY f8),"
		  . " gpu_percentile_cont($fr) WITHIN GROUP (ORDER BY iv DESC) FROM $t",
		"SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY i8 DESC), percentile_cont(0.37) WITHIN GROUP (ORDER BY f8),"
		  . " percentile_cont($fr) WITHIN GROUP (ORDER BY iv DESC) FROM $t"],
	  # GROUP BY another column (partial aggregates), with WHERE
	  ["SELECT grp, gpu_quantiles(f8, $fr), gpu_percentile_disc(0.25) WITHIN GROUP (ORDER BY n DESC) FROM $t"
		  . " WHERE i4 > 1000 GROUP BY grp ORDER BY grp",
		"SELECT grp, percentile_disc($fr) WITHIN GROUP (ORDER BY f8), percentile_disc(0.25) WITHIN GROUP (ORDER BY n DESC) FROM $t"
		  . " WHERE i4 > 1000 GROUP BY grp ORDER BY grp"],
	  # the aggregate inside an expression (its typed twin all the same)
	  ["SELECT grp, gpu_quantiles(f8, $fr) IS NOT NULL, gpu_quantile(i4, 0.3) + 1, (gpu_quantiles(n, $fr))[2] FROM $t"
		  . " GROUP BY grp ORDER BY grp",
		"SELECT grp, percentile_disc($fr) WITHIN GROUP (ORDER BY f8) IS NOT NULL, percentile_disc(0.3) WITHIN GROUP (ORDER BY i4) + 1,"
		  . " (percentile_disc($fr) WITHIN GROUP (ORDER BY n))[2] FROM $t GROUP BY grp ORDER BY grp"],
	  # GROUP BY an expression (per day)
	  ["SELECT date_trunc('day', ts) AS day, gpu_quantile(f8, 0.9), gpu_median(f4) FROM $t GROUP BY 1 ORDER BY 1",
		"SELECT date_trunc('day', ts) AS day, percentile_disc(0.9) WITHIN GROUP (ORDER BY f8),"
		  . " percentile_cont(0.5) WITHIN GROUP (ORDER BY f4) FROM $t GROUP BY 1 ORDER BY 1"],
	  # GROUP BY the distribution column (pushed down whole)
	  ["SELECT id, gpu_quantiles(f8, $fr), gpu_median(i2) FROM $t WHERE id % 50 < 3 GROUP BY id ORDER BY id",
		"SELECT id, percentile_disc($fr) WITHIN GROUP (ORDER BY f8), percentile_cont(0.5) WITHIN GROUP (ORDER BY i2)"
		  . " FROM $t WHERE id % 50 < 3 GROUP BY id ORDER BY id"],
	  # a subquery and CTEs (inlined, materialized)
	  ["SELECT * FROM (SELECT grp, gpu_quantiles(tz, $fr) AS q FROM $t GROUP BY grp) s WHERE grp > 3 ORDER BY grp",
		"SELECT * FROM (SELECT grp, percentile_disc($fr) WITHIN GROUP (ORDER BY tz) AS q FROM $t GROUP BY grp) s"
		  . " WHERE grp > 3 ORDER BY grp"],
	  ["WITH c AS (SELECT grp, f8 FROM $t WHERE grp < 5) SELECT gpu_quantiles(f8, $fr) FROM c",
		"WITH c AS (SELECT grp, f8 FROM $t WHERE grp < 5) SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM c"],
	  ["WITH c AS MATERIALIZED (SELECT grp, gpu_quantile(i8, 0.5) AS m FROM $t GROUP BY grp)"
		  . " SELECT sum(m), gpu_median(m) FROM c",
		"WITH c AS MATERIALIZED (SELECT grp, percentile_disc(0.5) WITHIN GROUP (ORDER BY i8) AS m FROM $t GROUP BY grp)"
		  . " SELECT sum(m), percentile_cont(0.5) WITHIN GROUP (ORDER BY m) FROM c"];
}
# the built-ins' own syntax under gpuselect.accelerate_builtins
for my $q (@pairs[0, 10 .. 18])
{
	push @pairs, ["SET gpuselect.accelerate_builtins = on; $q->[1]", $q->[1]];
}

for my $p (@pairs)
{
	my ($gs, $bi) = @$p;
	my $want = on(0, "SET gpuselect.accelerate_builtins = off;\n$bi;");
	my ($rc, $got) = on(0, "$gs;", may_fail => 1);
	is($got, $want, "same as the built-in: $gs") or diag("built-in: $bi");
}

# the partial plans (typed twins on the shards), and the gathered text
my $plan = on(0, "SET gpuselect.citus_exchange = off; EXPLAIN (VERBOSE, COSTS OFF) SELECT grp, gpu_quantiles(f8, $fr) FROM dist GROUP BY grp;");
like($plan, qr/worker_binary_partial_agg\('public\.gs_planner_quantiles_typed\(double precision,double precision\[\]\)'/,
	'gpu_quantiles: partial states on the shards (the typed twin)');
# (the exchange runs instead, ungrouped or grouped by one expression: 018_citus_exchange.pl)
$plan = on(0, "SET gpuselect.accelerate_builtins = on; SET gpuselect.citus_exchange = off;\n"
	  . "EXPLAIN (VERBOSE, COSTS OFF) SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM dist;");
like($plan, qr/worker_binary_partial_agg\('public\.gs_planner_builtin_cont_typed\(double precision,double precision\)'/,
	'accelerate_builtins: the built-in as partial states on the shards');
$plan = on(0, "EXPLAIN (VERBOSE, COSTS OFF) SELECT gpu_quantile(tx, 0.5) FROM dist;");
like($plan, qr/gs_planner_quantile_gather\(/, 'a type without a twin is gathered');

# ---- the bytes the coordinator receives (Citus's counter) ----
sub received_bytes
{
	my ($q) = @_;
	# the partial aggregates' bytes: the exchange (018_citus_exchange.pl) off
	my $out = on(0, "SET gpuselect.citus_exchange = off; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $q;");
	my ($n, $unit) = $out =~ /Tuple data received from nodes: (\d+) (bytes|kB|MB)/ or return -1;
	return $n * ({ bytes => 1, kB => 1024, MB => 1024 * 1024 }->{$unit});
}
my $gs_bytes = received_bytes("SELECT gpu_quantiles(f8, $fr) FROM dist");
my $bi_bytes = received_bytes("SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM dist");
my $sum_bytes = received_bytes("SELECT sum(f8) FROM dist");
diag("coordinator received, $rows float8 rows: gpu_quantiles $gs_bytes bytes, "
	  . "percentile_disc $bi_bytes bytes, sum $sum_bytes bytes (EXPLAIN ANALYZE, Citus's count)");
ok($gs_bytes > 0 && $bi_bytes > 0, 'Citus counted the bytes received');
# today every key travels (8 bytes each, in one state per shard), as the
# built-in's rows do; never more than those rows and a header per shard
cmp_ok($gs_bytes, '<=', $bi_bytes + 8 * 1024, 'gpu_quantiles receives no more than the built-in\'s rows');

# ---- a worker stopped while a query runs ----
my $slow = "SELECT gpu_quantiles(f8, $fr) FROM dist WHERE pg_sleep(0.0005) IS NOT NULL";
my $bg;
{
	local $ENV{PGHOST} = $nodes[0]{host};
	local $ENV{PGPORT} = $nodes[0]{port};
	$bg = GsTest::psql_bg("$slow;");
}
sleep 2;
my $w = $nodes[2]{h};
GsTest::_quiet(GsTest::_as_server_user("$w->{bindir}/pg_ctl", '-D', "$w->{dir}/data", '-m', 'immediate', '-w', 'stop'));
my ($rc, $out) = GsTest::psql_wait($bg);
isnt($rc, 0, 'worker stopped mid-query: the query fails');
like($out, qr/ERROR:/, 'with an ERROR');
diag("the coordinator's error: $out");
unlike($out, qr/server closed the connection unexpectedly|terminated by signal/, 'the coordinator did not crash');
is(on(0, 'SELECT 1'), '1', 'the coordinator answers');
# the worker back: the same query answers right
GsTest::_quiet(GsTest::_as_server_user("$w->{bindir}/pg_ctl", '-D', "$w->{dir}/data", '-l', $w->{log}, '-w', 'start')) == 0
  or BAIL_OUT('worker restart failed');
my $ok = GsTest::wait_for(sub { my ($r) = on(0, 'SELECT count(*) FROM dist', may_fail => 1); $r == 0 }, 30);
ok($ok, 'the cluster answers again');
is(on(0, "SELECT gpu_quantiles(f8, $fr) FROM dist"),
	on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM dist"), 'and gpu_quantiles is right');
my $log = `cat $nodes[0]{h}{log}`;
unlike($log, qr/terminated by signal/, 'no backend of the coordinator crashed');

done_testing();
