/*
 * citus_exchange.c — exact percentiles over a Citus distributed table, with
 * only reductions and the values near the wanted ranks travelling to the
 * coordinator (issue 34; docs/citus.md, "The exchange").
 *
 * The planner (planner/planner_citus.c) replaces an ungrouped query's
 * gpu_median / gpu_quantile(s) (and the built-ins the rewrite replaced) over
 * one hash-distributed table by gs_citus_exchange(...), which runs rounds
 * through SPI, each an ordinary distributed query that Citus already knows
 * how to run:
 *
 *   size    SELECT citus_relation_size(t)                      -> pages
 *           (reads no table: an estimate of n, and a bound on it)
 *   sample  SELECT k FROM t TABLESAMPLE SYSTEM (16 p) WHERE ...
 *           AND random() < 1/16                                   (~m keys:
 *           2048, up to 16384 for more than 1.2M candidates; p the
 *           rate m / the estimate, so the round reads 16 p of the pages)
 *   counts  SELECT gs_citus_histogram(<k's bucket among S>) FROM t
 *           WHERE ...                                             (per shard:
 *           an array of every bucket's count; Citus adds them up on the
 *           coordinator; the buckets add up to n, which fixes the ranks;
 *           GROUP BY the bucket where a shard has fewer rows than buckets;
 *           the first level's as C scans of the shards on the workers,
 *           where that is safe: citus_shard_round.c)
 *   gather  SELECT k FROM t WHERE ... AND <k in the wanted buckets>
 *           (after a first level counted by shard scans, shard scans too)
 *
 * So two full scans of the shards (counts, gather) and two cheap rounds,
 * where a count round once came first (issue 34: four full scans, 5-6x
 * sum(x); test/bench/results/citus-2026-11-28-vm-rounds.md).  The sample
 * only places the splitters: a biased one (pages of values stored in
 * order, a stale or wrong estimate) costs a level, never an answer, as the
 * counts are exact.  Where the estimate could mislead, a count round comes
 * back (gs_x_first_sample): the sample too small twice, or saying fewer
 * than citus_exchange_min_rows values.
 *
 * k is the sort key: for the eight key types gs_citus_key(x), gpuselect's
 * order-preserving key as int8 (so -0 sits below +0 and NaN above +Inf,
 * exactly as the aggregates order them), for numeric and interval the value
 * itself.  The splitters S come from the sorted sample, around each wanted
 * rank's expected position (a window of +-4 standard deviations of its
 * position in the sample, at most GS_X_RANK_SPLITTERS of them (twice as
 * many from a sample of 8192 keys up), and the
 * sample value at that position); a splitter the sample repeats (for
 * numeric and interval every splitter) also bounds a bucket of the keys
 * equal to it (gs_x_buckets), so a heavy duplicate is answered by its
 * count alone.  The counts say which bucket holds each rank; the next
 * level's candidates are only those buckets (each level's bucket ranges
 * stay in the WHERE).  Once the candidates number at most 12288
 * (gpuselect.test_citus_gather_limit; 96 kB of keys: at 2M values and a
 * few fractions one level comes close, and the bound keeps the bytes
 * under 1% of them) they are gathered and sorted here,
 * and a rank's value is read off at its position among them.  A level
 * that does not halve the candidates (it should not happen) makes the next
 * one ask for each bucket's min and max too, which answer a bucket of
 * equal keys.
 *
 * Fewer than gpuselect.citus_exchange_min_rows values (the pages' bound
 * says so, or a count round), or rounds that disagree, and every value is
 * gathered in one round instead -- one statement, consistent, and the same
 * bytes as the partial aggregates send.  Each Citus statement takes its own
 * snapshot on the workers, so a write between two rounds could mix them:
 * each later counts round must add up to the candidates the one before
 * left, and the gather must find in each wanted bucket what the last counts
 * round counted there (gs_x_read_off).
 *
 * Answers: ranks are PostgreSQL's (ranks.c), values the stored datums (keys
 * mapped back), percentile_cont interpolated as ranks.c / datum_final.c do,
 * so they equal the built-ins' and the plain aggregates' bit for bit.
 * Every round goes through citus_rounds.c (SPI, the bytes counted).
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/typcache.h"

#include "base/guc.h"
#include "base/types.h"
#include "aggs/ranks.h"
#include "aggs/citus_exchange.h"

PG_FUNCTION_INFO_V1(gs_citus_exchange);


/* ---------------- the rounds ---------------- */


int
gs_x_cmp(const void *a, const void *b, void *arg)
{
	GsXchg	   *x = (GsXchg *) arg;
	Datum		da = *(const Datum *) a;
	Datum		db = *(const Datum *) b;

	if (x->keyed)
	{
		int64		ia = DatumGetInt64(da);
		int64		ib = DatumGetInt64(db);

		return ia < ib ? -1 : ia > ib ? 1 : 0;
	}
	return DatumGetInt32(FunctionCall2Coll(x->cmp, InvalidOid, da, db));
}

/* column 1 of a round's rows: non-NULL keys, copied; *m their number (tt freed) */
static Datum *
gs_x_keys_of(GsXchg *x, SPITupleTable *tt, int64 *m)
{
	uint64		nr = tt->numvals;
	Datum	   *v = (Datum *) palloc(sizeof(Datum) * Max(nr, 1));

	gs_x_check_columns(tt, 1, &x->ktype);

	for (uint64 i = 0; i < nr; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull);

		if (isnull)
			elog(ERROR, "gpuselect: Citus exchange: a NULL key came back");
		v[i] = datumCopy(d, x->kbyval, x->klen);
	}
	SPI_freetuptable(tt);
	*m = (int64) nr;
	return v;
}

/* a value of k as an SQL literal */
static char *
gs_x_literal(GsXchg *x, Datum v)
{
	Oid			outfn;
	bool		varlena;

	if (x->keyed)
		return psprintf(INT64_FORMAT, DatumGetInt64(v));
	getTypeOutputInfo(x->ktype, &outfn, &varlena);
	return psprintf("%s::%s", quote_literal_cstr(OidOutputFunctionCall(outfn, v)),
					format_type_be_qualified(x->ktype));
}

/* the test hook gpuselect.test_citus_gather_pause: a wait before a gather */
void
gs_x_gather_pause(void)
{
	if (gs_guc_test_citus_gather_pause <= 0)
		return;
	elog(DEBUG1, "gpuselect: Citus exchange: the gather waits %d ms (test hook)",
		 gs_guc_test_citus_gather_pause);
	for (int ms = 0; ms < gs_guc_test_citus_gather_pause; ms += 10)
	{
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000L);
	}
}

