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
#include <math.h>

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

/*
 * Threads per block of a layout of smem bytes: on the H100 (228 KB per SM)
 * above full_above one block of 1024 per SM, above wide_above two of 512,
 * else three or four of 256 (gs_count_policy); on a card with less shared
 * memory per SM the thresholds shrink with it, so that the same number of
 * blocks fits there, and a block never has more threads than an SM.
 */
static int
gs_count_threads(const gs_cuda_engine *e, size_t smem)
{
	const double f = fmin(1.0, (double) e->lim.smem_per_sm / (228.0 * 1024.0));
	int			t = gs_count_policy::threads;

	if ((double) smem > f * (double) gs_count_policy::full_above)
		t = gs_count_policy::threads_full;
	else if ((double) smem > f * (double) gs_count_policy::wide_above)
		t = gs_count_policy::threads_wide;
	while (t > gs_count_policy::threads && t > e->lim.max_threads_per_sm)
		t /= 2;
	return t;
}

template <typename K, bool MM>
static void
gs_count_pick(gs_count_launch<K> &r, int t, bool one, bool packed)
{
	if (t == gs_count_policy::threads_full)
		gs_count_kernel_t<K, MM, gs_count_policy::threads_full>(r, one, packed);
	else if (t == gs_count_policy::threads_wide)
		gs_count_kernel_t<K, MM, gs_count_policy::threads_wide>(r, one, packed);
	else
		gs_count_kernel_t<K, MM, gs_count_policy::threads>(r, one, packed);
}

/*
 * The approximate count of 8-byte keys with its splitters in global memory
 * (k_count's GSPL): where even the histogram's windows leave no room beside
 * them (P = 8192: 64 KB of splitters, a T4's whole block).  The cell table
 * and the histogram's windows share the block; of the tables from
 * gs_cells_cap(P) down to 2048 cells, the largest of those that need the
 * fewest passes (on a T4, 8192 cells and two windows of the 16383 buckets).
 * One block of gs_count_policy::threads_full per SM, as the layouts this
 * large get anyway (gs_count_threads).  fn NULL where none fits.
 */
static gs_count_launch<uint64_t>
gs_count_kernel_gspl(const gs_cuda_engine *e, int P)
{
	auto		fn = k_count<uint64_t, true, gs_count_policy::threads_full, false, false, true>;
	const size_t budget = gs_dyn_budget(e, (const void *) fn);
	gs_count_launch<uint64_t> r = {};

	r.fn = NULL;
	if (e->lim.max_threads_per_sm < gs_count_policy::threads_full)
		return r;
	for (int cap = gs_cells_cap(P, 8); cap >= 2048; cap /= 2)
	{
		const size_t fixed = gs_count_smem_for(P, 8, cap, false, 0, true);

		if (budget < fixed + 4096)
			continue;
		int			hwords = (int) ((budget - fixed) / 16 * 4);

		if (hwords > 2 * P)
			hwords = 2 * P;
		const int	passes = (2 * P - 1 + hwords - 1) / hwords;

		if (r.fn == NULL || passes < r.passes)
		{
			r.fn = fn;
			r.threads = gs_count_policy::threads_full;
			r.cells_cap = cap;
			r.one = false;
			r.hwords = hwords;
			r.passes = passes;
			r.gspl = true;
			r.smem = gs_count_smem_for(P, 8, cap, false, hwords, true);
		}
	}
	return r;
}

/*
 * The default layout (gs_cells_cap cells, the lookup gs_cells_one and
 * gs_cells_packed choose, the whole histogram) wherever it fits a block of
 * e->lim (always on the H100); else, in this order, until one fits: plain
 * entries instead of packed (the one-splitter lookup stays), the
 * two-splitter lookup over at most 16384 cells (as for P = 8192), tables
 * halved down to 2048 cells, and (approximate mode) the histogram in
 * windows, one pass over the input each, and last (approximate mode, 8-byte
 * keys) the splitters left in global memory (gs_count_kernel_gspl).
 * Answers are the same whichever: the layout only decides how fast a key
 * finds its bucket.
 */
