/*
 * types.h — the SQL types gpuselect supports, value <-> key mapping, and the
 * per-query information the aggregate support functions cache in fn_extra
 * (type, ORDER BY direction), so nothing is looked up per row.
 */
#ifndef GS_TYPES_H
#define GS_TYPES_H

#include "postgres.h"
#include "fmgr.h"

#include "gs_keys.h"
#include "state/state.h"
#include "state/datum_state.h"

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
 * Per-query cache of an aggregate support function (flinfo->fn_extra):
 * filled on the first call, read on every later one.
 */
typedef struct GsFnCache
{
	GsTypeInfo	type;
	bool		descending;		/* ordered-set ORDER BY x DESC */
	bool		arg_stable;		/* plain aggs: the fraction argument is a constant */
	/* GS_T_DATUM: the ordering operator (DESC and USING included) and collation */
	Oid			sortop;
	Oid			collation;
} GsFnCache;

/*
 * Is a base type supported, and how: kind, key width and numeric-ness
 * (usable by percentile_cont's float8 forms).  The eight key types get their
 * kind; every other type with a default btree ordering is GS_T_DATUM (key
 * width 0, not numeric); false for types without one.
 */
extern bool gs_type_kind_from_oid(Oid typid, GsTypeKind *kind, uint8 *key_bytes, bool *numeric);

/*
 * The type of argument `argno` of the current call, checked: unsupported
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

/* Common per-query setup; `ordered` also detects the ORDER BY direction;
 * aggname NULL: the name of the aggregate being run. */
extern GsFnCache *gs_fn_cache(FunctionCallInfo fcinfo, int argno, const char *aggname,
							  bool numeric_only, bool ordered);

/* a new state for the cached type and ordering (first call of a group) */
extern GsState *gs_state_create_for(MemoryContext mcxt, const GsFnCache *c);

/* Selected key -> the stored Datum, and -> float8 (numeric kinds only). */
extern Datum gs_key_to_datum(GsTypeKind kind, uint64 key);
extern float8 gs_key_to_float8(GsTypeKind kind, uint64 key);

/* Hot path: append a non-NULL value (kind fixed per state; one switch). */
static inline void
gs_append_datum(GsState *st, GsTypeKind kind, Datum d)
{
	switch (kind)
	{
		case GS_T_INT2:
			gs_state_append16(st, gs_key_from_int16(DatumGetInt16(d)));
			break;
		case GS_T_INT4:
		case GS_T_DATE:
			gs_state_append32(st, gs_key_from_int32(DatumGetInt32(d)));
			break;
		case GS_T_INT8:
		case GS_T_TIMESTAMP:
		case GS_T_TIMESTAMPTZ:
			gs_state_append64(st, gs_key_from_int64(DatumGetInt64(d)));
			break;
		case GS_T_FLOAT4:
			gs_state_append32(st, gs_key_from_float4(DatumGetFloat4(d)));
			break;
		case GS_T_FLOAT8:
			gs_state_append64(st, gs_key_from_float8(DatumGetFloat8(d)));
			break;
		case GS_T_DATUM:
			gs_datum_append(st, d);
			break;
	}
}

#endif							/* GS_TYPES_H */
