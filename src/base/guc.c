/*
 * guc.c — definitions of gpuselect's configuration parameters.
 */
#include "postgres.h"

#include <limits.h>

#include "access/parallel.h"
#include "access/xact.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "gs_engine.h"		/* GS_APPROX_BUCKETS_*, GS_CPU_PATH_*: the engines' */
#include "base/guc.h"

int			gs_guc_device = GS_DEVICE_AUTO;
int			gs_guc_gpu_min_rows = 1000000;
bool		gs_guc_approximate = false;
int			gs_guc_approx_buckets = GS_APPROX_BUCKETS_DEFAULT;
int			gs_guc_seed = 42;
bool		gs_guc_debug = false;
bool		gs_guc_accelerate_builtins = false;
bool		gs_guc_estimate_time_buckets = true;
bool		gs_guc_bulk_scan = true;
bool		gs_guc_bulk_scan_ship_pages = false;
bool		gs_guc_citus_exchange = true;
int			gs_guc_citus_exchange_min_rows = 100000;
bool		gs_guc_citus_exchange_shard_scans = true;
int			gs_guc_citus_exchange_scans_per_node = 4;
bool		gs_guc_citus_exchange_spool = true;
int			gs_guc_citus_exchange_spool_limit = 2 * 1024 * 1024;	/* kB */
bool		gs_guc_prefault_pool_chunks = true;
bool		gs_guc_huge_pages = true;
int			gs_guc_finalize_threads = -1;
int			gs_guc_max_finalize_threads = 8;
int			gs_guc_test_max_serial_bytes = 0;
bool		gs_guc_shared_partial_states = true;
bool		gs_guc_test_fail_shared_attach = false;
int			gs_guc_parallel_arena_size = 256;
int			gs_guc_max_shared_memory = -1;
char	   *gs_guc_parallel_arena = NULL;
char	   *gs_guc_parallel_fileset = NULL;
int			gs_guc_test_cancel_at_poll = 0;
int			gs_guc_test_citus_gather_limit = 12288;
int			gs_guc_test_citus_gather_pause = 0;
int			gs_guc_test_terminate_at_poll = 0;
int			gs_guc_test_cpu_path = GS_CPU_PATH_AUTO;
int			gs_guc_test_bulk_prefetch = GS_BULK_PREFETCH_DEFAULT;

static const struct config_enum_entry gs_cpu_path_options[] = {
	{"auto", GS_CPU_PATH_AUTO, false},
	{"select", GS_CPU_PATH_SELECT, false},
	{"sort", GS_CPU_PATH_SORT, false},
	{NULL, 0, false}
};

static const struct config_enum_entry gs_device_options[] = {
	{"auto", GS_DEVICE_AUTO, false},
	{"gpu", GS_DEVICE_GPU, false},
	{"cpu", GS_DEVICE_CPU, false},
	{NULL, 0, false}
};

int			gs_guc_work_mem = 1024 * 1024;

/* -1 (work_mem) or at least 64kB: the spill's buffers need some room */
static bool
gs_guc_check_work_mem(int *newval, void **extra, GucSource source)
{
	if (*newval == -1 || *newval >= 64)
		return true;
	GUC_check_errdetail("gpuselect.work_mem must be -1 (use work_mem) or at least 64kB.");
	return false;
}

const char *
gs_device_name(int device)
{
	switch (device)
	{
		case GS_DEVICE_AUTO:
			return "auto";
		case GS_DEVICE_GPU:
			return "gpu";
		case GS_DEVICE_CPU:
			return "cpu";
	}
	return "?";
}

const char *gs_loaded_by = "a statement";

/*
 * The planner hook exists only once the library is loaded.  A session that
 * sets gpuselect.accelerate_builtins (or inherits it from ALTER DATABASE /
 * ROLE / postgresql.conf) but never preloads the library plans the
 * built-ins as PostgreSQL does until some gpuselect function loads it --
 * and a dashboard that calls only the built-ins never does.  Nothing of
 * ours runs in such a session; the first moment we can speak is this load,
 * so say it here, once per session, where it matters.
 */
