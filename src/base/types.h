/*
 * types.h — the SQL types gpuselect supports, value <-> key mapping, and
 * ORDER BY direction.  What the aggregate support functions cache of it per
 * query is aggs/fn_cache.h.
 */
#ifndef GS_TYPES_H
#define GS_TYPES_H

#include "postgres.h"
#include "fmgr.h"
#include "nodes/primnodes.h"

#include "gs_keys.h"

typedef enum GsTypeKind
{
	GS_T_INT2 = 0,
	GS_T_INT4,
	GS_T_INT8,
	GS_T_FLOAT4,
	GS_T_FLOAT8,
	GS_T_DATE,
	GS_T_TIMESTAMP,
	GS_T_TIMESTAMPTZ,
	GS_T_DATUM					/* any other type with a btree ordering: the
								 * values themselves, selected by comparison
								 * (datum_state.h); CPU only */
} GsTypeKind;

/* the list named when an aggregate that interpolates gets another type */
#define GS_NUMERIC_TYPES	"smallint, integer, bigint, real, double precision"

typedef struct GsTypeInfo
{
	Oid			typid;			/* base type */
	Oid			elemtypid;		/* the type as given, a domain if it is one: the
								 * element type of array results, as the
								 * built-ins use the sort column's type */
	GsTypeKind	kind;
	uint8		key_bytes;
	bool		numeric;		/* usable by percentile_cont / gpu_median */
	int16		typlen;
	bool		typbyval;
	char		typalign;
} GsTypeInfo;

/*
 * Is a base type supported, and how: kind, key width and numeric-ness
 * (usable by percentile_cont's float8 forms).  The eight key types get their
 * kind; every other type with a default btree ordering is GS_T_DATUM (key
 * width 0, not numeric); false for types without one.
 */
extern bool gs_type_kind_from_oid(Oid typid, GsTypeKind *kind, uint8 *key_bytes, bool *numeric);

/*
 * The gpuselect aggregate a generic wrapper aggregate runs this support
 * function for (Citus's worker_partial_agg / coord_combine_agg), or
 * InvalidOid when PostgreSQL's Agg node calls it itself (types.c says how
 * it is recognised).
 */
extern Oid	gs_wrapped_agg_oid(FunctionCallInfo fcinfo);

/*
 * The aggregate's argument expression argno (0-based) as this call's
 * Aggref -- or, wrapped, the wrapper's -- carries it; NULL when not known.
 */
extern Expr *gs_agg_arg_expr(FunctionCallInfo fcinfo, int argno);

/*
 * The type of argument `argno` of the current call (wrapped: the wrapped
 * aggregate's declared type), checked: unsupported
 * types (or non-numeric ones when numeric_only) raise ERROR naming `aggname`,
 * the type and the supported list.
 */
extern void gs_type_resolve(FunctionCallInfo fcinfo, int argno, const char *aggname,
							bool numeric_only, GsTypeInfo *out);

/*
 * Ordered-set forms: is the ORDER BY the type's default ordering (then
 * *descending says ASC or DESC), or another btree ordering (USING op)?
 */
extern bool gs_sort_is_default(FunctionCallInfo fcinfo, const GsTypeInfo *t,
							   const char *aggname, bool *descending);

/*
 * The planner rewrite's ONE question about a type (planner.c): may an
 * ordered-set percentile over a value of type typid (collation collid),
 * ordered by sortop, be computed by gpuselect's plain aggregates with the
 * same order?  cont: for percentile_cont (an interpolating type).  On true,
 * *descending tells whether sortop is the type's default descending order.
 * A type gpuselect learns to aggregate (or a collation it learns to order
 * by) is added here, and the rewrite follows.
 */
extern bool gs_type_plan_rewritable(Oid typid, Oid collid, Oid sortop, bool cont,
									bool *descending);

/*
 * A non-NULL value of one of the eight key kinds -> its key (gs_keys.h):
 * the mapping every path that meets values one at a time shares (moving
 * aggregates, the Citus keys, the shipped column's missing value).
 * Inline: the moving aggregates call it for every row.  GS_T_DATUM has no
 * key: an ERROR (its callers never pass it).
 */
static inline uint64
gs_key_from_datum(GsTypeKind kind, Datum d)
{
	switch (kind)
	{
		case GS_T_INT2:
			return gs_key_from_int16(DatumGetInt16(d));
		case GS_T_INT4:
		case GS_T_DATE:
			return gs_key_from_int32(DatumGetInt32(d));
		case GS_T_INT8:
		case GS_T_TIMESTAMP:
		case GS_T_TIMESTAMPTZ:
			return gs_key_from_int64(DatumGetInt64(d));
		case GS_T_FLOAT4:
			return gs_key_from_float4(DatumGetFloat4(d));
		case GS_T_FLOAT8:
			return gs_key_from_float8(DatumGetFloat8(d));
		case GS_T_DATUM:
			break;
	}
	elog(ERROR, "gpuselect: no key for a value of this type");
	return 0;
}

/* Selected key -> the stored Datum, and -> float8 (numeric kinds only). */
extern Datum gs_key_to_datum(GsTypeKind kind, uint64 key);
extern float8 gs_key_to_float8(GsTypeKind kind, uint64 key);

/* A value of int2, int4, int8, date, timestamp or timestamptz as an int64
 * in the type's order (its point), and back: the bulk scan's ranges, the
 * Citus shard scans' groups. */
extern bool gs_int_point_type(Oid typid);
extern int64 gs_int_point(Oid typid, Datum d);
extern Datum gs_int_point_datum(Oid typid, int64 x);

#endif							/* GS_TYPES_H */
