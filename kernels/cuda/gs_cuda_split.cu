/*
 * gs_cuda_split.cu — exact selection of keys in host memory that need not
 * fit a device, over one device or several (gs_cuda_select_split in
 * gs_cuda.h; issue 35: a group larger than one device's memory).
 *
 * The reductions-only exchange of the SampleSelect and cutting-plane
 * papers, with radix digits for splitters (so that no sample is needed and
 * skew costs passes, never answers), level by level:
 *
 *   count   every device streams its share of the keys (batches of whole
 *           segments or pieces, dealt round robin) and counts them by the
 *           next digit under each of the level's prefixes (one per group of
 *           ranks still open; 12-bit digits for up to two prefixes, fewer
 *           bits for more, so that one pass counts them all:
 *           gs_pass_digits.cuh); the host adds the devices' bins and finds
 *           each wanted rank's digit
 *   narrow  a digit whose keys fit the budget is gathered; a larger one's
 *           prefix and digit become a prefix of the next level; a digit at
 *           the key's last bit is the answer itself
 *   gather  the devices stream their shares again and append the keys of
 *           every wanted digit of the level to candidate buffers, which go
 *           to the first device; gs_cuda_select answers the ranks there
 *
 * So typically two passes over the data (count, gather) across the
 * devices' copy engines together, a count more for each level where a
 * digit still holds more keys than the budget (float keys' first 12 bits
 * are sign and exponent: a small budget costs them a level).  Only the
 * counts and the candidates travel.
 *
 * The caller holds every engine for the call (an engine is one thread's at
 * a time), passes keys that do not change during it, and page-locks them
 * for full speed (pageable memory works, at the driver's staging speed).
 * Each device uses at most `budget` bytes: two staging buffers, its
 * candidates, and on the first device all candidates and the selection's
 * scratch.  Nothing here throws, aborts or prints; every wait polls
 * opt->interrupt; everything allocated is freed on every return.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime.h>

#include "gs_cuda_internal.h"
#include "gs_pass_digits.cuh"

#define GS_SPLIT_MAX_DEVICES 16
#define GS_SPLIT_STAGE_MAX ((size_t) 64 << 20)	/* 1.2 ms of PCIe a batch */
#define GS_SPLIT_THREADS 512
#define WANTED(want, b) ((((want)[(b) >> 5]) >> ((b) & 31)) & 1u)

typedef struct split_dev
{
	gs_cuda_engine *e;
	cudaStream_t st[2];			/* batches alternate: copy of one, count of the other */
	void	   *stage[2];
	gs_ull	   *d_bins;			/* a pass's counts, then the gather's count */
	gs_ull	   *d_prefix;		/* the pass's prefixes */
	unsigned   *d_want;			/* the gather's bins, a bitmap */
	gs_ull	   *bins;			/* host: this device's share of the last count */
	void	   *d_cand;			/* this device's gathered keys (device 0: all of them) */
	size_t		cand_bytes;
	int			grid;
} split_dev;

typedef struct split_ctx
{
	split_dev	dev[GS_SPLIT_MAX_DEVICES];
	int			ndev;
	const gs_input *in;
	unsigned	kb;				/* input key bytes: 2, 4, 8 */
	unsigned	kbo;			/* candidate key bytes: 4, 8 (2-byte keys widen) */
	size_t		stage_keys;
	size_t		cand_limit;		/* most candidates one gather may take */
	const gs_options *opt;
	gs_split_stats *stats;
	gs_error   *err;
} split_ctx;

/* one wanted rank: its place in the caller's arrays, its rank among the
 * keys under its current prefix, its digit there */
typedef struct split_item
{
	size_t		idx;
	uint64_t	r;
	unsigned	digit;
} split_item;

/* one prefix of a level: the items [lo, hi) whose keys share it */
typedef struct split_task
{
	gs_ull		prefix;
	size_t		lo,
				hi;
} split_task;

