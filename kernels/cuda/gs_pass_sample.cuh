/*
 * gs_pass_sample.cuh — a level's sample and its splitters (internal to
 * kernels/cuda/): k_sample (one block: draw, sort or select, splitters, the
 * base case), and for levels of 4096 buckets the grid sort of a sample
 * twice as large (k_sample_runs, k_sample_merge; the approximate mode
 * merges its sample's runs with k_sample_merge too).
 */
#ifndef GS_PASS_SAMPLE_CUH
#define GS_PASS_SAMPLE_CUH

#include <cub/block/block_radix_sort.cuh>
#include "gs_stream.cuh"
#include "gs_block_select.cuh"

/* k_sample's dynamic shared memory for ITEMS keys a thread, digits of
 * RADIX_BITS: gs_sample_policy's layout, or gs_sample_small_policy's where
 * that does not fit a block (gs_exact_set_attrs) */
template <typename K, int ITEMS, int RADIX_BITS = gs_sample_policy::radix_bits>
struct gs_sample_smem
{
	static constexpr int THREADS = gs_sample_policy::threads;
	static constexpr int SIZE = THREADS * ITEMS;	/* sample size, also the base case */
	static constexpr int items = ITEMS,
				radix_bits = RADIX_BITS;
	/* 6-bit digits (radix_bits): 11 passes instead of 16 for 64-bit keys, 6
	 * instead of 8 for 32-bit (the one-block sample sort is on every spread
	 * level's critical path); 5 on a T4 */
	typedef cub::BlockRadixSort<K, THREADS, ITEMS, cub::NullType, RADIX_BITS> Sort;
	typedef gs_block_select<K, THREADS, ITEMS> Select;
	union
	{
		typename Sort::TempStorage sort;
		K			sorted[SIZE];
		typename Select::TempStorage select;
	};
	unsigned	warp_count[THREADS / 32];	/* gs_sample_spread */
};

/* the small layouts fit the smallest block of the architectures built
 * (the T4's), with 1 KB to spare for k_sample's static shared memory (its
 * s_m); the engine checks the real sum at open (gs_exact_set_attrs) */
template <typename K>
using gs_sample_smem_small = gs_sample_smem<K, sizeof(K) == 4 ? gs_sample_small_policy::items4
											: gs_sample_small_policy::items8, gs_sample_small_policy::radix_bits>;
static_assert(sizeof(gs_sample_smem_small<uint32_t>) + 1024 <= gs_sample_small_policy::smem_floor,
			  "k_sample's small layout fits a T4's block (4-byte keys)");
static_assert(sizeof(gs_sample_smem_small<uint64_t>) + 1024 <= gs_sample_small_policy::smem_floor,
			  "k_sample's small layout fits a T4's block (8-byte keys)");

/*
 * Single rank (Floyd-Rivest style choice of SampleSelect's splitters): two
 * splitters at sample positions p -/+ delta around the rank's expected
 * sample position, delta = z sigma + 16; the open bucket between them holds
 * the rank with probability ~1 - 2.7e-3 (z = 3; a miss costs one filter
 * pass) and ~2*delta/8192 of the keys, and is written during counting.
 * Equality buckets on both splitters keep clusters at the edges out of it.
 * Only those two order statistics of the sample are needed, so they are
 * selected, not sorted (gs_block_select.cuh); the base case (the whole level
 * input in the block) selects the rank itself.
 */
