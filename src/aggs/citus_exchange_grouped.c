/*
 * citus_exchange_grouped.c -- the Citus exchange for one GROUP BY
 * expression: the rounds of citus_exchange.c, every group in each round
 * (the comment at gs_citus_exchange_grouped below; docs/citus.md).
 */
#include "postgres.h"
#include <math.h>
#include "catalog/namespace.h"
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

PG_FUNCTION_INFO_V1(gs_citus_exchange_grouped);

/* ---------------- grouped: every group in each round ---------------- */

/*
 * gs_citus_exchange_grouped(rel, value, quals, form, fractions, result,
 *                           grp text, g anycompatible)
 *   RETURNS TABLE(g anycompatible, r anyelement)
 *
 * The same rounds for "GROUP BY grp" (one expression of rel's columns, a
 * type with a btree order and no collation; the planner checks).  Where
 * shard scans may run and grp is of an integer, date or timestamp type,
 * citus_shard_groups.c runs them (three rounds, two of them shard scans);
 * else every group in each round, as distributed queries, so that the
 * rounds stay four whatever the number of groups:
 *
 *   groups  SELECT grp, count(x) ... GROUP BY 1       -> the groups G, n_g
 *   values  SELECT gi, k ... AND random() < R[gi]     (R 1 for a group of
 *           at most GS_XG_WHOLE values: gathered whole; else a sample of
 *           about GS_XG_SAMPLE)
 *   counts  SELECT gs_citus_histogram(B[gi] + width_bucket(k, T[gi's slice]))
 *           ...                                       (the sampled groups'
 *           splitters, one flat array; a bucket number per group and bucket;
 *           GROUP BY it where the buckets outnumber a shard's rows:
 *           gs_x_count_round)
 *   gather  SELECT gi, k ... AND W[that bucket number]  (the wanted buckets)
 *
 * gi, a row's group, is width_bucket(grp, G) over the sorted non-NULL
 * groups (a binary search on the shard), 0 for the NULL group; the per-group
 * constants are arrays indexed by gi + 1.  One level only: the wanted buckets
 * are gathered whatever their size (with the sample and GS_XG_RANK_SPLITTERS
 * splitters per rank about n_g / 1000 keys per rank).  Keyed value types
 * only (the eight of gs_citus_key).  A round whose counts disagree with the
 * groups round (a concurrent write between the rounds) is an ERROR: the
 * query can be run again, or with gpuselect.citus_exchange off.
 */
#define GS_XG_SAMPLE			1024	/* keys sampled per group with levels */
#define GS_XG_RANK_SPLITTERS	12	/* splitters per wanted rank (fewer than ungrouped: each shard sends the counts) */
#define GS_XG_WHOLE				4096	/* a group of at most this many values is gathered whole */
#define GS_XG_PROBE_PAGES		8		/* sampled pages a group of half min_rows has (gs_xg_small_by_sample) */

static int
gs_xg_gcmp(const void *a, const void *b, void *arg)
{
	FmgrInfo   *cmp = (FmgrInfo *) arg;

	return DatumGetInt32(FunctionCall2Coll(cmp, InvalidOid, *(const Datum *) a, *(const Datum *) b));
}

/* an int4 (int64 values in range), float8 or bool array literal */
static char *
gs_xg_num_array(const int64 *iv, const double *dv, const bool *bv, int n)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoString(&s, "'{");
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoChar(&s, ',');
		if (iv)
			appendStringInfo(&s, INT64_FORMAT, iv[i]);
		else if (dv)
			appendStringInfo(&s, "%.17g", dv[i]);
		else
			appendStringInfoChar(&s, bv[i] ? 't' : 'f');
	}
	appendStringInfo(&s, "}'::%s[]", iv ? "int4" : dv ? "float8" : "bool");
	return s.data;
}

