/*
 * ranks.c — fraction validation and rank arithmetic, as PostgreSQL 15 does
 * it, and the arithmetic of the finals over keys however they were
 * selected (gs_cont_from_keys, gs_disc_multi_by).  Nothing here selects:
 * the final-function bodies that run a state's selection are final.c's,
 * the comparison types' datum_final.c's; both build on this file, which
 * calls neither.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "aggs/ranks.h"

void
gs_check_fraction(float8 p)
{
	if (!gs_fraction_in_range(p))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("percentile value %g is not between 0 and 1", p)));
}

GsState *
gs_final_scalar_args(FunctionCallInfo fcinfo, float8 *p)
{
	GsState    *st;

	if (PG_ARGISNULL(1))
		return NULL;
	*p = PG_GETARG_FLOAT8(1);
	gs_check_fraction(*p);
	if (PG_ARGISNULL(0))
		return NULL;
	st = (GsState *) PG_GETARG_POINTER(0);
	return st->nrows > 0 ? st : NULL;
}

int64
gs_disc_rank(float8 p, int64 n)
{
	int64		rownum = (int64) ceil(p * n);

	rownum = Max(1, rownum);
	if (rownum > n)				/* cannot happen for 0 <= p <= 1 */
		rownum = n;
	return rownum - 1;
}

void
gs_cont_rows(float8 p, int64 n, GsContRows *out)
{
	/* same expressions as percentile_cont_final_common / setup_pct_info */
	out->first = floor(p * (n - 1));
	out->second = ceil(p * (n - 1));
	out->proportion = (p * (n - 1)) - floor(p * (n - 1));
}

/* percentile_cont's value from the keys at cr's rows (ranks.h) */
float8
gs_cont_from_keys(GsTypeKind kind, const GsContRows *cr, const uint64 keys[2])
{
	float8		lo = gs_key_to_float8(kind, keys[0]);

	if (cr->second == cr->first)
		return lo;
	return gs_lerp(lo, gs_key_to_float8(kind, keys[1]), cr->proportion);
}

/* Deconstruct a fraction array and validate every non-NULL element, in
 * order, as setup_pct_info() does; returns the number of elements. */
int
gs_fraction_array(ArrayType *param, Datum **fr, bool **frnull)
{
	int			np;

	deconstruct_array(param, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, fr, frnull, &np);
	for (int i = 0; i < np; i++)
		if (!(*frnull)[i])
			gs_check_fraction(DatumGetFloat8((*fr)[i]));
	return np;
}

ArrayType *
gs_disc_multi_by(ArrayType *param, const GsTypeInfo *t, GsTypeKind kind, int64 n,
				 bool descending, GsSelectKeysFn select, void *arg)
{
	Datum	   *fr;
	bool	   *frnull;
	int			np;
	int			nranks = 0;
	uint64	   *ranks;
	uint64	   *keys;
	Datum	   *res;
	bool	   *resnull;
	ArrayType  *out;

	np = gs_fraction_array(param, &fr, &frnull);
	if (np == 0)
		return construct_empty_array(t->elemtypid);

	ranks = (uint64 *) palloc(sizeof(uint64) * np);
	keys = (uint64 *) palloc(sizeof(uint64) * np);
	for (int i = 0; i < np; i++)
		if (!frnull[i])
			ranks[nranks++] = gs_engine_rank(gs_disc_rank(DatumGetFloat8(fr[i]), n), n, descending);
	select(arg, ranks, nranks, keys);

	res = (Datum *) palloc(sizeof(Datum) * np);
	resnull = (bool *) palloc(sizeof(bool) * np);
	for (int i = 0, j = 0; i < np; i++)
	{
		resnull[i] = frnull[i];
		res[i] = frnull[i] ? (Datum) 0 : gs_key_to_datum(kind, keys[j++]);
	}
	out = construct_md_array(res, resnull, ARR_NDIM(param), ARR_DIMS(param), ARR_LBOUND(param),
							 t->elemtypid, t->typlen, t->typbyval, t->typalign);
	pfree(ranks);
	pfree(keys);
	pfree(res);
	pfree(resnull);
	return out;
}
