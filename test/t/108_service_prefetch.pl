# GPU service (cpu_test mode; GS_SERVICE_MODE=on: the CUDA engine): prefetch.
# A scan's full key-pool chunks are copied to the device (cpu_test: to the
# lane's memory, which the CPU engine then reads instead of the pool) while
# the scan goes on; the job reads those copies and copies only the rest.
# Answers equal the built-ins (serial, three key widths, DESC, a parallel
# plan whose workers' leased chunks are adopted, pool chunks reused by the
# next query with other keys); the copies stay within
# gpuselect.service_prefetch_size and go when their chunks go: at the end
# of the query, after a cancel mid-scan, and all of them when the setting
# becomes 0, which stops prefetching.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

# 8 MB of 64 kB chunks: 128 chunks, 8192 float8 keys each (three states
# of 200000 float8 keys at once fit)
my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.key_pool_size = 8MB",
	"gpuselect.key_pool_chunk_size = 64kB",
	"max_parallel_workers_per_gather = 0");
END { GsTest::service_cluster_stop($h) if $h; }

sub status { GsTest::service_status() }
sub baseline { GsTest::service_pool_baseline(10) }
sub set_prefetch
{
	my ($v) = @_;
	psql_value("ALTER SYSTEM SET gpuselect.service_prefetch_size = '$v'; SELECT pg_reload_conf();");
	# a new session reads it at its start, the service at its next round
	# (within 100 ms)
	my $want = $v eq '-1' ? 8 << 20 : $v =~ /^(\d+)MB$/ ? $1 << 20 : 0;
	my $ok = GsTest::wait_for(sub { status()->{service_prefetch_limit_bytes} == $want }, 10);
	psql_value('SELECT pg_sleep(0.5);');
	return $ok;
}

psql_value('CREATE EXTENSION gpuselect;');
ok(GsTest::wait_for(sub { status()->{service_state} eq 'ready' }, 30), 'the service is ready');
is(status()->{service_prefetch_limit_bytes}, 8 << 20, 'status: the default budget is the key pool');
is(status()->{service_prefetch_resident_bytes}, 0, 'status: no copies');

psql_value(q{
SELECT setseed(0.7);
CREATE TABLE gs_p AS
SELECT g, CASE WHEN g % 211 = 0 THEN NULL WHEN g % 307 = 0 THEN 'NaN'::float8
               ELSE (random() - 0.5) * 1e6 END AS x,
       (random() * 4e9 - 2e9)::int4 AS i4, (random() * 60000 - 30000)::int2 AS i2
FROM generate_series(1, 200000) g;
CREATE TABLE gs_q AS SELECT g, -x * 3 + 17 AS x, -i4 AS i4 FROM gs_p;
CREATE FUNCTION gs_pause_at(g int, at int, ms int, x float8) RETURNS float8
LANGUAGE plpgsql AS $$
BEGIN
  IF g = at THEN PERFORM pg_sleep(ms / 1000.0); END IF;
  RETURN x;
END $$;
});
my $fr = "ARRAY[0, 0.001, 0.25, 0.5, 1.0/3, 0.75, 0.999, 1]::float8[]";
my $gpu = "SET gpuselect.device = 'gpu'; SET gpuselect.gpu_min_rows = 0;";