/*
 * every candidate, sorted (the candidates of the levels so far; *m): by
 * shard scans where the first level's counts came from them and it is the
 * only level (citus_shard_round.c), else a distributed query
 */
static Datum *
gs_x_gather(GsXchg *x, int64 *m)
{
	Datum	   *v = NULL;

	gs_x_gather_pause();

	if (!x->all && x->levels == 1 && x->shard_rounds > 0 && x->gather_bounds != NULL)
		v = gs_x_shard_gather(x, x->gather_bounds, x->gather_nbounds, m);
	if (v == NULL)
		v = gs_x_keys_of(x, gs_x_run(x, psprintf("SELECT %s FROM %s WHERE %s%s", x->kexpr, x->rel, x->where,
												 x->cand.data), false), m);

	qsort_arg(v, *m, sizeof(Datum), gs_x_cmp, x);
	return v;
}

/* how many times v is in the sorted sample s[0..m) */
static int64
gs_x_sample_count(GsXchg *x, const Datum *s, int64 m, Datum v)
{
	int64		lo = 0;
	int64		hi = m;
	int64		first;

	while (lo < hi)				/* first s[i] >= v */
	{
		int64		mid = lo + (hi - lo) / 2;

		if (gs_x_cmp(&s[mid], &v, x) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	hi = m;
	while (lo < hi)				/* first s[i] > v */
	{
		int64		mid = lo + (hi - lo) / 2;

		if (gs_x_cmp(&s[mid], &v, x) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - first;
}

/*
 * The splitters of one level: around each open rank's expected position in
 * the sorted sample s[0..m) (and the value at that position itself, so that
 * a heavy duplicate there gets a bucket of its own).  Sorted, distinct; *ns.
 */
Datum *
gs_x_splitters(GsXchg *x, Datum *s, int64 m, int64 total, const int64 *cr, const bool *done,
			   int nr, int per_rank, int *ns)
{
	Datum	   *sp = (Datum *) palloc(sizeof(Datum) * (nr * (per_rank + 4) + 1));
	int			n = 0;

	for (int i = 0; i < nr; i++)
	{
		double		q;
		double		sigma;
		int64		e;
		int64		w;
		int64		lo;
		int64		hi;
		int64		st;

		if (done[i])
			continue;
		q = ((double) cr[i] + 0.5) / (double) total;
		e = Min(m - 1, (int64) (q * (double) m));
		sigma = sqrt((double) m * q * (1.0 - q));
		w = (int64) ceil(4.0 * sigma) + 2;
		lo = Max(0, e - w);
		hi = Min(m - 1, e + w);
		/* rounded up: at most per_rank of them (rounded down, a window of
		 * up to 2 * per_rank - 1 positions gave twice as many, past sp[]) */
		st = (hi - lo + per_rank) / per_rank;
		for (int64 j = lo; j <= hi; j += st)
			sp[n++] = s[j];
		sp[n++] = s[hi];
		sp[n++] = s[e];
	}
	qsort_arg(sp, n, sizeof(Datum), gs_x_cmp, x);
	*ns = 0;
	for (int i = 0; i < n; i++)
		if (*ns == 0 || gs_x_cmp(&sp[*ns - 1], &sp[i], x) != 0)
			sp[(*ns)++] = sp[i];
	return sp;
}


void
gs_x_buckets(GsXchg *x, Datum *sp, int ns, const Datum *s, int64 m, GsXBuckets *bk)
{
	char	   *lit;

	if (x->keyed)
	{
		bk->t = (Datum *) palloc(sizeof(Datum) * 2 * ns);
		bk->nt = 0;
		for (int i = 0; i < ns; i++)
		{
			int64		v = DatumGetInt64(sp[i]);

			bk->t[bk->nt++] = sp[i];
			/* only a value the sample holds twice may be heavy: a bucket
			 * for each value would double the counts' rows */
			if (v < PG_INT64_MAX && (i + 1 == ns || DatumGetInt64(sp[i + 1]) > v + 1) &&
				gs_x_sample_count(x, s, m, sp[i]) >= 2)
				bk->t[bk->nt++] = Int64GetDatum(v + 1);
		}
		bk->nb = bk->nt + 1;
		lit = gs_x_array_literal(x, bk->t, bk->nt);
		bk->expr = psprintf("%s.gs_citus_bucket(%s, %s)", quote_identifier(x->nsp), x->value, lit);
		return;
	}
	bk->t = sp;
	bk->nt = ns;
	bk->nb = 2 * ns + 1;
	lit = gs_x_array_literal(x, sp, ns);
	bk->expr = psprintf("(2 * width_bucket(%1$s, %2$s) - coalesce((%1$s = (%2$s)[width_bucket(%1$s, %2$s)])::int, 0))",
						x->kexpr, lit);
}

/* bucket b's keys are all equal: that value into *v */
bool
gs_x_bucket_equal(GsXchg *x, const GsXBuckets *bk, int b, Datum *v)
{
	if (x->keyed)
	{
		if (b < 1 || b >= bk->nt ||
			DatumGetInt64(bk->t[b]) != DatumGetInt64(bk->t[b - 1]) + 1)
			return false;
		*v = bk->t[b - 1];
		return true;
	}
	if (b % 2 == 0)
		return false;
	*v = bk->t[(b + 1) / 2 - 1];
	return true;
}

/* bucket b as a condition on k (appended to the candidates' filter) */
static char *
gs_x_bucket_cond(GsXchg *x, const GsXBuckets *bk, int b)
{
	const char *k = x->kexpr;

	if (x->keyed)
	{
		if (b == 0)
			return psprintf("%s < %s", k, gs_x_literal(x, bk->t[0]));
		if (b == bk->nt)
			return psprintf("%s >= %s", k, gs_x_literal(x, bk->t[b - 1]));
		return psprintf("(%s >= %s AND %s < %s)", k, gs_x_literal(x, bk->t[b - 1]),
						k, gs_x_literal(x, bk->t[b]));
	}
	if (b == 0)
		return psprintf("%s < %s", k, gs_x_literal(x, bk->t[0]));
	if (b % 2 == 1)
		return psprintf("%s = %s", k, gs_x_literal(x, bk->t[(b + 1) / 2 - 1]));
	if (b == 2 * bk->nt)
		return psprintf("%s > %s", k, gs_x_literal(x, bk->t[bk->nt - 1]));
	return psprintf("(%s > %s AND %s < %s)", k, gs_x_literal(x, bk->t[b / 2 - 1]),
					k, gs_x_literal(x, bk->t[b / 2]));
}

/* one level's counts round: its buckets and what each holds */
typedef struct GsXLevel
{
	GsXBuckets	bk;
	int64	   *cnt;			/* keys per bucket */
	int64	   *below;			/* keys in the buckets before */
	Datum	   *mins;			/* min and max per bucket (minmax only) */
	Datum	   *maxs;
	int64		sum;			/* every bucket's keys: the candidates */
	bool	   *wanted;			/* holds an open rank (the next candidates) */
} GsXLevel;

/*
 * The wanted buckets of int8 keys as one test a row: their ranges (adjacent
 * ones merged) as sorted bounds lo1, hi1, lo2, hi2, ... (-infinity as
 * INT64_MIN, +infinity left out), and gs_citus_bucket(x, bounds) -- the
 * number of bounds at most the key -- odd inside a range.  One call a row
 * where the ranges as SQL (k >= lo AND k < hi OR ...) computed the key some
 * five times a row: that was most of the gather round's cost over a scan.
 */
static void
gs_x_ranges_cond(GsXchg *x, const GsXLevel *lv, StringInfo conds)
{
	const GsXBuckets *bk = &lv->bk;
	Datum	   *bounds = (Datum *) palloc(sizeof(Datum) * (bk->nb + 2));
	int			nbounds = 0;
	bool		open = false;	/* a range begun, its end not yet written */

	for (int b = 0; b < bk->nb; b++)
	{
		if (lv->wanted[b] && !open)
		{
			bounds[nbounds++] = b == 0 ? Int64GetDatum(PG_INT64_MIN) : bk->t[b - 1];
			open = true;
		}
		else if (!lv->wanted[b] && open)
		{
			bounds[nbounds++] = bk->t[b - 1];	/* bucket b - 1 ends at t[b - 1] */
			open = false;
		}
	}
	appendStringInfo(conds, "%s.gs_citus_bucket(%s, %s) %% 2 = 1", quote_identifier(x->nsp), x->value,
					 gs_x_array_literal(x, bounds, nbounds));
	/* the first level's, for a gather by shard scans (gs_x_gather) */
	if (x->cand.len == 0)
	{
		x->gather_bounds = bounds;
		x->gather_nbounds = nbounds;
	}
}

/* the bucket holding candidate position r, given the bucket counts */
int
gs_x_bucket_of(const int64 *below, const int64 *cnt, int nb, int64 r)
{
	int			b = 0;

	while (b < nb - 1 && below[b] + cnt[b] <= r)
		b++;
	return b;
}

/*
 * The bucket of key k among bk's, as the counts round's SQL numbers it:
 * width_bucket's (and gs_citus_bucket's) number of thresholds at most k;
 * numeric and interval: 2 * that - (k equals the last of them).
 */
static int
gs_x_key_bucket(GsXchg *x, const GsXBuckets *bk, Datum k)
{
	int			lo = 0;
	int			hi = bk->nt;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (gs_x_cmp(&k, &bk->t[mid], x) < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (x->keyed)
		return lo;
	return 2 * lo - (lo > 0 && gs_x_cmp(&k, &bk->t[lo - 1], x) == 0 ? 1 : 0);
}


/*
 * A sample of about GS_X_SAMPLE (up to GS_X_SAMPLE_MAX) of total candidates
 * (an estimate or exact), sorted; *m keys, *rate the fraction asked.  The
 * candidates are many where they are many (a bucket spans ~ 8 sqrt(m) /
 * GS_X_RANK_SPLITTERS sample positions, total / sqrt(m) candidates: at 10M
 * values and 2048 a rank's bucket held ~15000 and a second level -- two more
 * scans -- followed; at most 16384 keys, 0.16% of 10M values' bytes).  A
 * plain table is sampled by pages (TABLESAMPLE SYSTEM, which Citus sends to
 * every shard): GS_X_SPREAD times the pages the rate needs, a row of
 * 1 / GS_X_SPREAD of them taken, so that values stored in order (a time
 * series) still come from many places; the round then reads a few per cent
 * of the pages instead of every one.  A biased sample costs a level, never
 * an answer: the counts are exact.
 */
static Datum *
gs_x_sample(GsXchg *x, double total, int64 *m, double *rate)
{
	double		want = Min(GS_X_SAMPLE_MAX, Max(GS_X_SAMPLE, total / GS_X_SAMPLE_PER));
	double		pages = 100.0 * GS_X_SPREAD * want / Max(total, 1.0);
	SPITupleTable *tt;
	Datum	   *s;

	*rate = Min(1.0, want / Max(total, 1.0));
	if (*rate >= 1.0)
		tt = gs_x_run(x, psprintf("SELECT %s FROM %s WHERE %s%s", x->kexpr, x->rel, x->where, x->cand.data),
					  false);
	else if (!x->sample_pages || pages >= 100.0)
		tt = gs_x_run(x, psprintf("SELECT %s FROM %s WHERE %s%s AND random() < %.17g",
								  x->kexpr, x->rel, x->where, x->cand.data, *rate), false);
	else
		tt = gs_x_run_sample(x, psprintf("SELECT %s FROM %s TABLESAMPLE SYSTEM (%.17g) WHERE %s%s AND random() < %.17g",
										 x->kexpr, x->rel, pages, x->where, x->cand.data, 1.0 / GS_X_SPREAD));
	s = gs_x_keys_of(x, tt, m);
	qsort_arg(s, *m, sizeof(Datum), gs_x_cmp, x);
	return s;
}

/*
 * A counts round: how many rows of "FROM <from_where>" each bucket
 * 0 .. nb - 1 of the int4 expression bexpr holds (palloc'd).  One
 * gs_citus_histogram(bexpr) per shard, an array of every bucket's count,
 * which Citus adds up (citus_keys.c says why the argument is the bucket):
 * the shards' plain aggregate instead of a HashAggregate over the buckets,
 * the round's larger half (test/bench/results/citus-2026-11-28-vm-histogram.md).
 * Where the buckets outnumber a shard's rows (rows: an estimate of all the
 * rows; many groups' buckets, many fractions) most of each shard's array
 * would be zeros, more bytes than its non-empty buckets as rows: then
 * "GROUP BY bucket, count(*)" as before.
 */
int64 *
gs_x_count_round(GsXchg *x, const char *bexpr, const char *from_where, int nb, double rows)
{
	int64	   *cnt = (int64 *) palloc0(sizeof(int64) * Max(nb, 1));
	SPITupleTable *tt;
	bool		isnull;

	if (nb > GS_X_HIST_MAX_BUCKETS || (double) nb * Max(x->shards, 1) > rows)
	{
		Oid			types[2] = {INT4OID, INT8OID};

		tt = gs_x_run(x, psprintf("SELECT %s, count(*) FROM %s GROUP BY 1", bexpr, from_where), true);
		gs_x_check_columns(tt, 2, types);
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			int32		b = DatumGetInt32(SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &isnull));

			if (isnull || b < 0 || b >= nb)
				elog(ERROR, "gpuselect: Citus exchange: bucket %d out of range", b);
			cnt[b] = DatumGetInt64(SPI_getbinval(tt->vals[r], tt->tupdesc, 2, &isnull));
		}
	}
	else
	{
		Datum		d;

		tt = gs_x_run(x, psprintf("SELECT %s.gs_citus_histogram(%s) FROM %s",
								  quote_identifier(x->nsp), bexpr, from_where), true);
		gs_x_check_columns(tt, 1, (Oid[]) {INT8ARRAYOID});
		if (SPI_processed != 1)
			elog(ERROR, "gpuselect: Citus exchange: a histogram round returned " UINT64_FORMAT " rows",
				 SPI_processed);
		d = SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull);
		if (!isnull)
		{
			ArrayType  *a = DatumGetArrayTypeP(d);
			int			n = ARR_NDIM(a) == 0 ? 0 : ARR_DIMS(a)[0];
			const int64 *c = (const int64 *) ARR_DATA_PTR(a);

			if (ARR_ELEMTYPE(a) != INT8OID || ARR_NDIM(a) > 1 || ARR_HASNULL(a))
				elog(ERROR, "gpuselect: Citus exchange: a histogram is not an int8 array");
			for (int b = 0; b < n; b++)
			{
				if (b >= nb && c[b] != 0)
					elog(ERROR, "gpuselect: Citus exchange: bucket %d out of range", b);
				if (b < nb)
					cnt[b] = c[b];
			}
		}
	}
	SPI_freetuptable(tt);
	return cnt;
}

/*
 * The counts per bucket with each bucket's min and max (the last level
 * stalled: a bucket of equal keys answers its ranks), GROUP BY bucket.
 */
static void
gs_x_count_minmax(GsXchg *x, GsXLevel *lv)
{
	Oid			types[4] = {INT4OID, INT8OID, x->ktype, x->ktype};
	SPITupleTable *tt;

	tt = gs_x_run(x, psprintf("SELECT %s, count(*), min(%s), max(%s) FROM %s WHERE %s%s GROUP BY 1",
							  lv->bk.expr, x->kexpr, x->kexpr, x->rel, x->where, x->cand.data),
				  true);
	gs_x_check_columns(tt, 4, types);
	lv->cnt = (int64 *) palloc0(sizeof(int64) * lv->bk.nb);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		int32		b = DatumGetInt32(SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &isnull));

		if (isnull || b < 0 || b >= lv->bk.nb)
			elog(ERROR, "gpuselect: Citus exchange: bucket %d out of range", b);
		lv->cnt[b] = DatumGetInt64(SPI_getbinval(tt->vals[r], tt->tupdesc, 2, &isnull));
		lv->mins[b] = datumCopy(SPI_getbinval(tt->vals[r], tt->tupdesc, 3, &isnull),
								x->kbyval, x->klen);
		lv->maxs[b] = datumCopy(SPI_getbinval(tt->vals[r], tt->tupdesc, 4, &isnull),
								x->kbyval, x->klen);
	}
	SPI_freetuptable(tt);
}

