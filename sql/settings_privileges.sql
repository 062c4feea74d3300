-- gpuselect: who may change which setting.  Settings that size or enable
-- server-wide or long-lived memory are superuser only (42501 for other
-- roles, unless granted with GRANT SET ON PARAMETER); the others change
-- only how a session's own queries run and stay settable by any role.
CREATE EXTENSION IF NOT EXISTS gpuselect;
\set VERBOSITY sqlstate
-- the library defines the settings when it is loaded in the session
SELECT count(*) > 0 AS loaded FROM gpuselect_status();
CREATE ROLE regress_gs_plain;
SET ROLE regress_gs_plain;

-- superuser only: memory that outlives the query or is shared server-wide
SET gpuselect.parallel_arena_size = '8GB';
SET gpuselect.max_finalize_threads = 64;
SET gpuselect.shared_partial_states = on;
SET gpuselect.shared_partial_states = off;
SELECT set_config('gpuselect.parallel_arena_size', '8GB', false);
BEGIN;
SET LOCAL gpuselect.parallel_arena_size = '8GB';
ROLLBACK;
ALTER ROLE regress_gs_plain SET gpuselect.parallel_arena_size = '8GB';
-- test hooks and the internal arena and file set handles
SET gpuselect.test_max_serial_bytes = 1000;
SET gpuselect.test_fail_shared_attach = on;
SET gpuselect.test_cancel_at_poll = 1;
SET gpuselect.test_terminate_at_poll = 1;
SET gpuselect.parallel_arena = '1:1';
SET gpuselect.parallel_fileset = '1';
-- server-wide (postgresql.conf or ALTER SYSTEM): no session changes it
SET gpuselect.max_shared_memory = '64GB';
-- nothing changed
SHOW gpuselect.parallel_arena_size;
SHOW gpuselect.shared_partial_states;

-- any role: how its own queries run
SET gpuselect.device = 'cpu';
SET gpuselect.gpu_min_rows = 10;
SET gpuselect.approximate = on;
SET gpuselect.approx_buckets = 64;
SET gpuselect.seed = 7;
SET gpuselect.debug = off;
SET gpuselect.finalize_threads = 3;
SHOW gpuselect.finalize_threads;
SELECT gpu_quantile(g, 0.5) BETWEEN 1 AND 100 AS approximate_ok FROM generate_series(1, 100) g;
SET gpuselect.approximate = off;
SELECT gpu_quantile(g, 0.5) = percentile_disc(0.5) WITHIN GROUP (ORDER BY g) AS exact_ok
FROM generate_series(1, 1001) g;
SELECT name, value FROM gpuselect_status()
WHERE name IN ('device', 'gpu_min_rows', 'approximate', 'approx_buckets', 'seed', 'debug') ORDER BY name;
RESET ROLE;

-- a superuser may hand one of them to a role
GRANT SET ON PARAMETER gpuselect.parallel_arena_size TO regress_gs_plain;
SET ROLE regress_gs_plain;
SET gpuselect.parallel_arena_size = 0;
SHOW gpuselect.parallel_arena_size;
RESET gpuselect.parallel_arena_size;
RESET ROLE;
REVOKE SET ON PARAMETER gpuselect.parallel_arena_size FROM regress_gs_plain;
RESET ALL;
DROP ROLE regress_gs_plain;
