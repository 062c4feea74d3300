/*
 * gs_cuda.cu — the CUDA engine behind gs_cuda.h: lifecycle, memory
 * accounting, fault injection, validation and the extern "C" entries.  The
 * selections are in gs_cuda_exact.cu and gs_cuda_approx.cu; what the host
 * files share is in gs_cuda_internal.h.
 *
 * Nothing here throws, aborts or prints: every CUDA return code is checked
 * and turned into a gs_status with a message.  The extern "C" entries also
 * catch (...) as a last line of defence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <cuda_runtime.h>

#include "gs_cuda_internal.h"

/* ------------------------------------------------------------ errors */

gs_status
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

gs_status
gs_ok(gs_error *err)
{
	if (err)
	{
		err->status = GS_OK;
		err->message[0] = '\0';
	}
	return GS_OK;
}

gs_status
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

gs_status
gs_check_interrupt(const gs_options *opt, gs_error *err)
{
	if (opt && opt->interrupt && opt->interrupt(opt->interrupt_arg))
		return gs_fail(err, GS_ERR_CANCELED, "canceled by interrupt");
	return GS_OK;
}

/* ------------------------------------------------------------ memory */

gs_status
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

void
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

/* ------------------------------------------------------------ launches */

size_t
gs_static_smem(const void *fn)
{
	cudaFuncAttributes fa;

	if (cudaFuncGetAttributes(&fa, fn) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return 0;
	}
	return fa.sharedSizeBytes;
}

bool
gs_smem_fits(const gs_cuda_engine *e, const void *fn, size_t dyn)
{
	return fn != NULL && gs_static_smem(fn) + dyn <= e->lim.smem_per_block;
}

size_t
gs_dyn_budget(const gs_cuda_engine *e, const void *fn)
{
	const size_t st = gs_static_smem(fn);

	return st < e->lim.smem_per_block ? e->lim.smem_per_block - st : 0;
}

/*
 * The runtime's occupancy is the real device's; under a smaller card's
 * limits (gs_cuda_open_limited) the blocks per SM are also bounded by that
 * card's threads, blocks and shared memory per SM (1 KB of which each
 * block's system use takes from sm_80 on).
 */
int
gs_occ_grid(gs_cuda_engine *e, const void *fn, size_t dyn, int threads)
{
	int			per = 0;

	if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, fn, threads, dyn) != cudaSuccess || per < 1)
	{
		(void) cudaGetLastError();
		per = 1;
	}
	{
		const size_t blk = gs_static_smem(fn) + dyn + 1024;
		int			lim = e->lim.max_threads_per_sm / threads;

		if (lim > e->lim.max_blocks_per_sm)
			lim = e->lim.max_blocks_per_sm;
		if ((size_t) lim > e->lim.smem_per_sm / blk)
			lim = (int) (e->lim.smem_per_sm / blk);
		if (per > lim)
			per = lim < 1 ? 1 : lim;
	}
	return per * e->nsm;
}

/* ------------------------------------------------------------ limits */

/* a kernel of this file whose PTX version says what the build's code for
 * this device was compiled as (gs_pdl_usable) */
__global__ void
k_pdl_probe(void)
{
}

/* smaller cards whose limits a test may plan with (gs_cuda_open_limited);
 * figures: the CUDA C++ Programming Guide's table of compute capabilities,
 * SM counts of the card named */
static const struct
{
	const char *name;
	gs_cuda_limits lim;
}			gs_limit_presets[] =
{
	{"sm_75", {7, 5, 40, 1024, 16, 64 * 1024, 64 * 1024}},	/* T4 */
	{"sm_80", {8, 0, 108, 2048, 32, 163 * 1024, 164 * 1024}},	/* A100 */
	{"sm_86", {8, 6, 72, 1536, 16, 99 * 1024, 100 * 1024}},	/* A10 */
	{"sm_89", {8, 9, 58, 1536, 24, 99 * 1024, 100 * 1024}},	/* L4 */
};

