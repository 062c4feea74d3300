/*
 * types.c — supported types, key <-> value mapping, ORDER BY direction.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "nodes/parsenodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "base/types.h"

/* kind for a base type OID; false when unsupported */
bool
gs_type_kind_from_oid(Oid typid, GsTypeKind *kind, uint8 *key_bytes, bool *numeric)
{
	GsTypeKind	k;
	uint8		kb;
	bool		num = true;

	switch (typid)
	{
		case INT2OID:
			k = GS_T_INT2;
			kb = 2;
			break;
		case INT4OID:
			k = GS_T_INT4;
			kb = 4;
			break;
		case INT8OID:
			k = GS_T_INT8;
			kb = 8;
			break;
		case FLOAT4OID:
			k = GS_T_FLOAT4;
			kb = 4;
			break;
		case FLOAT8OID:
			k = GS_T_FLOAT8;
			kb = 8;
			break;
		case DATEOID:
			k = GS_T_DATE;
			kb = 4;
			num = false;
			break;
		case TIMESTAMPOID:
			k = GS_T_TIMESTAMP;
			kb = 8;
			num = false;
			break;
		case TIMESTAMPTZOID:
			k = GS_T_TIMESTAMPTZ;
			kb = 8;
			num = false;
			break;
		default:
			/* any other type sortable by its default btree opclass: by comparison */
			if (!OidIsValid(lookup_type_cache(typid, TYPECACHE_LT_OPR)->lt_opr))
				return false;
			k = GS_T_DATUM;
			kb = 0;
			num = false;
			break;
	}
	if (kind)
		*kind = k;
	if (key_bytes)
		*key_bytes = kb;
	if (numeric)
		*numeric = num;
	return true;
}

/*
 * Citus runs an aggregate that has a combine function across nodes through
 * aggregates of its own (citus's aggregate_utils.c): worker_partial_agg(agg,
 * x) or worker_partial_agg(agg, ROW(x, p)) on every shard, which calls our
 * transition function and serializes the state; coord_combine_agg(agg,
 * state, NULL::result) on the coordinator, which deserializes, combines
 * and calls our final function.  Each call goes through a fresh FmgrInfo:
 * no expression (PostgreSQL's Agg node always sets one for the support
 * functions it calls) and no fn_extra kept from one row to the next.
 * AggGetAggref gives the wrapper's Aggref, whose first argument is a
 * constant naming the aggregate it runs.  Citus checks that the
 * aggregate's declared argument types are the actual ones, so only
 * aggregates with concrete argument types get this far (the planner's
 * typed twins, planner.c); their declared types are the call's.
 */
Oid
gs_wrapped_agg_oid(FunctionCallInfo fcinfo)
{
	Aggref	   *aggref;
	Const	   *k;
	HeapTuple	tup;
	Form_pg_aggregate agg;
	Oid			aggoid,
				fn;
	bool		ours;

	if (fcinfo->flinfo == NULL || fcinfo->flinfo->fn_expr != NULL)
		return InvalidOid;
	aggref = AggGetAggref(fcinfo);
	if (aggref == NULL || aggref->args == NIL)
		return InvalidOid;
	k = (Const *) linitial_node(TargetEntry, aggref->args)->expr;
	if (!IsA(k, Const) || k->constisnull ||
		(k->consttype != OIDOID && k->consttype != REGPROCEDUREOID))
		return InvalidOid;
	aggoid = DatumGetObjectId(k->constvalue);
	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggoid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	/* the function running must be one of that aggregate's */
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	fn = fcinfo->flinfo->fn_oid;
	ours = fn == agg->aggtransfn || fn == agg->aggfinalfn || fn == agg->aggcombinefn ||
		fn == agg->aggserialfn || fn == agg->aggdeserialfn;
	ReleaseSysCache(tup);
	return ours ? aggoid : InvalidOid;
}

Expr *
gs_agg_arg_expr(FunctionCallInfo fcinfo, int argno)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	Expr	   *e;

	if (aggref == NULL)
		return NULL;
	if (!OidIsValid(gs_wrapped_agg_oid(fcinfo)))
		return list_length(aggref->args) > argno ?
			list_nth_node(TargetEntry, aggref->args, argno)->expr : NULL;
	/* worker_partial_agg(agg, x) or (agg, ROW(x, p, ...)); the coordinator's
	 * coord_combine_agg(agg, state, NULL) has no argument of ours */
	if (list_length(aggref->args) != 2)
		return NULL;
	e = lsecond_node(TargetEntry, aggref->args)->expr;
	if (IsA(e, RowExpr))
		return list_length(((RowExpr *) e)->args) > argno ?
			(Expr *) list_nth(((RowExpr *) e)->args, argno) : NULL;
	return argno == 0 ? e : NULL;
}

/* the wrapped aggregate's declared type of its argument argno - 1 (argno
 * counts the support function's state argument), or InvalidOid */
static Oid
gs_wrapped_argtype(FunctionCallInfo fcinfo, int argno)
{
	Oid			aggoid = gs_wrapped_agg_oid(fcinfo);
	Oid		   *argtypes;
	int			nargs;

	if (!OidIsValid(aggoid) || argno < 1)
		return InvalidOid;
	get_func_signature(aggoid, &argtypes, &nargs);
	if (argno - 1 >= nargs || IsPolymorphicType(argtypes[argno - 1]))
		return InvalidOid;
	return argtypes[argno - 1];
}