# -- serial: most keys come from the copies
my $s0 = status();
is(psql_value("$gpu
SELECT (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text
         = (SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_p)
FROM gs_p;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';"), "t\nservice",
	'serial: equal to the built-in, served by the service');
my $s1 = status();
my $used = $s1->{service_prefetch_used_bytes} - $s0->{service_prefetch_used_bytes};
# 199053 non-NULL keys in 25 chunks: the 24 full ones may have been copied
cmp_ok($s1->{service_prefetch_bytes} - $s0->{service_prefetch_bytes}, '>', 0,
	'serial: chunks were copied while the scan went on');
cmp_ok($used, '>', 0, 'serial: the job read keys from those copies');
cmp_ok($used, '<=', 24 * 65536, 'serial: at most the full chunks');
ok(baseline(), 'serial: the copies went with their chunks');

# every key width, DESC, a plain aggregate, a shared state read twice
for my $c (qw(x i4 i2))
{
	is(psql_value("$gpu
SELECT (gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY $c))::text = (percentile_disc(0.3) WITHIN GROUP (ORDER BY $c))::text,
       (gpu_percentile_cont(0.7) WITHIN GROUP (ORDER BY $c DESC))::text = (percentile_cont(0.7) WITHIN GROUP (ORDER BY $c DESC))::text,
       (gpu_quantiles($c, $fr))::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY $c))::text
FROM gs_p;"), 't|t|t', "$c: equal to the built-ins");
}

# -- the next query's chunks are the last query's (the pool's free list is
# LIFO) with other keys: a copy of the old keys must never be read
my $right = 0;
for my $k (1 .. 6)
{
	my $t = $k % 2 ? 'gs_p' : 'gs_q';
	$right += psql_value("$gpu
SELECT (gpu_quantiles(x, $fr))::text = (SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM $t)
FROM $t;") eq 't';
}
is($right, 6, 'reused chunks: six queries over two tables in turn, each equal to the built-in');

# -- a parallel plan: workers write leased chunks, the leader adopts them
$s0 = status();
is(psql_value("$gpu SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
SELECT (gpu_quantiles(x, $fr))::text = (SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_p)
FROM gs_p;"), 't', 'parallel: equal to the built-in');
$s1 = status();
cmp_ok($s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place}, '>', 0,
	'parallel: the job read chunks the workers leased');
cmp_ok($s1->{service_prefetch_used_bytes} - $s0->{service_prefetch_used_bytes}, '>', 0,
	'parallel: ... from copies made before the final call');
ok(baseline(), 'parallel: the copies went with their chunks');

# -- a scan paused mid-way: its full chunks are copied, within the budget
my $slow = "SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY gs_pause_at(g, 150000, %d, x))::text
  = (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x)::text FROM gs_p) FROM gs_p;";
ok(set_prefetch('1MB'), 'budget: 1 MB');
my $bg = GsTest::psql_bg("$gpu " . sprintf($slow, 4000));
# paused at row 150000: 18 chunks full, 16 of them fit in 1 MB
ok(GsTest::wait_for(sub { status()->{service_prefetch_resident_bytes} == 16 * 65536 }, 15),
	'paused scan: 16 of its 18 full chunks copied (the budget)');
my ($rc, $out) = GsTest::psql_wait($bg);
like($out, qr/^t\s*$/, 'paused scan: right answer at the end');
ok(baseline(), 'paused scan: the copies went with their chunks');

# -- cancel mid-scan: the copies go with the chunks
ok(set_prefetch('-1'), 'budget: the key pool again');
$bg = GsTest::psql_bg("$gpu SET application_name = 'gs_cancel_pf'; " . sprintf($slow, 30000),
	on_error_stop => 0);
ok(GsTest::wait_for(sub { status()->{service_prefetch_resident_bytes} == 18 * 65536 }, 15),
	'cancel mid-scan: 18 full chunks copied before it');
psql_value("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'gs_cancel_pf';");
($rc, $out) = GsTest::psql_wait($bg);
like($out, qr/57014/, 'cancel mid-scan: ERROR 57014');
ok(baseline(), 'cancel mid-scan: pool and copies back at baseline');

# -- stale copies: a scan's chunks freed while the lane runs another job keep
# their copies until the lane gets to the drops; a job of the next scan that
# took the same chunks runs first (jobs before prefetch orders) and must
# read its own keys, not those copies
$bg = GsTest::psql_bg("$gpu SET application_name = 'gs_stale_a'; " . sprintf($slow, 30000),
	on_error_stop => 0);
ok(GsTest::wait_for(sub { status()->{service_prefetch_resident_bytes} == 18 * 65536 }, 15),
	'stale copies: the first scan\'s full chunks copied');
my $busy = GsTest::psql_bg("$gpu SET gpuselect.test_service_delay = 6000;
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY g) FROM generate_series(1, 10) g;");
ok(GsTest::wait_for(sub { status()->{service_queue_length} >= 1 }, 10), 'stale copies: the lane is busy');
psql_value("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'gs_stale_a';");
GsTest::psql_wait($bg);
is(psql_value("$gpu
SELECT (gpu_quantiles(x, $fr))::text = (SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_q)
FROM gs_q;"), 't', 'stale copies: the next scan, in the same chunks, equals the built-in');
($rc, $out) = GsTest::psql_wait($busy);
is($rc, 0, 'stale copies: the job that held the lane answered');
ok(baseline(), 'stale copies: pool and copies back at baseline');

# -- service_prefetch_size = 0: no copies, the same answers
ok(set_prefetch('0'), 'budget: 0 (off)');
$s0 = status();
is(psql_value("$gpu
SELECT (gpu_percentile_cont(0.25) WITHIN GROUP (ORDER BY x))::text = (percentile_cont(0.25) WITHIN GROUP (ORDER BY x))::text
FROM gs_p;"), 't', 'off: equal to the built-in');
$s1 = status();
is($s1->{service_prefetch_bytes} - $s0->{service_prefetch_bytes}, 0, 'off: nothing copied');
is($s1->{service_prefetch_used_bytes} - $s0->{service_prefetch_used_bytes}, 0, 'off: nothing read from copies');
psql_value("ALTER SYSTEM RESET gpuselect.service_prefetch_size; SELECT pg_reload_conf();");

done_testing();
