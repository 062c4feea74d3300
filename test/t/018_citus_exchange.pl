# The Citus exchange (docs/citus.md, src/aggs/citus_exchange.c): an
# ungrouped percentile query over one hash-distributed table runs as rounds
# of counts, and only the values near the wanted ranks reach the
# coordinator.  A coordinator and two workers on this machine, as in
# 015_citus.pl; skipped when the server under test has no citus extension.
#
# - Answers equal the built-ins' on the same data (each side a query of its
#   own), for every type with a typed twin, with NULLs, NaN, -0, heavy
#   duplicates, WHERE, no rows; percentile_cont's two rows in different
#   buckets; with few levels (the default) and many (the test hook
#   gpuselect.test_citus_gather_limit).  Where ranks fall among equal -0
#   and +0 the built-in's order is its sort's accident: there the exchange
#   is compared with the partial aggregates (gpuselect's order, -0 first).
# - The plans: EXPLAIN shows gs_citus_exchange; GROUP BY, volatile quals
#   and gpuselect.citus_exchange = off keep the partial aggregates; a
#   counts round is a histogram per shard (gs_citus_histogram), or GROUP BY
#   the bucket where the buckets outnumber the rows.
# - The first counts round and the gather by shard scans
#   (gs_citus_shard_histogram and gs_citus_shard_keys through
#   master_run_on_worker, a few shards a connection,
#   src/aggs/citus_shard_round.c): used for each key type, as the built-in;
#   with a WHERE (evaluated on the shards); one shard a connection, and one
#   worker a connection, as well; today's rounds after the transaction's
#   own DELETE, UPDATE or TRUNCATE (no wait on its own lock:
#   statement_timeout), under REPEATABLE READ (a concurrent DELETE the
#   snapshot must not see), with row-level security; the column found by
#   name on shards a split made after a column was dropped; a write between
#   the shard scans' counts and gather seen (every value gathered); a worker
#   stopped before the gather: a clean ERROR.
# - The bytes: today's (Citus's counter in EXPLAIN ANALYZE with the
#   exchange off) and the exchange's (its own report, and Citus's counter
#   over its rounds, re-run one by one); printed; the exchange's a small
#   fraction of today's.
# - A worker stopped mid-exchange: a clean ERROR; with the worker back the
#   next query answers right.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my ($have) = psql_value(q{SELECT count(*) FROM pg_available_extensions WHERE name = 'citus'});
plan skip_all => 'no citus extension in this server (test/run-all.sh builds it for GS_CITUS_PG)'
  if $have == 0;

my @conf = ("shared_preload_libraries = 'citus'", "session_preload_libraries = 'gpuselect'",
	'max_parallel_workers_per_gather = 0', "citus.shard_count = 8");
my @nodes = GsTest::citus_cluster_start(@conf);
END { GsTest::citus_cluster_stop(\@nodes) if @nodes; }

# run SQL on node $n (0: coordinator)
sub on { return GsTest::citus_on(\@nodes, @_); }

# the second worker stopped at once (immediate), and started again: then
# the cluster answers
sub worker_stop
{
	my $w = $nodes[2]{h};
	GsTest::_quiet(GsTest::_as_server_user("$w->{bindir}/pg_ctl", '-D', "$w->{dir}/data", '-m', 'immediate', '-w', 'stop'));
}
sub worker_start
{
	my $w = $nodes[2]{h};
	GsTest::_quiet(GsTest::_as_server_user("$w->{bindir}/pg_ctl", '-D', "$w->{dir}/data", '-l', $w->{log}, '-w', 'start')) == 0
	  or BAIL_OUT('worker restart failed');
	ok(GsTest::wait_for(sub { my ($r) = on(0, 'SELECT count(*) FROM xt', may_fail => 1); $r == 0 }, 30),
		'the cluster answers again');
}

# the grouped exchange's spools on the workers (src/scan/shard_spool.c)
sub spool_paths { my ($n) = @_; return glob("$nodes[$n]{h}{dir}/data/base/pgsql_tmp/pgsql_tmpgpuselect_spool.*"); }
sub spool_files
{
	my $c = 0;
	$c += on($_, "SELECT count(*) FROM pg_ls_tmpdir() WHERE name LIKE 'pgsql_tmpgpuselect_spool.%';") for (1, 2);
	return $c;
}

# $sql in the background on the coordinator, then a wait until the
# coordinator's log (from now on) matches $until; the background psql
sub coordinator_bg
{
	my ($sql, $until, $what) = @_;
	my $log_from = -s $nodes[0]{h}{log};
	my $bg;
	{
		local $ENV{PGHOST} = $nodes[0]{host};
		local $ENV{PGPORT} = $nodes[0]{port};
		$bg = GsTest::psql_bg($sql);
	}
	ok(GsTest::wait_for(sub { substr(`cat $nodes[0]{h}{log}`, $log_from) =~ $until }, 60), $what);
	return $bg;
}

# every twin type, NULLs, NaN, -0 (and +0) and duplicates; a heavy value
my $rows = 40000;
on(0, qq{
SELECT setseed(0.25);
CREATE TABLE xt AS
SELECT g::int8 AS id,
       CASE WHEN g % 101 = 0 THEN NULL WHEN g % 997 = 0 THEN 'NaN'::float8
            WHEN g % 499 = 0 THEN '-0'::float8 ELSE round((random() * 2e4 - 1e4)::numeric, 2)::float8 END AS f8,
       (g % 30011 - 15000)::int2 AS i2, ((g * 7919) % 100003)::int4 AS i4, (g::int8 * 104729) % 1000003 AS i8,
       CASE WHEN g % 7 = 0 THEN 42 ELSE (random() * 1e3)::float4 END AS f4,
       ((g % 5000)::numeric / 7)::numeric(12, 3) AS n,
       date '2026-01-01' + (g % 400) AS d, timestamp '2026-01-01' + g * interval '7 minutes' AS ts,
       timestamptz '2026-01-01 00:00+00' + g * interval '13 seconds' AS tz,
       (g % 3000) * interval '1 second' AS iv
FROM generate_series(1, $rows) g;
SELECT create_distributed_table('xt', 'id');
-- heavy duplicates: 80% one value, then -0 / +0 blocks, NaN, NULLs
CREATE TABLE dup AS
SELECT g::int8 AS id,
       CASE WHEN g % 10 < 8 THEN 42.5 WHEN g % 20 = 8 THEN 'NaN' WHEN g % 20 = 18 THEN NULL
            ELSE g % 1000 END::float8 AS f8,
       (g % 3)::numeric AS n, CASE WHEN g % 4 = 0 THEN '-0'::float8 WHEN g % 4 = 1 THEN 0 ELSE g END AS z
FROM generate_series(1, 30000) g;
SELECT create_distributed_table('dup', 'id');
});

my $fr = q{'{0, 0.1, 0.25, 0.5, 0.9, 0.99, 1}'::float8[]};
my $ex = "SET gpuselect.citus_exchange_min_rows = 0;\n";
# 101 fractions: as many splitter windows (each once overran its share of the
# splitters' array: a crash, malloc(): invalid size)
my $fr101 = "'{" . join(',', map { $_ / 100 } 0 .. 100) . "}'::float8[]";

