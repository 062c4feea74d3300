# GPU service (cpu_test mode; GS_SERVICE_MODE=on: the CUDA engine), phase 2: keys written
# straight into the key pool during the scan.  A group headed for the GPU
# takes whole pool chunks once it holds gpuselect.gpu_min_rows keys and the
# service reads them in place; only the keys before that are copied at the
# final call.  Answers equal the built-ins (serial, a shared state read twice,
# GROUP BY with several large groups, three key widths); a scan paused
# mid-way shows its held chunks in the status, and the pool is back to empty
# after a normal end, an ERROR, a cancel, statement_timeout and
# pg_terminate_backend mid-scan; a pool that runs short mid-scan goes on in
# palloc'd chunks with the answer still right.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;
use Time::HiRes qw(time);

# 4 MB of 64 kB chunks: 64 chunks, 8192 float8 keys each; scans leave 4
my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.key_pool_size = 4MB",
	"gpuselect.key_pool_chunk_size = 64kB",
	"max_parallel_workers_per_gather = 0");
END { GsTest::service_cluster_stop($h) if $h; }

sub status { GsTest::service_status() }
sub baseline { GsTest::service_pool_baseline(10) }
sub scan_held { GsTest::wait_for(sub { status()->{key_pool_scan_bytes} > 0 }, 15) }

psql_value('CREATE EXTENSION gpuselect;');
ok(GsTest::wait_for(sub { status()->{service_state} eq 'ready' }, 30), 'the service is ready');
is(status()->{key_pool_scan_bytes}, 0, 'status: no scan holds chunks');

# 200000 rows in g order (a fresh table, no parallel scan); gs_pause_at
# sleeps (and optionally raises division_by_zero) at one row, so a test can
# look at a scan in the middle
psql_value(q{
SELECT setseed(0.3);
CREATE TABLE gs_s AS
SELECT g, CASE WHEN g % 211 = 0 THEN NULL WHEN g % 307 = 0 THEN 'NaN'::float8
               ELSE (random() - 0.5) * 1e6 END AS x,
       (random() * 4e9 - 2e9)::int4 AS i4, (random() * 60000 - 30000)::int2 AS i2
FROM generate_series(1, 200000) g;
CREATE FUNCTION gs_pause_at(g int, at int, ms int, fail bool, x float8) RETURNS float8
LANGUAGE plpgsql AS $$
BEGIN
  IF g = at THEN
    PERFORM pg_sleep(ms / 1000.0);
    IF fail THEN RETURN 1 / (g - at); END IF;
  END IF;
  RETURN x;
END $$;
});
my $fr = "ARRAY[0, 0.001, 0.25, 0.5, 1.0/3, 0.75, 0.999, 1]::float8[]";
my $gpu = "SET gpuselect.device = 'gpu'; SET gpuselect.gpu_min_rows = 1000;";

