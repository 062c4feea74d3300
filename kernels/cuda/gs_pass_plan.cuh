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

/* what k_plan reads of the level state before it writes anything */
struct gs_plan_level
{
	int			nb;
	gs_ull		n;
	int			nranks;
	bool		focused,
				spec;
	unsigned	pmask;
};

/* bucket starts: the exclusive prefix sum of the histogram; the keep mask
 * cleared */
template <int THREADS>
static __device__ __forceinline__ void
gs_plan_starts(typename cub::BlockScan<gs_ull, THREADS>::TempStorage &ts, const gs_ull *hist, int nb,
			   gs_ull *start, unsigned char *wmask)
{
	constexpr int ITEMS = gs_plan_policy::items;
	typedef cub::BlockScan<gs_ull, THREADS> Scan;
	const int	tid = threadIdx.x;
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
}

/* the bucket of every unresolved rank: an equality bucket resolves it, an
 * open one is kept (wmask, rank_bucket); counts the unresolved ranks
 * (s_unres) and clears s_allpred unless every one is in a predicted bucket */
template <typename K, int THREADS>
static __device__ __forceinline__ void
gs_plan_locate(const gs_level_state *st, const gs_plan_level &lv, const gs_ull *start, const gs_ull *dsplit,
			   unsigned char *wmask, const gs_ull *rank_cur, int *resolved, int *rank_bucket, gs_ull *result,
			   int &s_unres, int &s_allpred)
{
	for (int k = threadIdx.x; k < lv.nranks; k += THREADS)
	{
		if (resolved[k])
			continue;
		const gs_ull r = rank_cur[k];
		int			lo = 0,
					hi = lv.nb - 1;

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
			if (!(lv.focused && lv.spec && ((lv.pmask >> lo) & 1u)))
				s_allpred = 0;
		}
	}
}

/* below[b]: the keys of the dropped buckets below bucket b (the shift of a
 * rank kept in b); returns all the dropped keys */
template <int THREADS>
static __device__ __forceinline__ gs_ull
gs_plan_below(typename cub::BlockScan<gs_ull, THREADS>::TempStorage &ts, const gs_ull *hist,
			  const unsigned char *wmask, int nb, gs_ull *below)
{
	constexpr int ITEMS = gs_plan_policy::items;
	typedef cub::BlockScan<gs_ull, THREADS> Scan;
	const int	tid = threadIdx.x;
	gs_ull		v[ITEMS];
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
	return excluded;
}

/* THREADS * gs_plan_policy::items >= the level's buckets: gs_plan_policy::
 * threads for spread levels (up to 2*4095+1 buckets), threads_focus for
 * single-rank levels (5 buckets; a 1024-thread block cost ~9 us there) */
template <typename K, int THREADS>
__global__ void __launch_bounds__(THREADS)
k_plan(gs_level_state *st, const gs_ull *hist, gs_ull *start, gs_ull *below, const gs_ull *dsplit,
	   unsigned char *wmask, gs_ull *rank_cur, int *resolved, int *rank_bucket, gs_ull *result)
{
	gs_pdl_enter();
	__shared__ typename cub::BlockScan<gs_ull, THREADS>::TempStorage ts;
	__shared__ int s_allpred,
				s_unres;
	const int	tid = threadIdx.x;

	if (st->done)
		return;
	const gs_plan_level lv = {st->nb, st->n, st->nranks, st->focused != 0, st->spec != 0, st->pmask};

	gs_plan_starts<THREADS>(ts, hist, lv.nb, start, wmask);
	if (tid == 0)
	{
		s_allpred = 1;
		s_unres = 0;
	}
	__syncthreads();
	gs_plan_locate<K, THREADS>(st, lv, start, dsplit, wmask, rank_cur, resolved, rank_bucket, result, s_unres,
							   s_allpred);
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
	/* the single-rank count's speculative write holds every kept key */
	const bool	spec_ok = lv.spec && s_allpred && st->out_count <= st->cap;

	if (spec_ok)
	{
		for (int b = tid; b < lv.nb; b += THREADS)
			wmask[b] = (lv.pmask >> b) & 1u;
	}
	__syncthreads();

	const gs_ull excluded = gs_plan_below<THREADS>(ts, hist, wmask, lv.nb, below);

	__syncthreads();
	const gs_ull new_n = lv.n - excluded;

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
	for (int k = tid; k < lv.nranks; k += THREADS)
		if (!resolved[k])
			rank_cur[k] -= below[rank_bucket[k]];
	/* the next level's state (this and the redraw above stay in the kernel:
	 * as helpers they compiled to another block order, sm_90) */
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
		below[lv.nb] = new_n;	/* new size, for the filter's epilogue */
		/* one rank: the next input is its open bucket [a, a + w) as offsets
		 * from a (both write paths subtract the same a) */
		st->kspan = (gs_ull) gs_key_max<K>::v;
		if (lv.focused)
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
