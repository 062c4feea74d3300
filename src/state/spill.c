/*
 * spill.c — groups larger than gpuselect.work_mem: keys in a temporary file,
 * selection in passes over it (see spill.h).
 *
 * Writing.  When state.c is about to grow a (non-partial) state past the
 * limit, every key it holds goes to a BufFile and the chunks are freed
 * (palloc'd ones, and partial states taken over from parallel workers,
 * whose memory context is deleted); from then on the state has one write
 * buffer chunk that is appended to the file whenever it is full.  Chunks
 * the state cannot free stay where they are until the end of the query:
 * the leader's arena (shared memory, freed at the end of the transaction).
 *
 * Selection, never a sort of the whole input.  Keys are order-preserving
 * unsigned integers (kernels/gs_keys.h), so their top bits bucket them in
 * order.  A histogram pass counts the keys per bucket of the next 16 bits;
 * the prefix sums name the buckets that hold the wanted ranks.  The wanted
 * buckets are gathered into memory in batches of at most the limit (one
 * pass per batch) and the CPU engine (engine_call.c) selects the ranks, moved
 * to the batch's own numbering, among them.  Wanted buckets larger than the
 * limit are refined by their next bits, all of a level's in one histogram
 * pass (a key finds its bucket by binary search over the level's
 * prefixes); so are buckets that fit but together need more than one
 * gather pass (many fractions), as long as the next histogram (at most the
 * limit, or 512 kB) gives each at least 16 buckets.  A bucket of the last
 * level holds a single key value, which is the answer without any gather
 * (all keys equal costs one pass per level).  One fraction costs 2-3 passes
 * over the file; 101 or 5001 fractions over 20M uniform float8 at 4MB cost
 * 3 and 4 (each oversized bucket refined on its own cost 49 and 62).  Only
 * where the fractions outnumber what the histogram can refine do the
 * candidates go in several gather passes, one per limit's worth.
 *
 * Resources.  The BufFile is created in the state's memory context under
 * the current resource owner; a reset callback on that context closes it
 * when the aggregate's memory goes at the end of the query.  On ERROR and
 * cancel the resource owner closes (and deletes) it: the reset callback
 * only forgets it while a transaction aborts, and where the resource owner
 * is released before the memory, a resource-release callback does the
 * same, so the file is closed exactly once (GsTempFile, spill.h: the value
 * spill's files, datum_spill.c, live by the same rules).  temp_file_limit is enforced by fd.c, with the
 * built-in's error.  Every pass checks for interrupts once per block read.
 */
#include "postgres.h"

#include "access/xact.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "base/engine_call.h"
#include "base/guc.h"
#include "service/service.h"
#include "state/service_scan.h"
#include "state/spill.h"

#define GS_SPILL_BUCKET_BITS	16
#define GS_SPILL_READ_BYTES		((Size) 256 * 1024)
#define GS_SPILL_BUFFER_MAX		((Size) 1024 * 1024)

typedef struct GsSpill
{
	GsTempFile	tf;				/* the file (tf.file) and its lifetime */
	uint64		nfile;			/* keys in the file */
	int			end_fileno;		/* where the next write goes */
	off_t		end_off;
} GsSpill;

int64		gs_states_spilled = 0;

static dlist_head gs_open_temp_files = DLIST_STATIC_INIT(gs_open_temp_files);
static bool gs_release_callback_set = false;

Size
gs_spill_limit_bytes(void)
{
	int			kb = gs_guc_work_mem >= 0 ? gs_guc_work_mem : work_mem;

	return (Size) kb * 1024;
}

bool
gs_spill_wanted(const GsState *st, Size more_bytes)
{
	Size		held = more_bytes;

	if (st->partial || st->spill != NULL)
		return false;
	for (int i = 0; i < st->nchunks; i++)
		if (!st->chunks[i].arena)
			held += (Size) st->chunks[i].cap * st->key_bytes;
	return held > gs_spill_limit_bytes();
}

static void
gs_temp_file_forget(GsTempFile *tf)
{
	tf->file = NULL;
	dlist_delete(&tf->node);
}

