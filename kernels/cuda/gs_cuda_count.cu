/*
 * gs_cuda_count.cu — which k_count a many-splitter level launches, and the
 * one translation unit that instantiates k_count (internal to
 * kernels/cuda/).  Both modes' variants are compiled together, as before
 * the host drivers were split in two files: the cell index's shared
 * variables (gs_cells_build) are then common to an exact variant and its
 * approximate twin, and ptxas lays out their shared memory as it did; built
 * in separate files, three approximate variants came out with 16 bytes more
 * static shared memory and other offsets (sm_90).
 */
#include "gs_cuda_internal.h"
#include "gs_pass_count.cuh"

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
gs_count_launch<K>
gs_count_kernel(bool mm, int P)
{
	return mm ? gs_count_kernel_mm<K, true>(P) : gs_count_kernel_mm<K, false>(P);
}

template <typename K>
static cudaError_t
gs_count_set_attrs_t(size_t optin)
{
	const size_t dyn = optin - 16 * 1024;	/* leave room for static shared memory */
	cudaError_t ce = cudaSuccess;

	/* every (threads, lookup) pair that gs_count_kernel picks occurs for
	 * one of these P */
	for (int P = 1024; P <= 8192; P *= 2)
		for (int mm = 0; mm < 2; mm++)
		{
			ce = cudaFuncSetAttribute(gs_count_kernel<K>(mm != 0, P).fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
									  (int) dyn);
			if (ce != cudaSuccess)
				return ce;
		}
	return ce;
}

cudaError_t
gs_count_set_attrs(size_t optin)
{
	cudaError_t ce = gs_count_set_attrs_t<uint32_t>(optin);

	return ce != cudaSuccess ? ce : gs_count_set_attrs_t<uint64_t>(optin);
}

template gs_count_launch<uint32_t> gs_count_kernel<uint32_t>(bool, int);
template gs_count_launch<uint64_t> gs_count_kernel<uint64_t>(bool, int);
