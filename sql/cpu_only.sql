-- gpuselect: expectations of a CPU-only build (USE_CUDA=0).  The Makefile
-- leaves this suite out of CUDA builds.
CREATE EXTENSION IF NOT EXISTS gpuselect;
\set VERBOSITY default

SELECT name, value FROM gpuselect_status()
WHERE name IN ('cuda_build', 'gpu_available', 'gpu_reason') ORDER BY name;

-- gpuselect.device = 'gpu' is a clean ERROR (0A000), for every aggregate
SET gpuselect.device = 'gpu';
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 10) x;
\set VERBOSITY sqlstate
SELECT gpu_percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 10) x;
SELECT gpu_median(x) FROM generate_series(1, 10) x;
SELECT gpu_quantile(x, 0.5) FROM generate_series(1, 10) x;
SELECT gpu_quantiles(x, ARRAY[0.5]) FROM generate_series(1, 10) x;
-- nothing to select: no error (the engine is never reached)
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 0) x;
SELECT gpu_quantiles(x, '{}') FROM generate_series(1, 3) x;

-- auto falls back to the CPU silently, whatever the size threshold
SET gpuselect.device = 'auto';
SET gpuselect.gpu_min_rows = 0;
SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) AS disc, gpu_median(x) AS median
FROM generate_series(1, 10) x;
SELECT name, value FROM gpuselect_status() WHERE name IN ('last_path', 'last_n', 'gpu_runs') ORDER BY name;
RESET gpuselect.device;
RESET gpuselect.gpu_min_rows;