static void
gs_xg_add_key(GsXGroup *g, Datum k)
{
	if (g->nkeys == g->capkeys)
	{
		g->capkeys = Max(16, g->capkeys * 2);
		g->keys = g->keys ? (Datum *) repalloc(g->keys, sizeof(Datum) * g->capkeys)
			: (Datum *) palloc(sizeof(Datum) * g->capkeys);
	}
	g->keys[g->nkeys++] = k;
}

static void
gs_xg_disagree(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("gpuselect: Citus exchange: the rounds' counts disagree (a concurrent write?)"),
			 errhint("Run the query again, or with gpuselect.citus_exchange off.")));
}

/* the groups round: every group and its number of values, sorted (NULL first) */
static void
gs_xg_groups(GsXchg *x, GsXGrouping *gr)
{
	SPITupleTable *tt;
	Oid			types[2] = {gr->gtype, INT8OID};
	uint64		nrows;
	Datum	   *gv;
	int64	   *gn;
	int			ng = 0;
	int64		nullcount = -1;

	tt = gs_x_run(x, psprintf("SELECT (%s), count(%s) FROM %s%s%s GROUP BY 1", gr->gexpr, x->value,
							  x->rel, x->quals[0] ? " WHERE " : "", x->quals), false);
	gs_x_check_columns(tt, 2, types);
	nrows = SPI_processed;
	gv = (Datum *) palloc(sizeof(Datum) * Max(nrows, 1));
	gn = (int64 *) palloc(sizeof(int64) * Max(nrows, 1));
	for (uint64 r = 0; r < nrows; r++)
	{
		bool		gnull;
		bool		cnull;
		Datum		g = SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &gnull);
		int64		c = DatumGetInt64(SPI_getbinval(tt->vals[r], tt->tupdesc, 2, &cnull));

		if (gnull)
			nullcount = c;
		else
		{
			gv[ng] = datumCopy(g, gr->gbyval, gr->glen);
			gn[ng++] = c;
		}
	}
	SPI_freetuptable(tt);

	/* sorted as width_bucket orders them (the type's btree comparison) */
	{
		Datum	   *sorted = (Datum *) palloc(sizeof(Datum) * Max(ng, 1));

		memcpy(sorted, gv, sizeof(Datum) * ng);
		qsort_arg(sorted, ng, sizeof(Datum), gs_xg_gcmp, gr->gcmp);
		gr->ng = ng;
		gr->gs = (GsXGroup *) palloc0(sizeof(GsXGroup) * (ng + 1));
		gr->gs[0].gnull = true;
		gr->gs[0].present = nullcount >= 0;
		gr->gs[0].n = Max(nullcount, 0);
		for (int i = 0; i < ng; i++)
		{
			gr->gs[i + 1].g = sorted[i];
			gr->gs[i + 1].present = true;
			if (i > 0 && gs_xg_gcmp(&sorted[i - 1], &sorted[i], gr->gcmp) == 0)
				elog(ERROR, "gpuselect: Citus exchange: a group came twice");
		}
		/* the counts to the sorted groups (a binary search each) */
		for (int i = 0; i < ng; i++)
		{
			int			lo = 0;
			int			hi = ng - 1;

			while (lo < hi)
			{
				int			mid = (lo + hi) / 2;

				if (gs_xg_gcmp(&sorted[mid], &gv[i], gr->gcmp) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			gr->gs[lo + 1].n = gn[i];
		}
	}
	gr->idx = "1";
	{
		Datum	   *gvals = (Datum *) palloc(sizeof(Datum) * Max(ng, 1));

		for (int i = 0; i < ng; i++)
			gvals[i] = gr->gs[i + 1].g;
		if (ng > 0)
			gr->idx = psprintf("(coalesce(width_bucket((%s), %s), 0) + 1)", gr->gexpr,
							   gs_x_typed_array_literal(gr->gtype, gvals, ng));
	}
}

/* a row's group from its gi column */
static GsXGroup *
gs_xg_row_group(GsXGrouping *gr, SPITupleTable *tt, uint64 r)
{
	bool		isnull;
	int32		gi = DatumGetInt32(SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &isnull));

	if (isnull || gi < 0 || gi > gr->ng)
		elog(ERROR, "gpuselect: Citus exchange: group %d out of range", gi);
	return &gr->gs[gi];
}

