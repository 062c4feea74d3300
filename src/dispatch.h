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
 * ERROR for gpuselect.device = 'gpu' when the GPU path cannot run:
 *   gpuselect.device is "gpu" but <reason>
 * Shared by gpu_path_none.c ("this build has no CUDA support") and gpu_path.c
 * (no device, device failure), so both builds word it the same way.
 */
pg_noreturn extern void gs_dispatch_gpu_required(int sqlerrcode, const char *reason);

/* the interrupt hook every engine call gets (nonzero when InterruptPending) */
extern int	gs_interrupt_hook(void *arg);

/* turn a failed engine status into ereport(ERROR) (GS_ERR_CANCELED: caller handles) */
pg_noreturn extern void gs_engine_error(const gs_error *err);

#endif							/* GS_DISPATCH_H */
