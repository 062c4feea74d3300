/*
 * gs_pass_plan.cuh — k_plan, one block per level (internal to
 * kernels/cuda/): from the count's histogram, the bucket of every wanted
 * rank, which ranks equality buckets resolve, which buckets the next level
 * keeps and the ranks mapped into them, and whether the filter pass must
 * run (the single-rank count's speculative write missed).
 */
#ifndef GS_PASS_PLAN_CUH
#define GS_PASS_PLAN_CUH

#include <cub/block/block_scan.cuh>
#include "gs_pass_count.cuh"	/* gs_keep_range, gs_open_bucket_range */

/* THREADS * gs_plan_policy::items >= the level's buckets: gs_plan_policy::
 * threads for spread levels (up to 2*4095+1 buckets), threads_focus for
 * single-rank levels (5 buckets; a 1024-thread block cost ~9 us there) */
template <typename K, int THREADS>
__global__ void __launch_bounds__(THREADS)
k_plan(gs_level_state *st, const gs_ull *hist, gs_ull *start, gs_ull *below, const gs_ull *dsplit,
	   unsigned char *wmask, gs_ull *rank_cur, int *resolved, int *rank_bucket, gs_ull *result)
{
	gs_pdl_enter();
	constexpr int ITEMS = gs_plan_policy::items;
	typedef cub::BlockScan<gs_ull, THREADS> Scan;
	__shared__ typename Scan::TempStorage ts;
	__shared__ int s_allpred,
				s_unres;
	const int	tid = threadIdx.x;

	if (st->done)
		return;
	const int	nb = st->nb;
	const gs_ull n = st->n;
	const int	nranks = st->nranks;
	const bool	focused = st->focused != 0;
	const bool	spec = st->spec != 0;
	const unsigned pmask = st->pmask;
	gs_ull		v[ITEMS];

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			b = tid * ITEMS + i;

		v[i] = b < nb ? hist[b] : 0;
	}
	Scan(ts).ExclusiveSum(v, v);
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			b = tid * ITEMS + i;

		if (b < nb)
		{
			start[b] = v[i];
			wmask[b] = 0;
		}
	}
	if (tid == 0)
	{
		s_allpred = 1;
		s_unres = 0;
	}
	__syncthreads();

	for (int k = tid; k < nranks; k += THREADS)
	{
		if (resolved[k])
			continue;
		const gs_ull r = rank_cur[k];
		int			lo = 0,
					hi = nb - 1;

		/* largest b with start[b] <= r: the non-empty bucket holding r */
		while (lo < hi)
		{
			int			mid = (lo + hi + 1) >> 1;

			if (start[mid] <= r)
				lo = mid;
			else
				hi = mid - 1;
		}
		if (lo & 1)
		{
			result[k] = (K) ((K) dsplit[lo >> 1] + (K) st->kbase);	/* equality bucket: done */
			resolved[k] = 1;
		}
		else
		{
			rank_bucket[k] = lo;
			wmask[lo] = 1;
			atomicAdd(&s_unres, 1);
			if (!(focused && spec && ((pmask >> lo) & 1u)))
				s_allpred = 0;
		}
	}
	__syncthreads();
	if (s_unres == 0)
	{
		if (tid == 0)
		{
			st->nactive = 0;
			st->done = 1;
		}
		return;
	}
	const bool	spec_ok = spec && s_allpred && st->out_count <= st->cap;

	if (spec_ok)
	{
		for (int b = tid; b < nb; b += THREADS)
			wmask[b] = (pmask >> b) & 1u;
	}
	__syncthreads();

	gs_ull		excluded;

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			b = tid * ITEMS + i;

		v[i] = (b < nb && !wmask[b]) ? hist[b] : 0;
	}
	__syncthreads();
	Scan(ts).ExclusiveSum(v, v, excluded);
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			b = tid * ITEMS + i;

		if (b < nb)
			below[b] = v[i];
	}
	__syncthreads();
	const gs_ull new_n = n - excluded;

	if (!spec_ok && new_n > st->cap)
	{
		/* the kept buckets do not fit the buffer (a bad sample): draw again */
		if (tid == 0)
		{
			st->retries++;
			st->nactive = s_unres;
			st->need_filter = 0;
			if (st->retries > 8)
			{
				st->stuck = 1;
				st->done = 1;
			}
		}
		return;
	}
	for (int k = tid; k < nranks; k += THREADS)
		if (!resolved[k])
			rank_cur[k] -= below[rank_bucket[k]];
	if (tid == 0)
	{
		st->need_filter = spec_ok ? 0 : 1;
		st->out_count = 0;
		st->retries = 0;
		st->nactive = s_unres;
		/* the filter (if needed) reads the old input; record it in fields
		 * it reads: src stays until the filter has run (k_filter swaps) */
		if (spec_ok)
		{
			st->src = st->dst;
			st->n = new_n;
		}
		else
			st->out_count = 0;
		below[nb] = new_n;		/* new size, for the filter's epilogue */
		/* one rank: the next input is its open bucket [a, a + w) as offsets
		 * from a (both write paths subtract the same a) */
		st->kspan = (gs_ull) gs_key_max<K>::v;
		if (focused)
		{
			const gs_keep_range<K> kr = gs_open_bucket_range<K>(rank_bucket[0], (K) dsplit[0],
																 st->m == 2 ? (K) dsplit[1] : gs_key_max<K>::v,
																 st->m == 2);

			st->kbase = (gs_ull) (K) ((K) st->kbase + kr.a);
			st->kspan = (gs_ull) (K) (kr.w - 1);	/* w >= 1: the bucket holds the rank */
		}
	}
}

#endif							/* GS_PASS_PLAN_CUH */
