# Cancel: a long gpu_quantiles query stopped by statement_timeout ends with
# ERROR 57014, the same backend survives (same pid, no postmaster restart)
# and its next query works.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;
use Time::HiRes qw(time);

my $rows = $ENV{GS_CANCEL_ROWS} // 20000000;
# 101 fractions as a literal (0, 0.01, ..., 1)
my $fr = "'{" . join(',', map { $_ / 100 } 0 .. 100) . "}'::float8[]";

psql_value('CREATE EXTENSION IF NOT EXISTS gpuselect;');
my $start_time = psql_value('SELECT pg_postmaster_start_time();');

# the full query over $rows values: how long does it take here?  The faster
# of two runs: on a busy machine one run can take far longer than the next,
# and a timeout from a slow run lets a later run finish before it
my $q = "SELECT (gpu_quantiles(x, $fr))[51] FROM (SELECT random() AS x FROM generate_series(1, $rows)) s";
my ($rc, $out, $full_ms);
for my $run (1 .. 2)
{
	my $t0 = time;
	my ($r, $o) = psql("SET work_mem = '64MB'; $q;");
	my $ms = (time - $t0) * 1000;
	($rc, $out) = ($r, $o) if !defined $rc || $r != 0;
	$full_ms = $ms if !defined $full_ms || $ms < $full_ms;
}
is($rc, 0, "full gpu_quantiles over $rows rows runs (" . int($full_ms) . " ms)") or diag($out);

# cancel early (while rows are being accumulated) and late (in the final
# function / selection); the late one may finish first on a fast machine
for my $frac (0.25, 0.6, 0.9)
{
	my $timeout = int($full_ms * $frac);
	$timeout = 50 if $timeout < 50;
	my $script = qq{
SELECT 'pid:' || pg_backend_pid();
SET work_mem = '64MB';
SET statement_timeout = $timeout;
$q;
RESET statement_timeout;
SELECT 'pid:' || pg_backend_pid();
SELECT 'after:' || gpu_quantile(g::float8, 0.5) || ',' || gpu_median(g::float8) FROM generate_series(1, 1001) g;
};
	my ($rc2, $o) = psql($script, on_error_stop => 0);
	my @pids = $o =~ /^pid:(\d+)$/mg;
	if ($frac < 0.8)
	{
		like($o, qr/ERROR:\s+57014: canceling statement due to statement timeout/,
			"statement_timeout $timeout ms: ERROR 57014") or diag($o);
	}
	else
	{
		ok($o =~ /57014: canceling statement due to statement timeout/ || $o =~ /^0\.\d+$/m,
			"statement_timeout $timeout ms: canceled with 57014 or finished") or diag($o);
	}
	is(scalar(@pids), 2, "timeout $timeout ms: session still answers after the cancel");
	is($pids[0], $pids[1], "timeout $timeout ms: same backend before and after") if @pids == 2;
	like($o, qr/^after:501,501$/m, "timeout $timeout ms: next gpu query in the same session works");
}

is(psql_value('SELECT pg_postmaster_start_time();'), $start_time, 'postmaster did not restart');
done_testing();
