# GPU service (cpu_test mode; GS_SERVICE_MODE=on: the CUDA engine): the
# order in which it takes waiting requests.  Shortest job first alone let a
# steady stream of small groups starve a large one for as long as the stream
# lasted; with aging (a request's key count halved for every 100 ms it has
# waited) the large one is served while the stream still runs.
#
# Three sessions keep the queue busy: each runs small selections back to
# back, every one held 250 ms in the service (gpuselect.test_service_delay),
# so whenever the service picks, two small requests are waiting.  A fourth
# session's large request must come back, with the built-in's answer,
# after fewer than half of the stream's requests.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.key_pool_size = 64MB",
	"gpuselect.key_pool_chunk_size = 64kB");
END { GsTest::service_cluster_stop($h) if $h; }

psql_value('CREATE EXTENSION gpuselect;');
ok(GsTest::wait_for(sub { GsTest::service_status()->{service_state} eq 'ready' }, 30),
	'the service is ready');
psql_value(q{
SELECT setseed(0.3);
CREATE TABLE gs_small AS SELECT random() AS x FROM generate_series(1, 2000);
CREATE TABLE gs_large AS SELECT random() * 1e6 AS x FROM generate_series(1, 300000);
});

my $gpu = "SET gpuselect.device = 'gpu'; SET gpuselect.gpu_min_rows = 0;";
my $rounds = 12;
my @stream;
for (1 .. 3)
{
	push @stream, GsTest::psql_bg("$gpu SET gpuselect.test_service_delay = 250;
DO \$\$ BEGIN FOR i IN 1 .. $rounds LOOP PERFORM gpu_median(x) FROM gs_small; END LOOP; END \$\$;
SELECT 'stream done';");
}
ok(GsTest::wait_for(sub { GsTest::service_status()->{service_queue_length} >= 2 }, 30),
	'the stream of small requests keeps the queue busy');

# 300000 keys against 2000: aged below them after about 0.8 s of waiting,
# i.e. after some 4 of the stream's 250 ms jobs; without aging it waited
# until the stream thinned out, behind most of its 36 jobs
my $served0 = GsTest::service_status()->{service_served};
my $answer = psql_value("$gpu
SELECT (gpu_median(x))::text = (percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::text FROM gs_large;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';");
my $ahead = GsTest::service_status()->{service_served} - $served0 - 1;
like($answer, qr/^t\nservice/, 'the large request gets the built-in\'s answer from the service');
ok($ahead < 3 * $rounds / 2,
	"the large request was served before half of the stream's jobs ($ahead served while it waited)");

for my $s (@stream)
{
	my ($rc, $out) = GsTest::psql_wait($s);
	like($out, qr/stream done/, 'a stream session ended normally') or diag("rc=$rc: $out");
}
ok(GsTest::wait_for(sub {
	my $st = GsTest::service_status();
	$st->{key_pool_used_bytes} == 0 && $st->{service_slots_in_use} == 0 && $st->{service_queue_length} == 0
}, 10), 'pool, job slots and queue back to empty');
done_testing();
