-- gpuselect: a session that sets gpuselect.accelerate_builtins before the
-- library is loaded.  Without session_preload_libraries or
-- shared_preload_libraries the planner hook does not exist yet: the built-in
-- syntax runs as PostgreSQL's own (what a dashboard that never calls a
-- gpuselect function gets), and the statement that loads the library says
-- so with a WARNING.  Preloaded servers (the GPU machine's runs) load it at
-- start instead: preload_1.out.
SET gpuselect.accelerate_builtins = on;
SET client_min_messages = warning;
\set VERBOSITY default
EXPLAIN (VERBOSE, COSTS OFF)
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 10) x;
SELECT gpu_median(x::float8) FROM generate_series(1, 10) x;
SELECT name, value FROM gpuselect_status()
WHERE name IN ('version', 'library_loaded_by', 'accelerate_builtins') ORDER BY name;
-- from now on the session's built-in calls are rewritten
EXPLAIN (VERBOSE, COSTS OFF)
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 10) x;
SELECT gpu_median(x::float8) FROM generate_series(1, 10) x;
