/*
 * gs_pass_approx.cuh — the approximate mode's one level (internal to
 * kernels/cuda/): its sample (k_approx_sample, or as sorted runs
 * k_approx_runs, merged by k_sample_merge), the splitters (k_approx_split)
 * and each rank's nearest candidate (k_approx_pick) after k_count has
 * counted the buckets and the input's min and max.
 */
#ifndef GS_PASS_APPROX_CUH
#define GS_PASS_APPROX_CUH

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_reduce.cuh>
#include "gs_pass_count.cuh"	/* gs_minmax merge (gs_mm_merge) */

/* the level state of an approximate call: all zero but n (written by the
 * call's first kernel, so that no host copy precedes it) */
static __device__ __forceinline__ void
gs_approx_state_init(gs_level_state *st, gs_ull n)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
	{
		gs_level_state z = {};

		z.n = n;
		*st = z;
	}
}

template <typename K>
__global__ void
k_approx_sample(gs_level_state *st, const K *in, gs_ull n, gs_ull s, gs_ull seed, K *sample)
{
	gs_ull		i = (gs_ull) blockIdx.x * blockDim.x + threadIdx.x;

	gs_approx_state_init(st, n);
	if (i < s)
		sample[i] = in[gs_splitmix64(seed + i) % n];
}

/*
 * The approximate sample as sorted runs of RUN_KEYS = gs_approx_policy::run_keys
 * (k_sample_merge then merges them): block b draws sample keys b RUN_KEYS ..
 * as k_approx_sample does (the CPU engine's draw); keys from s on are
 * padding (the largest key, which sorts last, so the first s sorted keys are
 * the sample's).  For 4-byte keys and at most gs_approx_policy::runs_max
 * runs: two launches instead of a device radix sort's six (figures in
 * gs_tuning.cuh).
 */

template <typename K>
__global__ void __launch_bounds__(gs_approx_policy::run_threads)
k_approx_runs(gs_level_state *st, const K *in, gs_ull n, gs_ull s, gs_ull seed, K *runs)
{
	gs_pdl_enter();
	gs_approx_state_init(st, n);
	constexpr int ITEMS = gs_approx_policy::run_items;
	constexpr int RUN_KEYS = gs_approx_policy::run_keys;
	typedef cub::BlockRadixSort<K, gs_approx_policy::run_threads, ITEMS> Sort;
	__shared__ typename Sort::TempStorage ts;
	const gs_ull first = (gs_ull) blockIdx.x * RUN_KEYS + (gs_ull) threadIdx.x * ITEMS;
	K			items[ITEMS];

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
		items[i] = first + i < s ? in[gs_splitmix64(seed + first + i) % n] : gs_key_max<K>::v;
	Sort(ts).Sort(items);
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
		runs[first + i] = items[i];
}

/* approx_buckets-1 splitters at sample positions i*s/B (i = 1..B-1),
 * deduplicated, and the largest key after them */
template <typename K>
__global__ void __launch_bounds__(gs_plan_policy::threads)
k_approx_split(gs_level_state *st, const K *sorted, gs_ull s, int B, gs_ull *dsplit, gs_ull *hist)
{
	gs_pdl_enter();
	constexpr int THREADS = gs_plan_policy::threads;
	constexpr int ITEMS = gs_plan_policy::items;
	typedef cub::BlockScan<int, THREADS> Scan;
	__shared__ typename Scan::TempStorage ts;
	const int	tid = threadIdx.x;
	int			flags[ITEMS];
	K			keys[ITEMS];
	const int	mraw = B - 1;
	/* j s / B without a 64-bit division per position where s is a multiple
	 * of B (s = GS_APPROX_OVERSAMPLE B unless n is smaller) */
	const gs_ull step = s / (gs_ull) B;
	const bool	exact = step * (gs_ull) B == s;
	auto		at = [&](int j) -> gs_ull {
		return exact ? (gs_ull) j * step : (gs_ull) j * s / (gs_ull) B;
	};

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			j = tid * ITEMS + i + 1;	/* splitter index 1..B-1 */

		flags[i] = 0;
		keys[i] = 0;
		if (j <= mraw)
		{
			keys[i] = sorted[at(j)];
			flags[i] = (j == 1 || sorted[at(j - 1)] != keys[i]) ? 1 : 0;
		}
	}
	int			total;
	int			pos[ITEMS];

	Scan(ts).ExclusiveSum(flags, pos, total);
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
		if (flags[i])
			dsplit[pos[i]] = keys[i];
	for (int b = tid; b < 2 * total + 1; b += THREADS)
		hist[b] = 0;
	if (tid == 0)
	{
		int			depth = 0;

		/* the padding after the last splitter (total < B slots), which
		 * k_count's lookup reads where the splitters stay in global memory
		 * (GSPL: 8-byte keys at 8192 buckets on a T4) */
		dsplit[total] = gs_key_max<K>::v;

		while ((1 << depth) < total + 1)
			depth++;
		st->m = total;
		st->nb = 2 * total + 1;
		st->depth = depth;
		st->focused = 0;
		st->done = 0;
	}
}