static gs_status
gs_read_limits(int ordinal, gs_cuda_limits *l, gs_error *err)
{
	int			v[7];
	const cudaDeviceAttr at[7] = {
		cudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMinor,
		cudaDevAttrMultiProcessorCount, cudaDevAttrMaxThreadsPerMultiProcessor,
		cudaDevAttrMaxBlocksPerMultiprocessor, cudaDevAttrMaxSharedMemoryPerBlockOptin,
		cudaDevAttrMaxSharedMemoryPerMultiprocessor};

	for (int i = 0; i < 7; i++)
	{
		cudaError_t ce = cudaDeviceGetAttribute(&v[i], at[i], ordinal);

		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, "cudaDeviceGetAttribute");
	}
	l->cc_major = v[0];
	l->cc_minor = v[1];
	l->sm_count = v[2];
	l->max_threads_per_sm = v[3];
	l->max_blocks_per_sm = v[4];
	l->smem_per_block = (size_t) v[5];
	l->smem_per_sm = (size_t) v[6];
	return GS_OK;
}

/* the device's limits, each lowered to the preset's (a test setting) */
static gs_status
gs_apply_preset(const char *name, gs_cuda_limits *l, gs_error *err)
{
	if (name == NULL || name[0] == '\0')
		return GS_OK;
	for (size_t i = 0; i < sizeof gs_limit_presets / sizeof gs_limit_presets[0]; i++)
		if (strcmp(name, gs_limit_presets[i].name) == 0)
		{
			const gs_cuda_limits *p = &gs_limit_presets[i].lim;

			/* the code that runs is the device's: its compute capability stays */
			l->sm_count = l->sm_count < p->sm_count ? l->sm_count : p->sm_count;
			l->max_threads_per_sm = l->max_threads_per_sm < p->max_threads_per_sm ? l->max_threads_per_sm
				: p->max_threads_per_sm;
			l->max_blocks_per_sm = l->max_blocks_per_sm < p->max_blocks_per_sm ? l->max_blocks_per_sm
				: p->max_blocks_per_sm;
			l->smem_per_block = l->smem_per_block < p->smem_per_block ? l->smem_per_block : p->smem_per_block;
			l->smem_per_sm = l->smem_per_sm < p->smem_per_sm ? l->smem_per_sm : p->smem_per_sm;
			return GS_OK;
		}
	return gs_fail(err, GS_ERR_INVALID, "unknown device limits \"%s\" (sm_75, sm_80, sm_86, sm_89)", name);
}

/*
 * Programmatic dependent launch needs the device (9.0+) and kernels built
 * with griddepcontrol (gs_pdl_enter: PTX 9.0+).  A build whose code for this
 * device is older PTX, JIT-compiled (CUDA_FORCE_PTX_JIT with compute_80
 * PTX on a Hopper), has kernels that do not wait: launched as dependents
 * they could read a level's state before the kernel before them wrote it.
 */
