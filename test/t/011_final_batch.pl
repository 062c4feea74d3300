# A hashed Finalize step's groups selected at once on helper threads
# (src/aggs/final_batch.c, kernels/cpu/cpu_many.c), in a parallel plan whose
# partial states sit in the leader's arena: the built-in's answers; the
# answers under a 1 ms connection check (harmless interrupts, each one
# processed with no helper alive, the batch going on with the rest); and a
# termination request while helpers run: the session ends with FATAL
# 57P01 and the server stays up (no crash, no restart, other sessions go on).
# The CPU path (gpuselect.device = cpu); LOAD first, since the planner
# hook that makes the Finalize step hashed comes with the library; no
# assertion depends on timing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my $t = create_parallel_table('gs_fb');
my $fr = q{ARRAY[0, 0.01, 0.5, 0.99, 1]::float8[]};
my $ours = "SELECT grp, gpu_quantiles(x, $fr), gpu_median(i4) FROM $t GROUP BY grp ORDER BY grp";
my $builtin = psql_value("SELECT grp, percentile_disc($fr) WITHIN GROUP (ORDER BY x), "
	  . "percentile_cont(0.5) WITHIN GROUP (ORDER BY i4) FROM $t GROUP BY grp ORDER BY grp;");
my $setup = "LOAD 'gpuselect';\nSET gpuselect.device = 'cpu';\n" . force_parallel_executor(2)
  . "SET gpuselect.finalize_threads = 2;\n";

sub batches
{
	my ($o) = @_;
	my @b = $o =~ /^batches:(\d+)$/mg;
	return @b == 2 ? $b[1] - $b[0] : -1;
}
my $count = "SELECT 'batches:' || value FROM gpuselect_status() WHERE name = 'final_batches';";

# the plan: a hashed Finalize step over Gather
my $plan = psql_value($setup . "EXPLAIN (COSTS OFF) $ours;");
like($plan, qr/Finalize HashAggregate.*Gather\b.*Partial HashAggregate/s,
	'a parallel GROUP BY finalizes in a HashAggregate over Gather');

# 1. the built-in's answers, twice (the second query of a session uses the arena)
my $o = psql_value($setup . "$count\n$ours;\n$ours;\n$count");
my @answers = grep { !/^batches:/ } split /\n/, $o;
is(join("\n", @answers[0 .. 3]), $builtin, 'batched: the built-ins\' answers');
is(join("\n", @answers[4 .. 7]), $builtin, 'batched, second query: the built-ins\' answers');
is(batches($o), 4, 'each aggregate of each query selected its groups in one batch');

# 2. harmless interrupts every millisecond: the same answers
$o = psql_value($setup . "SET client_connection_check_interval = '1ms';\n$count\n$ours;\n$count");
@answers = grep { !/^batches:/ } split /\n/, $o;
is(join("\n", @answers), $builtin, 'under a 1 ms connection check: the built-ins\' answers');

# 3. a termination request at the batch's second poll: the backend's own,
#    after the helpers have started
my $start = psql_value('SELECT pg_postmaster_start_time();');
my ($rc, $out) = psql($setup . "SET gpuselect.test_terminate_at_poll = 2;\n$ours;\nSELECT 'still here';",
	on_error_stop => 0);
like($out, qr/FATAL:\s+57P01: terminating connection due to administrator command/,
	'terminated during a batch: FATAL 57P01');
unlike($out, qr/still here/, 'the session ended there');
is(psql_value('SELECT pg_postmaster_start_time();'), $start, 'the server did not restart');
is(psql_value("$ours;"), $builtin, 'another session gets the answers');
my $log = $ENV{GS_SERVER_LOG} && -r $ENV{GS_SERVER_LOG} ? slurp($ENV{GS_SERVER_LOG}) : '';
unlike($log, qr/terminated by signal|server process .* was terminated/, 'no backend crashed')
  if $log ne '';

psql_value("DROP TABLE $t;");
done_testing();

sub slurp
{
	my ($f) = @_;
	open(my $fh, '<', $f) or return '';
	local $/;
	return <$fh>;
}
