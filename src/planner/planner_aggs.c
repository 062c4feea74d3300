/*
 * planner_aggs.c — the plain aggregates the planner rewrite targets
 * (planner.c): gs_planner_[builtin_](disc|cont)[_desc](x, p) and their
 * float8[] overloads, plus gs_planner_check_fraction.  Nobody is meant to
 * call them by hand; EXPLAIN VERBOSE shows them where they replaced a call.
 *
 * The name says what the aggregate stands for: "_desc" ORDER BY x DESC (its
 * own transition function), "builtin_" a built-in percentile, which stays
 * exact whatever gpuselect.approximate says (the final function reads it
 * from the Aggref's function name, GS_PLANNER_EXACT).  The value may be of
 * any type gpuselect aggregates: key types, or comparison types (numeric,
 * text, interval, ...) ordered under the Aggref's input collation; the
 * (interval, ...) overloads of the cont aggregates return interval.
 *
 * They differ from gpu_quantile(s) in what the ordered-set forms require:
 *   - the fraction is carried, never compared per row: the planner proved it
 *     the same for every row of a group;
 *   - the transition never validates it; the final function checks in the
 *     ordered-set final functions' order (ordered_set.c): scalar: NULL ->
 *     NULL, out of range -> ERROR, no values -> NULL; array: no values ->
 *     NULL, NULL -> NULL, then the elements;
 *   - a group with no rows at all gives NULL; planner.c validates its
 *     fraction at plan time (a constant) or through
 *     gs_planner_check_fraction above the aggregate.
 * Combine, serialize and deserialize are gpuselect's (plain_aggs.c): the
 * fraction and the direction travel with the state.
 */
#include "postgres.h"

#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/primnodes.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "state/datum_state.h"
#include "select/dispatch.h"
#include "aggs/final_batch.h"
#include "planner/planner.h"
#include "aggs/ranks.h"
#include "state/state.h"
#include "base/types.h"
#include "aggs/fn_cache.h"

PG_FUNCTION_INFO_V1(gs_planner_trans);
PG_FUNCTION_INFO_V1(gs_planner_trans_multi);
PG_FUNCTION_INFO_V1(gs_planner_trans_desc);
PG_FUNCTION_INFO_V1(gs_planner_trans_multi_desc);
PG_FUNCTION_INFO_V1(gs_planner_disc_final);
PG_FUNCTION_INFO_V1(gs_planner_disc_multi_final);
PG_FUNCTION_INFO_V1(gs_planner_cont_final);
PG_FUNCTION_INFO_V1(gs_planner_cont_multi_final);
PG_FUNCTION_INFO_V1(gs_planner_cont_interval_final);
PG_FUNCTION_INFO_V1(gs_planner_cont_interval_multi_final);
PG_FUNCTION_INFO_V1(gs_planner_check_fraction);

/* GS_PLANNER_EXACT of the running aggregate, from its name (one lookup per OID) */
static int
gs_planner_flags(FunctionCallInfo fcinfo)
{
	static Oid	last_oid = InvalidOid;
	static int	last_flags = 0;
	Aggref	   *aggref = AggGetAggref(fcinfo);
	Oid			aggoid = gs_wrapped_agg_oid(fcinfo);	/* run by Citus (types.c) */
	char	   *name;

	if (aggref == NULL)
		elog(ERROR, "gpuselect planner aggregate called in non-aggregate context");
	if (!OidIsValid(aggoid))
		aggoid = aggref->aggfnoid;
	if (aggoid == last_oid)
		return last_flags;
	name = get_func_name(aggoid);
	if (name == NULL || strncmp(name, "gs_planner_", 11) != 0)
		elog(ERROR, "gpuselect: %u is not a planner aggregate", aggoid);
	last_flags = strncmp(name, "gs_planner_builtin_", 19) == 0 ? GS_PLANNER_EXACT : 0;
	last_oid = aggoid;
	return last_flags;
}

/*
 * a group's first row: its state, direction and fraction.  A comparison
 * type's values are ordered by the type's "<" (">" for DESC) under the
 * Aggref's input collation (planner.c sets it to the sort expression's),
 * the ordering the ordered-set form sorts in; the ordering travels with
 * partial states (datum_state.c's serial form) to the combining step.
 */