# -- serial: the group crosses gpu_min_rows inside it: palloc'd prefix copied, the rest in place
my $s0 = status();
is(psql_value("$gpu
SELECT (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text
         = (SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_s)
FROM gs_s;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';"), "t\nservice",
	'serial: equal to the built-in, served by the service');
my $s1 = status();
my $in_place = $s1->{service_keys_in_place} - $s0->{service_keys_in_place};
my $copied = $s1->{service_keys_copied} - $s0->{service_keys_copied};
is($in_place + $copied, 200000 - int(200000 / 211), 'serial: every non-NULL key reached the service');
cmp_ok($copied, '>=', 1000, 'serial: the keys before gpu_min_rows were copied at the final call');
cmp_ok($copied, '<', 4096, 'serial: only those');
cmp_ok($in_place, '>', 190000, 'serial: the rest were read in place from the chunks the scan wrote');

# gpu_min_rows = 0: every key in place, none copied
$s0 = status();
is(psql_value("SET gpuselect.device = 'gpu'; SET gpuselect.gpu_min_rows = 0;
SELECT (gpu_percentile_cont($fr) WITHIN GROUP (ORDER BY x DESC))::text
         = (SELECT (percentile_cont($fr) WITHIN GROUP (ORDER BY x DESC))::text FROM gs_s)
FROM gs_s;"), 't', 'gpu_min_rows = 0: cont DESC equal to the built-in');
$s1 = status();
is($s1->{service_keys_copied} - $s0->{service_keys_copied}, 0, 'gpu_min_rows = 0: no key copied');

# one state, two final calls (disc and cont share the ORDER BY): the held
# chunks outlive the first job; with a plain aggregate, two states hold
# chunks at once
is(psql_value("$gpu
SELECT (gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY x))::text = (percentile_disc(0.3) WITHIN GROUP (ORDER BY x))::text,
       (gpu_percentile_cont(0.7) WITHIN GROUP (ORDER BY x))::text = (percentile_cont(0.7) WITHIN GROUP (ORDER BY x))::text
FROM gs_s;"), 't|t', "x: disc and cont over one ORDER BY equal the built-ins");
for my $c (qw(i4 i2))
{
	is(psql_value("$gpu
SELECT (gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY $c))::text = (percentile_disc(0.3) WITHIN GROUP (ORDER BY $c))::text,
       (gpu_percentile_cont(0.7) WITHIN GROUP (ORDER BY $c))::text = (percentile_cont(0.7) WITHIN GROUP (ORDER BY $c))::text,
       (gpu_quantiles($c, $fr))::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY $c))::text
FROM gs_s;"), 't|t|t', "$c: shared state read twice and a plain aggregate, equal to the built-ins");
}

# three float8 states of 200000 keys want 72 chunks of the 64: the last
# state's scan goes on in palloc'd chunks; auto: every answer right
is(psql_value("SET gpuselect.gpu_min_rows = 1000;
SELECT (gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY x))::text = (percentile_disc(0.3) WITHIN GROUP (ORDER BY x))::text,
       (gpu_percentile_cont(0.7) WITHIN GROUP (ORDER BY x DESC))::text = (percentile_cont(0.7) WITHIN GROUP (ORDER BY x DESC))::text,
       (gpu_quantiles(x, $fr))::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text
FROM gs_s;"), 't|t|t', 'x: three states more than the pool holds, auto: equal to the built-ins');
# gpu: the chunks missing at a final call are held by the same query's
# other states: a clean ERROR at once, not a wait for service_timeout
my $t0 = time;
my ($rc0, $out0) = psql("$gpu
SELECT gpu_percentile_disc(0.3) WITHIN GROUP (ORDER BY x), gpu_percentile_cont(0.7) WITHIN GROUP (ORDER BY x DESC),
       gpu_quantiles(x, $fr) FROM gs_s;");
if ($rc0 == 0)
{
	pass('x: three states, gpu: answered');
}
else
{
	like($out0, qr/55000.*the key pool is exhausted/s, 'x: three states, gpu: clean ERROR 55000');
}
cmp_ok(time - $t0, '<', 10, 'x: three states, gpu: no wait for its own chunks');
ok(baseline(), 'the pool is empty after that');

# GROUP BY, several large groups holding chunks at once (hash and sort)
for my $plan ('SET enable_sort = off;', 'SET enable_hashagg = off;')
{
	$s0 = status();
	is(psql_value("$gpu $plan
SELECT count(*), bool_and(a::text = b::text) FROM (
  SELECT g % 5 AS k, gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY i4) AS a,
         percentile_disc($fr) WITHIN GROUP (ORDER BY i4) AS b FROM gs_s GROUP BY 1) s;"),
		'5|t', "GROUP BY ($plan): 5 groups of 40000 equal the built-ins");
	$s1 = status();
	is($s1->{service_served} - $s0->{service_served}, 5, 'GROUP BY: 5 selections served');
	cmp_ok($s1->{service_keys_in_place} - $s0->{service_keys_in_place}, '>', 150000,
		'GROUP BY: most keys read in place');
}
ok(baseline(), 'the pool is empty after the answers');

# -- a scan paused mid-way holds chunks; they go back at its end
my $slow = "SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY gs_pause_at(g, 150000, %d, %s, x))::text
  = (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x)::text FROM gs_s) FROM gs_s;";
my $bg = GsTest::psql_bg("$gpu " . sprintf($slow, 4000, 'false'));
ok(scan_held(), 'paused scan: status shows the chunks it holds');
# paused at row 150000: (150000 - 1008) / 8192 chunks full, one more begun
ok(GsTest::wait_for(sub { status()->{key_pool_scan_bytes} == 19 * 65536 }, 10),
	'paused scan: 19 chunks held at row 150000');
my ($rc, $out) = GsTest::psql_wait($bg);
like($out, qr/^t\s*$/, 'paused scan: right answer at the end');
ok(baseline(), 'normal end: the pool is back at baseline');

# After an ERROR, a cancel or a timeout the session goes on (psql does not
# stop) and reads the pool's use itself: the state's reset callback gave the
# chunks back, not the backend's exit.
my $after = "SELECT 'after=' || value FROM gpuselect_status() WHERE name = 'key_pool_used_bytes';";

# -- an ERROR raised mid-scan (division by zero after 150000 rows)
$bg = GsTest::psql_bg("$gpu " . sprintf($slow, 1500, 'true') . $after, on_error_stop => 0);
ok(scan_held(), 'ERROR mid-scan: chunks held before it');
($rc, $out) = GsTest::psql_wait($bg);
like($out, qr/22012/, 'ERROR mid-scan: division_by_zero');
like($out, qr/^after=0$/m, 'ERROR mid-scan: the chunks are back while the session goes on');
ok(baseline(), 'ERROR mid-scan: the pool is back at baseline');

# -- pg_cancel_backend mid-scan
$bg = GsTest::psql_bg("$gpu SET application_name = 'gs_cancel_scan'; " . sprintf($slow, 30000, 'false') . $after,
	on_error_stop => 0);
ok(scan_held(), 'cancel mid-scan: chunks held');
psql_value("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'gs_cancel_scan';");
($rc, $out) = GsTest::psql_wait($bg);
like($out, qr/57014/, 'cancel mid-scan: ERROR 57014');
like($out, qr/^after=0$/m, 'cancel mid-scan: the chunks are back while the session goes on');
ok(baseline(), 'cancel mid-scan: the pool is back at baseline');

# -- statement_timeout mid-scan
$bg = GsTest::psql_bg("$gpu SET statement_timeout = 3000; " . sprintf($slow, 30000, 'false')
	. "RESET statement_timeout; $after", on_error_stop => 0);
ok(scan_held(), 'statement_timeout mid-scan: chunks held');
($rc, $out) = GsTest::psql_wait($bg);
like($out, qr/57014/, 'statement_timeout mid-scan: ERROR 57014');
like($out, qr/^after=0$/m, 'statement_timeout mid-scan: the chunks are back while the session goes on');
ok(baseline(), 'statement_timeout mid-scan: the pool is back at baseline');

# -- a rescanned aggregate (a LATERAL subquery run once per k): each run's
# chunks go back at the rescan, else ten runs of 100000 keys (12 chunks
# each) would not fit in the 64 and gpu would fail
is(psql_value("$gpu
SELECT count(*), bool_and(a::text = b::text) FROM generate_series(1, 10) k,
  LATERAL (SELECT gpu_percentile_disc(k / 20.0) WITHIN GROUP (ORDER BY x) AS a,
                  percentile_disc(k / 20.0) WITHIN GROUP (ORDER BY x) AS b
           FROM gs_s WHERE g % 2 = k % 2) s;"), '10|t', 'rescan: ten runs equal the built-ins');
ok(baseline(), 'rescan: the pool is back at baseline');

# -- pg_terminate_backend mid-scan (FATAL: exit cleanup)
$bg = GsTest::psql_bg("$gpu SET application_name = 'gs_kill_scan'; " . sprintf($slow, 30000, 'false'));
ok(scan_held(), 'terminate mid-scan: chunks held');
psql_value("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'gs_kill_scan';");
($rc, $out) = GsTest::psql_wait($bg);
isnt($rc, 0, 'terminate mid-scan: the session ends');
ok(baseline(), 'terminate mid-scan: the pool is back at baseline');

# -- the pool runs short mid-scan: two paused scans hold 2 x 25 of the 64
# chunks, so a third gets only what is left above the scans' reserve and
# palloc's the rest; gpu waits at its final call for the chunks to copy
# them into, auto ends on the CPU.  Both answers right.
my @holders = map {
	GsTest::psql_bg("$gpu " . sprintf("SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY gs_pause_at(g, 199990, %d, false, x)) FROM gs_s;", 6000))
} 1 .. 2;
ok(GsTest::wait_for(sub { status()->{key_pool_scan_bytes} >= 48 * 65536 }, 15), 'two paused scans hold most of the pool');
$s0 = status();
is(psql_value("SET gpuselect.gpu_min_rows = 1000;
SELECT gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY x)::text = (SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_s) FROM gs_s;"),
	't', 'pool short mid-scan, auto: right answer');
$s1 = status();
cmp_ok($s1->{key_pool_scan_short}, '>', $s0->{key_pool_scan_short}, 'status: the scan was short of chunks');
like(psql_value("$gpu SELECT gpu_percentile_cont($fr) WITHIN GROUP (ORDER BY x)::text = (SELECT (percentile_cont($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_s) FROM gs_s;
SELECT value FROM gpuselect_status() WHERE name = 'last_path';"),
	qr/^t\nservice$/, 'pool short mid-scan, gpu: waits for chunks, the service answers right');
my $s2 = status();
cmp_ok($s2->{key_pool_scan_short}, '>', $s1->{key_pool_scan_short}, 'status: that scan was short too');
cmp_ok($s2->{service_keys_copied} - $s1->{service_keys_copied}, '>', 8192,
	'the palloc\'d keys past the shortage were copied at the final call');
GsTest::psql_wait($_) for @holders;
ok(baseline(), 'pool short: the pool is back at baseline');

is(status()->{service_device_bytes}, 0, 'status: device memory published (cpu_test: none)')
	if GsTest::service_mode() eq 'cpu_test';
unlike(`cat $h->{log}`, qr/terminated by signal|PANIC/, 'no crash in the server log');

done_testing();
