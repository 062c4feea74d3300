/*
 * plain_aggs.c — gpu_median(x), gpu_quantile(x, p), gpu_quantiles(x, p[]):
 * plain aggregates (usable in parallel plans and as window aggregates) with
 * combine / serialize / deserialize functions.
 *
 *   gpu_median(x)        = percentile_cont(0.5) WITHIN GROUP (ORDER BY x)  (numeric x)
 *   gpu_quantile(x, p)   = percentile_disc(p)   WITHIN GROUP (ORDER BY x)
 *   gpu_quantiles(x, p[])= percentile_disc(p[]) WITHIN GROUP (ORDER BY x)
 *
 * The fraction argument is taken from the group's first row (NULL x rows
 * included); a different fraction in a later row -- or in another worker's
 * partial state -- is an ERROR (22023).  When the argument cannot change
 * during the scan (a constant, a parameter, an uncorrelated subquery: see
 * gs_agg_arg_is_stable) it is not compared per row.
 * gpu_quantile validates p at the first row (like percentile_disc, even if
 * every x is NULL); over no rows at all it validates a constant p, which is
 * all it can see without a row, and returns NULL.  gpu_quantiles
 * validates its array in the final function, after the no-rows check, as
 * percentile_disc(float8[]) does.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/primnodes.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "state/arena.h"
#include "aggs/final_batch.h"
#include "aggs/ranks.h"
#include "state/shared_state.h"
#include "state/state.h"
#include "base/types.h"
#include "aggs/fn_cache.h"

PG_FUNCTION_INFO_V1(gs_median_trans);
PG_FUNCTION_INFO_V1(gs_median_final);
PG_FUNCTION_INFO_V1(gs_quantile_trans);
PG_FUNCTION_INFO_V1(gs_quantile_final);
PG_FUNCTION_INFO_V1(gs_quantiles_trans);
PG_FUNCTION_INFO_V1(gs_quantiles_final);
PG_FUNCTION_INFO_V1(gs_combine);
PG_FUNCTION_INFO_V1(gs_serialize);
PG_FUNCTION_INFO_V1(gs_deserialize);

/*
 * Is the aggregate's fraction argument (argument argno of the aggregate,
 * 0-based) fixed for the whole scan of the aggregate's input, so that it
 * need not be compared row by row?  get_fn_expr_arg_stable() cannot tell:
 * the expression PostgreSQL builds for a transition function has PARAM_EXEC
 * placeholders as arguments.  The Aggref itself has the real expressions.
 *
 * Fixed: an expression without Vars (the only thing that differs from one
 * input row to the next), without volatile functions and without SubPlans
 * (a correlated subquery, run per row).  That covers constants, external
 * parameters, stable functions (fixed within a statement, as the planner
 * itself assumes), and PARAM_EXEC values: an InitPlan's output (an
 * uncorrelated subquery such as (SELECT array_agg(...) FROM ...), computed
 * once) or a value of an outer query level or nestloop, which changes only
 * with a rescan of this aggregate's plan, and a rescan starts every group
 * afresh.  Such an argument costs nothing per row, whatever its size.
 */
static bool
gs_agg_arg_is_stable(FunctionCallInfo fcinfo, int argno)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	TargetEntry *tle;
	Node	   *expr;

	if (aggref == NULL || list_length(aggref->args) <= argno)
		return false;
	tle = list_nth_node(TargetEntry, aggref->args, argno);
	expr = (Node *) tle->expr;
	if (IsA(expr, Const))
		return true;
	return !contain_var_clause(expr) && !contain_subplans(expr) &&
		!contain_volatile_functions(expr);
}

/*
 * gpu_quantiles' fraction array in a later row of a group computed per row:
 * the same as the group's first?  A value stored out of line (a toasted
 * column, e.g. the row of a fraction table joined to every input row) is
 * recognised by its TOAST pointer, without fetching it: a TOAST value is
 * never modified, and while a tuple that points at it is visible to the
 * query its value OID cannot be reused.  Two are remembered: the first one
 * seen and the latest other one found equal (a join may alternate between
 * two stored copies of one array).  Anything else is compared in full
 * (gs_fraction_arrays_equal), which costs about what computing or reading
 * the array for the row did.
 */
