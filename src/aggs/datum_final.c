/*
 * datum_final.c — final functions of GS_T_DATUM states: percentile_disc
 * (single and array) for any type with a btree ordering, percentile_cont
 * (single and array) and gpu_median for interval, interpolated with the
 * interval functions percentile_cont uses (interval_mi, interval_mul,
 * interval_pl), so results and overflow errors are the built-in's.
 *
 * The selection builds an array of (abbreviated key, value) items from the
 * store in the final function's memory (the state is not modified, as
 * FINALFUNC_MODIFY = SHAREABLE requires) and runs gs_multiselect on it.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "select/datum_select.h"
#include "state/datum_state.h"
#include "select/dispatch.h"
#include "aggs/ranks.h"
#include "base/types.h"
#include "aggs/fn_cache.h"

PG_FUNCTION_INFO_V1(gs_pct_cont_interval_final);
PG_FUNCTION_INFO_V1(gs_pct_cont_interval_multi_final);
PG_FUNCTION_INFO_V1(gs_median_interval_final);

static int
gs_int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a,
				y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * A store of numeric keys: the CPU key engine selects the keys (ranks of
 * ORDER BY x DESC counted from the top), each result rebuilt from its key
 * and the group's dscale.  Results are palloc'd in CurrentMemoryContext.
 */
static void
gs_datum_select_numkeys(GsState *st, const int64 *ranks, int nranks, Datum *out)
{
	GsDatumStore *s = st->datums;
	gs_segment *segs = (gs_segment *) palloc(sizeof(gs_segment) * Max(s->nchunks, 1));
	gs_input	in;
	uint64	   *kranks = (uint64 *) palloc(sizeof(uint64) * nranks);
	uint64	   *keys = (uint64 *) palloc(sizeof(uint64) * nranks);
	size_t		nsegs = 0;

	for (int i = 0; i < s->nchunks; i++)
	{
		if (s->chunks[i].used == 0)
			continue;
		segs[nsegs].keys = s->chunks[i].data;
		segs[nsegs].n = s->chunks[i].used / sizeof(uint64);
		nsegs++;
	}
	in.segs = segs;
	in.nsegs = nsegs;
	in.key_bytes = sizeof(uint64);
	for (int i = 0; i < nranks; i++)
	{
		if (ranks[i] < 0 || ranks[i] >= st->nrows)
			elog(ERROR, "gpuselect: rank " INT64_FORMAT " out of range", ranks[i]);
		kranks[i] = (uint64) (s->keydesc ? st->nrows - 1 - ranks[i] : ranks[i]);
	}
	gs_dispatch_cpu_exact(&in, kranks, nranks, keys);
	for (int i = 0; i < nranks; i++)
		out[i] = gs_numkey_to_datum(gs_int64_from_key(keys[i]), s->dscale, s->keyshort);
	pfree(keys);
	pfree(kranks);
	pfree(segs);
}