/* one pass's view of a level: its digit and its prefixes */
typedef struct split_pass_of
{
	gs_digit_level lv;
	const split_task *tasks;	/* lv.nprefix of them, by prefix */
	int			width;
} split_pass_of;

static gs_status
set_device(split_dev *d, gs_error *err)
{
	cudaError_t ce = cudaSetDevice(d->e->dev);

	return ce == cudaSuccess ? GS_OK : gs_cuda_fail(err, ce, "cudaSetDevice");
}

/* waits for every device's streams, polling the interrupt hook */
static gs_status
split_wait(split_ctx *c)
{
	for (;;)
	{
		bool		busy = false;

		for (int i = 0; i < c->ndev; i++)
			for (int s = 0; s < 2; s++)
			{
				cudaError_t ce = cudaStreamQuery(c->dev[i].st[s]);

				if (ce == cudaErrorNotReady)
					busy = true;
				else if (ce != cudaSuccess)
					return gs_cuda_fail(c->err, ce, "split selection pass");
			}
		if (!busy)
			return GS_OK;
		if (gs_check_interrupt(c->opt, c->err) != GS_OK)
			return GS_ERR_CANCELED;
		usleep(100);
	}
}

/*
 * Before a pass, on every device: zero the bins and the gather's count,
 * send the prefixes and (gather) the wanted bins; on the call's own
 * non-blocking stream, which the legacy default stream of a plain
 * cudaMemset / cudaMemcpy would not order with.
 */
static gs_status
split_prepare(split_ctx *c, const split_pass_of *ps, const unsigned *want)
{
	gs_ull		prefix[GS_DIGIT_PREFIXES_MAX];
	const int	nb = ps->lv.nprefix << ps->width;

	for (int t = 0; t < ps->lv.nprefix; t++)
		prefix[t] = ps->tasks[t].prefix;
	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];
		cudaStream_t s = d->st[0];
		cudaError_t ce;

		if (set_device(d, c->err) != GS_OK)
			return GS_ERR_DEVICE;
		ce = cudaMemsetAsync(d->d_bins, 0, (GS_DIGIT_BINS_MAX + 1) * sizeof(gs_ull), s);
		if (ce == cudaSuccess)
			ce = cudaMemcpyAsync(d->d_prefix, prefix, ps->lv.nprefix * sizeof(gs_ull), cudaMemcpyHostToDevice, s);
		if (ce == cudaSuccess && want)
			ce = cudaMemcpyAsync(d->d_want, want, (nb + 31) / 32 * sizeof(unsigned), cudaMemcpyHostToDevice, s);
		if (ce == cudaSuccess)
			ce = cudaStreamSynchronize(s);
		if (ce != cudaSuccess)
			return gs_cuda_fail(c->err, ce, "split selection pass setup");
	}
	return GS_OK;
}

/*
 * One pass over the input: batches of up to stage_keys keys (whole
 * segments, or pieces of a larger one) are copied into a staging buffer of
 * device b % ndev and counted (want == NULL) or gathered.
 */
