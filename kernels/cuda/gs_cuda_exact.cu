/*
 * gs_cuda_exact.cu — the host driver of exact SampleSelect (internal to
 * kernels/cuda/, behind gs_cuda_select): levels planned on the device and
 * enqueued in batches (gs_select.cuh says what a level does), a finishing
 * radix sort once the kept keys are few, a full sort as the last resort.
 */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cub/device/device_radix_sort.cuh>

#include "gs_cuda_internal.h"
#include "gs_pass_sample.cuh"
#include "gs_pass_count.cuh"
#include "gs_pass_plan.cuh"
#include "gs_pass_filter.cuh"

/* ------------------------------------------------------------ sizing */

/*
 * Open buckets of a spread level, a power of two in 256 .. 4096: at least 16
 * per rank up to 2048, at least 8 per rank beyond.  A level keeps about
 * 1.3 nu / mopen of its input.  With oracles the first count pass is at the
 * DRAM floor up to 2048 buckets, so more buckets cost little there and keep
 * less (101 ranks, 2^28, H100: 1024 -> 2048 buckets took f64 2.61-2.70 ->
 * 2.19-2.27 ms, f32 1.69-1.78 -> 1.58-1.66); 32 per rank (4096) was slower.
 */
static int
gs_mopen_for(size_t nu, int mopen_max)
{
	int			mo = 256;

	while (mo < mopen_max && ((size_t) mo < 8 * nu || (mo < 2048 && (size_t) mo < 16 * nu)))
		mo <<= 1;
	return mo;
}

/*
 * What a card's shared memory allows exact mode (gs_exact_set_attrs): the
 * most open buckets (4096 but where the count or filter pass of 4096 would
 * not fit a block even with the smallest cell table, or the sample has
 * fewer than two keys for each: 8-byte keys on a T4's 64 KB), whether the
 * wide sample fits (not on 8-byte keys below the A100's 163 KB), and the
 * size of k_sample's sample (gs_sample_layout: 8192 keys, 4096 of 8 bytes
 * on a T4), which is also the base case.  Fewer buckets and a smaller
 * sample keep more keys per level: slower, the same answers.  The defaults
 * (no engine): the H100's.
 */
struct gs_exact_caps
{
	int			mopen_max;
	bool		wide_ok;
	int			sample_size;
};

static const gs_exact_caps gs_exact_caps_default = {4096, true, gs_sample_policy::size};

/* k_sample of one layout (gs_sample_layout) for K: the kernel, its dynamic
 * shared memory, its sample size */
template <typename K>
struct gs_sample_variant
{
	void		(*fn) (gs_level_state *, const K *, K *, K *, gs_ull *, gs_ull *, gs_ull *, int *, gs_ull *,
					   const K *);
	size_t		smem;
	int			size;
};

template <typename K>
static gs_sample_variant<K>
gs_sample_variant_of(int layout)
{
	typedef gs_sample_smem<K, gs_sample_policy::items> Dflt;
	typedef gs_sample_smem_small<K> Small;
	gs_sample_variant<K> v;

	if (layout == GS_SAMPLE_SMALL)
	{
		v.fn = k_sample<K, Small::items, false, Small::radix_bits>;
		v.smem = sizeof(Small);
		v.size = Small::SIZE;
	}
	else
	{
		v.fn = k_sample<K, Dflt::items, false, Dflt::radix_bits>;
		v.smem = sizeof(Dflt);
		v.size = Dflt::SIZE;
	}
	return v;
}

static gs_exact_caps
gs_exact_caps_for(const gs_cuda_engine *e, unsigned kb)
{
	const int	i = kb == 8;
	gs_exact_caps c = {e->mopen_max[i], e->wide_ok[i],
		kb == 8 ? gs_sample_variant_of<uint64_t>(e->sample_layout[i]).size
		: gs_sample_variant_of<uint32_t>(e->sample_layout[i]).size};

	return c;
}

template <typename K>
static gs_exact_caps
gs_exact_caps_of(const gs_cuda_engine *e)
{
	return gs_exact_caps_for(e, (unsigned) sizeof(K));
}

int
gs_exact_sample_keys(const gs_cuda_engine *e, unsigned kb)
{
	return gs_exact_caps_for(e, kb).sample_size;
}

/*
 * Single rank: once a level has cut the input to at most
 * gs_host_policy::focus_sort_max keys, one radix sort of them replaces the
 * remaining small levels.  It also bounds the test hook's thresholds, since
 * it sizes the sort's temp storage.
 */
static size_t
gs_focus_sort_below(const gs_cuda_engine *e)
{
	if (e->focus_sort >= 0 && (size_t) e->focus_sort < gs_host_policy::focus_sort_max)
		return (size_t) e->focus_sort;
	return gs_host_policy::focus_sort_max;
}

/* capacity (elements) of each of the two ping-pong buffers: none where
 * the input is k_sample's base case */
