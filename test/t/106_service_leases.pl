# GPU service (cpu_test mode; GS_SERVICE_MODE=on: the CUDA engine), leases:
# the partial states of a parallel plain aggregate (workers, and the
# leader's own partial aggregation) write their keys into key-pool chunks
# leased to the leader, which adopts them when it combines the states and
# hands them to the service in place (src/state/service_scan.c).  Answers equal
# the built-ins (three key widths, several aggregates, with and without
# leader participation, GROUP BY hashed and sorted, the CPU fallback
# reading the same chunks); service_worker_keys_in_place moves; the pool
# is back to empty after success, an ERROR in the leader's final call, an
# ERROR in the leader's combine after some states were read, an ERROR in a
# worker, a cancel mid-scan, pg_terminate_backend of the leader, and a
# LIMIT.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

# 64 MB of 1 MB chunks: 64 chunks, scans leave 4
my $h = GsTest::service_cluster_start(
	"shared_preload_libraries = 'gpuselect'",
	"gpuselect.service = " . GsTest::service_mode(),
	"gpuselect.key_pool_size = 64MB",
	"gpuselect.key_pool_chunk_size = 1MB",
	"max_worker_processes = 8",
	"max_parallel_workers = 8");
END { GsTest::service_cluster_stop($h) if $h; }

sub status { GsTest::service_status() }
sub baseline { GsTest::service_pool_baseline(15) }
sub held { GsTest::wait_for(sub { status()->{key_pool_scan_bytes} > 0 }, 30) }

psql_value('CREATE EXTENSION gpuselect;');
ok(GsTest::wait_for(sub { status()->{service_state} eq 'ready' }, 30), 'the service is ready');

# 900000 rows; each of 3 participants' x state passes the arena's 256 kB
# rule after ~32000 keys and leases 1 MB chunks for the rest
create_parallel_table('gs_l');
# i4 = g * 7919 mod 1000003 is one-to-one: the row g = 800000 by its i4
my $late_i4 = (800000 * 7919) % 1000003;
psql_value(q{
CREATE FUNCTION gs_pause_at(v int, at int, ms int, fail bool, x float8) RETURNS float8
LANGUAGE plpgsql PARALLEL SAFE AS $$
BEGIN
  IF v = at THEN
    PERFORM pg_sleep(ms / 1000.0);
    IF fail THEN RETURN 1 / (v - at); END IF;
  END IF;
  RETURN x;
END $$;
-- the leader says 0.3, workers 0.4 (pg_backend_pid is parallel restricted;
-- this wrapper claims otherwise on purpose)
CREATE FUNCTION gs_leader_frac() RETURNS float8
LANGUAGE sql PARALLEL SAFE AS $$
  SELECT CASE WHEN pg_backend_pid() = current_setting('gs.leader')::int THEN 0.3 ELSE 0.4 END $$;
});

my ($gpuq, $builtin) = parallel_table_queries('gs_l');
my $want = psql_value("SET max_parallel_workers_per_gather = 0; $builtin;");
my $par = force_parallel_executor(2) . "SET gpuselect.gpu_min_rows = 0; SET statement_timeout = '120s';\n";
my $after = "SELECT 'after=' || value FROM gpuselect_status() WHERE name = 'key_pool_used_bytes';";

like(psql_value($par . "EXPLAIN (COSTS OFF) $gpuq;"), qr/Workers Planned: 2.*Partial Aggregate/s,
	'the plan is parallel, partial aggregation under a Gather');