# [exchange query, built-in query]
my @pairs = (
	(map { ["SELECT gpu_quantiles($_, $fr) FROM xt", "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY $_) FROM xt"] }
		qw(f8 i2 i4 i8 f4 n d ts tz iv)),
	["SELECT gpu_median(f8), gpu_median(iv), gpu_quantile(i4, 0.3), gpu_quantile(n, 1) FROM xt WHERE i2 > -7000",
		"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f8), percentile_cont(0.5) WITHIN GROUP (ORDER BY iv),"
		  . " percentile_disc(0.3) WITHIN GROUP (ORDER BY i4), percentile_disc(1) WITHIN GROUP (ORDER BY n) FROM xt WHERE i2 > -7000"],
	["SELECT gpu_quantiles(f8, $fr101) FROM xt", "SELECT percentile_disc($fr101) WITHIN GROUP (ORDER BY f8) FROM xt"],
	# aggregates inside expressions
	["SELECT gpu_median(f8) * 2, gpu_quantile(i4, 0.3)::text || 'x', (gpu_quantiles(tz, $fr))[3] FROM xt",
		"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) * 2, percentile_disc(0.3) WITHIN GROUP (ORDER BY i4)::text || 'x',"
		  . " (percentile_disc($fr) WITHIN GROUP (ORDER BY tz))[3] FROM xt"],
	# no rows; only NULLs; a NULL fraction; an empty and a 2-D fraction array
	["SELECT gpu_quantiles(f8, $fr), gpu_median(f8) FROM xt WHERE id < 0",
		"SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8), percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM xt WHERE id < 0"],
	["SELECT gpu_quantiles(f8, $fr) FROM xt WHERE f8 IS NULL",
		"SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM xt WHERE f8 IS NULL"],
	["SELECT gpu_quantiles(i8, '{0.5, NULL}'), gpu_quantiles(i8, '{}'), gpu_quantiles(d, '{{0.2, 0.4}, {0.6, 0.8}}') FROM xt",
		"SELECT percentile_disc('{0.5, NULL}'::float8[]) WITHIN GROUP (ORDER BY i8), percentile_disc('{}'::float8[]) WITHIN GROUP (ORDER BY i8),"
		  . " percentile_disc('{{0.2, 0.4}, {0.6, 0.8}}'::float8[]) WITHIN GROUP (ORDER BY d) FROM xt"],
	# heavy duplicates (and NaN, NULLs) answered by equality buckets
	["SELECT gpu_quantiles(f8, $fr), gpu_quantiles(n, $fr) FROM dup",
		"SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8), percentile_disc($fr) WITHIN GROUP (ORDER BY n) FROM dup"],
	# the built-ins' syntax under accelerate_builtins: DESC, cont, interval
	["SET gpuselect.accelerate_builtins = on; SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY i8 DESC),"
		  . " percentile_cont($fr) WITHIN GROUP (ORDER BY f8), percentile_cont(0.37) WITHIN GROUP (ORDER BY iv DESC),"
		  . " percentile_cont(0.123) WITHIN GROUP (ORDER BY f4) FROM xt WHERE d > '2026-02-01'",
		"SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY i8 DESC), percentile_cont($fr) WITHIN GROUP (ORDER BY f8),"
		  . " percentile_cont(0.37) WITHIN GROUP (ORDER BY iv DESC), percentile_cont(0.123) WITHIN GROUP (ORDER BY f4)"
		  . " FROM xt WHERE d > '2026-02-01'"],
	["SET gpuselect.accelerate_builtins = on; SELECT percentile_cont($fr) WITHIN GROUP (ORDER BY iv),"
		  . " percentile_disc(0.77) WITHIN GROUP (ORDER BY n DESC) FROM xt",
		"SELECT percentile_cont($fr) WITHIN GROUP (ORDER BY iv), percentile_disc(0.77) WITHIN GROUP (ORDER BY n DESC) FROM xt"],
);

for my $limit (12288, 3)
{
	for my $p (@pairs)
	{
		my ($gs, $bi) = @$p;
		my $want = on(0, "$bi;");
		my ($rc, $got) = on(0, "${ex}SET gpuselect.test_citus_gather_limit = $limit;\n$gs;", may_fail => 1);
		is($got, $want, "gather limit $limit, same as the built-in: $gs");
	}
}

# -0 and +0 in one block of ranks: as the partial aggregates order them
my $zq = "SELECT gpu_quantiles(z, '{0.05, 0.2, 0.3, 0.45, 0.5, 0.55}'), gpu_median(z) FROM dup";
my $today = on(0, "SET gpuselect.citus_exchange = off; $zq;");
like($today, qr/-0.*\b0\b/, 'the ranks fall on -0 and on +0');
for my $limit (12288, 3)
{
	is(on(0, "${ex}SET gpuselect.test_citus_gather_limit = $limit; $zq;"), $today,
		"gather limit $limit: -0 below +0, as the partial aggregates");
}