void
gs_guc_note_load(bool shared_preload)
{
	if (shared_preload)
		gs_loaded_by = "shared_preload_libraries";
	else if (!IsTransactionState())
		gs_loaded_by = "session_preload_libraries";	/* before any statement */
	else if (gs_guc_accelerate_builtins && !IsParallelWorker())
		ereport(WARNING,
				(errmsg("gpuselect.accelerate_builtins is on, but gpuselect was loaded only now, by this statement"),
				 errdetail("The statements this session planned before it used the built-in percentile_disc and percentile_cont; "
						   "a session that calls only the built-ins never loads gpuselect."),
				 errhint("Preload it so that the setting works from a session's first query: "
						 "ALTER DATABASE ... SET session_preload_libraries = 'gpuselect', or shared_preload_libraries.")));
}

void
gs_guc_define(void)
{
	DefineCustomEnumVariable("gpuselect.device",
							 "Where gpuselect runs selections: auto, gpu or cpu.",
							 "auto: on the GPU for groups of at least gpuselect.gpu_min_rows "
							 "values when the GPU service is ready, otherwise on the CPU. "
							 "gpu: always on the GPU; an ERROR if it cannot be used. "
							 "cpu: always on the CPU.",
							 &gs_guc_device,
							 GS_DEVICE_AUTO,
							 gs_device_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.gpu_min_rows",
							"Smallest group (non-NULL values) that gpuselect.device = auto sends to the GPU.",
							"Smaller groups are selected on the CPU, where copying to the "
							"GPU would cost more than it saves.",
							&gs_guc_gpu_min_rows,
							/*
							 * test/bench/results/e2e-2026-11-22-h100.md: the GPU's final
							 * call costs ~2 ms; the CPU engine's 3-8 ns per value overtakes
							 * it between 0.3M and 1M values, and end-to-end runs on that
							 * host could not resolve it more finely than that.
							 */
							1000000,
							0, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	/*
	 * Like work_mem, which any session may set: it bounds this session's own
	 * memory, and the disk it spills to is capped by temp_file_limit
	 * (superuser only).  -1 follows work_mem, as a built-in percentile's
	 * sort does.  The default is larger than work_mem's because keeping a
	 * group's keys in memory (and on the GPU) is what makes selection fast;
	 * see README "Memory and spilling".
	 */
	DefineCustomIntVariable("gpuselect.work_mem",
							"Largest in-memory volume of one group's keys or values; beyond it they go to temporary files.",
							"Per group, like a built-in percentile's sort memory. -1: use work_mem. "
							"A spilled group is selected on the CPU in a few passes over its temporary file.",
							&gs_guc_work_mem,
							1024 * 1024,	/* 1GB */
							-1, MAX_KILOBYTES,
							PGC_USERSET,
							GUC_UNIT_KB,
							gs_guc_check_work_mem, NULL, NULL);

	DefineCustomBoolVariable("gpuselect.approximate",
							 "Return approximate percentiles from one level of sample selection.",
							 "Every answer is a value from the data; its rank error is bounded "
							 "and reported by gpuselect_status() (last_rank_bound) and at DEBUG1. "
							 "percentile_cont interpolates between approximate neighbours.",
							 &gs_guc_approximate,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.approx_buckets",
							"Number of buckets (splitters) of the approximate mode.",
							"More buckets: smaller rank error, more work. At most 8192, the CUDA engine's limit, so that both engines give the same answers.",
							&gs_guc_approx_buckets,
							GS_APPROX_BUCKETS_DEFAULT,
							GS_APPROX_BUCKETS_MIN, GS_APPROX_BUCKETS_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.seed",
							"Seed of the sample drawn by the selection engines.",
							"The same seed and data give the same sample, so approximate "
							"answers are reproducible; exact answers never depend on it.",
							&gs_guc_seed,
							42,
							0, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	/*
	 * USERSET: it only changes how this session's own queries are planned
	 * (planner.c); results are the built-ins', bit for bit.
	 */
	DefineCustomBoolVariable("gpuselect.accelerate_builtins",
							 "Plan the built-in percentile_disc and percentile_cont as gpuselect's hashable, parallel aggregates.",
							 "Only calls gpuselect can prove equivalent are replaced (README: the planner rewrite); "
							 "a statement follows the value in force when it was planned.",
							 &gs_guc_accelerate_builtins,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * USERSET: advice to the kernel about this backend's own memory; it
	 * changes how fast a large aggregate's memory is mapped, never an answer.
	 */
	/*
	 * USERSET: advice to the kernel about memory this backend writes (the
	 * key-pool chunks its scans and final calls fill, service_pool.c); never an answer.
	 */
	DefineCustomBoolVariable("gpuselect.prefault_pool_chunks",
							 "Map a key-pool chunk's pages in one call before a backend fills it.",
							 "madvise(MADV_POPULATE_WRITE) on each GPU service key-pool chunk a backend takes to write "
							 "(a scan's, and the job chunks a final call copies keys into): "
							 "one system call instead of a page fault per 4 kB page it writes (Linux 5.14 and later).",
							 &gs_guc_prefault_pool_chunks,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuselect.huge_pages",
							 "Ask for transparent huge pages for the large chunks of values an aggregate holds.",
							 "madvise(MADV_HUGEPAGE) on chunks of 4 MB and more (keys and stored values): "
							 "one page fault per 2 MB instead of per 4 kB page inside them where the kernel's "
							 "transparent_hugepage setting is madvise or always; nothing where it is never.",
							 &gs_guc_huge_pages,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * USERSET: like accelerate_builtins it only changes which plan this
	 * session's queries get (planner_groups.c), never an answer.
	 */
	/*
	 * USERSET: which plan this session's aggregations get
	 * (planner_bulk_scan.c); the scan reads what a SeqScan would, and the
	 * answers are the same either way.
	 */
	DefineCustomBoolVariable("gpuselect.bulk_scan",
							 "Plan gpuselect aggregations of one table as a bulk scan that reads its pages itself.",
							 "Custom Scan (gpuselect) under a Finalize Aggregate, where every aggregate is "
							 "gpu_median, gpu_quantile or gpu_quantiles (or a built-in the rewrite replaced) "
							 "over a column; off: the executor's scan and aggregation.",
							 &gs_guc_bulk_scan,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * SUSET: a session with it on keeps up to a batch of shared buffers
	 * pinned while the service reads them (scan/bulk_scan.c), which a
	 * hostile role could use to crowd others out of shared buffers.  Off
	 * until the device side (stage 2) is measured.
	 */
	DefineCustomBoolVariable("gpuselect.bulk_scan_ship_pages",
							 "Let the GPU service extract the bulk scan's column from the pinned pages.",
							 "The ungrouped single-aggregate bulk scan sends each checked page's buffer and "
							 "visible line pointers to the service instead of extracting the keys itself.",
							 &gs_guc_bulk_scan_ship_pages,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * USERSET: which way this session's queries over Citus tables run
	 * (planner_citus.c, aggs/citus_exchange.c); the answers are the same.
	 */
	DefineCustomBoolVariable("gpuselect.citus_exchange",
							 "Answer percentiles over a Citus distributed table by an exchange of counts instead of sending every value to the coordinator.",
							 "Ungrouped gpu_median, gpu_quantile, gpu_quantiles (and built-ins the rewrite replaced) over one "
							 "hash-distributed table: a sample, counts between its splitters, then only the values near the "
							 "wanted ranks (docs/citus.md); off: every value travels, as the partial aggregates send them.",
							 &gs_guc_citus_exchange,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.citus_exchange_min_rows",
							"Fewest non-NULL values for which the Citus exchange runs its rounds; fewer are gathered in one round.",
							"Each round is a distributed query (a scan of every shard and a round trip); below this many "
							"values sending them all costs less.",
							&gs_guc_citus_exchange_min_rows,
							100000,
							0,
							INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	/*
	 * USERSET: off only costs time; on, the exchange still checks that the
	 * shard scans are safe (aggs/citus_shard_round.c).
	 */
	DefineCustomBoolVariable("gpuselect.citus_exchange_shard_scans",
							 "Run the Citus exchange's first counts round and its gather as scans of the shards where that is safe.",
							 "C page loops on the workers, a few shards a connection, instead of distributed queries, "
							 "where this transaction has not written to the table, under READ COMMITTED, "
							 "without row-level security (docs/citus.md); the same answers either way.",
							 &gs_guc_citus_exchange_shard_scans,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.citus_exchange_scans_per_node",
							"Connections per worker node for the Citus exchange's shard scans (0: one per shard).",
							"Each is a new connection (a new backend on the worker) that reads its share of the "
							"node's shards one after another: more read more shards at once, fewer cost less to open.",
							&gs_guc_citus_exchange_scans_per_node,
							4,
							0,
							1024,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	/*
	 * USERSET: off only costs time (the gather scans the shards again); the
	 * workers' spool_limit caps the disk it may take.
	 */
	DefineCustomBoolVariable("gpuselect.citus_exchange_spool",
							 "Keep the grouped Citus exchange's keys on the workers between its counts and its gather.",
							 "The counts call writes every key it counts to a temporary file on its worker, and the "
							 "gather reads that file instead of scanning the shards again (docs/citus.md, \"The spool\").",
							 &gs_guc_citus_exchange_spool,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * SIGHUP: set on the workers, where the spools are written; any role
	 * that can read a table can make one, so the cap is the administrator's.
	 */
	DefineCustomIntVariable("gpuselect.citus_exchange_spool_limit",
							"The disk all of this server's Citus exchange spools may take together (0: no spools).",
							"A counts call that would go past it (or past temp_file_limit) keeps no spool: its "
							"gather scans the shards again.",
							&gs_guc_citus_exchange_spool_limit,
							2 * 1024 * 1024,
							0,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuselect.estimate_time_buckets",
							 "Estimate the groups of GROUP BY time buckets (date_trunc, date_bin, floor(extract(epoch ...)/n)) from the column's range.",
							 "Applies to queries with gpuselect aggregates (or built-ins the rewrite replaced): "
							 "adds hashed and partial aggregation paths costed with that estimate.",
							 &gs_guc_estimate_time_buckets,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * USERSET: how many threads, besides the backend itself, select the
	 * groups of a hashed aggregation at once (final_batch.c).  -1 follows
	 * max_parallel_workers_per_gather: the helpers run after the query's
	 * workers have finished, so a query never has more busy processes and
	 * threads than the parallelism the session already allows; 0 turns the
	 * batch off (one group at a time, as before).
	 */
	DefineCustomIntVariable("gpuselect.finalize_threads",
							"Threads that select a hashed aggregation's groups at once, besides the backend.",
							"-1: max_parallel_workers_per_gather; 0: one group at a time.",
							&gs_guc_finalize_threads,
							-1, -1, 64,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	/*
	 * Superuser only: the most helper threads one backend's batch may start,
	 * whatever finalize_threads asks.  Any role may set finalize_threads and
	 * max_parallel_workers(_per_gather), so without this a role could start
	 * 64 threads in each of its sessions, outside every budget the
	 * administrator set (gs_final_batch_threads also holds a batch to the
	 * server's parallel-worker budget).  8: the default max_worker_processes.
	 */
	DefineCustomIntVariable("gpuselect.max_finalize_threads",
							"Most helper threads one backend's finalize batch may start.",
							"Caps gpuselect.finalize_threads for every role.",
							&gs_guc_max_finalize_threads,
							8, 0, 64,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuselect.debug",
							 "Emit a NOTICE describing every selection run (path, rows, timings, rank bound).",
							 NULL,
							 &gs_guc_debug,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * Superuser only (or GRANT SET ON PARAMETER): on, parallel workers put
	 * their partial states in /dev/shm, which every session shares; an
	 * administrator turns it off where that is small (containers), and a
	 * session must not turn it back on.
	 */
	DefineCustomBoolVariable("gpuselect.shared_partial_states",
							 "Pass parallel workers' large partial states to the leader in dynamic shared memory.",
							 "On: a worker's partial state of at least 1 MB of values (plain aggregates, no GROUP BY) "
							 "goes through a dynamic shared memory segment instead of the tuple queue, several times "
							 "faster, and the key arena (gpuselect.parallel_arena_size) is used. "
							 "Off: always the tuple queue, e.g. where /dev/shm is too small for the segments.",
							 &gs_guc_shared_partial_states,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * Superuser only (or GRANT SET ON PARAMETER): how much of the server-wide
	 * budget (gpuselect.max_shared_memory) one transaction's arena may take.
	 */
	DefineCustomIntVariable("gpuselect.parallel_arena_size",
							"Largest key arena a transaction's parallel aggregates may take in shared memory.",
							"Parallel workers (and the leader) of plain aggregates without GROUP BY write their "
							"values there during the scan, so the leader neither copies nor maps them per state; "
							"partial states of a GROUP BY are copied there when they are passed to the leader, "
							"not through the tuple queue. "
							"Created at a parallel query of gpuselect aggregates once this session has passed "
							"partial states the slow way, sized to what its last such transaction needed (at most "
							"this), and given back at the end of the transaction. 0: no arena.",
							&gs_guc_parallel_arena_size,
							256,
							0, INT_MAX / 2,
							PGC_SUSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	/*
	 * Server-wide (SIGHUP: postgresql.conf or ALTER SYSTEM): the total of
	 * every session's segments for partial states (shm_budget.c), so that no
	 * number of sessions of any role can fill /dev/shm.
	 */
	DefineCustomIntVariable("gpuselect.max_shared_memory",
							"Dynamic shared memory all sessions together may hold for parallel partial states.",
							"Key arenas and per-state segments of every session, server-wide; past it partial "
							"states take the tuple queue (slower, the same answers). "
							"-1: a quarter of /dev/shm (an eighth of RAM where segments are not in /dev/shm). "
							"0: no such segments.",
							&gs_guc_max_shared_memory,
							-1,
							-1, INT_MAX / 2,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomStringVariable("gpuselect.parallel_arena",
							   "Internal: the handle of the leader's key arena, for its parallel workers.",
							   NULL,
							   &gs_guc_parallel_arena,
							   "",
							   PGC_SUSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_NO_RESET_ALL | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("gpuselect.parallel_fileset",
							   "Internal: the handle of the leader's file set for spilled partial states, for its parallel workers.",
							   NULL,
							   &gs_guc_parallel_fileset,
							   "",
							   PGC_SUSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_NO_RESET_ALL | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.test_max_serial_bytes",
							"Test hook: largest serialized partial aggregate state (0: MaxAllocSize, PostgreSQL's 1 GB limit).",
							"Lowers the limit above which passing a partial state between parallel "
							"workers raises an ERROR, so that error can be tested with little data.",
							&gs_guc_test_max_serial_bytes,
							0, 0, (int) MaxAllocSize,
							PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.test_bulk_prefetch",
							"Test hook: how many tuples ahead the bulk scan's page loop prefetches (0: none).",
							"Benchmarks compare the bulk scan with and without its prefetch in one session; "
							"the answers are the same either way.",
							&gs_guc_test_bulk_prefetch,
							GS_BULK_PREFETCH_DEFAULT, 0, 64,
							PGC_SUSET, GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.test_citus_gather_limit",
							"Test hook: the Citus exchange gathers its candidates once they number this many (default 12288).",
							"Lower, the exchange runs more levels on little data, so tests reach buckets, levels and "
							"interpolation between ranks in different buckets without millions of rows.",
							&gs_guc_test_citus_gather_limit,
							12288, 1, INT_MAX,
							PGC_SUSET, GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.test_citus_gather_pause",
							"Test hook: the Citus exchange waits this many milliseconds before its gather (default 0).",
							"So that tests can write to the table, or stop a worker, between the counts and the gather "
							"without depending on how long a round takes; the wait can be cancelled.",
							&gs_guc_test_citus_gather_pause,
							0, 0, 600000,
							PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.test_cancel_at_poll",
							"Test hook: the Nth interrupt poll of every selection finds a query cancel request (0: never).",
							"Acts as if pg_cancel_backend() had been called right before that poll of the engine, and "
							"pg_log_backend_memory_contexts() before each earlier poll, so tests can send harmless "
							"interrupts and then a cancel to a selection without depending on timing.",
							&gs_guc_test_cancel_at_poll,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.test_terminate_at_poll",
							"Test hook: the Nth interrupt poll of every selection finds a termination request (0: never).",
							"Acts as if pg_terminate_backend() had been called right before that poll of the engine "
							"(or of a batch of groups on helper threads), so a test can end a session there.",
							&gs_guc_test_terminate_at_poll,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("gpuselect.test_cpu_path",
							 "Test hook: the CPU engine's exact path: auto (its cost model), select or sort.",
							 "Lets a test hold a long selection where the cost model would sort (many fractions), "
							 "or run the sort path on small data.",
							 &gs_guc_test_cpu_path,
							 GS_CPU_PATH_AUTO,
							 gs_cpu_path_options,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuselect.test_fail_shared_attach",
							 "Test hook: raise an ERROR right after the leader attaches a worker's shared partial state.",
							 "Tests that an ERROR while workers still hold shared partial states leaves no segment and no waiting worker behind.",
							 &gs_guc_test_fail_shared_attach,
							 false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
}
