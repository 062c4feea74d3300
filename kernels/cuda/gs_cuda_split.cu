/*
 * gs_cuda_split.cu — exact selection of keys in host memory that need not
 * fit a device, over one device or several (gs_cuda_select_split in
 * gs_cuda.h; issue 35: a group larger than one device's memory).
 *
 * The reductions-only exchange of the SampleSelect and cutting-plane
 * papers, with radix digits for splitters (so that no sample is needed and
 * skew costs passes, never answers):
 *
 *   count   every device streams its share of the keys (batches of whole
 *           segments or pieces, dealt round robin) and counts them by the
 *           next GS_DIGIT_BITS-bit digit under the work's prefix; the host
 *           adds the devices' 4096 bins and finds each wanted rank's digit
 *   narrow  a digit whose keys fit the budget is gathered; a larger one
 *           becomes new work one digit deeper (its keys share a longer
 *           prefix); a digit at the key's last bit is the answer itself
 *   gather  the devices stream their shares again and append the keys of
 *           the wanted digits to candidate buffers, which go to the first
 *           device; gs_cuda_select answers the ranks among the candidates
 *
 * So typically two passes over the data (count, gather) across the
 * devices' copy engines together; 8-byte keys of one value need six counts
 * (12 bits a level).  Only 4096 counts a device and the candidates travel.
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
#define WANTED(want, d) ((((want)[(d) >> 5]) >> ((d) & 31)) & 1u)

typedef struct split_dev
{
	gs_cuda_engine *e;
	cudaStream_t st[2];			/* batches alternate: copy of one, count of the other */
	void	   *stage[2];
	gs_ull	   *d_bins;			/* GS_DIGIT_BINS counts, then the gather's count */
	unsigned   *d_want;			/* the gather's digits, a bitmap */
	gs_ull		bins[GS_DIGIT_BINS];	/* this device's share of the last count */
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
 * keys under the current prefix, its digit there */
typedef struct split_item
{
	size_t		idx;
	uint64_t	r;
	unsigned	digit;
} split_item;

/* work: the items [lo, hi) whose keys share the top bits_done bits = prefix */
typedef struct split_work
{
	gs_ull		prefix;
	int			bits_done;
	size_t		lo,
				hi;
} split_work;

static gs_digit_at
digit_at(gs_ull prefix, int bits_done, unsigned kb)
{
	gs_digit_at at;
	int			left = 8 * (int) kb - bits_done;
	int			width = left < GS_DIGIT_BITS ? left : GS_DIGIT_BITS;

	at.prefix = prefix;
	at.bits_done = bits_done;
	at.shift = left - width;
	at.mask = (1u << width) - 1u;
	return at;
}

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
 * One pass over the input: batches of up to stage_keys keys (whole
 * segments, or pieces of a larger one) are copied into a staging buffer of
 * device b % ndev and counted (gather == false) or gathered.
 */
template <typename K, typename KO>
static gs_status
split_pass(split_ctx *c, gs_digit_at at, bool gather)
{
	const gs_input *in = c->in;
	size_t		si = 0,
				off = 0;
	long		b = 0;
	gs_status	rc = GS_OK;

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
		if (gather)
			k_digit_gather<K, KO><<<d->grid, GS_SPLIT_THREADS, 0, s>>>(
				(const K *) stage, filled, at, d->d_want, (KO *) d->d_cand, d->d_bins + GS_DIGIT_BINS,
				d->cand_bytes / sizeof(KO));
		else
			k_digit_count<K><<<d->grid, GS_SPLIT_THREADS, 0, s>>>((const K *) stage, filled, at, d->d_bins);
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

/* zeroes each device's bins and the gather's count before a pass */
static gs_status
split_reset(split_ctx *c)
{
	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];
		cudaError_t ce;

		if (set_device(d, c->err) != GS_OK)
			return GS_ERR_DEVICE;
		/* on the call's own (non-blocking) stream: the legacy default
		 * stream a plain cudaMemset uses does not order with it */
		ce = cudaMemsetAsync(d->d_bins, 0, (GS_DIGIT_BINS + 1) * sizeof(gs_ull), d->st[0]);
		if (ce == cudaSuccess)
			ce = cudaStreamSynchronize(d->st[0]);
		if (ce != cudaSuccess)
			return gs_cuda_fail(c->err, ce, "split selection reset");
	}
	return GS_OK;
}

