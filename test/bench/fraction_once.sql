-- Fractions computed once (src/planner/planner_fraction.c): a computed
-- numeric[] fraction array, a generic plan's numeric[] parameter (rewritten
-- built-in and gpu_percentile_disc) and a sub-select fraction of the
-- rewritten built-in, against the same 99 fractions as a float8[] literal.
-- Serial, one session, the shapes in turn (rounds R0..R3), psql \timing.
-- Setup: CREATE TABLE fb AS SELECT random() AS x FROM generate_series(1, 2000000);
-- Run:   psql -X -f test/bench/fraction_once.sql   (a database with gpuselect)
-- Results: test/bench/results/fraction-once-2026-11-27-vm.md
LOAD 'gpuselect';
SET max_parallel_workers_per_gather = 0;
SET gpuselect.device = 'cpu';
SET gpuselect.accelerate_builtins = on;
SET plan_cache_mode = force_generic_plan;
SET jit = off;
PREPARE lit AS SELECT cardinality(gpu_quantiles(x, '{0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,0.17,0.18,0.19,0.2,0.21,0.22,0.23,0.24,0.25,0.26,0.27,0.28,0.29,0.3,0.31,0.32,0.33,0.34,0.35,0.36,0.37,0.38,0.39,0.4,0.41,0.42,0.43,0.44,0.45,0.46,0.47,0.48,0.49,0.5,0.51,0.52,0.53,0.54,0.55,0.56,0.57,0.58,0.59,0.6,0.61,0.62,0.63,0.64,0.65,0.66,0.67,0.68,0.69,0.7,0.71,0.72,0.73,0.74,0.75,0.76,0.77,0.78,0.79,0.8,0.81,0.82,0.83,0.84,0.85,0.86,0.87,0.88,0.89,0.9,0.91,0.92,0.93,0.94,0.95,0.96,0.97,0.98,0.99}'::float8[])) FROM fb;
PREPARE comp AS SELECT cardinality(gpu_quantiles(x, (SELECT array_agg(i / 100.0) FROM generate_series(1, 99) i))) FROM fb;
PREPARE bparam(numeric[]) AS SELECT cardinality(percentile_disc($1) WITHIN GROUP (ORDER BY x)) FROM fb;
PREPARE gparam(numeric[]) AS SELECT cardinality(gpu_percentile_disc($1) WITHIN GROUP (ORDER BY x)) FROM fb;
PREPARE bcomp AS SELECT cardinality(percentile_disc((SELECT array_agg(i / 100.0) FROM generate_series(1, 99) i)) WITHIN GROUP (ORDER BY x)) FROM fb;
\set arr '\'{0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,0.17,0.18,0.19,0.2,0.21,0.22,0.23,0.24,0.25,0.26,0.27,0.28,0.29,0.3,0.31,0.32,0.33,0.34,0.35,0.36,0.37,0.38,0.39,0.4,0.41,0.42,0.43,0.44,0.45,0.46,0.47,0.48,0.49,0.5,0.51,0.52,0.53,0.54,0.55,0.56,0.57,0.58,0.59,0.6,0.61,0.62,0.63,0.64,0.65,0.66,0.67,0.68,0.69,0.7,0.71,0.72,0.73,0.74,0.75,0.76,0.77,0.78,0.79,0.8,0.81,0.82,0.83,0.84,0.85,0.86,0.87,0.88,0.89,0.9,0.91,0.92,0.93,0.94,0.95,0.96,0.97,0.98,0.99}\''
PREPARE sumx AS SELECT sum(x) FROM fb;
-- warm
EXECUTE lit;
\timing on
\echo R0
\echo lit
EXECUTE lit;
\echo comp
EXECUTE comp;
\echo bparam
EXECUTE bparam(:arr);
\echo gparam
EXECUTE gparam(:arr);
\echo bcomp
EXECUTE bcomp;
\echo sum
EXECUTE sumx;
\echo R1
\echo lit
EXECUTE lit;
\echo comp
EXECUTE comp;
\echo bparam
EXECUTE bparam(:arr);
\echo gparam
EXECUTE gparam(:arr);
\echo bcomp
EXECUTE bcomp;
\echo sum
EXECUTE sumx;
\echo R2
\echo lit
EXECUTE lit;
\echo comp
EXECUTE comp;
\echo bparam
EXECUTE bparam(:arr);
\echo gparam
EXECUTE gparam(:arr);
\echo bcomp
EXECUTE bcomp;
\echo sum
EXECUTE sumx;
\echo R3
\echo lit
EXECUTE lit;
\echo comp
EXECUTE comp;
\echo bparam
EXECUTE bparam(:arr);
\echo gparam
EXECUTE gparam(:arr);
\echo bcomp
EXECUTE bcomp;
\echo sum
EXECUTE sumx;
\echo lit
EXECUTE lit;
