/*
 * dispatch.h — the one place that picks the CPU or the GPU engine for a
 * group, runs it there (the CPU engine through base/engine_call.h, whose
 * declarations come with this header), and records the run for
 * gpuselect_status() (status.c).
 */
#ifndef GS_DISPATCH_H
#define GS_DISPATCH_H

#include "postgres.h"
#include "base/pg_compat.h"
#include "portability/instr_time.h"

#include "base/engine_call.h"
#include "state/state.h"

/* Result of an attempt to run a selection through the GPU service. */
typedef enum GsGpuOutcome
{
	GS_GPU_DONE,				/* the service answered; outputs are filled */
	GS_GPU_NOT_USED				/* no service, or it failed in auto mode: use the CPU */
} GsGpuOutcome;

/* One selection run, as gpuselect_status() and gpuselect.debug report it. */
typedef struct GsRunInfo
{
	const char *path;			/* "cpu", "service", "cpu (fallback: ...)" */
	int64		n;
	int64		bytes_copied;
	double		copy_ms;
	double		select_ms;
	int64		rank_bound;		/* approximate mode: max rank error; else 0 */
	/* the service's path (service_client.c), where the final call's time
	 * went: the held chunks' keys copied out to queue for the pool, the
	 * job's chunks taken (the pool's queue) and filled, of that the copy
	 * of the keys, the job's wait for a device, submitted to answered */
	double		svc_unload_ms;
	double		svc_take_ms;
	double		svc_fill_ms;
	double		svc_queue_ms;
	double		svc_answer_ms;
	double		wall_ms;		/* the whole final call's selection, when known */
} GsRunInfo;

/*
 * This process's time in selections (each run's wall_ms, else its copy and
 * select time; a hashed aggregation's batch as it runs), so the bulk scan's
 * EXPLAIN ANALYZE can say what its query's finals took (Select Time).
 */
extern double gs_select_ms_total;
extern void gs_dispatch_add_select_ms(double ms);

/*
 * The per-backend record of the selection runs, for gpuselect_status()
 * (status.c): runs per path, and the last run (its path a copy).
 */
extern int64 gs_gpu_runs;
extern int64 gs_cpu_runs;
extern bool gs_have_last;
extern GsRunInfo gs_last;
extern bool gs_last_approx;
extern int	gs_last_nranks;

/*
 * Select the keys at 0-based ascending ranks ranks[0..nranks-1] of st's keys
 * (ranks may repeat and come in any order).  out_keys[i] receives the key
 * (widened to 64 bits).  In gpuselect.approximate mode the keys are the
 * approximate picks and the max rank error is recorded.  st is not modified.
 */
extern void gs_dispatch_select(GsState *st, const uint64 *ranks, int nranks,
							   uint64 *out_keys);

/*
 * True while the final function of a rewritten built-in percentile runs
 * (planner_aggs.c): the built-ins are exact, so gpuselect.approximate is
 * ignored for them.
 */
extern bool gs_dispatch_exact_only;

/*
 * Record a run for gpuselect_status()'s last_* rows (and the gpuselect.debug
 * NOTICE): gs_dispatch_select's, and the comparison path's spilled
 * selections (select/datum_spill_select.c), which run no engine.
 */
extern void gs_dispatch_note_run(const GsRunInfo *info, int nranks, bool approx);
extern double gs_elapsed_ms(instr_time start);

/*
 * A hashed aggregation's batch (final_batch.c): which states
 * gs_dispatch_select would run exactly on the CPU engine from memory, and
 * the engine call for many of them at once is gs_dispatch_cpu_many
 * (engine_call.h; nothing recorded but the memo the caller keeps, which
 * gs_dispatch_select answers from for exactly the same ranks: path
 * "cpu (batch)").
 */
extern bool gs_dispatch_batchable(const GsState *st);

/*
 * ERROR for gpuselect.device = 'gpu' when the GPU path cannot run:
 *   gpuselect.device is "gpu" but <reason>
 * Shared by dispatch.c (no CUDA in this build, no GPU service) and
 * service_client.c (the service did not answer), so every case is worded
 * the same way.
 */
pg_noreturn extern void gs_dispatch_gpu_required(int sqlerrcode, const char *reason);

#endif							/* GS_DISPATCH_H */