template <typename K, typename KO>
static gs_status
split_pass(split_ctx *c, const split_pass_of *ps, const unsigned *want)
{
	const gs_input *in = c->in;
	const size_t pre_bytes = ps->lv.nprefix * sizeof(gs_ull);
	const size_t count_smem = pre_bytes + ((size_t) ps->lv.nprefix << ps->width) * sizeof(unsigned);
	size_t		si = 0,
				off = 0;
	long		b = 0;
	gs_status	rc;

	if ((rc = split_prepare(c, ps, want)) != GS_OK)
		return rc;
	while (si < in->nsegs)
	{
		split_dev  *d = &c->dev[b % c->ndev];
		cudaStream_t s = d->st[(b / c->ndev) & 1];
		char	   *stage = (char *) d->stage[(b / c->ndev) & 1];
		size_t		filled = 0;

		if ((rc = set_device(d, c->err)) != GS_OK)
			return rc;
		while (si < in->nsegs && filled < c->stage_keys)
		{
			size_t		take = in->segs[si].n - off;

			if (take > c->stage_keys - filled)
				take = c->stage_keys - filled;
			if (take > 0)
			{
				cudaError_t ce = cudaMemcpyAsync(stage + filled * c->kb,
												 (const char *) in->segs[si].keys + off * c->kb,
												 take * c->kb, cudaMemcpyHostToDevice, s);

				if (ce != cudaSuccess)
					return gs_cuda_fail(c->err, ce, "split selection copy");
				filled += take;
				off += take;
			}
			if (off == in->segs[si].n)
			{
				si++;
				off = 0;
			}
		}
		if (filled == 0)
			break;
		if (want)
			k_digit_gather<K, KO><<<d->grid, GS_SPLIT_THREADS, pre_bytes, s>>>(
				(const K *) stage, filled, ps->lv, d->d_prefix, d->d_want, (KO *) d->d_cand,
				d->d_bins + GS_DIGIT_BINS_MAX, d->cand_bytes / sizeof(KO));
		else
			k_digit_count<K><<<d->grid, GS_SPLIT_THREADS, count_smem, s>>>((const K *) stage, filled, ps->lv,
																	   d->d_prefix, d->d_bins);
		cudaError_t ce = cudaGetLastError();

		if (ce != cudaSuccess)
			return gs_cuda_fail(c->err, ce, "split selection launch");
		c->stats->bytes_read += filled * c->kb;
		b++;
		if ((rc = gs_check_interrupt(c->opt, c->err)) != GS_OK)
			return rc;
	}
	return split_wait(c);
}

/* counts the pass's keys by prefix and digit: c->dev[i].bins, summed into total */
template <typename K, typename KO>
static gs_status
split_count(split_ctx *c, const split_pass_of *ps, gs_ull *total)
{
	const int	nb = ps->lv.nprefix << ps->width;
	gs_status	rc;

	if ((rc = split_pass<K, KO>(c, ps, NULL)) != GS_OK)
		return rc;
	memset(total, 0, nb * sizeof(gs_ull));
	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];
		cudaError_t ce;

		if ((rc = set_device(d, c->err)) != GS_OK)
			return rc;
		ce = cudaMemcpy(d->bins, d->d_bins, nb * sizeof(gs_ull), cudaMemcpyDeviceToHost);
		if (ce != cudaSuccess)
			return gs_cuda_fail(c->err, ce, "split selection counts");
		for (int k = 0; k < nb; k++)
			total[k] += d->bins[k];
	}
	c->stats->count_passes++;
	return GS_OK;
}

static void
split_free_candidates(split_ctx *c)
{
	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];

		if (d->d_cand)
		{
			(void) cudaSetDevice(d->e->dev);
			gs_dev_free_internal(d->e, d->d_cand, d->cand_bytes);
			(void) cudaStreamSynchronize(d->e->s);
		}
		d->d_cand = NULL;
		d->cand_bytes = 0;
	}
}

/* each device's candidate buffer: device 0 all ncand, the others their share */
static gs_status
split_alloc_candidates(split_ctx *c, size_t ncand, const size_t *share, size_t kbo)
{
	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];
		size_t		bytes = (i == 0 ? ncand : share[i]) * kbo;
		gs_status	rc;

		if ((rc = set_device(d, c->err)) != GS_OK ||
			(rc = gs_dev_alloc_internal(d->e, bytes, &d->d_cand, c->err)) != GS_OK)
			return rc;
		d->cand_bytes = bytes;
		if (cudaStreamSynchronize(d->e->s) != cudaSuccess)
			return gs_cuda_fail(c->err, cudaGetLastError(), "split selection candidates");
	}
	return GS_OK;
}

/* every device found its share (keys changed under the call would not add
 * up), and sends it after device 0's, on device 0's stream */
