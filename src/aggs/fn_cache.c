/*
 * fn_cache.c — the per-query cache of an aggregate support function
 * (fn_cache.h): the argument's type and ordering, resolved on the first
 * call from the call's Aggref, and a new state for them.
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "aggs/fn_cache.h"

/*
 * The ordering a GS_T_DATUM state is selected in.  Ordered-set forms: the
 * ORDER BY clause's operator (so DESC and USING are the operator's business)
 * and the sort expression's collation, as orderedsetaggs.c takes them.  Plain
 * aggregates: the type's default btree "<" and the call's collation.
 */
static void
gs_datum_ordering(FunctionCallInfo fcinfo, const GsTypeInfo *t, bool ordered,
				  const char *aggname, Oid *sortop, Oid *collation)
{
	if (ordered)
	{
		Aggref	   *aggref = AggGetAggref(fcinfo);
		SortGroupClause *sortcl;
		TargetEntry *tle;

		if (aggref == NULL)
			elog(ERROR, "%s called in non-aggregate context", aggname);
		if (list_length(aggref->aggorder) != 1)
			elog(ERROR, "%s: expected exactly one ORDER BY column", aggname);
		sortcl = linitial_node(SortGroupClause, aggref->aggorder);
		tle = get_sortgroupclause_tle(sortcl, aggref->args);
		*sortop = sortcl->sortop;
		*collation = exprCollation((Node *) tle->expr);
	}
	else
	{
		*sortop = lookup_type_cache(t->typid, TYPECACHE_LT_OPR)->lt_opr;
		*collation = PG_GET_COLLATION();
	}
}

GsState *
gs_state_create_for(MemoryContext mcxt, const GsFnCache *c)
{
	GsState    *st = gs_state_create(mcxt, c->type.typid);

	st->descending = c->descending;
	if (c->type.kind == GS_T_DATUM && st->kind != GS_T_DATUM)
	{
		/* a key type in a non-default ordering: its values, by comparison */
		st->kind = GS_T_DATUM;
		st->key_bytes = 0;
		gs_datum_store_init(st);
	}
	if (st->kind == GS_T_DATUM)
		gs_datum_set_order(st, c->sortop, c->collation);
	return st;
}

GsFnCache *
gs_fn_cache(FunctionCallInfo fcinfo, int argno, const char *aggname,
			bool numeric_only, bool ordered)
{
	GsFnCache  *c = (GsFnCache *) fcinfo->flinfo->fn_extra;

	if (c == NULL)
	{
		GsTypeInfo	t;
		bool		desc = false;

		if (aggname == NULL)
		{
			Aggref	   *aggref = AggGetAggref(fcinfo);
			Oid			wrapped = gs_wrapped_agg_oid(fcinfo);
			char	   *fname = OidIsValid(wrapped) ? get_func_name(wrapped) :
				aggref ? get_func_name(aggref->aggfnoid) : NULL;

			aggname = fname ? fname : "gpuselect";
		}
		gs_type_resolve(fcinfo, argno, aggname, numeric_only, &t);
		/* another btree ordering of a key type (ORDER BY x USING op): by comparison */
		if (ordered && t.kind != GS_T_DATUM && !gs_sort_is_default(fcinfo, &t, aggname, &desc))
		{
			t.kind = GS_T_DATUM;
			t.key_bytes = 0;
			t.numeric = false;
		}
		c = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(GsFnCache));
		c->type = t;
		c->descending = desc;
		if (t.kind == GS_T_DATUM)
			gs_datum_ordering(fcinfo, &t, ordered, aggname, &c->sortop, &c->collation);
		fcinfo->flinfo->fn_extra = c;
	}
	return c;
}