static size_t
gs_buf_cap(size_t n, size_t nu, gs_exact_caps caps)
{
	double		c;

	if (n <= (size_t) caps.sample_size)
		return 0;
	if (nu == 1)
		c = (double) n / 8.0 + 16384.0;
	else
	{
		double		frac = 1.5 * (double) nu / (double) gs_mopen_for(nu, caps.mopen_max) + 1.0 / 32.0;

		if (frac > 1.0)
			frac = 1.0;
		c = (double) n * frac + 65536.0;
	}
	if (c > (double) n)
		c = (double) n;
	return (size_t) c;
}

/*
 * Spread levels of 4096 buckets draw a 16384-key sample (512 threads x 32),
 * sorted by a grid (k_sample_runs, k_sample_merge); other levels 8192 keys,
 * sorted by k_sample's block.  The larger sample puts ~4 sample keys into
 * each open bucket instead of 2, so a level keeps ~1.1 nu / mopen of its
 * input instead of ~1.3 (1001 ranks f32 2^28: 2.88-2.93 -> 2.59-2.67 ms, f64
 * 5.26 -> 4.76-4.83, with a one-block sort of it; 2.52-2.60 ms with the grid
 * sort; test/bench/NOTES-gpu.md section 8).  At fewer buckets, and for one
 * rank, it cost more than it saved (one-block sort: 101 ranks f64 2.15 ->
 * 2.20 ms, one rank f64 1.085 -> 1.108).
 */
static bool
gs_wide_sample(size_t nu, gs_exact_caps caps)
{
	return caps.wide_ok && nu > 1 && gs_mopen_for(nu, caps.mopen_max) >= 4096;
}

struct gs_exact_layout
{
	size_t		off_state,
				off_hist,
				off_start,
				off_below,
				off_dsplit,
				off_wmask,
				off_rank,
				off_res,
				off_resolved,
				off_bucket,
				off_runs,			/* wide sample (gs_wide_sample): drawn runs */
				off_sample,			/* ... and the sorted sample */
				small_bytes;
	size_t		cap;
};

static void
gs_exact_layout_for(size_t n, size_t nu, gs_exact_caps caps, gs_exact_layout *L)
{
	size_t		o = 0;
	const size_t NB = 2 * GS_MAX_SPLIT_EXACT + 2;

	L->off_state = o;
	o += gs_round_up(sizeof(gs_level_state));
	L->off_hist = o;
	o += gs_round_up(NB * 8);
	L->off_start = o;
	o += gs_round_up(NB * 8);
	L->off_below = o;
	o += gs_round_up((NB + 1) * 8);
	L->off_dsplit = o;
	o += gs_round_up((GS_MAX_SPLIT_EXACT + 1) * 8);
	L->off_wmask = o;
	o += gs_round_up(NB);
	L->off_rank = o;
	o += gs_round_up(nu * 8);
	L->off_res = o;
	o += gs_round_up(nu * 8);
	L->off_resolved = o;
	o += gs_round_up(nu * 4);
	L->off_bucket = o;
	o += gs_round_up(nu * 4);
	const size_t wide_bytes = gs_wide_sample(nu, caps) ? gs_round_up(gs_sample_policy::size_wide * 8) : 0;

	L->off_runs = o;
	o += wide_bytes;
	L->off_sample = o;
	o += wide_bytes;
	L->small_bytes = o;
	L->cap = gs_buf_cap(n, nu, caps);
}

/* temp storage of the finishing sort (keys only, double buffer: the two
 * level buffers are its key storage) for up to cap keys */
static size_t
gs_finish_sort_temp(size_t cap, unsigned kb)
{
	size_t		tb = 0;

	if (cap == 0)
		return 0;
	if (kb == 4)
	{
		cub::DoubleBuffer<uint32_t> db(NULL, NULL);

		if (cub::DeviceRadixSort::SortKeys(NULL, tb, db, (int64_t) cap, 0, 32) != cudaSuccess)
			tb = 0;
	}
	else
	{
		cub::DoubleBuffer<uint64_t> db(NULL, NULL);

		if (cub::DeviceRadixSort::SortKeys(NULL, tb, db, (int64_t) cap, 0, 64) != cudaSuccess)
			tb = 0;
	}
	(void) cudaGetLastError();
	return tb;
}

/* the oracles of spread levels: one uint16 per key of the first level */
static size_t
gs_ora_bytes(size_t n)
{
	return gs_round_up((n + gs_count_policy::ora_pad) * sizeof(uint16_t));
}

size_t
gs_exact_scratch(const gs_cuda_engine *e, size_t n, unsigned kb, size_t nu)
{
	gs_exact_layout L;
	size_t		sort_keys;

	gs_exact_layout_for(n, nu, e ? gs_exact_caps_for(e, kb) : gs_exact_caps_default, &L);
	/* the finishing sort: the kept union (many ranks), or at most
	 * gs_host_policy::focus_sort_max keys of one rank's bucket */
	sort_keys = nu > 1 || L.cap < gs_host_policy::focus_sort_max ? L.cap : gs_host_policy::focus_sort_max;
	return L.small_bytes + 2 * gs_round_up(L.cap * kb) + gs_round_up(gs_finish_sort_temp(sort_keys, kb)) +
		(nu > 1 ? gs_ora_bytes(n) : 0);
}