template <typename KO>
static gs_status
split_collect_candidates(split_ctx *c, const size_t *share)
{
	size_t		at0 = share[0];

	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];
		gs_ull		got = 0;
		cudaError_t ce;

		(void) set_device(d, c->err);
		ce = cudaMemcpy(&got, d->d_bins + GS_DIGIT_BINS_MAX, sizeof got, cudaMemcpyDeviceToHost);
		if (ce != cudaSuccess)
			return gs_cuda_fail(c->err, ce, "split selection gather count");
		if (got != share[i])
			return gs_fail(c->err, GS_ERR_INVALID, "split selection: device %d gathered %llu keys where it "
						   "counted %zu (the keys changed during the call)", i, (unsigned long long) got, share[i]);
		if (i > 0 && share[i] > 0)
		{
			ce = cudaMemcpyPeerAsync((KO *) c->dev[0].d_cand + at0, c->dev[0].e->dev, d->d_cand, d->e->dev,
									 share[i] * sizeof(KO), c->dev[0].st[0]);
			if (ce == cudaSuccess)
				ce = cudaStreamSynchronize(c->dev[0].st[0]);
			if (ce != cudaSuccess)
				return gs_cuda_fail(c->err, ce, "split selection candidates to device 0");
			at0 += share[i];
		}
	}
	return GS_OK;
}

/*
 * Gathers the keys of the bins set in want (each device's share known
 * from its bins of the count just made) onto device 0, in any order, and
 * answers the pass's items whose bin is wanted: a bin's keys sit among the
 * candidates after those of every wanted bin before it (bins run in key
 * order: prefixes ascending, then digits).
 */
template <typename K, typename KO>
static gs_status
split_gather(split_ctx *c, const split_pass_of *ps, const unsigned *want, const gs_ull *total,
			 const split_item *items, uint64_t *out_keys)
{
	const int	nb = ps->lv.nprefix << ps->width;
	const size_t lo = ps->tasks[0].lo,
				hi = ps->tasks[ps->lv.nprefix - 1].hi;
	size_t		ncand = 0,
				m = 0,
				share[GS_SPLIT_MAX_DEVICES];
	gs_ull	   *below = (gs_ull *) malloc(nb * sizeof(gs_ull));
	uint64_t   *cranks = (uint64_t *) malloc((hi - lo) * sizeof(uint64_t));
	uint64_t   *ckeys = (uint64_t *) malloc((hi - lo) * sizeof(uint64_t));
	gs_status	rc = GS_OK;

	if (!below || !cranks || !ckeys)
		rc = gs_fail(c->err, GS_ERR_NOMEM, "split selection: out of host memory");
	for (int i = 0; rc == GS_OK && i < c->ndev; i++)
	{
		share[i] = 0;
		for (int b = 0; b < nb; b++)
			if (WANTED(want, b))
				share[i] += c->dev[i].bins[b];
	}
	for (int b = 0; rc == GS_OK && b < nb; b++)
	{
		below[b] = ncand;
		if (WANTED(want, b))
			ncand += total[b];
	}
	if (rc == GS_OK)
		rc = split_alloc_candidates(c, ncand, share, sizeof(KO));
	if (rc == GS_OK)
		rc = split_pass<K, KO>(c, ps, want);
	if (rc == GS_OK)
		rc = split_collect_candidates<KO>(c, share);
	c->stats->gather_passes++;
	c->stats->candidates += ncand;
	if (rc == GS_OK)
	{
		/* the pass's tasks hold ascending, disjoint item ranges within [lo, hi) */
		for (int t = 0; t < ps->lv.nprefix; t++)
			for (size_t j = ps->tasks[t].lo; j < ps->tasks[t].hi; j++)
			{
				const unsigned b = ((unsigned) t << ps->width) | items[j].digit;

				if (WANTED(want, b))
					cranks[m++] = below[b] + items[j].r;
			}
		rc = gs_cuda_select(c->dev[0].e, c->dev[0].d_cand, ncand, c->kbo, cranks, m, ckeys, c->opt, c->err);
		m = 0;
		for (int t = 0; rc == GS_OK && t < ps->lv.nprefix; t++)
			for (size_t j = ps->tasks[t].lo; j < ps->tasks[t].hi; j++)
				if (WANTED(want, ((unsigned) t << ps->width) | items[j].digit))
					out_keys[items[j].idx] = ckeys[m++];
	}
	free(below);
	free(cranks);
	free(ckeys);
	split_free_candidates(c);
	return rc;
}

