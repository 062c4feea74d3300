/*
 * gs_cuda.cu — the CUDA engine behind gs_cuda.h: the selection entries
 * (validation, the scratch estimate, exact and approximate selection) and
 * the errors every host file reports through.  The selections themselves
 * are in gs_cuda_exact.cu and gs_cuda_approx.cu; a device's lifecycle and
 * limits in gs_cuda_device.cu; memory and copies in gs_cuda_memory.cu;
 * the test hooks in gs_cuda_test_hooks.cu; what the host files share in
 * gs_cuda_internal.h.
 *
 * Nothing here throws, aborts or prints: every CUDA return code is checked
 * and turned into a gs_status with a message.  The extern "C" entries also
 * run through gs_guard (catch (...)) as a last line of defence.
 */
#include <stdio.h>
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

/* ------------------------------------------------------------ C API */

extern "C" {

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
	return gs_guard(err, "gs_cuda_select", [&]() -> gs_status {
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
	});
}

gs_status
gs_cuda_select_approx(gs_cuda_engine *e, const void *d_keys, size_t n, unsigned key_bytes,
					 const uint64_t *ranks, size_t nranks, const gs_options *opt,
					 gs_approx_pick *out, gs_error *err)
{
	return gs_guard(err, "gs_cuda_select_approx", [&]() -> gs_status {
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
	});
}

}								/* extern "C" */