template <typename K, int ITEMS, int RADIX_BITS>
static __device__ void
gs_sample_focused(gs_level_state *st, gs_sample_smem<K, ITEMS, RADIX_BITS> &sm, K (&items)[ITEMS], bool base,
				  gs_ull *dsplit, const gs_ull *rank_cur, int *resolved, gs_ull *result)
{
	typedef gs_sample_smem<K, ITEMS, RADIX_BITS> Smem;
	constexpr int SIZE = Smem::SIZE;
	typename Smem::Select sel(sm.select);
	const int	nranks = st->nranks;
	const gs_ull n = st->n;
	int			k = 0;
	unsigned	tr[2];
	K			v[2];

	while (k < nranks - 1 && resolved[k])
		k++;
	const gs_ull r = rank_cur[k];

	if (base)
	{
		/* the padding (largest key) sorts after every key: rank r < n is exact */
		tr[0] = tr[1] = (unsigned) r;
		sel.select(items, 1, tr, v);
		if (threadIdx.x == 0)
		{
			result[k] = (K) (v[0] + (K) st->kbase);
			resolved[k] = 1;
			st->nactive = 0;
			st->done = 1;
		}
		return;
	}
	const double q = (double) r / (double) n;
	const double S = SIZE;
	const long long p = (long long) (q * S);
	const long long delta = (long long) (st->focus_z * sqrt(S * q * (1.0 - q))) + 16;
	const long long lo = p - delta,
				hi = p + delta;

	tr[0] = (unsigned) (lo >= 0 ? lo : 0);
	tr[1] = (unsigned) (hi < SIZE ? hi : SIZE - 1);
	sel.select(items, 2, tr, v);
	if (threadIdx.x == 0)
	{
		int			m = 0;
		unsigned	pmask;

		if (lo >= 0)
			dsplit[m++] = v[0];
		if (hi < SIZE && (m == 0 || v[0] != v[1]))
			dsplit[m++] = v[1];
		/* predicted open buckets */
		if (lo < 0)
			pmask = 1u;			/* below hi */
		else if (hi >= SIZE)
			pmask = 1u << 2;	/* above lo */
		else if (m == 2)
			pmask = 1u << 2;	/* between lo and hi */
		else
			pmask = 0;			/* lo == hi: expected in the equality bucket */
		st->m = m;
		st->nb = 2 * m + 1;
		st->pmask = pmask;
		st->spec = 1;
	}
}

/*
 * spread: mopen-1 evenly spaced positions of the sorted sample, deduplicated.
 * Warp w takes positions [256 w, 256 w + 256) in rounds of 32 consecutive
 * ones, so a round's lanes read the sample step keys apart (with 8 positions
 * per thread in a row, every lane of a read hit the same bank); a key's place
 * among the distinct splitters is the warp's count so far (ballot, popc)
 * plus the counts of the warps before it.
 */
static_assert((gs_sample_policy::threads / 32) * gs_sample_policy::spread_per_warp >= GS_MAX_SPLIT_EXACT,
			  "spread positions");

template <typename K, int ITEMS, int RADIX_BITS>
static __device__ void
gs_sample_spread(gs_level_state *st, gs_sample_smem<K, ITEMS, RADIX_BITS> &sm, gs_ull *dsplit, int *s_m)
{
	constexpr int SIZE = gs_sample_smem<K, ITEMS, RADIX_BITS>::SIZE;
	constexpr int PER_WARP = gs_sample_policy::spread_per_warp;
	constexpr int ROUNDS = PER_WARP / 32;
	const int	tid = threadIdx.x;
	const int	warp = tid >> 5;
	const unsigned lane = tid & 31;
	const int	mraw = st->mopen - 1;
	/* positions s * SIZE / mopen: both are powers of two and mopen <= SIZE,
	 * so a multiplication (three 64-bit divisions per position before) */
	const int	step = SIZE / st->mopen;
	int			place[ROUNDS];
	K			keys[ROUNDS];
	unsigned	mine = 0,
				count = 0;

#pragma unroll
	for (int i = 0; i < ROUNDS; i++)
	{
		const int	s = warp * PER_WARP + i * 32 + (int) lane;
		bool		keep = false;

		keys[i] = 0;
		if (s < mraw)
		{
			keys[i] = sm.sorted[(s + 1) * step];
			keep = s == 0 || sm.sorted[s * step] != keys[i];
		}
		const unsigned ballot = __ballot_sync(GS_FULL, keep);

		place[i] = (int) (count + __popc(ballot & ((1u << lane) - 1)));
		count += __popc(ballot);
		mine |= (unsigned) keep << i;
	}
	if (lane == 0)
		sm.warp_count[warp] = count;
	__syncthreads();
	int			before = 0,
				total = 0;

	for (int w = 0; w < gs_sample_policy::threads / 32; w++)
	{
		before += w < warp ? (int) sm.warp_count[w] : 0;
		total += (int) sm.warp_count[w];
	}
#pragma unroll
	for (int i = 0; i < ROUNDS; i++)
		if ((mine >> i) & 1u)
			dsplit[before + place[i]] = keys[i];
	if (tid == 0)
	{
		*s_m = total;
		st->m = total;
		st->nb = 2 * total + 1;
		st->pmask = 0;
		st->spec = 0;
	}
}

