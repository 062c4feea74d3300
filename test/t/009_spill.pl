# gpuselect.work_mem: a spilled group's temporary files are gone after
# success, after an ERROR and after a cancel in the middle of a pass;
# temp_file_limit stops it with the built-in's error; and the backend's
# memory stays bounded where the unspilled path holds every key.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my $rows = $ENV{GS_SPILL_ROWS} // 4000000;
my $fr = q{'{0.001,0.25,0.5,0.75,0.999}'::float8[]};

psql_value(qq{
CREATE EXTENSION IF NOT EXISTS gpuselect;
DROP TABLE IF EXISTS spill_t;
CREATE TABLE spill_t AS
  SELECT CASE WHEN g % 997 = 0 THEN NULL ELSE random() * 2e6 - 1e6 END AS x
  FROM generate_series(1, $rows) g;
ANALYZE spill_t;
});

my $setup = "SET gpuselect.device = 'cpu'; SET max_parallel_workers_per_gather = 0;";
my $spill = "$setup SET gpuselect.work_mem = '1MB';";
my $tmpfiles = 'SELECT count(*) FROM pg_ls_tmpdir()';

sub status_value
{
	my ($name) = @_;
	return "SELECT value FROM gpuselect_status() WHERE name = '$name'";
}

# success: the answer is the built-in's, the group spilled, no file is left
my $builtin = psql_value("SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY x) FROM spill_t;");
my $out = psql_value("$spill SELECT gpu_quantiles(x, $fr) FROM spill_t; "
	  . status_value('last_path') . '; ' . status_value('states_spilled') . ';');
my ($answer, $path, $spilled) = split /\n/, $out;
is($answer, $builtin, 'spilled gpu_quantiles equals percentile_disc');
like($path, qr/^cpu \(spilled, \d+ passes\)$/, "the group spilled ($path)");
is($spilled, 1, 'one state spilled');
is(psql_value($tmpfiles), 0, 'success: no temporary file left');

# ERROR after the spill, while the state (and its file) is alive
my ($rc, $o) = psql("$spill SELECT gpu_median(x) FROM spill_t HAVING 1 / (count(*) - count(*)) = 1;",
	on_error_stop => 0);
like($o, qr/22012/, 'ERROR (division by zero) after a spilled selection') or diag($o);
is(psql_value($tmpfiles), 0, 'ERROR: no temporary file left');

# cancel in the middle of the second pass (a pass reads 256 kB blocks:
# 4M float8 keys are ~122 blocks)
($rc, $o) = psql("$spill SET gpuselect.test_cancel_at_poll = 180; "
	  . "SELECT gpu_quantiles(x, $fr) FROM spill_t;", on_error_stop => 0);
like($o, qr/57014/, 'cancel mid-pass: ERROR 57014') or diag($o);
is(psql_value($tmpfiles), 0, 'cancel: no temporary file left');

# a statement_timeout while the keys are being written (the scan)
($rc, $o) = psql("$spill SET statement_timeout = '300ms'; "
	  . "SELECT gpu_median(x) FROM spill_t, generate_series(1, 3);", on_error_stop => 0);
like($o, qr/57014/, 'statement_timeout during the spill: ERROR 57014') or diag($o);
is(psql_value($tmpfiles), 0, 'timeout: no temporary file left');

# temp_file_limit: the built-in's error, word for word
($rc, $o) = psql("$spill SET temp_file_limit = '4MB'; SELECT gpu_median(x) FROM spill_t;",
	on_error_stop => 0);
my ($mine) = $o =~ /ERROR:\s+(53400: .*)$/m;
($rc, $o) = psql("SET work_mem = '1MB'; SET temp_file_limit = '4MB'; "
	  . "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM spill_t;", on_error_stop => 0);
my ($theirs) = $o =~ /ERROR:\s+(53400: .*)$/m;
ok(defined $mine, 'temp_file_limit: ERROR 53400') or diag($o);
is($mine, $theirs, "temp_file_limit: the built-in's message");
is(psql_value($tmpfiles), 0, 'temp_file_limit: no temporary file left');

# memory: the backend's peak RSS (VmHWM) in a fresh session per query,
# against sum(x) (the executor alone); the scan uses a ring buffer, so
# shared buffers add little
sub peak_kb
{
	my ($sql) = @_;
	my $v = psql_value("$sql; SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s*(\\d+) kB');");
	my @l = split /\n/, $v;
	return $l[-1];
}
my $base = peak_kb("$setup SELECT sum(x) FROM spill_t");
my $inmem = peak_kb("$setup SELECT gpu_median(x) FROM spill_t");
my $spilled_kb = peak_kb("$spill SELECT gpu_median(x) FROM spill_t");
my $keys_kb = int($rows * 8 / 1024);
note("peak RSS: sum $base kB, in memory $inmem kB, spilled $spilled_kb kB; keys $keys_kb kB");
cmp_ok($inmem - $base, '>', $keys_kb * 0.8, 'unspilled: the backend holds the keys');
# the limit (1MB) plus the selection's fixed buffers (histogram 512 kB,
# read buffer 256 kB), the engine's scratch and code pages the spilled path
# touches (CUDA builds: 4.8-6.6 MB measured on PostgreSQL 18), far below the
# keys' 31 MB
cmp_ok($spilled_kb - $base, '<', 10 * 1024, 'spilled at 1MB: the backend stays within 10 MB of sum(x)');

