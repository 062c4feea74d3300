# gpuselect.work_mem in parallel GROUP BY plans for the comparison types
# (issue 29): a worker's partial state of a group past the limit goes to a
# file in its leader's file set (state/shared_fileset.c) under a hashed or a
# sorted Partial Aggregate, so no partial state reaches the leader in memory
# beyond the limit; answers equal the built-ins; a LIMIT that stops the
# leader early does not hang; no file is left and the server-wide shared
# memory counter (gpuselect.max_shared_memory, which the file set's segment
# is charged to) is back to idle after success, an ERROR in a worker and a
# cancel; past the cap (0) the states travel in memory and still answer
# right.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my $rows = $ENV{GS_GROUPED_SPILL_ROWS} // 400000;
my $fr = q{'{0.001,0.25,0.5,0.75,0.999}'::float8[]};
my $setup = qq{
CREATE EXTENSION IF NOT EXISTS gpuselect;
DROP TABLE IF EXISTS gspill;
CREATE TABLE gspill AS
  SELECT g, g % 4 AS grp,
         CASE WHEN g % 991 = 0 THEN NULL ELSE md5(g::text) END AS t,
         CASE WHEN g % 997 = 0 THEN NULL
              WHEN g % 3 = 0 THEN round(((g::int8 * 7919) % 1000003)::numeric / 7, 2)
              ELSE round(((g::int8 * 7919) % 1000003)::numeric / 7, 4) END AS n
  FROM generate_series(1, $rows) g;
ANALYZE gspill;
};
psql_value($setup);

my $par = "SET gpuselect.device = 'cpu';\n" . force_parallel(2);
my $spill = "$par SET gpuselect.work_mem = '64kB';";
my $tmpfiles = q{SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false)};
my $stat = sub {
	my ($name) = @_;
	return qq{SELECT coalesce((SELECT value FROM gpuselect_status() WHERE name = '$name'), 'none')};
};
my $idle = psql_value($stat->('shared_memory_bytes'));

# (hashed, sorted) x (text, numeric): the built-in's answers, then ours
for my $strategy ('hashed', 'sorted')
{
	my $how = $strategy eq 'hashed' ? 'SET enable_sort = off;' : 'SET enable_hashagg = off;';
	for my $col ('t', 'n')
	{
		my $q = "SELECT grp, %s FROM gspill GROUP BY grp ORDER BY grp";
		my $want = psql_value(sprintf($q, "percentile_disc($fr) WITHIN GROUP (ORDER BY $col)"));
		my $ours = sprintf($q, "gpu_quantiles($col, $fr)");
		my $plan = psql_value("$spill $how EXPLAIN (COSTS OFF) $ours;");
		my $node = $strategy eq 'hashed' ? 'Partial HashAggregate' : 'Partial GroupAggregate';
		like($plan, qr/Gather.*\Q$node\E/s, "$strategy $col: the plan is parallel ($node)") or diag($plan);
		my $out = psql_value("$spill $how $ours; " . $stat->('states_shared_files') . '; '
			  . $stat->('partial_state_max_bytes') . ';');
		my @l = split /\n/, $out;
		my ($maxb, $read) = (pop @l, pop @l);
		is(join("\n", @l), $want, "$strategy $col: parallel spilled gpu_quantiles per group equals percentile_disc");
		# the participant that scanned the most holds at least a third of each
		# group (~0.4 MB of values or more): its 4 states at least (how the
		# blocks are shared out varies)
		cmp_ok($read eq 'none' ? -1 : $read, '>=', 4, "$strategy $col: the leader read partial states from files ($read)");
		# a worker's state of a group (~0.4 MB of values) used to arrive whole
		cmp_ok($maxb eq 'none' ? 1e12 : $maxb, '<=', 64 * 1024,
			"$strategy $col: no partial state reached the leader in memory beyond the limit ($maxb bytes)");
		is(psql_value($tmpfiles), 0, "$strategy $col: no temporary file left");
		is(psql_value($stat->('shared_memory_bytes')), $idle, "$strategy $col: shared memory counter back to idle");
	}
}

# while the query runs, its file set's segment is charged to the budget
my $during = psql_value("$spill SELECT (SELECT value::int8 FROM gpuselect_status() WHERE name = 'shared_memory_bytes') "
	  . "- $idle AS charged, grp, gpu_quantile(t, 0.5) FROM gspill GROUP BY grp;");
my ($charged) = split /\|/, (split /\n/, $during)[0];
cmp_ok($charged, '>=', 4096, "the file set's segment is charged to max_shared_memory while the query runs ($charged bytes)");