/*
 * A level's counts round: splitters around the open ranks' positions cr[]
 * among total candidates (estimated at the first level), from the sorted
 * sample s[0..m), and every bucket's keys counted on the shards.
 */
static void
gs_x_count_buckets(GsXchg *x, Datum *s, int64 m, int64 total, const int64 *cr, const bool *done,
				   int nr, bool minmax, GsXLevel *lv)
{
	Datum	   *sp;
	int			ns;

	/* a large sample: twice the splitters (buckets half as wide: at 10M
	 * values one level instead of two; 32 shards x 3 ranks x 128 buckets
	 * x 8-12 bytes of counts, ~150 kB) */
	sp = gs_x_splitters(x, s, m, total, cr, done, nr,
						GS_X_RANK_SPLITTERS * (m >= 4 * GS_X_SAMPLE ? 2 : 1), &ns);
	gs_x_buckets(x, sp, ns, s, m, &lv->bk);

	lv->mins = (Datum *) palloc0(sizeof(Datum) * lv->bk.nb);
	lv->maxs = (Datum *) palloc0(sizeof(Datum) * lv->bk.nb);
	if (minmax)
		gs_x_count_minmax(x, lv);
	else
	{
		/* the first level's by shard scans where that is safe (citus_shard_round.c) */
		lv->cnt = x->cand.len == 0 ? gs_x_shard_count_round(x, &lv->bk) : NULL;
		if (lv->cnt == NULL)
			lv->cnt = gs_x_count_round(x, lv->bk.expr,
									   psprintf("%s WHERE %s%s", x->rel, x->where, x->cand.data),
									   lv->bk.nb, (double) total);
	}
	lv->below = (int64 *) palloc(sizeof(int64) * lv->bk.nb);
	lv->sum = 0;
	for (int b = 0; b < lv->bk.nb; b++)
	{
		lv->below[b] = lv->sum;
		lv->sum += lv->cnt[b];
	}
}

