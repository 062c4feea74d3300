/*
 * guc.h — gpuselect's configuration parameters.  A session may set those
 * that change only how its own queries run (USERSET); those that size or
 * enable memory that is server-wide or outlives the query are superuser
 * only (SUSET; an administrator may GRANT SET ON PARAMETER), as are the test
 * hooks and the internal arena handle.
 *
 * USERSET:
 *
 *   gpuselect.device          auto | gpu | cpu                 (default auto)
 *   gpuselect.gpu_min_rows    GPU only for groups this large   (default 1000000)
 *   gpuselect.approximate     one-level approximate selection  (default off)
 *   gpuselect.approx_buckets  buckets of the approximate mode  (default 1024)
 *   gpuselect.seed            sampling seed                    (default 42)
 *   gpuselect.debug           NOTICE per selection run         (default off)
 *   gpuselect.accelerate_builtins  plan the built-in percentile_disc /
 *                             percentile_cont as gpuselect plain
 *                             aggregates (planner.c)           (default off)
 *   gpuselect.estimate_time_buckets  estimate the groups of GROUP BY
 *                             date_trunc(...) and other time buckets
 *                             from the column's range, for
 *                             queries with gpuselect aggregates
 *                             (planner_groups.c)               (default on)
 *   gpuselect.citus_exchange  percentiles over a Citus distributed
 *                             table by an exchange of counts
 *                             (aggs/citus_exchange.c)          (default on)
 *   gpuselect.citus_exchange_min_rows  fewer values are gathered in one
 *                             round                            (default 100000)
 *   gpuselect.citus_exchange_shard_scans  the first counts round and
 *                             the gather as shard scans where safe
 *                             (aggs/citus_shard_round.c)       (default on)
 *   gpuselect.citus_exchange_scans_per_node  connections per worker
 *                             for those scans        (default 4; 0: one a shard)
 *   gpuselect.citus_exchange_spool  the grouped exchange's keys kept on
 *                             the workers between counts and gather
 *                             (scan/shard_spool.c)             (default on)
 *   gpuselect.citus_exchange_spool_limit  a worker's disk for them, all
 *                             spools together (SIGHUP)   (default 2GB; 0: none)
 *   gpuselect.finalize_threads  threads besides the backend that
 *                             select a hashed aggregation's groups
 *                             at once (final_batch.c)   (default -1:
 *                             max_parallel_workers_per_gather; 0: off)
 *   gpuselect.max_finalize_threads  superuser cap of finalize_threads
 *                             (default 8)
 *   gpuselect.work_mem        a group's in-memory keys or values; beyond
 *                             it they spill to temporary files (default 1GB;
 *                             -1: work_mem) -- spill.c, datum_spill.c
 *
 * SUSET (server-wide or long-lived memory):
 *
 *   gpuselect.shared_partial_states  large parallel partial states
 *                             through shared memory            (default on)
 *   gpuselect.parallel_arena_size  largest key arena of a transaction's
 *                             parallel aggregates (arena.c)    (default 256MB)
 *
 * SIGHUP (server-wide):
 *
 *   gpuselect.max_shared_memory  dynamic shared memory of all sessions'
 *                             partial states (shm_budget.c)    (default -1:
 *                             a quarter of /dev/shm)
 *
 * Test hooks (superuser only, not in postgresql.conf.sample):
 *
 *   gpuselect.test_max_serial_bytes  lower the serialized partial-state limit
 *                                    (default 0: MaxAllocSize), so the "state
 *                                    too large" error can be tested without
 *                                    1 GB of data
 *   gpuselect.test_fail_shared_attach  ERROR right after the leader
 *                                    attaches a worker's shared state
 *   gpuselect.test_cancel_at_poll    the Nth interrupt poll of a selection
 *                                    finds a cancel request, the ones before
 *                                    a memory-context log request (0: never)
 *   gpuselect.test_terminate_at_poll the Nth interrupt poll finds a
 *                                    termination request (0: never)
 *   gpuselect.test_citus_gather_limit  the Citus exchange gathers its
 *                                    candidates once this few (default
 *                                    12288): levels on little data
 *   gpuselect.test_citus_gather_pause  milliseconds the exchange waits
 *                                    before its gather (a write or a
 *                                    stopped worker in between)
 *   gpuselect.test_cpu_path          the CPU engine's exact path: auto,
 *                                    select or sort
 *   gpuselect.test_bulk_prefetch     tuples ahead the bulk scan's page
 *                                    loop prefetches (0: none), for A/B
 *                                    benchmarks in one session
 *
 * Internal (set by the leader for its parallel workers, hidden):
 *
 *   gpuselect.parallel_arena         handle of the leader's key arena
 *   gpuselect.parallel_fileset       handle of the leader's file set for
 *                                    spilled partial states (shared_fileset.c)
 *
 * Defined by gs_guc_define(), called from _PG_init (gpuselect.c).
 */
