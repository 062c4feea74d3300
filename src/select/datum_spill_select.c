/*
 * datum_spill_select.c — selection over a spilled GS_T_DATUM group's
 * temporary file (datum_spill.c writes it): passes that keep only the
 * values that can hold the wanted ranks, without sorting them all.
 *
 * Selection, never a sort of everything while the wanted ranks are few:
 *   1. the sample's distinct values, sorted, are the pivots p0 < ... < pP-1;
 *      they cut the values into 2P+1 ordered buckets: below p0, equal to
 *      p0, between p0 and p1, ..., above pP-1;
 *   2. a counting pass finds each value's bucket by binary search over the
 *      pivots (abbreviated keys where the type has them, the full
 *      comparator on their ties) and counts values and bytes per bucket;
 *   3. a wanted rank in an equality bucket is answered by its pivot (heavy
 *      duplicates end here: one value repeated beyond the limit is one
 *      pivot's equality bucket); the others fall into between-buckets;
 *   4. if the wanted between-buckets fit the limit (values and their
 *      16-byte items), a gather pass brings them into memory and
 *      gs_multiselect selects the ranks renumbered among them; otherwise a
 *      pass writes them to a new, smaller temporary file, with a new sample
 *      of what it writes, and the next level starts at 1 on that file.
 *      Those passes search the pivots only for the values strictly between
 *      the pivots that bound the wanted buckets: two comparisons decide the
 *      rest (one rank: nearly every value).
 * Every pivot is a value of the candidates, so a level keeps strictly fewer
 * values than it read (its equality buckets are never kept), and with P
 * pivots from a uniform sample a wanted bucket holds about 2n/P values: one
 * rank over 5M values at the smallest limit takes two passes over the file
 * and a few over files of thousands.  When the ranks are many for the
 * pivots (more than one per 8 sampled values), buckets would not shrink
 * much per level: the candidates are then sorted by PostgreSQL's tuplesort
 * (the built-in's own algorithm, within the limit, spilling to disk itself)
 * and read off at the ranks.
 *
 * Memory during the selection: the state's write buffer and sample, one
 * record's read buffer and items, the pivots and two counters per bucket
 * (32 kB), and either a gather (at most the limit less the write buffer) or
 * a new file's write buffer and sample.  Files of a level are closed when
 * the next level has read them; the selection's own memory context (and
 * with it any file still open) is deleted at its end; on ERROR and cancel
 * the resource owner deletes the files.  Each record read polls for
 * interrupts (gpuselect.test_cancel_at_poll counts those polls).
 *
 * Answers are copies (CurrentMemoryContext of the caller): the state is not
 * modified, so a window's growing frame may append after a final call.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/sortsupport.h"
#include "utils/tuplesort.h"

#include "base/guc.h"
#include "select/datum_select.h"
#include "select/dispatch.h"
#include "state/datum_spill.h"
#include "state/datum_state.h"
#include "state/spill.h"

#define GS_DSPILL_SAMPLES_PER_RANK	8	/* fewer sampled values per wanted rank: sort */

/* tuplesort_getdatum gained its copy argument in 16 (15 always copies) */
#if PG_VERSION_NUM >= 160000
#define gs_tuplesort_getdatum(ts, val, isnull) tuplesort_getdatum((ts), true, true, (val), (isnull), NULL)
#else
#define gs_tuplesort_getdatum(ts, val, isnull) tuplesort_getdatum((ts), true, (val), (isnull), NULL)
#endif

/* ---------------- passes ---------------- */

/* what a pass reads: a file's records, then packed chunks in memory */
typedef struct DsSource
{
	GsDFile    *file;			/* NULL: none */
	const GsDatumChunk *mem;
	int			nmem;
	int64		n;				/* values in all */
	Size		cost;			/* bytes a gather of all of them takes (SIZE_MAX: unknown) */
} DsSource;

/* a wanted rank among the current candidates, and the caller's index of it */
typedef struct DsRank
{
	int64		rank;
	int			idx;
} DsRank;

