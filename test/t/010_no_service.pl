# Without the GPU service (the cluster test/run-all.sh starts does not
# preload gpuselect) the GPU is not used, whatever the build: auto selects
# every group on the CPU, however large, with the built-ins' answers;
# gpuselect.device = gpu is a clean ERROR (55000 in a CUDA build: no
# service; 0A000 in a CPU-only build: no CUDA), raised before any key is
# selected and leaving the session usable; gpuselect_status() says why.
# No backend ever creates a CUDA context (there is no code left that could).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use GsTest;
use Test::More;

psql_value('CREATE EXTENSION IF NOT EXISTS gpuselect;');
my %st = map { split /\|/, $_, 2 } split /\n/,
  psql_value(q{SELECT name, coalesce(value, '') FROM gpuselect_status();});
my $cuda = $st{cuda_build} eq 'on';
is($st{service}, 'off', 'status: no service');
is($st{service_reason}, 'gpuselect is not in shared_preload_libraries', 'status: service_reason');
is($st{gpu_available}, 'off', 'status: the GPU is not used');
like($st{gpu_reason},
	$cuda ? qr/^there is no GPU service: gpuselect is not in shared_preload_libraries$/
	: qr/no CUDA support/, 'status: gpu_reason says why');

my $setup = q{
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE gs_ns AS
  SELECT CASE WHEN g % 97 = 0 THEN 'NaN' ELSE random() * 1e6 - 5e5 END::float8 AS x,
         (g % 30000)::int2 AS s
  FROM generate_series(1, 200000) g;
};
my $fr = "ARRAY[0, 0.01, 0.5, 0.99, 1]::float8[]";

# auto, every group "large": the CPU, right answers, no GPU run
my $out = psql_value($setup . qq{
SET gpuselect.device = 'auto';
SET gpuselect.gpu_min_rows = 0;
SELECT (gpu_percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text
         = (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text
   AND gpu_median(x)::text = (percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::text
   AND gpu_quantiles(s, $fr)::text = (percentile_disc($fr) WITHIN GROUP (ORDER BY s))::text
FROM gs_ns;
SELECT string_agg(name || '=' || value, ',' ORDER BY name) FROM gpuselect_status()
 WHERE name IN ('last_path', 'gpu_runs');
});
is($out, "t\ngpu_runs=0,last_path=cpu", 'auto: every group on the CPU, equal to the built-ins');

# gpu: a clean ERROR with the reason; the same session goes on
my ($rc, $o) = psql($setup . q{
SET gpuselect.device = 'gpu';
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM gs_ns;
}, on_error_stop => 1);
isnt($rc, 0, 'gpu: the query fails');
like($o, $cuda ? qr/ERROR:  55000: gpuselect.device is "gpu" but there is no GPU service: gpuselect is not in shared_preload_libraries/
	: qr/ERROR:  0A000: gpuselect.device is "gpu" but this build has no CUDA support/,
	'gpu: clean ERROR with its SQLSTATE and reason');
for my $agg ("gpu_quantiles(x, $fr)", 'gpu_median(x)', 'gpu_quantile(x, 0.3)',
	'gpu_percentile_cont(0.3) WITHIN GROUP (ORDER BY x)')
{
	($rc, $o) = psql($setup . "SET gpuselect.device = 'gpu';\nSELECT $agg FROM gs_ns;");
	like($o, $cuda ? qr/ERROR:  55000/ : qr/ERROR:  0A000/, "gpu: $agg is the same ERROR");
}
$out = psql_value($setup . q{
SET gpuselect.device = 'gpu';
DO $$ BEGIN PERFORM gpu_median(x) FROM gs_ns; EXCEPTION WHEN OTHERS THEN NULL; END $$;
SET gpuselect.device = 'cpu';
SELECT gpu_median(x)::text = (percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::text FROM gs_ns;
});
is($out, 't', 'after the ERROR the session answers right');

done_testing();