template <typename K, bool MM>
static gs_count_launch<K>
gs_count_kernel_mm(const gs_cuda_engine *e, int P)
{
	const int	kb = (int) sizeof(K);
	bool		one = gs_cells_one(P, kb),
				packed = MM && one && gs_cells_packed(P, kb);
	int			cap = gs_cells_cap(P, kb);
	gs_count_launch<K> r;

	for (;;)
	{
		r.smem = gs_count_smem_for(P, kb, cap, packed, 2 * P);
		r.cells_cap = cap;
		r.one = one;
		r.hwords = 2 * P;
		r.passes = 1;
		r.gspl = false;
		r.threads = gs_count_threads(e, r.smem);
		gs_count_pick<K, MM>(r, r.threads, one, packed);
		if (gs_smem_fits(e, (const void *) r.fn, r.smem))
			return r;
		if (packed)
			packed = false;
		else if (one)
		{
			one = false;
			cap = cap < 16384 ? cap : 16384;
		}
		else if (cap > 2048)
			cap /= 2;
		else
			break;
	}
	if (MM)
	{
		/* windows of the histogram: what the splitters and the smallest
		 * table leave of a block, in whole 16-byte steps */
		const size_t fixed = gs_count_smem_for(P, kb, cap, false, 0);
		const size_t budget = gs_dyn_budget(e, (const void *) r.fn);

		if (budget > fixed + 4096)
		{
			r.hwords = (int) ((budget - fixed) / 16 * 4);
			if (r.hwords > 2 * P)
				r.hwords = 2 * P;
			r.passes = (2 * P - 1 + r.hwords - 1) / r.hwords;
			r.smem = gs_count_smem_for(P, kb, cap, false, r.hwords);
			if (gs_smem_fits(e, (const void *) r.fn, r.smem))
				return r;
		}
		if constexpr (sizeof(K) == 8)
			return gs_count_kernel_gspl(e, P);
	}
	r.fn = NULL;
	return r;
}

template <typename K>
gs_count_launch<K>
gs_count_kernel(const gs_cuda_engine *e, bool mm, int P)
{
	return mm ? gs_count_kernel_mm<K, true>(e, P) : gs_count_kernel_mm<K, false>(e, P);
}

/* one kernel's limit: all the dynamic shared memory e->lim leaves it */
template <typename F>
static cudaError_t
gs_count_set_attr(const gs_cuda_engine *e, F fn)
{
	return cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
								(int) gs_dyn_budget(e, (const void *) fn));
}

/* every instantiated variant of THREADS threads (gs_count_kernel_t) */
template <typename K, bool MM, int THREADS>
static cudaError_t
gs_count_set_attrs_n(const gs_cuda_engine *e)
{
	cudaError_t ce = gs_count_set_attr(e, k_count<K, MM, THREADS, false>);

	if constexpr (sizeof(K) == 4)
	{
		if (ce == cudaSuccess)
			ce = gs_count_set_attr(e, k_count<K, MM, THREADS, true>);
		if constexpr (MM)
			if (ce == cudaSuccess)
				ce = gs_count_set_attr(e, k_count<K, MM, THREADS, true, true>);
	}
	return ce;
}

template <typename K, bool MM>
static cudaError_t
gs_count_set_attrs_mm(const gs_cuda_engine *e)
{
	cudaError_t ce = gs_count_set_attrs_n<K, MM, gs_count_policy::threads>(e);

	if (ce == cudaSuccess)
		ce = gs_count_set_attrs_n<K, MM, gs_count_policy::threads_wide>(e);
	if (ce == cudaSuccess)
		ce = gs_count_set_attrs_n<K, MM, gs_count_policy::threads_full>(e);
	return ce;
}

cudaError_t
gs_count_set_attrs(const gs_cuda_engine *e)
{
	cudaError_t ce = gs_count_set_attrs_mm<uint32_t, false>(e);

	if (ce == cudaSuccess)
		ce = gs_count_set_attrs_mm<uint32_t, true>(e);
	if (ce == cudaSuccess)
		ce = gs_count_set_attrs_mm<uint64_t, false>(e);
	if (ce == cudaSuccess)
		ce = gs_count_set_attrs_mm<uint64_t, true>(e);
	if (ce == cudaSuccess)
		ce = gs_count_set_attr(e, k_count<uint64_t, true, gs_count_policy::threads_full, false, false, true>);
	return ce;
}

template gs_count_launch<uint32_t> gs_count_kernel<uint32_t>(const gs_cuda_engine *, bool, int);
template gs_count_launch<uint64_t> gs_count_kernel<uint64_t>(const gs_cuda_engine *, bool, int);