/*
 * Memory reset callback: the state's memory goes, and its file with it.
 * While a (sub)transaction aborts, the file is left to its resource owner,
 * which closes and deletes it without BufFileClose's flush of the last
 * buffer: that write could fail again (temp_file_limit, a full disk) and
 * raise an ERROR inside the abort.
 */
static void
gs_temp_file_release(void *arg)
{
	GsTempFile *tf = (GsTempFile *) arg;

	if (tf->file != NULL)
	{
		BufFile    *f = tf->file;

		gs_temp_file_forget(tf);
		if (IsTransactionState())
			BufFileClose(f);
	}
}

/*
 * An aborting resource owner closes its files itself (fd.c); a state whose
 * memory outlives that must not close the same file again.
 */
static void
gs_temp_file_resowner_release(ResourceReleasePhase phase, bool isCommit,
							  bool isTopLevel, void *arg)
{
	dlist_mutable_iter it;

	if (phase != RESOURCE_RELEASE_BEFORE_LOCKS || isCommit)
		return;
	dlist_foreach_modify(it, &gs_open_temp_files)
	{
		GsTempFile *tf = dlist_container(GsTempFile, node, it.cur);

		if (tf->owner == CurrentResourceOwner)
			gs_temp_file_forget(tf);
	}
}

void
gs_temp_file_open(GsTempFile *tf, MemoryContext mcxt)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	BufFile    *file = BufFileCreateTemp(false);

	MemoryContextSwitchTo(old);
	gs_temp_file_adopt(tf, mcxt, file);
}

void
gs_temp_file_adopt(GsTempFile *tf, MemoryContext mcxt, BufFile *file)
{
	if (!gs_release_callback_set)
	{
		RegisterResourceReleaseCallback(gs_temp_file_resowner_release, NULL);
		gs_release_callback_set = true;
	}
	memset(tf, 0, sizeof(*tf));
	tf->file = file;
	tf->owner = CurrentResourceOwner;
	dlist_push_head(&gs_open_temp_files, &tf->node);
	tf->cb.func = gs_temp_file_release;
	tf->cb.arg = tf;
	MemoryContextRegisterResetCallback(mcxt, &tf->cb);
}

void
gs_temp_file_close(GsTempFile *tf)
{
	gs_temp_file_release(tf);
}

void
gs_temp_file_seek(GsTempFile *tf, int fileno, off_t off)
{
	if (BufFileSeek(tf->file, fileno, off, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("gpuselect: could not seek in a temporary file: %m")));
}

void
gs_temp_file_read(GsTempFile *tf, void *buf, size_t bytes)
{
	if (BufFileRead(tf->file, buf, bytes) != bytes)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("gpuselect: could not read a temporary file: %m")));
}

static void
gs_spill_write(GsSpill *sp, const char *keys, uint64 n, int key_bytes)
{
	if (n == 0)
		return;
	gs_temp_file_seek(&sp->tf, sp->end_fileno, sp->end_off);
	BufFileWrite(sp->tf.file, (void *) keys, (size_t) n * key_bytes);
	BufFileTell(sp->tf.file, &sp->end_fileno, &sp->end_off);
	sp->nfile += n;
}

/* the write buffer: a quarter of the limit, at most 1 MB */
static uint64
gs_spill_buffer_keys(const GsState *st)
{
	Size		bytes = Min(gs_spill_limit_bytes() / 4, GS_SPILL_BUFFER_MAX);

	return Max(bytes / st->key_bytes, 1024);
}