/*
 * Candidates: the input's min, the splitters, the input's max, each with its
 * exact rank range; for each wanted rank the candidate whose range is nearest
 * (contains it, else nearest end; a tie goes to the smaller key).
 * hi_shared: the ranges' ends are searched in dynamic shared memory (m + 2
 * of them); 0 where a card's block cannot hold them (8193 x 8 bytes at
 * 8192 buckets: a T4's 64 KB), in cand_hi itself.
 */
template <typename K>
__global__ void __launch_bounds__(gs_plan_policy::threads)
k_approx_pick(gs_level_state *st, const gs_ull *hist, const gs_ull *dsplit, const gs_minmax *blk_mm,
			  int nblk, const gs_ull *ranks, int nranks, gs_ull *cand_key, gs_ull *cand_lo,
			  gs_ull *cand_hi, gs_approx_pick *out, int hi_shared)
{
	gs_pdl_enter();
	constexpr int THREADS = gs_plan_policy::threads;
	constexpr int ITEMS = gs_plan_policy::items;
	typedef cub::BlockScan<gs_ull, THREADS> Scan;
	typedef cub::BlockReduce<gs_minmax, THREADS> MMReduce;
	__shared__ typename Scan::TempStorage ts;
	__shared__ typename MMReduce::TempStorage ts_mm;
	__shared__ int s_nc;
	extern __shared__ __align__(16) unsigned char gs_dyn_smem[];
	/* cand_hi, m + 2 (global cand_hi is visible to the block after its
	 * __syncthreads as well) */
	gs_ull	   *s_hi = hi_shared ? reinterpret_cast<gs_ull *>(gs_dyn_smem) : cand_hi;
	const int	tid = threadIdx.x;
	const int	m = st->m;
	const int	nb = 2 * m + 1;
	const gs_ull n = st->n;

	/* the input's min and max with their counts: merge the blocks' (thread 0) */
	gs_minmax	mm = {0, 0, 0, 0};

	for (int i = tid; i < nblk; i += THREADS)
		mm = gs_mm_merge()(mm, blk_mm[i]);
	mm = MMReduce(ts_mm).Reduce(mm, gs_mm_merge());
	/* prefix sums over 2*8191+1 buckets: 16 per thread, two passes of 8 */
	gs_ull		carry = 0;

	for (int half = 0; half * THREADS * ITEMS < nb; half++)
	{
		gs_ull		v[ITEMS],
					agg;
		const int	b0 = half * THREADS * ITEMS;

#pragma unroll
		for (int i = 0; i < ITEMS; i++)
		{
			int			b = b0 + tid * ITEMS + i;

			v[i] = b < nb ? hist[b] : 0;
		}
		__syncthreads();
		Scan(ts).ExclusiveSum(v, v, agg);
#pragma unroll
		for (int i = 0; i < ITEMS; i++)
		{
			int			b = b0 + tid * ITEMS + i;

			/* equality bucket 2j+1 of splitter j: lo = start, hi = start+count-1 */
			if (b < nb && (b & 1))
			{
				int			j = b >> 1;

				cand_key[j + 1] = dsplit[j];
				cand_lo[j + 1] = carry + v[i];
				cand_hi[j + 1] = s_hi[j + 1] = carry + v[i] + hist[b] - 1;
			}
		}
		carry += agg;
	}
	__syncthreads();
	if (tid == 0)
	{
		/* min and max, unless they are splitters already */
		int			nc = m + 2;

		cand_key[0] = mm.mn;
		cand_lo[0] = 0;
		cand_hi[0] = mm.cmn - 1;
		s_hi[0] = cand_hi[0];
		cand_key[m + 1] = mm.mx;
		cand_lo[m + 1] = n - mm.cmx;
		cand_hi[m + 1] = s_hi[m + 1] = n - 1;
		s_nc = nc;
	}
	__syncthreads();
	const int	nc = s_nc;

	for (int k = tid; k < nranks; k += THREADS)
	{
		const gs_ull r = ranks[k];
		/* first candidate with hi >= r (ranges are increasing and disjoint,
		 * except that min/max may repeat the first/last splitter) */
		int			lo = 0,
					hi = nc - 1;

		while (lo < hi)
		{
			int			mid = (lo + hi) >> 1;

			if (s_hi[mid] >= r)	/* (shared: a chain of ~13 global reads cost ~6 us) */
				hi = mid;
			else
				lo = mid + 1;
		}
		int			c = lo;

		if (cand_lo[c] > r && c > 0)
		{
			gs_ull		eu = cand_lo[c] - r;
			gs_ull		ed = r - s_hi[c - 1];

			if (ed <= eu)
				c = c - 1;
		}
		out[k].key = cand_key[c];
		out[k].rank_lo = cand_lo[c];
		out[k].rank_hi = cand_hi[c];
	}
}

#endif							/* GS_PASS_APPROX_CUH */