/*
 * After a level's counts: the open ranks a bucket of equal keys holds are
 * answered (out[], done[]), the buckets holding the others become the next
 * candidates (their ranges join x->cand; cr[] renumbered among them).
 * Returns how many candidates are left.
 */
static int64
gs_x_narrow(GsXchg *x, GsXLevel *lv, int64 *cr, bool *done, int nr, Datum *out, bool minmax)
{
	int64	   *kept_below = (int64 *) palloc(sizeof(int64) * lv->bk.nb);
	int64		newtotal = 0;
	StringInfoData conds;

	lv->wanted = (bool *) palloc0(sizeof(bool) * lv->bk.nb);
	for (int i = 0; i < nr; i++)
	{
		int			b;
		Datum		v = (Datum) 0;

		if (done[i])
			continue;
		b = gs_x_bucket_of(lv->below, lv->cnt, lv->bk.nb, cr[i]);
		if (minmax && gs_x_cmp(&lv->mins[b], &lv->maxs[b], x) == 0)
			v = lv->mins[b];
		if (gs_x_bucket_equal(x, &lv->bk, b, &v) ||
			(minmax && gs_x_cmp(&lv->mins[b], &lv->maxs[b], x) == 0))
		{
			out[i] = v;
			done[i] = true;
		}
		else
			lv->wanted[b] = true;
	}

	/* the next candidates: the wanted buckets, in order */
	initStringInfo(&conds);
	for (int b = 0; b < lv->bk.nb; b++)
	{
		kept_below[b] = newtotal;
		if (!lv->wanted[b])
			continue;
		if (!x->keyed)
			appendStringInfo(&conds, "%s%s", conds.len ? " OR " : "", gs_x_bucket_cond(x, &lv->bk, b));
		newtotal += lv->cnt[b];
	}
	if (x->keyed)
		gs_x_ranges_cond(x, lv, &conds);
	for (int i = 0; i < nr; i++)
	{
		int			b;

		if (done[i])
			continue;
		b = gs_x_bucket_of(lv->below, lv->cnt, lv->bk.nb, cr[i]);
		cr[i] = cr[i] - lv->below[b] + kept_below[b];
	}
	if (newtotal > 0)
		appendStringInfo(&x->cand, " AND (%s)", conds.data);
	return newtotal;
}