#ifndef GS_GUC_H
#define GS_GUC_H

typedef enum GsDevice
{
	GS_DEVICE_AUTO = 0,			/* GPU for groups >= gpu_min_rows when usable */
	GS_DEVICE_GPU,				/* always the GPU; ERROR when it cannot be used */
	GS_DEVICE_CPU				/* never the GPU */
} GsDevice;

extern int	gs_guc_device;		/* GsDevice */
extern int	gs_guc_gpu_min_rows;
extern bool gs_guc_approximate;
extern int	gs_guc_approx_buckets;
extern int	gs_guc_seed;
extern bool gs_guc_debug;
extern bool gs_guc_accelerate_builtins;

/*
 * How this backend loaded the library ("shared_preload_libraries",
 * "session_preload_libraries" or "a statement"), for gpuselect_status();
 * and, loaded by a statement while gpuselect.accelerate_builtins is on, a
 * WARNING: the statements planned before had no planner hook to rewrite
 * them (gs_guc_note_load, called once by _PG_init).
 */
extern const char *gs_loaded_by;
extern void gs_guc_note_load(bool shared_preload);
extern bool gs_guc_estimate_time_buckets;
/* gpuselect.bulk_scan: plan the bulk scan (planner_bulk_scan.c) */
extern bool gs_guc_bulk_scan;
/* gpuselect.bulk_scan_ship_pages: the service extracts the keys (bulk_scan.c) */
extern bool gs_guc_bulk_scan_ship_pages;
/* gpuselect.citus_exchange(_min_rows): planner_citus.c, aggs/citus_exchange.c */
extern bool gs_guc_citus_exchange;
extern int	gs_guc_citus_exchange_min_rows;
extern bool gs_guc_citus_exchange_shard_scans;
extern int	gs_guc_citus_exchange_scans_per_node;
extern bool gs_guc_citus_exchange_spool;
extern int	gs_guc_citus_exchange_spool_limit;
extern bool gs_guc_huge_pages;
/* gpuselect.prefault_pool_chunks: MADV_POPULATE_WRITE on key-pool chunks */
extern bool gs_guc_prefault_pool_chunks;
extern int	gs_guc_finalize_threads;	/* -1: max_parallel_workers_per_gather */
extern int	gs_guc_max_finalize_threads;	/* superuser cap of the above */
extern int	gs_guc_work_mem;	/* kB, -1: work_mem */
extern int	gs_guc_test_max_serial_bytes;
extern bool gs_guc_shared_partial_states;
extern bool gs_guc_test_fail_shared_attach;
extern int	gs_guc_parallel_arena_size;	/* MB */
extern int	gs_guc_max_shared_memory;	/* MB; -1: a quarter of /dev/shm */
extern char *gs_guc_parallel_arena;
extern char *gs_guc_parallel_fileset;
extern int	gs_guc_test_cancel_at_poll;
extern int	gs_guc_test_citus_gather_limit;
extern int	gs_guc_test_citus_gather_pause;
extern int	gs_guc_test_terminate_at_poll;
extern int	gs_guc_test_cpu_path;	/* GS_CPU_PATH_* (gs_engine.h) */
/* gpuselect.test_bulk_prefetch: tuples ahead the bulk scan prefetches (bulk_scan.c) */
#define GS_BULK_PREFETCH_DEFAULT 16
extern int	gs_guc_test_bulk_prefetch;

extern void gs_guc_define(void);
extern const char *gs_device_name(int device);

#endif							/* GS_GUC_H */
