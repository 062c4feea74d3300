/*
 * citus_shard_groups.c -- the grouped Citus exchange by shard scans
 * (issue 34; docs/citus.md, "Grouped by shard scans"): GROUP BY a time
 * bucket (or any integer, date or timestamp expression of the columns) in
 * three rounds, two of them scans of the shards that find every row's
 * group in C:
 *
 *   sample  SELECT k, (grp) FROM rel TABLESAMPLE SYSTEM ... (a distributed
 *           query: ~8k keys, and the groups they come from)
 *   counts  gs_citus_shard_group_histogram(shards, col, T, grp, quals) on
 *           every worker: per group, the counts of the buckets of
 *           B - 1 thresholds T common to every group (the sample's evenly
 *           spaced keys; B from the ranks and the groups' size:
 *           gs_xs_buckets)
 *   gather  gs_citus_shard_group_keys(shards, col, bounds, grp, groups,
 *           offsets, quals): per group, the keys of the buckets
 *           that hold its ranks
 *
 * Why common thresholds, not each group's own (as citus_exchange_grouped.c
 * samples each group): a group's own needs its size first, one more scan.
 * Common ones cost bytes where a group's values sit apart from the
 * table's -- its ranks' buckets are then wider, never wrong -- and at 720
 * groups of 14k values each rank's bucket holds ~n_g / 128 keys.  The
 * counts are exact, so the answer is whatever the sample.
 *
 * Why these shapes: the per-hour dashboard query, run as today's plan (the
 * partial aggregates: every value to the coordinator through Citus's
 * worker_partial_agg wrapper) took 2.2x a grouped sum(x)
 * (test/bench/results/citus-2026-11-28-vm-gather.md); its rounds as
 * distributed queries each cost a grouped scan through the executor.  The
 * shard scans find a row's group as the bulk scan does (bulk_groups.c: by
 * the time column's cached ranges, a few comparisons a row).
 *
 * Where it runs: where the first counts round may run by shard scans
 * (gs_x_shard_unsafe: READ COMMITTED, no write in this transaction, a heap
 * table without row-level security, a plain column, a WHERE that keeps a
 * fifth of the rows), the group is of an integer, date or timestamp type
 * (its value travels as an int8), and the sample holds at least
 * GS_XS_PER_GROUP keys a group it met (else the groups are small: the
 * caller's rules decide, today's plan mostly).  The group and the WHERE
 * are evaluated in the workers' connections' time zone, as Citus evaluates
 * them for the built-in and for today's plan (a session zone of +05:30
 * gets UTC hours from all of them, on workers in UTC); their literals read
 * the same there as here: the planner wrote them in ISO styles
 * (gs_x_exact_literals).
 *
 * A round that fails, and a gather that disagrees with the counts (a
 * concurrent write between the rounds: a group not counted, a bucket's keys
 * not as many), return false: the caller's rounds then run from the start,
 * each of them checked as before.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "base/guc.h"
#include "aggs/ranks.h"
#include "aggs/citus_exchange.h"

#define GS_XS_MIN_BUCKETS	64		/* the common buckets (thresholds + 1), at least */
#define GS_XS_MAX_BUCKETS	1024	/* ... and at most */
#define GS_XS_SAMPLE		8192	/* keys sampled */
#define GS_XS_PER_GROUP		4		/* sampled keys a group met, at least, on average */

/*
 * A group's gathered keys sorted (int8 keys: this path runs only keyed),
 * compared inline by PostgreSQL's sort_template.h: qsort_arg calling
 * gs_x_cmp for every comparison cost a tenth of the coordinator's time at
 * 720 groups.
 */
#define ST_SORT gs_xs_sort_keys
#define ST_ELEMENT_TYPE Datum
#define ST_COMPARE(a, b) \
	(DatumGetInt64(*(a)) < DatumGetInt64(*(b)) ? -1 : DatumGetInt64(*(a)) > DatumGetInt64(*(b)) ? 1 : 0)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* one group's counts as a connection sent them */
typedef struct GsXsRecord
{
	bool		isnull;
	int64		point;
	const int64 *counts;
} GsXsRecord;

