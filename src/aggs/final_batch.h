/*
 * final_batch.h — a hashed aggregation's groups selected all at once, on a
 * team of threads, at the first final call (final_batch.c).
 */
#ifndef GS_FINAL_BATCH_H
#define GS_FINAL_BATCH_H

#include "postgres.h"
#include "fmgr.h"

#include "state/state.h"

/* how a final function turns a state's fraction(s) into ranks (ranks.c) */
typedef enum GsBatchRule
{
	GS_BATCH_DISC,				/* percentile_disc(st->fraction) */
	GS_BATCH_CONT,				/* percentile_cont(st->fraction) */
	GS_BATCH_MEDIAN,			/* percentile_cont(0.5) */
	GS_BATCH_DISC_MULTI,		/* percentile_disc(st->fractions) */
	GS_BATCH_CONT_MULTI			/* percentile_cont(st->fractions) */
} GsBatchRule;

/*
 * A transition or combine function created st in its aggregate context:
 * if that is a hash table's, remember st among its aggregate's groups.
 */
extern void gs_final_batch_note(FunctionCallInfo fcinfo, MemoryContext aggcontext, GsState *st);

/*
 * A final function of this rule is about to select on st: if st's groups
 * have not been selected yet, select every one of them now (the memo of
 * each state, which gs_dispatch_select answers from).
 */
extern void gs_final_batch_run(GsState *st, GsBatchRule rule);

/* threads besides the backend a batch may use now (gpuselect.finalize_threads) */
extern int	gs_final_batch_threads(void);

/* gpuselect_status(): batches run and groups they selected in this backend */
extern int64 gs_final_batches;
/* gpuselect_status(): helper threads the backend's latest batch was given */
extern int64 gs_final_batch_last_threads;
extern int64 gs_final_batch_groups;

#endif							/* GS_FINAL_BATCH_H */