void
gs_type_resolve(FunctionCallInfo fcinfo, int argno, const char *aggname,
				bool numeric_only, GsTypeInfo *out)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, argno);
	Oid			base;

	if (!OidIsValid(argtype))
		argtype = gs_wrapped_argtype(fcinfo, argno);

	if (!OidIsValid(argtype))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: could not determine the type of the aggregated value", aggname)));

	base = getBaseType(argtype);
	memset(out, 0, sizeof(*out));
	if (!gs_type_kind_from_oid(base, &out->kind, &out->key_bytes, &out->numeric) && !numeric_only)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an ordering operator for type %s",
						format_type_be(argtype)),
				 errhint("Use an explicit ordering operator or modify the query.")));
	if (numeric_only && !out->numeric)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s does not support type %s", aggname, format_type_be(argtype)),
				 errhint("Supported types: %s.", GS_NUMERIC_TYPES)));
	out->typid = base;
	out->elemtypid = argtype;
	get_typlenbyvalalign(base, &out->typlen, &out->typbyval, &out->typalign);
}

bool
gs_sort_is_default(FunctionCallInfo fcinfo, const GsTypeInfo *t, const char *aggname,
				   bool *descending)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	SortGroupClause *sortcl;
	TypeCacheEntry *tce;

	if (aggref == NULL)
		elog(ERROR, "%s called in non-aggregate context", aggname);
	if (list_length(aggref->aggorder) != 1)
		elog(ERROR, "%s: expected exactly one ORDER BY column", aggname);
	sortcl = (SortGroupClause *) linitial(aggref->aggorder);

	tce = lookup_type_cache(t->typid, TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
	*descending = false;
	if (OidIsValid(sortcl->sortop) && sortcl->sortop == tce->lt_opr)
		return true;
	if (OidIsValid(sortcl->sortop) && sortcl->sortop == tce->gt_opr)
	{
		*descending = true;
		return true;
	}
	return false;
}

bool
gs_type_plan_rewritable(Oid typid, Oid collid, Oid sortop, bool cont, bool *descending)
{
	Oid			base = getBaseType(typid);
	bool		numeric;
	TypeCacheEntry *tce;
	GsTypeKind	kind;

	if (!gs_type_kind_from_oid(base, &kind, NULL, &numeric))
		return false;
	/*
	 * percentile_cont interpolates: float8 (the key types through the
	 * built-in's implicit casts) and interval (datum_final.c).
	 */
	if (cont && !numeric && base != INTERVALOID)
		return false;
	/*
	 * A collatable type is ordered by the Aggref's input collation, which
	 * the rewrite sets to the sort expression's (planner.c) and the planner
	 * aggregates hand to the value store (planner_aggs.c); a collatable
	 * value without one could not be compared, so it stays as it is.
	 */
	if (type_is_collatable(base) && !OidIsValid(collid))
		return false;
	/*
	 * The type's default ordering, ASC ("<") or DESC (">"), as
	 * gs_sort_is_default tests it; USING another operator class stays an
	 * ordered-set aggregate (it is answered by comparison in that ordering).
	 */
	tce = lookup_type_cache(base, TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
	if (!OidIsValid(sortop))
		return false;
	if (sortop == tce->lt_opr)
		*descending = false;
	else if (sortop == tce->gt_opr)
		*descending = true;
	else
		return false;
	return true;
}


Datum
gs_key_to_datum(GsTypeKind kind, uint64 key)
{
	switch (kind)
	{
		case GS_T_INT2:
			return Int16GetDatum(gs_int16_from_key((uint16) key));
		case GS_T_INT4:
			return Int32GetDatum(gs_int32_from_key((uint32) key));
		case GS_T_DATE:
			return DateADTGetDatum(gs_int32_from_key((uint32) key));
		case GS_T_INT8:
			return Int64GetDatum(gs_int64_from_key(key));
		case GS_T_TIMESTAMP:
			return TimestampGetDatum(gs_int64_from_key(key));
		case GS_T_TIMESTAMPTZ:
			return TimestampTzGetDatum(gs_int64_from_key(key));
		case GS_T_FLOAT4:
			return Float4GetDatum(gs_float4_from_key((uint32) key));
		case GS_T_FLOAT8:
			return Float8GetDatum(gs_float8_from_key(key));
		case GS_T_DATUM:
			break;				/* no keys: datum_final.c */
	}
	elog(ERROR, "gpuselect: unknown type kind %d", (int) kind);
	return (Datum) 0;
}

float8
gs_key_to_float8(GsTypeKind kind, uint64 key)
{
	switch (kind)
	{
		case GS_T_INT2:
			return (float8) gs_int16_from_key((uint16) key);
		case GS_T_INT4:
			return (float8) gs_int32_from_key((uint32) key);
		case GS_T_INT8:
			return (float8) gs_int64_from_key(key);
		case GS_T_FLOAT4:
			return (float8) gs_float4_from_key((uint32) key);
		case GS_T_FLOAT8:
			return gs_float8_from_key(key);
		default:
			break;
	}
	elog(ERROR, "gpuselect: type kind %d is not numeric", (int) kind);
	return 0;
}

bool
gs_int_point_type(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID || typid == DATEOID ||
		typid == TIMESTAMPOID || typid == TIMESTAMPTZOID;
}

int64
gs_int_point(Oid typid, Datum d)
{
	switch (typid)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
		case DATEOID:
			return DatumGetInt32(d);
		default:				/* int8, timestamp, timestamptz */
			return DatumGetInt64(d);
	}
}

Datum
gs_int_point_datum(Oid typid, int64 x)
{
	switch (typid)
	{
		case INT2OID:
			return Int16GetDatum((int16) x);
		case INT4OID:
		case DATEOID:
			return Int32GetDatum((int32) x);
		default:
			return Int64GetDatum(x);
	}
}