/*
 * The candidates gathered and the open ranks read off (out[]).  false: they
 * are not what the last counts round counted -- in all, and in each wanted
 * bucket (lv, NULL before any: then in all), so that a write between the
 * rounds that moved a value from one wanted bucket to another is seen too.
 */
static bool
gs_x_read_off(GsXchg *x, const GsXLevel *lv, int64 total, const int64 *cr, bool *done, int nr,
			  Datum *out)
{
	int64		m;
	Datum	   *v = gs_x_gather(x, &m);

	if (m != total)
		return false;
	if (lv != NULL)
	{
		int64	   *got = (int64 *) palloc0(sizeof(int64) * lv->bk.nb);

		for (int64 i = 0; i < m; i++)
			got[gs_x_key_bucket(x, &lv->bk, v[i])]++;
		for (int b = 0; b < lv->bk.nb; b++)
			if (got[b] != (lv->wanted[b] ? lv->cnt[b] : 0))
				return false;
	}
	for (int i = 0; i < nr; i++)
		if (!done[i])
		{
			out[i] = v[cr[i]];
			done[i] = true;
		}
	return true;
}

/*
 * The values of the answer's ranks by levels, into *vals (spec order).  The
 * first level's sample s[0..m) is the caller's, taken at an estimate n_est
 * of the values; *n is their exact number where a count round said it, else
 * -1: then the first counts round says it (its buckets add up to it), and
 * that fixes the ranks (ranks[], crows[], *nr; *vals NULL for no values).
 * Each later counts round must add up to the candidates the last one left.
 * false: two rounds disagreed (a concurrent write).
 */
static bool
gs_x_levels(GsXchg *x, const GsXSpec *sp, Datum *s, int64 m, int64 n_est, int64 *n,
			int64 *ranks, GsContRows *crows, int *nr, Datum **vals)
{
	int64		total = *n;
	bool		minmax = false;
	GsXLevel	lv;
	bool		counted = false;
	int64	   *cr;
	bool	   *done;
	Datum	   *out;

	/* where the ranks should be: at the estimate, until the counts say */
	*nr = gs_x_spec_ranks(sp, total >= 0 ? total : Max(n_est, 1), ranks, crows);
	cr = (int64 *) palloc(sizeof(int64) * Max(*nr, 1));
	memcpy(cr, ranks, sizeof(int64) * *nr);
	done = (bool *) palloc0(sizeof(bool) * Max(*nr, 1));
	out = (Datum *) palloc(sizeof(Datum) * Max(*nr, 1));
	*vals = out;
	for (int level = 0;; level++)
	{
		bool		any_open = false;
		double		rate;

		for (int i = 0; i < *nr; i++)
			any_open |= !done[i];
		if (!any_open)
			return true;
		if (total >= 0 && (total <= gs_guc_test_citus_gather_limit || level >= GS_X_MAX_LEVELS))
			return gs_x_read_off(x, counted ? &lv : NULL, total, cr, done, *nr, out);
		if (level > 0)
		{
			s = gs_x_sample(x, (double) total, &m, &rate);
			if (m == 0)
				continue;		/* bad luck: sample again (bounded by the levels) */
		}
		x->levels++;
		gs_x_count_buckets(x, s, m, total >= 0 ? total : Max(n_est, 1), cr, done, *nr, minmax, &lv);
		counted = true;
		if (total < 0)
		{
			/* the first counts: how many values, hence the ranks */
			total = *n = lv.sum;
			if (total == 0)
			{
				*vals = NULL;
				return true;
			}
			*nr = gs_x_spec_ranks(sp, total, ranks, crows);
			memcpy(cr, ranks, sizeof(int64) * *nr);
		}
		else if (lv.sum != total)
			return false;
		{
			int64		newtotal = gs_x_narrow(x, &lv, cr, done, *nr, out, minmax);

			/* no progress (should not happen: heavy values get buckets of their own) */
			minmax = newtotal > total / 2;
			total = newtotal;
		}
	}
}

/* ---------------- the answer ---------------- */


/* the engine ranks of the answer, in spec order (2 per fraction for cont) */
int
gs_x_spec_ranks(const GsXSpec *sp, int64 n, int64 *ranks, GsContRows *cr)
{
	int			k = 0;

	for (int i = 0; i < sp->np; i++)
	{
		float8		p;

		if (sp->frnull[i])
			continue;
		p = DatumGetFloat8(sp->fr[i]);
		if (sp->cont)
		{
			gs_cont_rows(p, n, &cr[i]);
			ranks[k++] = (int64) gs_engine_rank(cr[i].first, n, sp->desc);
			ranks[k++] = (int64) gs_engine_rank(cr[i].second, n, sp->desc);
		}
		else
			ranks[k++] = (int64) gs_engine_rank(gs_disc_rank(p, n), n, sp->desc);
	}
	return k;
}

/* k's value -> the column's value */
static Datum
gs_x_value(const GsXchg *x, const GsXSpec *sp, Datum k)
{
	if (!x->keyed)
		return k;
	return gs_key_to_datum(sp->t.kind, (uint64) DatumGetInt64(k) ^ GS_X_SIGN);
}

