/*
 * dispatch.h — the one place that picks the CPU or the GPU engine, runs it,
 * turns engine errors into ereport, and records the run for
 * gpuselect_status().
 */
#ifndef GS_DISPATCH_H
#define GS_DISPATCH_H

#include "postgres.h"
#include "pg_compat.h"

#include "gpu_path.h"
#include "state.h"

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
 * ERROR for gpuselect.device = 'gpu' when the GPU path cannot run:
 *   gpuselect.device is "gpu" but <reason>
 * Shared by gpu_path_none.c ("this build has no CUDA support") and gpu_path.c
 * (no device, device failure), so both builds word it the same way.
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
