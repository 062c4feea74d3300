/*
 * fn_cache.h — the per-query information the aggregate support functions
 * cache in fn_extra (type, ORDER BY direction, a comparison type's
 * ordering), so nothing is looked up per row, and the per-row append by
 * type kind.  Types themselves are base/types.h; states are state/.
 */
#ifndef GS_FN_CACHE_H
#define GS_FN_CACHE_H

#include "postgres.h"
#include "fmgr.h"

#include "base/types.h"
#include "state/datum_state.h"
#include "state/state.h"

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

/* Common per-query setup; `ordered` also detects the ORDER BY direction;
 * aggname NULL: the name of the aggregate being run. */
extern GsFnCache *gs_fn_cache(FunctionCallInfo fcinfo, int argno, const char *aggname,
							  bool numeric_only, bool ordered);

/* a new state for the cached type and ordering (first call of a group) */
extern GsState *gs_state_create_for(MemoryContext mcxt, const GsFnCache *c);

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

#endif							/* GS_FN_CACHE_H */