static Datum
gs_x_cont_value(const GsXchg *x, const GsXSpec *sp, const GsContRows *cr, Datum lo, Datum hi)
{
	if (x->keyed)
	{
		uint64		keys[2];

		keys[0] = (uint64) DatumGetInt64(lo) ^ GS_X_SIGN;
		keys[1] = (uint64) DatumGetInt64(hi) ^ GS_X_SIGN;
		return Float8GetDatum(gs_cont_from_keys(sp->t.kind, cr, keys));
	}
	/* interval, as gs_datum_final_cont_interval */
	if (cr->first == cr->second)
		return datumCopy(lo, false, sizeof(Interval));
	return gs_interval_lerp(lo, hi, cr->proportion);
}

/* the result from the values vals[] of ranks[] (spec order), in the caller's context */
Datum
gs_x_result(const GsXchg *x, const GsXSpec *sp, const GsContRows *cr, Datum *vals)
{
	Datum	   *res = (Datum *) palloc(sizeof(Datum) * Max(sp->np, 1));
	bool	   *resnull = (bool *) palloc(sizeof(bool) * Max(sp->np, 1));
	Oid			elem = sp->cont && x->keyed ? FLOAT8OID : sp->t.typid;
	int16		len;
	bool		byval;
	char		align;

	for (int i = 0, k = 0; i < sp->np; i++)
	{
		resnull[i] = sp->frnull[i];
		if (resnull[i])
		{
			res[i] = (Datum) 0;
			continue;
		}
		if (sp->cont)
		{
			res[i] = gs_x_cont_value(x, sp, &cr[i], vals[k], vals[k + 1]);
			k += 2;
		}
		else
			res[i] = gs_x_value(x, sp, vals[k++]);
	}
	get_typlenbyvalalign(elem, &len, &byval, &align);
	if (!sp->multi)
		return datumCopy(res[0], byval, len);
	if (sp->np == 0)
		return PointerGetDatum(construct_empty_array(sp->t.elemtypid));
	return PointerGetDatum(construct_md_array(res, resnull, ARR_NDIM(sp->param), ARR_DIMS(sp->param),
											  ARR_LBOUND(sp->param),
											  sp->cont && x->keyed ? FLOAT8OID : sp->t.elemtypid,
											  len, byval, align));
}

/*
 * Every value, sorted, in one round (*n: how many came: the caller computes
 * the ranks from it); why: for the report line.
 */
static Datum *
gs_x_gather_all(GsXchg *x, int64 *n, const char *why)
{
	resetStringInfo(&x->cand);
	x->all = true;
	x->why_all = why;
	return gs_x_gather(x, n);
}

/* ---------------- the SQL function ---------------- */

void
gs_x_parse_spec(FunctionCallInfo fcinfo, GsXSpec *sp, Oid rettype)
{
	char	   *form = text_to_cstring(PG_GETARG_TEXT_PP(3));
	Oid			elem;
	uint8		kb;
	bool		num;

	memset(sp, 0, sizeof(*sp));
	if (strcmp(form, "disc") == 0 || strcmp(form, "disc desc") == 0)
		sp->cont = false;
	else if (strcmp(form, "cont") == 0 || strcmp(form, "cont desc") == 0)
		sp->cont = true;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gs_citus_exchange: unknown form \"%s\"", form)));
	sp->desc = strstr(form, "desc") != NULL;
	sp->rettype = rettype;
	elem = get_element_type(sp->rettype);
	sp->multi = OidIsValid(elem);
	if (!sp->multi)
		elem = sp->rettype;
	/* the value's type: a twin type (cont: float8 or interval) */
	if (!OidIsValid(elem) || getBaseType(elem) != elem ||
		!gs_type_kind_from_oid(elem, &sp->t.kind, &kb, &num) ||
		(sp->t.kind == GS_T_DATUM && elem != NUMERICOID && elem != INTERVALOID) ||
		(sp->cont && elem != FLOAT8OID && elem != INTERVALOID))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("gs_citus_exchange: unsupported result type %s",
						format_type_be(sp->rettype))));
	sp->t.typid = sp->t.elemtypid = elem;
	get_typlenbyvalalign(elem, &sp->t.typlen, &sp->t.typbyval, &sp->t.typalign);
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("gs_citus_exchange: no fractions")));
	sp->param = PG_GETARG_ARRAYTYPE_P(4);
	if (ARR_ELEMTYPE(sp->param) != FLOAT8OID)
		elog(ERROR, "gs_citus_exchange: fractions must be float8[]");
	deconstruct_array(sp->param, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &sp->fr, &sp->frnull, &sp->np);
	if (!sp->multi && (sp->np != 1 || sp->frnull[0]))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gs_citus_exchange: a scalar form takes one fraction")));
}

/* the value expression's type, from the parsed (not planned) query */
void
gs_x_check_value_type(const char *rel, const char *value, Oid want)
{
	SPIPlanPtr	plan = SPI_prepare(psprintf("SELECT %s FROM %s", value, rel), 0, NULL);
	List	   *srcs;
	CachedPlanSource *ps;

	if (plan == NULL)
		elog(ERROR, "gs_citus_exchange: %s", SPI_result_code_string(SPI_result));
	srcs = SPI_plan_get_plan_sources(plan);
	if (list_length(srcs) != 1 ||
		(ps = (CachedPlanSource *) linitial(srcs))->resultDesc == NULL ||
		ps->resultDesc->natts != 1 ||
		TupleDescAttr(ps->resultDesc, 0)->atttypid != want)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("gs_citus_exchange: the value is not of type %s", format_type_be(want))));
	SPI_freeplan(plan);
}

/*
 * The exchange's setup: the SQL pieces, k's type, the settings literals are
 * read back under (the planner deparsed under the same), SPI.  *guc_nest:
 * the settings' nest level.
 */
/*
 * Settings under which the text of a value reads back as the same value
 * (floats in full, ISO dates, postgres intervals), saved in a new GUC nest
 * level, returned for AtEOXact_GUC: the planner deparses constants and the
 * rounds print splitters under them.
 */
