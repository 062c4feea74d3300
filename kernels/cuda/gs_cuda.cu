/*
 * gs_cuda.cu — the CUDA engine behind gs_cuda.h: lifecycle, memory accounting,
 * fault injection, and the host drivers of exact SampleSelect (multi-level,
 * device-planned) and approximate SampleSelect (one level).
 *
 * Nothing here throws, aborts or prints: every CUDA return code is checked
 * and turned into a gs_status with a message.  No thrust, no operator new;
 * CUB's device algorithms return cudaError_t.  The extern "C" entries also
 * catch (...) as a last line of defence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdarg.h>
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include "gs_cuda.h"
#include "gs_pass_sample.cuh"
#include "gs_pass_count.cuh"
#include "gs_pass_plan.cuh"
#include "gs_pass_filter.cuh"
#include "gs_pass_approx.cuh"

struct gs_alloc_rec
{
	void	   *p;
	size_t		bytes;
	int			host;			/* 0 device, 1 pinned host alloc, 2 registered */
	gs_alloc_rec *next;
};

struct gs_cuda_engine
{
	int			dev;
	cudaStream_t s;				/* selection stream */
	cudaStream_t cs;			/* copy stream */
	cudaEvent_t ev_copy;
	int			nsm;
	size_t		smem_optin;
	size_t		mem_cap;		/* 0: none */
	size_t		dev_in_use;		/* gs_cuda_alloc */
	size_t		host_in_use;	/* gs_cuda_host_alloc */
	size_t		internal_in_use;	/* temporaries of a running call */
	int			inject;
	int			sort_finish;	/* test hook: 0 cost model, 1 always, 2 never */
	long long	focus_sort;		/* test hook: single-rank sort threshold, -1 default */
	int			last_sort_bits;	/* test hook: key bits of the last finishing sort */
	double		focus_z;		/* single-rank splitters at -/+ focus_z sigma (test hook) */
	gs_alloc_rec *recs;
	char		name[256];
};

/* ------------------------------------------------------------ errors */

static gs_status
gs_fail(gs_error *err, gs_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static gs_status
gs_fail(gs_error *err, gs_status st, const char *fmt, ...)
{
	if (err)
	{
		va_list		ap;

		va_start(ap, fmt);
		err->status = st;
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
	}
	return st;
}

static gs_status
gs_ok(gs_error *err)
{
	if (err)
	{
		err->status = GS_OK;
		err->message[0] = '\0';
	}
	return GS_OK;
}

static gs_status
gs_cuda_fail(gs_error *err, cudaError_t ce, const char *what)
{
	gs_status	st = GS_ERR_DEVICE;

	if (ce == cudaErrorMemoryAllocation)
		st = GS_ERR_DEVICE_NOMEM;
	else if (ce == cudaErrorInsufficientDriver || ce == cudaErrorNoDevice)
		st = GS_ERR_NO_DEVICE;
	(void) cudaGetLastError();	/* clear a non-sticky error */
	return gs_fail(err, st, "%s: %s (%d)", what, cudaGetErrorString(ce), (int) ce);
}

#define GS_CK(call, what) do { cudaError_t ce_ = (call); \
	if (ce_ != cudaSuccess) { rc = gs_cuda_fail(err, ce_, what); goto done; } } while (0)

/* ------------------------------------------------------------ memory */

static gs_status
gs_dev_alloc_internal(gs_cuda_engine *e, size_t bytes, void **p, gs_error *err)
{
	*p = NULL;
	if (bytes == 0)
		bytes = 16;
	if (e->mem_cap && e->dev_in_use + e->internal_in_use + bytes > e->mem_cap)
		return gs_fail(err, GS_ERR_DEVICE_NOMEM,
					   "device memory cap reached: %zu bytes requested, %zu of %zu in use",
					   bytes, e->dev_in_use + e->internal_in_use, e->mem_cap);
	/* stream-ordered pool allocation: after the first call a same-sized
	 * request is served from the pool without a device-wide sync */
	cudaError_t ce = cudaMallocAsync(p, bytes, e->s);

	if (ce != cudaSuccess)
	{
		*p = NULL;
		(void) cudaGetLastError();
		return gs_fail(err, GS_ERR_DEVICE_NOMEM, "device allocation of %zu bytes failed: %s",
					   bytes, cudaGetErrorString(ce));
	}
	e->internal_in_use += bytes;
	return GS_OK;
}

static void
gs_dev_free_internal(gs_cuda_engine *e, void *p, size_t bytes)
{
	if (p)
	{
		cudaFreeAsync(p, e->s);
		e->internal_in_use -= bytes ? bytes : 16;
	}
}

static void
gs_rec_add(gs_cuda_engine *e, void *p, size_t bytes, int host)
{
	gs_alloc_rec *r = (gs_alloc_rec *) malloc(sizeof *r);

	if (!r)
		return;					/* accounting only; never fails the call */
	r->p = p;
	r->bytes = bytes;
	r->host = host;
	r->next = e->recs;
	e->recs = r;
	if (host == 0)
		e->dev_in_use += bytes;
	else if (host == 1)
		e->host_in_use += bytes;
}

static int
gs_rec_del(gs_cuda_engine *e, void *p, int host)
{
	for (gs_alloc_rec **pp = &e->recs; *pp; pp = &(*pp)->next)
		if ((*pp)->p == p && (*pp)->host == host)
		{
			gs_alloc_rec *r = *pp;

			*pp = r->next;
			if (host == 0)
				e->dev_in_use -= r->bytes;
			else if (host == 1)
				e->host_in_use -= r->bytes;
			free(r);
			return 1;
		}
	return 0;
}

/* ------------------------------------------------------------ sizing */

static size_t
gs_round_up(size_t x)
{
	return (x + 255) & ~(size_t) 255;
}

/*
 * Open buckets of a spread level, a power of two in 256 .. 4096: at least 16
 * per rank up to 2048, at least 8 per rank beyond.  A level keeps about
 * 1.3 nu / mopen of its input.  With oracles the first count pass is at the
 * DRAM floor up to 2048 buckets, so more buckets cost little there and keep
 * less (101 ranks, 2^28, H100: 1024 -> 2048 buckets took f64 2.61-2.70 ->
 * 2.19-2.27 ms, f32 1.69-1.78 -> 1.58-1.66); 32 per rank (4096) was slower.
 */
