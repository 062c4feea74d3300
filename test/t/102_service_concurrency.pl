# GPU service (cpu_test mode; GS_SERVICE_MODE=on: the CUDA engine) under load: 100 sessions at once, each with
# its own fractions, every answer checked against the built-ins in the same
# session, gpuselect.device = gpu (a fallback would be an ERROR); afterwards
# the queue, the job slots and the key pool are back to empty.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my $sessions = $ENV{GS_SERVICE_SESSIONS} // 100;
my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.key_pool_size = 64MB",
	"gpuselect.key_pool_chunk_size = 64kB",
	"max_connections = " . ($sessions + 20));
END { GsTest::service_cluster_stop($h) if $h; }

psql_value('CREATE EXTENSION gpuselect;');
ok(GsTest::wait_for(sub { GsTest::service_status()->{service_state} eq 'ready' }, 30),
	'the service is ready');
psql_value(q{
SELECT setseed(0.1);
CREATE TABLE gs_c AS SELECT g, (random() - 0.5) * 1e9 AS f8, (random() * 1e6)::int4 AS i4,
       (random() * 30000)::int2 AS i2
FROM generate_series(1, 20000) g;
});
my $served0 = GsTest::service_status()->{service_served};

my @bg;
for my $s (1 .. $sessions)
{
	my $p = sprintf('%.4f', $s / ($sessions + 1));
	push @bg, GsTest::psql_bg("SET gpuselect.device = 'gpu';
SELECT (gpu_percentile_disc($p) WITHIN GROUP (ORDER BY f8))::text = (percentile_disc($p) WITHIN GROUP (ORDER BY f8))::text
   AND (gpu_quantiles(i4, ARRAY[$p, 0.5]))::text = (percentile_disc(ARRAY[$p, 0.5]) WITHIN GROUP (ORDER BY i4))::text
   AND (gpu_percentile_cont($p) WITHIN GROUP (ORDER BY i2))::text = (percentile_cont($p) WITHIN GROUP (ORDER BY i2))::text
FROM gs_c;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';");
}
my ($good, @bad) = (0);
for my $b (@bg)
{
	my ($rc, $out) = GsTest::psql_wait($b);
	if ($rc == 0 && $out =~ /^t\nservice\s*$/) { $good++ }
	else { push @bad, "rc=$rc: $out" }
}
is($good, $sessions, "$sessions concurrent sessions: every answer equals the built-ins, through the service")
  or diag(join("\n", @bad[0 .. ($#bad < 4 ? $#bad : 4)]));

my $st = GsTest::service_status();
is($st->{service_served} - $served0, 3 * $sessions, 'the service served every selection');
is($st->{service_fallen_back}, 0, 'nothing fell back');
ok(GsTest::wait_for(sub {
	my $s = GsTest::service_status();
	$s->{key_pool_used_bytes} == 0 && $s->{service_slots_in_use} == 0 && $s->{service_queue_length} == 0
}, 10), 'pool, job slots and queue back to empty');
unlike(`cat $h->{log}`, qr/terminated by signal|PANIC/, 'no crash in the server log');

done_testing();
