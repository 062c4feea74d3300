# GPU service (cpu_test mode; GS_SERVICE_MODE=on: the CUDA engine): the key
# pool's queue (issue #29, defect 2).  Groups that each take ~60% of a small
# pool, several sessions at once in gpuselect.device = gpu: every scan holds
# part of the pool, so a final call that waited for chunks while holding its
# own would wait for the others' and they for its (hold-and-wait: all
# stalled until service_timeout).  Now a final call that cannot have its
# chunks at once gives back what it holds and queues for all of them, so
# every session answers (right, as the built-ins) long before the 60 s
# service_timeout, and the pool ends empty.  The first in line fills the
# chunks it takes while it waits for the rest (service_pool_filled_waiting).  A group larger than the whole
# pool is a 55000 ERROR at once, even while the pool is busy.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;
use Time::HiRes qw(time);

my $sessions = 4;
my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.key_pool_size = 16MB",
	"gpuselect.key_pool_chunk_size = 256kB",
	"gpuselect.service_timeout = 60s",
	"max_connections = 30");
END { GsTest::service_cluster_stop($h) if $h; }

sub status { GsTest::service_status() }

psql_value('CREATE EXTENSION gpuselect;');
ok(GsTest::wait_for(sub { status()->{service_state} eq 'ready' }, 30), 'the service is ready');
# 1.2M float8 = 9.6 MB: 60% of the 16 MB pool, so no two fit at once
psql_value(q{
SELECT setseed(0.29);
CREATE TABLE gs_q AS SELECT (random() - 0.5) * 1e9 AS x FROM generate_series(1, 1200000) g;
ANALYZE gs_q;
});
# the built-ins' answers, once
my @p = map { sprintf('%.2f', $_ / ($sessions + 1)) } 1 .. $sessions;
my %want = map {
	$_ => psql_value("SELECT percentile_disc($_) WITHIN GROUP (ORDER BY x)::text FROM gs_q")
} @p;
my $s0 = status();
my $one = "SET gpuselect.device = 'gpu'; SET gpuselect.gpu_min_rows = 1000;
SET max_parallel_workers_per_gather = 0;
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x)::text FROM gs_q;";
# one alone, for the log: the sessions below take turns, so each should take
# about this long plus its wait
my $t1 = time;
psql_value($one);
diag(sprintf('one session alone: %.1f s', time - $t1));

my @bg;
for my $p (@p)
{
	push @bg, [ $p, time, GsTest::psql_bg("SET gpuselect.device = 'gpu'; SET gpuselect.gpu_min_rows = 1000;
SET max_parallel_workers_per_gather = 0;
SELECT gpu_percentile_disc($p) WITHIN GROUP (ORDER BY x)::text FROM gs_q;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';") ];
}
my ($good, $slow, @bad) = (0, 0);
for my $b (@bg)
{
	my ($p, $t0, $hd) = @$b;
	my ($rc, $out) = GsTest::psql_wait($hd);
	my $dt = time - $t0;
	$out =~ s/\s+$//;
	if ($rc == 0 && $out eq "$want{$p}\nservice") { $good++ }
	else { push @bad, "p=$p rc=$rc: $out" }
	# a hang would last until the 60 s service_timeout
	$slow++ if $dt > 30;
	diag(sprintf('p=%s: %.1f s', $p, $dt));
}
is($good, $sessions, "$sessions concurrent gpu sessions, each group 60% of the pool: every answer right, from the service")
  or diag(join("\n", @bad));
is($slow, 0, 'no session waited for the timeout (no hold-and-wait)');
my $st = status();
cmp_ok($st->{service_pool_waits} - $s0->{service_pool_waits}, '>', 0, 'final calls queued for the pool');
# the first in line takes the chunks that are free (at least the scans'
# reserve) and copies its keys into them while it waits for the rest,
# instead of copying all of them after the job before it ends
cmp_ok(($st->{service_pool_filled_waiting} // -1) - ($s0->{service_pool_filled_waiting} // 0), '>', 0,
	'the first in line filled job chunks while it waited for the rest');
is($st->{service_fallen_back}, 0, 'nothing fell back');
ok(GsTest::service_pool_baseline(10), 'pool, held chunks and job slots back to empty');
is(status()->{key_pool_waiting}, 0, 'nobody left in the pool queue');

# the same in auto: right answers whatever path each took, nothing left behind
@bg = ();
for my $p (@p)
{
	push @bg, [ $p, GsTest::psql_bg("SET gpuselect.gpu_min_rows = 1000; SET max_parallel_workers_per_gather = 0;
SELECT gpu_percentile_disc($p) WITHIN GROUP (ORDER BY x)::text FROM gs_q;") ];
}
($good, @bad) = (0);
for my $b (@bg)
{
	my ($p, $hd) = @$b;
	my ($rc, $out) = GsTest::psql_wait($hd);
	$out =~ s/\s+$//;
	if ($rc == 0 && $out eq $want{$p}) { $good++ }
	else { push @bad, "p=$p rc=$rc: $out" }
}
is($good, $sessions, "auto: $sessions concurrent sessions, every answer right") or diag(join("\n", @bad));
ok(GsTest::service_pool_baseline(10), 'auto: pool back to empty');

# -- a group larger than the pool (2.2M float8 > 16 MB): 55000 at once, also while
# another session's job holds most of the pool
my $holder = GsTest::psql_bg("SET gpuselect.device = 'gpu'; SET gpuselect.gpu_min_rows = 1000;
SET max_parallel_workers_per_gather = 0; SET gpuselect.test_service_delay = 3000;
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x)::text FROM gs_q;");
ok(GsTest::wait_for(sub { status()->{service_queue_length} == 1 }, 20), 'a job holds most of the pool');
my $t0 = time;
my ($rc, $out) = psql("SET gpuselect.device = 'gpu'; SET gpuselect.gpu_min_rows = 1000;
SELECT gpu_median(g::float8) FROM generate_series(1, 2200000) g;");
my $dt = time - $t0;
like($out, qr/55000.*larger than the key pool/s, 'gpu: a group larger than the pool is a clean 55000 ERROR');
cmp_ok($dt, '<', 30, sprintf('... at once, not after the timeout (%.1f s)', $dt));
($rc, $out) = GsTest::psql_wait($holder);
$out =~ s/\s+$//;
is($out, psql_value("SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x)::text FROM gs_q"),
	'the held job is answered');
ok(GsTest::service_pool_baseline(10), 'pool back to empty at the end');
unlike(`cat $h->{log}`, qr/terminated by signal|PANIC/, 'no crash in the server log');

done_testing();
