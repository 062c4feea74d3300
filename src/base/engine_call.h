/*
 * engine_call.h — running the CPU engine in a backend (engine_call.c): the
 * interrupt hook, engine errors -> ereport, one call or a batch.  Below
 * the states and the dispatcher, so both call the engine the same way.
 */
#ifndef GS_ENGINE_CALL_H
#define GS_ENGINE_CALL_H

#include "postgres.h"
#include "base/pg_compat.h"

#include "gs_engine.h"

/*
 * Exact selection on the CPU engine over any input (state/spill.c's candidates):
 * the same engine call, interrupt hook and errors as gs_dispatch_select,
 * recorded in nothing.
 */
extern void gs_dispatch_cpu_exact(const gs_input *in, const uint64 *ranks, int nranks,
								  uint64 *out_keys);

/*
 * The CPU engine on one input: exact (picks NULL) or approximate (picks
 * for the ranks), with the hook below; an ERROR on failure.  The
 * dispatcher's CPU path.
 */
extern void gs_run_cpu(const gs_input *in, const uint64 *ranks, int nranks,
					   uint64 *out_keys, gs_approx_pick *picks);

/*
 * A hashed aggregation's batch (aggs/final_batch.c): many inputs at once on
 * nthreads helper threads, interrupts and errors as for one.
 */
extern void gs_dispatch_cpu_many(gs_select_item *items, int nitems, int nthreads);

/*
 * The interrupt hook every engine call gets: opt.interrupt =
 * gs_interrupt_hook, opt.interrupt_arg = a GsInterrupts set up by
 * gs_interrupts_init in the caller's memory context.  The hook processes
 * interrupts itself (engine_call.c says how): a harmless one is absorbed and
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
 * CHECK_FOR_INTERRUPTS() and is never retried (see engine_call.c) */
pg_noreturn extern void gs_engine_failed(const gs_error *err);

/* interrupts the hook processed without stopping a selection, and
 * selections an interrupt's ERROR stopped inside an engine (gpuselect_status) */
extern int64 gs_interrupts_absorbed;
extern int64 gs_selections_canceled;

#endif							/* GS_ENGINE_CALL_H */
