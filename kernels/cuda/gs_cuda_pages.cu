/*
 * gs_cuda_pages.cu — gs_cuda_extract_pages and gs_cuda_extract_mapped_pages
 * (gs_cuda.h): the column's keys out of heap page images already on the
 * device, or gathered to it from host memory it maps (the service's shared
 * buffers: k_gather_pages reads them over the bus, no CPU copies them) (issue #31, page shipping,
 * stage 2; the format and the per-tuple reading are gs_pages.h's, the pass
 * gs_pass_pages.cuh's).  One k_page_keys pass writes a key and a flag per
 * listed tuple; cub::DeviceSelect::Flagged keeps the keys of the non-NULL
 * ones, in item order.  The temporaries (keys and flags of every item, the
 * count, CUB's scratch) are the call's own, freed before it returns.
 */
#include <cub/device/device_select.cuh>

#include "gs_cuda_internal.h"
#include "gs_pass_pages.cuh"

template <typename K>
static gs_status
extract_pages(gs_cuda_engine *e, const void *d_pages, size_t npages, size_t page_bytes,
			  const uint32_t *d_items, size_t n, const gs_page_column *col, void *d_keys,
			  size_t *out_n, gs_error *err)
{
	gs_status	rc = GS_OK;
	size_t		temp_bytes = 0;
	size_t		tmp_size = 0;
	char	   *tmp = NULL;
	K		   *keys;
	uint8_t    *flags;
	int		   *bad;
	unsigned long long *count;
	void	   *cub_temp;
	int			h_bad = 0;
	unsigned long long h_count = 0;
	unsigned	grid = (unsigned) ((n + 255) / 256);

	GS_CK(cub::DeviceSelect::Flagged(NULL, temp_bytes, (const K *) NULL, (const uint8_t *) NULL,
									 (K *) NULL, (unsigned long long *) NULL, n, e->s),
		  "cub::DeviceSelect::Flagged (size)");
	tmp_size = gs_round_up(sizeof(K) * n) + gs_round_up(n) + gs_round_up(sizeof(int)) +
		gs_round_up(sizeof(unsigned long long)) + gs_round_up(temp_bytes);
	if ((rc = gs_dev_alloc_internal(e, tmp_size, (void **) &tmp, err)) != GS_OK)
		return rc;
	keys = (K *) tmp;
	flags = (uint8_t *) (tmp + gs_round_up(sizeof(K) * n));
	bad = (int *) ((char *) flags + gs_round_up(n));
	count = (unsigned long long *) ((char *) bad + gs_round_up(sizeof(int)));
	cub_temp = (char *) count + gs_round_up(sizeof(unsigned long long));

	GS_CK(cudaMemsetAsync(bad, 0, sizeof(int), e->s), "cudaMemsetAsync");
	if (grid > (unsigned) e->nsm * 8)
		grid = e->nsm * 8;
	k_page_keys<K><<<grid, 256, 0, e->s>>>((const uint8_t *) d_pages, page_bytes, npages, d_items,
										   (unsigned long long) n, *col, keys, flags, bad);
	GS_CK(cudaGetLastError(), "launch k_page_keys");
	GS_CK(cub::DeviceSelect::Flagged(cub_temp, temp_bytes, keys, flags, (K *) d_keys, count, n, e->s),
		  "cub::DeviceSelect::Flagged");
	GS_CK(cudaMemcpyAsync(&h_bad, bad, sizeof(int), cudaMemcpyDeviceToHost, e->s), "copy flag");
	GS_CK(cudaMemcpyAsync(&h_count, count, sizeof(h_count), cudaMemcpyDeviceToHost, e->s), "copy count");
	GS_CK(cudaStreamSynchronize(e->s), "extract pages");
	if (h_bad)
		rc = gs_fail(err, GS_ERR_INVALID, "a listed tuple does not fit its page");
	else
	{
		*out_n = (size_t) h_count;
		rc = gs_ok(err);
	}
done:
	if (tmp != NULL)
		gs_dev_free_internal(e, tmp, tmp_size);
	return rc;
}

