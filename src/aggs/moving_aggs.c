/*
 * moving_aggs.c — gpu_median, gpu_quantile and gpu_quantiles as moving
 * window aggregates (CREATE AGGREGATE's MSFUNC / MINVFUNC / MFINALFUNC):
 * rolling medians and percentiles in O(log w) per row instead of
 * re-aggregating the w rows of every frame.
 *
 * PostgreSQL's WindowAgg (nodeWindowAgg.c) calls these instead of the plain
 * aggregate's functions when the frame head can move (not UNBOUNDED
 * PRECEDING).  For each row it first removes the rows that left the head
 * (the inverse function, only without an EXCLUDE clause), then adds the rows
 * that entered at the end, then calls the final function -- again and again
 * on the same state, which it must leave usable.  An inverse returning NULL
 * means "cannot": the aggregate restarts, i.e. its private memory context is
 * reset and the whole frame is added again.  So the state holds exactly the
 * current frame's rows, and its memory follows the frame, not the partition.
 *
 * The state has two phases:
 *   - append: the plain aggregates' state (GsState: keys appended, the
 *     final selects with the engine), so that frames PostgreSQL rebuilds
 *     for every row (EXCLUDE, frames that jump) cost what they did before;
 *   - tree: a counted B+-tree of the frame's keys (ostree.h), taken
 *     at the first inverse call, at the second final call on one state (a
 *     frame that grows row by row), or before the append phase would
 *     spill (gpuselect.work_mem).  Add, remove and read a rank are O(log w)
 *     from then on.
 * Types without integer keys (numeric, text, interval, uuid, ...: GS_T_DATUM)
 * take the same phases; their tree is state/datum_frame.c's (the values by
 * the type's comparator under the call's collation, equal ones by arrival:
 * which of equal values of other bytes is answered, datum_frame.h).  Their
 * append phase's store never spills (in_memory); the tree is taken before
 * it holds more than gpuselect.work_mem.  The append phase's finals are
 * the plain aggregates' (datum_select.c): among equal values of other
 * bytes they pick as the plain aggregates do (arrival order for frames of
 * at most 16 values, which it insertion-sorts).
 *
 * The tree is read on the CPU and exactly, whatever gpuselect.device and
 * gpuselect.approximate say: its reads cost O(log w), no engine run could
 * be cheaper.  The append phase's finals go through the engine as before.
 *
 * Answers: the same rank rules and interpolation as the plain final
 * functions (ranks.c: gs_disc_rank, gs_cont_rows, gs_cont_from_keys,
 * gs_disc_multi_by), on the same keys: equal bit for bit.
 *
 * The fraction: as in the plain aggregates, every row of a frame must carry
 * the same one (a NULL x row included); the frame's first row fixes and
 * validates it.  Since every row in the state is in the current frame, a
 * row whose fraction differs from the state's is an ERROR, as re-aggregating
 * that frame would raise; a state emptied by inverse calls forgets it.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "aggs/fn_cache.h"
#include "aggs/moving_aggs.h"
#include "aggs/ranks.h"
#include "base/types.h"
#include "state/datum_frame.h"
#include "state/ostree.h"
#include "state/spill.h"
#include "state/state.h"

PG_FUNCTION_INFO_V1(gs_moving_median_trans);
PG_FUNCTION_INFO_V1(gs_moving_median_inv);
PG_FUNCTION_INFO_V1(gs_moving_median_final);
PG_FUNCTION_INFO_V1(gs_moving_median_interval_final);
PG_FUNCTION_INFO_V1(gs_moving_quantile_trans);
PG_FUNCTION_INFO_V1(gs_moving_quantile_inv);
PG_FUNCTION_INFO_V1(gs_moving_quantile_final);
PG_FUNCTION_INFO_V1(gs_moving_quantiles_trans);
PG_FUNCTION_INFO_V1(gs_moving_quantiles_inv);
PG_FUNCTION_INFO_V1(gs_moving_quantiles_final);

typedef struct GsMoving
{
	MemoryContext mcxt;			/* the aggregate's private window context */
	GsTypeKind	kind;
	int64		nframe;			/* rows in the state, NULL x included */
	GsState    *plain;			/* append phase (always, for GS_T_DATUM) */
	int			nfinals;		/* final calls in the append phase */
	GsOsTree   *tree;			/* tree phase: the frame's keys */
	GsDatumFrame *dframe;		/* tree phase of GS_T_DATUM: the frame's values */
	int			seen_chunks;	/* GS_T_DATUM append phase: store chunks last checked */
	/* the fraction of every row in the state (nframe > 0) */
	bool		fraction_null;
	float8		fraction;		/* gpu_quantile */
	ArrayType  *fractions;		/* gpu_quantiles (copy in mcxt) */
} GsMoving;