typedef struct DsCx
{
	const GsState *st;
	const GsDatumStore *s;
	SortSupportData ssup;		/* the pivots' comparisons (abbreviated where the type can) */
	bool		abbrev;
	Size		budget;			/* bytes one gather may hold, values and items */
	char	   *rbuf;			/* one record, MAXALIGNed */
	Size		rcap;
	GsDatumItem *items;			/* one record's values */
	int64		icap;
	int			passes;
	int			polls;
	bool		sorted;			/* the tuplesort ended it */
	MemoryContext work;			/* the selection's: rbuf, items, files */
	Datum	   *out;			/* answers, indexed by DsRank.idx */
	MemoryContext outcxt;		/* ... copied there */
	/* this level's pivots (sorted, distinct) and their abbreviated keys */
	Datum	   *piv;
	Datum	   *pivkey;
	int			npiv;
	int			mark_plo;		/* the marked buckets lie between these pivots */
	int			mark_phi;
} DsCx;

typedef void (*DsVisit) (DsCx *cx, GsDatumItem *items, int64 n, void *arg);

/* once per record read; gpuselect.test_cancel_at_poll: the Nth finds a cancel */
static void
gs_dspill_poll(DsCx *cx)
{
	if (unlikely(gs_guc_test_cancel_at_poll > 0) && ++cx->polls == gs_guc_test_cancel_at_poll)
	{
		QueryCancelPending = true;
		InterruptPending = true;
	}
	CHECK_FOR_INTERRUPTS();
}

static void
gs_dspill_visit_packed(DsCx *cx, const char *data, Size used, int64 nvals,
					   DsVisit visit, void *arg)
{
	GsDatumChunk c;

	if (nvals <= 0)
		return;
	if (nvals > cx->icap)
	{
		if (cx->items)
			pfree(cx->items);
		cx->items = (GsDatumItem *) MemoryContextAllocHuge(cx->work, sizeof(GsDatumItem) * nvals);
		cx->icap = nvals;
	}
	c.data = (char *) data;
	c.used = used;
	c.cap = used;
	if (gs_datum_chunk_values(cx->s, &c, cx->items, nvals) != nvals)
		elog(ERROR, "gpuselect: corrupt value spill file");
	visit(cx, cx->items, nvals, arg);
}

/* one pass over every value of src */
static void
gs_dspill_scan(DsCx *cx, const DsSource *src, DsVisit visit, void *arg)
{
	cx->passes++;
	if (src->file != NULL && src->file->nrecords > 0)
	{
		gs_dfile_rewind(src->file);
		for (int64 r = 0; r < src->file->nrecords; r++)
		{
			GsDRecord	h;

			gs_dspill_poll(cx);
			h = gs_dfile_read(src->file, &cx->rbuf, &cx->rcap, cx->work);
			gs_dspill_visit_packed(cx, cx->rbuf, h.used, (int64) h.nvals, visit, arg);
		}
	}
	for (int i = 0; i < src->nmem; i++)
	{
		int64		n = gs_datum_chunk_values(cx->s, &src->mem[i], NULL, PG_INT64_MAX);

		gs_dspill_visit_packed(cx, src->mem[i].data, src->mem[i].used, n, visit, arg);
	}
}

/* ---------------- pivots and buckets ---------------- */

static inline int
gs_dspill_cmp_full(DsCx *cx, Datum a, Datum b)
{
	if (cx->abbrev)
		return ApplySortAbbrevFullComparator(a, false, b, false, &cx->ssup);
	return ApplySortComparator(a, false, b, false, &cx->ssup);
}

static int
gs_dspill_qsort_cmp(const void *a, const void *b, void *arg)
{
	return gs_dspill_cmp_full((DsCx *) arg, *(const Datum *) a, *(const Datum *) b);
}