void
gs_datum_select(GsState *st, const int64 *ranks, int nranks, Datum *out)
{
	GsDatumStore *s = st->datums;
	int64		n = st->nrows;
	GsDatumItem *items;
	int64		filled = 0;
	int64	   *sorted;
	int			nsorted = 0;
	SortSupportData ssup;
	bool		abbrev;
	bool		desc;

	if (nranks == 0)
		return;
	if (!OidIsValid(s->sortop))
		elog(ERROR, "gpuselect: state without an ordering");
	if (s->spill != NULL)
	{
		/* beyond gpuselect.work_mem: passes over its temporary file */
		gs_datum_spill_select(st, ranks, nranks, out);
		return;
	}
	if (s->keymode == GS_DK_NUMERIC)
	{
		gs_datum_select_numkeys(st, ranks, nranks, out);
		return;
	}
	if (gs_textkey_eligible(st, &desc))
	{
		elog(DEBUG2, "gpuselect: %lld values selected by their byte-order prefix keys",
			 (long long) n);
		gs_textkey_select(st, desc, ranks, nranks, out);
		return;
	}

	/* the values, in store order, as items */
	items = (GsDatumItem *) MemoryContextAllocHuge(CurrentMemoryContext, sizeof(GsDatumItem) * Max(n, 1));
	gs_chunk_advise_huge(items, sizeof(GsDatumItem) * Max(n, 1));
	for (int i = 0; i < s->nchunks; i++)
		filled += gs_datum_chunk_values(s, &s->chunks[i], items + filled, n - filled);
	if (filled != n)
		elog(ERROR, "gpuselect: corrupt value store");

	memset(&ssup, 0, sizeof(ssup));
	ssup.ssup_cxt = CurrentMemoryContext;
	ssup.ssup_collation = s->collation;
	ssup.ssup_nulls_first = false;
	ssup.abbreviate = true;
	PrepareSortSupportFromOrderingOp(s->sortop, &ssup);
	abbrev = gs_datum_abbreviate(items, n, &ssup);

	/* wanted ranks, sorted, without repeats */
	sorted = (int64 *) palloc(sizeof(int64) * nranks);
	memcpy(sorted, ranks, sizeof(int64) * nranks);
	qsort(sorted, nranks, sizeof(int64), gs_int64_cmp);
	for (int i = 0; i < nranks; i++)
	{
		if (sorted[i] < 0 || sorted[i] >= n)
			elog(ERROR, "gpuselect: rank " INT64_FORMAT " out of range", sorted[i]);
		if (nsorted == 0 || sorted[nsorted - 1] != sorted[i])
			sorted[nsorted++] = sorted[i];
	}

	gs_multiselect(items, n, sorted, nsorted, &ssup, abbrev);
	for (int i = 0; i < nranks; i++)
		out[i] = items[ranks[i]].val;
	pfree(sorted);
	pfree(items);
}

/* ---------------- percentile_disc ---------------- */

Datum
gs_datum_final_disc(GsState *st, float8 p)
{
	int64		rank = gs_disc_rank(p, st->nrows);
	Datum		v;

	gs_datum_select(st, &rank, 1, &v);
	return datumCopy(v, st->datums->typbyval, st->datums->typlen);
}

ArrayType *
gs_datum_final_disc_multi(GsState *st, ArrayType *param, Oid elemtypid)
{
	GsDatumStore *s = st->datums;
	Datum	   *fr;
	bool	   *frnull;
	int			np = gs_fraction_array(param, &fr, &frnull);
	int64	   *ranks;
	Datum	   *vals;
	Datum	   *res;
	int			nranks = 0;

	if (np == 0)
		return construct_empty_array(elemtypid);
	ranks = (int64 *) palloc(sizeof(int64) * np);
	vals = (Datum *) palloc(sizeof(Datum) * np);
	res = (Datum *) palloc(sizeof(Datum) * np);
	for (int i = 0; i < np; i++)
		if (!frnull[i])
			ranks[nranks++] = gs_disc_rank(DatumGetFloat8(fr[i]), st->nrows);
	gs_datum_select(st, ranks, nranks, vals);
	for (int i = 0, j = 0; i < np; i++)
		res[i] = frnull[i] ? (Datum) 0 : vals[j++];
	/* construct_md_array copies the values */
	return construct_md_array(res, frnull, ARR_NDIM(param), ARR_DIMS(param), ARR_LBOUND(param),
							  elemtypid, s->typlen, s->typbyval, s->typalign);
}

/* ---------------- percentile_cont over interval ---------------- */

/* lo + pct * (hi - lo) with the interval functions, as percentile_cont's interval_lerp */
Datum
gs_interval_lerp(Datum lo, Datum hi, float8 pct)
{
	Datum		diff = DirectFunctionCall2(interval_mi, hi, lo);
	Datum		scaled = DirectFunctionCall2(interval_mul, diff, Float8GetDatum(pct));

	return DirectFunctionCall2(interval_pl, scaled, lo);
}

