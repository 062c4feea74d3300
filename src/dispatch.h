/*
 * dispatch.h — the one place that picks the CPU or the GPU engine, runs it,
 * turns engine errors into ereport, and records the run for
 * gpuselect_status().
 */
#ifndef GS_DISPATCH_H
#define GS_DISPATCH_H

#include "postgres.h"
#include "pg_compat.h"
#include "portability/instr_time.h"

#include "state.h"

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
} GsRunInfo;

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
 * Exact selection on the CPU engine over any input (spill.c's candidates):
 * the same engine call, interrupt hook and errors as gs_dispatch_select,
 * recorded in nothing.
 */
extern void gs_dispatch_cpu_exact(const gs_input *in, const uint64 *ranks, int nranks,
								  uint64 *out_keys);

/*
 * Record a run for gpuselect_status()'s last_* rows (and the gpuselect.debug
 * NOTICE): gs_dispatch_select's, and the comparison path's spilled
 * selections (datum_spill.c), which run no engine.
 */
extern void gs_dispatch_note_run(const GsRunInfo *info, int nranks, bool approx);
extern double gs_elapsed_ms(instr_time start);

/*
 * A hashed aggregation's batch (final_batch.c): which states
 * gs_dispatch_select would run exactly on the CPU engine from memory, and
 * the engine call for many of them at once on nthreads helper threads
 * (interrupts and errors as for one; nothing recorded but the memo the
 * caller keeps, which gs_dispatch_select answers from for exactly the same
 * ranks: path "cpu (batch)").
 */
extern bool gs_dispatch_batchable(const GsState *st);
extern void gs_dispatch_cpu_many(gs_select_item *items, int nitems, int nthreads);

/*
 * ERROR for gpuselect.device = 'gpu' when the GPU path cannot run:
 *   gpuselect.device is "gpu" but <reason>
 * Shared by dispatch.c (no CUDA in this build, no GPU service) and
 * service_client.c (the service did not answer), so every case is worded
 * the same way.
 */
pg_noreturn extern void gs_dispatch_gpu_required(int sqlerrcode, const char *reason);

/*
 * The interrupt hook every engine call gets: opt.interrupt =
 * gs_interrupt_hook, opt.interrupt_arg = a GsInterrupts set up by
 * gs_interrupts_init in the caller's memory context.  The hook processes
 * interrupts itself (dispatch.c says how): a harmless one is absorbed and
 * the engine goes on; an ERROR is caught and kept in ->error, and the hook
 * returns nonzero so the engine stops with GS_ERR_CANCELED.  After the
 * engine call returns, whatever its status, gs_interrupts_rethrow re-throws
 * a kept error.
 */
typedef struct GsInterrupts
{
	MemoryContext mcxt;			/* the caller's: a caught error is copied here */
	ErrorData  *error;			/* caught ERROR to re-throw, or NULL */
	int			polls;			/* polls so far, counted for gpuselect.test_cancel_at_poll */
	int			term_polls;		/* and for gpuselect.test_terminate_at_poll */
} GsInterrupts;

extern void gs_interrupts_init(GsInterrupts *gi);
extern int	gs_interrupt_hook(void *arg);
extern void gs_interrupts_rethrow(GsInterrupts *gi);

/* turn a failed engine status into ereport(ERROR) */
pg_noreturn extern void gs_engine_error(const gs_error *err);
/* the same after gs_interrupts_rethrow: GS_ERR_CANCELED first runs
 * CHECK_FOR_INTERRUPTS() and is never retried (see dispatch.c) */
pg_noreturn extern void gs_engine_failed(const gs_error *err);

#endif							/* GS_DISPATCH_H */