# -- success, leader participation on and off
for my $lp ('on', 'off')
{
	my $s0 = status();
	is(psql_value($par . "SET parallel_leader_participation = $lp; SET gpuselect.device = 'gpu';\n$gpuq;\n"
			. "SELECT value FROM gpuselect_status() WHERE name = 'last_path';"),
		"$want\nservice", "leader participation $lp: equal to the built-ins, served by the service");
	my $s1 = status();
	my $worker = $s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place};
	my $in_place = $s1->{service_keys_in_place} - $s0->{service_keys_in_place};
	my $copied = $s1->{service_keys_copied} - $s0->{service_keys_copied};
	# gpu_quantiles(x), gpu_median(x), gpu_quantile(i4), gpu_quantiles(i2): 4 groups of ~900000
	cmp_ok($in_place + $copied, '>', 4 * 890000, "leader participation $lp: every key reached the service");
	cmp_ok($worker, '<=', $in_place, "leader participation $lp: leased keys are counted among those read in place");
	# a partial state leases once its palloc'd chunks reach 256 kB (the
	# arena's rule): at most 2 x 256 kB of keys before that, i.e. 65536 of
	# x (two states), 131072 of i4 and 262144 of i2 per participant
	my $prefix = ($lp eq 'on' ? 3 : 2) * (2 * 65536 + 131072 + 262144);
	cmp_ok($worker, '>=', $in_place + $copied - $prefix,
		"leader participation $lp: every key past the 256 kB rule was written into leased chunks");
	is($s1->{service_served} - $s0->{service_served}, 4, "leader participation $lp: 4 selections served");
	is($s1->{key_pool_leases_swept} - $s0->{key_pool_leases_swept}, 0,
		"leader participation $lp: every lease adopted, none swept");
	ok(baseline(), "leader participation $lp: the pool is back at baseline");
}

# -- the bulk scan's parallel plan (Custom Scan (gpuselect) in each
# participant): its partial states lease chunks under the same rule
{
	my $bulk = force_parallel(2) . "SET gpuselect.gpu_min_rows = 0; SET statement_timeout = '120s';\n";
	like(psql_value($bulk . "EXPLAIN (COSTS OFF) $gpuq;"), qr/Gather.*Parallel Custom Scan \(gpuselect\)/s,
		'bulk scan: the plan is parallel');
	my $s0 = status();
	is(psql_value($bulk . "SET gpuselect.device = 'gpu';\n$gpuq;\n"
			. "SELECT value FROM gpuselect_status() WHERE name = 'last_path';"),
		"$want\nservice", 'bulk scan, parallel: equal to the built-ins, served by the service');
	my $s1 = status();
	my $worker = $s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place};
	my $in_place = $s1->{service_keys_in_place} - $s0->{service_keys_in_place};
	my $copied = $s1->{service_keys_copied} - $s0->{service_keys_copied};
	my $prefix = 3 * (2 * 65536 + 131072 + 262144);
	cmp_ok($worker, '>=', $in_place + $copied - $prefix,
		'bulk scan: every key past the 256 kB rule was written into leased chunks');
	is($s1->{key_pool_leases_swept} - $s0->{key_pool_leases_swept}, 0, 'bulk scan: every lease adopted');
	ok(baseline(), 'bulk scan: the pool is back at baseline');
}

# -- several statements in one transaction: leases of each are adopted;
# the pool is empty once it ends
is(psql_value($par . "SET gpuselect.device = 'gpu'; BEGIN;\n$gpuq;\n$gpuq;\nCOMMIT;\n$after"),
	"$want\n$want\nafter=0", 'two queries in one transaction: equal to the built-ins, pool empty after');

# -- the built-in percentile_disc accelerated (the planner path's states lease too)
my $s0 = status();
is(psql_value($par . "SET gpuselect.device = 'gpu'; SET gpuselect.accelerate_builtins = on;\n$builtin;"),
	$want, 'accelerated built-ins, parallel: equal to the built-ins');
my $s1 = status();
cmp_ok($s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place}, '>', 0,
	'accelerated built-ins: leased keys read in place');
ok(baseline(), 'accelerated built-ins: the pool is back at baseline');

