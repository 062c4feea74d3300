# GPU service (cpu_test mode; GS_SERVICE_MODE=on: the CUDA engine): a
# restart under load (issue #29, defect 5).  Sessions in gpuselect.device =
# gpu run selections in a loop while the service gets SIGTERM: a request
# caught by the restart (waiting in the service, running on a lane, or
# arriving while it is down) waits for it to be back and is answered then
# (within service_timeout), so no query fails and every answer equals the
# built-ins'; the status shows the restart and the requests it caught, and
# the pool ends empty.  Then a service_timeout too short to outlast the
# restart: gpu's ERROR says the service restarted, auto falls back saying so.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my $sessions = 20;
my $loops = 12;
my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.service_test_devices = 4",
	"gpuselect.key_pool_size = 16MB",
	"gpuselect.key_pool_chunk_size = 64kB",
	"gpuselect.service_timeout = 60s",
	"max_connections = " . ($sessions + 20));
END { GsTest::service_cluster_stop($h) if $h; }

sub status { GsTest::service_status() }
sub ready { GsTest::wait_for(sub { status()->{service_state} eq 'ready' }, 30) }

psql_value('CREATE EXTENSION gpuselect;');
ok(ready(), 'the service is ready');
psql_value(q{
SELECT setseed(0.5);
CREATE TABLE gs_r AS SELECT g, (random() - 0.5) * 1e9 AS x FROM generate_series(1, 30000) g;
});
my $s0 = status();

# each session: $loops selections (keys in held pool chunks from 1000 rows on),
# each held 30 ms in the service so that the restart catches some on a lane
my @bg;
for my $s (1 .. $sessions)
{
	my $p = sprintf('%.4f', $s / ($sessions + 1));
	my $q = "SELECT (gpu_percentile_disc($p) WITHIN GROUP (ORDER BY x))::text = (percentile_disc($p) WITHIN GROUP (ORDER BY x))::text FROM gs_r;\n";
	push @bg, GsTest::psql_bg("SET gpuselect.device = 'gpu'; SET gpuselect.gpu_min_rows = 1000;
SET gpuselect.test_service_delay = 30;\n" . ($q x $loops));
}
ok(GsTest::wait_for(sub { status()->{service_served} - $s0->{service_served} >= 20 }, 60),
	'the sessions are being served');
my $pid = status()->{service_pid};
kill 'TERM', $pid;

my ($good, @bad) = (0);
for my $b (@bg)
{
	my ($rc, $out) = GsTest::psql_wait($b);
	my $t = () = $out =~ /^t$/mg;
	if ($rc == 0 && $t == $loops && $out !~ /ERROR/) { $good++ }
	else { push @bad, "rc=$rc: $out" }
}
is($good, $sessions, "$sessions gpu sessions through a service restart: every query answered, right")
  or diag(join("\n", @bad[0 .. ($#bad < 3 ? $#bad : 3)]));
my $st = status();
ok($st->{service_state} eq 'ready' && $st->{service_pid} ne $pid, 'the service is back with a new pid');
cmp_ok($st->{service_starts}, '>', $s0->{service_starts}, 'status: the restart is counted');
cmp_ok($st->{service_restart_waits}, '>', 0, 'status: requests the restart caught waited for it');
is($st->{service_fallen_back}, 0, 'nothing fell back');
ok(GsTest::service_pool_baseline(10), 'pool, held chunks and job slots back to empty');

# -- the service does not come back within service_timeout
my $check = "SET gpuselect.gpu_min_rows = 1000; SET gpuselect.test_service_delay = 3000; SET gpuselect.service_timeout = 1000;
SELECT gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY x)::text = percentile_disc(0.3) WITHIN GROUP (ORDER BY x)::text FROM gs_r;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';";
for my $mode ('gpu', 'auto')
{
	$pid = status()->{service_pid};
	my $b = GsTest::psql_bg(($mode eq 'gpu' ? "SET gpuselect.device = 'gpu';" : '') . $check);
	ok(GsTest::wait_for(sub { status()->{service_queue_length} == 1 }, 10), "$mode: the job waits in the service");
	kill 'TERM', $pid;
	my ($rc, $out) = GsTest::psql_wait($b);
	if ($mode eq 'gpu')
	{
		like($out, qr/55000.*the service restarted/s, 'gpu: the ERROR says the service restarted');
	}
	else
	{
		like($out, qr/^t\ncpu \(fallback: GPU service: the service restarted/,
			'auto: right answer on the CPU, saying the service restarted');
	}
	ok(GsTest::wait_for(sub { my $s = status(); $s->{service_state} eq 'ready' && $s->{service_pid} ne $pid }, 30),
		"$mode: the service is back");
}
ok(GsTest::service_pool_baseline(10), 'pool and slots empty at the end');
my $log = `cat $h->{log}`;
unlike($log, qr/terminated by signal|PANIC|server process .* was terminated/, 'no crash, no crash restart');

done_testing();