/*
 * A keys round's rows: (gi, array_agg(k)) -- Citus aggregates each shard's
 * keys of a group into one array and concatenates them on the coordinator,
 * so a key costs its 8 bytes, as in the partial aggregates' states.  Into
 * the groups' keys; only_levels: a row of another group is a disagreement.
 */
static void
gs_xg_keys_round(GsXchg *x, GsXGrouping *gr, const char *sql, bool only_levels)
{
	SPITupleTable *tt = gs_x_run(x, sql, false);
	Oid			types[2] = {INT4OID, INT8ARRAYOID};

	gs_x_check_columns(tt, 2, types);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		Datum		a = SPI_getbinval(tt->vals[r], tt->tupdesc, 2, &isnull);
		GsXGroup   *g = gs_xg_row_group(gr, tt, r);
		Datum	   *ks;
		bool	   *knull;
		int			nk;

		if (isnull || (only_levels && !(g->level || g->whole_later)))
			gs_xg_disagree();
		deconstruct_array(DatumGetArrayTypeP(a), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &ks, &knull, &nk);
		for (int i = 0; i < nk; i++)
		{
			if (knull[i])
				elog(ERROR, "gpuselect: Citus exchange: a NULL key came back");
			gs_xg_add_key(g, ks[i]);
		}
	}
	SPI_freetuptable(tt);
}

/* a group's values at its ranks from its sorted keys, positions pos[] */
static void
gs_xg_read_off(GsXchg *x, GsXGroup *g)
{
	qsort_arg(g->keys, g->nkeys, sizeof(Datum), gs_x_cmp, x);
	for (int i = 0; i < g->nr; i++)
		if (!g->done[i])
		{
			if (g->pos[i] < 0 || g->pos[i] >= g->nkeys)
				gs_xg_disagree();
			g->vals[i] = g->keys[g->pos[i]];
			g->done[i] = true;
		}
}

/* the values round: the small groups whole, a sample of the others */
static bool
gs_xg_values(GsXchg *x, GsXGrouping *gr, const GsXSpec *sp, int64 total)
{
	int			n1 = gr->ng + 1;
	double	   *rate = (double *) palloc0(sizeof(double) * n1);
	bool		any_level = false;
	int64		whole = Min(GS_XG_WHOLE, gs_guc_test_citus_gather_limit);

	for (int i = 0; i < n1; i++)
	{
		GsXGroup   *g = &gr->gs[i];

		if (g->n == 0)
			continue;
		g->ranks = (int64 *) palloc(sizeof(int64) * 2 * Max(sp->np, 1));
		g->cr = (GsContRows *) palloc0(sizeof(GsContRows) * Max(sp->np, 1));
		g->nr = gs_x_spec_ranks(sp, g->n, g->ranks, g->cr);
		g->pos = (int64 *) palloc(sizeof(int64) * Max(g->nr, 1));
		memcpy(g->pos, g->ranks, sizeof(int64) * g->nr);
		g->done = (bool *) palloc0(sizeof(bool) * Max(g->nr, 1));
		g->vals = (Datum *) palloc0(sizeof(Datum) * Max(g->nr, 1));
		g->level = g->n > whole && total >= gs_guc_citus_exchange_min_rows;
		rate[i] = g->level ? (double) GS_XG_SAMPLE / (double) g->n : 1.0;
		any_level |= g->level;
	}
	gs_xg_keys_round(x, gr, any_level ?
					 psprintf("SELECT %s - 1, array_agg(%s) FROM %s WHERE %s AND random() < (%s)[%s] GROUP BY 1",
							  gr->idx, x->kexpr, x->rel, x->where,
							  gs_xg_num_array(NULL, rate, NULL, n1), gr->idx) :
					 psprintf("SELECT %s - 1, array_agg(%s) FROM %s WHERE %s GROUP BY 1",
							  gr->idx, x->kexpr, x->rel, x->where),
					 false);
	for (int i = 0; i < n1; i++)
	{
		GsXGroup   *g = &gr->gs[i];

		if (g->n == 0)
		{
			if (g->nkeys != 0)
				gs_xg_disagree();
			continue;
		}
		if (!g->level)
		{
			if (g->nkeys != g->n)
				gs_xg_disagree();
			gs_xg_read_off(x, g);
		}
		else if (g->nkeys == 0)
			g->whole_later = true;	/* bad luck: no sample */
		else
			qsort_arg(g->keys, g->nkeys, sizeof(Datum), gs_x_cmp, x);
	}
	return any_level;
}