# -- GROUP BY: grouped partial states lease too (not the arena), once they
# hold a pool chunk's worth of keys (1 MB: grp / 4 is one group, ~300000
# float8 keys a participant; grp's 4 groups of i4 only ~75000 int4), whether
# the leader hashes them or sorts them first; the built-in's rewrite as well
my $fr = q{ARRAY[0, 0.001, 0.25, 0.5, 0.75, 0.999, 1]::float8[]};
for my $plan ('SET enable_sort = off;', 'SET enable_hashagg = off;')
{
	$s0 = status();
	is(psql_value($par . "SET gpuselect.device = 'gpu'; $plan
SELECT count(*), bool_and(a = b) FROM (
  SELECT grp / 4 AS k, gpu_quantiles(x, $fr)::text AS a FROM gs_l GROUP BY 1) s
  JOIN (SELECT grp / 4 AS k, (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text AS b FROM gs_l GROUP BY 1) t USING (k);"),
		'1|t', "GROUP BY, parallel ($plan): equal to the built-ins");
	$s1 = status();
	cmp_ok($s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place}, '>', 0,
		"GROUP BY ($plan): leased keys read in place");
	ok(baseline(), "GROUP BY ($plan): the pool is back at baseline");
}
$s0 = status();
is(psql_value($par . "SET gpuselect.device = 'gpu'; SET gpuselect.accelerate_builtins = on;
SELECT (percentile_cont(0.37) WITHIN GROUP (ORDER BY x DESC))::text AS a FROM gs_l GROUP BY grp / 4 \\gset
SET gpuselect.accelerate_builtins = off; SET max_parallel_workers_per_gather = 0;
SELECT (percentile_cont(0.37) WITHIN GROUP (ORDER BY x DESC))::text = :'a' FROM gs_l GROUP BY grp / 4;"),
	't', 'GROUP BY, accelerated built-in cont DESC: equal to the built-in');
$s1 = status();
cmp_ok($s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place}, '>', 0,
	'GROUP BY, accelerated built-in: leased keys read in place');
ok(baseline(), 'GROUP BY, accelerated built-in: the pool is back at baseline');
# 4 groups of i4: ~300 kB a participant's group, under a chunk: no lease
$s0 = status();
is(psql_value($par . "SET gpuselect.device = 'gpu';
SELECT count(*), bool_and(a = b) FROM (
  SELECT grp, gpu_quantiles(i4, $fr)::text AS a FROM gs_l GROUP BY grp) s
  JOIN (SELECT grp, (percentile_disc($fr) WITHIN GROUP (ORDER BY i4))::text AS b FROM gs_l GROUP BY grp) t USING (grp);"),
	'4|t', 'GROUP BY, 4 mid-sized groups: equal to the built-ins');
$s1 = status();
is($s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place}, 0,
	'GROUP BY, mid-sized groups: below a chunk a group, no lease');

# -- auto, the service's job fails: the CPU fallback reads the same chunks
$s0 = status();
is(psql_value($par . "SET gpuselect.device = 'auto'; SET gpuselect.test_service_fault = 'fail';\n$gpuq;"),
	$want, 'auto, the service fails each job: the CPU fallback equals the built-ins');
$s1 = status();
is($s1->{service_fallen_back} - $s0->{service_fallen_back}, 4, 'auto: 4 fallbacks');
cmp_ok($s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place}, '>', 0,
	'auto: the fallen-back groups had leased keys');
ok(baseline(), 'auto fallback: the pool is back at baseline');

# -- gpu, the service's job fails: an ERROR in the leader's final function
my ($rc, $out) = psql($par . "SET gpuselect.device = 'gpu'; SET gpuselect.test_service_fault = 'fail';\n$gpuq;\n"
	  . "RESET gpuselect.test_service_fault;\n$after", on_error_stop => 0);
like($out, qr/the GPU service did not answer/, 'ERROR in the final function: the service\'s failure');
like($out, qr/^after=0$/m, 'ERROR in the final function: the pool is empty while the session goes on');
ok(baseline(), 'ERROR in the final function: the pool is back at baseline');

# -- an ERROR in the leader's combine after it read some states: the
# leader's partial state fixes fraction 0.3, the workers' 0.4
$s0 = status();
($rc, $out) = psql($par . "SET gpuselect.device = 'gpu'; SET parallel_leader_participation = on;\n"
	  . "SELECT set_config('gs.leader', pg_backend_pid()::text, false);\n"
	  . "SELECT gpu_quantile(x, gs_leader_frac()) FROM gs_l;\n$after", on_error_stop => 0);
