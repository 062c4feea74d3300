/*
 * citus_keys.c -- the functions the Citus exchange's rounds run on the
 * workers, one call a row (docs/citus.md, "What travels"):
 *
 *   gs_citus_key(x) -> int8          gpuselect's order-preserving key of x
 *   gs_citus_bucket(x, t int8[]) -> int4   width_bucket(gs_citus_key(x), t)
 *   gs_citus_histogram(b int4) -> int8[]   aggregate: element b + 1 counts
 *                                    the rows of bucket b (the counts round)
 *
 * They are apart from the rounds (citus_exchange.c, the coordinator's side)
 * because they run on the other side of the boundary: in the shards'
 * queries, on every row, with no SPI and no state beyond fn_extra.  The key
 * is the engine's (gs_keys.h) with the sign bit flipped, so that int8's
 * signed order is the key's unsigned order: -0 sorts below +0 and NaN above
 * +Infinity exactly as the aggregates order them.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "base/types.h"
#include "aggs/citus_exchange.h"

PG_FUNCTION_INFO_V1(gs_citus_key);
PG_FUNCTION_INFO_V1(gs_citus_bucket);
PG_FUNCTION_INFO_V1(gs_citus_histogram_add);
PG_FUNCTION_INFO_V1(gs_citus_histogram_merge);

/*
 * gpuselect's key of the first argument (gs_keys.h), sign-flipped so that
 * int8's order is the key's unsigned order; the argument's kind is looked
 * up once per call site (fn_extra).
 */
static int64
gs_citus_key_of(FunctionCallInfo fcinfo)
{
	GsTypeKind *kind = (GsTypeKind *) fcinfo->flinfo->fn_extra;
	Datum		d = PG_GETARG_DATUM(0);

	if (kind == NULL)
	{
		Oid			t = get_fn_expr_argtype(fcinfo->flinfo, 0);
		GsTypeKind	k;
		uint8		kb;
		bool		num;

		if (!OidIsValid(t) || !gs_type_kind_from_oid(getBaseType(t), &k, &kb, &num) ||
			k == GS_T_DATUM)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gs_citus_key: type %s has no gpuselect key",
							OidIsValid(t) ? format_type_be(t) : "unknown")));
		kind = (GsTypeKind *) MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(GsTypeKind));
		*kind = k;
		fcinfo->flinfo->fn_extra = kind;
	}
	return (int64) (gs_key_from_datum(*kind, d) ^ GS_X_SIGN);
}

/* gs_citus_key(x) -> int8: x's key (gs_citus_key_of) */
Datum
gs_citus_key(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(gs_citus_key_of(fcinfo));
}

/*
 * gs_citus_bucket(x, t int8[]) -> int4: width_bucket(gs_citus_key(x), t),
 * the number of t's elements at most x's key (t sorted, no NULLs), as the
 * counts round asks of every row.  width_bucket's generic array search
 * calls int8's comparison through fmgr at each step (about 9 a row for
 * the rounds' arrays); here it is a plain binary search, and one call
 * instead of two.  That took 8% off the counts round (3M rows, 8 shards
 * on the VM: 400 against 435 ms, sum(x) 140 ms): most of the round is
 * the shards' GROUP BY, not the search.
 */