static int
item_by_digit(const void *a, const void *b)
{
	const split_item *x = (const split_item *) a,
			   *y = (const split_item *) b;

	if (x->digit != y->digit)
		return x->digit < y->digit ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Each of a task's items: its digit under the task's nb bins, its rank
 * within that digit's keys; the items sorted by digit.
 */
static void
split_place(split_item *items, const split_task *t, const gs_ull *bins, int nb)
{
	gs_ull		cum[1 << GS_DIGIT_BITS];
	gs_ull		sum = 0;

	for (int k = 0; k < nb; k++)
	{
		cum[k] = sum;
		sum += bins[k];
	}
	for (size_t j = t->lo; j < t->hi; j++)
	{
		int			a = 0,
					z = nb - 1;

		/* the last digit whose keys start at or below the rank */
		while (a < z)
		{
			int			mid = (a + z + 1) / 2;

			if (cum[mid] <= items[j].r)
				a = mid;
			else
				z = mid - 1;
		}
		items[j].digit = (unsigned) a;
		items[j].r -= cum[a];
	}
	qsort(items + t->lo, t->hi - t->lo, sizeof *items, item_by_digit);
}

/* a level's digit: 12 bits, fewer where the key ends or many prefixes share a pass */
static int
split_width(int KB, int bits_done, int ntasks)
{
	int			w = KB - bits_done < GS_DIGIT_BITS ? KB - bits_done : GS_DIGIT_BITS;
	int			per = ntasks < GS_DIGIT_PREFIXES_MAX ? ntasks : GS_DIGIT_PREFIXES_MAX;

	while (w > 1 && ((size_t) per << w) > GS_DIGIT_BINS_MAX)
		w--;
	return w;
}

/*
 * One pass's worth of a level's prefixes: count, place, and per digit
 * holding wanted ranks answer it (the key's last digit), make it a prefix
 * of the next level, or gather it.  A digit goes to the next level when it
 * holds more keys than one gather may take, and so do all the level's
 * digits when together they do (one more count of every one of them, in
 * one pass, costs less than a gather pass per budget's worth) or when one
 * of them goes anyway (the next level's count and gather then take them
 * along: no gather pass of their own).
 */
template <typename K, typename KO>
static gs_status
split_level_pass(split_ctx *c, const split_pass_of *ps, split_item *items, gs_ull *total, unsigned *want,
				 split_task *next, int *nnext, uint64_t *out_keys)
{
	const int	nb = ps->lv.nprefix << ps->width;
	gs_ull		gatherable = 0;
	bool		deeper = false,
				defer,
				any = false;
	gs_status	rc;

	if ((rc = split_count<K, KO>(c, ps, total)) != GS_OK)
		return rc;
	for (int t = 0; t < ps->lv.nprefix; t++)
		split_place(items, &ps->tasks[t], total + ((size_t) t << ps->width), 1 << ps->width);
	for (int pass = 0; pass < 2; pass++)
	{
		defer = ps->lv.shift > 0 && (deeper || gatherable > c->cand_limit);
		memset(want, 0, (nb + 31) / 32 * sizeof(unsigned));
		for (int t = 0; t < ps->lv.nprefix; t++)
		{
			const split_task *tk = &ps->tasks[t];

			for (size_t j = tk->lo; j < tk->hi;)
			{
				const unsigned d = items[j].digit;
				const unsigned b = ((unsigned) t << ps->width) | d;
				const gs_ull key = (tk->prefix << ps->width) | d;
				size_t		e = j;

				while (e < tk->hi && items[e].digit == d)
					e++;
				if (pass == 0)
				{
					gatherable += ps->lv.shift > 0 && total[b] <= c->cand_limit ? total[b] : 0;
					deeper |= ps->lv.shift > 0 && total[b] > c->cand_limit;
				}
				else if (ps->lv.shift == 0)
				{
					/* every key of this digit is one value: the prefix and the digit */
					for (size_t q = j; q < e; q++)
						out_keys[items[q].idx] = key;
				}
				else if (total[b] > c->cand_limit || defer)
					next[(*nnext)++] = (split_task) {key, j, e};
				else
				{
					want[b >> 5] |= 1u << (b & 31);
					any = true;
				}
				j = e;
			}
		}
	}
	return any ? split_gather<K, KO>(c, ps, want, total, items, out_keys) : GS_OK;
}

/* the levels: every open prefix counted in one pass (or a few, past GS_DIGIT_PREFIXES_MAX) */
template <typename K, typename KO>
static gs_status
split_run(split_ctx *c, const uint64_t *ranks, size_t nranks, uint64_t *out_keys)
{
	const int	KB = 8 * (int) sizeof(K);
	split_item *items = (split_item *) malloc(nranks * sizeof *items);
	split_task *tasks = (split_task *) malloc((nranks + 1) * sizeof *tasks);
	split_task *next = (split_task *) malloc((nranks + 1) * sizeof *next);
	gs_ull	   *total = (gs_ull *) malloc(GS_DIGIT_BINS_MAX * sizeof *total);
	unsigned   *want = (unsigned *) malloc(GS_DIGIT_BINS_MAX / 8);
	int			ntasks = 1,
				bits_done = 0;
	gs_status	rc = GS_OK;

	if (!items || !tasks || !next || !total || !want)
		rc = gs_fail(c->err, GS_ERR_NOMEM, "split selection: out of host memory");
	for (size_t i = 0; rc == GS_OK && i < nranks; i++)
		items[i] = (split_item) {i, ranks[i], 0};
	if (rc == GS_OK)
		tasks[0] = (split_task) {0, 0, nranks};
	while (rc == GS_OK && ntasks > 0)
	{
		const int	width = split_width(KB, bits_done, ntasks);
		int			nnext = 0;

		for (int t0 = 0; rc == GS_OK && t0 < ntasks; t0 += GS_DIGIT_PREFIXES_MAX)
		{
			split_pass_of ps;

			ps.width = width;
			ps.tasks = tasks + t0;
			ps.lv.bits_done = bits_done;
			ps.lv.shift = KB - bits_done - width;
			ps.lv.mask = (1u << width) - 1u;
			ps.lv.nprefix = ntasks - t0 < GS_DIGIT_PREFIXES_MAX ? ntasks - t0 : GS_DIGIT_PREFIXES_MAX;
			rc = split_level_pass<K, KO>(c, &ps, items, total, want, next, &nnext, out_keys);
		}
		/* the next level's prefixes came out in key order, as this level's did */
		split_task *swap = tasks;

		tasks = next;
		next = swap;
		ntasks = nnext;
		bits_done += width;
	}
	free(items);
	free(tasks);
	free(next);
	free(total);
	free(want);
	return rc;
}

/* each device's streams, staging buffers and bins; the budget's stage and candidate sizes */
static gs_status
split_open(split_ctx *c, size_t budget, size_t nranks)
{
	size_t		stage_bytes,
				avail,
				least = 0;
	gs_status	rc;

	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];
		size_t		fr = 0,
					tot = 0;

		if ((rc = set_device(d, c->err)) != GS_OK)
			return rc;
		if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && (least == 0 || fr < least))
			least = fr;
	}
	if (budget == 0)
		budget = least / 2;		/* the least free device's half */
	stage_bytes = budget / 8 < GS_SPLIT_STAGE_MAX ? budget / 8 : GS_SPLIT_STAGE_MAX;
	stage_bytes &= ~(((size_t) 1 << 20) - 1);
	if (stage_bytes == 0)
		return gs_fail(c->err, GS_ERR_TOO_LARGE, "split selection: a budget of %zu bytes a device is too small",
					   budget);
	c->stage_keys = stage_bytes / c->kb;
	avail = budget - 2 * stage_bytes - ((size_t) 1 << 20);
	c->cand_limit = avail / c->kbo / 2;
	while (c->cand_limit > 1024 &&
		   c->cand_limit * c->kbo + gs_cuda_scratch_bytes(c->dev[0].e, c->cand_limit, c->kbo, nranks) > avail)
		c->cand_limit -= c->cand_limit / 4;

	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];
		cudaError_t ce;

		if ((rc = set_device(d, c->err)) != GS_OK)
			return rc;
		for (int s = 0; s < 2; s++)
		{
			ce = cudaStreamCreateWithFlags(&d->st[s], cudaStreamNonBlocking);
			if (ce != cudaSuccess)
				return gs_cuda_fail(c->err, ce, "split selection streams");
			if ((rc = gs_dev_alloc_internal(d->e, stage_bytes, &d->stage[s], c->err)) != GS_OK)
				return rc;
		}
		if ((rc = gs_dev_alloc_internal(d->e, (GS_DIGIT_BINS_MAX + 1) * sizeof(gs_ull), (void **) &d->d_bins,
										c->err)) != GS_OK ||
			(rc = gs_dev_alloc_internal(d->e, GS_DIGIT_PREFIXES_MAX * sizeof(gs_ull), (void **) &d->d_prefix,
										c->err)) != GS_OK ||
			(rc = gs_dev_alloc_internal(d->e, GS_DIGIT_BINS_MAX / 8, (void **) &d->d_want, c->err)) != GS_OK)
			return rc;
		d->bins = (gs_ull *) malloc(GS_DIGIT_BINS_MAX * sizeof(gs_ull));
		if (!d->bins)
			return gs_fail(c->err, GS_ERR_NOMEM, "split selection: out of host memory");
		/* allocated in order on the engine's stream; used on the call's own */
		ce = cudaStreamSynchronize(d->e->s);
		if (ce != cudaSuccess)
			return gs_cuda_fail(c->err, ce, "split selection setup");
		d->grid = d->e->nsm * 4;
	}
	return GS_OK;
}