like($out, qr/the fraction must be the same in every row/, 'ERROR in the combine: fraction mismatch');
like($out, qr/^after=0$/m, 'ERROR in the combine: the pool is empty while the session goes on');
$s1 = status();
cmp_ok($s1->{key_pool_leases_swept} - $s0->{key_pool_leases_swept}, '>', 0,
	'ERROR in the combine: unadopted leases swept at the abort');
ok(baseline(), 'ERROR in the combine: the pool is back at baseline');

# -- an ERROR in a worker (or the leader's partial scan) late in the table
my $slow = "SELECT gpu_quantiles(gs_pause_at(i4, $late_i4, %d, %s, x), $fr)::text FROM gs_l;\n";
($rc, $out) = psql($par . "SET gpuselect.device = 'gpu';\n" . sprintf($slow, 1000, 'true') . $after,
	on_error_stop => 0);
like($out, qr/division by zero/, 'ERROR in a partial scan: division_by_zero');
like($out, qr/^after=0$/m, 'ERROR in a partial scan: the pool is empty while the session goes on');
ok(baseline(), 'ERROR in a partial scan: the pool is back at baseline');

# -- pg_cancel_backend of the leader mid-scan, leases held
my $bg = GsTest::psql_bg($par . "SET gpuselect.device = 'gpu'; SET application_name = 'gs_lease_cancel';\n"
	  . sprintf($slow, 30000, 'false') . $after, on_error_stop => 0);
ok(held(), 'cancel: leased chunks held mid-scan');
psql_value("SELECT pg_cancel_backend(pid) FROM pg_stat_activity
  WHERE application_name = 'gs_lease_cancel' AND backend_type = 'client backend';");
($rc, $out) = GsTest::psql_wait($bg);
like($out, qr/57014/, 'cancel: ERROR 57014');
like($out, qr/^after=0$/m, 'cancel: the pool is empty while the session goes on');
ok(baseline(), 'cancel: the pool is back at baseline');

# -- pg_terminate_backend of the leader mid-scan
$bg = GsTest::psql_bg($par . "SET gpuselect.device = 'gpu'; SET application_name = 'gs_lease_kill';\n"
	  . sprintf($slow, 30000, 'false'));
ok(held(), 'terminate: leased chunks held mid-scan');
psql_value("SELECT pg_terminate_backend(pid) FROM pg_stat_activity
  WHERE application_name = 'gs_lease_kill' AND backend_type = 'client backend';");
($rc, $out) = GsTest::psql_wait($bg);
isnt($rc, 0, 'terminate: the session ends');
ok(baseline(), 'terminate: the pool is back at baseline');

# -- LIMIT over two parallel aggregates: the first one answers, the second
# never runs
is(psql_value($par . "SET gpuselect.device = 'gpu';
SELECT a FROM (SELECT gpu_quantiles(x, $fr)::text AS a FROM gs_l
               UNION ALL SELECT gpu_quantiles(i4, $fr)::text FROM gs_l) s LIMIT 1;\n$after"),
	psql_value("SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_l;") . "\nafter=0",
	'LIMIT: equal to the built-in, the pool empty after');
ok(baseline(), 'LIMIT: the pool is back at baseline');

# -- a server without leases for this query: device = cpu keeps partial states off the pool
$s0 = status();
is(psql_value($par . "SET gpuselect.device = 'cpu';\n$gpuq;"), $want, 'device = cpu: equal to the built-ins');
$s1 = status();
is($s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place}, 0, 'device = cpu: no lease');

# -- shared_partial_states = off: the tuple queue for everything, no lease
$s0 = status();
is(psql_value($par . "SET gpuselect.device = 'gpu'; SET gpuselect.shared_partial_states = off;\n$gpuq;"), $want,
	'shared_partial_states = off: equal to the built-ins');
$s1 = status();
is($s1->{service_worker_keys_in_place} - $s0->{service_worker_keys_in_place}, 0, 'shared_partial_states = off: no lease');

unlike(`cat $h->{log}`, qr/terminated by signal|PANIC/, 'no crash in the server log');

done_testing();