/* a level's random sample, drawn with replacement: key i is
 * src[splitmix64(salt + i) * n >> 64]; every sampling kernel of the level
 * draws with the same salt */
static __device__ __forceinline__ gs_ull
gs_sample_salt(const gs_level_state *st)
{
	return st->seed + (gs_ull) (st->iter + 1) * UINT64_C(0x632BE59BD9B4E019);
}

template <typename K>
static __device__ __forceinline__ K
gs_sample_key(const K *src, gs_ull n, gs_ull salt, gs_ull i)
{
	return src[__umul64hi(gs_splitmix64(salt + i), n)];
}

/*
 * The sample of a level of 4096 buckets (16384 keys) is drawn and sorted by
 * a grid instead of one block: a one-block sort of it took ~57 us per level,
 * ~1/8 of a 1001-rank level (the block's random gather alone ~10 us).
 * k_sample_runs: each of gs_sample_runs_policy::blocks blocks draws
 * gs_sample_runs_policy::keys keys (the whole level input, padded with the
 * largest key, when it fits) and sorts them (cub::BlockRadixSort) into one
 * run; k_sample_merge: every key's place
 * in the whole sample is its index in its run plus, for every other run, how
 * many of that run's keys precede it (binary search; equal keys ordered by
 * run), and it is written there; k_sample<K, ITEMS, true> then reads the
 * sorted sample instead of drawing and sorting it.  Hand-written: CUB has
 * no small multi-block merge, and its device-wide radix sort takes ~43 us in
 * 6 launches for the approximate mode's 32768-key sample.  (Measured: the
 * three sample kernels take ~34 us per level, against 57.)
 */

template <typename K>
__global__ void __launch_bounds__(gs_sample_runs_policy::threads)
k_sample_runs(gs_level_state *st, const K *in, K *bufA, K *bufB, K *runs)
{
	gs_pdl_enter();
	constexpr int ITEMS = gs_sample_runs_policy::items;
	constexpr int KEYS = gs_sample_runs_policy::keys;
	typedef cub::BlockRadixSort<K, gs_sample_runs_policy::threads, ITEMS> Sort;
	__shared__ typename Sort::TempStorage ts;

	if (st->done)
		return;
	const gs_ull n = st->n;
	const gs_ull size = (gs_ull) gridDim.x * KEYS;
	const K    *src = gs_pick_src<K>(st->src, in, bufA, bufB);
	const gs_ull salt = gs_sample_salt(st);
	const gs_ull first = (gs_ull) blockIdx.x * KEYS + (gs_ull) threadIdx.x * ITEMS;
	K			items[ITEMS];

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		const gs_ull g = first + i;

		if (n <= size)
			items[i] = g < n ? src[g] : gs_key_max<K>::v;
		else
			items[i] = gs_sample_key(src, n, salt, g);
	}
	Sort(ts).Sort(items);
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
		runs[first + i] = items[i];
}

/* gs_sample_runs_policy::merge_threads threads per block, one key each (the
 * searches are chains of dependent loads: many warps hide them), RUNK /
 * merge_threads blocks per run of RUNK keys; dynamic shared memory: the
 * whole sample */
template <typename K, int RUNK = gs_sample_runs_policy::keys>
__global__ void __launch_bounds__(gs_sample_runs_policy::merge_threads)
k_sample_merge(const gs_level_state *st, const K *runs, K *sorted)
{
	gs_pdl_enter();
	extern __shared__ __align__(16) unsigned char gs_dyn_smem[];
	constexpr int THREADS = gs_sample_runs_policy::merge_threads;
	constexpr int PER = RUNK / THREADS;
	K		   *all = reinterpret_cast<K *>(gs_dyn_smem);
	const int	nruns = (int) gridDim.x / PER;
	const int	r = (int) blockIdx.x / PER;

	static_assert(RUNK % THREADS == 0, "whole blocks per run");
	if (st->done)
		return;
	for (int i = threadIdx.x; i < nruns * RUNK; i += THREADS)
		all[i] = runs[i];
	__syncthreads();
	{
		const int	li = (int) (blockIdx.x % PER) * THREADS + threadIdx.x;
		const K		x = all[r * RUNK + li];
		int			place = li;

		for (int j = 0; j < nruns; j++)
		{
			const K    *run = all + j * RUNK;
			int			lo = 0,
						hi = RUNK;

			if (j == r)
				continue;
			/* keys of run j before x: those below it, and equal ones of a lower run */
			while (lo < hi)
			{
				const int	mid = (lo + hi) >> 1;
				const bool	before = j < r ? run[mid] <= x : run[mid] < x;

				lo = before ? mid + 1 : lo;
				hi = before ? hi : mid;
			}
			place += lo;
		}
		sorted[place] = x;
	}
}

