# Forced parallel plans (partial aggregation with combine/serialize/
# deserialize across workers) give exactly the built-ins' answers.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

psql_value(q{
CREATE EXTENSION IF NOT EXISTS gpuselect;
DROP TABLE IF EXISTS gs_par;
CREATE TABLE gs_par AS
  SELECT g % 97 AS grp,
         CASE WHEN g % 1000 = 0 THEN NULL
              WHEN g % 777 = 0 THEN 'NaN'::float8
              ELSE (random() * 2e6 - 1e6)::float8 END AS x,
         ((g::int8 * 7919) % 100003)::int4 AS i4,
         g::int8 * 104729 AS i8,
         date '2000-01-01' + (g % 9000) AS d
  FROM generate_series(1, 400000) g;
ANALYZE gs_par;
});

my $par = force_parallel_executor(2) . q{SET parallel_leader_participation = off;
};

my $fr = q{ARRAY[0, 0.001, 0.01, 0.1, 0.25, 0.333, 0.5, 0.75, 0.9, 0.99, 0.999, 1]::float8[]};

# the plan really is parallel with partial aggregation
my $plan = psql_value($par . "EXPLAIN (COSTS OFF) SELECT gpu_quantiles(x, $fr), gpu_median(x) FROM gs_par;");
like($plan, qr/Partial Aggregate/, 'gpu_quantiles/gpu_median use partial aggregation');
like($plan, qr/Gather/, 'plan has a Gather node');

my @cases = (
	[ 'gpu_quantiles float8',
	  "SELECT gpu_quantiles(x, $fr)::text FROM gs_par",
	  "SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_par" ],
	[ 'gpu_quantiles int4',
	  "SELECT gpu_quantiles(i4, $fr)::text FROM gs_par",
	  "SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY i4))::text FROM gs_par" ],
	[ 'gpu_quantiles int8',
	  "SELECT gpu_quantiles(i8, $fr)::text FROM gs_par",
	  "SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY i8))::text FROM gs_par" ],
	[ 'gpu_quantiles date',
	  "SELECT gpu_quantiles(d, $fr)::text FROM gs_par",
	  "SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY d))::text FROM gs_par" ],
	[ 'gpu_quantile float8 0.37',
	  "SELECT gpu_quantile(x, 0.37)::text FROM gs_par",
	  "SELECT (percentile_disc(0.37) WITHIN GROUP (ORDER BY x))::text FROM gs_par" ],
	[ 'gpu_median float8',
	  "SELECT gpu_median(x)::text FROM gs_par",
	  "SELECT (percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::text FROM gs_par" ],
	[ 'gpu_median int4',
	  "SELECT gpu_median(i4)::text FROM gs_par",
	  "SELECT (percentile_cont(0.5) WITHIN GROUP (ORDER BY i4))::text FROM gs_par" ],
	[ 'gpu_median float8 GROUP BY',
	  "SELECT string_agg(grp || ':' || m::text, ',' ORDER BY grp) FROM (SELECT grp, gpu_median(x) m FROM gs_par GROUP BY grp) s",
	  "SELECT string_agg(grp || ':' || m::text, ',' ORDER BY grp) FROM (SELECT grp, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) m FROM gs_par GROUP BY grp) s" ],
	[ 'gpu_quantiles float8 GROUP BY',
	  "SELECT md5(string_agg(grp || ':' || m::text, ',' ORDER BY grp)) FROM (SELECT grp, gpu_quantiles(x, $fr) m FROM gs_par GROUP BY grp) s",
	  "SELECT md5(string_agg(grp || ':' || m::text, ',' ORDER BY grp)) FROM (SELECT grp, percentile_disc($fr) WITHIN GROUP (ORDER BY x) m FROM gs_par GROUP BY grp) s" ],
);

for my $c (@cases)
{
	my ($name, $gpu, $builtin) = @$c;
	my $want = psql_value("SET max_parallel_workers_per_gather = 0; $builtin;");
	my ($rc, $got) = psql($par . "SET gpuselect.device = 'cpu'; $gpu;");
	is($got, $want, "parallel $name equals the built-in");
	# auto mode as well (falls back to the CPU where there is no GPU)
	($rc, $got) = psql($par . "SET gpuselect.device = 'auto'; SET gpuselect.gpu_min_rows = 1000; $gpu;");
	is($got, $want, "parallel $name (device auto) equals the built-in");
}

psql_value('DROP TABLE gs_par;');
done_testing();
