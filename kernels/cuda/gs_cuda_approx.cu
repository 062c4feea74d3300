/*
 * gs_cuda_approx.cu — the host driver of approximate SampleSelect (internal
 * to kernels/cuda/, behind gs_cuda_select_approx): one level of
 * approx_buckets buckets, the sample drawn as the CPU engine draws it, and
 * for each rank the nearest candidate (the input's min, a splitter, the
 * input's max) with its exact rank range (gs_pass_approx.cuh).
 */
#include <cub/device/device_radix_sort.cuh>

#include "gs_cuda_internal.h"
#include "gs_pass_sample.cuh"	/* k_sample_merge */
#include "gs_pass_approx.cuh"

/* the dynamic shared memory the approximate kernels may use under e->lim
 * (gs_cuda_open): k_approx_pick's candidate ranks where they fit (else it
 * searches them in global memory), the 4-byte sample's merge of up to
 * runs_max runs, fewer where a card's block holds fewer (none: the sample is
 * sorted by CUB's device radix sort, as 8-byte samples are) */
template <typename K>
static cudaError_t
gs_approx_set_attrs_t(gs_cuda_engine *e)
{
	cudaError_t ce = cudaSuccess;
	const size_t pick = (GS_APPROX_BUCKETS_MAX + 2) * 8;

	if (gs_smem_fits(e, (const void *) k_approx_pick<K>, pick))
		ce = cudaFuncSetAttribute(k_approx_pick<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) pick);
	if (ce != cudaSuccess)
		return ce;
	if constexpr (sizeof(K) == 4)
	{
		auto		merge = k_sample_merge<K, gs_approx_policy::run_keys>;
		int			r = gs_approx_policy::runs_max;

		while (r > 0 && !gs_smem_fits(e, (const void *) merge, (size_t) r * gs_approx_policy::run_keys * sizeof(K)))
			r--;
		e->approx_runs_max = r;
		if (r > 0)
			ce = cudaFuncSetAttribute(merge, cudaFuncAttributeMaxDynamicSharedMemorySize,
									  (int) ((size_t) r * gs_approx_policy::run_keys * sizeof(K)));
	}
	/* (k_count: gs_count_set_attrs) */
	return ce;
}

cudaError_t
gs_approx_set_attrs(gs_cuda_engine *e)
{
	cudaError_t ce = gs_approx_set_attrs_t<uint32_t>(e);

	return ce != cudaSuccess ? ce : gs_approx_set_attrs_t<uint64_t>(e);
}

/* the sample's buffers: whole runs of gs_approx_policy::run_keys
 * (k_approx_runs) */
static size_t
gs_approx_sample_room(size_t s)
{
	return (s + gs_approx_policy::run_keys - 1) / gs_approx_policy::run_keys * gs_approx_policy::run_keys;
}

/* whether the sample is sorted as runs + merge (else a device radix sort):
 * 4-byte keys, at most runs_max runs (k_sample_merge holds them all in
 * shared memory: gs_approx_policy::runs_max, fewer on smaller cards) */
static bool
gs_approx_runs(unsigned kb, size_t s, int runs_max)
{
	return kb == 4 && s <= (size_t) runs_max * gs_approx_policy::run_keys;
}

size_t
gs_approx_scratch(size_t n, unsigned kb, size_t nranks, unsigned B, int nblk, int runs_max, size_t *cub_bytes)
{
	size_t		s = (size_t) GS_APPROX_OVERSAMPLE * B;

	if (s > n)
		s = n;
	size_t		tb = 0;		/* CUB's temporary storage: only where it sorts the sample */

	if (kb != 4)
		cub::DeviceRadixSort::SortKeys(NULL, tb, (const uint64_t *) NULL, (uint64_t *) NULL, (int64_t) s);
	else if (!gs_approx_runs(kb, s, runs_max))
		cub::DeviceRadixSort::SortKeys(NULL, tb, (const uint32_t *) NULL, (uint32_t *) NULL, (int64_t) s);
	if (cub_bytes)
		*cub_bytes = tb;
	return gs_round_up(sizeof(gs_level_state)) + 2 * gs_round_up(gs_approx_sample_room(s) * kb) + gs_round_up(tb)
		+ gs_round_up((size_t) B * 8) + gs_round_up((2 * (size_t) B + 1) * 8)
		+ gs_round_up((size_t) nblk * sizeof(gs_minmax)) + 3 * gs_round_up(((size_t) B + 2) * 8)
		+ gs_round_up(nranks * sizeof(gs_approx_pick)) + gs_round_up(nranks * 8);
}