int
gs_x_exact_literals(void)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("datestyle", "ISO, YMD", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

/* the report line's detail: what the counts rounds and the query text cost */
char *
gs_x_counts_detail(const GsXchg *x)
{
	int64		combined = x->count_bytes - x->count_direct_bytes;

	return psprintf("Of them the counts rounds: %lld rows, %lld bytes as Citus combined them, "
					"at most %lld bytes from the %lld shards; the rounds' query text: %lld bytes per shard.%s%s",
					(long long) x->count_rows, (long long) x->count_bytes,
					(long long) (combined * x->shards + x->count_direct_bytes), (long long) x->shards,
					(long long) x->sql_bytes,
					x->shard_rounds > 0 ? (x->shard_gathers > 0 ?
										   (x->spool_conns > 0 ?
											psprintf(" The first counts round and the gather by shard scans; %d of %d connections gathered from their spools.",
													 x->spool_reads, x->spool_conns) :
											" The first counts round and the gather by shard scans.") :
										   " The first counts round by shard scans.") :
					x->shard_why != NULL ? psprintf(" The counts by a distributed query: %s.", x->shard_why) : "",
					x->round_ms.len > 0 ? psprintf(" The rounds took %s ms.", x->round_ms.data) : "");
}

void
gs_x_setup(FunctionCallInfo fcinfo, const GsXSpec *sp, GsXchg *x, int *guc_nest)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *relname = get_rel_name(relid);
	char	   *value = text_to_cstring(PG_GETARG_TEXT_PP(1));
	char	   *quals = PG_ARGISNULL(2) ? "" : text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *nsp = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
	SPITupleTable *tt;
	bool		isnull;

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("gs_citus_exchange: relation %u does not exist", relid)));
	memset(x, 0, sizeof(*x));
	x->rel = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), relname);
	x->keyed = sp->t.kind != GS_T_DATUM;
	x->kexpr = x->keyed ? psprintf("%s.gs_citus_key(%s)", quote_identifier(nsp), value)
		: psprintf("(%s)", value);
	x->where = psprintf("%s%s%s(%s) IS NOT NULL", quals[0] ? "(" : "", quals,
						quals[0] ? ") AND " : "", value);
	x->ktype = x->keyed ? INT8OID : sp->t.typid;
	get_typlenbyvalalign(x->ktype, &x->klen, &x->kbyval, &x->kalign);
	if (!x->keyed)
	{
		TypeCacheEntry *tc = lookup_type_cache(x->ktype, TYPECACHE_CMP_PROC_FINFO);

		if (!OidIsValid(tc->cmp_proc_finfo.fn_oid))
			elog(ERROR, "gs_citus_exchange: no comparison for %s", format_type_be(x->ktype));
		x->cmp = &tc->cmp_proc_finfo;
	}

	/* literals (deparsed constants, splitters) read back exactly */
	*guc_nest = gs_x_exact_literals();

	/*
	 * Every round at Citus's full parallelism from its start (its slow start
	 * otherwise opens a connection at a time): within one transaction Citus
	 * keeps to the connections the first round opened, and a cheap first
	 * round (the page sample) opened few -- the counts round then ran 40-60%
	 * slower than alone (10M rows, 32 shards); with this setting the counts
	 * and gather rounds ran faster than alone.  Set in the same nest level
	 * (undone at the end); DEBUG1 where this Citus has no such setting.
	 */
	gs_x_set_citus_option("citus.force_max_query_parallelization", "on");

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "gs_citus_exchange: SPI_connect failed");
	initStringInfo(&x->cand);
	gs_x_check_value_type(x->rel, value, sp->t.typid);

	/* the shards, for the report line only (a local catalog) */
	tt = gs_x_run(x, psprintf("SELECT count(*) FROM pg_catalog.pg_dist_shard WHERE logicalrelid = %u",
							  relid), false);
	gs_x_check_columns(tt, 1, (Oid[]) {INT8OID});
	x->shards = DatumGetInt64(SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull));
	SPI_freetuptable(tt);
	x->rounds = 0;
	x->rows = x->bytes = x->sql_bytes = 0;
	x->value = value;
	x->nsp = nsp;
	x->quals = quals;
	x->relid = relid;
	x->sample_pages = get_rel_relkind(relid) == RELKIND_RELATION;
}

/*
 * An estimate of the table's rows (*rows) and a bound no count can pass
 * (*max_rows: every page full of the smallest tuples), from the shards'
 * pages (citus_relation_size: a round that reads no table, ~20 ms on the
 * VM; run_command_on_shards, which could read each shard's reltuples, took
 * 130-170 ms there for 32 shards, half a scan).  The estimate assumes
 * GS_X_ROWS_PER_PAGE: a table of wider rows gets a sample too small, which
 * the caller takes again at the rate the sample implies; one of narrower
 * rows a sample at most twice the size asked.  false for a table whose
 * pages are not its rows' (a partitioned one: the parent has none), or
 * where the function failed: the caller counts.  Its errors are caught (a
 * subtransaction), a cancel excepted.
 */
bool
gs_x_estimate(GsXchg *x, double *rows, double *max_rows)
{
	char	   *sql = psprintf("SELECT (pg_catalog.citus_relation_size(%u::pg_catalog.regclass)"
							   " / pg_catalog.current_setting('block_size')::float8)", x->relid);
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	double		unknown = 1;

	if (!x->sample_pages)
		return false;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		SPITupleTable *tt = gs_x_run(x, sql, false);
		bool		isnull;
		double		pages;


		gs_x_check_columns(tt, 1, (Oid[]) {FLOAT8OID});
		pages = DatumGetFloat8(SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull));
		unknown = isnull ? 1 : 0;
		*rows = pages * GS_X_ROWS_PER_PAGE;
		*max_rows = pages * MaxHeapTuplesPerPage;
		SPI_freetuptable(tt);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(cxt);
		e = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (e->sqlerrcode == ERRCODE_QUERY_CANCELED || e->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
			ReThrowError(e);
		elog(DEBUG1, "gpuselect: Citus exchange: no estimate of the rows (%s)", e->message);
		unknown = 1;
	}
	PG_END_TRY();
	return unknown == 0;
}

/* a count round (where the estimate could mislead): how many values */
static int64
gs_x_count(GsXchg *x)
{
	SPITupleTable *tt;
	bool		isnull;
	int64		n;

	tt = gs_x_run(x, psprintf("SELECT count(%s) FROM %s%s%s", x->value, x->rel,
							  x->quals[0] ? " WHERE " : "", x->quals), false);
	gs_x_check_columns(tt, 1, (Oid[]) {INT8OID});
	n = DatumGetInt64(SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull));
	SPI_freetuptable(tt);
	return n;
}

