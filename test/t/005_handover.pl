# Parallel plans where the leader's combine function takes over the keys of
# large deserialized partial states instead of copying them (state.c,
# GS_HANDOVER_MIN_BYTES = 256 kB): results still equal the built-ins when
# several aggregates over one column each combine their own states, when
# large (taken over) and small (copied) partial states meet in one group,
# in both finalize strategies (sorted and hashed, also spilling), and the
# backend's memory returns to its baseline afterwards.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

# group 0: 450000 rows (about 1 MB of keys per partial state with 2 workers
# and the leader, taken over); groups 1..3000: 20 rows each (copied);
# group -1: 30000 rows (about 80 kB per partial state, copied)
psql_value(q{
CREATE EXTENSION IF NOT EXISTS gpuselect;
DROP TABLE IF EXISTS gs_ho;
CREATE TABLE gs_ho AS
  SELECT CASE WHEN g <= 450000 THEN 0
              WHEN g <= 480000 THEN -1
              ELSE g % 3000 + 1 END AS grp,
         CASE WHEN g % 1001 = 0 THEN NULL
              ELSE (random() * 2e6 - 1e6)::float8 END AS x,
         ((g::int8 * 7919) % 100003)::int4 AS i4,
         (g % 30011 - 15000)::int2 AS i2
  FROM generate_series(1, 540000) g;
ANALYZE gs_ho;
});

my $par = force_parallel_executor(2) . q{SET gpuselect.device = 'cpu';
};
my $taken = q{SELECT 'taken:' || value FROM gpuselect_status() WHERE name = 'states_taken_over';};

my $fr = q{ARRAY[0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999, 1]::float8[]};
my $fr2 = q{ARRAY[0.05, 0.5, 0.95]::float8[]};

my $plan = psql_value($par . "EXPLAIN (COSTS OFF) SELECT gpu_median(x), gpu_quantiles(x, $fr) FROM gs_ho;");
like($plan, qr/Partial Aggregate/, 'plan uses partial aggregation');

# several aggregates over the same columns in one parallel query: every
# aggregate has its own transition state, deserializes and takes over its own
# copy of the keys; an identical call (gpu_quantiles(x, fr) twice) shares one
my $multi_gpu = "SELECT concat_ws(' | ', gpu_median(x), gpu_quantile(x, 0.3), gpu_quantiles(x, $fr),"
  . " gpu_quantiles(x, $fr2), gpu_quantiles(x, $fr), gpu_quantile(i4, 0.7), gpu_quantiles(i2, $fr2),"
  . " gpu_median(i4)) FROM gs_ho";
my $multi_builtin = "SELECT concat_ws(' | ', percentile_cont(0.5) WITHIN GROUP (ORDER BY x),"
  . " percentile_disc(0.3) WITHIN GROUP (ORDER BY x), percentile_disc($fr) WITHIN GROUP (ORDER BY x),"
  . " percentile_disc($fr2) WITHIN GROUP (ORDER BY x), percentile_disc($fr) WITHIN GROUP (ORDER BY x),"
  . " percentile_disc(0.7) WITHIN GROUP (ORDER BY i4), percentile_disc($fr2) WITHIN GROUP (ORDER BY i2),"
  . " percentile_cont(0.5) WITHIN GROUP (ORDER BY i4)) FROM gs_ho";

my $want = psql_value("SET max_parallel_workers_per_gather = 0; $multi_builtin;");
my $out = psql_value($par . $taken . "$multi_gpu;" . $taken);
my @t = $out =~ /^taken:(\d+)$/mg;
my ($got) = grep { !/^taken:/ } split /\n/, $out;
is($got, $want, 'several aggregates over one column, parallel: equal to the built-ins');
cmp_ok($t[1] - $t[0], '>=', 1, 'large partial states were taken over, not copied')
  or diag($out);

# leader participation off: only the workers' states reach the combine
$out = psql_value($par . "SET parallel_leader_participation = off; $multi_gpu;");
is($out, $want, 'same without leader participation');