# the built-in syntax rewritten (accelerate_builtins)
my $bt = psql_value("SELECT grp, percentile_cont(0.37) WITHIN GROUP (ORDER BY n) FROM gspill GROUP BY grp ORDER BY grp;");
is(psql_value("$spill SET gpuselect.accelerate_builtins = on; "
	  . "SELECT grp, percentile_cont(0.37) WITHIN GROUP (ORDER BY n) FROM gspill GROUP BY grp ORDER BY grp;"),
	$bt, 'rewritten percentile_cont per group, parallel and spilled, equals the built-in');

# a LIMIT: the leader stops reading partial states early; no worker waits for it
my ($rc, $o) = psql("$spill SET enable_hashagg = off; SET statement_timeout = '60s'; "
	  . "SELECT grp, gpu_quantile(t, 0.5) FROM gspill GROUP BY grp ORDER BY grp LIMIT 1;");
my $first = psql_value("SELECT grp, percentile_disc(0.5) WITHIN GROUP (ORDER BY t) FROM gspill GROUP BY grp ORDER BY grp LIMIT 1;");
is($o, $first, 'LIMIT 1: the first group, no hang') or diag($o);
is(psql_value($tmpfiles), 0, 'LIMIT 1: no temporary file left');
is(psql_value($stat->('shared_memory_bytes')), $idle, 'LIMIT 1: shared memory counter back to idle');

# an ERROR in a worker near the end of its scan, after its states spilled
($rc, $o) = psql("$spill SELECT grp, gpu_quantile(CASE WHEN g = $rows - 10 THEN (1 / (g - g))::text "
	  . "ELSE t END, 0.5) FROM gspill GROUP BY grp;", on_error_stop => 0);
like($o, qr/division by zero/, 'ERROR mid-scan after the spill') or diag($o);
is(psql_value($tmpfiles), 0, 'ERROR: no temporary file left');
is(psql_value($stat->('shared_memory_bytes')), $idle, 'ERROR: shared memory counter back to idle');

# a cancel, whenever it comes
($rc, $o) = psql("$spill SET statement_timeout = '300ms'; "
	  . "SELECT grp, gpu_quantile(t || s, 0.5) FROM gspill, generate_series(1, 40) s GROUP BY grp;", on_error_stop => 0);
like($o, qr/57014/, 'statement_timeout: ERROR 57014') or diag($o);
is(psql_value($tmpfiles), 0, 'cancel: no temporary file left');
is(psql_value($stat->('shared_memory_bytes')), $idle, 'cancel: shared memory counter back to idle');

# the leader's peak RSS (VmHWM) in a fresh session, against count(t) through
# the same parallel plan (a note, not a check: the leader's share of shared
# buffers in its RSS varies by a few MB from run to run)
sub peak_kb
{
	my ($sql) = @_;
	my @l = split /\n/, psql_value("$sql; SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s*(\\d+) kB');");
	return $l[-1];
}
my $base = peak_kb("$spill SELECT grp, count(t) FROM gspill GROUP BY grp");
my $spilled_kb = peak_kb("$spill SELECT grp, gpu_quantile(t, 0.5) FROM gspill GROUP BY grp");
note("leader peak RSS: count $base kB, spilled $spilled_kb kB; values " . int($rows * 36 / 1024) . " kB");
psql_value('DROP TABLE gspill;');

# past gpuselect.max_shared_memory (a server-wide setting: a cluster of its
# own): no file set, the partial states travel in memory, the same answers
my $h = GsTest::service_cluster_start("gpuselect.max_shared_memory = 0");
psql_value($setup);
my $want = psql_value("SELECT grp, percentile_disc($fr) WITHIN GROUP (ORDER BY t) FROM gspill GROUP BY grp ORDER BY grp;");
my $out = psql_value("$spill SELECT grp, gpu_quantiles(t, $fr) FROM gspill GROUP BY grp ORDER BY grp; "
	  . $stat->('states_shared_files') . '; ' . $stat->('shared_memory_refused') . '; '
	  . $stat->('shared_memory_bytes') . ';');
my @l = split /\n/, $out;
my ($used, $refused, $read) = (pop @l, pop @l, pop @l);
is(join("\n", @l), $want, 'max_shared_memory = 0: equals percentile_disc');
is($read, 0, 'max_shared_memory = 0: no partial state through a file');
cmp_ok($refused, '>', 0, 'max_shared_memory = 0: the refusal counted');
is($used, 0, 'max_shared_memory = 0: none in use');
# the plain aggregate (no GROUP BY) falls back the same way
$want = psql_value("SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY t) FROM gspill;");
is(psql_value("$spill SELECT gpu_quantiles(t, $fr) FROM gspill;"), $want, 'max_shared_memory = 0, no GROUP BY: equals percentile_disc');
is(psql_value($tmpfiles), 0, 'max_shared_memory = 0: no temporary file left');
GsTest::service_cluster_stop($h);
done_testing();
