# GPU service (cpu_test mode; GS_SERVICE_MODE=on: the CUDA engine): a cluster of its own with gpuselect preloaded.
# Every aggregate, every key width, exact and approximate, through the
# service (gpuselect.device = gpu: a fallback would be an ERROR) gives the
# built-ins' answers; the status fields; an injected job failure (and, with
# the CUDA engine, a failed launch and a device out of memory inside it)
# falls back in auto (same answer) and is a clean ERROR in gpu; the pool is
# back to empty afterwards.
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
my $st = GsTest::service_status();
is($st->{service}, GsTest::service_mode(), 'status: service mode');
like($st->{service_pid}, qr/^\d+$/, 'status: service pid');
like($st->{service_up_since}, qr/^\d{4}-/, 'status: up since');
like($st->{service_device}, GsTest::service_mode() eq 'on' ? qr/./ : qr/cpu_test/, 'status: device');
is($st->{key_pool_bytes}, 64 << 20, 'status: pool size');
is($st->{key_pool_chunk_bytes}, 64 << 10, 'status: chunk size');
is($st->{key_pool_used_bytes}, 0, 'status: pool empty');
is($st->{service_queue_length}, 0, 'status: queue empty');
my $served0 = $st->{service_served};

psql_value(q{
SELECT setseed(0.42);
CREATE TABLE gs_t AS
SELECT g,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 200 - 100)::int2 END AS i2,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END AS i4,
       CASE WHEN random() < 0.05 THEN NULL ELSE ((random() - 0.5) * 1.8e19)::int8 END AS i8,
       CASE WHEN g % 97 = 0 THEN 'NaN'::float4 WHEN g % 89 = 0 THEN '-0'::float4
            WHEN random() < 0.05 THEN NULL ELSE ((random() - 0.5) * 2e6)::float4 END AS f4,
       CASE WHEN g % 101 = 0 THEN 'NaN'::float8 WHEN g % 103 = 0 THEN '-Infinity'::float8
            WHEN g % 5 = 0 THEN round(random() * 10)::float8
            WHEN random() < 0.05 THEN NULL ELSE (random() - 0.5) * 1e12 END AS f8,
       CASE WHEN random() < 0.05 THEN NULL ELSE date '2000-01-01' + (random() * 40000 - 20000)::int END AS d,
       CASE WHEN random() < 0.05 THEN NULL ELSE timestamp '2000-01-01' + random() * interval '20000 days' END AS ts
FROM generate_series(1, 30000) g;
});

my $fr = "ARRAY[0, 1, 0.07, 1.0/3, 0.5, 0.001, 0.999, 0.123456789, NULL, 0.5]::float8[]";
my $n_queries = 0;
for my $c (qw(i2 i4 i8 f4 f8 d ts))
{
	my $q = "SET gpuselect.device = 'gpu';
SELECT (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY $c))::text
         = (percentile_disc($fr) WITHIN GROUP (ORDER BY $c))::text,
       (gpu_percentile_disc(0.37) WITHIN GROUP (ORDER BY $c DESC))::text
         = (percentile_disc(0.37) WITHIN GROUP (ORDER BY $c DESC))::text,
       (gpu_quantile($c, 0.9))::text = (percentile_disc(0.9) WITHIN GROUP (ORDER BY $c))::text,
       (gpu_quantiles($c, $fr))::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY $c))::text
FROM gs_t;";
	is(psql_value($q), 't|t|t|t', "$c: disc, disc DESC, quantile, quantiles equal the built-ins");
	$n_queries += 4;
	next if $c eq 'd' || $c eq 'ts';
	$q = "SET gpuselect.device = 'gpu';
SELECT (gpu_percentile_cont($fr) WITHIN GROUP (ORDER BY $c))::text
         = (percentile_cont($fr) WITHIN GROUP (ORDER BY $c))::text,
       (gpu_percentile_cont(0.61) WITHIN GROUP (ORDER BY $c DESC))::text
         = (percentile_cont(0.61) WITHIN GROUP (ORDER BY $c DESC))::text,
       (gpu_median($c))::text = (percentile_cont(0.5) WITHIN GROUP (ORDER BY $c))::text
FROM gs_t;";
	is(psql_value($q), 't|t|t', "$c: cont, cont DESC, median equal the built-ins");
	$n_queries += 3;
}

# grouped: many groups, each its own job
is(psql_value("SET gpuselect.device = 'gpu';
SELECT bool_and(a::text = b::text) FROM (
  SELECT g % 13 AS k, gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY f8) AS a,
         percentile_disc(0.3) WITHIN GROUP (ORDER BY f8) AS b FROM gs_t GROUP BY 1) s;"),
	't', 'GROUP BY: 13 groups equal the built-ins');