/*
 * Multiselect finish: once the kept union of a level is small enough, one
 * radix sort of it replaces the remaining levels.  Kept buckets are disjoint
 * key ranges and every unresolved rank is already mapped into the union
 * (rank_cur), so the answer is sorted_union[rank_cur].  Cost model (H100,
 * measured 2026-11-22): a level costs ~c_l ps per key + ~60 us fixed and
 * keeps a fraction f; sorting costs ~c_s ps per key.  One more level pays off
 * when n * (c_s * (1 - f) - c_l) > 60 us.  Returns the largest n at which to
 * sort instead of running another level.
 */
static double
gs_sort_finish_below(unsigned kb, int mopen, double keep)
{
	/* per-key level cost (count + filter with the cell index, 2026-11-22
	 * ncu run at 2^28): f32 5.1 ps at 1024 buckets, 12.4 at 4096; f64 8.0,
	 * 16.7; sort 22 / 68 ps */
	const double cs = kb == 4 ? 22e-12 : 68e-12;
	double		lg = log2((double) mopen) - 10.0;
	double		cl = kb == 4 ? 5.1e-12 * (1.0 + 0.7 * lg) : 8.0e-12 * (1.0 + 0.55 * lg);
	double		gain = cs * (1.0 - keep) - cl;

	if (gain <= 0)
		return 1e30;
	double		t = 60e-6 / gain;

	return t < (double) ((size_t) 1 << 20) ? (double) ((size_t) 1 << 20) : t;
}

/* ------------------------------------------------------------ kernels */

/* a kernel's dynamic shared-memory limit: dyn bytes where they fit a block
 * of e->lim (false: they do not, nothing set) */
template <typename F>
static cudaError_t
gs_set_dyn(const gs_cuda_engine *e, F fn, size_t dyn, bool *fits)
{
	*fits = gs_smem_fits(e, (const void *) fn, dyn);
	if (!*fits)
		return cudaSuccess;
	return cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) dyn);
}

/* the dynamic shared memory the exact kernels may use, and what exact mode
 * may use on this card (gs_exact_caps; gs_cuda_open) */
template <typename K>
static cudaError_t
gs_exact_set_attrs_t(gs_cuda_engine *e)
{
	const int	i = sizeof(K) == 8;
	cudaError_t ce;
	bool		fits,
				runs_fit,
				merge_fit;

	/* k_sample: the H100's layout where it fits a block, else the T4's
	 * (gs_sample_small_policy) */
	e->sample_layout[i] = GS_SAMPLE_NONE;
	for (int l = GS_SAMPLE_DEFAULT; l < GS_SAMPLE_NONE && e->sample_layout[i] == GS_SAMPLE_NONE; l++)
	{
		const gs_sample_variant<K> v = gs_sample_variant_of<K>(l);

		ce = gs_set_dyn(e, v.fn, v.smem, &fits);
		if (ce != cudaSuccess)
			return ce;
		if (fits)
			e->sample_layout[i] = l;
	}
	ce = gs_set_dyn(e, k_sample<K, gs_sample_policy::items_wide, true>,
					sizeof(gs_sample_smem<K, gs_sample_policy::items_wide>), &runs_fit);
	if (ce != cudaSuccess)
		return ce;
	ce = gs_set_dyn(e, k_sample_merge<K>, gs_sample_policy::size_wide * sizeof(K), &merge_fit);
	if (ce != cudaSuccess)
		return ce;
	e->wide_ok[i] = runs_fit && merge_fit;
	/* (k_count: gs_count_set_attrs) */
	ce = cudaFuncSetAttribute(k_filter<K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
							  (int) gs_dyn_budget(e, (const void *) k_filter<K>));
	if (ce != cudaSuccess)
		return ce;
	/* (at least two sample keys per open bucket, as the H100's 8192 for
	 * 4096: gs_sample_spread's positions need mopen <= the sample) */
	const int	sample = gs_sample_variant_of<K>(e->sample_layout[i]).size;

	e->mopen_max[i] = 4096;
	while (e->mopen_max[i] > 256 &&
		   (2 * e->mopen_max[i] > sample || gs_count_kernel<K>(e, false, e->mopen_max[i]).fn == NULL ||
			!gs_smem_fits(e, (const void *) k_filter<K>, gs_filter_smem(e->mopen_max[i]))))
		e->mopen_max[i] /= 2;
	return cudaSuccess;
}

cudaError_t
gs_exact_set_attrs(gs_cuda_engine *e)
{
	cudaError_t ce = gs_exact_set_attrs_t<uint32_t>(e);

	return ce != cudaSuccess ? ce : gs_exact_set_attrs_t<uint64_t>(e);
}

/* ------------------------------------------- finishing sort, last resort */

template <typename K>
__global__ void
k_finish_gather(const K *sorted, const gs_ull *rank_cur, int *resolved, int nu, gs_ull *res, K kbase)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < nu && !resolved[i])
	{
		res[i] = (K) (sorted[rank_cur[i]] + kbase);
		resolved[i] = 1;
	}
}