static void
gs_fraction_note_toast(GsState *st, const struct varatt_external *ext)
{
	st->fraction_toast[st->fraction_ntoast == 0 ? 0 : 1] = *ext;
	if (st->fraction_ntoast < 2)
		st->fraction_ntoast++;
}

static bool
gs_fraction_row_same(GsState *st, Datum d)
{
	struct varlena *raw = (struct varlena *) DatumGetPointer(d);
	struct varatt_external ext;

	if (!VARATT_IS_EXTERNAL_ONDISK(raw))
		return gs_fraction_arrays_equal(DatumGetArrayTypeP(d), st->fractions);
	memset(&ext, 0, sizeof(ext));
	VARATT_EXTERNAL_GET_POINTER(ext, raw);
	for (int i = 0; i < st->fraction_ntoast; i++)
		if (ext.va_toastrelid == st->fraction_toast[i].va_toastrelid &&
			ext.va_valueid == st->fraction_toast[i].va_valueid)
			return true;
	if (!gs_fraction_arrays_equal(DatumGetArrayTypeP(d), st->fractions))
		return false;
	gs_fraction_note_toast(st, &ext);
	return true;
}

/*
 * The Aggref whose argument expressions are the aggregate's own: this
 * call's, or -- in the finalizing step of a partial aggregation, whose one
 * argument is the partial aggregate's result -- the partial Aggref below,
 * found by following that argument down the plan (Finalize Aggregate ->
 * Gather -> Partial Aggregate, each step an OUTER_VAR into the child's
 * target list).  NULL when it cannot be found (e.g. a window aggregate).
 */
static Aggref *
gs_agg_source_aggref(FunctionCallInfo fcinfo)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	PlanState  *ps;
	Expr	   *expr;

	if (aggref == NULL || !DO_AGGSPLIT_COMBINE(aggref->aggsplit))
		return aggref;
	if (list_length(aggref->args) != 1 || fcinfo->context == NULL || !IsA(fcinfo->context, AggState))
		return NULL;
	ps = (PlanState *) fcinfo->context;
	expr = linitial_node(TargetEntry, aggref->args)->expr;
	for (int depth = 0; depth < 8; depth++)
	{
		Var		   *var = (Var *) expr;

		if (IsA(expr, Aggref))
		{
			Aggref	   *partial = (Aggref *) expr;

			return partial->aggfnoid == aggref->aggfnoid &&
				!DO_AGGSPLIT_COMBINE(partial->aggsplit) ? partial : NULL;
		}
		/* the bulk scan (scan/bulk_scan.c): its output is its scan tuple */
		if (IsA(expr, Var) && var->varno == INDEX_VAR && IsA(ps->plan, CustomScan))
		{
			List	   *scan_tlist = ((CustomScan *) ps->plan)->custom_scan_tlist;

			if (var->varattno < 1 || var->varattno > list_length(scan_tlist))
				return NULL;
			expr = list_nth_node(TargetEntry, scan_tlist, var->varattno - 1)->expr;
			continue;
		}
		if (!IsA(expr, Var) || var->varno != OUTER_VAR)
			return NULL;
		/* an Append (of bulk scans, one per partition): its first child */
		if (IsA(ps, AppendState))
			ps = ((AppendState *) ps)->as_nplans > 0 ? ((AppendState *) ps)->appendplans[0] : NULL;
		else
			ps = outerPlanState(ps);
		if (ps == NULL || var->varattno < 1 || var->varattno > list_length(ps->plan->targetlist))
			return NULL;
		expr = list_nth_node(TargetEntry, ps->plan->targetlist, var->varattno - 1)->expr;
	}
	return NULL;
}

