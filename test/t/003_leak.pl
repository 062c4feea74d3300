# Leak check: 100 rounds of gpu aggregates, including calls that ERROR
# (fraction out of range), in one session: the backend's memory
# (sum of pg_backend_memory_contexts.total_bytes) returns to its baseline.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my $reps = $ENV{GS_LEAK_REPS} // 100;
psql_value('CREATE EXTENSION IF NOT EXISTS gpuselect;');

my $round = q{
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM gs_leak;
SELECT gpu_percentile_cont(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY x) FROM gs_leak;
SELECT gpu_quantiles(x, ARRAY[0, 0.25, 0.5, 0.75, 1]::float8[]) FROM gs_leak;
SELECT gpu_median(x), gpu_quantile(i, 0.3) FROM gs_leak;
SELECT count(m) FROM (SELECT g, gpu_median(x) AS m FROM gs_leak GROUP BY g) s;  -- count(m): an unused aggregate would be dropped by the planner
SELECT gpu_quantile(x, 1.5) FROM gs_leak;
SELECT gpu_percentile_disc(ARRAY[0.5, -0.1]) WITHIN GROUP (ORDER BY x) FROM gs_leak;
SELECT gpu_quantiles(x, ARRAY[0.2, 2]::float8[]) FROM gs_leak;
SELECT gpu_percentile_cont(1.01) WITHIN GROUP (ORDER BY i) FROM gs_leak;
};
my $mem = q{SELECT 'mem:' || sum(total_bytes) FROM pg_backend_memory_contexts;};

my $script = q{
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE gs_leak AS
  SELECT (random() * 1000)::float8 AS x, g % 50 AS g, g AS i FROM generate_series(1, 20000) g;
} . $round . $round . $mem;
for my $r (1 .. $reps)
{
	$script .= $round;
	$script .= $mem if $r == int($reps / 2) || $r == $reps;
}
my ($rc, $out) = psql($script, on_error_stop => 0);
my @mem = $out =~ /^mem:(\d+)$/mg;
my @errs = $out =~ /ERROR:\s+(22003):/mg;
is(scalar(@mem), 3, 'memory measured 3 times') or diag(substr($out, 0, 4000));
is(scalar(@errs), 4 * ($reps + 2), 'every bad fraction raised SQLSTATE 22003');
unlike($out, qr/ERROR:\s+(?!22003)\S/, 'no other errors') or diag(join("\n", grep { /ERROR/ && !/22003/ } split /\n/, $out));
if (@mem == 3)
{
	my ($base, $mid, $end) = @mem;
	diag("backend memory: baseline $base, after " . int($reps / 2) . " rounds $mid, after $reps rounds $end bytes");
	cmp_ok($end - $base, '<=', 512 * 1024, 'backend memory returns to baseline (within 512 kB)');
	cmp_ok($end - $mid, '<=', 64 * 1024, 'no growth between the middle and the end');
}
done_testing();