static int
gs_xs_record_cmp(const void *a, const void *b)
{
	const GsXsRecord *x = (const GsXsRecord *) a;
	const GsXsRecord *y = (const GsXsRecord *) b;

	if (x->isnull != y->isnull)
		return x->isnull ? -1 : 1;	/* the NULL group first: slot 0 */
	return x->point < y->point ? -1 : x->point > y->point ? 1 : 0;
}

/*
 * The sample: about GS_XS_SAMPLE keys, sorted, from a sample of the pages
 * (as gs_x_sample's: GS_X_SPREAD times the pages, a row of GS_X_SPREAD
 * taken), *m of them at *rate; *ngroups the distinct groups they came from.
 */
static Datum *
gs_xs_sample(GsXchg *x, GsXGrouping *gr, double rows, int64 *m, double *rate, int *ngroups)
{
	double		pct = 100.0 * GS_X_SPREAD * GS_XS_SAMPLE / Max(rows, 1.0);
	SPITupleTable *tt;
	Oid			types[2] = {INT8OID, gr->gtype};
	Datum	   *s;
	GsXsRecord *g;

	if (pct < 100.0)
	{
		*rate = pct / 100.0 / GS_X_SPREAD;
		tt = gs_x_run_sample(x, psprintf("SELECT %s, (%s) FROM %s TABLESAMPLE SYSTEM (%.17g) WHERE %s AND random() < %.17g",
										 x->kexpr, gr->gexpr, x->rel, pct, x->where, 1.0 / GS_X_SPREAD));
	}
	else
	{
		*rate = Min(1.0, GS_XS_SAMPLE / Max(rows, 1.0));
		tt = gs_x_run(x, psprintf("SELECT %s, (%s) FROM %s WHERE %s AND random() < %.17g",
								  x->kexpr, gr->gexpr, x->rel, x->where, *rate), false);
	}
	gs_x_check_columns(tt, 2, types);
	*m = (int64) SPI_processed;
	s = (Datum *) palloc(sizeof(Datum) * Max(*m, 1));
	g = (GsXsRecord *) palloc0(sizeof(GsXsRecord) * Max(*m, 1));
	for (int64 r = 0; r < *m; r++)
	{
		bool		isnull;
		Datum		gv;

		s[r] = SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &isnull);
		gv = SPI_getbinval(tt->vals[r], tt->tupdesc, 2, &g[r].isnull);
		g[r].point = g[r].isnull ? 0 : gs_int_point(gr->gtype, gv);
	}
	SPI_freetuptable(tt);
	qsort_arg(s, *m, sizeof(Datum), gs_x_cmp, x);
	qsort(g, *m, sizeof(GsXsRecord), gs_xs_record_cmp);
	*ngroups = 0;
	for (int64 r = 0; r < *m; r++)
		if (r == 0 || gs_xs_record_cmp(&g[r - 1], &g[r]) != 0)
			(*ngroups)++;
	return s;
}

/*
 * How many common buckets: the counts cost about 3 bytes a bucket, group
 * and connection (8 connections at the default), the gather some 20 a key,
 * r of a group's n_g / B keys a rank: B ~ sqrt(0.8 r n_g) makes the two
 * alike, a power of two, rounded down (at 720 groups of 14k values, 3
 * fractions: 128; 101 fractions: 1024 -- with 128, 101 ranks wanted most
 * buckets, two thirds of every key as text: twice today's plan's bytes).
 * r counts a fraction once for percentile_cont as well: its two ranks are
 * neighbours, in one bucket but where a bucket ends between them, so they
 * want one bucket's keys, not two (counted twice, they doubled B to 256 at
 * 3 fractions: twice the counts for the same keys).
 * 0 where the groups the sample met would need more counts on a shard than
 * gs_citus_shard_group_histogram keeps (GS_X_HIST_MAX_BUCKETS, a margin of
 * 4 for the groups it missed).
 */
static int
gs_xs_buckets(const GsXSpec *sp, double values, int sampled_groups)
{
	int			r = 0;
	double		want;
	int			b = GS_XS_MIN_BUCKETS;

	for (int i = 0; i < sp->np; i++)
		r += sp->frnull[i] ? 0 : 1;
	want = sqrt(0.8 * Max(r, 1) * values / Max(sampled_groups, 1));
	while (b < GS_XS_MAX_BUCKETS && 2.0 * b <= want)
		b *= 2;
	if ((double) sampled_groups * 4 * b > GS_X_HIST_MAX_BUCKETS)
		return 0;
	return b;
}

