/*
 * ranks.h — PostgreSQL 15's rank rules (src/backend/utils/adt/orderedsetaggs.c),
 * computed in C double exactly as PostgreSQL computes them.
 *
 *   percentile_disc:  rownum = (int64) ceil(p * N); 0-based rank = max(rownum, 1) - 1
 *   percentile_cont:  first = floor(p * (N - 1)), second = ceil(p * (N - 1)),
 *                     proportion = p * (N - 1) - floor(p * (N - 1)),
 *                     value = lo + proportion * (hi - lo)       (float8_lerp)
 * Ranks here are positions in the aggregate's own ORDER BY order; for DESC the
 * engine rank (ascending) is N - 1 - rank.
 */
#ifndef GS_RANKS_H
#define GS_RANKS_H

#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/array.h"

#include "state/state.h"
#include "base/types.h"

/* PostgreSQL's range test of a fraction: 0 <= p <= 1, not NaN */
static inline bool
gs_fraction_in_range(float8 p)
{
	return !(p < 0 || p > 1 || isnan(p));
}

/* ERROR 22003 "percentile value %g is not between 0 and 1" unless in range */
extern void gs_check_fraction(float8 p);
/*
 * An ordered-set final function's arguments (state, fraction), checked in
 * percentile_disc/cont's order: a NULL fraction answers NULL, a fraction out
 * of range raises 22003 even for a group without rows, then a group without
 * rows answers NULL.  The group's state, or NULL when the answer is NULL;
 * *p the fraction.
 */
extern GsState *gs_final_scalar_args(FunctionCallInfo fcinfo, float8 *p);
/* a fraction array's elements, each non-NULL one checked in order; the count */
extern int	gs_fraction_array(ArrayType *param, Datum **fr, bool **frnull);

extern int64 gs_disc_rank(float8 p, int64 n);

typedef struct GsContRows
{
	int64		first;			/* 0-based */
	int64		second;			/* first or first + 1 */
	float8		proportion;
} GsContRows;

extern void gs_cont_rows(float8 p, int64 n, GsContRows *out);

/* PostgreSQL's float8_lerp */
static inline float8
gs_lerp(float8 lo, float8 hi, float8 pct)
{
	return lo + (pct * (hi - lo));
}

/* percentile_cont's interval_lerp: lo + pct * (hi - lo) with the interval
 * functions (datum_final.c) */
extern Datum gs_interval_lerp(Datum lo, Datum hi, float8 pct);

/* a rank in the aggregate's order -> the engine's (ascending) rank */
static inline uint64
gs_engine_rank(int64 r, int64 n, bool descending)
{
	return (uint64) (descending ? n - 1 - r : r);
}

/* percentile_disc(p) of st as the engine's rank */
static inline uint64
gs_disc_engine_rank(const GsState *st, float8 p)
{
	return gs_engine_rank(gs_disc_rank(p, st->nrows), st->nrows, st->descending);
}

/* percentile_cont(p) of st: its rows (*cr) and both as the engine's ranks */
static inline void
gs_cont_engine_ranks(const GsState *st, float8 p, GsContRows *cr, uint64 ranks[2])
{
	gs_cont_rows(p, st->nrows, cr);
	ranks[0] = gs_engine_rank(cr->first, st->nrows, st->descending);
	ranks[1] = gs_engine_rank(cr->second, st->nrows, st->descending);
}

#endif							/* GS_RANKS_H */

/*
 * Final-function bodies shared by the ordered-set and plain aggregates
 * (final.c; the rest of this header is ranks.c's, but gs_interval_lerp).  The
 * caller has done PostgreSQL's NULL / range / no-rows checks in PostgreSQL's
 * order (st->nrows > 0 here, except for the array forms, which validate the
 * array themselves, as setup_pct_info does).  Ranks are in st's ORDER BY
 * direction (st->descending).
 */
extern Datum gs_final_disc(GsState *st, float8 p);
extern float8 gs_final_cont(GsState *st, float8 p);
/*
 * percentile_disc(float8[]) / percentile_cont(float8[]): param not NULL.
 * disc's elements are of type t->elemtypid (a domain stays a domain, as
 * percentile_disc_multi_final builds its result from the sort column's
 * type), so the result concatenates and compares with the built-in's.
 */
extern ArrayType *gs_final_disc_multi(GsState *st, ArrayType *param, const GsTypeInfo *t);
extern ArrayType *gs_final_cont_multi(GsState *st, ArrayType *param);

/*
 * The arithmetic of those bodies (ranks.c), for values held elsewhere (the window
 * aggregates' order-statistic trees, moving_aggs.c), so that both give the
 * same answers bit for bit.  gs_cont_from_keys: percentile_cont's value from
 * the keys at cr's rows (keys[1] read only when cr->second > cr->first).
 * gs_disc_multi_by: percentile_disc(float8[]) over n values (n > 0) whose
 * keys select() returns for engine ranks (ascending; descending: the
 * aggregate's ORDER BY x DESC).
 */
extern float8 gs_cont_from_keys(GsTypeKind kind, const GsContRows *cr, const uint64 keys[2]);
typedef void (*GsSelectKeysFn) (void *arg, const uint64 *ranks, int nranks, uint64 *keys);
extern ArrayType *gs_disc_multi_by(ArrayType *param, const GsTypeInfo *t, GsTypeKind kind,
								   int64 n, bool descending, GsSelectKeysFn select, void *arg);