/*
 * gpu_quantile over no rows at all: the transition function never ran, so
 * no fraction was seen.  percentile_disc(p) evaluates p in its final
 * function and validates it before it finds no rows; when p is a constant
 * (after planning: a literal, a folded expression, a parameter of a custom
 * plan), do the same -- 22003 for one outside [0, 1] or NaN.  A fraction
 * that is not a constant cannot be known without a row (README: the
 * result is then NULL).
 */
static void
gs_check_constant_fraction(FunctionCallInfo fcinfo, int argno)
{
	Aggref	   *aggref = gs_agg_source_aggref(fcinfo);
	Expr	   *expr;

	if (aggref == NULL || list_length(aggref->args) <= argno)
		return;
	expr = list_nth_node(TargetEntry, aggref->args, argno)->expr;
	if (IsA(expr, Const) && !((Const *) expr)->constisnull &&
		((Const *) expr)->consttype == FLOAT8OID)
		gs_check_fraction(DatumGetFloat8(((Const *) expr)->constvalue));
}

/*
 * Is this a partial aggregation whose states are serialized for a combining
 * aggregate (a parallel worker's, or the leader's own share)?  Selection then
 * runs on the combined state only, so these states never take held key-pool
 * chunks for a selection of their own (they may lease chunks for their
 * leader: service_scan.c).
 */
static bool
gs_agg_is_partial(FunctionCallInfo fcinfo)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);

	return aggref != NULL && DO_AGGSPLIT_SERIALIZE(aggref->aggsplit);
}

/*
 * Is this a plain aggregate (no GROUP BY)?  Its finalizing step reads every
 * partial state before it returns anything, which lets a worker's state wait
 * in shared memory (shared_state.c) and lets partial states keep their keys
 * in the leader's arena (arena.c).
 */
static bool
gs_agg_is_plain(FunctionCallInfo fcinfo)
{
	return fcinfo->context != NULL && IsA(fcinfo->context, AggState) &&
		((AggState *) fcinfo->context)->aggstrategy == AGG_PLAIN;
}

/* first call of a group: per-query cache + a new state in the aggregate context */
static GsState *
gs_plain_start(FunctionCallInfo fcinfo, const char *aggname, bool numeric_only,
			   bool has_fraction)
{
	MemoryContext aggcontext;
	GsFnCache  *c;
	GsState    *st;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "%s called in non-aggregate context", aggname);
	c = (GsFnCache *) fcinfo->flinfo->fn_extra;
	if (c == NULL)
	{
		c = gs_fn_cache(fcinfo, 1, aggname, numeric_only, false);
		if (has_fraction)
			c->arg_stable = gs_agg_arg_is_stable(fcinfo, 1);
	}
	st = gs_state_create_for(aggcontext, c);
	st->partial = gs_agg_is_partial(fcinfo);
	st->arena_ok = st->partial && gs_agg_is_plain(fcinfo);
	st->lease_ok = st->partial;
	if (!st->partial)
		gs_final_batch_note(fcinfo, aggcontext, st);
	return st;
}

/* gs_median_trans(internal, anyelement) */
Datum
gs_median_trans(PG_FUNCTION_ARGS)
{
	GsState    *st;

	if (unlikely(PG_ARGISNULL(0)))
		st = gs_plain_start(fcinfo, "gpu_median", false, false);	/* float8 or interval */
	else
		st = (GsState *) PG_GETARG_POINTER(0);
	if (!PG_ARGISNULL(1))
		gs_append_datum(st, (GsTypeKind) st->kind, PG_GETARG_DATUM(1));
	PG_RETURN_POINTER(st);
}