/* waits for whatever is still queued (a canceled or failed pass), then frees it all */
static void
split_close(split_ctx *c)
{
	size_t		stage_bytes = c->stage_keys * c->kb;

	split_free_candidates(c);
	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];

		free(d->bins);
		d->bins = NULL;
		if (cudaSetDevice(d->e->dev) != cudaSuccess)
			continue;
		for (int s = 0; s < 2; s++)
			if (d->st[s])
				(void) cudaStreamSynchronize(d->st[s]);
		for (int s = 0; s < 2; s++)
		{
			if (d->stage[s])
				gs_dev_free_internal(d->e, d->stage[s], stage_bytes);
			if (d->st[s])
				(void) cudaStreamDestroy(d->st[s]);
		}
		if (d->d_bins)
			gs_dev_free_internal(d->e, d->d_bins, (GS_DIGIT_BINS_MAX + 1) * sizeof(gs_ull));
		if (d->d_prefix)
			gs_dev_free_internal(d->e, d->d_prefix, GS_DIGIT_PREFIXES_MAX * sizeof(gs_ull));
		if (d->d_want)
			gs_dev_free_internal(d->e, d->d_want, GS_DIGIT_BINS_MAX / 8);
		(void) cudaStreamSynchronize(d->e->s);
	}
	(void) cudaGetLastError();
	(void) cudaSetDevice(c->dev[0].e->dev);
}