GsChunk *
gs_spill_start(GsState *st)
{
	GsSpill    *sp;
	GsChunk    *c;

	Assert(!st->partial && st->spill == NULL);
	sp = (GsSpill *) MemoryContextAllocZero(st->mcxt, sizeof(GsSpill));
	gs_temp_file_open(&sp->tf, st->mcxt);
	st->spill = sp;
	gs_states_spilled++;

	/* every key held so far goes to the file; free what is ours to free */
	for (int i = 0; i < st->nchunks; i++)
	{
		GsChunk    *k = &st->chunks[i];

		CHECK_FOR_INTERRUPTS();
		gs_spill_write(sp, k->data, k->n, st->key_bytes);
		if (k->owned != NULL)
			MemoryContextDelete(k->owned);	/* a worker's taken-over keys */
		else if (!k->arena && k->pool_ref == 0)
			pfree(k->data);
	}
	/* the group ends on the CPU: its key-pool chunks go back at once */
	gs_service_scan_release(st);

	/* one chunk from now on: the write buffer */
	st->nchunks = 1;
	c = &st->chunks[0];
	memset(c, 0, sizeof(*c));
	c->cap = gs_spill_buffer_keys(st);
	c->data = MemoryContextAlloc(st->mcxt, (Size) c->cap * st->key_bytes);
	return c;
}

GsChunk *
gs_spill_flush(GsState *st)
{
	GsChunk    *c = &st->chunks[0];

	Assert(st->spill != NULL && st->nchunks == 1);
	gs_spill_write(st->spill, c->data, c->n, st->key_bytes);
	c->n = 0;
	return c;
}

/* ---------------- selection ---------------- */

/* a wanted rank, relative to the keys of the current prefix */
typedef struct SpillRank
{
	uint64		rank;
	int			idx;			/* into the caller's ranks / out_keys */
} SpillRank;

/*
 * A set of keys of one level: those whose top pbits bits are prefix; its
 * wanted ranks are rk[first .. first + nr - 1], relative to the set.
 */
typedef struct SpillNode
{
	uint64		prefix;
	int			first;
	int			nr;
} SpillNode;

/* a wanted bucket of a node */
typedef struct SpillBucket
{
	int			node;
	uint32		b;				/* bucket number in its node */
	uint64		count;			/* keys in it */
	int			first;			/* its ranks: rk[first .. first + nr - 1] */
	int			nr;
} SpillBucket;

/*
 * One level: the nodes (sorted by prefix, all of pbits bits), each bucketed
 * by its next bb bits in one pass.
 */
typedef struct SpillLevel
{
	const SpillNode *nodes;
	int			nnodes;
	int			pbits;
	int			bb;
	int			shift;
	uint64		nb;
} SpillLevel;

typedef struct SpillCx
{
	GsState    *st;
	int			kbits;
	uint64		budget;			/* candidate keys one gather may hold */
	char	   *readbuf;
	uint64	   *out_keys;
	int			passes;
	int			polls;			/* for gpuselect.test_cancel_at_poll */
} SpillCx;

/*
 * Once per block read.  The test hook gpuselect.test_cancel_at_poll makes
 * the Nth poll of a spilled selection find a cancel request, as the
 * engines' polls do (engine_call.c), so a test can cancel in a given pass.
 */
static void
spill_poll(SpillCx *cx)
{
	if (unlikely(gs_guc_test_cancel_at_poll > 0) && ++cx->polls == gs_guc_test_cancel_at_poll)
	{
		QueryCancelPending = true;
		InterruptPending = true;
	}
	CHECK_FOR_INTERRUPTS();
}

typedef void (*SpillVisit) (SpillCx *cx, const SpillLevel *lv, const char *keys,
							uint64 n, void *arg);

/* one pass: every key of the state, file first, then the write buffer */
static void
spill_scan(SpillCx *cx, const SpillLevel *lv, SpillVisit visit, void *arg)
{
	GsState    *st = cx->st;
	GsSpill    *sp = st->spill;
	uint64		left = sp->nfile;
	uint64		per = GS_SPILL_READ_BYTES / st->key_bytes;

	cx->passes++;
	gs_temp_file_seek(&sp->tf, 0, 0);
	while (left > 0)
	{
		uint64		n = Min(left, per);

		spill_poll(cx);
		gs_temp_file_read(&sp->tf, cx->readbuf, (size_t) n * st->key_bytes);
		visit(cx, lv, cx->readbuf, n, arg);
		left -= n;
	}
	for (int i = 0; i < st->nchunks; i++)
		visit(cx, lv, st->chunks[i].data, st->chunks[i].n, arg);
}