/* gs_quantile_trans(internal, anyelement, float8) */
Datum
gs_quantile_trans(PG_FUNCTION_ARGS)
{
	GsState    *st;

	if (unlikely(PG_ARGISNULL(0)))
	{
		st = gs_plain_start(fcinfo, "gpu_quantile", false, true);
		st->have_fraction = true;
		st->fraction_null = PG_ARGISNULL(2);
		if (!st->fraction_null)
		{
			st->fraction = PG_GETARG_FLOAT8(2);
			gs_check_fraction(st->fraction);
		}
	}
	else
	{
		st = (GsState *) PG_GETARG_POINTER(0);
		if (!((GsFnCache *) fcinfo->flinfo->fn_extra)->arg_stable)
		{
			if (PG_ARGISNULL(2) != st->fraction_null ||
				(!st->fraction_null && PG_GETARG_FLOAT8(2) != st->fraction))
				gs_fraction_mismatch_error(false);
		}
	}
	if (!PG_ARGISNULL(1))
		gs_append_datum(st, (GsTypeKind) st->kind, PG_GETARG_DATUM(1));
	PG_RETURN_POINTER(st);
}

/* gs_quantiles_trans(internal, anyelement, float8[]) */
Datum
gs_quantiles_trans(PG_FUNCTION_ARGS)
{
	GsState    *st;

	if (unlikely(PG_ARGISNULL(0)))
	{
		st = gs_plain_start(fcinfo, "gpu_quantiles", false, true);
		st->have_fraction = true;
		st->fraction_null = PG_ARGISNULL(2);
		if (!st->fraction_null)
		{
			struct varlena *raw = (struct varlena *) DatumGetPointer(PG_GETARG_DATUM(2));
			ArrayType  *a = PG_GETARG_ARRAYTYPE_P(2);

			st->fractions = (ArrayType *) MemoryContextAlloc(st->mcxt, VARSIZE(a));
			memcpy(st->fractions, a, VARSIZE(a));
			if (VARATT_IS_EXTERNAL_ONDISK(raw))
			{
				struct varatt_external ext;

				memset(&ext, 0, sizeof(ext));
				VARATT_EXTERNAL_GET_POINTER(ext, raw);
				gs_fraction_note_toast(st, &ext);
			}
		}
	}
	else
	{
		st = (GsState *) PG_GETARG_POINTER(0);
		if (!((GsFnCache *) fcinfo->flinfo->fn_extra)->arg_stable)
		{
			if (PG_ARGISNULL(2) != st->fraction_null ||
				(!st->fraction_null && !gs_fraction_row_same(st, PG_GETARG_DATUM(2))))
				gs_fraction_mismatch_error(true);
		}
	}
	if (!PG_ARGISNULL(1))
		gs_append_datum(st, (GsTypeKind) st->kind, PG_GETARG_DATUM(1));
	PG_RETURN_POINTER(st);
}

/* gs_median_final(internal, anyelement) returns float8 */
Datum
gs_median_final(PG_FUNCTION_ARGS)
{
	GsState    *st;

	gs_fn_cache(fcinfo, 1, "gpu_median", true, false);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (GsState *) PG_GETARG_POINTER(0);
	if (st->nrows == 0)
		PG_RETURN_NULL();
	gs_final_batch_run(st, GS_BATCH_MEDIAN);
	PG_RETURN_FLOAT8(gs_final_cont(st, 0.5));
}

/* gs_quantile_final(internal, anyelement, float8) returns anyelement */
Datum
gs_quantile_final(PG_FUNCTION_ARGS)
{
	GsState    *st;

	gs_fn_cache(fcinfo, 1, "gpu_quantile", false, false);
	if (PG_ARGISNULL(0))
	{
		/* no rows: a constant fraction is still validated, as percentile_disc does */
		gs_check_constant_fraction(fcinfo, 1);
		PG_RETURN_NULL();
	}
	st = (GsState *) PG_GETARG_POINTER(0);
	if (!st->have_fraction || st->fraction_null)
		PG_RETURN_NULL();
	gs_check_fraction(st->fraction);
	if (st->nrows == 0)
		PG_RETURN_NULL();
	gs_final_batch_run(st, GS_BATCH_DISC);
	PG_RETURN_DATUM(gs_final_disc(st, st->fraction));
}

