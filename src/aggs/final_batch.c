/*
 * final_batch.c — a hashed aggregation's groups selected all at once.
 *
 * PostgreSQL finalizes a GROUP BY's groups one after another in one process.
 * After a parallel aggregation that is the leader alone, with every worker
 * finished and their cores idle: on the H200 host the 720 hourly groups of
 * the dashboard query (10M rows, 8 workers) took 53-72 ms of a 450 ms
 * query there (test/bench/results/dashboard-profile-2026-11-25-h200.md).
 * A hashed aggregation, serial or the Finalize step of a parallel one, holds
 * every group's complete state before its first final call, so at that call
 * all of them can be selected together, on the backend and
 * gpuselect.finalize_threads helper threads (gs_cpu_select_many,
 * kernels/cpu/cpu_many.c), and each later final call answers from the keys
 * its state kept (the memo, read by gs_dispatch_select).
 *
 * How the states are found: a transition or combine function that creates a
 * state in a hash table's aggregate context (AggState->hashcontext; never a
 * sorted group's, never a window aggregate's) notes it in the registry of
 * its aggregate's transition (one per FmgrInfo of that function and
 * context), allocated in that context: a reset of the hash table (a rescan,
 * the next batch of a spilled hash aggregation, the end of the query) frees
 * the registry with the states and a reset callback unlinks it.  Every
 * state of a hash table is complete when the first group of that table is
 * finalized (grouping sets: the hashed sets are finalized after all input,
 * AGG_MIXED's sorted sets use contexts of their own).
 *
 * What the batch selects: the ranks the final function about to run asks
 * (its GsBatchRule and each state's own fraction or fractions, computed as
 * ranks.c does), for the states gs_dispatch_select would run exactly on
 * the CPU engine from memory.  A state whose fraction is NULL or invalid,
 * or that has no rows, is left out: its own final call raises any error or
 * returns NULL at its own moment.  Correctness never rests on this file's
 * rank arithmetic: gs_dispatch_select uses a memo only for exactly the
 * ranks it is asked, so a state shared by two aggregates with different
 * rules, or any difference, just selects again.  The batch runs once per
 * registry (states noted later, if any, go one by one); an ERROR inside it
 * (a cancel: every helper is stopped and joined first) ends the query.
 */
#include "postgres.h"

#include <math.h>

#include "access/parallel.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "optimizer/cost.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "select/dispatch.h"
#include "aggs/final_batch.h"
#include "base/guc.h"
#include "aggs/ranks.h"

/* fewer keys than this in all: not worth starting threads */
#define GS_BATCH_MIN_KEYS	((int64) 1 << 16)
/* smaller groups go one by one: cheap alone, and their memo (ranks and
 * keys, up to a few dozen bytes) would be a noticeable part of them */
#define GS_BATCH_MIN_GROUP_KEYS	256
/* groups per engine call: bounds the batch's own memory, whatever the
 * number of groups */
#define GS_BATCH_SLICE		4096

typedef struct GsFinalBatch
{
	MemoryContext ctx;			/* the hash table's aggregate context */
	FmgrInfo   *owner;			/* the aggregate's transition/combine function */
	GsState   **states;
	int			nstates;
	int			maxstates;
	int			noffered;		/* states[0..noffered) went to the batch already */
	MemoryContextCallback forget;
	struct GsFinalBatch *next;
} GsFinalBatch;

/* the live registries of this backend (a query has few) */
static GsFinalBatch *gs_batches = NULL;

int64		gs_final_batches = 0;
int64		gs_final_batch_groups = 0;

int64		gs_final_batch_last_threads = 0;

/*
 * What finalize_threads asks, held to what the server allows a backend:
 * gpuselect.max_finalize_threads (superuser), and the parallel-worker
 * budget -- max_parallel_workers, itself bounded by max_worker_processes
 * (postmaster-only) since any role may raise max_parallel_workers.  A
 * session's helpers then never outnumber the parallel workers its own
 * queries could have had.
 */
