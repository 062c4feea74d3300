# gpuselect.work_mem in parallel plans for the comparison types (text,
# numeric, interval): a worker's partial state past the limit goes to a file of
# the leader's file set (state/shared_fileset.c), so the leader's memory stays
# bounded; answers equal the built-ins; no file is left after success, an
# ERROR in a worker mid-scan, or a cancel.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my $rows = $ENV{GS_PARALLEL_SPILL_ROWS} // 600000;
my $fr = q{'{0.001,0.25,0.5,0.75,0.999}'::float8[]};

psql_value(qq{
CREATE EXTENSION IF NOT EXISTS gpuselect;
DROP TABLE IF EXISTS pspill;
CREATE TABLE pspill AS
  SELECT g, CASE WHEN g % 991 = 0 THEN NULL ELSE md5(g::text) END AS t,
         CASE WHEN g % 997 = 0 THEN NULL
              WHEN g % 3 = 0 THEN round((random() * 1e6)::numeric, 2)
              ELSE round((random() * 1e6)::numeric, 4) END AS n,
         make_interval(secs => (g::int8 * 7919) % 86400, days => g % 30) AS iv
  FROM generate_series(1, $rows) g;
ANALYZE pspill;
});

my $par = "SET gpuselect.device = 'cpu';\n" . force_parallel(2);
my $spill = "$par SET gpuselect.work_mem = '64kB';";
# pg_ls_tmpdir() shows no directory: a file set is one (pgsql_tmpPID.N.fileset)
my $tmpfiles = q{SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false)};
my $files_read = q{SELECT coalesce((SELECT value FROM gpuselect_status()
  WHERE name = 'states_shared_files'), 'none')};

# the server-wide counter (gpuselect.max_shared_memory), which the file
# set's segment is charged to, before any query of ours
my $in_use = q{SELECT value FROM gpuselect_status() WHERE name = 'shared_memory_bytes'};
my $idle = psql_value($in_use);

my $plan = psql_value("$spill EXPLAIN (COSTS OFF) SELECT gpu_quantiles(t, $fr) FROM pspill;");
like($plan, qr/Gather.*Partial Aggregate/s, 'the plan is parallel') or diag($plan);

# answers: text and numeric (disc), interval (cont through gpu_median)
my $bt = psql_value("SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY t) FROM pspill;");
my $bn = psql_value("SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY n) FROM pspill;");
my $bm = psql_value("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) FROM pspill;");
my $max_bytes = q{SELECT coalesce((SELECT value FROM gpuselect_status()
  WHERE name = 'partial_state_max_bytes'), 'none')};
my $out = psql_value("$spill SELECT gpu_quantiles(t, $fr) FROM pspill; $files_read; $max_bytes;");
my ($answer, $read, $maxb) = split /\n/, $out;
is($answer, $bt, 'text: parallel spilled gpu_quantiles equals percentile_disc');
cmp_ok($read eq 'none' ? -1 : $read, '>=', 2, "text: the leader read the partial states from files ($read)");
# the leader's memory: a worker's state (~7 MB of values) used to arrive whole
cmp_ok($maxb eq 'none' ? 1e12 : $maxb, '<=', 64 * 1024,
	"text: no partial state reached the leader in memory beyond the limit ($maxb bytes)");
is(psql_value($tmpfiles), 0, 'text: success: no temporary file left');
is(psql_value($in_use), $idle, 'text: success: the shared memory counter is back to idle');

$out = psql_value("$spill SELECT gpu_quantiles(n, $fr) FROM pspill; $files_read;");
($answer, $read) = split /\n/, $out;
is($answer, $bn, 'numeric: parallel spilled gpu_quantiles equals percentile_disc');
cmp_ok($read eq 'none' ? -1 : $read, '>=', 2, "numeric: the leader read the partial states from files ($read)");
$out = psql_value("$spill SELECT gpu_median(iv) FROM pspill; $files_read;");
($answer, $read) = split /\n/, $out;
is($answer, $bm, 'interval: parallel spilled gpu_median equals percentile_cont');
cmp_ok($read eq 'none' ? -1 : $read, '>=', 2, "interval: the leader read the partial states from files ($read)");
is(psql_value($tmpfiles), 0, 'numeric, interval: success: no temporary file left');

# partial states each under the limit (~25 kB of values each, if the
# blocks are shared out evenly), together over it: they travel in memory and
# the leader's combined state spills as they come in
my $bs = psql_value("SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY t) FROM pspill WHERE g <= 2000;");
psql_value("CREATE TABLE pspill_small AS SELECT t FROM pspill WHERE g <= 2000; ANALYZE pspill_small;");
$out = psql_value("$spill SELECT gpu_quantiles(t, $fr) FROM pspill_small; $files_read; "
	  . "SELECT value FROM gpuselect_status() WHERE name = 'states_spilled';");
my ($sread, $sspilled);
($answer, $sread, $sspilled) = split /\n/, $out;
is($answer, $bs, 'small partial states: gpu_quantiles equals percentile_disc');
note("small partial states: $sread through a file");
cmp_ok($sspilled, '>=', 1, 'small partial states: the combined state spilled');
psql_value('DROP TABLE pspill_small;');

# the built-in syntax rewritten (accelerate_builtins), in parallel too
$out = psql_value("$spill SET gpuselect.accelerate_builtins = on; "
	  . "SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY t) FROM pspill;");
is($out, $bt, 'text: rewritten percentile_disc, parallel and spilled, equals the built-in');

# an ERROR in a worker near the end of its scan, after its state spilled
my ($rc, $o) = psql("$spill SELECT gpu_quantile(CASE WHEN g = $rows - 10 THEN (1 / (g - g))::text "
	  . "ELSE t END, 0.5) FROM pspill;", on_error_stop => 0);
like($o, qr/division by zero/, 'ERROR mid-scan after the spill') or diag($o);
is(psql_value($tmpfiles), 0, 'ERROR: no temporary file left');
is(psql_value($in_use), $idle, 'ERROR: the shared memory counter is back to idle');

# a cancel: whenever it comes (scan, combine, selection), nothing is left
($rc, $o) = psql("$spill SET statement_timeout = '300ms'; "
	  . "SELECT gpu_quantile(t, 0.5) FROM pspill, generate_series(1, 3);", on_error_stop => 0);
like($o, qr/57014/, 'statement_timeout: ERROR 57014') or diag($o);
is(psql_value($tmpfiles), 0, 'cancel: no temporary file left');
is(psql_value($in_use), $idle, 'cancel: the shared memory counter is back to idle');
is(psql_value("$spill SELECT gpu_quantiles(t, $fr) FROM pspill;"), $bt, 'the next query answers');

# the leader's peak RSS (VmHWM) in a fresh session, against count(t)
# through the same parallel plan
sub peak_kb
{
	my ($sql) = @_;
	my $v = psql_value("$sql; SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s*(\\d+) kB');");
	my @l = split /\n/, $v;
	return $l[-1];
}
my $base = peak_kb("$spill SELECT count(t) FROM pspill; "
	  . "SELECT gpu_quantile(t, 0.5) FROM (SELECT t FROM pspill LIMIT 2000) s");
my $spilled_kb = peak_kb("$spill SELECT gpu_quantile(t, 0.5) FROM pspill");
my $values_kb = int($rows * 36 / 1024);
# (a note, not a check: the leader's share of the scan's shared buffers, in
# its RSS, varies by a few MB from run to run)
note("leader peak RSS: count $base kB, spilled $spilled_kb kB; values $values_kb kB");

psql_value('DROP TABLE pspill;');
done_testing();