/* gpuselect_status(): the most values and memory one moving state held at a final call */
int64		gs_moving_peak_values = 0;
int64		gs_moving_peak_bytes = 0;

/* values in the state */
static inline int64
gs_moving_nvalues(const GsMoving *ms)
{
	if (ms->tree != NULL)
		return (int64) gs_ostree_count(ms->tree);
	if (ms->dframe != NULL)
		return (int64) gs_dframe_count(ms->dframe);
	return ms->plain->nrows;
}

static inline bool
gs_moving_in_tree(const GsMoving *ms)
{
	return ms->tree != NULL || ms->dframe != NULL;
}

/* a final call: the status peaks (the state's window context and its children) */
static void
gs_moving_note_peak(const GsMoving *ms, int64 n)
{
	int64		bytes = (int64) MemoryContextMemAllocated(ms->mcxt, true);

	gs_moving_peak_values = Max(gs_moving_peak_values, n);
	gs_moving_peak_bytes = Max(gs_moving_peak_bytes, bytes);
}

/* first row after a (re)start: the state, in the aggregate's window context */
static GsMoving *
gs_moving_start(FunctionCallInfo fcinfo, const char *aggname)
{
	MemoryContext aggcontext;
	GsFnCache  *c;
	GsMoving   *ms;

	if (AggCheckCallContext(fcinfo, &aggcontext) != AGG_CONTEXT_WINDOW)
		elog(ERROR, "%s's moving-aggregate functions called outside a window", aggname);
	c = gs_fn_cache(fcinfo, 1, aggname, false, false);
	ms = (GsMoving *) MemoryContextAllocZero(aggcontext, sizeof(GsMoving));
	ms->mcxt = aggcontext;
	ms->plain = gs_state_create_for(aggcontext, c);
	ms->kind = (GsTypeKind) ms->plain->kind;
	if (ms->kind == GS_T_DATUM)
		ms->plain->datums->in_memory = true;
	return ms;
}

/*
 * Would the next key make the append phase's state spill (spill.c)?  Only
 * at a chunk boundary: gs_state_grow's test, for at least the chunk it
 * would add.  The tree is taken before, so the phase never spills.
 */
static inline bool
gs_moving_append_would_spill(const GsState *st)
{
	const GsChunk *c = st->nchunks > 0 ? &st->chunks[st->nchunks - 1] : NULL;

	if (c != NULL && c->n < c->cap)
		return false;
	return gs_spill_wanted(st, (Size) Max(st->grow_cap * 2, GS_CHUNK_MIN_KEYS) * st->key_bytes);
}

/*
 * The append phase's keys, once in the tree: their memory goes back unless
 * a chunk is held elsewhere (the GPU service's key pool, an arena, a
 * context of its own), in which case all stay until the aggregate's context
 * is reset.  The state is not read again.
 */
static void
gs_moving_drop_keys(GsState *st)
{
	for (int i = 0; i < st->nchunks; i++)
	{
		const GsChunk *c = &st->chunks[i];

		if (c->arena || c->pool_ref != 0 || c->owned != NULL || c->handover != NULL)
			return;
	}
	for (int i = 0; i < st->nchunks; i++)
		pfree(st->chunks[i].data);
	st->nchunks = 0;
}

/* the append phase's values into a new frame of values (GS_T_DATUM) */
static void
gs_moving_to_dframe(GsMoving *ms)
{
	GsState    *st = ms->plain;
	GsDatumStore *s = st->datums;

	Assert(ms->dframe == NULL);
	ms->dframe = gs_dframe_create(ms->mcxt, st->typid, s->sortop, s->collation);
	gs_dframe_add_state(ms->dframe, st);
	for (int i = 0; i < s->nchunks; i++)
		pfree(s->chunks[i].data);
	s->nchunks = 0;
	st->nrows = 0;
}

/* a GS_T_DATUM append phase grew a chunk: past gpuselect.work_mem, the tree */
static pg_noinline void
gs_moving_datum_grew(GsMoving *ms)
{
	const GsDatumStore *s = ms->plain->datums;
	Size		held = 0;

	ms->seen_chunks = s->nchunks;
	for (int i = 0; i < s->nchunks; i++)
		held += s->chunks[i].cap;
	if (held > gs_spill_limit_bytes())
		gs_moving_to_dframe(ms);
}