psql_value('DROP TABLE spill_t;');

# ---- the comparison types (datum_spill.c): text values at the smallest
# limit.  The same checks: the built-in's answer, spilled, no file left after
# success, ERROR, a cancel in the middle of a pass (here while a level writes
# its candidates to a second file), and bounded memory.
my $vrows = $ENV{GS_SPILL_VALUE_ROWS} // 400000;
psql_value(qq{
DROP TABLE IF EXISTS spill_v;
CREATE TABLE spill_v AS
  SELECT CASE WHEN g % 991 = 0 THEN NULL ELSE md5(g::text) END AS t
  FROM generate_series(1, $vrows) g;
ANALYZE spill_v;
});
my $vspill = "$setup SET gpuselect.work_mem = '64kB';";
$builtin = psql_value("SELECT percentile_disc($fr) WITHIN GROUP (ORDER BY t) FROM spill_v;");
$out = psql_value("$vspill SELECT gpu_quantiles(t, $fr) FROM spill_v; "
	  . status_value('last_path') . '; ' . status_value('states_spilled') . ';');
($answer, $path, $spilled) = split /\n/, $out;
is($answer, $builtin, 'text: spilled gpu_quantiles equals percentile_disc');
like($path, qr/^cpu \(values spilled, \d+ passes\)$/, "text: the group spilled ($path)");
is($spilled, 1, 'text: one state spilled');
is(psql_value($tmpfiles), 0, 'text: success: no temporary file left');

($rc, $o) = psql("$vspill SELECT gpu_quantile(t, 0.5) FROM spill_v HAVING 1 / (count(*) - count(*)) = 1;",
	on_error_stop => 0);
like($o, qr/22012/, 'text: ERROR (division by zero) after a spilled selection') or diag($o);
is(psql_value($tmpfiles), 0, 'text: ERROR: no temporary file left');

# each record read (a 16 kB write buffer: ~450 values) is a poll; the first
# pass counts, the second writes the wanted buckets to a second file
my $records = int($vrows * 36 / 16384);
my $at = int($records * 1.5);
($rc, $o) = psql("$vspill SET gpuselect.test_cancel_at_poll = $at; "
	  . "SELECT gpu_quantiles(t, $fr) FROM spill_v;", on_error_stop => 0);
like($o, qr/57014/, "text: cancel mid-pass (poll $at): ERROR 57014") or diag($o);
is(psql_value($tmpfiles), 0, 'text: cancel: no temporary file left');

($rc, $o) = psql("$vspill SET statement_timeout = '200ms'; "
	  . "SELECT gpu_quantile(t, 0.5) FROM spill_v, generate_series(1, 3);", on_error_stop => 0);
like($o, qr/57014/, 'text: statement_timeout during the spill: ERROR 57014') or diag($o);
is(psql_value($tmpfiles), 0, 'text: timeout: no temporary file left');

# memory against count(t) and the same aggregate over 2000 rows (the
# library's code and the comparators' caches): in memory the group holds its
# values (36 bytes each) and, selecting, a 16-byte item per value; spilled at
# 64kB it holds its write buffer, the sample (64 kB), a record's read buffer,
# the pivots' counters and a gather or a second file's buffer and sample
$base = peak_kb("$setup SELECT count(t) FROM spill_v; "
	  . "SELECT gpu_quantile(t, 0.5) FROM (SELECT t FROM spill_v LIMIT 2000) s");
$inmem = peak_kb("$setup SELECT gpu_quantile(t, 0.5) FROM spill_v");
$spilled_kb = peak_kb("$vspill SELECT gpu_quantile(t, 0.5) FROM spill_v");
my $values_kb = int($vrows * 36 / 1024);
note("text peak RSS: count $base kB, in memory $inmem kB, spilled $spilled_kb kB; values $values_kb kB");
cmp_ok($inmem - $base, '>', $values_kb, 'text unspilled: the backend holds the values');
cmp_ok($spilled_kb - $base, '<', 2 * 1024, 'text spilled at 64kB: the backend stays within 2 MB of the baseline');

psql_value('DROP TABLE spill_v;');
done_testing();
