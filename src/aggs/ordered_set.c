/*
 * ordered_set.c — gpu_percentile_disc / gpu_percentile_cont, ordered-set
 * aggregates that are drop-in replacements for the built-ins.
 *
 * All four share ONE transition function (gs_os_trans(internal, anyelement)),
 * as the built-ins share ordered_set_transition: PostgreSQL then keeps a
 * single state for e.g. gpu_percentile_disc(0.5) and gpu_percentile_cont(0.5)
 * over the same x in one query, and runs both (SHAREABLE) final functions on
 * it.  Final functions never modify the state.
 *
 * Checks follow PostgreSQL 15's orderedsetaggs.c in its order:
 *   single fraction: NULL -> NULL; out of [0,1] or NaN -> ERROR; no rows -> NULL
 *   fraction array:  no rows -> NULL; NULL array -> NULL; empty -> empty;
 *                    each element validated; NULL element -> NULL element
 * An unsupported type is an ERROR before any of these (also with no rows).
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"

#include "aggs/ranks.h"
#include "state/state.h"
#include "base/types.h"
#include "aggs/fn_cache.h"

PG_FUNCTION_INFO_V1(gs_os_trans);
PG_FUNCTION_INFO_V1(gs_pct_disc_final);
PG_FUNCTION_INFO_V1(gs_pct_disc_multi_final);
PG_FUNCTION_INFO_V1(gs_pct_cont_final);
PG_FUNCTION_INFO_V1(gs_pct_cont_multi_final);

/* gs_os_trans(internal, anyelement) */
Datum
gs_os_trans(PG_FUNCTION_ARGS)
{
	GsState    *st;

	if (unlikely(PG_ARGISNULL(0)))
	{
		MemoryContext aggcontext;
		GsFnCache  *c;

		if (AggCheckCallContext(fcinfo, &aggcontext) != AGG_CONTEXT_AGGREGATE)
			elog(ERROR, "ordered-set aggregate called in non-aggregate context");
		c = gs_fn_cache(fcinfo, 1, NULL, false, true);
		st = gs_state_create_for(aggcontext, c);
	}
	else
		st = (GsState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
		gs_append_datum(st, (GsTypeKind) st->kind, PG_GETARG_DATUM(1));

	PG_RETURN_POINTER(st);
}

/* x is argument 2 of every final function: (internal, fraction(s), anyelement) */
static GsFnCache *
gs_os_final_setup(FunctionCallInfo fcinfo, bool numeric_only)
{
	Assert(AggCheckCallContext(fcinfo, NULL) == AGG_CONTEXT_AGGREGATE);
	return gs_fn_cache(fcinfo, 2, NULL, numeric_only, true);
}

/* gs_pct_disc_final(internal, float8, anyelement) returns anyelement */
Datum
gs_pct_disc_final(PG_FUNCTION_ARGS)
{
	GsState    *st;
	float8		p;

	gs_os_final_setup(fcinfo, false);
	st = gs_final_scalar_args(fcinfo, &p);
	if (st == NULL)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(gs_final_disc(st, p));
}

/* gs_pct_cont_final(internal, float8, anyelement) returns float8 */
Datum
gs_pct_cont_final(PG_FUNCTION_ARGS)
{
	GsState    *st;
	float8		p;

	gs_os_final_setup(fcinfo, true);
	st = gs_final_scalar_args(fcinfo, &p);
	if (st == NULL)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(gs_final_cont(st, p));
}

/* gs_pct_disc_multi_final(internal, float8[], anyelement) returns anyarray */
Datum
gs_pct_disc_multi_final(PG_FUNCTION_ARGS)
{
	GsFnCache  *c = gs_os_final_setup(fcinfo, false);
	GsState    *st;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (GsState *) PG_GETARG_POINTER(0);
	if (st->nrows == 0)
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();

	PG_RETURN_ARRAYTYPE_P(gs_final_disc_multi(st, PG_GETARG_ARRAYTYPE_P(1), &c->type));
}

/* gs_pct_cont_multi_final(internal, float8[], anyelement) returns float8[] */
Datum
gs_pct_cont_multi_final(PG_FUNCTION_ARGS)
{
	GsState    *st;

	gs_os_final_setup(fcinfo, true);

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (GsState *) PG_GETARG_POINTER(0);
	if (st->nrows == 0)
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();

	PG_RETURN_ARRAYTYPE_P(gs_final_cont_multi(st, PG_GETARG_ARRAYTYPE_P(1)));
}