static GsState *
gs_planner_start(FunctionCallInfo fcinfo, bool descending)
{
	MemoryContext aggcontext;
	Aggref	   *aggref = AggGetAggref(fcinfo);
	GsFnCache  *c;
	GsState    *st;
	bool		wrapped;

	if (!AggCheckCallContext(fcinfo, &aggcontext) || aggref == NULL)
		elog(ERROR, "gpuselect planner aggregate called in non-aggregate context");
	c = gs_fn_cache(fcinfo, 1, NULL, false, false);
	if (descending && !c->descending)
	{
		/* once per query: this flinfo belongs to a _desc transition function */
		c->descending = true;
		if (c->type.kind == GS_T_DATUM)
			c->sortop = lookup_type_cache(c->type.typid, TYPECACHE_GT_OPR)->gt_opr;
	}
	st = gs_state_create_for(aggcontext, c);
	/*
	 * as plain_aggs.c: partial states are serialized, never selected on; a
	 * state Citus's worker_partial_agg serializes for another server
	 * (types.c) keeps its keys inline
	 */
	wrapped = OidIsValid(gs_wrapped_agg_oid(fcinfo));
	st->partial = wrapped || DO_AGGSPLIT_SERIALIZE(aggref->aggsplit);
	st->arena_ok = st->partial && !wrapped && fcinfo->context != NULL &&
		IsA(fcinfo->context, AggState) &&
		((AggState *) fcinfo->context)->aggstrategy == AGG_PLAIN;
	st->lease_ok = st->partial && !wrapped;
	st->have_fraction = true;
	st->fraction_null = PG_ARGISNULL(2);
	if (!st->partial)
		gs_final_batch_note(fcinfo, aggcontext, st);
	return st;
}

/*
 * (internal, anyelement, float8 or float8[]).  ASC and DESC have transition
 * functions of their own: PostgreSQL shares one transition state between
 * aggregates with the same transition function and arguments (e.g. a
 * percentile_disc and a percentile_cont over the same x and fraction), and
 * the direction is part of the state.
 */
static Datum
gs_planner_trans_common(FunctionCallInfo fcinfo, bool descending, bool multi)
{
	GsState    *st;

	if (unlikely(PG_ARGISNULL(0)))
	{
		st = gs_planner_start(fcinfo, descending);
		if (st->fraction_null)
			;
		else if (!multi)
			st->fraction = PG_GETARG_FLOAT8(2);
		else
		{
			ArrayType  *a = PG_GETARG_ARRAYTYPE_P(2);

			st->fractions = (ArrayType *) MemoryContextAlloc(st->mcxt, VARSIZE(a));
			memcpy(st->fractions, a, VARSIZE(a));
		}
	}
	else
		st = (GsState *) PG_GETARG_POINTER(0);
	if (!PG_ARGISNULL(1))
		gs_append_datum(st, (GsTypeKind) st->kind, PG_GETARG_DATUM(1));
	PG_RETURN_POINTER(st);
}

Datum
gs_planner_trans(PG_FUNCTION_ARGS)
{
	return gs_planner_trans_common(fcinfo, false, false);
}

Datum
gs_planner_trans_desc(PG_FUNCTION_ARGS)
{
	return gs_planner_trans_common(fcinfo, true, false);
}

Datum
gs_planner_trans_multi(PG_FUNCTION_ARGS)
{
	return gs_planner_trans_common(fcinfo, false, true);
}

Datum
gs_planner_trans_multi_desc(PG_FUNCTION_ARGS)
{
	return gs_planner_trans_common(fcinfo, true, true);
}

/* the selection of a final function, exact for a built-in's aggregate */
typedef enum GsPlannerFinal
{
	GS_PF_DISC,
	GS_PF_CONT,
	GS_PF_DISC_MULTI,
	GS_PF_CONT_MULTI,
	GS_PF_CONT_INTERVAL,
	GS_PF_CONT_INTERVAL_MULTI
} GsPlannerFinal;