static bool
gs_pdl_usable(const gs_cuda_engine *e)
{
	cudaFuncAttributes fa;

	if (e->lim.cc_major < 9)
		return false;
	if (cudaFuncGetAttributes(&fa, (const void *) k_pdl_probe) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	return fa.ptxVersion >= 90;
}

/* ------------------------------------------------------------ lifecycle */

static gs_status
gs_cuda_open_impl(int ordinal, const char *limits, gs_cuda_engine **out, gs_error *err)
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
	if (prop.major * 10 + prop.minor < 75)
	{
		rc = gs_fail(err, GS_ERR_NO_DEVICE, "device %s has compute capability %d.%d; gpuselect needs 7.5 or later",
					 prop.name, prop.major, prop.minor);
		goto done;
	}
	if ((rc = gs_read_limits(ordinal, &e->lim, err)) != GS_OK ||
		(rc = gs_apply_preset(limits, &e->lim, err)) != GS_OK)
		goto done;
	e->nsm = e->lim.sm_count;
	e->pdl = gs_pdl_usable(e);
	/* (the preset's name is one of gs_limit_presets': short) */
	snprintf(e->name, sizeof e->name, "%.200s%s%.8s%s", prop.name, limits && limits[0] ? " (planned as " : "",
			 limits && limits[0] ? limits : "", limits && limits[0] ? ")" : "");
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
	GS_CK(gs_exact_set_attrs(e), "cudaFuncSetAttribute");
	GS_CK(gs_approx_set_attrs(e), "cudaFuncSetAttribute");
	GS_CK(gs_count_set_attrs(e), "cudaFuncSetAttribute");
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

/* gs_cuda_test_plan's words on the approximate count at the most buckets */
template <typename K>
static size_t
gs_plan_count(gs_cuda_engine *e, char *buf, size_t len)
{
	const gs_count_launch<K> c = gs_count_kernel<K>(e, true, GS_APPROX_BUCKETS_MAX);

	if (c.fn == NULL)
		return (size_t) snprintf(buf, len, "; approximate %d buckets: none", GS_APPROX_BUCKETS_MAX);
	return (size_t) snprintf(buf, len, "; approximate %d buckets: %d pass%s, %d cells%s", GS_APPROX_BUCKETS_MAX,
							 c.passes, c.passes == 1 ? "" : "es", c.cells_cap,
							 c.gspl ? ", splitters in global memory" : "");
}

/* ------------------------------------------------------------ C API */

extern "C" {

gs_status
gs_cuda_open_limited(int ordinal, const char *limits, gs_cuda_engine **out, gs_error *err)
{
	try
	{
		if (!out)
			return gs_fail(err, GS_ERR_INVALID, "out is NULL");
		return gs_cuda_open_impl(ordinal, limits, out, err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception in gs_cuda_open");
	}
}

gs_status
gs_cuda_open(int ordinal, gs_cuda_engine **out, gs_error *err)
{
	return gs_cuda_open_limited(ordinal, NULL, out, err);
}

void
gs_cuda_get_limits(const gs_cuda_engine *e, gs_cuda_limits *out)
{
	if (e && out)
		*out = e->lim;
}

gs_status
gs_cuda_device_count(int *count, gs_error *err)
{
	try
	{
		int			n = 0;
		cudaError_t ce;

		if (!count)
			return gs_fail(err, GS_ERR_INVALID, "count is NULL");
		*count = 0;
		ce = cudaGetDeviceCount(&n);
		if (ce != cudaSuccess)
		{
			(void) cudaGetLastError();
			return gs_fail(err, GS_ERR_NO_DEVICE, "no usable CUDA device: %s (%d)",
						   cudaGetErrorString(ce), (int) ce);
		}
		if (n <= 0)
			return gs_fail(err, GS_ERR_NO_DEVICE, "no CUDA device");
		*count = n;
		return gs_ok(err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception in gs_cuda_device_count");
	}
}

gs_status
gs_cuda_make_current(gs_cuda_engine *e, gs_error *err)
{
	try
	{
		cudaError_t ce;

		if (!e)
			return gs_fail(err, GS_ERR_INVALID, "no engine");
		ce = cudaSetDevice(e->dev);
		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, "cudaSetDevice");
		return gs_ok(err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception in gs_cuda_make_current");
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

/*
 * The larger of the two modes' temporaries as e would lay them out: exact
 * mode with e's open buckets and sample (gs_exact_scratch), approximate
 * mode at the most buckets, with as many count blocks as e's SMs hold
 * (gs_occ_grid: at least 256 threads each) and the 4-byte sample merged
 * from e's runs.  Without an engine: an H100's (132 SMs, 8 runs).
 */
size_t
gs_cuda_scratch_bytes(const gs_cuda_engine *e, size_t n, unsigned key_bytes, size_t nranks)
{
	int			nblk = 132 * 8,
				runs_max = gs_approx_policy::runs_max;

	if (key_bytes != 4 && key_bytes != 8)
		key_bytes = 8;
	if (nranks == 0)
		nranks = 1;
	if (e)
	{
		const int	per = e->lim.max_threads_per_sm / gs_count_policy::threads;

		nblk = e->nsm * (per > 1 ? per : 1);
		runs_max = e->approx_runs_max;
	}
	size_t		ex = gs_exact_scratch(e, n, key_bytes, nranks);
	size_t		ap = gs_approx_scratch(n, key_bytes, nranks, GS_APPROX_BUCKETS_MAX, nblk, runs_max, NULL);

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
		if ((rc = gs_check_fits(e, gs_exact_scratch(e, n, key_bytes, nranks), err)) != GS_OK)
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

/* one asynchronous copy on the engine's copy stream (both public copies) */
static gs_status
copy_async(gs_cuda_engine *e, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
		   const char *what, gs_error *err)
{
	try
	{
		if (!e || (bytes && (!dst || !src)))
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		if (bytes == 0)
			return gs_ok(err);
		cudaError_t ce = cudaMemcpyAsync(dst, src, bytes, kind, e->cs);

		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, what);
		return gs_ok(err);
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception");
	}
}

gs_status
gs_cuda_copy_to_device_async(gs_cuda_engine *e, void *d_dst, const void *h_src, size_t bytes, gs_error *err)
{
	return copy_async(e, d_dst, h_src, bytes, cudaMemcpyHostToDevice, "cudaMemcpyAsync", err);
}

gs_status
gs_cuda_copy_device_async(gs_cuda_engine *e, void *d_dst, const void *d_src, size_t bytes, gs_error *err)
{
	return copy_async(e, d_dst, d_src, bytes, cudaMemcpyDeviceToDevice,
					  "cudaMemcpyAsync (device to device)", err);
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

/* test hook (not in gs_cuda.h): exact mode's path, GS_CPU_PATH_AUTO (the
 * rule, gs_sort_path_policy), _SELECT or _SORT (the whole input sorted) */
void		gs_cuda_test_exact_path(gs_cuda_engine *e, int path);

void
gs_cuda_test_exact_path(gs_cuda_engine *e, int path)
{
	if (e)
		e->exact_path = path;
}

/* test hook (not in gs_cuda.h): did the last exact call sort the whole input? */
int			gs_cuda_test_last_exact_sorted(gs_cuda_engine *e);

int
gs_cuda_test_last_exact_sorted(gs_cuda_engine *e)
{
	return e ? e->last_exact_sorted : 0;
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

/* test hook (not in gs_cuda.h): the layouts e plans with under its limits,
 * one line (test/gpu/gs_test.cu prints it: arch_limits.sh's logs say which
 * paths each run took) */
void		gs_cuda_test_plan(gs_cuda_engine *e, char *buf, size_t len);

void
gs_cuda_test_plan(gs_cuda_engine *e, char *buf, size_t len)
{
	size_t		o = 0;

	if (!e || !buf || len == 0)
		return;
	buf[0] = '\0';
	for (int i = 0; i < 2 && o < len; i++)
	{
		const int	kb = i ? 8 : 4;
		const int	lay = e->sample_layout[i];
		const int	bits = lay == GS_SAMPLE_SMALL ? gs_sample_small_policy::radix_bits : gs_sample_policy::radix_bits;

		if (lay == GS_SAMPLE_NONE)
			o += (size_t) snprintf(buf + o, len - o, "%s%d-byte exact: none", i ? "; " : "", kb);
		else
			o += (size_t) snprintf(buf + o, len - o,
								   "%s%d-byte exact: sample %d keys, %d-bit digits, up to %d buckets, wide sample %s",
								   i ? "; " : "", kb, gs_exact_sample_keys(e, (unsigned) kb), bits, e->mopen_max[i],
								   e->wide_ok[i] ? "yes" : "no");
		if (o < len)
			o += kb == 4 ? gs_plan_count<uint32_t>(e, buf + o, len - o) : gs_plan_count<uint64_t>(e, buf + o, len - o);
	}
	if (o < len)
		snprintf(buf + o, len - o, "; 4-byte approximate sample merged from %d runs", e->approx_runs_max);
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
