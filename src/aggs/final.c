/*
 * final.c — the final-function bodies shared by the ordered-set, plain,
 * moving and Citus aggregates (declared in ranks.h, with the rank rules
 * they apply): a key state's ranks selected by its engine (dispatch.c) and
 * mapped back to values; a comparison type's state (GS_T_DATUM) handed to
 * datum_final.c, which has its own bodies over values.  Apart from ranks.c
 * so that the rank arithmetic, which datum_final.c uses too, calls no
 * final body: ranks.c <- datum_final.c <- final.c, no cycle.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "aggs/ranks.h"
#include "select/dispatch.h"
#include "state/datum_state.h"

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
