# GPU service on several devices (cpu_test mode: gpuselect.service_test_devices
# = 3 simulated devices, each a lane thread running the CPU engine;
# GS_SERVICE_MODE=on: every CUDA device, skipped below two).
#
# Many sessions at once get the built-ins' answers, their requests spread
# over every device and run on several at the same time.  A split job (a
# group larger than a device: gpuselect.test_service_split_keys) holds every
# other device while it runs and releases them after.  A device made to
# fail (gpuselect.test_service_fail_device) in the middle of such a run
# costs no answer and fails no query, in gpu mode too: the job it was
# running goes back to the queue and runs on another device; the device is
# shown failed, with why, and gets no more jobs while the others go on; a
# job's own failure (test_service_fault = 'fail') leaves its device in
# rotation; when the last device fails its job falls back to the CPU (auto)
# and the service restarts with all of them.  The pool and the job slots end
# empty.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;
use Time::HiRes qw(sleep);

my $ndev = 3;
my $sessions = $ENV{GS_SERVICE_SESSIONS} // 40;
my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.service_test_devices = $ndev",
	"gpuselect.key_pool_size = 64MB",
	"gpuselect.key_pool_chunk_size = 64kB",
	"max_connections = " . ($sessions + 20));
END { GsTest::service_cluster_stop($h) if $h; }

sub status { GsTest::service_status() }

psql_value('CREATE EXTENSION gpuselect;');
ok(GsTest::wait_for(sub { status()->{service_state} eq 'ready' }, 30), 'the service is ready');
my $st = status();
if (GsTest::service_mode() eq 'on')
{
	$ndev = $st->{service_devices};
	if ($ndev < 2)
	{
		diag("the CUDA service sees $ndev device(s)");
		done_testing();
		exit 0;
	}
}
is($st->{service_devices}, $ndev, "status: $ndev devices");
is($st->{service_devices_ok}, $ndev, 'status: all in rotation');
is(scalar(grep { $st->{"device_${_}_state"} eq 'ok' } 0 .. $ndev - 1), $ndev, 'status: every device ok');
my $pid = $st->{service_pid};

psql_value(q{
SELECT setseed(0.6);
CREATE TABLE gs_d AS SELECT g, (random() - 0.5) * 1e9 AS f8, (random() * 1e6)::int4 AS i4,
       (random() * 30000)::int2 AS i2
FROM generate_series(1, 20000) g;
});

# one session's queries: three selections checked against the built-ins in
# the same session, then its last path
sub check_sql
{
	my ($p) = @_;
	return "SELECT (gpu_percentile_disc($p) WITHIN GROUP (ORDER BY f8))::text = (percentile_disc($p) WITHIN GROUP (ORDER BY f8))::text
   AND (gpu_quantiles(i4, ARRAY[$p, 0.5]))::text = (percentile_disc(ARRAY[$p, 0.5]) WITHIN GROUP (ORDER BY i4))::text
   AND (gpu_percentile_cont($p) WITHIN GROUP (ORDER BY i2))::text = (percentile_cont($p) WITHIN GROUP (ORDER BY i2))::text
FROM gs_d;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';";
}
# one selection (a pinned test hook fails only the first job), then its path
sub one_sql
{
	my ($p) = @_;
	return "SELECT (gpu_percentile_disc($p) WITHIN GROUP (ORDER BY f8))::text = (percentile_disc($p) WITHIN GROUP (ORDER BY f8))::text FROM gs_d;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';";
}
sub served { my ($s) = @_; return [map { $s->{"device_${_}_served"} } 0 .. $ndev - 1]; }