Datum
gs_datum_final_cont_interval(GsState *st, float8 p)
{
	GsContRows	cr;
	int64		ranks[2];
	Datum		v[2];

	gs_cont_rows(p, st->nrows, &cr);
	ranks[0] = cr.first;
	ranks[1] = cr.second;
	gs_datum_select(st, ranks, cr.first == cr.second ? 1 : 2, v);
	if (cr.first == cr.second)
		return datumCopy(v[0], false, sizeof(Interval));
	return gs_interval_lerp(v[0], v[1], cr.proportion);
}

ArrayType *
gs_datum_final_cont_interval_multi(GsState *st, ArrayType *param)
{
	Datum	   *fr;
	bool	   *frnull;
	int			np = gs_fraction_array(param, &fr, &frnull);
	GsContRows *cr;
	int64	   *ranks;
	Datum	   *vals;
	Datum	   *res;
	int			nranks = 0;

	if (np == 0)
		return construct_empty_array(INTERVALOID);
	cr = (GsContRows *) palloc(sizeof(GsContRows) * np);
	ranks = (int64 *) palloc(sizeof(int64) * 2 * np);
	vals = (Datum *) palloc(sizeof(Datum) * 2 * np);
	res = (Datum *) palloc(sizeof(Datum) * np);
	for (int i = 0; i < np; i++)
	{
		if (frnull[i])
			continue;
		gs_cont_rows(DatumGetFloat8(fr[i]), st->nrows, &cr[i]);
		ranks[nranks++] = cr[i].first;
		ranks[nranks++] = cr[i].second;
	}
	gs_datum_select(st, ranks, nranks, vals);
	for (int i = 0, j = 0; i < np; i++)
	{
		if (frnull[i])
		{
			res[i] = (Datum) 0;
			continue;
		}
		res[i] = cr[i].second > cr[i].first ?
			gs_interval_lerp(vals[j], vals[j + 1], cr[i].proportion) : vals[j];
		j += 2;
	}
	return construct_md_array(res, frnull, ARR_NDIM(param), ARR_DIMS(param), ARR_LBOUND(param),
							  INTERVALOID, sizeof(Interval), false, TYPALIGN_DOUBLE);
}

/* ---------------- SQL-callable interval final functions ----------------
 * Checks in the order of the float8 ones (ordered_set.c, plain_aggs.c),
 * which follow percentile_cont's.
 */

/* gs_pct_cont_interval_final(internal, float8, interval) returns interval */
Datum
gs_pct_cont_interval_final(PG_FUNCTION_ARGS)
{
	GsState    *st;
	float8		p;

	gs_fn_cache(fcinfo, 2, NULL, false, true);
	st = gs_final_scalar_args(fcinfo, &p);
	if (st == NULL)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(gs_datum_final_cont_interval(st, p));
}

/* gs_pct_cont_interval_multi_final(internal, float8[], interval) returns interval[] */
Datum
gs_pct_cont_interval_multi_final(PG_FUNCTION_ARGS)
{
	GsState    *st;

	gs_fn_cache(fcinfo, 2, NULL, false, true);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (GsState *) PG_GETARG_POINTER(0);
	if (st->nrows == 0)
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	PG_RETURN_ARRAYTYPE_P(gs_datum_final_cont_interval_multi(st, PG_GETARG_ARRAYTYPE_P(1)));
}

/* gs_median_interval_final(internal, interval) returns interval */
Datum
gs_median_interval_final(PG_FUNCTION_ARGS)
{
	GsState    *st;

	gs_fn_cache(fcinfo, 1, "gpu_median", false, false);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (GsState *) PG_GETARG_POINTER(0);
	if (st->nrows == 0)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(gs_datum_final_cont_interval(st, 0.5));
}