/*
 * The counts round over the sampled groups' buckets, then the gather round
 * of the wanted buckets (and of the groups that sampled nothing).
 */
static void
gs_xg_levels(GsXchg *x, GsXGrouping *gr)
{
	int			n1 = gr->ng + 1;
	int64	   *toff = (int64 *) palloc0(sizeof(int64) * n1);
	int64	   *tlen = (int64 *) palloc0(sizeof(int64) * n1);
	int64	   *boff = (int64 *) palloc0(sizeof(int64) * n1);
	bool	   *gwhole = (bool *) palloc0(sizeof(bool) * n1);
	Datum	   *t = NULL;
	int			nt = 0;
	int			nb = 0;
	int64	   *cnt;
	bool	   *want;
	bool		any_gather = false;
	char	   *bucket;
	char	   *tlit;

	/* every sampled group's splitters into one flat array */
	for (int i = 0; i < n1; i++)
	{
		GsXGroup   *g = &gr->gs[i];
		Datum	   *spl;
		int			ns;

		gwhole[i] = g->whole_later;
		if (!g->level || g->whole_later)
			continue;
		spl = gs_x_splitters(x, g->keys, g->nkeys, g->n, g->pos, g->done, g->nr,
							 GS_XG_RANK_SPLITTERS, &ns);
		gs_x_buckets(x, spl, ns, g->keys, g->nkeys, &g->bk);
		t = t ? (Datum *) repalloc(t, sizeof(Datum) * (nt + g->bk.nt)) :
			(Datum *) palloc(sizeof(Datum) * g->bk.nt);
		memcpy(t + nt, g->bk.t, sizeof(Datum) * g->bk.nt);
		toff[i] = nt;
		tlen[i] = g->bk.nt;
		boff[i] = nb;
		g->toff = nt;
		g->boff = nb;
		nt += g->bk.nt;
		nb += g->bk.nb;
	}
	x->levels = 1;
	tlit = nt > 0 ? gs_x_array_literal(x, t, nt) : "'{}'::int8[]";
	bucket = psprintf("(%s)[%s] + width_bucket(%s, (%s)[(%s)[%s] + 1 : (%s)[%s] + (%s)[%s]])",
					  gs_xg_num_array(boff, NULL, NULL, n1), gr->idx, x->kexpr, tlit,
					  gs_xg_num_array(toff, NULL, NULL, n1), gr->idx,
					  gs_xg_num_array(toff, NULL, NULL, n1), gr->idx,
					  gs_xg_num_array(tlen, NULL, NULL, n1), gr->idx);
	cnt = NULL;
	want = (bool *) palloc0(sizeof(bool) * Max(nb, 1));
	if (nb > 0)
	{
		double		rows = 0;

		for (int i = 0; i < n1; i++)
			if (gr->gs[i].level && !gwhole[i])
				rows += (double) gr->gs[i].n;
		cnt = gs_x_count_round(x, bucket,
							   psprintf("%s WHERE %s AND (%s)[%s] > 0", x->rel, x->where,
										gs_xg_num_array(tlen, NULL, NULL, n1), gr->idx),
							   nb, rows);
	}

	/* per group: which buckets hold its ranks; equal buckets answer them */
	for (int i = 0; i < n1; i++)
	{
		GsXGroup   *g = &gr->gs[i];
		int64	   *c;
		int64	   *below;
		int64	   *kept_below;
		int64		sum = 0;
		int64		kept = 0;

		if (gwhole[i])
		{
			g->expect = g->n;
			any_gather = true;
			continue;
		}
		if (!g->level)
			continue;
		c = cnt + g->boff;
		below = (int64 *) palloc(sizeof(int64) * g->bk.nb);
		kept_below = (int64 *) palloc(sizeof(int64) * g->bk.nb);
		for (int b = 0; b < g->bk.nb; b++)
		{
			below[b] = sum;
			sum += c[b];
		}
		if (sum != g->n)
			gs_xg_disagree();
		for (int j = 0; j < g->nr; j++)
		{
			int			b = gs_x_bucket_of(below, c, g->bk.nb, g->pos[j]);
			Datum		v;

			if (gs_x_bucket_equal(x, &g->bk, b, &v))
			{
				g->vals[j] = v;
				g->done[j] = true;
			}
			else
				want[g->boff + b] = true;
		}
		for (int b = 0; b < g->bk.nb; b++)
		{
			kept_below[b] = kept;
			if (want[g->boff + b])
				kept += c[b];
		}
		for (int j = 0; j < g->nr; j++)
			if (!g->done[j])
			{
				int			b = gs_x_bucket_of(below, c, g->bk.nb, g->pos[j]);

				g->pos[j] = g->pos[j] - below[b] + kept_below[b];
			}
		g->expect = kept;
		g->nkeys = 0;
		any_gather |= kept > 0;
	}
	if (!any_gather)
		return;

	/* the gather round */
	gs_xg_keys_round(x, gr,
					 psprintf("SELECT %s - 1, array_agg(%s) FROM %s WHERE %s AND CASE WHEN (%s)[%s] = 0 THEN (%s)[%s] ELSE (%s)[%s + 1] END GROUP BY 1",
							  gr->idx, x->kexpr, x->rel, x->where,
							  gs_xg_num_array(tlen, NULL, NULL, n1), gr->idx,
							  gs_xg_num_array(NULL, NULL, gwhole, n1), gr->idx,
							  gs_xg_num_array(NULL, NULL, want, Max(nb, 1)), bucket),
					 true);
	for (int i = 0; i < n1; i++)
	{
		GsXGroup   *g = &gr->gs[i];

		if (!g->level)
			continue;
		if (g->nkeys != g->expect)
			gs_xg_disagree();
		if (g->nkeys > 0)
			gs_xg_read_off(x, g);
	}
}