static Datum
gs_planner_select(FunctionCallInfo fcinfo, GsPlannerFinal which, GsState *st,
				  const GsTypeInfo *t)
{
	bool		exact = (gs_planner_flags(fcinfo) & GS_PLANNER_EXACT) != 0;
	bool		saved = gs_dispatch_exact_only;
	Datum		result = (Datum) 0;

	gs_dispatch_exact_only = saved || exact;
	PG_TRY();
	{
		/*
		 * The key types: a hashed aggregation's groups are selected all at
		 * once at the first final call (final_batch.c), under the same rule.
		 */
		switch (which)
		{
			case GS_PF_DISC:
				gs_final_batch_run(st, GS_BATCH_DISC);
				result = gs_final_disc(st, st->fraction);
				break;
			case GS_PF_CONT:
				gs_final_batch_run(st, GS_BATCH_CONT);
				result = Float8GetDatum(gs_final_cont(st, st->fraction));
				break;
			case GS_PF_DISC_MULTI:
				gs_final_batch_run(st, GS_BATCH_DISC_MULTI);
				result = PointerGetDatum(gs_final_disc_multi(st, st->fractions, t));
				break;
			case GS_PF_CONT_MULTI:
				gs_final_batch_run(st, GS_BATCH_CONT_MULTI);
				result = PointerGetDatum(gs_final_cont_multi(st, st->fractions));
				break;
			case GS_PF_CONT_INTERVAL:
				result = gs_datum_final_cont_interval(st, st->fraction);
				break;
			case GS_PF_CONT_INTERVAL_MULTI:
				result = PointerGetDatum(gs_datum_final_cont_interval_multi(st, st->fractions));
				break;
		}
	}
	PG_FINALLY();
	{
		gs_dispatch_exact_only = saved;
	}
	PG_END_TRY();
	return result;
}

/* scalar: NULL fraction -> NULL; invalid -> ERROR; no values -> NULL */
static Datum
gs_planner_scalar_final(FunctionCallInfo fcinfo, GsPlannerFinal which)
{
	GsFnCache  *c = gs_fn_cache(fcinfo, 1, NULL, which == GS_PF_CONT, false);
	GsState    *st;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();		/* no rows: planner.c validated the fraction */
	st = (GsState *) PG_GETARG_POINTER(0);
	if (st->fraction_null)
		PG_RETURN_NULL();
	gs_check_fraction(st->fraction);
	if (st->nrows == 0)
		PG_RETURN_NULL();
	return gs_planner_select(fcinfo, which, st, &c->type);
}

/* array: no values -> NULL; NULL array -> NULL; elements checked by ranks.c */
static Datum
gs_planner_multi_final(FunctionCallInfo fcinfo, GsPlannerFinal which)
{
	GsFnCache  *c = gs_fn_cache(fcinfo, 1, NULL, which == GS_PF_CONT_MULTI, false);
	GsState    *st;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (GsState *) PG_GETARG_POINTER(0);
	if (st->nrows == 0 || st->fraction_null || st->fractions == NULL)
		PG_RETURN_NULL();
	return gs_planner_select(fcinfo, which, st, &c->type);
}

/* gs_planner_disc_final(internal, anyelement, float8) returns anyelement */
Datum
gs_planner_disc_final(PG_FUNCTION_ARGS)
{
	return gs_planner_scalar_final(fcinfo, GS_PF_DISC);
}

/* gs_planner_cont_final(internal, anyelement, float8) returns float8 */
Datum
gs_planner_cont_final(PG_FUNCTION_ARGS)
{
	return gs_planner_scalar_final(fcinfo, GS_PF_CONT);
}

/* gs_planner_disc_multi_final(internal, anyelement, float8[]) returns anyarray */
Datum
gs_planner_disc_multi_final(PG_FUNCTION_ARGS)
{
	return gs_planner_multi_final(fcinfo, GS_PF_DISC_MULTI);
}

/* gs_planner_cont_multi_final(internal, anyelement, float8[]) returns float8[] */
Datum
gs_planner_cont_multi_final(PG_FUNCTION_ARGS)
{
	return gs_planner_multi_final(fcinfo, GS_PF_CONT_MULTI);
}

/* gs_planner_cont_interval_final(internal, interval, float8) returns interval */
Datum
gs_planner_cont_interval_final(PG_FUNCTION_ARGS)
{
	return gs_planner_scalar_final(fcinfo, GS_PF_CONT_INTERVAL);
}

/* gs_planner_cont_interval_multi_final(internal, interval, float8[]) returns interval[] */
Datum
gs_planner_cont_interval_multi_final(PG_FUNCTION_ARGS)
{
	return gs_planner_multi_final(fcinfo, GS_PF_CONT_INTERVAL_MULTI);
}

/*
 * gs_planner_check_fraction(result anyelement, p float8) returns anyelement,
 * not strict: the ordered-set final function's fraction check, done above
 * the aggregate so that it also runs for a group with no rows.
 */
Datum
gs_planner_check_fraction(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	gs_check_fraction(PG_GETARG_FLOAT8(1));
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(PG_GETARG_DATUM(0));
}