/* gs_quantiles_final(internal, anyelement, float8[]) returns anyarray */
Datum
gs_quantiles_final(PG_FUNCTION_ARGS)
{
	GsFnCache  *c = gs_fn_cache(fcinfo, 1, "gpu_quantiles", false, false);
	GsState    *st;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (GsState *) PG_GETARG_POINTER(0);
	if (st->nrows == 0)
		PG_RETURN_NULL();
	if (!st->have_fraction || st->fraction_null || st->fractions == NULL)
		PG_RETURN_NULL();
	gs_final_batch_run(st, GS_BATCH_DISC_MULTI);
	PG_RETURN_ARRAYTYPE_P(gs_final_disc_multi(st, st->fractions, &c->type));
}

/* gs_combine(internal, internal) returns internal; not strict */
Datum
gs_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	GsState    *s1 = PG_ARGISNULL(0) ? NULL : (GsState *) PG_GETARG_POINTER(0);
	GsState    *s2 = PG_ARGISNULL(1) ? NULL : (GsState *) PG_GETARG_POINTER(1);

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gs_combine called in non-aggregate context");
	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL && s2->handoff_cookie != 0)
	{
		/*
		 * A whole state the bulk scan below built in this backend
		 * (state_serial.c, "GSL1"): adopt it, keys and all.  It lives in the
		 * scan's memory until the plan ends, after this aggregate's last
		 * use; a second state of the same group (none comes) would copy.
		 */
		gs_final_batch_note(fcinfo, aggcontext, s2);
		PG_RETURN_POINTER(s2);
	}
	if (s1 == NULL)
	{
		/*
		 * s2 lives in per-input-tuple memory: start a state in the aggregate
		 * context, which copies s2's keys or takes over their memory context
		 */
		s1 = gs_state_create(aggcontext, s2->typid);
		s1->descending = s2->descending;
		gs_final_batch_note(fcinfo, aggcontext, s1);
	}
	gs_state_combine(s1, s2);
	PG_RETURN_POINTER(s1);
}

/*
 * gs_serialize(internal) returns bytea; strict.  A partial plain aggregate
 * (no GROUP BY) sends one state per participant, and the finalizing one
 * deserializes all of them before it returns anything: only then may a
 * worker's state travel in shared memory (shared_state.c).
 */
Datum
gs_serialize(PG_FUNCTION_ARGS)
{
	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "gs_serialize called in non-aggregate context");
	PG_RETURN_BYTEA_P(gs_state_serialize((GsState *) PG_GETARG_POINTER(0), gs_agg_is_plain(fcinfo)));
}

/*
 * gs_deserialize(bytea, internal) returns internal; strict.  PostgreSQL calls
 * it in per-input-tuple memory, where the new state is allocated: a state the
 * combine function does not take over is freed with the input tuple.  Keys in
 * the leader's arena are only referred to (arena.c).
 */
Datum
gs_deserialize(PG_FUNCTION_ARGS)
{
	GsState    *st;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "gs_deserialize called in non-aggregate context");
	st = gs_state_deserialize(CurrentMemoryContext, PG_GETARG_BYTEA_P(0));
	if (st->handoff_cookie != 0)
		PG_RETURN_POINTER(st);	/* by reference, from the bulk scan: no arena to learn */

	/*
	 * Keys came the slow way: later transactions' parallel queries get an
	 * arena sized for them.  A plain aggregate's large state would take
	 * chunks of it, a GROUP BY's states slices (arena.h).
	 */
	{
		uint64		slow = gs_state_keys_outside_arena(st) * st->key_bytes;

		/*
		 * A plain aggregate's state from 256 kB on would take whole chunks
		 * (gs_state_grow), a GROUP BY's states share them as slices.
		 */
		if (gs_agg_is_plain(fcinfo) && slow >= GS_ARENA_START_BYTES)
			gs_arena_note_slow_bytes((Size) TYPEALIGN64(GS_ARENA_CHUNK_BYTES, slow),
									 slow >= GS_SHARED_STATE_MIN_BYTES);
		else if (!gs_agg_is_plain(fcinfo) && slow >= GS_ARENA_SLICE_MIN_BYTES)
			gs_arena_note_slow_slice((Size) slow);
	}
	PG_RETURN_POINTER(st);
}