int
gs_final_batch_threads(void)
{
	int			n = gs_guc_finalize_threads >= 0 ? gs_guc_finalize_threads :
		max_parallel_workers_per_gather;

	if (IsParallelWorker())
		return 0;				/* partial states are never finalized there */
	n = Min(n, gs_guc_max_finalize_threads);
	n = Min(n, Min(max_parallel_workers, max_worker_processes));
	return Min(Max(n, 0), 64);
}

/* reset callback of the registry's context: unlink it */
static void
gs_final_batch_forget(void *arg)
{
	GsFinalBatch *b = (GsFinalBatch *) arg;

	for (GsFinalBatch **p = &gs_batches; *p != NULL; p = &(*p)->next)
		if (*p == b)
		{
			*p = b->next;
			break;
		}
}

static GsFinalBatch *
gs_final_batch_registry(MemoryContext aggcontext, FmgrInfo *owner)
{
	GsFinalBatch *b;

	for (b = gs_batches; b != NULL; b = b->next)
		if (b->ctx == aggcontext && b->owner == owner)
			return b;
	b = (GsFinalBatch *) MemoryContextAllocZero(aggcontext, sizeof(GsFinalBatch));
	b->ctx = aggcontext;
	b->owner = owner;
	b->forget.func = gs_final_batch_forget;
	b->forget.arg = b;
	MemoryContextRegisterResetCallback(aggcontext, &b->forget);
	b->next = gs_batches;
	gs_batches = b;
	return b;
}

void
gs_final_batch_note(FunctionCallInfo fcinfo, MemoryContext aggcontext, GsState *st)
{
	AggState   *as;
	GsFinalBatch *b;

	if (fcinfo->context == NULL || !IsA(fcinfo->context, AggState) ||
		gs_final_batch_threads() == 0)
		return;
	as = (AggState *) fcinfo->context;
	if (as->hashcontext == NULL || aggcontext != as->hashcontext->ecxt_per_tuple_memory)
		return;					/* a sorted or plain group: finalized as it ends */
	b = gs_final_batch_registry(aggcontext, fcinfo->flinfo);
	if (b->nstates == b->maxstates)
	{
		int			newmax = b->maxstates > 0 ? b->maxstates * 2 : 64;

		b->states = b->states == NULL ?
			(GsState **) MemoryContextAllocHuge(aggcontext, sizeof(GsState *) * newmax) :
			(GsState **) repalloc_huge(b->states, sizeof(GsState *) * newmax);
		b->maxstates = newmax;
	}
	st->batch = b;
	st->batch_index = b->nstates;
	b->states[b->nstates++] = st;
}

/* a fraction array's non-NULL elements, or -1 when one is invalid */
static int
gs_batch_fractions(ArrayType *a, float8 **out)
{
	Datum	   *fr;
	bool	   *frnull;
	int			np,
				k = 0;

	deconstruct_array(a, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &fr, &frnull, &np);
	*out = (float8 *) palloc(sizeof(float8) * Max(np, 1));
	for (int i = 0; i < np; i++)
	{
		if (frnull[i])
			continue;
		if (!gs_fraction_in_range(DatumGetFloat8(fr[i])))
			return -1;
		(*out)[k++] = DatumGetFloat8(fr[i]);
	}
	return k;
}

/*
 * The engine ranks rule's final function asks of s, in its order
 * (ranks.c: gs_final_disc, gs_final_cont, gs_final_disc_multi,
 * gs_final_cont_multi); 0 when it would not select.
 */
static int
gs_batch_ranks(const GsState *s, GsBatchRule rule, uint64 **out)
{
	float8	   *p;
	int			np;
	bool		cont = rule == GS_BATCH_CONT || rule == GS_BATCH_MEDIAN ||
		rule == GS_BATCH_CONT_MULTI;
	uint64	   *r;
	int			k = 0;

	if (s->nrows <= 0)
		return 0;
	if (rule == GS_BATCH_MEDIAN)
	{
		p = (float8 *) palloc(sizeof(float8));
		p[0] = 0.5;
		np = 1;
	}
	else if (!s->have_fraction || s->fraction_null)
		return 0;
	else if (rule == GS_BATCH_DISC || rule == GS_BATCH_CONT)
	{
		if (!gs_fraction_in_range(s->fraction))
			return 0;
		p = (float8 *) palloc(sizeof(float8));
		p[0] = s->fraction;
		np = 1;
	}
	else if (s->fractions == NULL || (np = gs_batch_fractions(s->fractions, &p)) <= 0)
		return 0;

	r = (uint64 *) palloc(sizeof(uint64) * 2 * np);
	for (int i = 0; i < np; i++)
	{
		GsContRows	cr;

		if (!cont)
		{
			r[k++] = gs_disc_engine_rank(s, p[i]);
			continue;
		}
		gs_cont_engine_ranks(s, p[i], &cr, &r[k]);
		/* the scalar form asks one rank when both rows are the same */
		k += (rule == GS_BATCH_CONT_MULTI || cr.second != cr.first) ? 2 : 1;
	}
	*out = r;
	return k;
}