/*
 * The counts round's answers, one per connection, added up per group into
 * gr (slot 0 the NULL group, 1 .. ng the others, sorted); *cnt the groups'
 * counts, nb per slot.  False where an answer is not what was asked.
 */
static bool
gs_xs_merge_counts(GsXGrouping *gr, ArrayType **res, int nres, int nb, int64 **cnt)
{
	int64		nrec = 0;
	GsXsRecord *recs;
	int64		k = 0;
	int			ng = 0;

	for (int r = 0; r < nres; r++)
	{
		const int64 *c = (const int64 *) ARR_DATA_PTR(res[r]);
		int64		len = ARR_NDIM(res[r]) == 0 ? 0 : ARR_DIMS(res[r])[0];

		if (len < 1 || c[0] < 0 || len != 1 + c[0] * (nb + 2))
			return false;
		nrec += c[0];
	}
	recs = (GsXsRecord *) palloc(sizeof(GsXsRecord) * Max(nrec, 1));
	for (int r = 0; r < nres; r++)
	{
		const int64 *c = (const int64 *) ARR_DATA_PTR(res[r]);

		for (int64 i = 0; i < c[0]; i++)
		{
			const int64 *rec = c + 1 + i * (nb + 2);

			recs[k].isnull = rec[0] != 0;
			recs[k].point = rec[1];
			recs[k].counts = rec + 2;
			k++;
		}
	}
	qsort(recs, nrec, sizeof(GsXsRecord), gs_xs_record_cmp);
	for (int64 i = 0; i < nrec; i++)
		if (!recs[i].isnull && (i == 0 || gs_xs_record_cmp(&recs[i - 1], &recs[i]) != 0))
			ng++;
	gr->ng = ng;
	gr->gs = (GsXGroup *) palloc0(sizeof(GsXGroup) * (ng + 1));
	*cnt = (int64 *) palloc0(sizeof(int64) * (int64) (ng + 1) * nb);
	for (int64 i = 0, slot = 0; i < nrec; i++)
	{
		GsXGroup   *g;
		int64	   *gc;

		if (!recs[i].isnull && (i == 0 || gs_xs_record_cmp(&recs[i - 1], &recs[i]) != 0))
			slot++;
		g = &gr->gs[recs[i].isnull ? 0 : slot];
		gc = *cnt + (recs[i].isnull ? 0 : slot) * nb;
		g->present = true;
		g->gnull = recs[i].isnull;
		g->g = recs[i].isnull ? (Datum) 0 : gs_int_point_datum(gr->gtype, recs[i].point);
		for (int b = 0; b < nb; b++)
			if (recs[i].counts[b] < 0 || pg_add_s64_overflow(gc[b], recs[i].counts[b], &gc[b]) ||
				pg_add_s64_overflow(g->n, recs[i].counts[b], &g->n))
				return false;
	}
	gr->gs[0].gnull = true;
	return true;
}

/*
 * Group g's ranks among its counts c[0 .. nb): an equality bucket answers
 * its rank, the others are wanted; bounds (its ranges, gs_citus_shard_keys's
 * rule) appended; g->pos the ranks' positions among what the gather brings,
 * g->expect how many.
 */