# one group gets both taken-over and copied partial states; sorted and hashed
# finalization, and a hash aggregate that spills input tuples (work_mem 64kB).
# The grouped query is a materialized CTE, planned on its own: as a subquery,
# PostgreSQL 16+ (enable_presorted_aggregate) plans it to feed the outer
# string_agg(... ORDER BY grp) sorted input; with enable_sort = off every plan
# then has a Sort, and the cheapest was a sorted partial aggregate (16, 17:
# no hash aggregate tested) or, at work_mem = 64kB, none at all (18).
my $grouped_gpu = "WITH s AS MATERIALIZED (SELECT grp, gpu_quantiles(x, $fr) a, gpu_median(i4) b FROM gs_ho GROUP BY grp)"
  . " SELECT md5(string_agg(grp || ':' || a::text || '/' || b::text, ',' ORDER BY grp)) FROM s";
my $grouped_builtin = "SELECT md5(string_agg(grp || ':' || a::text || '/' || b::text, ',' ORDER BY grp)) FROM"
  . " (SELECT grp, percentile_disc($fr) WITHIN GROUP (ORDER BY x) a,"
  . " percentile_cont(0.5) WITHIN GROUP (ORDER BY i4) b FROM gs_ho GROUP BY grp) s";
$want = psql_value("SET max_parallel_workers_per_gather = 0; $grouped_builtin;");
for my $v (
	[ 'sorted', 'SET enable_hashagg = off;', 'Group' ],
	[ 'hashed', 'SET enable_sort = off;', 'Hash' ],
	[ 'hashed, spilling', "SET enable_sort = off; SET work_mem = '64kB';", 'Hash' ])
{
	my ($name, $set, $strategy) = @$v;
	my $p = psql_value($par . $set . "EXPLAIN (COSTS OFF) $grouped_gpu;");
	like($p, qr/Partial ${strategy}Aggregate/, "GROUP BY ($name) uses partial aggregation")
	  or diag($p);
	$out = psql_value($par . $set . $taken . "$grouped_gpu;" . $taken);
	@t = $out =~ /^taken:(\d+)$/mg;
	($got) = grep { !/^taken:/ } split /\n/, $out;
	is($got, $want, "GROUP BY ($name), parallel: equal to the built-ins");
	cmp_ok($t[1] - $t[0], '>=', 1, "GROUP BY ($name): large partial states were taken over") or diag($out);
}

# memory: taken-over keys are freed with the aggregate context, also when the
# query fails after some states were taken over (fraction out of range in the
# final function) or the hash aggregate spills
my $round = $par
  . "SELECT gpu_quantiles(x, $fr) IS NOT NULL FROM gs_ho;\n"
  . "SELECT gpu_quantiles(x, ARRAY[0.5, 2]::float8[]) FROM gs_ho;\n"
  . "SET enable_sort = off; SET work_mem = '64kB';\n"
  . "SELECT count(m) FROM (SELECT grp, gpu_median(x) m FROM gs_ho GROUP BY grp) s;\n"
  . "RESET enable_sort; RESET work_mem;\n";
my $mem = q{SELECT 'mem:' || sum(total_bytes) FROM pg_backend_memory_contexts;};
my ($rc, $leak) = psql($round . $round . $mem . ($round x 5) . $mem . ($round x 5) . $mem, on_error_stop => 0);
my @mem = $leak =~ /^mem:(\d+)$/mg;
my @errs = $leak =~ /ERROR:\s+(22003):/mg;
is(scalar(@mem), 3, 'memory measured 3 times') or diag(substr($leak, 0, 4000));
is(scalar(@errs), 12, 'every bad fraction raised SQLSTATE 22003');
if (@mem == 3)
{
	my ($base, $mid, $end) = @mem;
	diag("backend memory: baseline $base, after 5 rounds $mid, after 10 rounds $end bytes");
	cmp_ok($end - $base, '<=', 512 * 1024, 'backend memory returns to baseline (within 512 kB)');
	cmp_ok($end - $mid, '<=', 64 * 1024, 'no growth between the middle and the end');
}

psql_value('DROP TABLE gs_ho;');
done_testing();