/*
 * Are the groups too small for the exchange?  A group of at most
 * GS_XG_WHOLE values is gathered whole, at 12 bytes a value (its group's
 * number and its key: Citus ships such rows one by one) against the 8 of
 * the partial aggregates' states; so where such groups hold half the values
 * or more, or the values are fewer than gpuselect.citus_exchange_min_rows,
 * today's plan is cheaper.  So it is where groups of fewer than
 * citus_exchange_min_rows values hold half: each round scans every shard and
 * finds every row's group again, which at 720 groups of 14k values (10M
 * rows on one host) cost 7.6x today's plan for a tenth of its bytes
 * (test/bench/results/citus-2026-11-27-vm-10M.md).
 */
static bool
gs_xg_small(const GsXGrouping *gr, int64 total)
{
	int64		whole = Min(GS_XG_WHOLE, gs_guc_test_citus_gather_limit);
	int64		small = 0;

	for (int i = 0; i <= gr->ng; i++)
		if (gr->gs[i].n <= whole || gr->gs[i].n < gs_guc_citus_exchange_min_rows)
			small += gr->gs[i].n;
	return total < gs_guc_citus_exchange_min_rows || 2 * small >= total;
}

/*
 * Are the groups small, by a sample of the pages?  Where they are, the
 * groups round (a scan of every shard, every row's group computed: at 720
 * groups of 14k values in 10M rows it added 0.7 s to today's plan's 1.9 s,
 * test/bench/results/citus-2026-11-28-vm-gather.md) only finds out that
 * today's plan runs.  So first the rows of a sample of the pages
 * (TABLESAMPLE SYSTEM) are counted per group, and each group's count over
 * the sample's rate is its estimate.  The rate is such that a group of half
 * citus_exchange_min_rows values (at GS_X_ROWS_PER_PAGE rows a page) has
 * GS_XG_PROBE_PAGES of its pages in the sample, expected: 2.3% of the
 * pages at the default 100000, whatever the table's size.  Where
 * gs_xg_small's rule holds for the estimates with room -- a group counts as
 * small only below half of citus_exchange_min_rows -- today's plan runs at
 * once.  A wrong guess costs time, never an answer: both ways are exact.
 */