/* counts the keys under at's prefix by digit: c->dev[i].bins, summed into total */
template <typename K, typename KO>
static gs_status
split_count(split_ctx *c, gs_digit_at at, gs_ull *total)
{
	gs_status	rc;

	if ((rc = split_reset(c)) != GS_OK || (rc = split_pass<K, KO>(c, at, false)) != GS_OK)
		return rc;
	memset(total, 0, GS_DIGIT_BINS * sizeof(gs_ull));
	for (int i = 0; i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];
		cudaError_t ce;

		if ((rc = set_device(d, c->err)) != GS_OK)
			return rc;
		ce = cudaMemcpy(d->bins, d->d_bins, sizeof d->bins, cudaMemcpyDeviceToHost);
		if (ce != cudaSuccess)
			return gs_cuda_fail(c->err, ce, "split selection counts");
		for (int k = 0; k < GS_DIGIT_BINS; k++)
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

/*
 * Gathers the keys of the digits in want under at's prefix (each device's
 * share known from its bins of the count just made) onto device 0, in any
 * order, and answers the items of [lo, hi) whose digit is wanted.
 */
template <typename K, typename KO>
static gs_status
split_gather(split_ctx *c, gs_digit_at at, const unsigned *want, const gs_ull *total, split_item *items,
			 size_t lo, size_t hi, uint64_t *out_keys)
{
	size_t		ncand = 0,
				share[GS_SPLIT_MAX_DEVICES];
	gs_ull		below[GS_DIGIT_BINS];
	uint64_t   *cranks = NULL,
			   *ckeys = NULL;
	gs_status	rc = GS_OK;

	/* each device's share, and where each wanted digit starts among the candidates */
	for (int i = 0; i < c->ndev; i++)
	{
		share[i] = 0;
		for (int k = 0; k < GS_DIGIT_BINS; k++)
			if (WANTED(want, k))
				share[i] += c->dev[i].bins[k];
	}
	for (int k = 0; k < GS_DIGIT_BINS; k++)
	{
		below[k] = ncand;
		if (WANTED(want, k))
			ncand += total[k];
	}
	for (int i = 0; i < c->ndev && rc == GS_OK; i++)
	{
		split_dev  *d = &c->dev[i];
		size_t		bytes = (i == 0 ? ncand : share[i]) * sizeof(KO);

		if ((rc = set_device(d, c->err)) != GS_OK)
			break;
		if ((rc = gs_dev_alloc_internal(d->e, bytes, &d->d_cand, c->err)) != GS_OK)
			break;
		d->cand_bytes = bytes;
		if (cudaStreamSynchronize(d->e->s) != cudaSuccess ||
			cudaMemcpyAsync(d->d_want, want, GS_DIGIT_BINS / 8, cudaMemcpyHostToDevice, d->st[0]) != cudaSuccess ||
			cudaStreamSynchronize(d->st[0]) != cudaSuccess)
			rc = gs_cuda_fail(c->err, cudaGetLastError(), "split selection gather setup");
	}
	if (rc == GS_OK)
		rc = split_reset(c);
	if (rc == GS_OK)
		rc = split_pass<K, KO>(c, at, true);

	/* every device found its share (keys that changed under the call would
	 * not add up), and sends it after device 0's */
	size_t		at0 = share[0];

	for (int i = 0; rc == GS_OK && i < c->ndev; i++)
	{
		split_dev  *d = &c->dev[i];
		gs_ull		got = 0;
		cudaError_t ce;

		(void) set_device(d, c->err);
		ce = cudaMemcpy(&got, d->d_bins + GS_DIGIT_BINS, sizeof got, cudaMemcpyDeviceToHost);
		if (ce != cudaSuccess)
			rc = gs_cuda_fail(c->err, ce, "split selection gather count");
		else if (got != share[i])
			rc = gs_fail(c->err, GS_ERR_INVALID, "split selection: device %d gathered %llu keys where it counted %zu "
						 "(the keys changed during the call)", i, (unsigned long long) got, share[i]);
		else if (i > 0 && share[i] > 0)
		{
			/* on device 0's stream, waited for before the selection */
			ce = cudaMemcpyPeerAsync((KO *) c->dev[0].d_cand + at0, c->dev[0].e->dev, d->d_cand, d->e->dev,
									 share[i] * sizeof(KO), c->dev[0].st[0]);
			if (ce == cudaSuccess)
				ce = cudaStreamSynchronize(c->dev[0].st[0]);
			if (ce != cudaSuccess)
				rc = gs_cuda_fail(c->err, ce, "split selection candidates to device 0");
			at0 += share[i];
		}
	}
	c->stats->gather_passes++;
	c->stats->candidates += ncand;

	/* the ranks among the candidates: the wanted digits below, then the rank within */
	if (rc == GS_OK)
	{
		cranks = (uint64_t *) malloc((hi - lo) * sizeof *cranks);
		ckeys = (uint64_t *) malloc((hi - lo) * sizeof *ckeys);
		if (!cranks || !ckeys)
			rc = gs_fail(c->err, GS_ERR_NOMEM, "split selection: out of host memory");
	}
	if (rc == GS_OK)
	{
		size_t		m = 0;

		for (size_t j = lo; j < hi; j++)
			if (WANTED(want, items[j].digit))
				cranks[m++] = below[items[j].digit] + items[j].r;
		rc = gs_cuda_select(c->dev[0].e, c->dev[0].d_cand, ncand, c->kbo, cranks, m, ckeys, c->opt, c->err);
		m = 0;
		for (size_t j = lo; rc == GS_OK && j < hi; j++)
			if (WANTED(want, items[j].digit))
				out_keys[items[j].idx] = ckeys[m++];
	}
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
 * Each item's digit under the count's bins, and its rank within that
 * digit's keys; the items sorted by digit.
 */
static void
split_place(split_item *items, size_t lo, size_t hi, const gs_ull *total, gs_ull *cum)
{
	gs_ull		sum = 0;

	for (int k = 0; k < GS_DIGIT_BINS; k++)
	{
		cum[k] = sum;
		sum += total[k];
	}
	for (size_t j = lo; j < hi; j++)
	{
		int			a = 0,
					z = GS_DIGIT_BINS - 1;

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
	qsort(items + lo, hi - lo, sizeof *items, item_by_digit);
}

/*
 * The narrowing: count the work's keys by digit; per digit holding wanted
 * ranks, answer it (the key's last digit), gather it (in batches of at
 * most cand_limit keys), or make it work one digit deeper.
 */
template <typename K, typename KO>
static gs_status
split_run(split_ctx *c, const uint64_t *ranks, size_t nranks, uint64_t *out_keys)
{
	const int	KB = 8 * (int) sizeof(K);
	const size_t max_work = nranks * (KB / GS_DIGIT_BITS + 2) + 1;
	split_item *items = (split_item *) malloc(nranks * sizeof *items);
	split_work *stack = (split_work *) malloc(max_work * sizeof *stack);
	gs_ull	   *total = (gs_ull *) malloc(2 * GS_DIGIT_BINS * sizeof *total);
	unsigned	want[GS_DIGIT_BINS / 32];
	size_t		top = 0;
	gs_status	rc = GS_OK;

	if (!items || !stack || !total)
		rc = gs_fail(c->err, GS_ERR_NOMEM, "split selection: out of host memory");
	for (size_t i = 0; rc == GS_OK && i < nranks; i++)
	{
		items[i].idx = i;
		items[i].r = ranks[i];
		items[i].digit = 0;
	}
	if (rc == GS_OK)
		stack[top++] = (split_work) {0, 0, 0, nranks};
	while (rc == GS_OK && top > 0)
	{
		split_work	w = stack[--top];
		gs_digit_at at = digit_at(w.prefix, w.bits_done, c->kb);
		const int	width = KB - w.bits_done - at.shift;
		size_t		batch = 0;
		bool		any = false;

		if ((rc = split_count<K, KO>(c, at, total)) != GS_OK)
			break;
		split_place(items, w.lo, w.hi, total, total + GS_DIGIT_BINS);
		memset(want, 0, sizeof want);
		for (size_t j = w.lo; rc == GS_OK && j < w.hi;)
		{
			const unsigned d = items[j].digit;
			size_t		e = j;

			while (e < w.hi && items[e].digit == d)
				e++;
			if (at.shift == 0)
			{
				/* every key of this digit is one value: the prefix and the digit */
				gs_ull		key = (w.prefix << width) | d;

				for (size_t q = j; q < e; q++)
					out_keys[items[q].idx] = key;
			}
			else if (total[d] > c->cand_limit)
				stack[top++] = (split_work) {(w.prefix << width) | d, w.bits_done + width, j, e};
			else
			{
				if (any && batch + total[d] > c->cand_limit)
				{
					rc = split_gather<K, KO>(c, at, want, total, items, w.lo, w.hi, out_keys);
					memset(want, 0, sizeof want);
					batch = 0;
				}
				want[d >> 5] |= 1u << (d & 31);
				batch += total[d];
				any = true;
			}
			j = e;
		}
		if (rc == GS_OK && batch > 0)
			rc = split_gather<K, KO>(c, at, want, total, items, w.lo, w.hi, out_keys);
	}
	free(items);
	free(stack);
	free(total);
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
		if ((rc = gs_dev_alloc_internal(d->e, (GS_DIGIT_BINS + 1) * sizeof(gs_ull), (void **) &d->d_bins,
										c->err)) != GS_OK ||
			(rc = gs_dev_alloc_internal(d->e, GS_DIGIT_BINS / 8, (void **) &d->d_want, c->err)) != GS_OK)
			return rc;
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
			gs_dev_free_internal(d->e, d->d_bins, (GS_DIGIT_BINS + 1) * sizeof(gs_ull));
		if (d->d_want)
			gs_dev_free_internal(d->e, d->d_want, GS_DIGIT_BINS / 8);
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
		size_t		n = 0;
		gs_split_stats local;
		gs_options	dflt;
		split_ctx  *c;
		gs_status	rc;

		for (size_t i = 0; in && in->segs && i < in->nsegs; i++)
			n += in->segs[i].n;
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
