/*
 * gs_pass_pages.cuh — keys out of heap page images on the device (internal
 * to kernels/cuda/; issue #31, page shipping, stage 2): k_page_keys reads
 * one listed tuple a thread with gs_pages.h's gs_page_tuple_key -- the very
 * function the service's CPU extraction runs, so the two cannot disagree on
 * the format -- and writes its key and a flag (1: a key, 0: NULL); the
 * driver (gs_cuda_pages.cu) then compacts the keys in item order with
 * cub::DeviceSelect::Flagged, so the device's keys come in the order the
 * CPU's do (the approximate mode's sample depends on it).  A tuple that does
 * not fit its page sets *bad.
 */
#ifndef GS_PASS_PAGES_CUH
#define GS_PASS_PAGES_CUH

#include <stdint.h>
#include "gs_pages.h"

template <typename K>
__global__ void
k_page_keys(const uint8_t *pages, size_t page_bytes, size_t npages, const uint32_t *items,
			unsigned long long n, gs_page_column col, K *keys, uint8_t *flags, int *bad)
{
	for (unsigned long long i = (unsigned long long) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (unsigned long long) gridDim.x * blockDim.x)
	{
		uint32_t	it = items[i];
		uint32_t	p = it >> 16;
		uint64_t	key = 0;
		int			got = GS_PAGE_BAD;

		if (p < npages)
			got = gs_page_tuple_key(pages + (size_t) p * page_bytes, page_bytes,
									(uint16_t) (it & 0xFFFF), &col, &key);
		if (got == GS_PAGE_BAD)
			*bad = 1;
		keys[i] = (K) key;
		flags[i] = got == GS_PAGE_KEY;
	}
}

/*
 * One page a block: page i's image, read where it lies (host memory the
 * device maps: shared buffers, registered by the service) at addrs[i],
 * copied to pages + i * page_bytes in 16-byte words, so that each read
 * over the bus is a whole, coalesced line and k_page_keys then reads
 * device memory.  page_bytes and every address are multiples of 16.
 */
__global__ void
k_gather_pages(const unsigned long long *addrs, size_t page_bytes, uint8_t *pages)
{
	const uint4 *src = (const uint4 *) (uintptr_t) addrs[blockIdx.x];
	uint4	   *dst = (uint4 *) (pages + (size_t) blockIdx.x * page_bytes);
	size_t		words = page_bytes / sizeof(uint4);

	for (size_t w = threadIdx.x; w < words; w += blockDim.x)
		dst[w] = src[w];
}

#endif							/* GS_PASS_PAGES_CUH */