# start $n sessions (each job held 30 ms in its lane, so that they overlap);
# while they run, the most devices seen holding a job at once
sub run_sessions
{
	my ($n, $set, $extra) = @_;
	my (@bg, $most);
	$most = 0;
	for my $s (1 .. $n)
	{
		my $p = sprintf('%.4f', $s / ($n + 1));
		push @bg, GsTest::psql_bg("$set SET gpuselect.test_service_delay = 30;\n" . check_sql($p));
		if ($extra && $s == int($n / 2))
		{
			push @bg, $extra->();
		}
	}
	my $left = 50;
	while ($left-- > 0 && grep { kill 0, $_->{pid} } @bg)
	{
		my $s = status();
		my $now = 0;
		$now += (($s->{"device_${_}_running"} // 0) > 0 ? 1 : 0) for 0 .. $ndev - 1;
		$most = $now if $now > $most;
		sleep(0.05);
	}
	my @out = map { [GsTest::psql_wait($_)] } @bg;
	return (\@out, $most);
}

# -- many sessions, gpu mode: right answers, spread over every device, run side by side
my $s0 = status();
my ($out, $most) = run_sessions($sessions, "SET gpuselect.device = 'gpu';");
my @bad = grep { !($_->[0] == 0 && $_->[1] =~ /^t\nservice\s*$/) } @$out;
is(scalar(@bad), 0, "$sessions concurrent sessions on $ndev devices: every answer equals the built-ins")
  or diag(join("\n", map { "rc=$_->[0]: $_->[1]" } @bad[0 .. ($#bad < 4 ? $#bad : 4)]));
my $s1 = status();
is($s1->{service_served} - $s0->{service_served}, 3 * $sessions, 'the service served every selection');
my @d0 = @{ served($s0) };
my @d1 = @{ served($s1) };
my @delta = map { $d1[$_] - $d0[$_] } 0 .. $ndev - 1;
is(scalar(grep { $_ > 0 } @delta), $ndev, "requests spread over every device (@delta)");
my $sum = 0;
$sum += $_ for @delta;
is($sum, 3 * $sessions, 'the per-device counts add up to the total');
cmp_ok($most, '>=', 2, "jobs ran on several devices at once (at most $most seen)");

# -- split jobs (a group larger than a device; here the test hook's): the job
# streams through every device, the others held for it -- each shows a job
# running while it runs -- and released after; no answer wrong, no hang, while
# other sessions' jobs go on around it
my $split = "SET gpuselect.device = 'gpu'; SET gpuselect.test_service_split_keys = 1000;";
my (@before, @after);
my $sj0 = status()->{service_split_jobs};
my $one = GsTest::psql_bg("$split SET gpuselect.test_service_delay = 400;\n" . one_sql('0.33'));
ok(GsTest::wait_for(sub {
	my $s = status();
	scalar(grep { ($s->{"device_${_}_running"} // 0) == 1 } 0 .. $ndev - 1) == $ndev
}, 20), 'a split job: every device shows it running (the others held for it)');
my @r1 = GsTest::psql_wait($one);
like($r1[1], qr/^t\nservice\s*$/, 'the split job answers right, through the service');
$st = status();
is($st->{service_split_jobs} - $sj0, 1, 'status: one split job');
is(scalar(grep { $st->{"device_${_}_running"} == 0 } 0 .. $ndev - 1), $ndev, '... and every device released after it');
@before = @{ served($st) };
($out, $most) = run_sessions($sessions, "SET gpuselect.device = 'gpu';", sub {
	return GsTest::psql_bg("$split\n" . check_sql('0.29'));
});
@bad = grep { !($_->[0] == 0 && $_->[1] =~ /^t\nservice\s*$/) } @$out;
is(scalar(@bad), 0, 'split jobs among concurrent sessions: every answer equals the built-ins, through the service')
  or diag(join("\n", map { "rc=$_->[0]: $_->[1]" } @bad[0 .. ($#bad < 4 ? $#bad : 4)]));
$st = status();
is($st->{service_split_jobs} - $sj0, 4, 'status: the three selections of that session were split jobs');
@after = @{ served($st) };
is(scalar(grep { $after[$_] > $before[$_] } 0 .. $ndev - 1), $ndev, 'every device served jobs around them');

# -- a device fails in the middle of a run (gpu mode): no query fails, no
# answer lost; the job it was running runs again on another device
my $auto = "SET gpuselect.gpu_min_rows = 1000;";
my $gpu = "SET gpuselect.device = 'gpu';";
my $requeued0 = status()->{service_requeued};
($out, $most) = run_sessions($sessions, $gpu, sub {
	return GsTest::psql_bg("$gpu SET gpuselect.test_service_fail_device = 1;\n" . one_sql('0.37'));
});
@bad = grep { !($_->[0] == 0 && $_->[1] =~ /^t\nservice\s*$/) } @$out;
is(scalar(@bad), 0, 'a device failing mid-run, gpu mode: every query answers, equal to the built-ins, through the service')
  or diag(join("\n", map { "rc=$_->[0]: $_->[1]" } @bad[0 .. ($#bad < 4 ? $#bad : 4)]));
$st = status();
is($st->{service_requeued} - $requeued0, 1, "the failed device's job ran again on another device");
is($st->{device_1_state}, 'failed', 'status: device 1 failed');
like($st->{device_1_reason}, qr/injected failure of device 1/, 'status: device 1 says why');
is($st->{service_devices_ok}, $ndev - 1, 'status: the others are in rotation');
is($st->{service_state}, 'ready', 'the service is still up');
is($st->{service_pid}, $pid, '... the same process');

# later requests go to the other devices only
@before = @{ served($st) };
($out, $most) = run_sessions(12, $auto);
@bad = grep { !($_->[0] == 0 && $_->[1] =~ /^t\nservice\s*$/) } @$out;
is(scalar(@bad), 0, 'after the failure: every answer right, through the service');
@after = @{ served(status()) };
is($after[1], $before[1], 'the failed device gets no more jobs');
is(scalar(grep { $_ != 1 && $after[$_] > $before[$_] } 0 .. $ndev - 1), $ndev - 1,
	'the other devices take them all');

# -- gpu mode, one device idle: the failing device's job answers on it
# (needs a third device: with two, device 0 is already the last one left)
if ($ndev >= 3)
{
	like(psql_value("$gpu SET gpuselect.test_service_fail_device = 2;\n" . one_sql('0.43')), qr/^t\nservice\s*$/,
		'gpu: a job on a failing device answers right on the device left');
	$st = status();
	is($st->{device_2_state}, 'failed', 'status: device 2 failed');
}
$st = status();
is($st->{service_devices_ok}, 1, 'status: one device left');
is($st->{service_pid}, $pid, 'the service is still the same process');

# -- a job's own failure (not the device's) leaves the device in rotation
my $f0 = $st->{device_0_failed};
like(psql_value("$auto SET gpuselect.test_service_fault = 'fail';\n" . one_sql('0.61')),
	qr/^t\ncpu \(fallback: GPU service: the selection failed: injected failure/,
	'a failed job (not sticky): right answer on the CPU');
$st = status();
is($st->{device_0_state}, 'ok', '... and its device stays in rotation');
is($st->{device_0_failed}, $f0 + 1, 'status: the device counts the failed job');
like(psql_value("$auto\n" . check_sql('0.62')), qr/^t\nservice/, 'the last device still serves');

# -- the last device fails: the service restarts, with all its devices
like(psql_value("$auto SET gpuselect.test_service_fail_device = 0;\n" . one_sql('0.71')),
	qr/^t\ncpu \(fallback: GPU service: the selection failed: injected failure of device 0/,
	'the last device fails: right answer on the CPU');
ok(GsTest::wait_for(sub { my $s = status(); $s->{service_state} eq 'ready' && $s->{service_pid} ne $pid }, 30),
	'no device left: the service is restarted');
$st = status();
is($st->{service_devices_ok}, $ndev, 'the restarted service has every device back');
like(psql_value("SET gpuselect.device = 'gpu';\n" . check_sql('0.72')), qr/^t\nservice/,
	'the restarted service answers');

# -- SIGTERM while every device runs a job: the lanes stop, no answer is lost
$pid = status()->{service_pid};
# (gpuselect.service_lane_depth = 2, the default: each device also holds a
# next job, which the stop hands back unstarted)
my $depth = psql_value('SHOW gpuselect.service_lane_depth;');
my $held_n = $ndev + 2;
my $on_devices = $depth * $ndev < $held_n ? $depth * $ndev : $held_n;
my @held = map { GsTest::psql_bg("$auto SET gpuselect.test_service_delay = 20000;\n" . one_sql(sprintf('0.%02d', 80 + $_))) }
  1 .. $held_n;
ok(GsTest::wait_for(sub {
	my $s = status();
	my ($n, $busy) = (0, 0);
	for my $k (0 .. $ndev - 1)
	{
		$n += $s->{"device_${k}_running"};
		$busy++ if $s->{"device_${k}_running"} > 0;
	}
	$n == $on_devices && $busy == $ndev && $s->{service_queue_length} == $held_n
}, 20), "every device runs a held job; $on_devices jobs on the devices (depth $depth), $held_n in all");
kill 'TERM', $pid;
my @res = map { [GsTest::psql_wait($_)] } @held;
is(scalar(grep { $_->[0] == 0 && $_->[1] =~ /^t\ncpu \(fallback: GPU service: / } @res), $ndev + 2,
	'SIGTERM to the service with jobs on every device: every answer right, on the CPU')
  or diag(join("\n", map { "rc=$_->[0]: $_->[1]" } @res));
ok(GsTest::wait_for(sub { my $s = status(); $s->{service_state} eq 'ready' && $s->{service_pid} ne $pid }, 30),
	'the service is back with a new pid');
is(status()->{service_devices_ok}, $ndev, '... with every device');

ok(GsTest::wait_for(sub {
	my $s = status();
	$s->{key_pool_used_bytes} == 0 && $s->{service_slots_in_use} == 0 && $s->{service_queue_length} == 0
}, 10), 'pool, job slots and queue back to empty');
my $log = `cat $h->{log}`;
unlike($log, qr/terminated by signal|PANIC|server process .* was terminated/, 'no crash, no crash restart');
like($log, qr/no device left; restarting/, 'the log says why the service restarted');
like($log, qr/"gpuselect GPU service" \(PID \d+\) exited with exit code 1/, 'the service exited with code 1');

done_testing();