static gs_status
split_validate(gs_cuda_engine *const *engines, int nengines, const gs_input *in, const uint64_t *ranks,
			   size_t nranks, const uint64_t *out_keys, size_t n, gs_error *err)
{
	if (!engines || nengines < 1 || nengines > GS_SPLIT_MAX_DEVICES)
		return gs_fail(err, GS_ERR_INVALID, "split selection needs 1 to %d engines", GS_SPLIT_MAX_DEVICES);
	for (int i = 0; i < nengines; i++)
	{
		if (!engines[i])
			return gs_fail(err, GS_ERR_INVALID, "engine %d is NULL", i);
		for (int j = 0; j < i; j++)
			if (engines[j]->dev == engines[i]->dev)
				return gs_fail(err, GS_ERR_INVALID, "engines %d and %d are the same device", j, i);
	}
	if (!in || (in->nsegs > 0 && !in->segs))
		return gs_fail(err, GS_ERR_INVALID, "no input");
	if (in->key_bytes != 2 && in->key_bytes != 4 && in->key_bytes != 8)
		return gs_fail(err, GS_ERR_INVALID, "key_bytes must be 2, 4 or 8, got %u", in->key_bytes);
	for (size_t i = 0; i < in->nsegs; i++)
		if (in->segs[i].n > 0 && !in->segs[i].keys)
			return gs_fail(err, GS_ERR_INVALID, "segment %zu has no keys", i);
	if (nranks > 0 && (!ranks || !out_keys))
		return gs_fail(err, GS_ERR_INVALID, "ranks or output is NULL");
	if (nranks > 0 && n == 0)
		return gs_fail(err, GS_ERR_INVALID, "ranks requested from an empty input");
	for (size_t i = 0; i < nranks; i++)
		if (ranks[i] >= n)
			return gs_fail(err, GS_ERR_INVALID, "rank %llu out of range (n = %zu)", (unsigned long long) ranks[i],
						   n);
	return GS_OK;
}