/* the sample's distinct values, sorted (pointers into the sample, valid while it is) */
static void
gs_dspill_pivots(DsCx *cx, const GsDSample *sm)
{
	Datum	   *p = (Datum *) palloc(sizeof(Datum) * Max(sm->n, 1));
	int			u = 0;

	memcpy(p, sm->vals, sizeof(Datum) * sm->n);
	qsort_arg(p, sm->n, sizeof(Datum), gs_dspill_qsort_cmp, cx);
	for (int i = 0; i < sm->n; i++)
		if (u == 0 || gs_dspill_cmp_full(cx, p[u - 1], p[i]) != 0)
			p[u++] = p[i];
	cx->piv = p;
	cx->npiv = u;
	if (cx->abbrev)
	{
		cx->pivkey = (Datum *) palloc(sizeof(Datum) * Max(u, 1));
		for (int i = 0; i < u; i++)
			cx->pivkey[i] = cx->ssup.abbrev_converter(p[i], &cx->ssup);
	}
	else
		cx->pivkey = p;
}

/* v (abbreviated key k) against pivot j: abbreviated keys first, the full comparator on a tie */
static inline int
gs_dspill_cmp_pivot(DsCx *cx, Datum v, Datum k, int j)
{
	int			c = ApplySortComparator(k, false, cx->pivkey[j], false, &cx->ssup);

	if (c == 0 && cx->abbrev)
		c = ApplySortAbbrevFullComparator(v, false, cx->piv[j], false, &cx->ssup);
	return c;
}

/*
 * A value's bucket among the 2P+1: 2j holds the values between p(j-1) and
 * p(j), 2j+1 those equal to p(j).  Only buckets between pivots plo and phi
 * (plo < 0: from the bottom, phi = P: to the top) are asked for: a value
 * not strictly between them gets -1 after two comparisons, so a pass that
 * gathers a few buckets searches among the pivots only for the values near
 * them.
 */
