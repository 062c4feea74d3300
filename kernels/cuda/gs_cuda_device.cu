/*
 * gs_cuda_device.cu — the CUDA engine's device (gs_cuda.h): its limits (the
 * device's own or a smaller card's preset), what a launch may use under
 * them (occupancy, shared memory), and the engine's lifecycle: open,
 * make current, device info, close.
 *
 * Nothing here throws, aborts or prints: every CUDA return code is checked
 * and turned into a gs_status with a message.  The extern "C" entries also
 * run through gs_guard (catch (...)) as a last line of defence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>

#include "gs_cuda_internal.h"

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

/* ------------------------------------------------------------ C API */

extern "C" {

gs_status
gs_cuda_open_limited(int ordinal, const char *limits, gs_cuda_engine **out, gs_error *err)
{
	return gs_guard(err, "gs_cuda_open_limited", [&]() -> gs_status {
		if (!out)
			return gs_fail(err, GS_ERR_INVALID, "out is NULL");
		return gs_cuda_open_impl(ordinal, limits, out, err);
	});
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
	return gs_guard(err, "gs_cuda_device_count", [&]() -> gs_status {
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
	});
}

gs_status
gs_cuda_make_current(gs_cuda_engine *e, gs_error *err)
{
	return gs_guard(err, "gs_cuda_make_current", [&]() -> gs_status {
		cudaError_t ce;

		if (!e)
			return gs_fail(err, GS_ERR_INVALID, "no engine");
		ce = cudaSetDevice(e->dev);
		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, "cudaSetDevice");
		return gs_ok(err);
	});
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
	return gs_guard(err, "gs_cuda_device_info", [&]() -> gs_status {
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
	});
}

}								/* extern "C" */