extern "C" {

gs_status
gs_cuda_select_split(gs_cuda_engine *const *engines, int nengines, const gs_input *in, const uint64_t *ranks,
					 size_t nranks, uint64_t *out_keys, size_t budget, const gs_options *opt,
					 gs_split_stats *stats, gs_error *err)
{
	return gs_guard(err, "gs_cuda_select_split", [&]() -> gs_status {
		size_t		n = in && in->segs ? gs_input_count(in) : 0;
		gs_split_stats local;
		gs_options	dflt;
		split_ctx  *c;
		gs_status	rc;

		if ((rc = split_validate(engines, nengines, in, ranks, nranks, out_keys, n, err)) != GS_OK)
			return rc;
		memset(stats ? stats : &local, 0, sizeof local);
		if (nranks == 0)
			return gs_ok(err);
		if (!opt)
		{
			memset(&dflt, 0, sizeof dflt);
			opt = &dflt;
		}
		c = (split_ctx *) calloc(1, sizeof *c);
		if (!c)
			return gs_fail(err, GS_ERR_NOMEM, "split selection: out of host memory");
		c->ndev = nengines;
		for (int i = 0; i < nengines; i++)
			c->dev[i].e = engines[i];
		c->in = in;
		c->kb = in->key_bytes;
		c->kbo = c->kb == 2 ? 4 : c->kb;
		c->opt = opt;
		c->stats = stats ? stats : &local;
		c->err = err;
		rc = split_open(c, budget, nranks);
		if (rc == GS_OK)
		{
			if (c->kb == 2)
				rc = split_run<uint16_t, uint32_t>(c, ranks, nranks, out_keys);
			else if (c->kb == 4)
				rc = split_run<uint32_t, uint32_t>(c, ranks, nranks, out_keys);
			else
				rc = split_run<uint64_t, uint64_t>(c, ranks, nranks, out_keys);
		}
		split_close(c);
		free(c);
		return rc == GS_OK ? gs_ok(err) : rc;
	});
}

}								/* extern "C" */