static int
gs_mopen_for(size_t nu)
{
	int			mo = 256;

	while (mo < 4096 && ((size_t) mo < 8 * nu || (mo < 2048 && (size_t) mo < 16 * nu)))
		mo <<= 1;
	return mo;
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

/* capacity (elements) of each of the two ping-pong buffers */
static size_t
gs_buf_cap(size_t n, size_t nu)
{
	double		c;

	if (n <= gs_sample_policy::size)
		return 0;
	if (nu == 1)
		c = (double) n / 8.0 + 16384.0;
	else
	{
		double		frac = 1.5 * (double) nu / (double) gs_mopen_for(nu) + 1.0 / 32.0;

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
gs_wide_sample(size_t nu)
{
	return nu > 1 && gs_mopen_for(nu) >= 4096;
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
gs_exact_layout_for(size_t n, size_t nu, gs_exact_layout *L)
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
	const size_t wide_bytes = gs_wide_sample(nu) ? gs_round_up(gs_sample_policy::size_wide * 8) : 0;

	L->off_runs = o;
	o += wide_bytes;
	L->off_sample = o;
	o += wide_bytes;
	L->small_bytes = o;
	L->cap = gs_buf_cap(n, nu);
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

static size_t
gs_exact_scratch(size_t n, unsigned kb, size_t nu)
{
	gs_exact_layout L;
	size_t		sort_keys;

	gs_exact_layout_for(n, nu, &L);
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

/* ------------------------------------------------------------ lifecycle */

/*
 * The count kernel of a many-splitter level of P splitter slots (mm:
 * approximate mode, which also finds the min and max): 1024 threads per SM
 * or fewer, in as many blocks as its shared memory allows (up to 64 KB:
 * three or four 256-thread blocks; up to 112 KB: two of 512; else one of
 * 1024), so that enough warps keep loads in flight; the one-splitter lookup
 * where the cell table has 16 cells per slot (gs_cells_one).
 */
template <typename K>
struct gs_count_launch
{
	void		(*fn) (gs_level_state *, const K *, K *, K *, gs_ull *, const gs_ull *, gs_minmax *, uint16_t *, int);
	int			threads;
	size_t		smem;			/* dynamic shared memory: gs_count_smem */
	int			cells_cap;		/* the kernel's last argument: gs_cells_cap(P) */
};

template <typename K, bool MM, int THREADS>
static void
gs_count_kernel_t(gs_count_launch<K> &r, bool one, bool packed)
{
	r.threads = THREADS;
	/* instantiated only where chosen: the one-splitter lookup for 4-byte
	 * keys, packed entries for the approximate count */
	if constexpr (sizeof(K) == 4 && MM)
		r.fn = packed ? k_count<K, MM, THREADS, true, true>
			: one ? k_count<K, MM, THREADS, true> : k_count<K, MM, THREADS, false>;
	else if constexpr (sizeof(K) == 4)
		r.fn = one ? k_count<K, MM, THREADS, true> : k_count<K, MM, THREADS, false>;
	else
		r.fn = k_count<K, MM, THREADS, false>;
	(void) one;
	(void) packed;
}

template <typename K, bool MM>
static gs_count_launch<K>
gs_count_kernel_mm(int P)
{
	const bool	one = gs_cells_one(P, (int) sizeof(K)),
				packed = MM && one && gs_cells_packed(P, (int) sizeof(K));
	gs_count_launch<K> r;

	r.smem = gs_count_smem(P, (int) sizeof(K), packed);
	r.cells_cap = gs_cells_cap(P, (int) sizeof(K));
	if (r.smem > gs_count_policy::full_above)
		gs_count_kernel_t<K, MM, gs_count_policy::threads_full>(r, one, packed);
	else if (r.smem > gs_count_policy::wide_above)
		gs_count_kernel_t<K, MM, gs_count_policy::threads_wide>(r, one, packed);
	else
		gs_count_kernel_t<K, MM, gs_count_policy::threads>(r, one, packed);
	return r;
}

template <typename K>
static gs_count_launch<K>
gs_count_kernel(bool mm, int P)
{
	return mm ? gs_count_kernel_mm<K, true>(P) : gs_count_kernel_mm<K, false>(P);
}

template <typename K>
static cudaError_t
gs_set_attrs(size_t optin)
{
	cudaError_t ce;

	ce = cudaFuncSetAttribute(k_sample<K, gs_sample_policy::items>, cudaFuncAttributeMaxDynamicSharedMemorySize,
							  (int) sizeof(gs_sample_smem<K, gs_sample_policy::items>));
	if (ce != cudaSuccess)
		return ce;
	ce = cudaFuncSetAttribute(k_sample<K, gs_sample_policy::items_wide, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
							  (int) sizeof(gs_sample_smem<K, gs_sample_policy::items_wide>));
	if (ce != cudaSuccess)
		return ce;
	ce = cudaFuncSetAttribute(k_sample_merge<K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
							  (int) (gs_sample_policy::size_wide * sizeof(K)));
	if (ce != cudaSuccess)
		return ce;
	/* the approximate pick's candidate ranks (k_approx_pick) */
	ce = cudaFuncSetAttribute(k_approx_pick<K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
							  (int) ((GS_APPROX_BUCKETS_MAX + 2) * 8));
	if (ce != cudaSuccess)
		return ce;
	/* the approximate sample's runs (4-byte keys only) */
	if constexpr (sizeof(K) == 4)
		ce = cudaFuncSetAttribute(k_sample_merge<K, gs_approx_policy::run_keys>, cudaFuncAttributeMaxDynamicSharedMemorySize,
								  (int) (gs_approx_policy::runs_max * gs_approx_policy::run_keys * sizeof(K)));
	if (ce != cudaSuccess)
		return ce;
	size_t		dyn = optin - 16 * 1024;	/* leave room for static shared memory */

	/* every (threads, lookup) pair that gs_count_kernel picks occurs for
	 * one of these P */
	for (int P = 1024; P <= 8192; P *= 2)
		for (int mm = 0; mm < 2; mm++)
		{
			ce = cudaFuncSetAttribute(gs_count_kernel<K>(mm != 0, P).fn,
									  cudaFuncAttributeMaxDynamicSharedMemorySize, (int) dyn);
			if (ce != cudaSuccess)
				return ce;
		}
	ce = cudaFuncSetAttribute(k_filter<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) (dyn - 32 * 1024));
	return ce;
}

static gs_status
gs_cuda_open_impl(int ordinal, gs_cuda_engine **out, gs_error *err)
{
	int			count = 0;
	cudaError_t ce;
	gs_cuda_engine *e;
	cudaDeviceProp prop;
	gs_status	rc = GS_OK;

	*out = NULL;
	ce = cudaGetDeviceCount(&count);
	if (ce != cudaSuccess)
	{
		(void) cudaGetLastError();
		if (ce == cudaErrorInsufficientDriver || ce == cudaErrorNoDevice ||
			ce == cudaErrorInitializationError || ce == cudaErrorSystemDriverMismatch ||
			ce == cudaErrorCompatNotSupportedOnDevice || ce == cudaErrorDevicesUnavailable)
			return gs_fail(err, GS_ERR_NO_DEVICE, "no usable CUDA device: %s (%d)",
						   cudaGetErrorString(ce), (int) ce);
		return gs_fail(err, GS_ERR_DEVICE, "cudaGetDeviceCount: %s (%d)", cudaGetErrorString(ce), (int) ce);
	}
	if (count <= 0)
		return gs_fail(err, GS_ERR_NO_DEVICE, "no CUDA device");
	if (ordinal < 0 || ordinal >= count)
		return gs_fail(err, GS_ERR_NO_DEVICE, "no CUDA device %d (%d present)", ordinal, count);
	e = (gs_cuda_engine *) calloc(1, sizeof *e);
	if (!e)
		return gs_fail(err, GS_ERR_NOMEM, "out of host memory");
	e->dev = ordinal;
	e->focus_sort = -1;
	e->focus_z = gs_host_policy::focus_z;
	GS_CK(cudaSetDevice(ordinal), "cudaSetDevice");
	GS_CK(cudaFree(0), "creating the CUDA context");
	GS_CK(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
	if (prop.major < 9)
	{
		rc = gs_fail(err, GS_ERR_NO_DEVICE, "device %s has compute capability %d.%d; gpuselect is built for 9.0",
					 prop.name, prop.major, prop.minor);
		goto done;
	}
	e->nsm = prop.multiProcessorCount;
	e->smem_optin = prop.sharedMemPerBlockOptin;
	snprintf(e->name, sizeof e->name, "%s", prop.name);
	GS_CK(cudaStreamCreateWithFlags(&e->s, cudaStreamNonBlocking), "cudaStreamCreate");
	GS_CK(cudaStreamCreateWithFlags(&e->cs, cudaStreamNonBlocking), "cudaStreamCreate (copy)");
	GS_CK(cudaEventCreateWithFlags(&e->ev_copy, cudaEventDisableTiming), "cudaEventCreate");
	{
		/* keep up to 1 GiB of freed temporaries in the device's default
		 * pool between calls (returned by gs_cuda_close) */
		cudaMemPool_t pool;
		uint64_t	keep = (uint64_t) 1 << 30;

		GS_CK(cudaDeviceGetDefaultMemPool(&pool, ordinal), "cudaDeviceGetDefaultMemPool");
		GS_CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
	}
	GS_CK(gs_set_attrs<uint32_t>(e->smem_optin), "cudaFuncSetAttribute");
	GS_CK(gs_set_attrs<uint64_t>(e->smem_optin), "cudaFuncSetAttribute");
	*out = e;
	return gs_ok(err);
done:
	if (e->ev_copy)
		cudaEventDestroy(e->ev_copy);
	if (e->cs)
		cudaStreamDestroy(e->cs);
	if (e->s)
		cudaStreamDestroy(e->s);
	free(e);
	return rc;
}

/* ------------------------------------------------------------ exact */

template <typename K>
__global__ void
k_gather(const K *sorted, const gs_ull *ranks, int nr, gs_ull *out)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < nr)
		out[i] = sorted[ranks[i]];
}

/* Last resort (the sampler failed 8 times in a row, never seen): full radix
 * sort of the input.  Needs 2n keys of scratch; fails cleanly if absent. */
template <typename K>
static gs_status
gs_sort_fallback(gs_cuda_engine *e, const K *d_in, size_t n, const gs_ull *d_ranks, int nu,
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

static gs_status
gs_check_interrupt(const gs_options *opt, gs_error *err)
{
	if (opt && opt->interrupt && opt->interrupt(opt->interrupt_arg))
		return gs_fail(err, GS_ERR_CANCELED, "canceled by interrupt");
	return GS_OK;
}

template <typename K>
static int
gs_occ_grid(gs_cuda_engine *e, const void *fn, size_t dyn, int threads = gs_count_policy::threads)
{
	int			per = 0;

	if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, fn, threads, dyn) != cudaSuccess || per < 1)
	{
		(void) cudaGetLastError();
		per = 1;
	}
	return per * e->nsm;
}

/*
 * Launch a level kernel as a programmatic dependent launch (unless built
 * with -DGS_NO_PDL); gs_pdl_enter in gs_stream.cuh says what the kernel
 * does with it.  Launch errors surface in the cudaGetLastError after each
 * level.  Hand-written: CUB has no launch helper for this.
 */
template <typename... Params, typename... Args>
static void
gs_launch(void (*fn) (Params...), int grid, int threads, size_t smem, cudaStream_t s, Args... args)
{
#ifndef GS_NO_PDL
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute at = {};

	cfg.gridDim = dim3((unsigned) grid);
	cfg.blockDim = dim3((unsigned) threads);
	cfg.dynamicSmemBytes = smem;
	cfg.stream = s;
	at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at.val.programmaticStreamSerializationAllowed = 1;
	cfg.attrs = &at;
	cfg.numAttrs = 1;
	(void) cudaLaunchKernelEx(&cfg, fn, static_cast<Params>(args)...);
#else
	fn<<<grid, threads, smem, s>>>(static_cast<Params>(args)...);
#endif
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
static gs_status
gs_select_exact(gs_cuda_engine *e, const K *d_in, size_t n, const uint64_t *ranks, size_t nranks,
				uint64_t *out_keys, const gs_options *opt, gs_error *err)
{
	gs_status	rc = GS_OK;
	gs_rank_pair *pairs = NULL;
	uint64_t   *uniq = NULL;
	size_t	   *map = NULL;
	size_t		nu = 0;
	unsigned char *small = NULL;
	K		   *bufA = NULL,
			   *bufB = NULL;
	uint16_t   *ora = NULL;
	gs_exact_layout L;
	size_t		bufbytes = 0,
				orabytes = 0;
	gs_level_state hs;

	memset(&L, 0, sizeof L);
	e->last_sort_bits = 0;
	pairs = (gs_rank_pair *) malloc(nranks * sizeof *pairs);
	uniq = (uint64_t *) malloc(nranks * sizeof *uniq);
	map = (size_t *) malloc(nranks * sizeof *map);
	if (!pairs || !uniq || !map)
	{
		rc = gs_fail(err, GS_ERR_NOMEM, "out of host memory for %zu ranks", nranks);
		goto done;
	}
	for (size_t i = 0; i < nranks; i++)
	{
		pairs[i].r = ranks[i];
		pairs[i].i = i;
	}
	qsort(pairs, nranks, sizeof *pairs, gs_cmp_rank);
	for (size_t i = 0; i < nranks; i++)
	{
		if (nu == 0 || uniq[nu - 1] != pairs[i].r)
			uniq[nu++] = pairs[i].r;
		map[pairs[i].i] = nu - 1;
	}
	if (nu > (size_t) 1 << 30)
	{
		rc = gs_fail(err, GS_ERR_INVALID, "too many ranks");
		goto done;
	}

	gs_exact_layout_for(n, nu, &L);
	bufbytes = gs_round_up(L.cap * sizeof(K));
	if ((rc = gs_dev_alloc_internal(e, L.small_bytes, (void **) &small, err)) != GS_OK)
		goto done;
	if (L.cap > 0)
	{
		if ((rc = gs_dev_alloc_internal(e, bufbytes, (void **) &bufA, err)) != GS_OK)
			goto done;
		if ((rc = gs_dev_alloc_internal(e, bufbytes, (void **) &bufB, err)) != GS_OK)
			goto done;
	}
	if (nu > 1)
	{
		/* spread levels: the count pass's oracles, read by the filter */
		orabytes = gs_ora_bytes(n);
		if ((rc = gs_dev_alloc_internal(e, orabytes, (void **) &ora, err)) != GS_OK)
			goto done;
	}
	{
		gs_level_state *st = (gs_level_state *) (small + L.off_state);
		gs_ull	   *hist = (gs_ull *) (small + L.off_hist);
		gs_ull	   *start = (gs_ull *) (small + L.off_start);
		gs_ull	   *below = (gs_ull *) (small + L.off_below);
		gs_ull	   *dsplit = (gs_ull *) (small + L.off_dsplit);
		unsigned char *wmask = small + L.off_wmask;
		gs_ull	   *rank_cur = (gs_ull *) (small + L.off_rank);
		gs_ull	   *res = (gs_ull *) (small + L.off_res);
		int		   *resolved = (int *) (small + L.off_resolved);
		int		   *rbucket = (int *) (small + L.off_bucket);
		const bool	focused = nu == 1;
		const int	mopen = gs_mopen_for(nu);
		const int	P = focused ? 0 : mopen;
		const size_t smem_filter = focused ? 0 : gs_filter_smem(P);
		const gs_count_launch<K> kc = gs_count_kernel<K>(false, focused ? 1024 : P);
		const int	grid_count = focused ? gs_occ_grid<K>(e, (const void *) k_count_focus<K>, 0)
			: gs_occ_grid<K>(e, (const void *) kc.fn, kc.smem, kc.threads);
		const int	grid_filter = gs_occ_grid<K>(e, (const void *) k_filter<K>, smem_filter);
		int			levels = 0;
		const bool	wide = gs_wide_sample(nu);
		K		   *runs = (K *) (small + L.off_runs),
				   *sorted_sample = (K *) (small + L.off_sample);
		void		(*sample_fn) (gs_level_state *, const K *, K *, K *, gs_ull *, gs_ull *, gs_ull *, int *, gs_ull *,
								  const K *) =
			wide ? k_sample<K, gs_sample_policy::items_wide, true> : k_sample<K, gs_sample_policy::items, false>;
		const size_t sample_smem = wide ? sizeof(gs_sample_smem<K, gs_sample_policy::items_wide>)
			: sizeof(gs_sample_smem<K, gs_sample_policy::items>);
		const double sample_size = wide ? gs_sample_smem<K, gs_sample_policy::items_wide>::SIZE
			: gs_sample_smem<K, gs_sample_policy::items>::SIZE;
		const double keep = focused ? 0.05 : fmin(0.5, (wide ? 1.1 : 1.3) * (double) nu / mopen);
		double		sort_below = e->sort_finish == 2 ? 0.0 :
			(e->sort_finish == 1 ? 1e30 :
			 (focused ? (double) gs_focus_sort_below(e) : gs_sort_finish_below((unsigned) sizeof(K), mopen, keep)));

		memset(&hs, 0, sizeof hs);
		hs.n = n;
		hs.cap = L.cap;
		hs.seed = opt ? opt->seed : 0;
		hs.src = 0;
		hs.focused = focused;
		hs.focus_z = e->focus_z;
		hs.nranks = (int) nu;
		hs.nactive = (int) nu;
		hs.mopen = mopen;
		GS_CK(cudaEventRecord(e->ev_copy, e->cs), "cudaEventRecord");
		GS_CK(cudaStreamWaitEvent(e->s, e->ev_copy, 0), "cudaStreamWaitEvent");
		GS_CK(cudaMemcpyAsync(st, &hs, sizeof hs, cudaMemcpyHostToDevice, e->s), "copy state");
		GS_CK(cudaMemcpyAsync(rank_cur, uniq, nu * 8, cudaMemcpyHostToDevice, e->s), "copy ranks");
		GS_CK(cudaMemsetAsync(resolved, 0, nu * 4, e->s), "memset");
		if (e->inject > 0)
		{
			e->inject--;
			rc = gs_fail(err, GS_ERR_DEVICE, "injected launch failure");
			cudaStreamSynchronize(e->s);
			goto done;
		}

		/* levels are enqueued in batches; the host looks at the state only
		 * between batches (and polls the interrupt hook between levels) */
		for (;;)
		{
			int			batch;

			if (levels == 0)
			{
				double		est;

				if (focused)
				{
					/* the levels down to the finishing sort (or the base case) */
					double		lim = fmax(sort_below, sample_size);

					est = (double) n > lim ? log((double) n / lim) / log(1.0 / keep) : 0.0;
					est = fmax(est - 1.0, 0.0);		/* batch adds one */
				}
				else
				{
					/* levels until the kept union is below the sort threshold */
					double		lim = fmax(sort_below, sample_size);

					est = (double) n > lim ? log((double) n / lim) / log(1.0 / keep) : 0.0;
					if (est < 1.5)
						est = 1.5;
					est -= 1.5;		/* keep is pessimistic; one sync more is cheap */
				}
				batch = (int) ceil(est) + 1;
			}
			else
				batch = focused ? 3 : 1;
			for (int b = 0; b < batch; b++)
			{
				if ((rc = gs_check_interrupt(opt, err)) != GS_OK)
				{
					cudaStreamSynchronize(e->s);
					goto done;
				}
				if (wide)
				{
					gs_launch(k_sample_runs<K>, gs_sample_runs_policy::blocks, gs_sample_runs_policy::threads, 0, e->s, st, d_in, bufA, bufB, runs);
					gs_launch(k_sample_merge<K>, gs_sample_runs_policy::blocks, gs_sample_runs_policy::merge_threads, gs_sample_policy::size_wide * sizeof(K), e->s,
							  st, runs, sorted_sample);
				}
				gs_launch(sample_fn, 1, gs_sample_policy::threads, sample_smem, e->s,
						  st, d_in, bufA, bufB, hist, dsplit, rank_cur, resolved, res, wide ? sorted_sample : NULL);
				if (focused)
				{
					gs_launch(k_count_focus<K>, grid_count, gs_count_policy::threads, 0, e->s, st, d_in, bufA, bufB, hist, dsplit);
					gs_launch(k_plan<K, gs_plan_policy::threads_focus>, 1, gs_plan_policy::threads_focus, 0, e->s,
							  st, hist, start, below, dsplit, wmask, rank_cur, resolved, rbucket, res);
				}
				else
				{
					gs_launch(kc.fn, grid_count, kc.threads, kc.smem, e->s, st, d_in, bufA, bufB, hist, dsplit, (gs_minmax *) NULL, ora,
							  kc.cells_cap);
					gs_launch(k_plan<K, gs_plan_policy::threads>, 1, gs_plan_policy::threads, 0, e->s,
							  st, hist, start, below, dsplit, wmask, rank_cur, resolved, rbucket, res);
				}
				gs_launch(k_filter<K>, grid_filter, gs_count_policy::threads, smem_filter, e->s, st, d_in, bufA, bufB, dsplit,
						  wmask, ora);
				gs_launch(k_advance, 1, 1, 0, e->s, st, below);
				GS_CK(cudaGetLastError(), "kernel launch");
				levels++;
			}
			GS_CK(cudaMemcpyAsync(&hs, st, sizeof hs, cudaMemcpyDeviceToHost, e->s), "copy state back");
			GS_CK(cudaStreamSynchronize(e->s), "selection");
			if (hs.done)
				break;
			if (!hs.stuck && hs.src != 0 && (double) hs.n > sample_size && hs.n <= hs.cap &&
				(double) hs.n <= sort_below)
			{
				/* finish: sort the kept union (or bucket) once, pick every rank */
				gs_status	frc;

				if ((rc = gs_check_interrupt(opt, err)) != GS_OK)
					goto done;
				frc = gs_finish_sort<K>(e, hs.src == 1 ? bufA : bufB, hs.src == 1 ? bufB : bufA,
													(size_t) hs.n, rank_cur, resolved, (int) nu, res,
													hs.kbase, hs.kspan, err);

				if (frc == GS_OK)
					break;
				if (frc != GS_ERR_DEVICE_NOMEM)
				{
					rc = frc;
					goto done;
				}
				sort_below = 0;	/* no room for the sort's temp: go on with levels */
			}
			if (levels > 96)
			{
				rc = gs_fail(err, GS_ERR_DEVICE, "selection did not converge after %d levels", levels);
				goto done;
			}
		}
		if (hs.stuck)
		{
			/* release the level buffers first: the sort needs 2n */
			gs_dev_free_internal(e, bufA, bufbytes);
			gs_dev_free_internal(e, bufB, bufbytes);
			gs_dev_free_internal(e, ora, orabytes);
			bufA = bufB = NULL;
			ora = NULL;
			GS_CK(cudaMemcpyAsync(rank_cur, uniq, nu * 8, cudaMemcpyHostToDevice, e->s), "copy ranks");
			if ((rc = gs_sort_fallback<K>(e, d_in, n, rank_cur, (int) nu, res, err)) != GS_OK)
				goto done;
		}
		GS_CK(cudaMemcpyAsync(uniq, res, nu * 8, cudaMemcpyDeviceToHost, e->s), "copy results");
		GS_CK(cudaStreamSynchronize(e->s), "copy results");
		for (size_t i = 0; i < nranks; i++)
			out_keys[i] = uniq[map[i]];
		rc = gs_ok(err);
	}
done:
	gs_dev_free_internal(e, bufA, bufbytes);
	gs_dev_free_internal(e, bufB, bufbytes);
	gs_dev_free_internal(e, ora, orabytes);
	gs_dev_free_internal(e, small, L.small_bytes);
	free(pairs);
	free(uniq);
	free(map);
	return rc;
}

/* ------------------------------------------------------------ approximate */

/* the sample's buffers: whole runs of gs_approx_policy::run_keys (k_approx_runs) */
static size_t
gs_approx_sample_room(size_t s)
{
	return (s + gs_approx_policy::run_keys - 1) / gs_approx_policy::run_keys * gs_approx_policy::run_keys;
}

/* whether the sample is sorted as runs + merge (else a device radix sort):
 * 4-byte keys, at most gs_approx_policy::runs_max runs (k_sample_merge holds them
 * all in shared memory) */
static bool
gs_approx_runs(unsigned kb, size_t s)
{
	return kb == 4 && s <= (size_t) gs_approx_policy::runs_max * gs_approx_policy::run_keys;
}

static size_t
gs_approx_scratch(size_t n, unsigned kb, size_t nranks, unsigned B, int nblk, size_t *cub_bytes)
{
	size_t		s = (size_t) GS_APPROX_OVERSAMPLE * B;

	if (s > n)
		s = n;
	size_t		tb = 0;		/* CUB's temporary storage: only where it sorts the sample */

	if (kb != 4)
		cub::DeviceRadixSort::SortKeys(NULL, tb, (const uint64_t *) NULL, (uint64_t *) NULL, (int64_t) s);
	else if (!gs_approx_runs(kb, s))
		cub::DeviceRadixSort::SortKeys(NULL, tb, (const uint32_t *) NULL, (uint32_t *) NULL, (int64_t) s);
	if (cub_bytes)
		*cub_bytes = tb;
	return gs_round_up(sizeof(gs_level_state)) + 2 * gs_round_up(gs_approx_sample_room(s) * kb) + gs_round_up(tb)
		+ gs_round_up((size_t) B * 8) + gs_round_up((2 * (size_t) B + 1) * 8)
		+ gs_round_up((size_t) nblk * sizeof(gs_minmax)) + 3 * gs_round_up(((size_t) B + 2) * 8)
		+ gs_round_up(nranks * sizeof(gs_approx_pick)) + gs_round_up(nranks * 8);
}

template <typename K>
static gs_status
gs_select_approx_t(gs_cuda_engine *e, const K *d_in, size_t n, const uint64_t *ranks, size_t nranks,
				   const gs_options *opt, gs_approx_pick *out, gs_error *err)
{
	gs_status	rc = GS_OK;
	const unsigned B = opt->approx_buckets;
	const size_t s = (size_t) GS_APPROX_OVERSAMPLE * B < n ? (size_t) GS_APPROX_OVERSAMPLE * B : n;
	int			P = 1;

	while (P < (int) B)
		P <<= 1;
	const gs_count_launch<K> kc = gs_count_kernel<K>(true, P);
	const int	grid = gs_occ_grid<K>(e, (const void *) kc.fn, kc.smem, kc.threads);
	size_t		tb = 0;
	const size_t total = gs_approx_scratch(n, sizeof(K), nranks, B, grid, &tb);
	unsigned char *mem = NULL;

	if ((rc = gs_dev_alloc_internal(e, total, (void **) &mem, err)) != GS_OK)
		return rc;
	{
		size_t		o = 0;
		gs_level_state *st = (gs_level_state *) (mem + o);

		o += gs_round_up(sizeof(gs_level_state));
		K		   *sample = (K *) (mem + o);

		o += gs_round_up(gs_approx_sample_room(s) * sizeof(K));
		K		   *sorted = (K *) (mem + o);

		o += gs_round_up(gs_approx_sample_room(s) * sizeof(K));
		void	   *tmp = mem + o;

		o += gs_round_up(tb);
		gs_ull	   *dsplit = (gs_ull *) (mem + o);

		o += gs_round_up((size_t) B * 8);
		gs_ull	   *hist = (gs_ull *) (mem + o);

		o += gs_round_up((2 * (size_t) B + 1) * 8);
		gs_minmax  *mm = (gs_minmax *) (mem + o);

		o += gs_round_up((size_t) grid * sizeof(gs_minmax));
		gs_ull	   *ck = (gs_ull *) (mem + o);

		o += gs_round_up(((size_t) B + 2) * 8);
		gs_ull	   *clo = (gs_ull *) (mem + o);

		o += gs_round_up(((size_t) B + 2) * 8);
		gs_ull	   *chi = (gs_ull *) (mem + o);

		o += gs_round_up(((size_t) B + 2) * 8);
		gs_approx_pick *dpicks = (gs_approx_pick *) (mem + o);

		o += gs_round_up(nranks * sizeof(gs_approx_pick));
		gs_ull	   *dranks = (gs_ull *) (mem + o);
		GS_CK(cudaEventRecord(e->ev_copy, e->cs), "cudaEventRecord");
		GS_CK(cudaStreamWaitEvent(e->s, e->ev_copy, 0), "cudaStreamWaitEvent");
		GS_CK(cudaMemcpyAsync(dranks, ranks, nranks * 8, cudaMemcpyHostToDevice, e->s), "copy ranks");
		if (e->inject > 0)
		{
			e->inject--;
			rc = gs_fail(err, GS_ERR_DEVICE, "injected launch failure");
			cudaStreamSynchronize(e->s);
			goto done;
		}
		if ((rc = gs_check_interrupt(opt, err)) != GS_OK)
		{
			cudaStreamSynchronize(e->s);
			goto done;
		}
		bool		runs_sorted = false;

		if constexpr (sizeof(K) == 4)
		{
			if (gs_approx_runs(sizeof(K), s))
			{
				const int	nruns = (int) (gs_approx_sample_room(s) / gs_approx_policy::run_keys);

				gs_launch(k_approx_runs<K>, nruns, gs_approx_policy::run_threads, 0, e->s, st, d_in, (gs_ull) n, (gs_ull) s,
						  (gs_ull) opt->seed, sample);
				gs_launch(k_sample_merge<K, gs_approx_policy::run_keys>, nruns * (gs_approx_policy::run_keys / gs_sample_runs_policy::merge_threads),
						  gs_sample_runs_policy::merge_threads, (size_t) nruns * gs_approx_policy::run_keys * sizeof(K), e->s, st, sample,
						  sorted);
				runs_sorted = true;
			}
		}
		if (!runs_sorted)
		{
			k_approx_sample<K><<<(unsigned) ((s + 255) / 256), 256, 0, e->s>>>(st, d_in, n, s, opt->seed, sample);
			GS_CK(cudaGetLastError(), "launch k_approx_sample");
			GS_CK(cub::DeviceRadixSort::SortKeys(tmp, tb, sample, sorted, (int64_t) s, 0, (int) sizeof(K) * 8, e->s),
				  "DeviceRadixSort (sample)");
		}
		gs_launch(k_approx_split<K>, 1, gs_plan_policy::threads, 0, e->s, st, sorted, (gs_ull) s, (int) B, dsplit, hist);
		gs_launch(kc.fn, grid, kc.threads, kc.smem, e->s, st, d_in, (K *) NULL, (K *) NULL, hist, dsplit, mm,
				  (uint16_t *) NULL, kc.cells_cap);
		gs_launch(k_approx_pick<K>, 1, gs_plan_policy::threads, ((size_t) B + 2) * 8, e->s, st, hist, dsplit, mm, grid, dranks,
				  (int) nranks, ck, clo, chi, dpicks);
		GS_CK(cudaGetLastError(), "kernel launch");
		GS_CK(cudaMemcpyAsync(out, dpicks, nranks * sizeof(gs_approx_pick), cudaMemcpyDeviceToHost, e->s),
			  "copy picks");
		GS_CK(cudaStreamSynchronize(e->s), "approximate selection");
		rc = gs_ok(err);
	}
done:
	gs_dev_free_internal(e, mem, total);
	return rc;
}

/* ------------------------------------------------------------ validation */

static gs_status
gs_validate(gs_cuda_engine *e, const void *d_keys, size_t n, unsigned key_bytes, const uint64_t *ranks,
			size_t nranks, const void *out, gs_error *err)
{
	if (!e)
		return gs_fail(err, GS_ERR_INVALID, "no engine");
	if (key_bytes != 4 && key_bytes != 8)
		return gs_fail(err, GS_ERR_INVALID, "key_bytes must be 4 or 8 (widen 2-byte keys first), got %u",
					   key_bytes);
	if (nranks > 0 && (!ranks || !out))
		return gs_fail(err, GS_ERR_INVALID, "ranks or output is NULL");
	if (n > 0 && !d_keys)
		return gs_fail(err, GS_ERR_INVALID, "d_keys is NULL");
	if (n > 0 && ((uintptr_t) d_keys % key_bytes) != 0)
		return gs_fail(err, GS_ERR_INVALID, "d_keys is not aligned to %u bytes", key_bytes);
	if (nranks > 0 && n == 0)
		return gs_fail(err, GS_ERR_INVALID, "ranks requested from an empty input");
	for (size_t i = 0; i < nranks; i++)
		if (ranks[i] >= n)
			return gs_fail(err, GS_ERR_INVALID, "rank %llu out of range (n = %zu)",
						   (unsigned long long) ranks[i], n);
	return GS_OK;
}

static gs_status
gs_check_fits(gs_cuda_engine *e, size_t need, gs_error *err)
{
	size_t		fr = 0,
				tot = 0;

	if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return GS_OK;			/* let the allocation decide */
	}
	if (need > tot)
		return gs_fail(err, GS_ERR_TOO_LARGE, "selection needs %zu bytes of scratch; the device has %zu",
					   need, tot);
	return GS_OK;
}

/* 2-byte keys widened to 4 (gs_cuda_widen16) */
__global__ void
k_widen16(const uint16_t *src, uint32_t *dst, gs_ull n)
{
	for (gs_ull i = (gs_ull) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (gs_ull) gridDim.x * blockDim.x)
		dst[i] = src[i];
}

/* ------------------------------------------------------------ C API */

extern "C" {

gs_status
gs_cuda_open(int ordinal, gs_cuda_engine **out, gs_error *err)
{
	try
	{
		if (!out)
			return gs_fail(err, GS_ERR_INVALID, "out is NULL");
		return gs_cuda_open_impl(ordinal, out, err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception in gs_cuda_open");
	}
}

void
gs_cuda_close(gs_cuda_engine *e)
{
	if (!e)
		return;
	try
	{
		cudaSetDevice(e->dev);
		cudaStreamSynchronize(e->cs);
		cudaStreamSynchronize(e->s);
		while (e->recs)
		{
			gs_alloc_rec *r = e->recs;

			e->recs = r->next;
			if (r->host == 0)
				cudaFree(r->p);
			else if (r->host == 1)
				cudaFreeHost(r->p);
			else
				cudaHostUnregister(r->p);
			free(r);
		}
		{
			cudaMemPool_t pool;

			if (cudaDeviceGetDefaultMemPool(&pool, e->dev) == cudaSuccess)
				cudaMemPoolTrimTo(pool, 0);
		}
		cudaEventDestroy(e->ev_copy);
		cudaStreamDestroy(e->cs);
		cudaStreamDestroy(e->s);
		(void) cudaGetLastError();
	}
	catch (...)
	{
	}
	free(e);
}

gs_status
gs_cuda_device_info(gs_cuda_engine *e, char *name, size_t namelen, size_t *free_bytes,
				   size_t *total_bytes, gs_error *err)
{
	try
	{
		size_t		fr = 0,
					tot = 0;
		cudaError_t ce;

		if (!e)
			return gs_fail(err, GS_ERR_INVALID, "no engine");
		if (name && namelen)
			snprintf(name, namelen, "%s", e->name);
		ce = cudaMemGetInfo(&fr, &tot);
		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, "cudaMemGetInfo");
		if (free_bytes)
			*free_bytes = fr;
		if (total_bytes)
			*total_bytes = tot;
		return gs_ok(err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception");
	}
}

size_t
gs_cuda_scratch_bytes(size_t n, unsigned key_bytes, size_t nranks)
{
	if (key_bytes != 4 && key_bytes != 8)
		key_bytes = 8;
	if (nranks == 0)
		nranks = 1;
	size_t		ex = gs_exact_scratch(n, key_bytes, nranks);
	size_t		ap = gs_approx_scratch(n, key_bytes, nranks, GS_APPROX_BUCKETS_MAX, 132 * 8, NULL);

	return ex > ap ? ex : ap;
}

gs_status
gs_cuda_select(gs_cuda_engine *e, const void *d_keys, size_t n, unsigned key_bytes,
			  const uint64_t *ranks, size_t nranks, uint64_t *out_keys,
			  const gs_options *opt, gs_error *err)
{
	try
	{
		gs_status	rc = gs_validate(e, d_keys, n, key_bytes, ranks, nranks, out_keys, err);
		gs_options	dflt;

		if (rc != GS_OK)
			return rc;
		if (nranks == 0)
			return gs_ok(err);
		if (!opt)
		{
			memset(&dflt, 0, sizeof dflt);
			opt = &dflt;
		}
		if ((rc = gs_check_fits(e, gs_exact_scratch(n, key_bytes, nranks), err)) != GS_OK)
			return rc;
		if (cudaSetDevice(e->dev) != cudaSuccess)
			return gs_cuda_fail(err, cudaGetLastError(), "cudaSetDevice");
		if (key_bytes == 4)
			return gs_select_exact<uint32_t>(e, (const uint32_t *) d_keys, n, ranks, nranks, out_keys, opt, err);
		return gs_select_exact<uint64_t>(e, (const uint64_t *) d_keys, n, ranks, nranks, out_keys, opt, err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception in gs_cuda_select");
	}
}

gs_status
gs_cuda_select_approx(gs_cuda_engine *e, const void *d_keys, size_t n, unsigned key_bytes,
					 const uint64_t *ranks, size_t nranks, const gs_options *opt,
					 gs_approx_pick *out, gs_error *err)
{
	try
	{
		gs_status	rc = gs_validate(e, d_keys, n, key_bytes, ranks, nranks, out, err);

		if (rc != GS_OK)
			return rc;
		gs_options	o2;

		if (!opt)
			return gs_fail(err, GS_ERR_INVALID, "approximate selection needs options (approx_buckets, seed)");
		if (opt->approx_buckets == 0)
		{
			/* same default as the CPU engine */
			o2 = *opt;
			o2.approx_buckets = 1024;
			opt = &o2;
		}
		if (opt->approx_buckets < 2 || opt->approx_buckets > GS_APPROX_BUCKETS_MAX)
			return gs_fail(err, GS_ERR_INVALID, "approx_buckets must be in [2, %d], got %u",
						   GS_APPROX_BUCKETS_MAX, opt->approx_buckets);
		if (nranks == 0)
			return gs_ok(err);
		if (cudaSetDevice(e->dev) != cudaSuccess)
			return gs_cuda_fail(err, cudaGetLastError(), "cudaSetDevice");
		if (key_bytes == 4)
			return gs_select_approx_t<uint32_t>(e, (const uint32_t *) d_keys, n, ranks, nranks, opt, out, err);
		return gs_select_approx_t<uint64_t>(e, (const uint64_t *) d_keys, n, ranks, nranks, opt, out, err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception in gs_cuda_select_approx");
	}
}

gs_status
gs_cuda_alloc(gs_cuda_engine *e, size_t bytes, void **d_ptr, gs_error *err)
{
	try
	{
		if (!e || !d_ptr)
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		*d_ptr = NULL;
		if (e->mem_cap && e->dev_in_use + bytes > e->mem_cap)
			return gs_fail(err, GS_ERR_DEVICE_NOMEM, "device memory cap reached (%zu + %zu > %zu)",
						   e->dev_in_use, bytes, e->mem_cap);
		cudaError_t ce = cudaMalloc(d_ptr, bytes ? bytes : 1);

		if (ce != cudaSuccess)
		{
			*d_ptr = NULL;
			(void) cudaGetLastError();
			return gs_fail(err, GS_ERR_DEVICE_NOMEM, "cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(ce));
		}
		gs_rec_add(e, *d_ptr, bytes, 0);
		return gs_ok(err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception");
	}
}

void
gs_cuda_free(gs_cuda_engine *e, void *d_ptr)
{
	if (!e || !d_ptr)
		return;
	gs_rec_del(e, d_ptr, 0);
	cudaFree(d_ptr);
	(void) cudaGetLastError();
}

gs_status
gs_cuda_host_alloc(gs_cuda_engine *e, size_t bytes, void **h_ptr, gs_error *err)
{
	try
	{
		if (!e || !h_ptr)
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		*h_ptr = NULL;
		cudaError_t ce = cudaHostAlloc(h_ptr, bytes ? bytes : 1, cudaHostAllocPortable);

		if (ce != cudaSuccess)
		{
			*h_ptr = NULL;
			(void) cudaGetLastError();
			return gs_fail(err, GS_ERR_NOMEM, "cudaHostAlloc of %zu bytes: %s", bytes, cudaGetErrorString(ce));
		}
		gs_rec_add(e, *h_ptr, bytes, 1);
		return gs_ok(err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception");
	}
}

void
gs_cuda_host_free(gs_cuda_engine *e, void *h_ptr)
{
	if (!e || !h_ptr)
		return;
	gs_rec_del(e, h_ptr, 1);
	cudaFreeHost(h_ptr);
	(void) cudaGetLastError();
}

gs_status
gs_cuda_host_register(gs_cuda_engine *e, void *h_ptr, size_t bytes, gs_error *err)
{
	try
	{
		if (!e || !h_ptr)
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		cudaError_t ce = cudaHostRegister(h_ptr, bytes, cudaHostRegisterPortable);

		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, "cudaHostRegister");
		gs_rec_add(e, h_ptr, bytes, 2);
		return gs_ok(err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception");
	}
}

void
gs_cuda_host_unregister(gs_cuda_engine *e, void *h_ptr)
{
	if (!e || !h_ptr)
		return;
	if (gs_rec_del(e, h_ptr, 2))
		cudaHostUnregister(h_ptr);
	(void) cudaGetLastError();
}

gs_status
gs_cuda_copy_to_device_async(gs_cuda_engine *e, void *d_dst, const void *h_src, size_t bytes, gs_error *err)
{
	try
	{
		if (!e || (bytes && (!d_dst || !h_src)))
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		if (bytes == 0)
			return gs_ok(err);
		cudaError_t ce = cudaMemcpyAsync(d_dst, h_src, bytes, cudaMemcpyHostToDevice, e->cs);

		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, "cudaMemcpyAsync");
		return gs_ok(err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception");
	}
}

gs_status
gs_cuda_widen16(gs_cuda_engine *e, const void *d_src16, void *d_dst32, size_t n, gs_error *err)
{
	try
	{
		gs_status	rc = GS_OK;

		if (!e || (n && (!d_src16 || !d_dst32)))
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		if (n == 0)
			return gs_ok(err);
		GS_CK(cudaEventRecord(e->ev_copy, e->cs), "cudaEventRecord");
		GS_CK(cudaStreamWaitEvent(e->s, e->ev_copy, 0), "cudaStreamWaitEvent");
		{
			unsigned	grid = (unsigned) ((n + 255) / 256);

			if (grid > (unsigned) e->nsm * 8)
				grid = e->nsm * 8;
			k_widen16<<<grid, 256, 0, e->s>>>((const uint16_t *) d_src16, (uint32_t *) d_dst32, n);
		}
		GS_CK(cudaGetLastError(), "launch k_widen16");
		GS_CK(cudaStreamSynchronize(e->s), "widen16");
		return gs_ok(err);
done:
		return rc;
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception");
	}
}

gs_status
gs_cuda_sync(gs_cuda_engine *e, gs_error *err)
{
	try
	{
		gs_status	rc = GS_OK;

		if (!e)
			return gs_fail(err, GS_ERR_INVALID, "no engine");
		GS_CK(cudaStreamSynchronize(e->cs), "copy stream");
		GS_CK(cudaStreamSynchronize(e->s), "compute stream");
		return gs_ok(err);
done:
		return rc;
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception");
	}
}

void
gs_cuda_set_memory_cap(gs_cuda_engine *e, size_t bytes)
{
	if (e)
		e->mem_cap = bytes;
}

/* test hook (not in gs_cuda.h): multiselect finishing sort, 0 by the cost
 * model, 1 always after the first level, 2 never */
void		gs_cuda_test_sort_finish(gs_cuda_engine *e, int mode);

void
gs_cuda_test_sort_finish(gs_cuda_engine *e, int mode)
{
	if (e)
		e->sort_finish = mode;
}

/* test hook (not in gs_cuda.h): single-rank finishing-sort threshold in
 * keys (0: never sort; negative: the default) */
void		gs_cuda_test_focus_sort(gs_cuda_engine *e, long long below);

void
gs_cuda_test_focus_sort(gs_cuda_engine *e, long long below)
{
	if (e)
		e->focus_sort = below < 0 ? -1 : below;
}

/* test hook (not in gs_cuda.h): single-rank splitter distance in sigmas
 * (<= 0: the default) */
void		gs_cuda_test_focus_z(gs_cuda_engine *e, double z);

void
gs_cuda_test_focus_z(gs_cuda_engine *e, double z)
{
	if (e)
		e->focus_z = z > 0 ? z : gs_host_policy::focus_z;
}

/* test hook (not in gs_cuda.h): key bits the last finishing sort sorted on */
int			gs_cuda_test_last_sort_bits(gs_cuda_engine *e);

int
gs_cuda_test_last_sort_bits(gs_cuda_engine *e)
{
	return e ? e->last_sort_bits : 0;
}

void
gs_cuda_inject_launch_failures(gs_cuda_engine *e, int count)
{
	if (e)
		e->inject = count > 0 ? count : 0;
}

void
gs_cuda_memory_in_use(gs_cuda_engine *e, size_t *device_bytes, size_t *host_pinned_bytes)
{
	if (device_bytes)
		*device_bytes = e ? e->dev_in_use + e->internal_in_use : 0;
	if (host_pinned_bytes)
		*host_pinned_bytes = e ? e->host_in_use : 0;
}

}								/* extern "C" */