/* gather the pages from host memory, extract, keys back to the host */
template <typename K>
static gs_status
extract_mapped(gs_cuda_engine *e, const uint64_t *d_addrs, size_t npages, size_t page_bytes,
			   const uint32_t *h_items, size_t n, const gs_page_column *col, void *const *h_segs,
			   const size_t *seg_keys, size_t nsegs, size_t *out_n, gs_error *err)
{
	gs_status	rc = GS_OK;
	size_t		tmp_size = gs_round_up(sizeof(uint64_t) * npages) +
		gs_round_up(sizeof(uint32_t) * n) + gs_round_up(page_bytes * npages) +
		gs_round_up(sizeof(K) * n);
	char	   *tmp = NULL;
	unsigned long long *addrs;
	uint32_t   *items;
	uint8_t    *pages;
	K		   *keys;

	if ((rc = gs_dev_alloc_internal(e, tmp_size, (void **) &tmp, err)) != GS_OK)
		return rc;
	addrs = (unsigned long long *) tmp;
	items = (uint32_t *) (tmp + gs_round_up(sizeof(uint64_t) * npages));
	pages = (uint8_t *) items + gs_round_up(sizeof(uint32_t) * n);
	keys = (K *) (pages + gs_round_up(page_bytes * npages));

	GS_CK(cudaMemcpyAsync(addrs, d_addrs, sizeof(uint64_t) * npages, cudaMemcpyHostToDevice, e->s),
		  "copy page addresses");
	GS_CK(cudaMemcpyAsync(items, h_items, sizeof(uint32_t) * n, cudaMemcpyHostToDevice, e->s),
		  "copy items");
	k_gather_pages<<<(unsigned) npages, 256, 0, e->s>>>(addrs, page_bytes, pages);
	GS_CK(cudaGetLastError(), "launch k_gather_pages");
	rc = extract_pages<K>(e, pages, npages, page_bytes, items, n, col, keys, out_n, err);
	if (rc == GS_OK && *out_n > 0)
	{
		size_t		off = 0;

		/* the keys into the segments in order, each filled before the next */
		for (size_t i = 0; i < nsegs && off < *out_n; i++)
		{
			size_t		take = seg_keys[i] < *out_n - off ? seg_keys[i] : *out_n - off;

			GS_CK(cudaMemcpyAsync(h_segs[i], keys + off, sizeof(K) * take, cudaMemcpyDeviceToHost,
								  e->s), "copy keys");
			off += take;
		}
		GS_CK(cudaStreamSynchronize(e->s), "copy keys");
		if (off < *out_n)
			rc = gs_fail(err, GS_ERR_INVALID, "the segments hold %zu of %zu keys", off, *out_n);
	}
done:
	gs_dev_free_internal(e, tmp, tmp_size);
	return rc;
}

extern "C" {

gs_status
gs_cuda_extract_pages(gs_cuda_engine *e, const void *d_pages, size_t npages, size_t page_bytes,
					  const uint32_t *d_items, size_t n, const gs_page_column *col, void *d_keys,
					  size_t *out_n, gs_error *err)
{
	return gs_guard(err, "gs_cuda_extract_pages", [&]() -> gs_status {
		if (!e || !col || !out_n || (n && (!d_pages || !d_items || !d_keys)) ||
			npages > 65536 || page_bytes < GS_PAGE_HEADER_BYTES ||
			col->attnum < 1 || col->attnum > GS_PAGE_MAX_ATTS)
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		*out_n = 0;
		if (n == 0)
			return gs_ok(err);
		if (cudaSetDevice(e->dev) != cudaSuccess)
			return gs_cuda_fail(err, cudaGetLastError(), "cudaSetDevice");
		switch (col->key_bytes)
		{
			case 2:
				return extract_pages<uint16_t>(e, d_pages, npages, page_bytes, d_items, n, col,
											   d_keys, out_n, err);
			case 4:
				return extract_pages<uint32_t>(e, d_pages, npages, page_bytes, d_items, n, col,
											   d_keys, out_n, err);
			case 8:
				return extract_pages<uint64_t>(e, d_pages, npages, page_bytes, d_items, n, col,
											   d_keys, out_n, err);
			default:
				return gs_fail(err, GS_ERR_INVALID, "key width %u", (unsigned) col->key_bytes);
		}
	});
}

gs_status
gs_cuda_extract_mapped_pages(gs_cuda_engine *e, const uint64_t *d_addrs, size_t npages,
							 size_t page_bytes, const uint32_t *h_items, size_t n,
							 const gs_page_column *col, void *const *h_segs, const size_t *seg_keys,
							 size_t nsegs, size_t *out_n, gs_error *err)
{
	return gs_guard(err, "gs_cuda_extract_mapped_pages", [&]() -> gs_status {
		if (!e || !col || !out_n || (n && (!d_addrs || !h_items || !h_segs || !seg_keys)) ||
			npages > 65536 || page_bytes < GS_PAGE_HEADER_BYTES || page_bytes % 16 != 0 ||
			col->attnum < 1 || col->attnum > GS_PAGE_MAX_ATTS)
			return gs_fail(err, GS_ERR_INVALID, "bad arguments");
		*out_n = 0;
		if (n == 0 || npages == 0)
			return gs_ok(err);
		for (size_t i = 0; i < npages; i++)
			if (d_addrs[i] % 16 != 0)
				return gs_fail(err, GS_ERR_INVALID, "a page address is not 16-byte aligned");
		if (cudaSetDevice(e->dev) != cudaSuccess)
			return gs_cuda_fail(err, cudaGetLastError(), "cudaSetDevice");
		switch (col->key_bytes)
		{
			case 2:
				return extract_mapped<uint16_t>(e, d_addrs, npages, page_bytes, h_items, n, col,
												h_segs, seg_keys, nsegs, out_n, err);
			case 4:
				return extract_mapped<uint32_t>(e, d_addrs, npages, page_bytes, h_items, n, col,
												h_segs, seg_keys, nsegs, out_n, err);
			case 8:
				return extract_mapped<uint64_t>(e, d_addrs, npages, page_bytes, h_items, n, col,
												h_segs, seg_keys, nsegs, out_n, err);
			default:
				return gs_fail(err, GS_ERR_INVALID, "key width %u", (unsigned) col->key_bytes);
		}
	});
}

}								/* extern "C" */