/*
 * The first level's sample, sorted (*m keys), at a rate from an estimate of
 * the values (*n_est); no count round where the estimate can be trusted.
 * *n: the exact number of values where a count round was needed, else -1.
 * NULL: gather every value instead (fewer than citus_exchange_min_rows,
 * known from the bound of the pages or from a count).
 *
 * The estimate: the pages' (gs_x_estimate), then what the sample
 * says (its keys / its rate: the quals' share included).  It decides the
 * small-input path only where it cannot be wrong (the pages' bound under
 * citus_exchange_min_rows); a sample too small to say (under a quarter of
 * what was asked: a stale estimate, selective quals) is taken again at the
 * rate it implies, once; where the estimate says fewer than
 * citus_exchange_min_rows values, or the sample came back empty, a count
 * round says how many (the old first round), and every value is gathered
 * if they are few.  An estimate too high is harmless: the counts round says
 * the exact number, and the levels carry on.
 */
static Datum *
gs_x_first_sample(GsXchg *x, int64 *m, int64 *n_est, int64 *n)
{
	double		rows;
	double		max_rows;
	double		rate;
	Datum	   *s;

	*n = -1;
	if (!gs_x_estimate(x, &rows, &max_rows))
		rows = -1;
	else if (max_rows < gs_guc_citus_exchange_min_rows)
		return NULL;			/* certainly few */
	x->table_rows_est = rows;
	for (int try = 0; try < 2 && rows >= Max(gs_guc_citus_exchange_min_rows, GS_X_SAMPLE); try++)
	{
		double		want = Min(GS_X_SAMPLE_MAX, Max(GS_X_SAMPLE, rows / GS_X_SAMPLE_PER));

		s = gs_x_sample(x, rows, m, &rate);
		if (*m == 0)
			break;
		rows = (double) *m / rate;
		if (rows < gs_guc_citus_exchange_min_rows)
			break;				/* it says few: a count decides */
		if (*m >= want / 4)
		{
			*n_est = (int64) rows;
			x->values_est = rows;
			return s;
		}
	}
	/* the estimate may mislead: count */
	*n = gs_x_count(x);
	if (*n < gs_guc_citus_exchange_min_rows || *n == 0)
		return NULL;
	for (int try = 0; try < 3; try++)
	{
		s = gs_x_sample(x, (double) *n, m, &rate);
		if (*m > 0)
			break;
	}
	*n_est = *n;
	x->values_est = (double) *n;
	return s;
}

/* the fractions in percentile_disc/cont's order (range errors), once values are known */
static void
gs_x_check_fractions(const GsXSpec *sp)
{
	for (int i = 0; i < sp->np; i++)
		if (!sp->frnull[i])
			gs_check_fraction(DatumGetFloat8(sp->fr[i]));
}

/*
 * The values of the answer's ranks (spec order; ranks[] and cr[] filled,
 * *nr of them), *n the number of values: by levels, or every value
 * gathered (few, or the rounds disagreed).  NULL: no values.
 */
static Datum *
gs_x_values(GsXchg *x, const GsXSpec *sp, int64 *n, int64 *ranks, GsContRows *cr, int *nr)
{
	Datum	   *all;
	Datum	   *vals;
	int64		m = 0;
	int64		n_est = 0;
	Datum	   *s = gs_x_first_sample(x, &m, &n_est, n);

	if (s == NULL && *n == 0)
		return NULL;
	if (s != NULL && m > 0)
	{
		bool		any = false;

		for (int i = 0; i < sp->np; i++)
			any |= !sp->frnull[i];
		if (!any)
			return (Datum *) palloc(sizeof(Datum));	/* values, but no fraction to answer */
	}
	if (s == NULL)
		all = gs_x_gather_all(x, n, "fewer values than gpuselect.citus_exchange_min_rows");
	else if (m == 0)
		all = gs_x_gather_all(x, n, "the samples came back empty");
	else
	{
		/* values there are: the fractions are checked before any rank */
		gs_x_check_fractions(sp);
		if (gs_x_levels(x, sp, s, m, n_est, n, ranks, cr, nr, &vals))
			return vals;
		all = gs_x_gather_all(x, n, "the rounds' counts disagreed (a concurrent write)");
	}
	if (*n == 0)
		return NULL;
	gs_x_check_fractions(sp);
	*nr = gs_x_spec_ranks(sp, *n, ranks, cr);
	vals = (Datum *) palloc(sizeof(Datum) * Max(*nr, 1));
	for (int i = 0; i < *nr; i++)
		vals[i] = all[ranks[i]];
	return vals;
}

/*
 * gs_citus_exchange(rel regclass, value text, quals text, form text,
 *                   fractions float8[], result anyelement) RETURNS anyelement
 *
 * value and quals are SQL over rel's columns (the planner deparsed them);
 * form "disc", "disc desc", "cont" or "cont desc"; result a NULL of the
 * result type: the value's type, float8 for cont over float8, or an array
 * of either for several fractions.
 */
Datum
gs_citus_exchange(PG_FUNCTION_ARGS)
{
	GsXSpec		sp;
	GsXchg		x;
	MemoryContext upper = CurrentMemoryContext;
	int			guc_nest;
	int64		n;
	Datum		result = (Datum) 0;
	bool		isnull = true;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("gs_citus_exchange: NULL argument")));
	gs_x_parse_spec(fcinfo, &sp, get_fn_expr_rettype(fcinfo->flinfo));
	gs_x_setup(fcinfo, &sp, &x, &guc_nest);
	{
		int64	   *ranks = (int64 *) palloc(sizeof(int64) * 2 * Max(sp.np, 1));
		GsContRows *cr = (GsContRows *) palloc0(sizeof(GsContRows) * Max(sp.np, 1));
		int			nr = 0;
		Datum	   *vals;

		/* no values: NULL, before the fractions are checked (as the built-ins) */
		vals = gs_x_values(&x, &sp, &n, ranks, cr, &nr);
		if (vals != NULL)
		{
			MemoryContext spi = MemoryContextSwitchTo(upper);

			result = gs_x_result(&x, &sp, cr, vals);
			isnull = false;
			MemoryContextSwitchTo(spi);
		}
	}

	ereport(gs_guc_debug ? NOTICE : DEBUG1,
			(errmsg("gpuselect: Citus exchange over %s: %s values, %s; %d rounds received %lld rows, %lld bytes",
					x.rel, n >= 0 ? psprintf("%lld", (long long) n) : "uncounted",
					x.all ? psprintf("all gathered (%s)", x.why_all) : psprintf("%d levels", x.levels),
					x.rounds, (long long) x.rows, (long long) x.bytes),
			 errdetail_internal("%s", gs_x_counts_detail(&x))));
	SPI_finish();
	AtEOXact_GUC(true, guc_nest);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}
