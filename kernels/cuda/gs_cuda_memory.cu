/*
 * gs_cuda_memory.cu — the CUDA engine's memory (gs_cuda.h): a call's
 * device temporaries (stream-ordered, counted against the memory cap), the
 * caller's device, pinned and registered host memory (recorded, so that
 * gs_cuda_close frees what is left), the copies on the copy stream, the
 * widening of 2-byte keys, and the counts of what is in use.
 *
 * Nothing here throws, aborts or prints: every CUDA return code is checked
 * and turned into a gs_status with a message.  The extern "C" entries also
 * run through gs_guard (catch (...)) as a last line of defence.
 */
#include <stdlib.h>
#include <cuda_runtime.h>

#include "gs_cuda_internal.h"

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

/*
 * A counted device allocation (gs_cuda_alloc, gs_cuda_alloc_async): within
 * the engine's cap, recorded for gs_cuda_memory_in_use.  `on` is the
 * stream a stream-ordered allocation is ordered on; NULL: cudaMalloc.
 */
static gs_status
counted_alloc(gs_cuda_engine *e, size_t bytes, void **d_ptr, cudaStream_t *on, gs_error *err)
{
	if (!e || !d_ptr)
		return gs_fail(err, GS_ERR_INVALID, "bad arguments");
	*d_ptr = NULL;
	if (e->mem_cap && e->dev_in_use + bytes > e->mem_cap)
		return gs_fail(err, GS_ERR_DEVICE_NOMEM, "device memory cap reached (%zu + %zu > %zu)",
					   e->dev_in_use, bytes, e->mem_cap);
	cudaError_t ce = on ? cudaMallocAsync(d_ptr, bytes ? bytes : 1, *on) : cudaMalloc(d_ptr, bytes ? bytes : 1);

	if (ce != cudaSuccess)
	{
		*d_ptr = NULL;
		(void) cudaGetLastError();
		return gs_fail(err, GS_ERR_DEVICE_NOMEM, "%s of %zu bytes: %s", on ? "cudaMallocAsync" : "cudaMalloc",
					   bytes, cudaGetErrorString(ce));
	}
	gs_rec_add(e, *d_ptr, bytes, 0);
	return gs_ok(err);
}

gs_status
gs_cuda_alloc(gs_cuda_engine *e, size_t bytes, void **d_ptr, gs_error *err)
{
	return gs_guard(err, "gs_cuda_alloc", [&]() -> gs_status {
		return counted_alloc(e, bytes, d_ptr, NULL, err);
	});
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

/*
 * A job's key buffer from the device's stream-ordered pool: cudaMallocAsync
 * on the copy stream (the copies into it follow there), freed with
 * cudaFreeAsync once both streams' work on it is enqueued.  cudaMalloc and
 * cudaFree cost tens to hundreds of microseconds a call, cudaFree waits for
 * the whole device, and both take driver locks the other devices' lanes of
 * the same process contend for: for the service's small jobs they were a
 * good part of a job's host time (issue #35).  The pool keeps up to 1 GiB
 * of freed memory between calls (gs_cuda_open), so a same-sized buffer
 * comes back without a device call.  Counted as gs_cuda_alloc's are.
 */
gs_status
gs_cuda_alloc_async(gs_cuda_engine *e, size_t bytes, void **d_ptr, gs_error *err)
{
	return gs_guard(err, "gs_cuda_alloc_async", [&]() -> gs_status {
		return counted_alloc(e, bytes, d_ptr, e ? &e->cs : NULL, err);
	});
}

void
gs_cuda_free_async(gs_cuda_engine *e, void *d_ptr)
{
	if (!e || !d_ptr)
		return;
	gs_rec_del(e, d_ptr, 0);
	/* after the copy stream's work on it (an error path may not have synced) */
	if (cudaEventRecord(e->ev_copy, e->cs) == cudaSuccess)
		(void) cudaStreamWaitEvent(e->s, e->ev_copy, 0);
	cudaFreeAsync(d_ptr, e->s);
	(void) cudaGetLastError();
}

gs_status
gs_cuda_host_alloc(gs_cuda_engine *e, size_t bytes, void **h_ptr, gs_error *err)
{
	return gs_guard(err, "gs_cuda_host_alloc", [&]() -> gs_status {
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
	});
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
	return gs_guard(err, "gs_cuda_host_register", [&]() -> gs_status {
		if (!e || !h_ptr)
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		cudaError_t ce = cudaHostRegister(h_ptr, bytes, cudaHostRegisterPortable);

		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, "cudaHostRegister");
		gs_rec_add(e, h_ptr, bytes, 2);
		return gs_ok(err);
	});
}

gs_status
gs_cuda_host_register_mapped(gs_cuda_engine *e, void *h_ptr, size_t bytes, gs_error *err)
{
	return gs_guard(err, "gs_cuda_host_register_mapped", [&]() -> gs_status {
		if (!e || !h_ptr)
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		cudaError_t ce = cudaHostRegister(h_ptr, bytes,
										  cudaHostRegisterPortable | cudaHostRegisterMapped);

		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, "cudaHostRegister (mapped)");
		gs_rec_add(e, h_ptr, bytes, 2);
		return gs_ok(err);
	});
}

gs_status
gs_cuda_host_device_address(gs_cuda_engine *e, void *h_ptr, uint64_t *d_addr, gs_error *err)
{
	return gs_guard(err, "gs_cuda_host_device_address", [&]() -> gs_status {
		void	   *d = NULL;

		if (!e || !h_ptr || !d_addr)
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		if (cudaSetDevice(e->dev) != cudaSuccess)
			return gs_cuda_fail(err, cudaGetLastError(), "cudaSetDevice");
		cudaError_t ce = cudaHostGetDevicePointer(&d, h_ptr, 0);

		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, "cudaHostGetDevicePointer");
		*d_addr = (uint64_t) (uintptr_t) d;
		return gs_ok(err);
	});
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
	return gs_guard(err, "copy_async", [&]() -> gs_status {
		if (!e || (bytes && (!dst || !src)))
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		if (bytes == 0)
			return gs_ok(err);
		cudaError_t ce = cudaMemcpyAsync(dst, src, bytes, kind, e->cs);

		if (ce != cudaSuccess)
			return gs_cuda_fail(err, ce, what);
		return gs_ok(err);
	});
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
	return gs_guard(err, "gs_cuda_widen16", [&]() -> gs_status {
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
	});
}

gs_status
gs_cuda_sync(gs_cuda_engine *e, gs_error *err)
{
	return gs_guard(err, "gs_cuda_sync", [&]() -> gs_status {
		gs_status	rc = GS_OK;

		if (!e)
			return gs_fail(err, GS_ERR_INVALID, "no engine");
		GS_CK(cudaStreamSynchronize(e->cs), "copy stream");
		GS_CK(cudaStreamSynchronize(e->s), "compute stream");
		return gs_ok(err);
done:
		return rc;
	});
}

void
gs_cuda_set_memory_cap(gs_cuda_engine *e, size_t bytes)
{
	if (e)
		e->mem_cap = bytes;
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
