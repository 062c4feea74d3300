/*
 * ranks.c — fraction validation and rank arithmetic, as PostgreSQL 15 does it.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "select/dispatch.h"
#include "aggs/ranks.h"
#include "state/datum_state.h"

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

/* ---------------- final-function bodies ---------------- */

Datum
gs_final_disc(GsState *st, float8 p)
{
	uint64		rank;
	uint64		key;

	if (st->kind == GS_T_DATUM)
		return gs_datum_final_disc(st, p);
	rank = gs_disc_engine_rank(st, p);
	gs_dispatch_select(st, &rank, 1, &key);
	return gs_key_to_datum((GsTypeKind) st->kind, key);
}

float8
gs_final_cont(GsState *st, float8 p)
{
	GsContRows	cr;
	uint64		ranks[2];
	uint64		keys[2];

	if (st->kind == GS_T_DATUM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuselect: percentile_cont over %s supports only its default ordering (ASC or DESC)",
						format_type_be(st->typid))));
	gs_cont_engine_ranks(st, p, &cr, ranks);
	gs_dispatch_select(st, ranks, cr.first == cr.second ? 1 : 2, keys);
	return gs_cont_from_keys((GsTypeKind) st->kind, &cr, keys);
}

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

/* gs_final_disc_multi's selector: the state's engine (dispatch.c) */
static void
gs_select_state(void *arg, const uint64 *ranks, int nranks, uint64 *keys)
{
	gs_dispatch_select((GsState *) arg, ranks, nranks, keys);
}

ArrayType *
gs_final_disc_multi(GsState *st, ArrayType *param, const GsTypeInfo *t)
{
	if (st->kind == GS_T_DATUM)
		return gs_datum_final_disc_multi(st, param, t->elemtypid);
	return gs_disc_multi_by(param, t, (GsTypeKind) st->kind, st->nrows, st->descending,
							gs_select_state, st);
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

ArrayType *
gs_final_cont_multi(GsState *st, ArrayType *param)
{
	Datum	   *fr;
	bool	   *frnull;
	int			np;
	int			nranks = 0;
	GsContRows *cr;
	uint64	   *ranks;
	uint64	   *keys;
	Datum	   *res;
	bool	   *resnull;
	ArrayType  *out;

	if (st->kind == GS_T_DATUM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuselect: percentile_cont over %s supports only its default ordering (ASC or DESC)",
						format_type_be(st->typid))));
	np = gs_fraction_array(param, &fr, &frnull);
	if (np == 0)
		return construct_empty_array(FLOAT8OID);

	cr = (GsContRows *) palloc(sizeof(GsContRows) * np);
	ranks = (uint64 *) palloc(sizeof(uint64) * 2 * np);
	keys = (uint64 *) palloc(sizeof(uint64) * 2 * np);
	for (int i = 0; i < np; i++)
	{
		if (frnull[i])
			continue;
		gs_cont_engine_ranks(st, DatumGetFloat8(fr[i]), &cr[i], &ranks[nranks]);
		nranks += 2;
	}
	gs_dispatch_select(st, ranks, nranks, keys);

	res = (Datum *) palloc(sizeof(Datum) * np);
	resnull = (bool *) palloc(sizeof(bool) * np);
	for (int i = 0, j = 0; i < np; i++)
	{
		resnull[i] = frnull[i];
		if (frnull[i])
		{
			res[i] = (Datum) 0;
			continue;
		}
		res[i] = Float8GetDatum(gs_cont_from_keys((GsTypeKind) st->kind, &cr[i], &keys[j]));
		j += 2;
	}
	out = construct_md_array(res, resnull, ARR_NDIM(param), ARR_DIMS(param), ARR_LBOUND(param),
							 FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	pfree(cr);
	pfree(ranks);
	pfree(keys);
	pfree(res);
	pfree(resnull);
	return out;
}