Datum
gs_citus_bucket(PG_FUNCTION_ARGS)
{
	int64		key = gs_citus_key_of(fcinfo);
	ArrayType  *t = PG_GETARG_ARRAYTYPE_P(1);
	const int64 *e;
	int			lo = 0,
				hi;

	if (ARR_ELEMTYPE(t) != INT8OID || ARR_NDIM(t) > 1 || ARR_HASNULL(t))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gs_citus_bucket: thresholds must be a one-dimensional int8 array without NULLs")));
	e = (const int64 *) ARR_DATA_PTR(t);
	hi = ArrayGetNItems(ARR_NDIM(t), ARR_DIMS(t));
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (key < e[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	PG_RETURN_INT32(lo);
}

/* ---------------- the counts round's histogram ---------------- */

/*
 * gs_citus_histogram(b int4) -> int8[]: how many rows each bucket number
 * b (0, 1, ...) has, as one array (element b + 1; up to the last bucket
 * seen and maybe a few empty ones after it; an empty array for no rows).
 * The counts round asks each shard for it instead of "GROUP BY bucket,
 * count(*)": a shard's HashAggregate over the buckets was about half that
 * round (issue 34; test/bench/results/citus-2026-11-28-vm-histogram.md).
 *
 * Why the bucket and not (x, splitters) as the argument: Citus runs an
 * aggregate of its own users through worker_partial_agg (citus
 * aggregate_utils.c), which, for more than one argument, packs them into a
 * ROW(...) every row -- the splitters' array copied into a record per row.
 * With one int4 argument it passes the value through; the bucket is
 * gs_citus_bucket's (or, for numeric and interval, width_bucket's), so the
 * order and bucket rule are the same as before.  That wrapper also builds a
 * new FmgrInfo every row: the transition function keeps nothing in
 * fn_extra.  The state is modified in place (as int4_avg_accum does), so the
 * wrapper does not copy it either; it grows by an eighth, so a state may end
 * in a few zeros (the merge drops them; the exchange accepts them).
 */

/* an int8 histogram array's counts (n of them); ERROR for anything else */
static int64 *
gs_hist_counts(ArrayType *a, int *n)
{
	if (ARR_ELEMTYPE(a) != INT8OID || ARR_NDIM(a) > 1 || ARR_HASNULL(a))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gs_citus_histogram: a state must be a one-dimensional int8 array without NULLs")));
	*n = ARR_NDIM(a) == 0 ? 0 : ARR_DIMS(a)[0];
	return *n == 0 ? NULL : (int64 *) ARR_DATA_PTR(a);
}

/*
 * A new histogram of n zero counts, in the current (per-row) context: the
 * aggregate's machinery (PostgreSQL's, or Citus's wrapper) copies a new
 * state into its own context.
 */
static ArrayType *
gs_hist_new(int n)
{
	Size		bytes = ARR_OVERHEAD_NONULLS(1) + sizeof(int64) * (Size) n;
	ArrayType  *a;

	if (n == 0)
		return construct_empty_array(INT8OID);
	a = (ArrayType *) palloc0(bytes);
	SET_VARSIZE(a, bytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = INT8OID;
	ARR_DIMS(a)[0] = n;
	ARR_LBOUND(a)[0] = 1;
	return a;
}

/* transition: state (int8[], initially '{}'), bucket b -> state */
Datum
gs_citus_histogram_add(PG_FUNCTION_ARGS)
{
	ArrayType  *st;
	int32		b = PG_GETARG_INT32(1);
	int			n;
	int64	   *c;

	/* the state is changed in place: only where it is an aggregate's */
	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "gs_citus_histogram_add called in non-aggregate context");
	st = PG_GETARG_ARRAYTYPE_P(0);
	c = gs_hist_counts(st, &n);
	if (b < 0 || b >= GS_X_HIST_MAX_BUCKETS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gs_citus_histogram: bucket %d out of range 0 .. %d", b,
						GS_X_HIST_MAX_BUCKETS - 1)));
	if (b >= n)
	{
		/* an eighth more than needed: few copies for keys stored in order,
		 * few trailing zeros sent (the merge drops them) */
		int			grown = Min(GS_X_HIST_MAX_BUCKETS, Max(b + 1, n + n / 8 + 16));
		ArrayType  *wider = gs_hist_new(grown);

		if (n > 0)
			memcpy(ARR_DATA_PTR(wider), c, sizeof(int64) * n);
		st = wider;
		c = (int64 *) ARR_DATA_PTR(st);
	}
	c[b]++;
	PG_RETURN_ARRAYTYPE_P(st);
}

/* combine: the sum of two histograms, as long as the longer (trailing zeros dropped) */
Datum
gs_citus_histogram_merge(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *b = PG_GETARG_ARRAYTYPE_P(1);
	int			na;
	int			nb;
	const int64 *ca = gs_hist_counts(a, &na);
	const int64 *cb = gs_hist_counts(b, &nb);
	int			n = Max(na, nb);
	ArrayType  *sum;
	int64	   *cs;

	while (n > 0 && (n > na || ca[n - 1] == 0) && (n > nb || cb[n - 1] == 0))
		n--;
	sum = gs_hist_new(n);
	cs = n == 0 ? NULL : (int64 *) ARR_DATA_PTR(sum);
	for (int i = 0; i < n; i++)
		if (pg_add_s64_overflow(i < na ? ca[i] : 0, i < nb ? cb[i] : 0, &cs[i]))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("gs_citus_histogram: count out of range")));
	PG_RETURN_ARRAYTYPE_P(sum);
}
