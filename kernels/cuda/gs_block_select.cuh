/*
 * gs_block_select.cuh — one block finds one or two order statistics of the
 * keys its threads hold in registers (the single-rank levels' two splitters
 * and the single-rank base case; internal to kernels/).
 *
 * Why not the block radix sort those used before: a single-rank level needs
 * two of its 8192 sample keys, not all of them in order, and the one-block
 * sort was ~50 us per level for 64-bit keys (11 passes of 6-bit digits) on
 * the critical path of every level.  Radix *selection* needs one pass per
 * 8-bit digit below the highest bit where the keys differ, and each pass
 * only counts the keys still in the wanted bucket.  CUB has block radix sort
 * but no block selection, hence hand-written; CUB does the per-thread sort,
 * the reductions and the scan.
 *
 * Per pass: a 256-bin shared histogram per target, one atomic per run of
 * equal digits in a thread's keys (each thread sorts its own keys first, so
 * the keys of a bucket and of a digit are adjacent: the top digits of real
 * data fall on few bins, and one atomic per key would serialise there), a
 * block scan over both histograms (thread t owns bin t & 255 of target
 * t >> 8), and the thread whose bin holds the target's rank narrows it.  A
 * target is done when its bucket holds a single key (found by its owner) or
 * when no bits are left (then every key in the bucket equals the prefix).
 */
#ifndef GS_BLOCK_SELECT_CUH
#define GS_BLOCK_SELECT_CUH

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/thread/thread_sort.cuh>
#include <cuda/functional>

template <typename K>
struct gs_key_less
{
	__device__ __forceinline__ bool operator() (const K &a, const K &b) const
	{
		return a < b;
	}
};

template <typename K, int THREADS, int ITEMS>
struct gs_block_select
{
	static_assert(THREADS == 512, "one histogram bin per thread: two targets x 256 bins");
	static constexpr int BITS = 8 * (int) sizeof(K);
	typedef cub::BlockReduce<K, THREADS> Reduce;
	typedef cub::BlockScan<unsigned, THREADS> Scan;

	struct TempStorage
	{
		union
		{
			typename Reduce::TempStorage red;
			typename Scan::TempStorage scan;
		}			u;
		unsigned	hist[2][256];
		unsigned	tot0;			/* keys counted for target 0 in this pass */
		K			mn,
					mx;
		K			prefix[2];		/* the target's bucket: keys equal to prefix at bits >= lo */
		unsigned	rank[2];		/* the target's rank inside its bucket */
		unsigned	left[2];		/* keys in its bucket */
		K			val[2];
	};

	TempStorage &sm;

	__device__ __forceinline__ gs_block_select(TempStorage &t) : sm(t) {}

	/* keys above bit lo (all of them for lo = BITS: none) */
	static __device__ __forceinline__ K high_mask(int lo)
	{
		return lo >= BITS ? K(0) : (K) (~K(0) << lo);
	}

	/*
	 * items: this thread's keys (reordered); r[t]: the wanted 0-based rank
	 * among all THREADS * ITEMS keys, for nt (1 or 2) targets; out[t]: the
	 * key of that rank.  All threads call it; all get the answers.
	 */
	__device__ void select(K (&items)[ITEMS], int nt, const unsigned (&r)[2], K (&out)[2])
	{
		const int	tid = threadIdx.x;
		cub::NullType none[ITEMS];

		cub::StableOddEvenSort(items, none, gs_key_less<K>());
		{
			const K		mn = Reduce(sm.u.red).Reduce(items[0], cuda::minimum<K>());

			if (tid == 0)
				sm.mn = mn;
			__syncthreads();
			const K		mx = Reduce(sm.u.red).Reduce(items[ITEMS - 1], cuda::maximum<K>());

			if (tid == 0)
				sm.mx = mx;
		}
		if (tid < 2)
		{
			sm.rank[tid] = r[tid];
			sm.left[tid] = THREADS * ITEMS;
		}
		__syncthreads();
		const K		diff = (K) (sm.mn ^ sm.mx);
		int			lo = 0;

		if (diff != 0)
		{
			lo = BITS - (sizeof(K) == 8 ? __clzll((long long) diff) : __clz((int) diff));
			if (tid < 2)
				sm.prefix[tid] = (K) (sm.mn & high_mask(lo));
		}
		else if (tid < 2)
		{
			sm.prefix[tid] = sm.mn;		/* all keys equal */
			sm.val[tid] = sm.mn;
			sm.left[tid] = 1;
		}
		__syncthreads();

		while (lo > 0 && (sm.left[0] > 1 || (nt > 1 && sm.left[1] > 1)))
		{
			const int	sh = lo > 8 ? lo - 8 : 0;
			const unsigned dmask = (1u << (lo - sh)) - 1;
			const K		him = high_mask(lo);

			sm.hist[tid >> 8][tid & 255] = 0;
			__syncthreads();
			for (int t = 0; t < nt; t++)
			{
				if (sm.left[t] <= 1)
					continue;
				const K		pre = sm.prefix[t];
				unsigned	run = 0,
							dprev = 0;

#pragma unroll
				for (int i = 0; i < ITEMS; i++)
				{
					const K		x = items[i];
					const unsigned d = (unsigned) (x >> sh) & dmask;

					if (((x ^ pre) & him) != 0)
						continue;
					if (run != 0 && d != dprev)
					{
						atomicAdd(&sm.hist[t][dprev], run);
						run = 0;
					}
					dprev = d;
					run++;
				}
				if (run != 0)
					atomicAdd(&sm.hist[t][dprev], run);
			}
			__syncthreads();
			const int	t = tid >> 8;
			const unsigned b = (unsigned) tid & 255;
			const unsigned v = sm.hist[t][b];
			unsigned	ex;

			Scan(sm.u.scan).ExclusiveSum(v, ex);
			if (tid == 256)
				sm.tot0 = ex;
			__syncthreads();
			if (t > 0)
				ex -= sm.tot0;
			const bool	mine = t < nt && sm.left[t] > 1 && v != 0 && ex <= sm.rank[t] && sm.rank[t] < ex + v;
			__syncthreads();	/* everyone has read left/rank */
			if (mine)
			{
				sm.prefix[t] |= (K) b << sh;
				sm.rank[t] -= ex;
				sm.left[t] = v;
			}
			__syncthreads();
			lo = sh;
			/* a bucket of one key: its owner reports it */
			for (int u = 0; u < nt; u++)
			{
				if (sm.left[u] != 1)
					continue;
				const K		pre = sm.prefix[u];
				const K		m2 = high_mask(lo);

#pragma unroll
				for (int i = 0; i < ITEMS; i++)
					if (((items[i] ^ pre) & m2) == 0)
						sm.val[u] = items[i];
			}
			__syncthreads();
			/* a finished target reads left = 0 from here on */
			if (tid < nt && sm.left[tid] == 1)
				sm.left[tid] = 0;
			__syncthreads();
		}
		/* the targets not reported by a single-key bucket ran out of bits:
		 * their bucket's keys all equal the prefix */
		for (int t = 0; t < nt; t++)
			out[t] = (sm.left[t] > 1 || (diff == 0)) ? sm.prefix[t] : sm.val[t];
		__syncthreads();
	}
};

#endif							/* GS_BLOCK_SELECT_CUH */