/* sort the kept union (n keys in a; b is the other level buffer, same
 * capacity) and read every unresolved rank off it; enqueued only (the
 * caller's copy of the results waits for it and reports its errors) */
template <typename K>
static gs_status
gs_finish_sort(gs_cuda_engine *e, K *a, K *b, size_t n, const gs_ull *rank_cur, int *resolved, int nu,
			   gs_ull *res, gs_ull kbase, gs_ull kspan, gs_error *err)
{
	gs_status	rc = GS_OK;
	void	   *tmp = NULL;
	size_t		tb = 0;
	cub::DoubleBuffer<K> db(a, b);
	/* every value is <= kspan: the bits above kspan's highest are zero (a
	 * single rank's bucket after two levels: 16 of 32 bits, ~45 of 64) */
	const int	end_bit = kspan == 0 ? 1 : 64 - __builtin_clzll(kspan);

	e->last_sort_bits = end_bit;

	GS_CK(cub::DeviceRadixSort::SortKeys(NULL, tb, db, (int64_t) n, 0, end_bit, e->s),
		  "DeviceRadixSort (size)");
	if ((rc = gs_dev_alloc_internal(e, tb, &tmp, err)) != GS_OK)
		goto done;
	GS_CK(cub::DeviceRadixSort::SortKeys(tmp, tb, db, (int64_t) n, 0, end_bit, e->s),
		  "DeviceRadixSort (kept union)");
	k_finish_gather<K><<<(nu + 255) / 256, 256, 0, e->s>>>(db.Current(), rank_cur, resolved, nu, res, (K) kbase);
	GS_CK(cudaGetLastError(), "launch k_finish_gather");
done:
	gs_dev_free_internal(e, tmp, tb);
	return rc;
}

template <typename K>
__global__ void
k_gather(const K *sorted, const gs_ull *ranks, int nr, gs_ull *out)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < nr)
		out[i] = sorted[ranks[i]];
}

/* A radix sort of the whole input, then every rank gathered: needs 2n keys
 * of scratch; fails cleanly (GS_ERR_DEVICE_NOMEM) if absent. */
template <typename K>
static gs_status
gs_sort_gather(gs_cuda_engine *e, const K *d_in, size_t n, const gs_ull *d_ranks, int nu,
				 gs_ull *d_res, gs_error *err)
{
	gs_status	rc = GS_OK;
	void	   *tmp = NULL;
	K		   *sorted = NULL;
	size_t		tb = 0;

	GS_CK(cub::DeviceRadixSort::SortKeys(NULL, tb, d_in, (K *) NULL, (int64_t) n, 0, (int) sizeof(K) * 8, e->s),
		  "DeviceRadixSort (size)");
	if ((rc = gs_dev_alloc_internal(e, tb, &tmp, err)) != GS_OK)
		goto done;
	if ((rc = gs_dev_alloc_internal(e, n * sizeof(K), (void **) &sorted, err)) != GS_OK)
		goto done;
	GS_CK(cub::DeviceRadixSort::SortKeys(tmp, tb, d_in, sorted, (int64_t) n, 0, (int) sizeof(K) * 8, e->s),
		  "DeviceRadixSort");
	k_gather<K><<<(nu + 255) / 256, 256, 0, e->s>>>(sorted, d_ranks, nu, d_res);
	GS_CK(cudaGetLastError(), "launch k_gather");
	GS_CK(cudaStreamSynchronize(e->s), "fallback sort");
done:
	gs_dev_free_internal(e, sorted, n * sizeof(K));
	gs_dev_free_internal(e, tmp, tb);
	return rc;
}

/* The whole input sorted once and every rank gathered from it: the path of
 * exact calls whose ranks are so many that selection's levels would cost
 * more than a sort (gs_sort_path_policy), and selection's last resort.
 * GS_ERR_DEVICE_NOMEM when the sort's 2n keys of scratch do not fit. */
template <typename K>
static gs_status
gs_exact_by_sort(gs_cuda_engine *e, const K *d_in, size_t n, const uint64_t *uniq, size_t nu, uint64_t *res,
				 gs_error *err)
{
	gs_status	rc = GS_OK;
	gs_ull	   *d_r = NULL;
	size_t		rb = gs_round_up(2 * nu * sizeof(gs_ull));

	if ((rc = gs_dev_alloc_internal(e, rb, (void **) &d_r, err)) != GS_OK)
		return rc;
	GS_CK(cudaMemcpyAsync(d_r, uniq, nu * 8, cudaMemcpyHostToDevice, e->s), "copy ranks");
	if ((rc = gs_sort_gather<K>(e, d_in, n, d_r, (int) nu, d_r + nu, err)) != GS_OK)
		goto done;
	GS_CK(cudaMemcpyAsync(res, d_r + nu, nu * 8, cudaMemcpyDeviceToHost, e->s), "copy results");
	GS_CK(cudaStreamSynchronize(e->s), "copy results");
	e->last_exact_sorted = 1;
done:
	gs_dev_free_internal(e, d_r, rb);
	return rc;
}