template <typename K>
gs_status
gs_select_approx_t(gs_cuda_engine *e, const K *d_in, size_t n, const uint64_t *ranks, size_t nranks,
				   const gs_options *opt, gs_approx_pick *out, gs_error *err)
{
	gs_status	rc = GS_OK;
	const unsigned B = opt->approx_buckets;
	const size_t s = (size_t) GS_APPROX_OVERSAMPLE * B < n ? (size_t) GS_APPROX_OVERSAMPLE * B : n;
	int			P = 1;

	while (P < (int) B)
		P <<= 1;
	const gs_count_launch<K> kc = gs_count_kernel<K>(e, true, P);

	if (kc.fn == NULL)
		return gs_fail(err, GS_ERR_TOO_LARGE, "approximate selection of %u buckets of %zu-byte keys needs more "
					   "shared memory per block than this device's %zu bytes", B, sizeof(K), e->lim.smem_per_block);

	const int	grid = gs_occ_grid(e, (const void *) kc.fn, kc.smem, kc.threads);
	size_t		tb = 0;
	const size_t total = gs_approx_scratch(n, sizeof(K), nranks, B, grid, e->approx_runs_max, &tb);
	/* the pick's candidate ranks in shared memory where a block holds them */
	const size_t pick_smem = ((size_t) B + 2) * 8;
	const bool	pick_shared = gs_smem_fits(e, (const void *) k_approx_pick<K>, (GS_APPROX_BUCKETS_MAX + 2) * 8);
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
			if (gs_approx_runs(sizeof(K), s, e->approx_runs_max))
			{
				const int	nruns = (int) (gs_approx_sample_room(s) / gs_approx_policy::run_keys);

				gs_launch(e, k_approx_runs<K>, nruns, gs_approx_policy::run_threads, 0, st, d_in, (gs_ull) n, (gs_ull) s,
						  (gs_ull) opt->seed, sample);
				gs_launch(e, k_sample_merge<K, gs_approx_policy::run_keys>,
						  nruns * (gs_approx_policy::run_keys / gs_sample_runs_policy::merge_threads),
						  gs_sample_runs_policy::merge_threads, (size_t) nruns * gs_approx_policy::run_keys * sizeof(K),
						  st, sample, sorted);
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
		gs_launch(e, k_approx_split<K>, 1, gs_plan_policy::threads, 0, st, sorted, (gs_ull) s, (int) B, dsplit, hist);
		/* one pass but where the histogram comes in windows (gs_count_kernel) */
		for (int p = 0; p < kc.passes; p++)
			gs_launch(e, kc.fn, grid, kc.threads, kc.smem, st, d_in, (K *) NULL, (K *) NULL, hist, dsplit, mm,
					  (uint16_t *) NULL, kc.cells_cap, p * kc.hwords, kc.hwords);
		gs_launch(e, k_approx_pick<K>, 1, gs_plan_policy::threads, pick_shared ? pick_smem : 0, st, hist, dsplit, mm,
				  grid, dranks, (int) nranks, ck, clo, chi, dpicks, (int) pick_shared);
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

template gs_status gs_select_approx_t<uint32_t>(gs_cuda_engine *, const uint32_t *, size_t, const uint64_t *, size_t,
												 const gs_options *, gs_approx_pick *, gs_error *);
template gs_status gs_select_approx_t<uint64_t>(gs_cuda_engine *, const uint64_t *, size_t, const uint64_t *, size_t,
												 const gs_options *, gs_approx_pick *, gs_error *);