static void
gs_xs_wanted(GsXchg *x, GsXGroup *g, const GsXSpec *sp, const GsXBuckets *bk, const int64 *c,
			 Datum *bounds, int *nbounds)
{
	int			nb = bk->nb;
	int64	   *below = (int64 *) palloc(sizeof(int64) * nb);
	int64	   *kept_below = (int64 *) palloc(sizeof(int64) * nb);
	bool	   *want = (bool *) palloc0(sizeof(bool) * nb);
	int64		sum = 0;
	int64		kept = 0;

	g->ranks = (int64 *) palloc(sizeof(int64) * 2 * Max(sp->np, 1));
	g->cr = (GsContRows *) palloc0(sizeof(GsContRows) * Max(sp->np, 1));
	g->nr = gs_x_spec_ranks(sp, g->n, g->ranks, g->cr);
	g->pos = (int64 *) palloc(sizeof(int64) * Max(g->nr, 1));
	g->done = (bool *) palloc0(sizeof(bool) * Max(g->nr, 1));
	g->vals = (Datum *) palloc0(sizeof(Datum) * Max(g->nr, 1));
	for (int b = 0; b < nb; b++)
	{
		below[b] = sum;
		sum += c[b];
	}
	for (int j = 0; j < g->nr; j++)
	{
		int			b = gs_x_bucket_of(below, c, nb, g->ranks[j]);
		Datum		v;

		if (gs_x_bucket_equal(x, bk, b, &v))
		{
			g->vals[j] = v;
			g->done[j] = true;
		}
		else
			want[b] = true;
	}
	for (int b = 0; b < nb; b++)
	{
		kept_below[b] = kept;
		if (want[b])
			kept += c[b];
	}
	for (int j = 0; j < g->nr; j++)
		if (!g->done[j])
		{
			int			b = gs_x_bucket_of(below, c, nb, g->ranks[j]);

			g->pos[j] = g->ranks[j] - below[b] + kept_below[b];
		}
	g->expect = kept;

	/* runs of wanted buckets as ranges [lo, hi): bucket b is [t[b - 1], t[b]) */
	for (int b = 0; b < nb; b++)
	{
		int			e = b;

		if (!want[b])
			continue;
		while (e + 1 < nb && want[e + 1])
			e++;
		bounds[(*nbounds)++] = b == 0 ? Int64GetDatum(PG_INT64_MIN) : bk->t[b - 1];
		if (e < nb - 1)
			bounds[(*nbounds)++] = bk->t[e];
		b = e;
	}
}

/*
 * The gather's answers into the groups' keys (after skip leading elements:
 * gs_citus_shard_group_spool_keys's spool flag); false where they disagree
 * with the counts
 */
static bool
gs_xs_take_keys(GsXGrouping *gr, ArrayType **res, int nres, int skip)
{
	int			nslots = gr->ng + 1;

	for (int pass = 0; pass < 2; pass++)
	{
		for (int r = 0; r < nres; r++)
		{
			const int64 *c = (const int64 *) ARR_DATA_PTR(res[r]) + skip;
			int64		len = (ARR_NDIM(res[r]) == 0 ? 0 : ARR_DIMS(res[r])[0]) - skip;
			int64		i = 1;

			if (len < 1 + nslots || c[0] != 0)
				return false;	/* a group the counts did not have */
			for (int j = 0; j < nslots; j++)
			{
				GsXGroup   *g = &gr->gs[j];
				int64		k;

				if (i >= len || c[i] < 0 || c[i] > len - i - 1)
					return false;
				k = c[i++];
				if (pass == 0)
					g->capkeys += k;
				else
				{
					for (int64 q = 0; q < k; q++)
						g->keys[g->nkeys++] = Int64GetDatum(c[i + q]);
				}
				i += k;
			}
			if (i != len)
				return false;
		}
		for (int j = 0; j < nslots && pass == 0; j++)
		{
			GsXGroup   *g = &gr->gs[j];

			if (g->capkeys != g->expect)
				return false;
			g->keys = (Datum *) palloc(sizeof(Datum) * Max(g->capkeys, 1));
			g->nkeys = 0;
		}
	}
	return true;
}

/*
 * A new exchange's spool id (shard_spool.h), or 0 for none: where
 * gpuselect.citus_exchange_spool is off, or a fraction is out of range --
 * that ERROR comes after the counts round (as the built-in's, only where
 * there are rows), and would leave the spools to the workers' sweep.
 */
static int64
gs_xs_spool_id(const GsXSpec *sp)
{
	int64		id = 0;

	if (!gs_guc_citus_exchange_spool)
		return 0;
	for (int i = 0; i < sp->np; i++)
		if (!sp->frnull[i] && !gs_fraction_in_range(DatumGetFloat8(sp->fr[i])))
			return 0;
	while (id == 0)
		if (!pg_strong_random(&id, sizeof(id)))
			return 0;
	return id;
}