/* PRE: the sample comes sorted from k_sample_runs / k_sample_merge (pre);
 * dynamic shared memory: sizeof(gs_sample_smem<K, ITEMS, RADIX_BITS>) */
template <typename K, int ITEMS, bool PRE = false, int RADIX_BITS = gs_sample_policy::radix_bits>
__global__ void __launch_bounds__(gs_sample_policy::threads)
k_sample(gs_level_state *st, const K *in, K *bufA, K *bufB, gs_ull *hist, gs_ull *dsplit,
		 gs_ull *rank_cur, int *resolved, gs_ull *result, const K *pre)
{
	gs_pdl_enter();
	constexpr int THREADS = gs_sample_policy::threads;
	typedef gs_sample_smem<K, ITEMS, RADIX_BITS> S;
	extern __shared__ __align__(16) unsigned char gs_dyn_smem[];
	S		   &sm = *reinterpret_cast<S *>(gs_dyn_smem);
	__shared__ int s_m;
	const int	tid = threadIdx.x;

	if (st->done)
		return;
	const gs_ull n = st->n;
	const K    *src = gs_pick_src<K>(st->src, in, bufA, bufB);
	const bool	base = n <= S::SIZE;
	K			items[ITEMS];

	if (PRE)
	{
		/* straight into shared memory, coalesced (the spread path below
		 * needs the sorted sample there, not in registers) */
		for (int i = tid; i < S::SIZE; i += THREADS)
			sm.sorted[i] = pre[i];
	}
	else if (base)
	{
#pragma unroll
		for (int i = 0; i < ITEMS; i++)
		{
			gs_ull		idx = (gs_ull) tid * ITEMS + i;

			items[i] = idx < n ? src[idx] : gs_key_max<K>::v;
		}
	}
	else
	{
		const gs_ull salt = gs_sample_salt(st);

#pragma unroll
		for (int i = 0; i < ITEMS; i++)
			items[i] = gs_sample_key(src, n, salt, (gs_ull) tid * ITEMS + i);
	}

	if (st->focused)
	{
		gs_sample_focused<K, ITEMS, RADIX_BITS>(st, sm, items, base, dsplit, rank_cur, resolved, result);
		if (base)
			return;
	}
	else
	{
		if (!PRE)
		{
			/* sorted into the striped arrangement (thread t holds ranks t,
			 * t + THREADS, ...), so that the copy to shared memory below is
			 * conflict-free (from the blocked one, ITEMS keys per thread,
			 * every lane of a store hit the same bank) */
			typename S::Sort(sm.sort).SortBlockedToStriped(items);
			__syncthreads();
#pragma unroll
			for (int i = 0; i < ITEMS; i++)
				sm.sorted[i * THREADS + tid] = items[i];
		}
		__syncthreads();
		if (base)
		{
			/* base case: the whole level input is sorted; every rank is read off */
			for (int k = tid; k < st->nranks; k += THREADS)
				if (!resolved[k])
				{
					result[k] = (K) (sm.sorted[rank_cur[k]] + (K) st->kbase);
					resolved[k] = 1;
				}
			if (tid == 0)
			{
				st->nactive = 0;
				st->done = 1;
			}
			return;
		}
		gs_sample_spread<K, ITEMS, RADIX_BITS>(st, sm, dsplit, &s_m);
	}
	__syncthreads();
	if (tid == 0)
	{
		int			m = st->m;
		int			depth = 0;

		while ((1 << depth) < m + 1)
			depth++;
		st->depth = depth;
		st->dst = st->src == 1 ? 2 : 1;
		st->out_count = 0;
		st->need_filter = 0;
		st->iter++;
	}
	const int	nb = st->focused ? 5 : 2 * s_m + 1;

	for (int b = tid; b < nb; b += THREADS)
		hist[b] = 0;
}

#endif							/* GS_PASS_SAMPLE_CUH */
