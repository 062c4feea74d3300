/*
 * service_cuda_none.c — the service's CUDA backend in a CPU-only build
 * (USE_CUDA=0): there is none.  service_shmem.c does not start the service
 * in "on" mode in such a build, so these only answer "no device".
 */
#include <stdio.h>

#include "service/service_cuda.h"

static gs_status
no_cuda(gs_error *err)
{
	err->status = GS_ERR_NO_DEVICE;
	snprintf(err->message, sizeof(err->message), "this build has no CUDA support");
	return GS_ERR_NO_DEVICE;
}

gs_status
gs_svc_cuda_device_count(int *count, gs_error *err)
{
	*count = 0;
	return no_cuda(err);
}

gs_status
gs_svc_cuda_open(int ordinal, void *pool, size_t pool_bytes, gs_svc_cuda_dev **out,
				 char *name, size_t namelen, gs_error *err)
{
	(void) ordinal;
	(void) pool;
	(void) pool_bytes;
	*out = NULL;
	if (namelen > 0)
		name[0] = '\0';
	return no_cuda(err);
}

gs_status
gs_svc_cuda_bind(gs_svc_cuda_dev *dev, gs_error *err)
{
	(void) dev;
	return no_cuda(err);
}

gs_status
gs_svc_cuda_select(gs_svc_cuda_dev *dev, const gs_input *in, const void *const *seg_dev,
				   const uint64_t *ranks, size_t nranks, uint64_t *out_keys,
				   gs_approx_pick *picks, const gs_options *opt, double *copy_ms,
				   uint64_t *bytes_copied, bool *sticky, gs_error *err)
{
	(void) dev;
	(void) in;
	(void) seg_dev;
	(void) ranks;
	(void) nranks;
	(void) out_keys;
	(void) picks;
	(void) opt;
	*copy_ms = 0;
	*bytes_copied = 0;
	*sticky = false;
	return no_cuda(err);
}

bool
gs_svc_cuda_fits(gs_svc_cuda_dev *dev, size_t nkeys, unsigned key_bytes, size_t nranks)
{
	(void) dev;
	(void) nkeys;
	(void) key_bytes;
	(void) nranks;
	return true;
}

gs_status
gs_svc_cuda_select_split(gs_svc_cuda_dev *const *devs, int ndevs, const gs_input *in,
						 const uint64_t *ranks, size_t nranks, uint64_t *out_keys, size_t budget,
						 const gs_options *opt, double *copy_ms, uint64_t *bytes_copied, bool *sticky,
						 gs_error *err)
{
	(void) devs;
	(void) ndevs;
	(void) in;
	(void) ranks;
	(void) nranks;
	(void) out_keys;
	(void) budget;
	(void) opt;
	*copy_ms = 0;
	*bytes_copied = 0;
	*sticky = false;
	return no_cuda(err);
}

gs_status
gs_svc_cuda_prefetch(gs_svc_cuda_dev *dev, const void *host, size_t bytes, void **d_copy,
					 gs_error *err)
{
	(void) dev;
	(void) host;
	(void) bytes;
	*d_copy = NULL;
	return no_cuda(err);
}

void
gs_svc_cuda_unfetch(gs_svc_cuda_dev *dev, void *d_copy)
{
	(void) dev;
	(void) d_copy;
}

void
gs_svc_cuda_memory(gs_svc_cuda_dev *dev, uint64_t *engine_bytes, uint64_t *engine_peak,
				   uint64_t *device_used, uint64_t *device_total)
{
	(void) dev;
	*engine_bytes = *engine_peak = *device_used = *device_total = 0;
}

void
gs_svc_cuda_close(gs_svc_cuda_dev *dev)
{
	(void) dev;
}

void
gs_svc_cuda_arm_fault(gs_svc_cuda_dev *dev, gs_svc_cuda_fault kind)
{
	(void) dev;
	(void) kind;
}

gs_status
gs_svc_cuda_extract_pages(gs_svc_cuda_dev *dev, void *base, size_t base_bytes,
						  const uint64_t *page_off, size_t npages, size_t page_bytes,
						  const uint32_t *items, size_t n, const gs_page_column *col,
						  void *const *segs, const size_t *seg_keys, size_t nsegs,
						  size_t *out_n, bool *sticky, gs_error *err)
{
	(void) dev;
	(void) base;
	(void) base_bytes;
	(void) page_off;
	(void) npages;
	(void) page_bytes;
	(void) items;
	(void) n;
	(void) col;
	(void) segs;
	(void) seg_keys;
	(void) nsegs;
	*out_n = 0;
	*sticky = false;
	return no_cuda(err);
}
