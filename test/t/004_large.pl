# Large inputs and the serialization limit.
#
# 1. More than 1 GiB of keys in one group: 140M int8 values (1.12 GB of
#    keys) streamed from a SRF (no table), in a permuted order, give exactly
#    the built-ins' answers.  One query evaluates the input once: the
#    ordered-set aggregates over the same ORDER BY share one state each
#    (gpuselect's and the built-in's), gpu_median has its own.
#    About 2 minutes and 9 GB of memory on a 2-core machine (work_mem 4GB
#    keeps the built-in's sort in memory).  GS_LARGE_ROWS overrides the
#    row count (it must stay above 2^27 = 134217728 to exceed 1 GiB).
# 2. A partial state too large to serialize (PostgreSQL's 1 GB limit,
#    lowered by the superuser-only test hook gpuselect.test_max_serial_bytes)
#    gives ERROR 54000 whose HINT names the ways out; both ways out, and the
#    same query with the limit reset, give the built-in's answer.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;
use Time::HiRes qw(time);

psql_value('CREATE EXTENSION IF NOT EXISTS gpuselect;');

# ---------------------------------------------------------------- > 1 GiB
{
	my $rows = $ENV{GS_LARGE_ROWS} // 140000000;
	my $fr = 'ARRAY[0, 0.25, 0.5, 0.999, 1]';
	my $t0 = time;
	# the multiplier is coprime to the prime modulus: distinct, permuted keys
	# gpuselect.work_mem 4GB: this part is about chunks in memory beyond
	# 1 GiB (a spilled group is sql/spill.sql's and 009_spill.pl's)
	my $out = psql_value(qq{
SET work_mem = '4GB';
SET gpuselect.work_mem = '4GB';
SET max_parallel_workers_per_gather = 0;
SELECT 'n:' || count(g),
       'bytes:' || count(g) * 8,
       'disc:' || (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY g) = percentile_disc($fr) WITHIN GROUP (ORDER BY g)),
       'cont:' || (gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY g) = percentile_cont(0.5) WITHIN GROUP (ORDER BY g)),
       'median:' || (gpu_median(g) = percentile_cont(0.5) WITHIN GROUP (ORDER BY g)),
       'got:' || (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY g))::text,
       'want:' || (percentile_disc($fr) WITHIN GROUP (ORDER BY g))::text
