/*
 * types.c — supported types, key <-> value mapping, ORDER BY direction.
 */
#include "postgres.h"

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

void
gs_type_resolve(FunctionCallInfo fcinfo, int argno, const char *aggname,
				bool numeric_only, GsTypeInfo *out)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, argno);
	Oid			base;

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