/* the append phase's keys into a new tree */
static void
gs_moving_to_tree(GsMoving *ms)
{
	GsState    *st = ms->plain;
	GsOsTree   *t;

	if (ms->kind == GS_T_DATUM)
	{
		gs_moving_to_dframe(ms);
		return;
	}
	Assert(ms->tree == NULL);
	if (st->spill != NULL)		/* gs_moving_add takes the tree before */
		elog(ERROR, "gpuselect: a window aggregate's keys spilled");
	t = (GsOsTree *) MemoryContextAlloc(ms->mcxt, sizeof(GsOsTree));
	gs_ostree_init(t, ms->mcxt);
	for (int i = 0; i < st->nchunks; i++)
	{
		const GsChunk *c = &st->chunks[i];

		for (uint64 j = 0; j < c->n; j++)
		{
			switch (st->key_bytes)
			{
				case 2:
					gs_ostree_insert(t, ((const uint16 *) c->data)[j]);
					break;
				case 4:
					gs_ostree_insert(t, ((const uint32 *) c->data)[j]);
					break;
				default:
					gs_ostree_insert(t, ((const uint64 *) c->data)[j]);
					break;
			}
		}
		CHECK_FOR_INTERRUPTS();
	}
	gs_moving_drop_keys(st);
	ms->tree = t;
}

/* per row: inlined, so the append phase costs what the plain transition does */
static pg_attribute_always_inline void
gs_moving_add(GsMoving *ms, Datum d)
{
	if (ms->kind == GS_T_DATUM)
	{
		if (ms->dframe != NULL)
			gs_dframe_add(ms->dframe, d);
		else
		{
			gs_datum_append(ms->plain, d);
			if (unlikely(ms->plain->datums->nchunks != ms->seen_chunks))
				gs_moving_datum_grew(ms);
		}
		return;
	}
	if (likely(ms->tree == NULL))
	{
		if (!gs_moving_append_would_spill(ms->plain))
		{
			gs_append_datum(ms->plain, ms->kind, d);
			return;
		}
		gs_moving_to_tree(ms);
	}
	gs_ostree_insert(ms->tree, gs_key_from_datum(ms->kind, d));
}

/*
 * The inverse transition's common part: true, the row is taken out (an
 * inverse returning NULL would make PostgreSQL re-aggregate the frame).
 */
static bool
gs_moving_remove(FunctionCallInfo fcinfo, GsMoving *ms)
{
	if (!PG_ARGISNULL(1))
	{
		if (!gs_moving_in_tree(ms))
			gs_moving_to_tree(ms);
		if (ms->kind == GS_T_DATUM)
			gs_dframe_remove_oldest(ms->dframe, PG_GETARG_DATUM(1));
		else if (!gs_ostree_delete(ms->tree, gs_key_from_datum(ms->kind, PG_GETARG_DATUM(1))))
			elog(ERROR, "gpuselect: a row leaving the window frame was not in it");
	}
	if (ms->nframe <= 0)
		elog(ERROR, "gpuselect: a row left an empty window frame");
	ms->nframe--;
	return true;
}

/* a final call (n values): the second one on a state in the append phase takes the tree */
static bool
gs_moving_final_uses_tree(GsMoving *ms, int64 n)
{
	if (!gs_moving_in_tree(ms) && ++ms->nfinals >= 2)
		gs_moving_to_tree(ms);
	gs_moving_note_peak(ms, n);
	return gs_moving_in_tree(ms);
}

/* the value of 0-based rank k of a GS_T_DATUM tree, copied for the caller */
static Datum
gs_moving_dframe_value(const GsMoving *ms, int64 k)
{
	const GsDatumFrame *f = ms->dframe;

	return datumCopy(gs_dframe_at(f, (uint64) k), f->typbyval, f->typlen);
}

/* ---------------- gpu_median(float8), gpu_median(interval) ---------------- */