FROM (SELECT generate_series(1, $rows)::int8 * 7919 % 1000000007 AS g) s;
SELECT 'last_n:' || value FROM gpuselect_status() WHERE name = 'last_n';
});
	my $secs = time - $t0;
	my %v = map { /^(\w+):(.*)$/ ? ($1, $2) : () } split /[|\n]/, $out;
	is($v{n}, $rows, "$rows rows aggregated");
	cmp_ok($v{bytes} // 0, '>', 1024 * 1024 * 1024, 'the group holds more than 1 GiB of keys');
	is($v{disc}, 'true', 'gpu_percentile_disc over > 1 GiB equals percentile_disc')
	  or diag("got $v{got}, want $v{want}");
	is($v{cont}, 'true', 'gpu_percentile_cont(0.5) over > 1 GiB equals percentile_cont(0.5)');
	is($v{median}, 'true', 'gpu_median over > 1 GiB equals percentile_cont(0.5)');
	is($v{last_n}, $rows, 'the last selection ran on all the values');
	diag(sprintf('> 1 GiB query: %.1f s (%s)', $secs, $v{got} // '?'));
	diag($out) unless ($v{disc} // '') eq 'true';
}

# ------------------------------------------------- serialization limit
{
	psql_value(q{
DROP TABLE IF EXISTS gs_ser;
CREATE TABLE gs_ser AS
  SELECT ((g::int8 * 7919) % 1000003)::float8 / 7 AS x FROM generate_series(1, 1000000) g;
ANALYZE gs_ser;
});
	# LOAD: the GUC exists once the module is loaded in the session
	my $par = q{
LOAD 'gpuselect';
} . force_parallel_executor(2);
	my $q = 'SELECT gpu_median(x)::text FROM gs_ser;';
	my $want = psql_value('SET max_parallel_workers_per_gather = 0; '
		  . 'SELECT (percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::text FROM gs_ser;');

	my $plan = psql_value($par . "EXPLAIN (COSTS OFF) $q");
	like($plan, qr/Partial Aggregate/, 'gpu_median uses partial aggregation');

	# default: 0, meaning MaxAllocSize; superuser-only
	is(psql_value("LOAD 'gpuselect'; SHOW gpuselect.test_max_serial_bytes;"), '0', 'test_max_serial_bytes defaults to 0');
	my ($rc, $out) = psql(q{
LOAD 'gpuselect';
CREATE ROLE gs_nosu;
SET ROLE gs_nosu;
SET gpuselect.test_max_serial_bytes = '1MB';
}, on_error_stop => 0);
	like($out, qr/ERROR:\s+42501:.*permission denied to set parameter "gpuselect\.test_max_serial_bytes"/,
		'only a superuser may set gpuselect.test_max_serial_bytes');
	psql('DROP ROLE gs_nosu;');

	# each partial state holds ~1/3 of 8 MB of keys, above a 1 MB limit
	($rc, $out) = psql($par . "SET gpuselect.test_max_serial_bytes = '1MB';\n$q");
	isnt($rc, 0, 'over the limit: the query fails');
	like($out, qr/ERROR:\s+54000:/, 'SQLSTATE 54000 (program_limit_exceeded)');
	like($out, qr/gpuselect: a partial aggregate state of \d+ values \(\d+ bytes\) is too large to pass between parallel workers/,
		'the message says a partial state is too large');
	like($out, qr/DETAIL:\s+Serialized states are limited to 1048576 bytes\./, 'DETAIL gives the limit in force');
	like($out, qr/HINT:\s+.*fewer parallel workers.*max_parallel_workers_per_gather = 0/s,
		'HINT names fewer parallel workers');
	# the ordered-set form is no way out any more: the planner rewrite
	# (src/planner/planner.c) plans it as a plain, partial-capable aggregate too
	like($out, qr/HINT:\s+.*SET gpuselect\.accelerate_builtins = off/s,
		'HINT names turning the built-ins\' rewrite off');
	unlike($out, qr/^\d/m, 'no result row');

	# the ways out, with the limit still low
	($rc, $out) = psql($par . "SET gpuselect.test_max_serial_bytes = '1MB';\n"
		  . "SET max_parallel_workers_per_gather = 0;\n$q", on_error_stop => 0);
	is($out, $want, 'way out 1: without parallel workers the query succeeds');
	($rc, $out) = psql($par . "SET gpuselect.test_max_serial_bytes = '1MB';\n"
		  . 'SELECT (gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::text FROM gs_ser;', on_error_stop => 0);
	like($out, qr/ERROR:\s+54000:/,
		'the ordered-set form, planned as a plain aggregate by the rewrite, meets the same limit');
	($rc, $out) = psql($par . "SET gpuselect.test_max_serial_bytes = '1MB';\n"
		  . "SET gpuselect.accelerate_builtins = off;\n"
		  . 'SELECT (percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::text FROM gs_ser;', on_error_stop => 0);
	is($out, $want, 'way out 2: the built-in, not rewritten, succeeds in a parallel-enabled session');

	# limit reset: the parallel plan succeeds and equals the built-in
	($rc, $out) = psql($par . "SET gpuselect.test_max_serial_bytes = '1MB';\n"
		  . "RESET gpuselect.test_max_serial_bytes;\n$q", on_error_stop => 0);
	is($out, $want, 'limit reset: the parallel query equals the built-in');
	($rc, $out) = psql($par . "SET gpuselect.test_max_serial_bytes = '16MB';\n$q", on_error_stop => 0);
	is($out, $want, 'a limit above the states: the parallel query equals the built-in');

	# values, not keys (interval: datum_state.c): the same limit, error and HINT
	my $qi = 'SELECT gpu_quantile(x * interval \'1 second\', 0.5)::text FROM gs_ser;';
	my $want_i = psql_value('SET max_parallel_workers_per_gather = 0; '
		  . 'SELECT (percentile_disc(0.5) WITHIN GROUP (ORDER BY x * interval \'1 second\'))::text FROM gs_ser;');
	like(psql_value($par . "EXPLAIN (COSTS OFF) $qi"), qr/Partial Aggregate/,
		'gpu_quantile over interval uses partial aggregation');
	($rc, $out) = psql($par . "SET gpuselect.test_max_serial_bytes = '1MB';\n$qi", on_error_stop => 0);
	like($out, qr/ERROR:\s+54000:.*too large to pass between parallel workers/s,
		'interval over the limit: ERROR 54000');
	like($out, qr/DETAIL:\s+Serialized states are limited to 1048576 bytes\./,
		'interval: DETAIL gives the limit in force');
	like($out, qr/HINT:\s+.*max_parallel_workers_per_gather = 0.*accelerate_builtins = off/s,
		'interval: the HINT names the same ways out');
	unlike($out, qr/ordered-set form/, 'interval: the HINT no longer offers the ordered-set form');
	($rc, $out) = psql($par . "SET gpuselect.test_max_serial_bytes = '1MB';\n"
		  . "SET max_parallel_workers_per_gather = 0;\n$qi", on_error_stop => 0);
	is($out, $want_i, 'interval: without parallel workers the query succeeds');
	($rc, $out) = psql($par . $qi, on_error_stop => 0);
	is($out, $want_i, 'interval: without the test limit the parallel query equals the built-in');

	psql_value('DROP TABLE gs_ser;');
}

done_testing();