/* does one sort of everything beat selection for nu distinct ranks of n? */
static bool
gs_sort_path_pays(const gs_cuda_engine *e, size_t n, size_t nu)
{
	if (e->exact_path == GS_CPU_PATH_SORT)
		return n > 0;
	if (e->exact_path == GS_CPU_PATH_SELECT)
		return false;
	return n >= gs_sort_path_policy::min_n &&
		(nu >= gs_sort_path_policy::min_ranks || nu >= n / gs_sort_path_policy::keys_per_rank);
}

/* ------------------------------------------------------------ the driver */

struct gs_rank_pair
{
	uint64_t	r;
	size_t		i;
};

static int
gs_cmp_rank(const void *a, const void *b)
{
	uint64_t	x = ((const gs_rank_pair *) a)->r,
				y = ((const gs_rank_pair *) b)->r;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* the distinct wanted ranks, ascending (uniq, nu of them), and each wanted
 * rank's place among them (map) */
struct gs_exact_ranks
{
	gs_rank_pair *pairs;
	uint64_t   *uniq;
	size_t	   *map;
	size_t		nu;
};

static bool
gs_ranks_ascending(const uint64_t *ranks, size_t nranks)
{
	for (size_t i = 1; i < nranks; i++)
		if (ranks[i] < ranks[i - 1])
			return false;
	return true;
}

static gs_status
gs_exact_unique_ranks(const uint64_t *ranks, size_t nranks, gs_exact_ranks *R, gs_error *err)
{
	R->pairs = (gs_rank_pair *) malloc(nranks * sizeof *R->pairs);
	R->uniq = (uint64_t *) malloc(nranks * sizeof *R->uniq);
	R->map = (size_t *) malloc(nranks * sizeof *R->map);
	if (!R->pairs || !R->uniq || !R->map)
		return gs_fail(err, GS_ERR_NOMEM, "out of host memory for %zu ranks", nranks);
	for (size_t i = 0; i < nranks; i++)
	{
		R->pairs[i].r = ranks[i];
		R->pairs[i].i = i;
	}
	/* ascending already (fractions written in order, the usual case): no
	 * sort; qsort took ~100 ms of a 1M-rank call (gs_test crossover) */
	if (!gs_ranks_ascending(ranks, nranks))
		qsort(R->pairs, nranks, sizeof *R->pairs, gs_cmp_rank);
	for (size_t i = 0; i < nranks; i++)
	{
		if (R->nu == 0 || R->uniq[R->nu - 1] != R->pairs[i].r)
			R->uniq[R->nu++] = R->pairs[i].r;
		R->map[R->pairs[i].i] = R->nu - 1;
	}
	if (R->nu > (size_t) 1 << 30)
		return gs_fail(err, GS_ERR_INVALID, "too many ranks");
	return GS_OK;
}

/* one exact call: its input, its device memory, and what each level launches */
template <typename K>
struct gs_exact_call
{
	gs_cuda_engine *e;
	const K    *d_in;
	size_t		n,
				nu;				/* distinct ranks */
	/* device memory: the small arrays (laid out by L), two level buffers,
	 * the spread levels' oracles */
	gs_exact_layout L;
	unsigned char *small;
	K		   *bufA,
			   *bufB;
	uint16_t   *ora;
	size_t		bufbytes,
				orabytes;
	/* in small */
	gs_level_state *st;
	gs_ull	   *hist,
			   *start,
			   *below,
			   *dsplit;
	unsigned char *wmask;
	gs_ull	   *rank_cur,
			   *res;
	int		   *resolved,
			   *rbucket;
	K		   *runs,			/* wide sample: drawn runs ... */
			   *sorted_sample;	/* ... and the sorted sample */
	/* the levels' kernels */
	bool		focused,		/* one rank */
				wide;			/* gs_wide_sample */
	int			mopen;
	size_t		smem_filter;
	gs_count_launch<K> kc;
	int			grid_count,
				grid_filter;
	void		(*sample_fn) (gs_level_state *, const K *, K *, K *, gs_ull *, gs_ull *, gs_ull *, int *, gs_ull *,
							  const K *);
	size_t		sample_smem;
	double		sample_size,
				keep,			/* expected kept fraction of a level */
				sort_below;		/* finishing sort at or below this many kept keys */
};

/* the call's device memory (freed by gs_select_exact, also on failure) */
template <typename K>
static gs_status
gs_exact_alloc(gs_exact_call<K> *C, gs_error *err)
{
	gs_cuda_engine *e = C->e;
	gs_status	rc;

	gs_exact_layout_for(C->n, C->nu, gs_exact_caps_of<K>(e), &C->L);
	C->bufbytes = gs_round_up(C->L.cap * sizeof(K));
	if ((rc = gs_dev_alloc_internal(e, C->L.small_bytes, (void **) &C->small, err)) != GS_OK)
		return rc;
	if (C->L.cap > 0)
	{
		if ((rc = gs_dev_alloc_internal(e, C->bufbytes, (void **) &C->bufA, err)) != GS_OK)
			return rc;
		if ((rc = gs_dev_alloc_internal(e, C->bufbytes, (void **) &C->bufB, err)) != GS_OK)
			return rc;
	}
	if (C->nu > 1)
	{
		/* spread levels: the count pass's oracles, read by the filter */
		C->orabytes = gs_ora_bytes(C->n);
		if ((rc = gs_dev_alloc_internal(e, C->orabytes, (void **) &C->ora, err)) != GS_OK)
			return rc;
	}
	return GS_OK;
}

/* the arrays in small, the levels' kernels and launch sizes, the
 * finishing-sort threshold */
template <typename K>
static void
gs_exact_setup(gs_exact_call<K> *C)
{
	gs_cuda_engine *e = C->e;
	unsigned char *small = C->small;
	const gs_exact_layout &L = C->L;

	C->st = (gs_level_state *) (small + L.off_state);
	C->hist = (gs_ull *) (small + L.off_hist);
	C->start = (gs_ull *) (small + L.off_start);
	C->below = (gs_ull *) (small + L.off_below);
	C->dsplit = (gs_ull *) (small + L.off_dsplit);
	C->wmask = small + L.off_wmask;
	C->rank_cur = (gs_ull *) (small + L.off_rank);
	C->res = (gs_ull *) (small + L.off_res);
	C->resolved = (int *) (small + L.off_resolved);
	C->rbucket = (int *) (small + L.off_bucket);
	C->focused = C->nu == 1;
	C->mopen = gs_mopen_for(C->nu, gs_exact_caps_of<K>(e).mopen_max);

	const int	P = C->focused ? 0 : C->mopen;

	C->smem_filter = C->focused ? 0 : gs_filter_smem(P);
	/* (fits: mopen_max is what fits, gs_exact_set_attrs) */
	C->kc = gs_count_kernel<K>(e, false, C->focused ? 1024 : P);
	C->grid_count = C->focused ? gs_occ_grid(e, (const void *) k_count_focus<K>, 0)
		: gs_occ_grid(e, (const void *) C->kc.fn, C->kc.smem, C->kc.threads);
	C->grid_filter = gs_occ_grid(e, (const void *) k_filter<K>, C->smem_filter);
	C->wide = gs_wide_sample(C->nu, gs_exact_caps_of<K>(e));
	C->runs = (K *) (small + L.off_runs);
	C->sorted_sample = (K *) (small + L.off_sample);
	{
		/* the layout gs_exact_set_attrs chose; levels of 4096 buckets
		 * may read the wide one, sorted by the grid */
		const gs_sample_variant<K> v = gs_sample_variant_of<K>(e->sample_layout[sizeof(K) == 8]);

		C->sample_fn = C->wide ? k_sample<K, gs_sample_policy::items_wide, true> : v.fn;
		C->sample_smem = C->wide ? sizeof(gs_sample_smem<K, gs_sample_policy::items_wide>) : v.smem;
		C->sample_size = C->wide ? gs_sample_smem<K, gs_sample_policy::items_wide>::SIZE : v.size;
	}
	C->keep = C->focused ? 0.05 : fmin(0.5, (C->wide ? 1.1 : 1.3) * (double) C->nu / C->mopen);
	C->sort_below = e->sort_finish == 2 ? 0.0 :
		(e->sort_finish == 1 ? 1e30 :
		 (C->focused ? (double) gs_focus_sort_below(e) : gs_sort_finish_below((unsigned) sizeof(K), C->mopen, C->keep)));
}

/* the first level's state and the distinct ranks, enqueued after the
 * caller's uploads on the copy stream */
template <typename K>
static gs_status
gs_exact_start(gs_exact_call<K> *C, const gs_options *opt, const uint64_t *uniq, gs_error *err)
{
	gs_cuda_engine *e = C->e;
	gs_status	rc = GS_OK;
	gs_level_state hs;

	memset(&hs, 0, sizeof hs);
	hs.n = C->n;
	hs.cap = C->L.cap;
	hs.seed = opt ? opt->seed : 0;
	hs.src = 0;
	hs.focused = C->focused;
	hs.focus_z = e->focus_z;
	hs.nranks = (int) C->nu;
	hs.nactive = (int) C->nu;
	hs.mopen = C->mopen;
	GS_CK(cudaEventRecord(e->ev_copy, e->cs), "cudaEventRecord");
	GS_CK(cudaStreamWaitEvent(e->s, e->ev_copy, 0), "cudaStreamWaitEvent");
	/* (from pageable memory: hs is staged before the call returns) */
	GS_CK(cudaMemcpyAsync(C->st, &hs, sizeof hs, cudaMemcpyHostToDevice, e->s), "copy state");
	GS_CK(cudaMemcpyAsync(C->rank_cur, uniq, C->nu * 8, cudaMemcpyHostToDevice, e->s), "copy ranks");
	GS_CK(cudaMemsetAsync(C->resolved, 0, C->nu * 4, e->s), "memset");
	if (e->inject > 0)
	{
		e->inject--;
		rc = gs_fail(err, GS_ERR_DEVICE, "injected launch failure");
		cudaStreamSynchronize(e->s);
		goto done;
	}
done:
	return rc;
}

/* levels in the first batch: an estimate of those down to the finishing
 * sort (or the base case) */
template <typename K>
static int
gs_exact_first_batch(const gs_exact_call<K> &C)
{
	const double lim = fmax(C.sort_below, C.sample_size);
	double		est;

	if (C.focused)
	{
		est = (double) C.n > lim ? log((double) C.n / lim) / log(1.0 / C.keep) : 0.0;
		est = fmax(est - 1.0, 0.0);		/* batch adds one */
	}
	else
	{
		/* levels until the kept union is below the sort threshold */
		est = (double) C.n > lim ? log((double) C.n / lim) / log(1.0 / C.keep) : 0.0;
		if (est < 1.5)
			est = 1.5;
		est -= 1.5;				/* keep is pessimistic; one sync more is cheap */
	}
	return (int) ceil(est) + 1;
}

/* one level's launches (launch errors surface in the caller's
 * cudaGetLastError) */
template <typename K>
static void
gs_exact_level(const gs_exact_call<K> &C)
{
	const gs_cuda_engine *e = C.e;

	if (C.wide)
	{
		gs_launch(e, k_sample_runs<K>, gs_sample_runs_policy::blocks, gs_sample_runs_policy::threads, 0,
				  C.st, C.d_in, C.bufA, C.bufB, C.runs);
		gs_launch(e, k_sample_merge<K>, gs_sample_runs_policy::blocks, gs_sample_runs_policy::merge_threads,
				  gs_sample_policy::size_wide * sizeof(K), C.st, C.runs, C.sorted_sample);
	}
	gs_launch(e, C.sample_fn, 1, gs_sample_policy::threads, C.sample_smem, C.st, C.d_in, C.bufA, C.bufB, C.hist,
			  C.dsplit, C.rank_cur, C.resolved, C.res, C.wide ? C.sorted_sample : NULL);
	if (C.focused)
	{
		gs_launch(e, k_count_focus<K>, C.grid_count, gs_count_policy::threads, 0, C.st, C.d_in, C.bufA, C.bufB,
				  C.hist, C.dsplit);
		gs_launch(e, k_plan<K, gs_plan_policy::threads_focus>, 1, gs_plan_policy::threads_focus, 0, C.st, C.hist,
				  C.start, C.below, C.dsplit, C.wmask, C.rank_cur, C.resolved, C.rbucket, C.res);
	}
	else
	{
		/* (exact mode: one pass, the whole histogram; mopen_max saw to it) */
		gs_launch(e, C.kc.fn, C.grid_count, C.kc.threads, C.kc.smem, C.st, C.d_in, C.bufA, C.bufB, C.hist, C.dsplit,
				  (gs_minmax *) NULL, C.ora, C.kc.cells_cap, 0, C.kc.hwords);
		gs_launch(e, k_plan<K, gs_plan_policy::threads>, 1, gs_plan_policy::threads, 0, C.st, C.hist, C.start,
				  C.below, C.dsplit, C.wmask, C.rank_cur, C.resolved, C.rbucket, C.res);
	}
	gs_launch(e, k_filter<K>, C.grid_filter, gs_count_policy::threads, C.smem_filter, C.st, C.d_in, C.bufA, C.bufB,
			  C.dsplit, C.wmask, C.ora, (int) C.kc.one);
	gs_launch(e, k_advance, 1, 1, 0, C.st, C.below);
}

/*
 * The levels, enqueued in batches; the host looks at the state only
 * between batches (and polls the interrupt hook between levels).  Returns
 * GS_OK when every rank is resolved, by the levels or by a finishing sort
 * of the kept union, or when the sampler gave up (*stuck).
 */
template <typename K>
static gs_status
gs_exact_levels(gs_exact_call<K> *C, const gs_options *opt, bool *stuck, gs_error *err)
{
	gs_cuda_engine *e = C->e;
	gs_status	rc = GS_OK;
	gs_level_state hs;
	int			levels = 0;

	for (;;)
	{
		const int	batch = levels == 0 ? gs_exact_first_batch(*C) : (C->focused ? 3 : 1);

		for (int b = 0; b < batch; b++)
		{
			if ((rc = gs_check_interrupt(opt, err)) != GS_OK)
			{
				cudaStreamSynchronize(e->s);
				goto done;
			}
			gs_exact_level(*C);
			GS_CK(cudaGetLastError(), "kernel launch");
			levels++;
		}
		GS_CK(cudaMemcpyAsync(&hs, C->st, sizeof hs, cudaMemcpyDeviceToHost, e->s), "copy state back");
		GS_CK(cudaStreamSynchronize(e->s), "selection");
		if (hs.done)
			break;
		if (!hs.stuck && hs.src != 0 && (double) hs.n > C->sample_size && hs.n <= hs.cap &&
			(double) hs.n <= C->sort_below)
		{
			/* finish: sort the kept union (or bucket) once, pick every rank */
			gs_status	frc;

			if ((rc = gs_check_interrupt(opt, err)) != GS_OK)
				goto done;
			frc = gs_finish_sort<K>(e, hs.src == 1 ? C->bufA : C->bufB, hs.src == 1 ? C->bufB : C->bufA,
									(size_t) hs.n, C->rank_cur, C->resolved, (int) C->nu, C->res, hs.kbase, hs.kspan,
									err);
			if (frc == GS_OK)
				break;
			if (frc != GS_ERR_DEVICE_NOMEM)
			{
				rc = frc;
				goto done;
			}
			C->sort_below = 0;	/* no room for the sort's temp: go on with levels */
		}
		if (levels > 96)
		{
			rc = gs_fail(err, GS_ERR_DEVICE, "selection did not converge after %d levels", levels);
			goto done;
		}
	}
	*stuck = hs.stuck != 0;
done:
	return rc;
}

/* the answers to the host, after the last resort where the sampler gave up */
template <typename K>
static gs_status
gs_exact_results(gs_exact_call<K> *C, bool stuck, const gs_exact_ranks &R, size_t nranks, uint64_t *out_keys,
				 gs_error *err)
{
	gs_cuda_engine *e = C->e;
	gs_status	rc = GS_OK;

	if (stuck)
	{
		/* release the level buffers first: the sort needs 2n */
		gs_dev_free_internal(e, C->bufA, C->bufbytes);
		gs_dev_free_internal(e, C->bufB, C->bufbytes);
		gs_dev_free_internal(e, C->ora, C->orabytes);
		C->bufA = C->bufB = NULL;
		C->ora = NULL;
		if ((rc = gs_exact_by_sort<K>(e, C->d_in, C->n, R.uniq, C->nu, R.uniq, err)) != GS_OK)
			goto done;
	}
	else
	{
		GS_CK(cudaMemcpyAsync(R.uniq, C->res, C->nu * 8, cudaMemcpyDeviceToHost, e->s), "copy results");
		GS_CK(cudaStreamSynchronize(e->s), "copy results");
	}
	for (size_t i = 0; i < nranks; i++)
		out_keys[i] = R.uniq[R.map[i]];
	rc = gs_ok(err);
done:
	return rc;
}

template <typename K>
gs_status
gs_select_exact(gs_cuda_engine *e, const K *d_in, size_t n, const uint64_t *ranks, size_t nranks,
				uint64_t *out_keys, const gs_options *opt, gs_error *err)
{
	gs_status	rc;
	gs_exact_ranks R = {};
	gs_exact_call<K> C = {};
	bool		stuck = false;

	C.e = e;
	C.d_in = d_in;
	C.n = n;
	e->last_sort_bits = 0;
	if ((rc = gs_exact_unique_ranks(ranks, nranks, &R, err)) != GS_OK)
		goto done;
	C.nu = R.nu;
	e->last_exact_sorted = 0;
	if (gs_sort_path_pays(e, n, C.nu))
	{
		if ((rc = gs_check_interrupt(opt, err)) != GS_OK)
			goto done;
		rc = gs_exact_by_sort<K>(e, d_in, n, R.uniq, C.nu, R.uniq, err);
		if (rc == GS_OK)
		{
			for (size_t i = 0; i < nranks; i++)
				out_keys[i] = R.uniq[R.map[i]];
			goto done;
		}
		if (rc != GS_ERR_DEVICE_NOMEM)
			goto done;
		/* no room for the sort's scratch: select (needs less) */
	}
	if (e->sample_layout[sizeof(K) == 8] == GS_SAMPLE_NONE)
	{
		/* not even k_sample's small layout (35 KB: gs_sample_small_policy)
		 * fits a block, which no device of compute capability 7.5 or later
		 * has; the caller's CPU engine gives the answer */
		rc = gs_fail(err, GS_ERR_TOO_LARGE, "exact selection of %zu-byte keys needs more shared memory per block "
					 "than this device's %zu bytes", sizeof(K), e->lim.smem_per_block);
		goto done;
	}
	if ((rc = gs_exact_alloc(&C, err)) != GS_OK)
		goto done;
	gs_exact_setup(&C);
	if ((rc = gs_exact_start(&C, opt, R.uniq, err)) != GS_OK)
		goto done;
	if ((rc = gs_exact_levels(&C, opt, &stuck, err)) != GS_OK)
		goto done;
	rc = gs_exact_results(&C, stuck, R, nranks, out_keys, err);
done:
	gs_dev_free_internal(e, C.bufA, C.bufbytes);
	gs_dev_free_internal(e, C.bufB, C.bufbytes);
	gs_dev_free_internal(e, C.ora, C.orabytes);
	gs_dev_free_internal(e, C.small, C.L.small_bytes);
	free(R.pairs);
	free(R.uniq);
	free(R.map);
	return rc;
}

template gs_status gs_select_exact<uint32_t>(gs_cuda_engine *, const uint32_t *, size_t, const uint64_t *, size_t,
											  uint64_t *, const gs_options *, gs_error *);
template gs_status gs_select_exact<uint64_t>(gs_cuda_engine *, const uint64_t *, size_t, const uint64_t *, size_t,
											  uint64_t *, const gs_options *, gs_error *);
