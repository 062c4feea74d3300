# GPU service (cpu_test mode; GS_SERVICE_MODE=on: the CUDA engine): what goes wrong while a request waits.
# gpuselect.test_service_delay holds a job in the service so that a wait can
# be canceled, time out, have its backend terminated, or lose the service
# (SIGTERM; a sticky device error); a small key pool runs out.  Every
# session gets the built-ins' answer (auto; gpu when it waits for the pool
# or a restart) or a clean ERROR (gpu), the service comes back, and the
# pool and the job slots end empty.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;
use Time::HiRes qw(time sleep);

my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.key_pool_size = 1MB",
	"gpuselect.key_pool_chunk_size = 64kB");
END { GsTest::service_cluster_stop($h) if $h; }

sub status { GsTest::service_status() }
sub ready { GsTest::wait_for(sub { status()->{service_state} eq 'ready' }, 30) }
sub baseline
{
	GsTest::wait_for(sub {
		my $s = status();
		$s->{key_pool_used_bytes} == 0 && $s->{service_slots_in_use} == 0
	}, 10);
}

psql_value('CREATE EXTENSION gpuselect;');
ok(ready(), 'the service is ready');
# 80000 float8 = 640 kB: 11 of the 16 chunks (with the fractions' chunk), so two do not fit
psql_value(q{
SELECT setseed(0.2);
CREATE TABLE gs_f AS SELECT g, (random() - 0.5) * 1e6 AS x FROM generate_series(1, 80000) g;
CREATE TABLE gs_big AS SELECT g, random() AS x FROM generate_series(1, 200000) g;
});
my $check = "SELECT gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY x)::text = percentile_disc(0.3) WITHIN GROUP (ORDER BY x)::text FROM gs_f;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';";
my $auto = "SET gpuselect.gpu_min_rows = 1000;";

# -- a group larger than the whole pool
like(psql_value("$auto SELECT gpu_median(x)::text = percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::text FROM gs_big;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';"),
	qr/^t\ncpu \(fallback: GPU service: the group is larger than the key pool\)/,
	'auto: a group larger than the pool falls back with the right answer');
my ($rc, $out) = psql("SET gpuselect.device = 'gpu'; SELECT gpu_median(x) FROM gs_big;");
like($out, qr/55000.*larger than the key pool/s, 'gpu: a group larger than the pool is a clean ERROR');

# -- the pool taken by a waiting job: the next one falls back
my $holder = GsTest::psql_bg("$auto SET gpuselect.test_service_delay = 3000; $check");
ok(GsTest::wait_for(sub { status()->{key_pool_used_bytes} > 0 }, 10), 'a held job holds pool chunks');
like(psql_value("$auto $check"), qr/^t\ncpu \(fallback: GPU service: the key pool is exhausted\)/,
	'auto: an exhausted pool falls back with the right answer');
($rc, $out) = GsTest::psql_wait($holder);
like($out, qr/^t\nservice/, 'the held job is answered by the service');
ok(status()->{service_pool_exhausted} >= 2, 'status: pool exhaustion counted');
# gpu waits for the chunks instead (up to service_timeout)
$holder = GsTest::psql_bg("$auto SET gpuselect.test_service_delay = 2000; $check");
ok(GsTest::wait_for(sub { status()->{key_pool_used_bytes} > 0 }, 10), 'a held job holds pool chunks again');
like(psql_value("SET gpuselect.device = 'gpu'; $check"), qr/^t\nservice/,
	'gpu: waits for pool chunks, then the service answers');
($rc, $out) = GsTest::psql_wait($holder);
like($out, qr/^t\nservice/, 'the held job is answered by the service');
ok(baseline(), 'pool and slots empty');