# ---- the first sample's estimate (the table's pages; no count round) ----
# Wide rows (a page holds ~16, the estimate assumes 145: the first sample
# comes back a tenth of its size and is taken again at the rate it implies);
# most rows deleted (the pages say 400 times the rows: the sample comes back
# nearly empty, a count round says how many); a table whose pages bound its
# rows under citus_exchange_min_rows (every value gathered at once, no count
# round); the default min_rows with a table and quals the estimate misleads
# about.  Each answers as the built-in; the rounds say which way it went.
on(0, q{
SELECT setseed(0.75);
CREATE TABLE wide AS SELECT g::int8 AS id, round((random() * 1e4)::numeric, 1)::float8 AS f8, repeat('w', 480) AS pad
FROM generate_series(1, 40000) g;
SELECT create_distributed_table('wide', 'id');
CREATE TABLE gone AS SELECT g::int8 AS id, (g * 7919 % 100003)::float8 AS f8 FROM generate_series(1, 160000) g;
SELECT create_distributed_table('gone', 'id');
DELETE FROM gone WHERE id % 400 <> 0;
CREATE TABLE tiny AS SELECT g::int8 AS id, (g % 77)::int4 AS i4 FROM generate_series(1, 3000) g;
SELECT create_distributed_table('tiny', 'id');
});
sub rounds_of
{
	my ($sql) = @_;
	my $out = on(0, "SET client_min_messages = debug2; SET gpuselect.debug = on; $sql;");
	return ($out, [ $out =~ /Citus exchange round: (SELECT .*)$/mg ]);
}
for my $e (["SELECT gpu_quantiles(f8, $fr) FROM wide", "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM wide",
		qr/TABLESAMPLE SYSTEM.*\n(.*\n)*.*TABLESAMPLE SYSTEM/, 'wide rows: the first sample taken again', $ex],
	["SELECT gpu_quantiles(f8, $fr) FROM gone", "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM gone",
		qr/round: SELECT count\(f8\) FROM public\.gone/, 'most rows deleted: a count round', $ex],
	["SELECT gpu_quantiles(f8, $fr) FROM gone", "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM gone",
		qr/400 values, all gathered \(fewer values than/, 'most rows deleted, default min_rows: counted, then gathered', ''],
	["SELECT gpu_quantiles(i4, $fr) FROM tiny", "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY i4) FROM tiny",
		qr/3000 values, all gathered \(fewer values than .*\); 2 rounds/, 'a table of a few pages: gathered at once', ''],
	["SELECT gpu_quantiles(f8, $fr) FROM xt WHERE i4 < 900", "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM xt WHERE i4 < 900",
		qr/round: SELECT count\(f8\) FROM public\.xt WHERE/, 'selective quals: the sample says few, a count round', ''])
{
	my ($gs, $bi, $rounds_re, $what, $pre) = @$e;
	my ($out, $rounds) = rounds_of("$pre$gs");
	like($out . "\n" . join("\n", @$rounds), $rounds_re, $what);
	is(on(0, "$pre$gs;"), on(0, "$bi;"), "$what: same as the built-in");
}
# in a transaction, after a write of its own (the size round runs in a
# subtransaction: its failure must not be the query's): what the transaction sees
is(on(0, "BEGIN; INSERT INTO xt (id, f8) SELECT g, g * 1000.5 FROM generate_series(100001, 101000) g;"
	  . " ${ex}SELECT gpu_quantiles(f8, $fr) FROM xt; ROLLBACK;"),
	on(0, "BEGIN; INSERT INTO xt (id, f8) SELECT g, g * 1000.5 FROM generate_series(100001, 101000) g;"
	  . " SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM xt; ROLLBACK;"),
	'in a transaction after its own write: same as the built-in');
# ---- the first counts round and the gather by shard scans (src/aggs/citus_shard_round.c) ----
# C page loops over the shards (gs_citus_shard_histogram, then
# gs_citus_shard_keys) fanned out by master_run_on_worker, whose connections
# are outside this transaction: used where that changes nothing, today's
# distributed queries elsewhere.  The report line's detail says which; every
# answer as the built-in's.
my $sdbg = "SET client_min_messages = notice; SET gpuselect.debug = on;";
my $by_shards = qr/The first counts round (and the gather )?by shard scans\./;
my $both_by_shards = qr/The first counts round and the gather by shard scans\./;
# the gather right after the first level, whatever the random sample left
# (at the default limit a level sometimes leaves more than it: a second
# level, by a distributed query, and the gather with it)
my $one = "SET gpuselect.test_citus_gather_limit = 40000;";
sub answer_of { my ($out) = @_; my ($a) = $out =~ /^\s*(\{.*\})\s*$/m; return $a // "none in: $out"; }
for my $c (qw(f8 i2 i4 i8 f4 d ts tz))
{
	my $out = on(0, "$ex$sdbg$one SELECT gpu_quantiles($c, $fr) FROM xt;");
	# d, f4, i2 and tz repeat values: where the sample gives every rank a
	# bucket of one value, nothing is left to gather
	like($out, $c =~ /^(f8|i4|i8|ts)$/ ? $both_by_shards : $by_shards,
		"$c: the first counts round (and the gather) by shard scans");
	like($out, qr/\d+ values, 1 levels/, "$c: by one level");
	is(answer_of($out), on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY $c) FROM xt;"),
		"$c, by shard scans: same as the built-in");
}
for my $per (0, 1)
{
	my $q = "SET gpuselect.citus_exchange_scans_per_node = $per; SELECT gpu_quantiles(f8, $fr), gpu_quantile(i4, 0.3) FROM xt;";
	like(on(0, "$ex$sdbg$one $q"), $both_by_shards, "scans_per_node = $per: by shard scans");
	is(on(0, "$ex $q"), on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8), percentile_disc(0.3) WITHIN GROUP (ORDER BY i4) FROM xt;"),
		"scans_per_node = $per: same as the built-in");
}
{
	my $rounds = on(0, "SET client_min_messages = debug2; $one ${ex}SELECT gpu_quantiles(f8, $fr) FROM xt;");
	# 8 shards on 2 workers, 4 connections each at most (the default): 8 commands, one shard each
	like($rounds, qr/round: SELECT success, result FROM pg_catalog\.master_run_on_worker\('\{[^}]*\}'::pg_catalog\.text\[\], '\{[^}]*\}'::integer\[\], '\{"SELECT public\.gs_citus_shard_histogram\(ARRAY\[''public\.xt_\d+''\]::pg_catalog\.regclass\[\], ''f8''/,
		'the counts round: gs_citus_shard_histogram fanned out by master_run_on_worker');
	like($rounds, qr/round: SELECT success, result FROM pg_catalog\.master_run_on_worker\(.*gs_citus_shard_keys\(ARRAY\[/,
		'the gather: gs_citus_shard_keys fanned out by master_run_on_worker');
	my ($conns) = $rounds =~ /master_run_on_worker\('\{([^}]*)\}'/;
	my @conns = split /,/, $conns // '';
	is(scalar(@conns), 8, 'a connection a shard at 4 shards a worker (scans_per_node 4)');
	$rounds = on(0, "SET client_min_messages = debug2; SET gpuselect.citus_exchange_scans_per_node = 1; ${ex}SELECT gpu_quantiles(f8, $fr) FROM xt;");
	($conns) = $rounds =~ /master_run_on_worker\('\{([^}]*)\}'/;
	@conns = split /,/, $conns // '';
	is(scalar(@conns), 2, 'scans_per_node 1: a connection a worker');
}
like(on(0, "$ex$sdbg SET gpuselect.citus_exchange_shard_scans = off; SELECT gpu_quantiles(f8, $fr) FROM xt;"),
	qr/The counts by a distributed query: gpuselect\.citus_exchange_shard_scans is off/, 'off: the distributed query');
# a WHERE that keeps most rows: parsed against each shard and evaluated on
# its tuples; one that keeps few (under a fifth, by the sample): the
# distributed rounds, which then spend little on the rows it drops
for my $w ("i4 > 0", "i4 % 7 <> 0 AND (d > date '2026-01-05' OR f8 IS NULL) AND abs(i2) < 14000", "f8 > -9000 OR f8 = 'NaN'")
{
	for my $c (qw(f8 ts))
	{
		my $out = on(0, "$ex$sdbg$one SELECT gpu_quantiles($c, $fr) FROM xt WHERE $w;");
		like($out, $both_by_shards, "WHERE $w, $c: by shard scans");
		is(answer_of($out), on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY $c) FROM xt WHERE $w;"),
			"WHERE $w, $c: same as the built-in");
	}
}
{
	my $w = "i4 < 5000 OR f8 = 'NaN'";
	# 2000 values: counted (not gathered at once) under a gather limit of 1000
	my $out = on(0, "$ex$sdbg SET gpuselect.test_citus_gather_limit = 1000; SELECT gpu_quantiles(f8, $fr) FROM xt WHERE $w;");
	like($out, qr/The counts by a distributed query: a WHERE that keeps under a fifth of the rows/,
		"WHERE $w (5% of the rows): the distributed rounds");
	is(answer_of($out), on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM xt WHERE $w;"),
		"WHERE $w: same as the built-in");
}
# a transaction that wrote to the table: the shard scans would not see its
# writes (nor, after its TRUNCATE, get past its lock: statement_timeout
# stops a wait instead of hanging the test)
on(0, q{
SELECT setseed(0.3);
CREATE TABLE tw AS SELECT g::int8 AS id, round((random() * 1e4)::numeric, 1)::float8 AS f8 FROM generate_series(1, 60000) g;
SELECT create_distributed_table('tw', 'id');
});
for my $w (["DELETE FROM tw WHERE id % 3 = 0 OR f8 > 8000;", 'a DELETE'],
	["UPDATE tw SET f8 = -f8 WHERE id % 2 = 0;", 'an UPDATE'],
	["TRUNCATE tw; INSERT INTO tw SELECT g, g % 1777 FROM generate_series(1, 30000) g;", 'TRUNCATE, then an INSERT'])
{
	my ($write, $what) = @$w;
	my $pre = "SET statement_timeout = '60s'; BEGIN; $write";
	my ($rc, $out) = on(0, "$pre $ex$sdbg SELECT gpu_quantiles(f8, $fr) FROM tw; ROLLBACK;", may_fail => 1);
	is($rc, 0, "after $what in the transaction: it answers (no wait on its own lock)") or diag($out);
	like($out, qr/The counts by a distributed query: this transaction holds a lock above ACCESS SHARE/,
		"after $what: today's round");
	unlike($out, qr/all gathered/, "after $what: by levels, the rounds agreeing");
	is(answer_of($out), on(0, "$pre SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM tw; ROLLBACK;"),
		"after $what: same as the built-in in the same transaction (its own writes seen)");
}
like(on(0, "BEGIN; SELECT count(*) FROM tw; $ex$sdbg SELECT gpu_quantiles(f8, $fr) FROM tw; COMMIT;"), $by_shards,
	'a transaction that only read the table: shard scans');
# REPEATABLE READ: the transaction's snapshot predates a concurrent DELETE;
# shard scans (new connections, new snapshots) would count without it
{
	my $bg;
	{
		local $ENV{PGHOST} = $nodes[0]{host};
		local $ENV{PGPORT} = $nodes[0]{port};
		$bg = GsTest::psql_bg("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM tw; SELECT 'rr_waits', pg_sleep(4);"
			  . " $ex$sdbg SELECT gpu_quantiles(f8, $fr) FROM tw; SELECT 'rr_builtin', percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM tw; COMMIT;");
	}
	ok(GsTest::wait_for(sub { on(0, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%rr_waits%' AND wait_event = 'PgSleep'") == 1 }, 60),
		'REPEATABLE READ: the transaction has its snapshot');
	on(0, "DELETE FROM tw WHERE f8 < 5000;");
	my ($rc, $out) = GsTest::psql_wait($bg);
	like($out, qr/The counts by a distributed query: isolation above READ COMMITTED/, 'REPEATABLE READ: today\'s round');
	unlike($out, qr/all gathered/, 'REPEATABLE READ: by levels, the rounds agreeing');
	my ($builtin) = $out =~ /rr_builtin\|(\{.*\})/;
	is(answer_of($out), $builtin, 'REPEATABLE READ: same as the built-in in the same transaction');
	isnt($builtin, on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM tw;"),
		'REPEATABLE READ: which did not see the concurrent DELETE');
}
# row-level security: the planner keeps the partial aggregates (the query
# has row security); a hand-made exchange call runs today's round, whose
# queries apply the policies (a role they restrict; the superuser too)
on(0, q{
CREATE TABLE rl AS SELECT g::int8 AS id, (g * 7919 % 100003)::float8 AS f8 FROM generate_series(1, 40000) g;
SELECT create_distributed_table('rl', 'id');
CREATE ROLE gs_rls_user LOGIN;
GRANT SELECT ON rl TO gs_rls_user;
ALTER TABLE rl ENABLE ROW LEVEL SECURITY;
CREATE POLICY rl_some ON rl FOR SELECT TO gs_rls_user USING (f8 < 60000);
});
for my $role ('', 'SET ROLE gs_rls_user;')
{
	my $bi = on(0, "$role SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM rl;");
	is(on(0, "$role $ex SELECT gpu_quantiles(f8, $fr) FROM rl;"), $bi, "row-level security ($role): same as the built-in");
	my $out = on(0, "$role $ex$sdbg SELECT gs_citus_exchange('rl', 'f8', NULL, 'disc', $fr, NULL::float8[]);");
	like($out, qr/The counts by a distributed query: row-level security is enabled on the table/,
		"row-level security ($role), the exchange called by hand: today's round");
	is(answer_of($out), $bi, "row-level security ($role), the exchange called by hand: same as the built-in");
}
# a column dropped before the counted one, then shards made after the drop
# (a split): the old shards' f8 is attribute 3, the new ones' 2
on(0, q{
CREATE TABLE dc AS SELECT g::int8 AS id, g AS gone, ((g * 104729) % 1000003)::float8 AS f8 FROM generate_series(1, 20000) g;
SELECT create_distributed_table('dc', 'id', colocate_with => 'none');
ALTER TABLE dc DROP COLUMN gone;
});
my ($rc_split, $split) = on(0, "SET citus.local_hostname = '$nodes[0]{host}'; SELECT citus_split_shard_by_split_points((SELECT min(shardid) FROM pg_dist_shard WHERE logicalrelid = 'dc'::regclass),"
	  . " ARRAY[(SELECT ((shardminvalue::int8 + shardmaxvalue::int8) / 2)::text FROM pg_dist_shard WHERE shardid = (SELECT min(shardid) FROM pg_dist_shard WHERE logicalrelid = 'dc'::regclass))],"
	  . " ARRAY[(SELECT nodeid FROM pg_dist_node WHERE nodeport = $nodes[1]{port}), (SELECT nodeid FROM pg_dist_node WHERE nodeport = $nodes[2]{port})], 'block_writes');", may_fail => 1);
diag("split: $split") if $rc_split != 0;
my $attnos = join(',', sort(split /\n/, on(0, "SELECT DISTINCT result FROM run_command_on_shards('dc', \$\$SELECT attnum FROM pg_attribute WHERE attrelid = '%s'::regclass AND attname = 'f8'\$\$);")));
is($attnos, $rc_split == 0 ? '2,3' : '3', "dc's f8 is attribute $attnos on its shards");
{
	my $out = on(0, "$ex$sdbg SELECT gpu_quantiles(f8, $fr), gpu_median(f8) FROM dc;");
	like($out, $by_shards, 'a dropped column before the counted one: shard scans');
	my $both = on(0, "$ex SELECT gpu_quantiles(f8, $fr), gpu_median(f8) FROM dc;");
	is($both, on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8), percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM dc;"),
		'a dropped column before the counted one: same as the built-in');
}

my ($plain, $prounds) = rounds_of("${ex}SELECT gpu_quantiles(f8, $fr) FROM xt");
ok(!grep({ /SELECT count\(f8\)/ } @$prounds), 'a table the estimate is right about: no count round')
  or diag(join("\n", @$prounds));
like($plain, qr/\d+ values, \d+ levels; \d+ rounds/, 'by levels');

# ---- the plans ----
my $plan = on(0, "${ex}EXPLAIN (VERBOSE, COSTS OFF) SELECT gpu_quantiles(f8, $fr) FROM xt WHERE i4 > 10;");
like($plan, qr/gs_citus_exchange\('xt'::regclass, 'f8'::text, '\(i4 > 10\)'::text, 'disc'::text/,
	'EXPLAIN shows the exchange, its value and quals');
$plan = on(0, "SET client_min_messages = debug1; EXPLAIN (COSTS OFF) SELECT gpu_median(f8) FROM xt;", may_fail => 1);
like($plan, qr/Citus exchange: 1 aggregate\(s\) over "xt"/, 'a DEBUG line says the exchange runs');
for my $q ("SET gpuselect.citus_exchange = off; EXPLAIN (VERBOSE, COSTS OFF) SELECT gpu_quantiles(f8, $fr) FROM xt",
	"EXPLAIN (VERBOSE, COSTS OFF) SELECT gpu_quantiles(f8, $fr) FROM xt GROUP BY i2 % 3 HAVING count(*) > 0",
	"EXPLAIN (VERBOSE, COSTS OFF) SELECT gpu_quantiles(f8, $fr), gpu_median(f8) FROM xt GROUP BY i2 % 3",
	"EXPLAIN (VERBOSE, COSTS OFF) SELECT gpu_quantiles(n, $fr) FROM xt GROUP BY i2 % 3",
	"EXPLAIN (VERBOSE, COSTS OFF) SELECT gpu_quantiles(f8, $fr) FROM xt WHERE random() < 2",
	"EXPLAIN (VERBOSE, COSTS OFF) SELECT gpu_quantiles(f8, $fr), count(*) FROM xt")
{
	like(on(0, "$q;"), qr/worker_binary_partial_agg|worker_partial_agg/, "partial aggregates kept: $q");
}
# the distribution column pinned: Citus runs the whole query on one shard
$plan = on(0, "${ex}EXPLAIN (VERBOSE, COSTS OFF) SELECT gpu_quantiles(f8, $fr) FROM xt WHERE id = 5 AND i4 > 0;");
like($plan, qr/Task Count: 1/, 'WHERE id = 5: one task, the whole query on a shard');
unlike($plan, qr/gs_citus_exchange/, 'and no exchange');

# ---- GROUP BY one expression: the grouped exchange ----
# groups of many values (levels), of a few (gathered whole), of one, a NULL
# group, a group whose values are all NULL, heavy duplicates
on(0, q{
SELECT setseed(0.125);
CREATE TABLE gt AS
SELECT g::int8 AS id,
       timestamptz '2026-03-01 00:00+00' + g * interval '3 seconds' AS ts,
       CASE WHEN g % 97 = 0 THEN NULL WHEN g = 7 THEN 100 WHEN g % 1000 = 3 THEN 200 ELSE g % 7 END AS k,
       CASE WHEN g % 13 = 0 OR g % 1000 = 3 THEN NULL WHEN g % 5 = 0 THEN 42.5
            ELSE round((random() * 1e4)::numeric, 2)::float8 END AS lat,
       (g * 7919) % 100003 AS i4, date '2026-01-01' + (g % 300) AS d
FROM generate_series(1, 30000) g;
SELECT create_distributed_table('gt', 'id');
});
my @gpairs = (
	["SELECT date_trunc('hour', ts), gpu_quantiles(lat, $fr) FROM gt GROUP BY 1 ORDER BY 1",
		"SELECT date_trunc('hour', ts), percentile_disc($fr) WITHIN GROUP (ORDER BY lat) FROM gt GROUP BY 1 ORDER BY 1"],
	["SELECT k, gpu_quantiles(lat, $fr101) FROM gt GROUP BY k ORDER BY k NULLS FIRST",
		"SELECT k, percentile_disc($fr101) WITHIN GROUP (ORDER BY lat) FROM gt GROUP BY k ORDER BY k NULLS FIRST"],
	["SELECT gpu_median(lat), k FROM gt GROUP BY k ORDER BY k NULLS FIRST",
		"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lat), k FROM gt GROUP BY k ORDER BY k NULLS FIRST"],
	["SELECT k % 3 = 0, gpu_quantile(i4, 0.3) * 2 FROM gt WHERE lat > 100 GROUP BY k % 3 = 0 ORDER BY 1",
		"SELECT k % 3 = 0, percentile_disc(0.3) WITHIN GROUP (ORDER BY i4) * 2 FROM gt WHERE lat > 100 GROUP BY k % 3 = 0 ORDER BY 1"],
	["SELECT d - date '2026-01-01' > 150, gpu_quantiles(d, $fr) FROM gt GROUP BY 1 ORDER BY 1",
		"SELECT d - date '2026-01-01' > 150, percentile_disc($fr) WITHIN GROUP (ORDER BY d) FROM gt GROUP BY 1 ORDER BY 1"],
	["SET gpuselect.accelerate_builtins = on; SELECT date_trunc('day', ts)::date AS day, percentile_cont(0.9) WITHIN GROUP (ORDER BY lat DESC)"
		  . " FROM gt GROUP BY day ORDER BY day",
		"SELECT date_trunc('day', ts)::date AS day, percentile_cont(0.9) WITHIN GROUP (ORDER BY lat DESC) FROM gt GROUP BY day ORDER BY day"],
	["SELECT k, gpu_quantiles(lat, $fr) FROM gt WHERE id < 0 GROUP BY k",
		"SELECT k, percentile_disc($fr) WITHIN GROUP (ORDER BY lat) FROM gt WHERE id < 0 GROUP BY k"],
);
# by shard scans where the group's type allows (an integer, date or
# timestamp: the hours, k, the days), and by the distributed rounds (shard
# scans off)
for my $set (['12288', ''], ['3', ''], ['3', 'SET gpuselect.citus_exchange_shard_scans = off;'])
{
	my ($limit, $off) = @$set;
	for my $p (@gpairs)
	{
		my ($gs, $bi) = @$p;
		my $want = on(0, "$bi;");
		my ($rc, $got) = on(0, "${ex}$off SET gpuselect.test_citus_gather_limit = $limit;\n$gs;", may_fail => 1);
		is($got, $want, "grouped, gather limit $limit, $off same as the built-in: $gs");
		# limit 3: every group of more than 3 values sampled and counted
		next if $limit != 3 || $gs =~ /id < 0/;
		my $rep = on(0, "${ex}$off SET gpuselect.test_citus_gather_limit = $limit; SET client_min_messages = notice; SET gpuselect.debug = on;\n$gs;");
		like($rep, qr/Citus exchange over public\.gt grouped by/, '  ran as the grouped exchange');
		unlike($rep, qr/today's plan/, '  not as the partial aggregates');
		if ($off) { unlike($rep, qr/by shard scans;/, '  not by shard scans') }
		elsif ($gs =~ /date_trunc|GROUP BY k ORDER/) { like($rep, qr/by shard scans;/, '  by shard scans') }
	}
}
# the rounds run on the shards: Citus's plan of a counts round, a
# histogram per shard (gs_citus_histogram through Citus's partial aggregate)
# (the distributed rounds: shard scans off; by shard scans the grouped
# rounds are gs_citus_shard_group_*, tested with the bytes below)
my ($rc3, $rounds) = on(0, "${ex}SET gpuselect.test_citus_gather_limit = 3; SET gpuselect.citus_exchange_shard_scans = off;"
	  . " SET client_min_messages = debug2; SELECT k, gpu_median(lat) FROM gt GROUP BY k;", may_fail => 1);
my ($counts_round) = $rounds =~ /Citus exchange round: (SELECT public\.gs_citus_histogram\(\(.*width_bucket\(public\.gs_citus_key.*)$/m;
ok(defined $counts_round, 'a counts round') or diag($rounds);
my $cplan = on(0, "EXPLAIN (VERBOSE, COSTS OFF) $counts_round;");
like($cplan, qr/Task Count: 8/, 'the counts round runs on the 8 shards');
like($cplan, qr/Query: SELECT worker_(binary_)?partial_agg\('public\.gs_citus_histogram\(integer\)'/,
	'and counts there, a histogram per shard');
unlike($cplan, qr/intermediate result|Subplan|repartition/i, 'nothing pulled to the coordinator first');
diag("a counts round's plan: $cplan");
# ungrouped: the first level's counts as histograms; a later level's, over
# fewer candidates than its buckets times the shards, GROUP BY the bucket
# (a histogram would be mostly zeros); the answers are checked above
($rc3, $rounds) = on(0, "${ex}SET gpuselect.test_citus_gather_limit = 3; SET gpuselect.citus_exchange_shard_scans = off;"
	  . " SET client_min_messages = debug2; SELECT gpu_quantiles(f8, $fr) FROM xt;", may_fail => 1);
like($rounds, qr/round: SELECT public\.gs_citus_histogram\(public\.gs_citus_bucket\(f8, /, 'ungrouped: a histogram round');
like($rounds, qr/round: SELECT public\.gs_citus_bucket\(f8, .*, count\(\*\) FROM .* GROUP BY 1$/m,
	'and a GROUP BY round where the buckets outnumber the rows');
$plan = on(0, "${ex}EXPLAIN (VERBOSE, COSTS OFF) SELECT date_trunc('hour', ts), gpu_median(lat) FROM gt GROUP BY 1;");
like($plan, qr/gs_citus_exchange_grouped\('gt'::regclass, 'lat'::text/, 'EXPLAIN shows the grouped exchange');
$plan = on(0, "${ex}EXPLAIN (VERBOSE, COSTS OFF) SELECT id, gpu_median(lat) FROM gt GROUP BY id;");
unlike($plan, qr/gs_citus_exchange/, 'GROUP BY the distribution column: left to Citus');

# hand-made calls: checked, clean ERRORs
for my $c (["'xt', 'f8', '', 'disc', '{0.5}', NULL::text", qr/unsupported result type text/],
	["'xt', 'n', '', 'disc', '{0.5}', NULL::float8", qr/the value is not of type double precision/],
	["'xt', 'f8', '', 'cont', '{0.5}', NULL::numeric", qr/unsupported result type numeric/],
	["'xt', 'f8 FROM xt; DROP TABLE xt; SELECT f8', '', 'disc', '{0.5}', NULL::float8", qr/ERROR/],
	["'xt', 'f8', '', 'disc', NULL, NULL::float8", qr/no fractions/])
{
	my ($rc, $out) = on(0, "SELECT gs_citus_exchange($c->[0]);", may_fail => 1);
	like($out, $c->[1], "gs_citus_exchange($c->[0]): an ERROR");
}
is(on(0, 'SELECT count(*) FROM xt'), $rows, 'the table is still there');

# ---- the bytes ----
# GS_TEST_CITUS_BIG_ROWS: the table's rows (for measuring by hand)
my $big = $ENV{GS_TEST_CITUS_BIG_ROWS} || 400000;
on(0, qq{
SELECT setseed(0.5);
CREATE TABLE big AS SELECT g::int8 AS id, round((random() * 2e4 - 1e4)::numeric, 2)::float8 AS f8,
       timestamptz '2026-03-01 00:00+00' + (g - 1) * interval '86400 seconds' / $big AS ts
FROM generate_series(1, $big) g;
SELECT create_distributed_table('big', 'id');
});
my $bq = "SELECT gpu_quantiles(f8, $fr) FROM big";
sub citus_bytes
{
	my ($out) = @_;
	my ($n, $unit) = $out =~ /Tuple data received from nodes: (\d+) (bytes|kB|MB)/ or return -1;
	return $n * ({ bytes => 1, kB => 1024, MB => 1024 * 1024 }->{$unit});
}
my $today_bytes = citus_bytes(on(0, "SET gpuselect.citus_exchange = off;"
	  . " EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $bq;"));
my $report = on(0, "SET client_min_messages = debug2; SET gpuselect.debug = on; $bq;");
my ($got_rows, $got_bytes) = $report =~ /exchange over public\.big: $big values, .* received (\d+) rows, (\d+) bytes/;
my ($count_bytes, $count_upper) = $report =~ /counts rounds: \d+ rows, (\d+) bytes as Citus combined them, at most (\d+) bytes/;
ok(defined $got_bytes && defined $count_upper, 'the exchange reports what it received') or diag($report);
my $upper = $got_bytes - $count_bytes + $count_upper;
# Citus's own counter over the same rounds, each re-run under EXPLAIN ANALYZE
my $citus_sum = 0;
for my $round ($report =~ /gpuselect: Citus exchange round: (SELECT .*)$/mg)
{
	next if $round =~ /pg_dist_shard/;
	my $b = citus_bytes(on(0, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $round;"));
	$citus_sum += $b if $b > 0;
}
is(on(0, "${ex}$bq;"), on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM big;"),
	"$big rows: same as the built-in");
diag(sprintf("coordinator received, $big float8 rows, 7 fractions: today %d bytes; the exchange %d bytes"
	  . " (its count, the counts rounds at most %d from the shards: %d bytes in all, %.2f%%);"
	  . " Citus's counter over its rounds re-run: %d bytes (%.2f%%)",
	$today_bytes, $got_bytes, $count_upper, $upper, 100 * $upper / $today_bytes,
	$citus_sum, 100 * $citus_sum / $today_bytes));
cmp_ok($today_bytes, '>', 3_000_000, "today every key travels ($today_bytes bytes)");
cmp_ok($upper, '<', $today_bytes / 20, 'the exchange receives under 5% of that');
cmp_ok($citus_sum, '<', $today_bytes / 20, "and so says Citus's counter over its rounds");

# grouped: 24 groups (hours) of ~16700 values, p50 / p90 / p99, with the
# exchange's rounds from groups of 10000 values on (by default, groups of
# fewer than citus_exchange_min_rows = 100000 values take today's plan, a
# sample of the pages says so before any groups round; where the sample
# would be a quarter of the pages, the groups round says so); and 400
# groups of 1000 values: today's plan (the bytes of the partial aggregates)
my $hq = "SELECT date_trunc('hour', ts), gpu_quantiles(f8, '{0.5, 0.9, 0.99}') FROM big GROUP BY 1 ORDER BY 1";
my $noshard = 'SET gpuselect.citus_exchange_shard_scans = off;';
{
	my $out = on(0, "$noshard SET client_min_messages = debug2; SET gpuselect.debug = on; $hq;");
	like($out, qr/24 groups, $big values, small groups by a sample: today's plan/,
		"grouped, shard scans off, groups under citus_exchange_min_rows (default): today's plan, by a sample");
	like($out, qr/round: SELECT count\(f8\) FROM public\.big TABLESAMPLE SYSTEM \(2\.32\d*\) GROUP BY \(date_trunc/,
		'  the sample: 2.32% of the pages');
	unlike($out, qr/round: SELECT \(date_trunc\('hour'::text, ts\)\), count\(f8\)/, '  no groups round');
	$out = on(0, "$noshard SET gpuselect.citus_exchange_min_rows = 9000; SET client_min_messages = debug2; SET gpuselect.debug = on; $hq;");
	like($out, qr/round: SELECT \(date_trunc\('hour'::text, ts\)\), count\(f8\)/,
		'min_rows 9000 (a sample of over a quarter of the pages): the groups round');
	unlike($out, qr/TABLESAMPLE/, '  and no sample');
}
# (the distributed rounds: shard scans off)
for my $g (["date_trunc('hour', ts)", 24, '/ 5', "$noshard SET gpuselect.citus_exchange_min_rows = 10000;"],
	["id % " . ($big / 1000), $big / 1000, '* 1.2', $noshard])
{
	my ($gexpr, $ng, $bound, $mr) = @$g;
	my $gq = "SELECT $gexpr, gpu_quantiles(f8, '{0.5, 0.9, 0.99}') FROM big GROUP BY 1 ORDER BY 1";
	my $gtoday = citus_bytes(on(0, "SET gpuselect.citus_exchange = off;"
		  . " EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $gq;"));
	my $grep = on(0, "$mr SET client_min_messages = debug2; SET gpuselect.debug = on; $gq;");
	my ($gng, $grows, $gbytes) = $grep =~ /exchange over public\.big grouped by .*: (\d+) groups, $big values[^;]*; \d+ rounds received (\d+) rows, (\d+) bytes/;
	my ($gcount, $gupper) = $grep =~ /counts rounds: \d+ rows, (\d+) bytes as Citus combined them, at most (\d+) bytes/;
	ok(defined $gbytes && $gng == $ng, "grouped by $gexpr: the exchange reports $ng groups") or diag($grep);
	# min_rows 10000: the sample (23.2% of the pages) says the groups are large
	like($grep, qr/TABLESAMPLE SYSTEM \(23\.2\d*\) GROUP BY .*\n(.*\n)*.*24 groups, $big values; \d+ rounds/, '  a sample said large groups: the exchange ran')
	  if $mr =~ /min_rows/;
	my $gsum = 0;
	for my $round ($grep =~ /gpuselect: Citus exchange round: (SELECT .*)$/mg)
	{
		next if $round =~ /pg_dist_shard/;
		my $b = citus_bytes(on(0, "SET gpuselect.citus_exchange = off; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $round;"));
		$gsum += $b if $b > 0;
	}
	is(on(0, "${ex}$gq;"),
		on(0, "SELECT $gexpr, percentile_disc('{0.5, 0.9, 0.99}'::float8[]) WITHIN GROUP (ORDER BY f8) FROM big GROUP BY 1 ORDER BY 1;"),
		"grouped by $gexpr, $big rows: same as the built-in");
	diag(sprintf("grouped by %s (%d groups), $big float8 rows, 3 fractions: today %d bytes;"
		  . " the exchange %d bytes (the counts rounds at most %d from the shards: %d in all, %.2f%%);"
		  . " Citus's counter over its rounds re-run: %d bytes (%.2f%%)",
		$gexpr, $ng, $gtoday, $gbytes, $gupper, $gbytes - $gcount + $gupper,
		100 * ($gbytes - $gcount + $gupper) / $gtoday, $gsum, 100 * $gsum / $gtoday));
	cmp_ok($gsum, '<', eval("$gtoday $bound"), "grouped by $gexpr: Citus's counter under today's $bound");
}

# ---- grouped by shard scans (src/aggs/citus_shard_groups.c) ----
# The default for a GROUP BY of an integer, date or timestamp expression:
# a sample, then gs_citus_shard_group_histogram (per group, the counts of
# common buckets) and gs_citus_shard_group_keys (per group, its ranks'
# buckets) fanned out like the ungrouped shard scans; what the coordinator
# receives (its own report; Citus's counter sees no master_run_on_worker
# rows) a fraction of today's.  Under a session time zone of +05:30 and
# -03:30, hours and days of a timestamptz as the built-in groups them on
# Citus (on the workers, in their connections' zone: the shard scans run
# there too); a WHERE; the NULL group.
# (at 400000 rows the sample, 8192 keys with their groups, is most of it)
for my $g (["date_trunc('hour', ts)", 24, 5], ["id % " . ($big / 1000), $big / 1000, 2])
{
	my ($gexpr, $ng, $div) = @$g;
	my $gq = "SELECT $gexpr, gpu_quantiles(f8, '{0.5, 0.9, 0.99}') FROM big GROUP BY 1 ORDER BY 1";
	my $gtoday = citus_bytes(on(0, "SET gpuselect.citus_exchange = off; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $gq;"));
	my $rep = on(0, "SET client_min_messages = debug2; SET gpuselect.debug = on; $gq;");
	my ($gbytes) = $rep =~ /grouped by .*: $ng groups, $big values, by shard scans; \d+ rounds received \d+ rows, (\d+) bytes/;
	ok(defined $gbytes, "grouped by $gexpr ($ng groups): by shard scans") or diag($rep);
	like($rep, qr/master_run_on_worker\(.*gs_citus_shard_group_spool\(ARRAY\[/, '  the counts: gs_citus_shard_group_spool');
	like($rep, qr/master_run_on_worker\(.*gs_citus_shard_group_spool_keys\(ARRAY\[/, '  the gather: gs_citus_shard_group_spool_keys');
	like($rep, qr/(\d+) of \1 connections gathered from their spools/, '  every connection gathered from its spool');
	is(spool_files(), 0, '  no spool left on the workers');
	diag(sprintf("grouped by shard scans, %s (%d groups), $big float8 rows, 3 fractions: today %d bytes, the exchange %d (%.2f%%)",
		$gexpr, $ng, $gtoday, $gbytes // -1, 100 * ($gbytes // 0) / $gtoday));
	cmp_ok($gbytes // 1e12, '<', $gtoday / $div, "  the exchange receives under 1/$div of today's bytes");
	my $gbi = on(0, "SELECT $gexpr, percentile_disc('{0.5, 0.9, 0.99}'::float8[]) WITHIN GROUP (ORDER BY f8) FROM big GROUP BY 1 ORDER BY 1;");
	is(on(0, "$gq;"), $gbi, "grouped by shard scans, $gexpr: same as the built-in");
	# without spools: the gather scans the shards again
	my $ns = on(0, "SET gpuselect.citus_exchange_spool = off; SET client_min_messages = debug2; SET gpuselect.debug = on; $gq;");
	like($ns, qr/master_run_on_worker\(.*gs_citus_shard_group_keys\(ARRAY\[/, '  spools off: the gather gs_citus_shard_group_keys');
	unlike($ns, qr/gs_citus_shard_group_spool/, '  and no spool');
	is(on(0, "SET gpuselect.citus_exchange_spool = off; $gq;"), $gbi, '  spools off: same as the built-in');
}
# no room for a spool on the workers (gpuselect.citus_exchange_spool_limit
# there): every gather scans its shards, and answers the same
sub spool_limit
{
	my ($v) = @_;
	for my $n (1, 2)
	{
		on($n, $v eq 'default' ? "ALTER SYSTEM RESET gpuselect.citus_exchange_spool_limit; SELECT pg_reload_conf();" :
			"ALTER SYSTEM SET gpuselect.citus_exchange_spool_limit = $v; SELECT pg_reload_conf();");
		my $want = $v eq 'default' ? '2GB' : $v;
		ok(GsTest::wait_for(sub { on($n, 'SHOW gpuselect.citus_exchange_spool_limit;') eq $want }, 30),
			"worker $n: gpuselect.citus_exchange_spool_limit = $want");
	}
}
spool_limit(0);
{
	my $gq = "SELECT date_trunc('hour', ts), gpu_quantiles(f8, '{0.5, 0.9, 0.99}') FROM big GROUP BY 1 ORDER BY 1";
	my $rep = on(0, "SET client_min_messages = debug2; SET gpuselect.debug = on; $gq;");
	like($rep, qr/ 0 of \d+ connections gathered from their spools/, 'spool_limit 0 on the workers: no gather from a spool');
	is(on(0, "$gq;"), on(0, "SELECT date_trunc('hour', ts), percentile_disc('{0.5, 0.9, 0.99}'::float8[]) WITHIN GROUP (ORDER BY f8) FROM big GROUP BY 1 ORDER BY 1;"),
		'  same as the built-in');
	is(spool_files(), 0, '  no spool on the workers');
}
spool_limit('default');
for my $zone ('Asia/Kolkata', 'America/St_Johns')
{
	for my $q (["date_trunc('hour', ts)", "gpu_quantiles(f8, '{0.25, 0.5}')", "percentile_disc('{0.25, 0.5}'::float8[]) WITHIN GROUP (ORDER BY f8)", ''],
		["date_trunc('day', ts)::date", 'gpu_median(f8)', 'percentile_cont(0.5) WITHIN GROUP (ORDER BY f8)', 'WHERE f8 > -9000'],
		["CASE WHEN id % 50 = 0 THEN NULL ELSE date_trunc('hour', ts) END", 'gpu_quantile(f8, 0.9)',
			'percentile_disc(0.9) WITHIN GROUP (ORDER BY f8)', ''])
	{
		my ($gexpr, $agg, $bi, $w) = @$q;
		my $pre = "SET TimeZone = '$zone';";
		my $out = on(0, "$pre $sdbg SELECT $gexpr, $agg FROM big $w GROUP BY 1 ORDER BY 1 NULLS FIRST;");
		like($out, qr/groups, \d+ values, by shard scans/, "$zone, $gexpr $w: by shard scans");
		my $got = join("\n", grep { !/(NOTICE|DETAIL|LOCATION):/ } split /\n/, $out);
		is($got, on(0, "$pre SELECT $gexpr, $bi FROM big $w GROUP BY 1 ORDER BY 1 NULLS FIRST;"),
			"$zone, $gexpr $w: same as the built-in");
	}
}
like(on(0, "$noshard $sdbg $hq;"), qr/24 groups, $big values, small groups by a sample/, 'shard scans off: the grouped rounds as before');

# ---- between the shard scans' counts and their gather ----
# The test hook gpuselect.test_citus_gather_pause holds the exchange before
# its gather.  A write there (the sign of half the values) makes the gather's
# keys disagree with the counts: every value gathered, the answer the
# table's after the write.  A worker stopped there: the gather by shard
# scans fails, the distributed query's gather then a clean ERROR.
sub exchange_paused_bg
{
	my ($sql) = @_;
	return coordinator_bg("${ex}SET log_min_messages = debug2; SET client_min_messages = notice; SET gpuselect.debug = on;"
		  . " $one SET gpuselect.test_citus_gather_pause = 4000; $sql;",
		qr/the gather waits 4000 ms/, 'the exchange waits before its gather');
}
{
	my $bg = exchange_paused_bg("SELECT gpu_quantiles(f8, $fr) FROM xt");
	on(0, "UPDATE xt SET f8 = -f8 WHERE id % 2 = 0;");
	my ($rc, $out) = GsTest::psql_wait($bg);
	like($out, qr/all gathered \(the rounds' counts disagreed/, 'a write after the shard scans\' counts: every value gathered');
	like($out, $by_shards, '  the counts by shard scans');
	is(answer_of($out), on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM xt;"),
		'  the answer is the table after the write (the built-in)');
	on(0, "UPDATE xt SET f8 = -f8 WHERE id % 2 = 0;");
}
{
	my $bg = exchange_paused_bg("SELECT gpu_quantiles(f8, $fr) FROM xt");
	worker_stop();
	my ($rc, $out) = GsTest::psql_wait($bg);
	isnt($rc, 0, 'a worker stopped before the gather by shard scans: the query fails');
	like($out, qr/ERROR:/, '  with an ERROR');
	unlike($out, qr/server closed the connection unexpectedly|terminated by signal/, '  the coordinator did not crash');
	diag("a worker stopped before the gather: $out");
	worker_start();
	my $out2 = on(0, "$ex$sdbg$one SELECT gpu_quantiles(f8, $fr) FROM xt;");
	like($out2, $both_by_shards, '  then the next exchange by shard scans');
	is(answer_of($out2), on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM xt;"), '  answers right');
}
# the same between the grouped shard scans' counts and gather.  With the
# spools (the default) the gather reads the counts' rows: the answer is the
# table's before the write, by shard scans.  Without them the keys disagree
# with the counts, the rounds run again from the start (the answer the
# table's after the write).  A worker stopped: a clean ERROR.  A query
# cancelled there leaves its spools on the workers; the next spool made
# there deletes them once GS_SPOOL_STALE_SECS (300 s) old.
{
	my $gq = "SELECT date_trunc('hour', ts), gpu_quantiles(lat, $fr) FROM gt GROUP BY 1 ORDER BY 1";
	my $gbi = "SELECT date_trunc('hour', ts), percentile_disc($fr) WITHIN GROUP (ORDER BY lat) FROM gt GROUP BY 1 ORDER BY 1";
	my $before = on(0, "$gbi;");
	my $bg = exchange_paused_bg($gq);
	on(0, "UPDATE gt SET lat = -lat WHERE id % 2 = 0;");
	my ($rc, $out) = GsTest::psql_wait($bg);
	like($out, qr/by shard scans;/, 'grouped: a write after the shard scans\' counts: still by them (the spools)');
	like($out, qr/(\d+) of \1 connections gathered from their spools/, '  every connection gathered from its spool');
	my $got = join("\n", grep { !/(NOTICE|DETAIL|LOCATION|DEBUG|LOG|CONTEXT):/ } split /\n/, $out);
	is($got, $before, '  the answer is the table before the write (the counts\' snapshot)');
	isnt($before, on(0, "$gbi;"), '  (which the write changed)');
	on(0, "UPDATE gt SET lat = -lat WHERE id % 2 = 0;");
	$bg = exchange_paused_bg("SET gpuselect.citus_exchange_spool = off; $gq");
	on(0, "UPDATE gt SET lat = -lat WHERE id % 2 = 0;");
	($rc, $out) = GsTest::psql_wait($bg);
	unlike($out, qr/by shard scans;/, 'grouped, spools off: a write after the shard scans\' counts: not answered by them');
	$got = join("\n", grep { !/(NOTICE|DETAIL|LOCATION|DEBUG|LOG|CONTEXT):/ } split /\n/, $out);
	is($got, on(0, "$gbi;"), '  the answer is the table after the write (the built-in)');
	on(0, "UPDATE gt SET lat = -lat WHERE id % 2 = 0;");
	is(spool_files(), 0, '  no spool left on the workers');
	# cancelled between the rounds: its spools stay, until old enough
	$bg = exchange_paused_bg($gq);
	on(0, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%gpu_quantiles(lat,%' AND pid <> pg_backend_pid();");
	($rc, $out) = GsTest::psql_wait($bg);
	like($out, qr/canceling statement due to user request/, 'grouped, cancelled before the gather');
	my $left = spool_files();
	cmp_ok($left, '>', 0, "  its spools stay on the workers ($left)");
	is(on(0, "$gq;"), on(0, "$gbi;"), '  the next query answers right');
	is(spool_files(), $left, '  and leaves those spools (younger than 300 s)');
	my $old = time - 301;
	for my $n (1, 2) { utime($old, $old, spool_paths($n)); }
	is(on(0, "$gq;"), on(0, "$gbi;"), '  with them 301 s old, the next query answers right');
	is(spool_files(), 0, '  and its spools deleted them');
	$bg = exchange_paused_bg($gq);
	worker_stop();
	($rc, $out) = GsTest::psql_wait($bg);
	isnt($rc, 0, 'grouped: a worker stopped before the gather by shard scans: the query fails');
	like($out, qr/ERROR:/, '  with an ERROR');
	unlike($out, qr/server closed the connection unexpectedly|terminated by signal/, '  the coordinator did not crash');
	worker_start();
	like(on(0, "$ex$sdbg $gq;"), qr/by shard scans;/, '  then the next grouped exchange by shard scans');
	is(on(0, "$ex$gq;"), on(0, "$gbi;"), '  answers right');
}
# ---- a worker stopped mid-exchange ----
# a stable (not volatile: the exchange takes it) slow qual, ~1 s a round
# (Citus creates it on the workers too)
on(0, "CREATE FUNCTION slow(float8) RETURNS bool LANGUAGE sql STABLE AS 'SELECT pg_sleep(0.0001) IS NOT NULL';");
# ---- a write between the counts round and the gather ----
# The counts round fixes the number of values (no count round before it);
# the gather must find in each wanted bucket what the counts round counted,
# else every value is gathered in one statement.  A slower qual (~3 s a
# round) and an UPDATE half a second into the counts round, which moves half
# the values (their sign): the answer is the table's after the UPDATE.
on(0, "CREATE FUNCTION slower(float8) RETURNS bool LANGUAGE sql STABLE AS 'SELECT pg_sleep(0.0005) IS NOT NULL';");
{
	my $wq = "SELECT gpu_quantiles(f8, $fr) FROM xt WHERE slower(f8)";
	# the distributed rounds (the shard scans' are tested above)
	my $bg = coordinator_bg("${ex}SET gpuselect.citus_exchange_shard_scans = off; SET log_min_messages = debug2; SET client_min_messages = notice;"
		  . " SET gpuselect.debug = on; $wq;",
		qr/Citus exchange round: SELECT public\.gs_citus_histogram/, 'the exchange is in its counts round');
	select(undef, undef, undef, 0.5);
	on(0, "UPDATE xt SET f8 = -f8 WHERE id % 2 = 0;");
	my ($rc, $out) = GsTest::psql_wait($bg);
	like($out, qr/all gathered \(the rounds' counts disagreed/, 'the gather saw the write: every value gathered');
	my ($got) = $out =~ /^\s*(\{.*\})\s*$/m;
	is($got, on(0, "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM xt;"),
		'the answer is the table after the write (the built-in)');
	on(0, "UPDATE xt SET f8 = -f8 WHERE id % 2 = 0;");
}
for my $case (["SELECT gpu_quantiles(f8, $fr) FROM xt WHERE slow(f8)", qr/Citus exchange round: SELECT public\.gs_citus_key/,
		qr/CONTEXT:  SQL statement "SELECT (public\.gs_citus_(key|bucket|histogram)|width_bucket)/, "SELECT gpu_quantiles(f8, $fr) FROM xt WHERE i4 % 3 = 0",
		"SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY f8) FROM xt WHERE i4 % 3 = 0"],
	["SELECT k, gpu_quantiles(lat, $fr) FROM gt WHERE slow(lat) GROUP BY k", qr/Citus exchange round: SELECT \(coalesce\(width_bucket/,
		qr/CONTEXT:  SQL statement "SELECT \(/, "SELECT k, gpu_median(lat) FROM gt WHERE i4 % 3 = 0 GROUP BY k ORDER BY 1",
		"SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY lat) FROM gt WHERE i4 % 3 = 0 GROUP BY k ORDER BY 1"])
{
my ($slow, $past_count, $later, $next, $next_bi) = @$case;
like(on(0, "${ex}EXPLAIN (VERBOSE, COSTS OFF) $slow;"), qr/gs_citus_exchange/, 'the slow query runs the exchange');
# its rounds in the coordinator's log, to stop the worker after the first
my $bg = coordinator_bg("${ex}SET gpuselect.citus_exchange_shard_scans = off; SET gpuselect.test_citus_gather_limit = 3; SET log_min_messages = debug2; $slow;",
	$past_count, 'the exchange is past its count round');
worker_stop();
my ($rc, $out) = GsTest::psql_wait($bg);
isnt($rc, 0, 'worker stopped mid-exchange: the query fails');
like($out, qr/ERROR:/, 'with an ERROR');
like($out, $later, 'in a later round of the exchange');
diag("the coordinator's error: $out");
unlike($out, qr/server closed the connection unexpectedly|terminated by signal/, 'the coordinator did not crash');
worker_start();
is(on(0, "${ex}SET gpuselect.test_citus_gather_limit = 3; $next;"), on(0, "$next_bi;"),
	'and the next exchange answers right');
}
unlike(`cat $nodes[0]{h}{log}`, qr/terminated by signal/, 'no backend of the coordinator crashed');

done_testing();