static bool
gs_xg_small_by_sample(GsXchg *x, GsXGrouping *gr)
{
	double		pct;
	double		total = 0;
	double		small = 0;
	SPITupleTable *tt;

	if (!x->sample_pages || gs_guc_citus_exchange_min_rows <= 0)
		return false;
	pct = 100.0 * GS_XG_PROBE_PAGES * GS_X_ROWS_PER_PAGE / (gs_guc_citus_exchange_min_rows / 2.0);
	if (pct >= 25.0)
		return false;			/* as dear as the groups round */
	tt = gs_x_run(x, psprintf("SELECT count(%s) FROM %s TABLESAMPLE SYSTEM (%.6f)%s%s GROUP BY (%s)",
							  x->value, x->rel, pct, x->quals[0] ? " WHERE " : "", x->quals, gr->gexpr),
				  false);
	gs_x_check_columns(tt, 1, (Oid[]) {INT8OID});
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		double		est = (double) DatumGetInt64(SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &isnull)) * 100.0 / pct;

		total += est;
		if (est < gs_guc_citus_exchange_min_rows / 2.0)
			small += est;
	}
	SPI_freetuptable(tt);
	return total > 0 && 2 * small >= total;
}

/*
 * today's plan: the partial aggregates (the exchange off), rows as they
 * come; with each group's count of values, for the report (*ng groups,
 * *total values)
 */
static void
gs_xg_todays_plan(GsXchg *x, GsXGrouping *gr, const GsXSpec *sp, const char *agg,
				  ReturnSetInfo *rsinfo, int *ng, int64 *total)
{
	SPITupleTable *tt;
	Oid			types[3] = {gr->gtype, sp->rettype, INT8OID};

	(void) set_config_option("gpuselect.citus_exchange", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	x->all = true;
	tt = gs_x_run(x, psprintf("SELECT (%s), %s, count(%s) FROM %s%s%s GROUP BY 1", gr->gexpr, agg,
							  x->value, x->rel, x->quals[0] ? " WHERE " : "", x->quals), false);
	gs_x_check_columns(tt, 3, types);
	*ng = (int) SPI_processed;
	*total = 0;
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		Datum		values[2];
		bool		nulls[2];
		bool		cnull;

		values[0] = SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &nulls[0]);
		values[1] = SPI_getbinval(tt->vals[r], tt->tupdesc, 2, &nulls[1]);
		*total += DatumGetInt64(SPI_getbinval(tt->vals[r], tt->tupdesc, 3, &cnull));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_freetuptable(tt);
}

/*
 * The rounds as distributed queries: small groups, by a sample or by the
 * groups round, run today's plan (*probed: by the sample); the others the
 * groups, values, counts and gather rounds.
 */