/* BODY once per key k (widened to uint64; i_ its index), per key width */
#define SPILL_FOR_KEYS(KEYS, N, KB, BODY) \
	do { \
		switch (KB) \
		{ \
			case 2: for (uint64 i_ = 0; i_ < (N); i_++) { uint64 k = ((const uint16 *) (KEYS))[i_]; BODY; } break; \
			case 4: for (uint64 i_ = 0; i_ < (N); i_++) { uint64 k = ((const uint32 *) (KEYS))[i_]; BODY; } break; \
			default: for (uint64 i_ = 0; i_ < (N); i_++) { uint64 k = ((const uint64 *) (KEYS))[i_]; BODY; } break; \
		} \
	} while (0)

/* the node of key k at level lv (pshift = kbits - pbits), or -1 */
static inline int
spill_node_of(const SpillLevel *lv, int pshift, uint64 k)
{
	uint64		p;
	int			lo = 0,
				hi = lv->nnodes - 1;

	if (lv->pbits == 0)
		return 0;
	p = k >> pshift;
	if (p < lv->nodes[0].prefix || p > lv->nodes[hi].prefix)
		return -1;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (lv->nodes[mid].prefix < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lv->nodes[lo].prefix == p ? lo : -1;
}

static void
spill_visit_hist(SpillCx *cx, const SpillLevel *lv, const char *keys, uint64 n, void *arg)
{
	uint64	   *hist = (uint64 *) arg;
	uint64		mask = lv->nb - 1;
	int			pshift = cx->kbits - lv->pbits;

	if (lv->pbits == 0)
		SPILL_FOR_KEYS(keys, n, cx->st->key_bytes, hist[(k >> lv->shift) & mask]++);
	else if (lv->nnodes == 1)
		SPILL_FOR_KEYS(keys, n, cx->st->key_bytes,
					   if ((k >> pshift) == lv->nodes[0].prefix) hist[(k >> lv->shift) & mask]++);
	else
		SPILL_FOR_KEYS(keys, n, cx->st->key_bytes,
					   int nd = spill_node_of(lv, pshift, k);
					   if (nd >= 0) hist[(uint64) nd * lv->nb + ((k >> lv->shift) & mask)]++);
}

typedef struct SpillGather
{
	const uint8 *mark;			/* per node and bucket: 1 = gather */
	char	   *cand;
	uint64		ncand;
	uint64		cap;
} SpillGather;

static void
spill_visit_gather(SpillCx *cx, const SpillLevel *lv, const char *keys, uint64 n, void *arg)
{
	SpillGather *g = (SpillGather *) arg;
	uint64		mask = lv->nb - 1;
	int			pshift = cx->kbits - lv->pbits;
	int			kb = cx->st->key_bytes;

	SPILL_FOR_KEYS(keys, n, kb,
				   int nd = spill_node_of(lv, pshift, k);
				   if (nd >= 0 && g->mark[(uint64) nd * lv->nb + ((k >> lv->shift) & mask)])
				   {
					   if (unlikely(g->ncand == g->cap))
						   elog(ERROR, "gpuselect: a spilled group's keys changed between passes");
					   memcpy(g->cand + g->ncand * kb, (const char *) keys + i_ * kb, kb);
					   g->ncand++;
				   });
}

/*
 * Gather the buckets bk[0..nbk-1] (in key order, total keys total) into
 * memory and select their ranks there with the CPU engine.
 */
static void
spill_gather(SpillCx *cx, const SpillLevel *lv, const SpillBucket *bk, int nbk,
			 uint64 total, SpillRank *rk)
{
	SpillGather g;
	uint8	   *mark;
	gs_segment	seg;
	gs_input	in;
	uint64	   *ranks;
	uint64	   *keys;
	int			nr = 0;
	uint64		below = 0;

	if (nbk == 0)
		return;
	mark = (uint8 *) palloc0((Size) lv->nnodes * lv->nb);
	for (int i = 0; i < nbk; i++)
	{
		mark[(uint64) bk[i].node * lv->nb + bk[i].b] = 1;
		nr += bk[i].nr;
	}
	g.mark = mark;
	g.cap = total;
	g.ncand = 0;
	g.cand = MemoryContextAllocHuge(CurrentMemoryContext, (Size) Max(total, 1) * cx->st->key_bytes);
	spill_scan(cx, lv, spill_visit_gather, &g);
	if (g.ncand != total)
		elog(ERROR, "gpuselect: a spilled group's keys changed between passes");
	pfree(mark);

	/* the ranks in the candidates' own numbering: buckets are in key order */
	ranks = (uint64 *) palloc(sizeof(uint64) * nr);
	keys = (uint64 *) palloc(sizeof(uint64) * nr);
	nr = 0;
	for (int i = 0; i < nbk; i++)
	{
		for (int j = 0; j < bk[i].nr; j++)
			ranks[nr++] = below + rk[bk[i].first + j].rank;
		below += bk[i].count;
	}

	seg.keys = g.cand;
	seg.n = (size_t) g.ncand;
	in.segs = &seg;
	in.nsegs = 1;
	in.key_bytes = cx->st->key_bytes;
	gs_dispatch_cpu_exact(&in, ranks, nr, keys);

	nr = 0;
	for (int i = 0; i < nbk; i++)
		for (int j = 0; j < bk[i].nr; j++)
			cx->out_keys[rk[bk[i].first + j].idx] = keys[nr++];
	pfree(g.cand);
	pfree(ranks);
	pfree(keys);
}

/*
 * Select the ranks of nodes[0..nnodes-1] (sorted by prefix, each prefix of
 * pbits bits): one histogram pass for all of them, gather passes for the
 * wanted buckets that fit, and one next level for all that do not.
 */
static void
spill_level(SpillCx *cx, int pbits, const SpillNode *nodes, int nnodes, SpillRank *rk)
{
	SpillLevel	lv;
	uint64	   *hist;
	SpillBucket *bk;
	SpillNode  *next;
	int			nbk = 0;
	int			nnext = 0;
	int			ngather = 0;
	int			nr = 0;
	bool		refine_all = false;
	int			batch_first = 0;
	uint64		batch_total = 0;
	/* the histogram of all nodes in at most the limit (or 512 kB) */
	Size		hist_max = Max((Size) 512 * 1024, (Size) cx->budget * cx->st->key_bytes);

	lv.nodes = nodes;
	lv.nnodes = nnodes;
	lv.pbits = pbits;
	lv.bb = Min(GS_SPILL_BUCKET_BITS, cx->kbits - pbits);
	while (lv.bb > 1 && (Size) nnodes * ((Size) 1 << lv.bb) * sizeof(uint64) > hist_max)
		lv.bb--;
	lv.shift = cx->kbits - pbits - lv.bb;
	lv.nb = UINT64CONST(1) << lv.bb;

	hist = (uint64 *) MemoryContextAllocHuge(CurrentMemoryContext,
											 (Size) nnodes * lv.nb * sizeof(uint64));
	memset(hist, 0, (Size) nnodes * lv.nb * sizeof(uint64));
	spill_scan(cx, &lv, spill_visit_hist, hist);

	/* each node's buckets holding wanted ranks; ranks become bucket-relative */
	for (int d = 0; d < nnodes; d++)
		nr += nodes[d].nr;
	bk = (SpillBucket *) palloc(sizeof(SpillBucket) * nr);
	for (int d = 0; d < nnodes; d++)
	{
		const uint64 *h = hist + (uint64) d * lv.nb;
		uint64		below = 0;
		int			j = nodes[d].first;
		int			end = nodes[d].first + nodes[d].nr;

		for (uint64 b = 0; b < lv.nb && j < end; b++)
		{
			if (rk[j].rank < below + h[b])
			{
				SpillBucket *w = &bk[nbk++];

				w->node = d;
				w->b = (uint32) b;
				w->count = h[b];
				w->first = j;
				w->nr = 0;
				while (j < end && rk[j].rank < below + h[b])
				{
					rk[j].rank -= below;
					w->nr++;
					j++;
				}
			}
			below += h[b];
		}
		if (j < end)
			elog(ERROR, "gpuselect: a spilled group's keys changed between passes");
	}
	pfree(hist);

	/*
	 * Buckets that fit but together need more than one gather pass (many
	 * fractions) are refined too, when the next level's histogram can give
	 * each of them 16 buckets or more: one histogram pass then replaces a
	 * gather pass per limit's worth of candidates.
	 */
	if (lv.shift != 0)
	{
		uint64		small_total = 0;

		for (int i = 0; i < nbk; i++)
			if (bk[i].count <= cx->budget)
				small_total += bk[i].count;
		refine_all = small_total > cx->budget &&
			(Size) nbk * 16 * sizeof(uint64) <= hist_max;
	}

	/* answer last-level buckets, set large ones aside, gather the rest */
	next = (SpillNode *) palloc(sizeof(SpillNode) * Max(nbk, 1));
	for (int i = 0; i < nbk; i++)
	{
		SpillBucket *w = &bk[i];
		uint64		key = (nodes[w->node].prefix << lv.bb) | w->b;

		if (lv.shift == 0)
		{
			/* a bucket of the last level is one key value */
			for (int r = 0; r < w->nr; r++)
				cx->out_keys[rk[w->first + r].idx] = key;
		}
		else if (w->count > cx->budget || refine_all)
		{
			/* too large to gather (or too many): the next level refines it */
			next[nnext].prefix = key;
			next[nnext].first = w->first;
			next[nnext].nr = w->nr;
			nnext++;
		}
		else
			bk[ngather++] = *w;	/* compacted in place, still in key order */
	}
	/* batches of at most the limit, one gather pass each */
	for (int i = 0; i < ngather; i++)
	{
		if (i > batch_first && batch_total + bk[i].count > cx->budget)
		{
			spill_gather(cx, &lv, bk + batch_first, i - batch_first, batch_total, rk);
			batch_first = i;
			batch_total = 0;
		}
		batch_total += bk[i].count;
	}
	spill_gather(cx, &lv, bk + batch_first, ngather - batch_first, batch_total, rk);
	pfree(bk);

	if (nnext > 0)
		spill_level(cx, pbits + lv.bb, next, nnext, rk);
	pfree(next);
}

static int
spill_rank_cmp(const void *a, const void *b)
{
	uint64		x = ((const SpillRank *) a)->rank;
	uint64		y = ((const SpillRank *) b)->rank;

	return x < y ? -1 : x > y ? 1 : 0;
}

void
gs_spill_select(GsState *st, const uint64 *ranks, int nranks,
				uint64 *out_keys, int *passes)
{
	SpillCx		cx;
	SpillRank  *rk;
	SpillNode	top;
	Size		limit = gs_spill_limit_bytes();
	Size		buffer = (Size) st->chunks[0].cap * st->key_bytes;

	Assert(st->spill != NULL && st->spill->tf.file != NULL);
	cx.st = st;
	cx.kbits = st->key_bytes * 8;
	/* candidates and the write buffer together within the limit */
	cx.budget = Max((limit > buffer ? limit - buffer : 0) / st->key_bytes, 1024);
	cx.readbuf = palloc(GS_SPILL_READ_BYTES);
	cx.out_keys = out_keys;
	cx.passes = 0;
	cx.polls = 0;

	rk = (SpillRank *) palloc(sizeof(SpillRank) * nranks);
	for (int i = 0; i < nranks; i++)
	{
		if (ranks[i] >= (uint64) st->nrows)
			elog(ERROR, "gpuselect: rank out of range");
		rk[i].rank = ranks[i];
		rk[i].idx = i;
	}
	qsort(rk, nranks, sizeof(SpillRank), spill_rank_cmp);

	top.prefix = 0;
	top.first = 0;
	top.nr = nranks;
	spill_level(&cx, 0, &top, 1, rk);

	pfree(rk);
	pfree(cx.readbuf);
	*passes = cx.passes;
}