$n_queries += 13;

$st = GsTest::service_status();
is($st->{service_served} - $served0, $n_queries, "the service served all $n_queries selections");
is($st->{service_fallen_back}, 0, 'nothing fell back');

# approximate: the same picks as the backend's own CPU engine (same seed)
for my $c (qw(i2 i4 f8))
{
	my $q = "SET gpuselect.approximate = on; SET gpuselect.approx_buckets = 64;
SET gpuselect.device = 'cpu';
CREATE TEMP TABLE a AS SELECT gpu_quantiles($c, ARRAY[0.1, 0.5, 0.9])::text AS v FROM gs_t;
SELECT value FROM gpuselect_status() WHERE name = 'last_rank_bound';
SET gpuselect.device = 'gpu';
SELECT gpu_quantiles($c, ARRAY[0.1, 0.5, 0.9])::text = (SELECT v FROM a) FROM gs_t;
SELECT value FROM gpuselect_status() WHERE name IN ('last_path', 'last_rank_bound') ORDER BY name;";
	my @out = split /\n/, psql_value($q);
	is_deeply(\@out, [ $out[0], 't', 'service', $out[0] ],
		"$c approximate: same picks and rank bound as the backend's CPU engine");
}

# an injected job failure: auto falls back with the right answer, gpu errors
my $q = "SET gpuselect.test_service_fault = 'fail'; SET gpuselect.gpu_min_rows = 1000;
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY f8)::text = percentile_disc(0.5) WITHIN GROUP (ORDER BY f8)::text FROM gs_t;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';";
like(psql_value($q), qr/^t\ncpu \(fallback: GPU service: the selection failed: injected/,
	'auto: a failed job falls back to the CPU with the same answer');
my ($rc, $out) = psql("SET gpuselect.test_service_fault = 'fail'; SET gpuselect.device = 'gpu';
SELECT gpu_median(f8) FROM gs_t;");
isnt($rc, 0, 'gpu: a failed job is an ERROR');
like($out, qr/55000.*gpuselect.device is "gpu" but the GPU service did not answer/s, 'gpu: clean ERROR 55000');

# small groups stay on the backend's CPU in auto (gpu_min_rows), service untouched
$st = GsTest::service_status();
my $served1 = $st->{service_served};
psql_value("SELECT gpu_median(f8) FROM gs_t;");
is(GsTest::service_status()->{service_served}, $served1, 'groups below gpu_min_rows do not use the service');

$st = GsTest::service_status();
is($st->{service_failed}, 2, 'status: two failed jobs');
is($st->{service_fallen_back}, 1, 'status: one fallback');
is($st->{key_pool_used_bytes}, 0, 'the pool is empty again');
# faults inside the engine (GS_SERVICE_MODE=on: the CUDA engine's own
# injected launch failure, and a device memory cap that holds the job's keys
# but none of the selection's scratch; cpu_test: a plain job failure): the
# job fails, auto answers right on the CPU, gpu is a clean ERROR, and the
# service stays up and serves the next job
my $pid0 = GsTest::service_status()->{service_pid};
for my $fault (qw(launch oom))
{
	my $failed0 = GsTest::service_status()->{service_failed};
	like(psql_value("SET gpuselect.test_service_fault = '$fault'; SET gpuselect.gpu_min_rows = 1000;
SELECT gpu_quantiles(f8, ARRAY[0.1, 0.5, 0.9])::text = percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY f8)::text FROM gs_t;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';"),
		qr/^t\ncpu \(fallback: GPU service: the selection failed: /,
		"$fault: auto falls back to the CPU with the same answer");
	($rc, $out) = psql("SET gpuselect.test_service_fault = '$fault'; SET gpuselect.device = 'gpu';
SELECT gpu_percentile_cont(0.25) WITHIN GROUP (ORDER BY i8) FROM gs_t;");
	isnt($rc, 0, "$fault: gpu is an ERROR");
	like($out, qr/55000/, "$fault: gpu: clean ERROR 55000");
	like(psql_value("SET gpuselect.device = 'gpu';
SELECT gpu_percentile_cont(0.25) WITHIN GROUP (ORDER BY i8) = percentile_cont(0.25) WITHIN GROUP (ORDER BY i8) FROM gs_t;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';"),
		qr/^t\nservice/, "$fault: the next job is served, right");
	$st = GsTest::service_status();
	is($st->{service_failed}, $failed0 + 2, "$fault: two more failed jobs");
	is($st->{service_pid}, $pid0, "$fault: the service did not restart");
	is($st->{key_pool_used_bytes}, 0, "$fault: the pool is empty again");
}
unlike(`cat $h->{log}`, qr/terminated by signal|PANIC/, 'no crash in the server log');

done_testing();