static void
gs_xg_by_rounds(GsXchg *x, GsXGrouping *gr, const GsXSpec *sp, const char *agg,
				ReturnSetInfo *rsinfo, bool *probed, int *ngroups, int64 *total)
{
	*probed = gs_xg_small_by_sample(x, gr);
	if (!*probed)
	{
		gs_xg_groups(x, gr);
		for (int i = 0; i <= gr->ng; i++)
			*total += gr->gs[i].n;
		*ngroups = gr->ng + (gr->gs[0].present ? 1 : 0);
	}
	if (*probed || (*total > 0 && gs_xg_small(gr, *total)))
		gs_xg_todays_plan(x, gr, sp, agg, rsinfo, ngroups, total);
	else if (*total > 0)
	{
		/* the fractions in percentile_disc/cont's order (range errors) */
		for (int i = 0; i < sp->np; i++)
			if (!sp->frnull[i])
				gs_check_fraction(DatumGetFloat8(sp->fr[i]));
		if (gs_xg_values(x, gr, sp, *total))
			gs_xg_levels(x, gr);
	}
}

Datum
gs_citus_exchange_grouped(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GsXSpec		sp;
	GsXchg		x;
	GsXGrouping gr;
	int			guc_nest;
	int64		total = 0;
	int			ngroups = 0;
	bool		probed = false;
	bool		by_shards;
	TypeCacheEntry *tc;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(3) || PG_ARGISNULL(6) || PG_ARGISNULL(8))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("gs_citus_exchange_grouped: NULL argument")));
	gs_x_parse_spec(fcinfo, &sp, get_fn_expr_argtype(fcinfo->flinfo, 5));
	if (sp.t.kind == GS_T_DATUM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gs_citus_exchange_grouped: unsupported value type %s",
						format_type_be(sp.t.typid))));
	memset(&gr, 0, sizeof(gr));
	gr.gtype = get_fn_expr_argtype(fcinfo->flinfo, 7);
	if (!OidIsValid(gr.gtype) || type_is_collatable(gr.gtype))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gs_citus_exchange_grouped: unsupported group type")));
	tc = lookup_type_cache(gr.gtype, TYPECACHE_CMP_PROC_FINFO);
	if (!OidIsValid(tc->cmp_proc_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gs_citus_exchange_grouped: no btree order for %s", format_type_be(gr.gtype))));
	gr.gcmp = &tc->cmp_proc_finfo;
	get_typlenbyval(gr.gtype, &gr.glen, &gr.gbyval);
	gr.gexpr = text_to_cstring(PG_GETARG_TEXT_PP(6));
	InitMaterializedSRF(fcinfo, 0);

	gs_x_setup(fcinfo, &sp, &x, &guc_nest);
	gs_x_check_value_type(x.rel, gr.gexpr, gr.gtype);
	by_shards = gs_xg_by_shard_scans(&x, &gr, &sp, &total);
	if (by_shards)
		ngroups = gr.ng + (gr.gs[0].present ? 1 : 0);
	else
		gs_xg_by_rounds(&x, &gr, &sp, text_to_cstring(PG_GETARG_TEXT_PP(8)), rsinfo, &probed,
						&ngroups, &total);

	for (int i = 0; i <= gr.ng && !x.all; i++)
	{
		GsXGroup   *g = &gr.gs[i];
		Datum		values[2];
		bool		nulls[2];

		if (!g->present)
			continue;
		values[0] = g->g;
		nulls[0] = g->gnull;
		nulls[1] = g->n == 0;
		values[1] = nulls[1] ? (Datum) 0 : gs_x_result(&x, &sp, g->cr, g->vals);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	ereport(gs_guc_debug ? NOTICE : DEBUG1,
			(errmsg("gpuselect: Citus exchange over %s grouped by %s: %d groups, %lld values%s; %d rounds received %lld rows, %lld bytes",
					x.rel, gr.gexpr, ngroups, (long long) total,
					by_shards ? ", by shard scans" :
					probed ? ", small groups by a sample: today's plan" :
					x.all ? ", small groups: today's plan" : "",
					x.rounds, (long long) x.rows, (long long) x.bytes),
			 errdetail_internal("%s", gs_x_counts_detail(&x))));
	SPI_finish();
	AtEOXact_GUC(true, guc_nest);
	return (Datum) 0;
}