/* keep the batch's keys with the state, in its own context */
static void
gs_batch_keep(GsState *s, const gs_select_item *it)
{
	uint64	   *memo = (uint64 *) MemoryContextAlloc(s->mcxt, sizeof(uint64) * 2 * it->nranks);

	memcpy(memo, it->ranks, sizeof(uint64) * it->nranks);
	memcpy(memo + it->nranks, it->out_keys, sizeof(uint64) * it->nranks);
	s->memo_ranks = memo;
	s->memo_keys = memo + it->nranks;
	s->memo_nranks = (int) it->nranks;
}

static bool
gs_batch_wants(const GsState *s)
{
	return s->nrows >= GS_BATCH_MIN_GROUP_KEYS && gs_dispatch_batchable(s);
}

/*
 * Select the wanted states of b->states[*next ..] on the team, up to
 * GS_BATCH_SLICE of them, their inputs and ranks in CurrentMemoryContext;
 * *next moves past them.  Returns how many were selected.
 */
static int
gs_batch_slice(GsFinalBatch *b, int *next, GsBatchRule rule, int threads)
{
	gs_select_item *items = (gs_select_item *) palloc0(sizeof(gs_select_item) * GS_BATCH_SLICE);
	GsState   **owners = (GsState **) palloc(sizeof(GsState *) * GS_BATCH_SLICE);
	int			nitems = 0;

	for (; *next < b->nstates && nitems < GS_BATCH_SLICE; (*next)++)
	{
		GsState    *s = b->states[*next];
		gs_select_item *it = &items[nitems];
		uint64	   *ranks;
		int			nranks;

		if (!gs_batch_wants(s) || (nranks = gs_batch_ranks(s, rule, &ranks)) == 0)
			continue;
		gs_state_input(s, &it->in);
		it->ranks = ranks;
		it->nranks = (size_t) nranks;
		it->out_keys = (uint64 *) palloc(sizeof(uint64) * nranks);
		owners[nitems++] = s;
	}
	if (nitems > 0)
	{
		instr_time	start;

		INSTR_TIME_SET_CURRENT(start);
		gs_dispatch_cpu_many(items, nitems, threads);
		gs_dispatch_add_select_ms(gs_elapsed_ms(start));
	}
	for (int i = 0; i < nitems; i++)
		gs_batch_keep(owners[i], &items[i]);
	return nitems;
}

void
gs_final_batch_run(GsState *st, GsBatchRule rule)
{
	GsFinalBatch *b = st->batch;
	int			threads = gs_final_batch_threads();
	int			first,
				next,
				wanted = 0,
				done = 0;
	int64		keys = 0;
	MemoryContext tmp,
				old;

	if (b == NULL || st->batch_index < b->noffered)
		return;
	first = b->noffered;
	b->noffered = b->nstates;	/* once, whatever happens below */
	if (threads == 0)
		return;
	for (int i = first; i < b->nstates; i++)
		if (gs_batch_wants(b->states[i]))
		{
			wanted++;
			keys += b->states[i]->nrows;
		}
	if (wanted < 2 || keys < GS_BATCH_MIN_KEYS)
		return;

	tmp = AllocSetContextCreate(CurrentMemoryContext, "gpuselect final batch",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(tmp);
	gs_final_batch_last_threads = threads;
	for (next = first; next < b->nstates;)
	{
		done += gs_batch_slice(b, &next, rule, threads);
		MemoryContextReset(tmp);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	gs_final_batches++;
	gs_final_batch_groups += done;
}