# -- statement_timeout and pg_cancel_backend while waiting: 57014, slot freed
my $t0 = time;
($rc, $out) = psql("$auto SET gpuselect.test_service_delay = 20000; SET statement_timeout = 500; $check");
my $dt = time - $t0;
like($out, qr/57014/, 'statement_timeout during the wait: ERROR 57014');
ok($dt < 10, sprintf('the timeout ended the wait at once (%.1f s)', $dt));
my $bg = GsTest::psql_bg("$auto SET gpuselect.test_service_delay = 20000; SET application_name = 'gs_cancel_me'; $check");
ok(GsTest::wait_for(sub { status()->{service_queue_length} == 1 }, 10), 'the job waits in the service');
psql_value("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'gs_cancel_me';");
($rc, $out) = GsTest::psql_wait($bg);
like($out, qr/57014/, 'pg_cancel_backend during the wait: ERROR 57014');
ok(status()->{service_canceled} >= 2, 'status: canceled waits counted');
ok(baseline(), 'canceled jobs: pool and slots empty');
like(psql_value("$auto $check"), qr/^t\nservice/, 'the next query uses the service again');

# -- gpuselect.service_timeout: auto falls back, gpu errors
like(psql_value("$auto SET gpuselect.test_service_delay = 5000; SET gpuselect.service_timeout = 300; $check"),
	qr/^t\ncpu \(fallback: GPU service: timed out/, 'service_timeout: auto falls back with the right answer');
($rc, $out) = psql("SET gpuselect.device = 'gpu'; SET gpuselect.test_service_delay = 5000; SET gpuselect.service_timeout = 300;
SELECT gpu_median(x) FROM gs_f;");
like($out, qr/55000.*timed out/s, 'service_timeout: gpu is a clean ERROR');
ok(status()->{service_timed_out} >= 2, 'status: timeouts counted');
ok(baseline(), 'timed-out jobs: pool and slots empty');

# -- the waiting backend is terminated
$bg = GsTest::psql_bg("$auto SET gpuselect.test_service_delay = 20000; SET application_name = 'gs_kill_me'; $check");
ok(GsTest::wait_for(sub { status()->{service_queue_length} == 1 }, 10), 'the job waits in the service');
psql_value("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'gs_kill_me';");
($rc, $out) = GsTest::psql_wait($bg);
isnt($rc, 0, 'the terminated session ends');
ok(baseline(), 'terminated backend: its job and chunks are reclaimed');

# -- SIGTERM to the service mid-request: auto falls back (a small group: the
# CPU is quicker than the restart), gpu waits for the service to be back and
# is answered by it (TAP 110: under load, and past service_timeout)
for my $mode ('auto', 'gpu')
{
	my $pid = status()->{service_pid};
	my $set = $mode eq 'gpu' ? "SET gpuselect.device = 'gpu';" : $auto;
	$bg = GsTest::psql_bg("$set SET gpuselect.test_service_delay = 3000; $check");
	ok(GsTest::wait_for(sub { status()->{service_queue_length} == 1 }, 10), "$mode: the job waits in the service");
	kill 'TERM', $pid;
	($rc, $out) = GsTest::psql_wait($bg);
	if ($mode eq 'auto')
	{
		like($out, qr/^t\ncpu \(fallback: GPU service: the service restarted/,
			'auto: SIGTERM to the service mid-request: right answer on the CPU');
	}
	else
	{
		like($out, qr/^t\nservice/, 'gpu: SIGTERM to the service mid-request: answered once it is back');
	}
	ok(GsTest::wait_for(sub { my $s = status(); $s->{service_state} eq 'ready' && $s->{service_pid} ne $pid }, 30),
		"$mode: the service is back with a new pid");
}
ok(baseline(), 'after the restarts: pool and slots empty');

# -- a sticky device error: the job falls back, the service exits 1 and is restarted
my $pid = status()->{service_pid};
like(psql_value("$auto SET gpuselect.test_service_fault = 'sticky'; $check"),
	qr/^t\ncpu \(fallback: GPU service: the selection failed: injected/,
	'sticky error: right answer on the CPU');
ok(GsTest::wait_for(sub { my $s = status(); $s->{service_state} eq 'ready' && $s->{service_pid} ne $pid }, 30),
	'sticky error: the service is restarted');
like(psql_value("$auto $check"), qr/^t\nservice/, 'the restarted service answers');
cmp_ok(status()->{service_starts}, '>=', 4, 'status: service starts counted');

ok(baseline(), 'pool and slots empty at the end');
my $log = `cat $h->{log}`;
unlike($log, qr/terminated by signal|PANIC|server process .* was terminated/, 'no crash, no crash restart');
like($log, qr/"gpuselect GPU service" \(PID \d+\) exited with exit code 1/, 'the service exited with code 1');

done_testing();