/*
 * The spools no gather will read deleted (every rank found in the counts,
 * or the gather not run): one more round, whose failure changes nothing
 * (a spool left behind is swept on its worker later)
 */
static void
gs_xs_drop_spools(GsXchg *x, const char *col, const char *gexpr_lit, int64 spool)
{
	const char *why = x->shard_why;
	int			nres;

	if (spool == 0)
		return;
	(void) gs_x_fan_out(x, "gs_citus_shard_spool_drop", col,
						psprintf("%s, " INT64_FORMAT, gexpr_lit, spool), false, &nres);
	x->shard_why = why;
}

/*
 * The grouped exchange by shard scans, where it can run (the header says
 * where): gr's groups and their values (g->vals at g->cr), *total values;
 * false: not run or not finished (x->shard_why may say why), gr left empty
 * for the caller's rounds.
 */
bool
gs_xg_by_shard_scans(GsXchg *x, GsXGrouping *gr, const GsXSpec *sp, int64 *total)
{
	char	   *col = NULL;
	double		rows;
	double		max_rows;
	double		rate;
	int64		m;
	int			sampled_groups;
	Datum	   *s;
	Datum	   *spl;
	int			nb;
	int			ns = 0;
	GsXBuckets	bk;
	char	   *gexpr_lit = quote_literal_cstr(gr->gexpr);
	ArrayType **res;
	int			nres;
	int64	   *cnt;
	Datum	   *bounds;
	int			nbounds = 0;
	Datum	   *offsets;
	Datum	   *points;
	int64		spool;

	if (!gs_guc_citus_exchange_shard_scans)
		x->shard_why = "gpuselect.citus_exchange_shard_scans is off";
	else if (!gs_int_point_type(gr->gtype))
		x->shard_why = "a group not of an integer, date or timestamp type";
	else if (!x->keyed || !x->sample_pages)
		x->shard_why = "a value without a key, or not a plain table";
	else if (!gs_x_estimate(x, &rows, &max_rows) || rows < Max(gs_guc_citus_exchange_min_rows, GS_XS_SAMPLE))
		x->shard_why = "few rows by the pages, or no estimate";
	if (x->shard_why != NULL)
		return false;
	x->table_rows_est = rows;
	s = gs_xs_sample(x, gr, rows, &m, &rate, &sampled_groups);
	if (m < GS_XS_SAMPLE / 16 || m < (int64) GS_XS_PER_GROUP * sampled_groups)
	{
		x->shard_why = "small groups, or few values, by the sample";
		return false;
	}
	x->values_est = (double) m / rate;
	x->shard_why = gs_x_shard_unsafe(x, &col);
	if (x->shard_why != NULL)
		return false;

	/* the common thresholds: the sample's keys at even steps */
	nb = gs_xs_buckets(sp, x->values_est, sampled_groups);
	if (nb == 0)
	{
		x->shard_why = "too many groups for the common buckets, by the sample";
		return false;
	}
	spl = (Datum *) palloc(sizeof(Datum) * nb);
	for (int i = 1; i < nb; i++)
	{
		Datum		v = s[(int64) i * m / nb];

		if (ns == 0 || DatumGetInt64(spl[ns - 1]) != DatumGetInt64(v))
			spl[ns++] = v;
	}
	gs_x_buckets(x, spl, ns, s, m, &bk);

	/* the counts round (and the spools, where it keeps them) */
	spool = gs_xs_spool_id(sp);
	if (spool != 0)
		res = gs_x_fan_out(x, "gs_citus_shard_group_spool", col,
						   psprintf("%s, %s, " INT64_FORMAT, gs_x_array_literal(x, bk.t, bk.nt), gexpr_lit, spool),
						   true, &nres);
	else
		res = gs_x_fan_out(x, "gs_citus_shard_group_histogram", col,
						   psprintf("%s, %s", gs_x_array_literal(x, bk.t, bk.nt), gexpr_lit),
						   true, &nres);
	if (res == NULL)
	{
		gs_xs_drop_spools(x, col, gexpr_lit, spool);
		return false;
	}
	if (!gs_xs_merge_counts(gr, res, nres, bk.nb, &cnt))
	{
		x->shard_why = "a grouped shard scan's counts are not the buckets'";
		goto fail;
	}
	x->shard_rounds++;
	x->levels = 1;
	*total = 0;
	for (int i = 0; i <= gr->ng; i++)
		*total += gr->gs[i].n;
	if (*total == 0)
	{
		gs_xs_drop_spools(x, col, gexpr_lit, spool);
		return true;
	}
	/* the fractions in percentile_disc/cont's order (range errors) */
	for (int i = 0; i < sp->np; i++)
		if (!sp->frnull[i])
			gs_check_fraction(DatumGetFloat8(sp->fr[i]));

	/* each group's wanted buckets, as ranges */
	bounds = (Datum *) palloc(sizeof(Datum) * (int64) (gr->ng + 1) * (2 * Max(sp->np, 1) * 2 + 2));
	offsets = (Datum *) palloc(sizeof(Datum) * (gr->ng + 2));
	points = (Datum *) palloc(sizeof(Datum) * Max(gr->ng, 1));
	for (int i = 0; i <= gr->ng; i++)
	{
		GsXGroup   *g = &gr->gs[i];

		offsets[i] = Int64GetDatum(nbounds);
		if (i > 0)
			points[i - 1] = Int64GetDatum(gs_int_point(gr->gtype, g->g));
		if (g->n > 0)
			gs_xs_wanted(x, g, sp, &bk, cnt + (int64) i * bk.nb, bounds, &nbounds);
	}
	offsets[gr->ng + 1] = Int64GetDatum(nbounds);
	if (nbounds == 0)
	{
		/* every rank in an equality bucket */
		gs_xs_drop_spools(x, col, gexpr_lit, spool);
		return true;
	}

	/* the gather (from the spools, where the workers kept them: their snapshot) */
	gs_x_gather_pause();
	res = gs_x_fan_out(x, spool != 0 ? "gs_citus_shard_group_spool_keys" : "gs_citus_shard_group_keys", col,
					   psprintf("%s, %s, %s, %s%s",
								gs_x_typed_array_literal(INT8OID, bounds, nbounds), gexpr_lit,
								gs_x_typed_array_literal(INT8OID, points, gr->ng),
								gs_x_typed_array_literal(INT8OID, offsets, gr->ng + 2),
								spool != 0 ? psprintf(", " INT64_FORMAT, spool) : ""),
					   false, &nres);
	if (res == NULL)
		goto fail;				/* (a gather that failed deleted its spool, or left it to the sweep) */
	for (int r = 0; r < nres && spool != 0; r++)
	{
		x->spool_conns++;
		if (ARR_NDIM(res[r]) == 1 && ARR_DIMS(res[r])[0] >= 1 && ((const int64 *) ARR_DATA_PTR(res[r]))[0] == 1)
			x->spool_reads++;
	}
	if (!gs_xs_take_keys(gr, res, nres, spool != 0 ? 1 : 0))
	{
		x->shard_why = "a grouped shard scan's keys disagree with the counts (a concurrent write?)";
		goto fail;
	}
	x->shard_gathers++;
	for (int i = 0; i <= gr->ng; i++)
	{
		GsXGroup   *g = &gr->gs[i];

		if (g->nkeys > 0)
			gs_xs_sort_keys(g->keys, g->nkeys);
		for (int j = 0; j < g->nr; j++)
			if (!g->done[j])
			{
				if (g->pos[j] < 0 || g->pos[j] >= g->nkeys)
				{
					x->shard_why = "a grouped shard scan's keys disagree with the counts";
					goto fail;
				}
				g->vals[j] = g->keys[g->pos[j]];
				g->done[j] = true;
			}
	}
	return true;

fail:
	if (x->spool_conns == 0)
		gs_xs_drop_spools(x, col, gexpr_lit, spool);
	elog(DEBUG1, "gpuselect: Citus exchange: grouped by shard scans, not finished (%s): the rounds from the start",
		 x->shard_why);
	gr->ng = 0;
	gr->gs = NULL;
	*total = 0;
	x->shard_rounds = 0;
	x->shard_gathers = 0;
	x->spool_conns = 0;
	x->spool_reads = 0;
	x->levels = 0;
	return false;
}