/* gs_moving_median_trans(internal, anyelement) returns internal */
Datum
gs_moving_median_trans(PG_FUNCTION_ARGS)
{
	GsMoving   *ms = PG_ARGISNULL(0) ? gs_moving_start(fcinfo, "gpu_median") :
		(GsMoving *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
		gs_moving_add(ms, PG_GETARG_DATUM(1));
	ms->nframe++;
	PG_RETURN_POINTER(ms);
}

/* gs_moving_median_inv(internal, anyelement) returns internal */
Datum
gs_moving_median_inv(PG_FUNCTION_ARGS)
{
	GsMoving   *ms = (GsMoving *) PG_GETARG_POINTER(0);

	if (PG_ARGISNULL(0) || !gs_moving_remove(fcinfo, ms))
		PG_RETURN_NULL();
	PG_RETURN_POINTER(ms);
}

/* gs_moving_median_final(internal, float8) returns float8 */
Datum
gs_moving_median_final(PG_FUNCTION_ARGS)
{
	GsMoving   *ms;
	GsContRows	cr;
	uint64		keys[2];
	int64		n;

	gs_fn_cache(fcinfo, 1, "gpu_median", true, false);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	ms = (GsMoving *) PG_GETARG_POINTER(0);
	n = gs_moving_nvalues(ms);
	if (n == 0)
		PG_RETURN_NULL();
	if (!gs_moving_final_uses_tree(ms, n))
		PG_RETURN_FLOAT8(gs_final_cont(ms->plain, 0.5));
	gs_cont_rows(0.5, n, &cr);
	keys[0] = gs_ostree_select(ms->tree, (uint64) cr.first);
	keys[1] = cr.second > cr.first ? gs_ostree_select(ms->tree, (uint64) cr.second) : keys[0];
	PG_RETURN_FLOAT8(gs_cont_from_keys(ms->kind, &cr, keys));
}

/* gs_moving_median_interval_final(internal, interval) returns interval */
Datum
gs_moving_median_interval_final(PG_FUNCTION_ARGS)
{
	GsMoving   *ms;
	GsContRows	cr;
	Datum		lo;
	int64		n;

	gs_fn_cache(fcinfo, 1, "gpu_median", false, false);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	ms = (GsMoving *) PG_GETARG_POINTER(0);
	n = gs_moving_nvalues(ms);
	if (n == 0)
		PG_RETURN_NULL();
	if (!gs_moving_final_uses_tree(ms, n))
		PG_RETURN_DATUM(gs_datum_final_cont_interval(ms->plain, 0.5));
	gs_cont_rows(0.5, n, &cr);
	lo = gs_dframe_at(ms->dframe, (uint64) cr.first);
	if (cr.second == cr.first)
		PG_RETURN_DATUM(datumCopy(lo, false, sizeof(Interval)));
	PG_RETURN_DATUM(gs_interval_lerp(lo, gs_dframe_at(ms->dframe, (uint64) cr.second),
									 cr.proportion));
}

/* ---------------- gpu_quantile(x, p) ---------------- */

/* gs_moving_quantile_trans(internal, anyelement, float8) returns internal */
Datum
gs_moving_quantile_trans(PG_FUNCTION_ARGS)
{
	GsMoving   *ms = PG_ARGISNULL(0) ? gs_moving_start(fcinfo, "gpu_quantile") :
		(GsMoving *) PG_GETARG_POINTER(0);

	if (ms->nframe == 0)
	{
		ms->fraction_null = PG_ARGISNULL(2);
		if (!ms->fraction_null)
		{
			ms->fraction = PG_GETARG_FLOAT8(2);
			gs_check_fraction(ms->fraction);
		}
	}
	else if (PG_ARGISNULL(2) != ms->fraction_null ||
			 (!ms->fraction_null && PG_GETARG_FLOAT8(2) != ms->fraction))
		gs_fraction_mismatch_error(false);
	if (!PG_ARGISNULL(1))
		gs_moving_add(ms, PG_GETARG_DATUM(1));
	ms->nframe++;
	PG_RETURN_POINTER(ms);
}

/* gs_moving_quantile_inv(internal, anyelement, float8) returns internal */
Datum
gs_moving_quantile_inv(PG_FUNCTION_ARGS)
{
	GsMoving   *ms = (GsMoving *) PG_GETARG_POINTER(0);

	if (PG_ARGISNULL(0) || !gs_moving_remove(fcinfo, ms))
		PG_RETURN_NULL();
	PG_RETURN_POINTER(ms);
}

/* gs_moving_quantile_final(internal, anyelement, float8) returns anyelement */
Datum
gs_moving_quantile_final(PG_FUNCTION_ARGS)
{
	GsMoving   *ms;
	int64		n;
	uint64		key;

	gs_fn_cache(fcinfo, 1, "gpu_quantile", false, false);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	ms = (GsMoving *) PG_GETARG_POINTER(0);
	if (ms->nframe == 0 || ms->fraction_null)
		PG_RETURN_NULL();
	gs_check_fraction(ms->fraction);
	n = gs_moving_nvalues(ms);
	if (n == 0)
		PG_RETURN_NULL();
	if (!gs_moving_final_uses_tree(ms, n))
		PG_RETURN_DATUM(gs_final_disc(ms->plain, ms->fraction));
	if (ms->kind == GS_T_DATUM)
		PG_RETURN_DATUM(gs_moving_dframe_value(ms, gs_disc_rank(ms->fraction, n)));
	key = gs_ostree_select(ms->tree, (uint64) gs_disc_rank(ms->fraction, n));
	PG_RETURN_DATUM(gs_key_to_datum(ms->kind, key));
}

/* ---------------- gpu_quantiles(x, p[]) ---------------- */

/* gs_moving_quantiles_trans(internal, anyelement, float8[]) returns internal */
Datum
gs_moving_quantiles_trans(PG_FUNCTION_ARGS)
{
	GsMoving   *ms = PG_ARGISNULL(0) ? gs_moving_start(fcinfo, "gpu_quantiles") :
		(GsMoving *) PG_GETARG_POINTER(0);

	if (ms->nframe == 0)
	{
		if (ms->fractions != NULL)
			pfree(ms->fractions);
		ms->fractions = NULL;
		ms->fraction_null = PG_ARGISNULL(2);
		if (!ms->fraction_null)
		{
			ArrayType  *a = PG_GETARG_ARRAYTYPE_P(2);

			ms->fractions = (ArrayType *) MemoryContextAlloc(ms->mcxt, VARSIZE(a));
			memcpy(ms->fractions, a, VARSIZE(a));
		}
	}
	else if (PG_ARGISNULL(2) != ms->fraction_null ||
			 (!ms->fraction_null &&
			  !gs_fraction_arrays_equal(PG_GETARG_ARRAYTYPE_P(2), ms->fractions)))
		gs_fraction_mismatch_error(true);
	if (!PG_ARGISNULL(1))
		gs_moving_add(ms, PG_GETARG_DATUM(1));
	ms->nframe++;
	PG_RETURN_POINTER(ms);
}

/* gs_moving_quantiles_inv(internal, anyelement, float8[]) returns internal */
Datum
gs_moving_quantiles_inv(PG_FUNCTION_ARGS)
{
	GsMoving   *ms = (GsMoving *) PG_GETARG_POINTER(0);

	if (PG_ARGISNULL(0) || !gs_moving_remove(fcinfo, ms))
		PG_RETURN_NULL();
	PG_RETURN_POINTER(ms);
}

/* gs_disc_multi_by's selector over a tree */
static void
gs_moving_select_tree(void *arg, const uint64 *ranks, int nranks, uint64 *keys)
{
	for (int i = 0; i < nranks; i++)
		keys[i] = gs_ostree_select((const GsOsTree *) arg, ranks[i]);
}

/* percentile_disc(float8[]) over a GS_T_DATUM tree of n > 0 values */
static ArrayType *
gs_moving_dframe_multi(const GsMoving *ms, ArrayType *param, const GsTypeInfo *t, int64 n)
{
	Datum	   *fr;
	bool	   *frnull;
	int			np = gs_fraction_array(param, &fr, &frnull);
	Datum	   *res;

	if (np == 0)
		return construct_empty_array(t->elemtypid);
	res = (Datum *) palloc(sizeof(Datum) * np);
	for (int i = 0; i < np; i++)
		res[i] = frnull[i] ? (Datum) 0 :
			gs_dframe_at(ms->dframe, (uint64) gs_disc_rank(DatumGetFloat8(fr[i]), n));
	/* construct_md_array copies the values */
	return construct_md_array(res, frnull, ARR_NDIM(param), ARR_DIMS(param), ARR_LBOUND(param),
							  t->elemtypid, t->typlen, t->typbyval, t->typalign);
}

/* gs_moving_quantiles_final(internal, anyelement, float8[]) returns anyarray */
Datum
gs_moving_quantiles_final(PG_FUNCTION_ARGS)
{
	GsFnCache  *c = gs_fn_cache(fcinfo, 1, "gpu_quantiles", false, false);
	GsMoving   *ms;
	int64		n;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	ms = (GsMoving *) PG_GETARG_POINTER(0);
	n = gs_moving_nvalues(ms);
	if (n == 0 || ms->fraction_null || ms->fractions == NULL)
		PG_RETURN_NULL();
	if (!gs_moving_final_uses_tree(ms, n))
		PG_RETURN_ARRAYTYPE_P(gs_final_disc_multi(ms->plain, ms->fractions, &c->type));
	if (ms->kind == GS_T_DATUM)
		PG_RETURN_ARRAYTYPE_P(gs_moving_dframe_multi(ms, ms->fractions, &c->type, n));
	PG_RETURN_ARRAYTYPE_P(gs_disc_multi_by(ms->fractions, &c->type, ms->kind, n, false,
										   gs_moving_select_tree, ms->tree));
}