static inline int
gs_dspill_bucket_within(DsCx *cx, Datum v, int plo, int phi)
{
	Datum		k = cx->abbrev ? cx->ssup.abbrev_converter(v, &cx->ssup) : v;
	int			lo = plo + 1,
				hi = phi;

	if (plo >= 0 && gs_dspill_cmp_pivot(cx, v, k, plo) <= 0)
		return -1;
	if (phi < cx->npiv && gs_dspill_cmp_pivot(cx, v, k, phi) >= 0)
		return -1;
	while (lo < hi)
	{
		int			mid = (lo + hi) >> 1;
		int			c = gs_dspill_cmp_pivot(cx, v, k, mid);

		if (c == 0)
			return 2 * mid + 1;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return 2 * lo;
}

static inline int
gs_dspill_bucket(DsCx *cx, Datum v)
{
	return gs_dspill_bucket_within(cx, v, -1, cx->npiv);
}

/* the marked buckets' values: those strictly between pivots plo and phi, then by their bucket */
static inline bool
gs_dspill_marked(DsCx *cx, const uint8 *mark, Datum v)
{
	int			b = gs_dspill_bucket_within(cx, v, cx->mark_plo, cx->mark_phi);

	return b >= 0 && mark[b];
}

/* what a value costs in a gather: its bytes (MAXALIGNed) and its item */
static inline Size
gs_dspill_gather_cost(const GsDatumStore *s, Datum v)
{
	return sizeof(GsDatumItem) + (s->typbyval ? 0 : MAXALIGN(gs_datum_stored_size(s, v)));
}

typedef struct DsCounts
{
	int64	   *cnt;
	Size	   *bytes;
} DsCounts;

static void
gs_dspill_visit_count(DsCx *cx, GsDatumItem *items, int64 n, void *arg)
{
	DsCounts   *dc = (DsCounts *) arg;

	for (int64 i = 0; i < n; i++)
	{
		int			b = gs_dspill_bucket(cx, items[i].val);

		dc->cnt[b]++;
		dc->bytes[b] += gs_dspill_gather_cost(cx->s, items[i].val);
	}
}

/* an answer: a copy of v in the caller's memory */
static void
gs_dspill_answer(DsCx *cx, int idx, Datum v)
{
	MemoryContext old = MemoryContextSwitchTo(cx->outcxt);

	cx->out[idx] = datumCopy(v, cx->s->typbyval, cx->s->typlen);
	MemoryContextSwitchTo(old);
}

/* ---------------- gather: the wanted buckets into memory ---------------- */

typedef struct DsGather
{
	const uint8 *mark;			/* per bucket: 1 = gather; NULL: every value */
	GsDatumItem *items;
	int64		n;
	int64		cap;
	char	   *arena;
	Size		used;
	Size		arena_cap;
} DsGather;

static void
gs_dspill_visit_gather(DsCx *cx, GsDatumItem *items, int64 n, void *arg)
{
	DsGather   *g = (DsGather *) arg;
	const GsDatumStore *s = cx->s;

	for (int64 i = 0; i < n; i++)
	{
		Datum		v = items[i].val;

		if (g->mark != NULL && !gs_dspill_marked(cx, g->mark, v))
			continue;
		if (unlikely(g->n == g->cap))
			elog(ERROR, "gpuselect: a spilled group's values changed between passes");
		if (s->typbyval)
			g->items[g->n].val = v;
		else
		{
			Size		size = gs_datum_stored_size(s, v);

			if (MAXALIGN(size) > g->arena_cap - g->used)
				elog(ERROR, "gpuselect: a spilled group's values changed between passes");
			memcpy(g->arena + g->used, DatumGetPointer(v), size);
			g->items[g->n].val = PointerGetDatum(g->arena + g->used);
			g->used += MAXALIGN(size);
		}
		g->n++;
	}
}

/*
 * Gather the values of the marked buckets (mark NULL: all of src), n of
 * them costing cost bytes, and select rk (ascending ranks among them).
 */
static void
gs_dspill_gather(DsCx *cx, const DsSource *src, const uint8 *mark, int64 n, Size cost,
				 const DsRank *rk, int nr)
{
	DsGather	g;
	SortSupportData ss;
	bool		abbrev;
	int64	   *ranks;

	g.mark = mark;
	g.n = 0;
	g.cap = n;
	g.items = (GsDatumItem *) MemoryContextAllocHuge(CurrentMemoryContext,
													 sizeof(GsDatumItem) * Max(n, 1));
	g.arena_cap = cost - (Size) n * sizeof(GsDatumItem);
	g.arena = MemoryContextAllocHuge(CurrentMemoryContext, Max(g.arena_cap, 1));
	g.used = 0;
	gs_dspill_scan(cx, src, gs_dspill_visit_gather, &g);
	if (g.n != n)
		elog(ERROR, "gpuselect: a spilled group's values changed between passes");

	/* as gs_datum_select does in memory: sort support of its own, abbreviated keys */
	memset(&ss, 0, sizeof(ss));
	ss.ssup_cxt = CurrentMemoryContext;
	ss.ssup_collation = cx->s->collation;
	ss.ssup_nulls_first = false;
	ss.abbreviate = true;
	PrepareSortSupportFromOrderingOp(cx->s->sortop, &ss);
	abbrev = gs_datum_abbreviate(g.items, n, &ss);
	ranks = (int64 *) palloc(sizeof(int64) * nr);
	for (int j = 0; j < nr; j++)
		ranks[j] = rk[j].rank;
	gs_multiselect(g.items, n, ranks, nr, &ss, abbrev);
	for (int j = 0; j < nr; j++)
		gs_dspill_answer(cx, rk[j].idx, g.items[rk[j].rank].val);
	pfree(g.items);
	pfree(g.arena);
	pfree(ranks);
}

/* ---------------- write: the wanted buckets to a smaller file ---------------- */

typedef struct DsWriter
{
	GsDFile		file;
	GsDSample	sample;
	GsDatumChunk buf;			/* packed as the store packs */
	int64		nbuf;
	const uint8 *mark;
} DsWriter;

static void
gs_dspill_writer_flush(DsWriter *w)
{
	gs_dfile_write(&w->file, w->buf.data, w->buf.used, w->nbuf);
	w->buf.used = 0;
	w->nbuf = 0;
}

static void
gs_dspill_visit_write(DsCx *cx, GsDatumItem *items, int64 n, void *arg)
{
	DsWriter   *w = (DsWriter *) arg;
	const GsDatumStore *s = cx->s;

	for (int64 i = 0; i < n; i++)
	{
		Datum		v = items[i].val;
		Size		size;
		Size		off;
		const char *bytes;

		if (!gs_dspill_marked(cx, w->mark, v))
			continue;
		size = gs_datum_stored_size(s, v);
		bytes = s->typbyval ? (const char *) &v : DatumGetPointer(v);
		off = gs_datum_align(s, w->buf.used);
		if (off + size > w->buf.cap)
		{
			gs_dspill_writer_flush(w);
			off = 0;
		}
		if (size > w->buf.cap)
			gs_dfile_write(&w->file, bytes, size, 1);	/* a record of its own */
		else
		{
			memcpy(w->buf.data + off, bytes, size);
			w->buf.used = off + size;
			w->nbuf++;
		}
		gs_dsample_add(&w->sample, s, v, size);
	}
}

/* a new file of the marked buckets' values (and a sample of them) */
static DsWriter *
gs_dspill_write(DsCx *cx, const DsSource *src, const uint8 *mark)
{
	DsWriter   *w = (DsWriter *) palloc0(sizeof(DsWriter));

	gs_dfile_open(&w->file, CurrentMemoryContext);
	gs_dsample_init(&w->sample, CurrentMemoryContext);
	w->buf.cap = gs_dspill_buffer_bytes();
	w->buf.data = palloc(w->buf.cap);
	w->mark = mark;
	gs_dspill_scan(cx, src, gs_dspill_visit_write, w);
	gs_dspill_writer_flush(w);
	pfree(w->buf.data);
	w->buf.data = NULL;
	return w;
}

static void
gs_dspill_writer_free(DsWriter *w)
{
	gs_temp_file_close(&w->file.tf);
	MemoryContextDelete(w->sample.cxt);
}

/* ---------------- many ranks: a sort ---------------- */

static void
gs_dspill_visit_sort(DsCx *cx, GsDatumItem *items, int64 n, void *arg)
{
	Tuplesortstate *ts = (Tuplesortstate *) arg;

	for (int64 i = 0; i < n; i++)
		tuplesort_putdatum(ts, items[i].val, false);
}

/*
 * The candidates sorted by PostgreSQL's tuplesort in the state's ordering
 * (within the limit, spilling itself), read off at the ranks.
 */
static void
gs_dspill_sort(DsCx *cx, const DsSource *src, const DsRank *rk, int nr)
{
	int			kb = (int) Max(gs_spill_limit_bytes() / 1024, 64);
	Tuplesortstate *ts = tuplesort_begin_datum(cx->st->typid, cx->s->sortop, cx->s->collation,
											   false, kb, NULL, TUPLESORT_NONE);
	int64		pos = 0;

	gs_dspill_scan(cx, src, gs_dspill_visit_sort, ts);
	tuplesort_performsort(ts);
	for (int j = 0; j < nr; j++)
	{
		MemoryContext old;
		Datum		v;
		bool		isnull;
		bool		got;

		CHECK_FOR_INTERRUPTS();
		if (rk[j].rank > pos && !tuplesort_skiptuples(ts, rk[j].rank - pos, true))
			elog(ERROR, "gpuselect: a spilled group's values changed between passes");
		old = MemoryContextSwitchTo(cx->outcxt);
		got = gs_tuplesort_getdatum(ts, &v, &isnull);
		MemoryContextSwitchTo(old);
		if (!got || isnull)
			elog(ERROR, "gpuselect: a spilled group's values changed between passes");
		cx->out[rk[j].idx] = v;
		pos = rk[j].rank + 1;
	}
	tuplesort_end(ts);
	cx->sorted = true;
}

/* ---------------- the levels ---------------- */

/*
 * One level over src with the pivots of sample: answers the ranks in
 * equality buckets, marks the wanted between-buckets and renumbers the
 * other ranks among their values (rk compacted; returns how many are left).
 * *wn, *wcost: the marked buckets' values and their gather cost.
 */
static int
gs_dspill_level(DsCx *cx, const DsSource *src, const GsDSample *sample, DsRank *rk, int nr,
				uint8 **mark_out, int64 *wn, Size *wcost)
{
	int			nb;
	DsCounts	dc;
	uint8	   *mark;
	int64	   *woff;
	int64		below = 0;
	int64		total = 0;
	int			b = 0;
	int			keep = 0;

	gs_dspill_pivots(cx, sample);
	nb = 2 * cx->npiv + 1;
	dc.cnt = (int64 *) palloc0(sizeof(int64) * nb);
	dc.bytes = (Size *) palloc0(sizeof(Size) * nb);
	gs_dspill_scan(cx, src, gs_dspill_visit_count, &dc);
	for (int i = 0; i < nb; i++)
		total += dc.cnt[i];
	if (total != src->n)
		elog(ERROR, "gpuselect: a spilled group's values changed between passes");

	mark = (uint8 *) palloc0(nb);
	woff = (int64 *) palloc0(sizeof(int64) * nb);
	*wn = 0;
	*wcost = 0;
	for (int j = 0; j < nr; j++)
	{
		int64		r = rk[j].rank;

		while (b < nb && below + dc.cnt[b] <= r)
			below += dc.cnt[b++];
		if (b >= nb)
			elog(ERROR, "gpuselect: rank " INT64_FORMAT " out of range", r);
		if (b & 1)
		{
			/* equal to a pivot: that is the answer (pivots are values of the group) */
			gs_dspill_answer(cx, rk[j].idx, cx->piv[b >> 1]);
			continue;
		}
		if (!mark[b])
		{
			/* bucket 2i lies between pivots i - 1 and i; ranks come in order */
			if (keep == 0)
				cx->mark_plo = b / 2 - 1;
			cx->mark_phi = b / 2;
			mark[b] = 1;
			woff[b] = *wn;
			*wn += dc.cnt[b];
			*wcost += dc.bytes[b];
		}
		rk[keep].rank = woff[b] + (r - below);
		rk[keep].idx = rk[j].idx;
		keep++;
	}
	pfree(woff);
	pfree(dc.cnt);
	pfree(dc.bytes);
	*mark_out = mark;
	return keep;
}

/*
 * The ranks rk[0..nr) (ascending, distinct) of src, whose sample is
 * sample: levels until the candidates fit a gather, or a sort.
 */
static void
gs_dspill_run(DsCx *cx, DsSource *src, const GsDSample *sample, DsRank *rk, int nr)
{
	DsWriter   *prev = NULL;
	MemoryContext level = AllocSetContextCreate(CurrentMemoryContext, "gpuselect value spill level",
												ALLOCSET_DEFAULT_SIZES);

	while (nr > 0)
	{
		MemoryContext old;
		uint8	   *mark;
		int64		wn;
		Size		wcost;
		DsWriter   *next;

		if (src->cost <= cx->budget)
		{
			gs_dspill_gather(cx, src, NULL, src->n, src->cost, rk, nr);
			break;
		}
		if (sample->n == 0 || (int64) nr * GS_DSPILL_SAMPLES_PER_RANK > sample->n)
		{
			gs_dspill_sort(cx, src, rk, nr);
			break;
		}

		old = MemoryContextSwitchTo(level);
		nr = gs_dspill_level(cx, src, sample, rk, nr, &mark, &wn, &wcost);
		if (nr > 0 && wcost <= cx->budget)
			gs_dspill_gather(cx, src, mark, wn, wcost, rk, nr);
		MemoryContextSwitchTo(old);
		if (nr == 0 || wcost <= cx->budget)
			break;

		/* too many for memory: the wanted buckets to a smaller file, and on */
		if (wn >= src->n)
			elog(ERROR, "gpuselect: a spilled group's selection made no progress");
		next = gs_dspill_write(cx, src, mark);
		if (next->file.nvals != wn)
			elog(ERROR, "gpuselect: a spilled group's values changed between passes");
		MemoryContextReset(level);
		if (prev != NULL)
			gs_dspill_writer_free(prev);
		prev = next;
		src->file = &next->file;
		src->mem = NULL;
		src->nmem = 0;
		src->n = wn;
		src->cost = wcost;
		sample = &next->sample;
	}
	MemoryContextDelete(level);
	if (prev != NULL)
		gs_dspill_writer_free(prev);
}

static int
gs_dspill_rank_cmp(const void *a, const void *b)
{
	int64		x = ((const DsRank *) a)->rank;
	int64		y = ((const DsRank *) b)->rank;

	return x < y ? -1 : x > y ? 1 : 0;
}

void
gs_datum_spill_select(GsState *st, const int64 *ranks, int nranks, Datum *out)
{
	GsDatumStore *s = st->datums;
	MemoryContext work;
	MemoryContext old;
	DsCx		cx;
	DsSource	src;
	DsRank	   *rk;
	DsRank	   *uk;
	int			nu = 0;
	instr_time	start;
	GsRunInfo	info;
	char		path[64];

	Assert(s->spill != NULL);
	INSTR_TIME_SET_CURRENT(start);
	work = AllocSetContextCreate(CurrentMemoryContext, "gpuselect value spill selection",
								 ALLOCSET_DEFAULT_SIZES);
	memset(&cx, 0, sizeof(cx));
	cx.st = st;
	cx.s = s;
	cx.outcxt = CurrentMemoryContext;
	cx.work = work;
	cx.out = out;
	old = MemoryContextSwitchTo(work);

	cx.ssup.ssup_cxt = work;
	cx.ssup.ssup_collation = s->collation;
	cx.ssup.ssup_nulls_first = false;
	cx.ssup.abbreviate = true;
	PrepareSortSupportFromOrderingOp(s->sortop, &cx.ssup);
	cx.abbrev = cx.ssup.abbrev_converter != NULL;
	/* a gather and the state's write buffer together within the limit */
	cx.budget = gs_spill_limit_bytes() - Min(gs_spill_limit_bytes() / 2, (Size) s->chunks[0].cap);

	/* distinct ranks, ascending; the repeats are copied at the end */
	rk = (DsRank *) palloc(sizeof(DsRank) * nranks);
	for (int i = 0; i < nranks; i++)
	{
		if (ranks[i] < 0 || ranks[i] >= st->nrows)
			elog(ERROR, "gpuselect: rank " INT64_FORMAT " out of range", ranks[i]);
		rk[i].rank = ranks[i];
		rk[i].idx = i;
	}
	qsort(rk, nranks, sizeof(DsRank), gs_dspill_rank_cmp);
	uk = (DsRank *) palloc(sizeof(DsRank) * nranks);
	for (int i = 0; i < nranks; i++)
		if (nu == 0 || uk[nu - 1].rank != rk[i].rank)
			uk[nu++] = rk[i];

	src.file = &s->spill->file;
	src.mem = s->chunks;
	src.nmem = s->nchunks;
	src.n = st->nrows;
	src.cost = SIZE_MAX;
	gs_dspill_run(&cx, &src, &s->spill->sample, uk, nu);

	/* a repeated rank: the answer of its first occurrence (uk kept rk's order) */
	for (int i = 1; i < nranks; i++)
		if (rk[i].rank == rk[i - 1].rank)
			out[rk[i].idx] = out[rk[i - 1].idx];

	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);

	memset(&info, 0, sizeof(info));
	info.n = st->nrows;
	info.select_ms = gs_elapsed_ms(start);
	snprintf(path, sizeof(path), "cpu (values spilled, %d passes%s)", cx.passes,
			 cx.sorted ? ", sorted" : "");
	info.path = path;
	gs_dispatch_note_run(&info, nranks, false);
}
