/*
 * gs_kernels.cuh — SampleSelect kernels (internal; included by gs_cuda.cu).
 *
 * One exact level = four launches, all parameters read from device memory
 * (gs_level_state), so the host enqueues several levels without waiting:
 *   k_sample   one block: random sample -> splitters (many ranks:
 *              cub::BlockRadixSort; one rank: two order statistics by block
 *              radix selection); if the level's input fits, the base
 *              case: sort it (or select the one rank) and read the answers.
 *              Levels of 4096 buckets draw a sample twice as large, sorted
 *              by a grid first (k_sample_runs, k_sample_merge)
 *   k_count_*  grid-stride over the input in per-lane batches: bucket of every
 *              key (many splitters: the cell index of gs_cells.cuh), per-block
 *              histograms merged with global atomics; in single-rank
 *              ("focused") mode also writes the predicted bucket's keys
 *              (speculative filter fused into the count pass)
 *   k_plan     one block: prefix sums, the bucket of every wanted rank,
 *              equality buckets resolve ranks, ranks mapped into the kept
 *              buckets; decides whether the filter pass is needed
 *   k_filter   grid-stride: writes the kept buckets' keys (skipped when the
 *              speculative write of k_count_focus was right)
 * A level's kept buckets (all ranks together) are compacted into one buffer
 * and the next level treats that buffer as one multiselect problem whose
 * ranks are shifted by the sizes of the dropped buckets below them: one
 * launch per level for all active buckets.
 */
#ifndef GS_KERNELS_CUH
#define GS_KERNELS_CUH

#include <type_traits>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_reduce.cuh>
#include "gs_select.cuh"
#include "gs_cells.cuh"
#include "gs_block_select.cuh"

typedef unsigned long long gs_ull;

template <typename K> struct gs_key_max;
template <> struct gs_key_max<uint32_t> { static constexpr uint32_t v = 0xFFFFFFFFu; };
template <> struct gs_key_max<uint64_t> { static constexpr uint64_t v = ~UINT64_C(0); };

#define GS_FULL 0xFFFFFFFFu

/*
 * Programmatic dependent launch (Hopper; gs_launch in gs_cuda.cu): a level
 * kernel first waits until the kernel before it in the stream has completed
 * and its memory is visible, then lets the next one start launching, so
 * that a launch's latency overlaps the kernel before it.  The next kernel's
 * blocks start once every block of this one has started (so they never
 * hold resources this grid still needs) and wait here in turn.  Without
 * the launch attribute both instructions do nothing.  Measured on the H100
 * (six interleaved bench tables, 2^28 f32): 1001 ranks 2.529 vs 2.553 ms
 * (2^26: 0.946 vs 0.991), 101 ranks 1.458 vs 1.547; -DGS_NO_PDL builds
 * without it, for such comparisons.
 */
static __device__ __forceinline__ void
gs_pdl_enter()
{
#if !defined(GS_NO_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* per-lane batch of a streaming pass: U 16-byte loads = N keys;
 * the warp's compaction stage holds one worst-case batch (32 N keys) */
template <typename K>
struct gs_batch
{
	static constexpr int U = gs_stream_policy::unroll;
	static constexpr int V = 16 / (int) sizeof(K);
	static constexpr int N = U * V;
	static constexpr int STAGE = 32 * N;
	static constexpr unsigned ALL = (1u << N) - 1;
};

/*
 * Where a batch's keys sit, for passes that keep per-key side data (the
 * oracles): in the main loop, a lane's u-th 16-byte vector is vector
 * vec + 32 u of the aligned body (keys head + V (vec + 32 u) ...); the one
 * edge batch holds the unaligned head (slot 0) and the tail (slot 1) keys.
 */
struct gs_at
{
	gs_ull		vec;			/* this lane's first vector; edge: nvec */
	bool		edge;
};

template <typename K>
static __device__ __forceinline__ const K *
gs_pick_src(int sel, const K *in, const K *a, const K *b)
{
	return sel == 0 ? in : (sel == 1 ? a : b);
}

/*
 * Streams p[0..n) through f in per-lane batches: f.batch(xs, valid, at) gets
 * N = gs_batch<K>::N keys, bit i of valid saying whether xs[i] is a key
 * (invalid slots hold the largest key), and where they sit (gs_at, for the
 * oracles).  Calls are warp-uniform (every lane
 * of a warp makes the same calls), so f may use warp collectives.  Why
 * batches: per-key branches and per-key warp votes made the passes issue-bound
 * at 60-90 instructions per key (ncu, 2026-11-22); with a batch, f decides
 * with bit masks and compacts once per batch.  Body: 16-byte streaming loads,
 * U = gs_stream_policy::unroll in flight per lane, grid-stride over warps; the unaligned head
 * and the tail (< V keys each) are one extra batch of warp 0.
 * nblocks: the blocks taking part (blocks 0 .. nblocks-1; 0 = the grid).
 */
template <typename K, typename F>
static __device__ __forceinline__ void
gs_for_each(const K *p, gs_ull n, F &f, unsigned nblocks = 0)
{
	constexpr int U = gs_batch<K>::U;
	constexpr int V = gs_batch<K>::V;
	constexpr int N = gs_batch<K>::N;
	const unsigned lane = threadIdx.x & 31;
	const gs_ull gwarp = ((gs_ull) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const gs_ull nwarps = ((gs_ull) (nblocks ? nblocks : gridDim.x) * blockDim.x) >> 5;
	gs_ull		head = ((16 - ((uintptr_t) p & 15)) & 15) / sizeof(K);

	if (head > n)
		head = n;
	const gs_ull nvec = (n - head) / V;
	const gs_ull tail0 = head + nvec * V;

	if (gwarp == 0)
	{
		K			xs[N];
		const gs_ull t = tail0 + lane;
		const bool	vh = lane < head,
					vt = t < n;

#pragma unroll
		for (int i = 0; i < N; i++)
			xs[i] = gs_key_max<K>::v;
		if (vh)
			xs[0] = p[lane];
		if (vt)
			xs[1] = p[t];
		f.batch(xs, (unsigned) vh | ((unsigned) vt << 1), gs_at{nvec, true});
	}
	const uint4 *vp = reinterpret_cast<const uint4 *>(p + head);

	for (gs_ull w = gwarp * 32 * U; w < nvec; w += nwarps * 32 * U)
	{
		uint4		buf[U];
		unsigned	valid = 0;

		if (w + 32 * U <= nvec)
		{
			/* the warp's whole batch is in range (all but the last): no
			 * per-load bounds or fill (~3 instructions per key of the
			 * approximate count, NOTES-gpu.md section 10) */
#pragma unroll
			for (int u = 0; u < U; u++)
				buf[u] = __ldcs(vp + w + (gs_ull) u * 32 + lane);	/* streamed: read once per pass */
			valid = gs_batch<K>::ALL;
		}
		else
		{
#pragma unroll
			for (int u = 0; u < U; u++)
			{
				const gs_ull i = w + (gs_ull) u * 32 + lane;

				if (i < nvec)
				{
					buf[u] = __ldcs(vp + i);
					valid |= ((1u << V) - 1) << (u * V);
				}
				else
					buf[u] = make_uint4(~0u, ~0u, ~0u, ~0u);
			}
		}
		K			xs[N];

#pragma unroll
		for (int u = 0; u < U; u++)
			memcpy(&xs[u * V], &buf[u], 16);
		f.batch(xs, valid, gs_at{w + lane, false});
	}
}

/*
 * Warp-private staging for stream compaction: a batch's kept keys (bit mask
 * per lane) get their positions from one warp scan of the per-lane counts
 * and go to a shared-memory buffer; a full buffer is flushed to global memory
 * with ONE global atomic per flush (a single global counter would otherwise
 * serialise the grid).  Positions beyond cap are dropped (the plan kernel
 * sees out_count > cap and does not use the buffer).
 */
template <typename K>
struct gs_stage
{
	K		   *s;				/* gs_batch<K>::STAGE keys (shared) */
	unsigned	cnt;			/* warp-uniform */
	K		   *dst;
	gs_ull	   *gcnt;
	gs_ull		cap;

	__device__ __forceinline__ void flush()
	{
		__syncwarp();
		if (cnt == 0)
			return;
		const unsigned lane = threadIdx.x & 31;
		gs_ull		base = 0;

		if (lane == 0)
			base = atomicAdd(gcnt, (gs_ull) cnt);
		base = __shfl_sync(GS_FULL, base, 0);
		for (unsigned i = lane; i < cnt; i += 32)
		{
			gs_ull		pos = base + i;

			if (pos < cap)
				dst[pos] = s[i];
		}
		__syncwarp();
		cnt = 0;
	}

	template <int N>
	__device__ __forceinline__ void push(const K (&xs)[N], unsigned keep)
	{
		if (!__any_sync(GS_FULL, keep))
			return;
		const unsigned lane = threadIdx.x & 31;
		const unsigned mine = __popc(keep);
		unsigned	incl = mine;

#pragma unroll
		for (int o = 1; o < 32; o <<= 1)
		{
			const unsigned y = __shfl_up_sync(GS_FULL, incl, o);

			incl += lane >= (unsigned) o ? y : 0u;
		}
		const unsigned total = __shfl_sync(GS_FULL, incl, 31);

		if (cnt + total > (unsigned) gs_batch<K>::STAGE)
			flush();
		unsigned	pos = cnt + incl - mine;

#pragma unroll
		for (int i = 0; i < N; i++)
			if ((keep >> i) & 1u)
				s[pos++] = xs[i];
		cnt += total;
	}
};

/* ---------------------------------------------------------------- sample */

template <typename K, int ITEMS>
struct gs_sample_smem
{
	static constexpr int THREADS = gs_sample_policy::threads;
	static constexpr int SIZE = THREADS * ITEMS;	/* sample size, also the base case */
	/* 6-bit digits (radix_bits): 11 passes instead of 16 for 64-bit keys, 6
	 * instead of 8 for 32-bit (the one-block sample sort is on every spread
	 * level's critical path) */
	typedef cub::BlockRadixSort<K, THREADS, ITEMS, cub::NullType, gs_sample_policy::radix_bits> Sort;
	typedef gs_block_select<K, THREADS, ITEMS> Select;
	union
	{
		typename Sort::TempStorage sort;
		K			sorted[SIZE];
		typename Select::TempStorage select;
	};
	unsigned	warp_count[THREADS / 32];	/* gs_sample_spread */
};

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
template <typename K, int ITEMS>
static __device__ void
gs_sample_focused(gs_level_state *st, gs_sample_smem<K, ITEMS> &sm, K (&items)[ITEMS], bool base,
				  gs_ull *dsplit, const gs_ull *rank_cur, int *resolved, gs_ull *result)
{
	typedef gs_sample_smem<K, ITEMS> Smem;
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

template <typename K, int ITEMS>
static __device__ void
gs_sample_spread(gs_level_state *st, gs_sample_smem<K, ITEMS> &sm, gs_ull *dsplit, int *s_m)
{
	constexpr int SIZE = gs_sample_smem<K, ITEMS>::SIZE;
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

/* PRE: the sample comes sorted from k_sample_runs / k_sample_merge (pre) */
template <typename K, int ITEMS, bool PRE = false>
__global__ void __launch_bounds__(gs_sample_policy::threads)
k_sample(gs_level_state *st, const K *in, K *bufA, K *bufB, gs_ull *hist, gs_ull *dsplit,
		 gs_ull *rank_cur, int *resolved, gs_ull *result, const K *pre)
{
	gs_pdl_enter();
	constexpr int THREADS = gs_sample_policy::threads;
	typedef gs_sample_smem<K, ITEMS> S;
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
		gs_sample_focused<K, ITEMS>(st, sm, items, base, dsplit, rank_cur, resolved, result);
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
		gs_sample_spread<K, ITEMS>(st, sm, dsplit, &s_m);
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

/* ------------------------------------------------------ focused counting */

/*
 * Single-rank levels have 1 or 2 splitters, so buckets 0..4 come from four
 * comparisons (no index).  The kept keys are those of one open bucket, an
 * interval [a, a + w) of keys, tested with one subtraction and one unsigned
 * comparison: (x - a) < w.  w = 0 keeps nothing.
 */
template <typename K>
struct gs_keep_range
{
	K			a,
				w;
};

/* open bucket b (0, 2 or 4) of splitters d0 (< d1 when two) as a key range */
template <typename K>
static __device__ __forceinline__ gs_keep_range<K>
gs_open_bucket_range(int b, K d0, K d1, bool two)
{
	gs_keep_range<K> r;
	const K		top = two ? d1 : gs_key_max<K>::v;	/* exclusive end of bucket 2 */

	if (b == 0)
	{
		r.a = 0;
		r.w = d0;				/* x < d0 */
	}
	else if (b == 2)
	{
		r.a = (K) (d0 + 1);		/* d0 < x < d1, or x > d0 with one splitter */
		r.w = d0 == gs_key_max<K>::v ? K(0) : (K) (top - d0 - (two ? 1 : 0));
	}
	else if (b == 4 && two)
	{
		r.a = (K) (d1 + 1);		/* x > d1 */
		r.w = d1 == gs_key_max<K>::v ? K(0) : (K) (gs_key_max<K>::v - d1);
	}
	else
	{
		r.a = 0;
		r.w = 0;
	}
	return r;
}

/* the kept keys of a single-rank level go out as offsets from their
 * bucket's lowest key a (gs_level_state::kbase) */
template <typename K, int N>
static __device__ __forceinline__ void
gs_push_offsets(gs_stage<K> &stage, const K (&xs)[N], unsigned keep, K a)
{
	K			ys[N];

#pragma unroll
	for (int i = 0; i < N; i++)
		ys[i] = (K) (xs[i] - a);
	stage.push(ys, keep);
}

/* counts of x < d0, x <= d0 (and x < d1, x <= d1 with TWO) in registers,
 * plus the predicted bucket's keys written through the stage */
template <typename K, bool TWO>
struct gs_focus_fn
{
	K			d0,
				d1;
	gs_keep_range<K> kr;
	unsigned	nv,
				lt0,
				le0,
				lt1,
				le1;
	gs_stage<K> stage;

	template <int N>
	__device__ __forceinline__ void batch(const K (&xs)[N], unsigned valid, gs_at)
	{
		unsigned	keep = 0;

		if (valid == gs_batch<K>::ALL)
		{
#pragma unroll
			for (int i = 0; i < N; i++)
			{
				const K		x = xs[i];

				lt0 += x < d0;
				le0 += x <= d0;
				if (TWO)
				{
					lt1 += x < d1;
					le1 += x <= d1;
				}
				keep |= (unsigned) ((K) (x - kr.a) < kr.w) << i;
			}
		}
		else
		{
#pragma unroll
			for (int i = 0; i < N; i++)
			{
				const K		x = xs[i];
				const bool	v = (valid >> i) & 1u;

				lt0 += v && x < d0;
				le0 += v && x <= d0;
				if (TWO)
				{
					lt1 += v && x < d1;
					le1 += v && x <= d1;
				}
				keep |= (unsigned) (v && (K) (x - kr.a) < kr.w) << i;
			}
		}
		nv += __popc(valid);
		gs_push_offsets(stage, xs, keep, kr.a);
	}
};

template <typename K, bool TWO>
static __device__ __forceinline__ void
gs_focus_run(gs_level_state *st, const K *src, K *dst, const gs_ull *dsplit, K *stage_mem, unsigned c[5])
{
	gs_focus_fn<K, TWO> f;
	const int	pm = st->pmask;

	f.d0 = (K) dsplit[0];
	f.d1 = TWO ? (K) dsplit[1] : gs_key_max<K>::v;
	/* pmask: at most one predicted open bucket (0, 2 or 4) */
	f.kr = gs_open_bucket_range<K>(pm == 1 ? 0 : (pm == 4 ? 2 : (pm == 16 ? 4 : -1)), f.d0, f.d1, TWO);
	if (!st->spec)
		f.kr.w = 0;
	f.nv = f.lt0 = f.le0 = f.lt1 = f.le1 = 0;
	f.stage.s = stage_mem;
	f.stage.cnt = 0;
	f.stage.dst = dst;
	f.stage.gcnt = &st->out_count;
	f.stage.cap = st->cap;
	gs_for_each<K>(src, st->n, f);
	f.stage.flush();
	c[0] = f.lt0;
	c[1] = f.le0 - f.lt0;
	if (TWO)
	{
		c[2] = f.lt1 - f.le0;
		c[3] = f.le1 - f.lt1;
		c[4] = f.nv - f.le1;
	}
	else
	{
		c[2] = f.nv - f.le0;
		c[3] = c[4] = 0;
	}
}

template <typename K>
__global__ void __launch_bounds__(gs_count_policy::threads)
k_count_focus(gs_level_state *st, const K *in, K *bufA, K *bufB, gs_ull *hist, const gs_ull *dsplit)
{
	gs_pdl_enter();
	__shared__ K s_stage[gs_count_policy::threads / 32][gs_batch<K>::STAGE];
	__shared__ unsigned s_cnt[5];

	if (st->done || !st->focused)
		return;
	const int	warp = threadIdx.x >> 5;
	const K    *src = gs_pick_src<K>(st->src, in, bufA, bufB);
	K		   *dst = st->dst == 1 ? bufA : bufB;
	unsigned	c[5];

	if (threadIdx.x < 5)
		s_cnt[threadIdx.x] = 0;
	__syncthreads();
	if (st->m == 2)
		gs_focus_run<K, true>(st, src, dst, dsplit, s_stage[warp], c);
	else
		gs_focus_run<K, false>(st, src, dst, dsplit, s_stage[warp], c);
#pragma unroll
	for (int q = 0; q < 5; q++)
	{
		unsigned	v = c[q];

		for (int o = 16; o > 0; o >>= 1)
			v += __shfl_xor_sync(GS_FULL, v, o);
		if ((threadIdx.x & 31) == 0 && v)
			atomicAdd(&s_cnt[q], v);
	}
	__syncthreads();
	if (threadIdx.x < 5 && s_cnt[threadIdx.x])
		atomicAdd(&hist[threadIdx.x], (gs_ull) s_cnt[threadIdx.x]);
}

/* ------------------------------------------ spread counting (cell index) */

/*
 * Oracles: the count pass of a spread level stores every key's bucket
 * (uint16: up to 8191 buckets; for 4-byte keys the bucket's counter word,
 * gs_cells::hist_word) so that the filter pass reads 2 bytes per key
 * instead of looking the bucket up again -- the lookup's bank-conflicted
 * shared-memory reads bound both passes (NOTES-gpu.md §5 H) -- and reads a
 * key only if one of its vector's keys is kept.  Slots follow gs_for_each's
 * layout for the level's input pointer: body vector v's keys at V v .. V v +
 * V - 1, the tail's keys at V nvec + t, the head's at V nvec + V + h; so a
 * level of n keys uses fewer than n + 2 V <= n + gs_count_policy::ora_pad slots.
 */

template <typename K, int N>
static __device__ __forceinline__ void
gs_ora_store(uint16_t *ora, const int (&b)[N], unsigned valid, gs_at at)
{
	constexpr int V = gs_batch<K>::V;

	if (at.edge)
	{
		const unsigned lane = threadIdx.x & 31;

		if (valid & 1u)
			ora[at.vec * V + V + lane] = (uint16_t) b[0];
		if (valid & 2u)
			ora[at.vec * V + lane] = (uint16_t) b[1];
		return;
	}
#pragma unroll
	for (int u = 0; u < gs_batch<K>::U; u++)
	{
		if (!((valid >> (u * V)) & 1u))
			continue;			/* a body vector is valid as a whole */
		const gs_ull v = at.vec + (gs_ull) u * 32;

		if (V == 4)
			__stcs(reinterpret_cast<uint2 *>(ora) + v,
				   make_uint2((unsigned) b[u * V] | (unsigned) b[u * V + 1] << 16,
							  (unsigned) b[u * V + (2 % V)] | (unsigned) b[u * V + (3 % V)] << 16));
		else
			__stcs(reinterpret_cast<unsigned *>(ora) + v,
				   (unsigned) b[u * V] | (unsigned) b[u * V + 1] << 16);
	}
}

/*
 * Per key: bucket from the cell index, one shared-memory atomic; without MM
 * (spread levels) the bucket is stored as the key's oracle.  With MM
 * (approximate mode) the input's min and max with their multiplicities are
 * tracked too: a batch's own min and max are compared with the lane's so far,
 * and only a batch that reaches one counts its keys equal to it.
 */
template <typename K, bool MM, bool ONE, bool PACKED>
struct gs_count_fn
{
	gs_cells<K, ONE, PACKED> cs;
	unsigned   *shist;
	uint16_t   *ora;			/* !MM (spread levels): oracles out */
	unsigned	ninvalid;		/* padding slots counted (as the largest key) */
	K			mn,
				mx;
	unsigned	cmn,
				cmx;

	typedef K	key_t;

	template <int N>
	__device__ __forceinline__ void batch(const K (&xs)[N], unsigned valid, gs_at at)
	{
		batch_t<false>(xs, valid, at);
	}

	/* RUNS: the packed table has cells of adjacent splitters (gs_cells) */
	template <bool RUNS, int N>
	__device__ __forceinline__ void batch_t(const K (&xs)[N], unsigned valid, gs_at at)
	{
		int			b[N];

		/* invalid slots hold the largest key and are counted like keys;
		 * the kernel takes them off that key's bucket at the end */
		if constexpr (!ONE)
		{
#pragma unroll
			for (int i = 0; i < N; i++)
			{
				b[i] = cs.bucket_two(xs[i]);
				atomicAdd(&shist[b[i]], 1u);
			}
		}
		else
		{
			/*
			 * In chunks of C keys: the lookups, then the atomics, so that
			 * a chunk's shared-memory loads need not wait behind atomics on
			 * the same memory (gs_count_policy::chunk says what C measured).
			 */
			constexpr int C = N < gs_count_policy::chunk ? N : gs_count_policy::chunk;

			unsigned char *const hb = reinterpret_cast<unsigned char *>(shist);

#pragma unroll
			for (int h = 0; h < N; h += C)
			{
				unsigned	any = 0,
							e[C],
							o[C];		/* byte offsets of the counters */

#pragma unroll
				for (int i = 0; i < C; i++)
				{
					o[i] = cs.template hist_fast<RUNS>(xs[h + i], e[i]);
					any |= e[i];
				}
				/* keys in cells that are searched (gs_cells::slow): looked
				 * up again (one test per chunk on the fast path) */
				if (cs.slow(any))
				{
#pragma unroll
					for (int i = 0; i < C; i++)
						if (cs.slow(e[i]))
							o[i] = 4u * cs.hist_word(cs.bucket(xs[h + i]));
				}
#pragma unroll
				for (int i = 0; i < C; i++)
				{
					atomicAdd(reinterpret_cast<unsigned *>(hb + o[i]), 1u);
					b[h + i] = (int) (o[i] >> 2);	/* the oracle: the counter's word */
				}
			}
		}
		ninvalid += N - __popc(valid);
		if (!MM)
			gs_ora_store<K, N>(ora, b, valid, at);
		else
		{
			K			bmn = gs_key_max<K>::v,
						bmx = 0;

#pragma unroll
			for (int i = 0; i < N; i++)
			{
				bmn = xs[i] < bmn ? xs[i] : bmn;
				bmx = xs[i] > bmx ? xs[i] : bmx;
			}
			if (valid == gs_batch<K>::ALL)
			{
				/*
				 * A full batch: its own extreme and how often it occurs.
				 * Rare per lane after the first batches, but a warp runs
				 * the block when any lane needs it (~2/3 of batches at 2^28,
				 * ncu), so it is kept short: one compare and add per key
				 * (the per-key min/max chains it replaces were ~1/3 of the
				 * approximate count's instructions, NOTES-gpu.md section 10).
				 */
				if (bmn <= mn)
				{
					unsigned	c = 0;

#pragma unroll
					for (int i = 0; i < N; i++)
						c += xs[i] == bmn;
					cmn = bmn < mn ? c : cmn + c;
					mn = bmn;
				}
				if (bmx >= mx)
				{
					unsigned	c = 0;

#pragma unroll
					for (int i = 0; i < N; i++)
						c += xs[i] == bmx;
					cmx = bmx > mx ? c : cmx + c;
					mx = bmx;
				}
			}
			else if (valid && (bmn <= mn || bmx >= mx))
			{
				/* the edge batches: padding slots hold the largest key */
#pragma unroll
				for (int i = 0; i < N; i++)
					if ((valid >> i) & 1u)
					{
						const K		x = xs[i];

						cmn = x < mn ? 1 : cmn + (x == mn);
						mn = x < mn ? x : mn;
						cmx = x > mx ? 1 : cmx + (x == mx);
						mx = x > mx ? x : mx;
					}
			}
		}
	}
};

/* a count functor's batches with the packed table's runs (k_count) */
template <typename F>
struct gs_runs_view
{
	F		   *f;

	template <int N>
	__device__ __forceinline__ void batch(const typename F::key_t (&xs)[N], unsigned valid, gs_at at)
	{
		f->template batch_t<true>(xs, valid, at);
	}
};

/*
 * Merge of two (min, count of min, max, count of max) summaries, for
 * cub::BlockReduce; a count of 0 means "no keys".  Keys are compared as the
 * zero-extended 64-bit values the summaries hold, which orders them as K does.
 */
struct gs_mm_merge
{
	__device__ __forceinline__ gs_minmax operator() (const gs_minmax &a, const gs_minmax &b) const
	{
		gs_minmax	r = a;

		if (b.cmn != 0)
		{
			if (r.cmn == 0 || b.mn < r.mn)
			{
				r.mn = b.mn;
				r.cmn = b.cmn;
			}
			else if (b.mn == r.mn)
				r.cmn += b.cmn;
		}
		if (b.cmx != 0)
		{
			if (r.cmx == 0 || b.mx > r.mx)
			{
				r.mx = b.mx;
				r.cmx = b.cmx;
			}
			else if (b.mx == r.mx)
				r.cmx += b.cmx;
		}
		return r;
	}
};

/* blocks of the grid that take part for a level of n keys: small levels
 * use fewer (>= 64 keys per thread), since each block rebuilds the cell index */
static __device__ __forceinline__ unsigned
gs_active_blocks(gs_ull n)
{
	const gs_ull per = (gs_ull) blockDim.x * 64;
	const gs_ull a = (n + per - 1) / per;

	return a < 1 ? 1u : (a < gridDim.x ? (unsigned) a : gridDim.x);
}

/*
 * dynamic shared memory: gs_count_smem(P, sizeof(K), PACKED) for the P the
 * launch was sized for, whose cell capacity is cells_cap.  THREADS: 256, 512
 * or 1024, so that the blocks that memory allows fill an SM (gs_count_kernel
 * in gs_cuda.cu picks the variant).  ONE: the one-splitter lookup hist_fast
 * (gs_cells.cuh says when it pays), held to 64 registers (1024 threads per
 * SM): left alone, ptxas gave its batch ~100, i.e. half the warps (a minimum
 * of 0 blocks means none, as without the argument).  PACKED: its packed
 * table (approximate count only).
 */
template <typename K, bool MM, int THREADS = gs_count_policy::threads, bool ONE = false, bool PACKED = false>
__global__ void __launch_bounds__(THREADS, ONE ? 1024 / THREADS : 0)
k_count(gs_level_state *st, const K *in, K *bufA, K *bufB, gs_ull *hist, const gs_ull *dsplit,
		gs_minmax *blk_mm, uint16_t *ora, int cells_cap)
{
	gs_pdl_enter();
	typedef cub::BlockReduce<gs_minmax, THREADS> MMReduce;
	extern __shared__ __align__(16) unsigned char gs_dyn_smem[];
	__shared__ typename MMReduce::TempStorage s_mm;

	if (st->done || st->focused)
		return;
	const gs_ull n = st->n;
	const int	m = st->m;
	const int	P = 1 << st->depth;
	const int	nb = 2 * m + 1;
	gs_count_fn<K, MM, ONE, PACKED> f;
	typedef typename gs_cells<K, ONE, PACKED>::entry_t entry_t;

	f.mn = gs_key_max<K>::v;
	f.mx = 0;
	f.cmn = f.cmx = 0;
	const unsigned nact = gs_active_blocks(n);

	if (blockIdx.x >= nact)
	{
		if (MM && threadIdx.x == 0)
			blk_mm[blockIdx.x].cmn = blk_mm[blockIdx.x].cmx = 0;
		return;
	}
	K		   *spl = reinterpret_cast<K *>(gs_dyn_smem);
	unsigned   *shist = reinterpret_cast<unsigned *>(gs_dyn_smem + gs_align16((size_t) P * sizeof(K)));
	entry_t    *tab = reinterpret_cast<entry_t *>(reinterpret_cast<unsigned char *>(shist) +
												 gs_align16((size_t) 2 * P * 4));

	for (int b = threadIdx.x; b < 2 * P; b += blockDim.x)
		shist[b] = 0;
	/* this level may have fewer splitters than the launch was sized for;
	 * its table stays within the launch's (gs_cells_cap is not monotone) */
	gs_cells_build<K, ONE, PACKED, THREADS>(f.cs, spl, tab, dsplit, m, min(gs_cells_cap(P, (int) sizeof(K)), cells_cap));
	f.cs.qoff = 4u * (unsigned) P;
	f.shist = shist;
	f.ora = ora;
	f.ninvalid = 0;
	bool		runs = false;

	if constexpr (PACKED)
		runs = f.cs.runs;
	if (runs)
	{
		/* (block-uniform: uniform data keeps the shorter loop) */
		gs_runs_view<gs_count_fn<K, MM, ONE, PACKED>> v = {&f};

		if constexpr (PACKED)
			gs_for_each<K>(gs_pick_src<K>(st->src, in, bufA, bufB), n, v, nact);
	}
	else
		gs_for_each<K>(gs_pick_src<K>(st->src, in, bufA, bufB), n, f, nact);
	if (f.ninvalid)
		atomicSub(&shist[f.cs.hist_word(f.cs.bucket(gs_key_max<K>::v))], f.ninvalid);
	__syncthreads();
	for (int b = threadIdx.x; b < nb; b += blockDim.x)
	{
		const unsigned c = shist[f.cs.hist_word(b)];

		if (c)
			atomicAdd(&hist[b], (gs_ull) c);
	}

	if (MM)
	{
		const gs_minmax mine = {f.mn, f.mx, f.cmn, f.cmx};
		const gs_minmax blk = MMReduce(s_mm).Reduce(mine, gs_mm_merge());

		if (threadIdx.x == 0)
			blk_mm[blockIdx.x] = blk;
	}
}

/* ------------------------------------------------------------------ plan */


/* THREADS * gs_plan_policy::items >= the level's buckets: threads for
 * spread levels (up to 2*4095+1 buckets), threads_focus for
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

/* ---------------------------------------------------------------- filter */

/*
 * Spread filter from the count pass's oracles (gs_ora_store's layout): a key
 * is kept when its bucket's bit is set in smask, the keep mask replicated
 * once per bank (word w of lane l at smask[32 w + l]: conflict-free reads);
 * a key vector is read only when one of its keys is kept.  The oracle loads
 * of a batch go out first, then its key loads.
 */
static __device__ __forceinline__ unsigned
gs_kept(const unsigned *smask, unsigned b, unsigned lane)
{
	return (smask[(b >> 5) * 32 + lane] >> (b & 31)) & 1u;
}

template <typename K>
static __device__ __forceinline__ void
gs_filter_ora(const K *p, gs_ull n, const uint16_t *ora, const unsigned *smask, gs_stage<K> &stage,
			  unsigned nblocks)
{
	constexpr int U = gs_batch<K>::U;
	constexpr int V = gs_batch<K>::V;
	constexpr int N = gs_batch<K>::N;
	const unsigned lane = threadIdx.x & 31;
	const gs_ull gwarp = ((gs_ull) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const gs_ull nwarps = ((gs_ull) nblocks * blockDim.x) >> 5;
	gs_ull		head = ((16 - ((uintptr_t) p & 15)) & 15) / sizeof(K);

	if (head > n)
		head = n;
	const gs_ull nvec = (n - head) / V;
	const gs_ull tail0 = head + nvec * V;
	K			xs[N];

	if (gwarp == 0)
	{
		unsigned	keep = 0;
		const gs_ull t = tail0 + lane;

#pragma unroll
		for (int i = 0; i < N; i++)
			xs[i] = gs_key_max<K>::v;
		if (lane < head && gs_kept(smask, ora[nvec * V + V + lane], lane))
		{
			xs[0] = p[lane];
			keep |= 1u;
		}
		if (t < n && gs_kept(smask, ora[nvec * V + lane], lane))
		{
			xs[1] = p[t];
			keep |= 2u;
		}
		stage.push(xs, keep);
	}
	const uint4 *vp = reinterpret_cast<const uint4 *>(p + head);
	const gs_ull stride = nwarps * 32 * U;
	/* this lane's oracles of one batch: V 16-bit buckets per key vector, as
	 * 8 (f32) or 4 (f64) bytes */
	typedef typename std::conditional<V == 4, uint2, unsigned>::type ora_vec;
	const ora_vec *ov = reinterpret_cast<const ora_vec *>(ora);
	ora_vec		o[U];

	/*
	 * Software-pipelined: the next batch's oracles are loaded before this
	 * batch's keys, so a warp has one DRAM round trip per batch on its
	 * critical path instead of two (oracles, then the keys they select).
	 */
	auto		load_ora = [&](gs_ull w) {
#pragma unroll
		for (int u = 0; u < U; u++)
		{
			const gs_ull i = w + (gs_ull) u * 32 + lane;

			if (i < nvec)
				o[u] = __ldcs(ov + i);
		}
	};
	gs_ull		w = gwarp * 32 * U;

	if (w < nvec)
		load_ora(w);
	for (; w < nvec; w += stride)
	{
		unsigned	keep = 0;

#pragma unroll
		for (int u = 0; u < U; u++)
		{
			const gs_ull i = w + (gs_ull) u * 32 + lane;

			if (i < nvec)
			{
				unsigned	ow[2];

				if constexpr (V == 4)
				{
					ow[0] = o[u].x;
					ow[1] = o[u].y;
				}
				else
					ow[0] = ow[1] = o[u];
#pragma unroll
				for (int j = 0; j < V; j++)
				{
					const unsigned b = (ow[j >> 1] >> ((j & 1) * 16)) & 0xFFFFu;

					keep |= gs_kept(smask, b, lane) << (u * V + j);
				}
			}
		}
		if (w + stride < nvec)
			load_ora(w + stride);
#pragma unroll
		for (int u = 0; u < U; u++)
		{
			uint4		v = make_uint4(0, 0, 0, 0);

			if ((keep >> (u * V)) & ((1u << V) - 1))
				v = __ldcs(vp + w + (gs_ull) u * 32 + lane);
			memcpy(&xs[u * V], &v, 16);
		}
		stage.push(xs, keep);
	}
}

/* single-rank filter (the speculative write missed): one open bucket kept */
template <typename K>
struct gs_filter_focus_fn
{
	gs_keep_range<K> kr;
	gs_stage<K> stage;

	template <int N>
	__device__ __forceinline__ void batch(const K (&xs)[N], unsigned valid, gs_at)
	{
		unsigned	keep = 0;

#pragma unroll
		for (int i = 0; i < N; i++)
			keep |= (unsigned) ((K) (xs[i] - kr.a) < kr.w) << i;
		gs_push_offsets(stage, xs, keep & valid, kr.a);
	}
};

/* dynamic shared memory: gs_filter_smem(P) */
template <typename K>
__global__ void __launch_bounds__(gs_count_policy::threads)
k_filter(gs_level_state *st, const K *in, K *bufA, K *bufB, const gs_ull *dsplit,
		 const unsigned char *wmask, const uint16_t *ora)
{
	gs_pdl_enter();
	extern __shared__ __align__(16) unsigned char gs_dyn_smem[];
	__shared__ K s_stage[gs_count_policy::threads / 32][gs_batch<K>::STAGE];

	if (st->done || !st->need_filter)
		return;
	const int	warp = threadIdx.x >> 5;
	const int	m = st->m;
	const K    *src = gs_pick_src<K>(st->src, in, bufA, bufB);
	const gs_ull n = st->n;
	gs_stage<K> stage;

	const unsigned nact = st->focused ? gridDim.x : gs_active_blocks(n);

	if (blockIdx.x >= nact)
		return;
	stage.s = s_stage[warp];
	stage.cnt = 0;
	stage.dst = st->dst == 1 ? bufA : bufB;
	stage.gcnt = &st->out_count;
	stage.cap = st->cap;

	if (st->focused)
	{
		/* one rank: its open bucket (0, 2 or 4) is the only one kept */
		gs_filter_focus_fn<K> f;
		const bool	two = m == 2;
		int			keep_b = -1;

		for (int b = 0; b < 5 && b < 2 * m + 1; b += 2)
			if (wmask[b])
				keep_b = b;
		f.kr = gs_open_bucket_range<K>(keep_b, (K) dsplit[0], two ? (K) dsplit[1] : gs_key_max<K>::v, two);
		f.stage = stage;
		gs_for_each<K>(src, n, f);
		f.stage.flush();
		return;
	}
	/*
	 * The keep mask, one copy per bank: warp w builds words w, w + 8, ...
	 * Indexed by oracle: the bucket, or with the one-splitter lookup the
	 * bucket's counter word (gs_cells::hist_word: open buckets 2J at J,
	 * equality buckets 2J+1 at P + J).
	 */
	unsigned   *smask = reinterpret_cast<unsigned *>(gs_dyn_smem);
	const int	nb = 2 * m + 1;
	const int	P = 1 << st->depth;
	/* the count's choice for this level: spread levels have P <= 4096
	 * (gs_mopen_for), where gs_cells_one depends on the key width only */
	const bool	words = gs_cells_one(P, (int) sizeof(K));
	const int	nbits = words ? 2 * P : nb;
	const unsigned lane = threadIdx.x & 31;

	for (int wd = warp; wd < (nbits + 31) >> 5; wd += gs_count_policy::threads / 32)
	{
		const int	o = wd * 32 + (int) lane;
		const int	b = !words ? o : (o >= P ? 2 * (o - P) + 1 : 2 * o);

		smask[wd * 32 + lane] = __ballot_sync(GS_FULL, o < nbits && b < nb && wmask[b] != 0);
	}
	__syncthreads();
	gs_filter_ora<K>(src, n, ora, smask, stage, nact);
	stage.flush();
}

/* after the filter: the compacted buffer is the next level's input */
__global__ void
k_advance(gs_level_state *st, const gs_ull *below)
{
	gs_pdl_enter();
	if (st->done || !st->need_filter)
		return;
	st->src = st->dst;
	st->n = below[st->nb];
	st->need_filter = 0;
}

/* --------------------------------------------------------- approximate */

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

/* approx_buckets-1 splitters at sample positions i*s/B (i = 1..B-1), deduplicated */
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
 */
template <typename K>
__global__ void __launch_bounds__(gs_plan_policy::threads)
k_approx_pick(gs_level_state *st, const gs_ull *hist, const gs_ull *dsplit, const gs_minmax *blk_mm,
			  int nblk, const gs_ull *ranks, int nranks, gs_ull *cand_key, gs_ull *cand_lo,
			  gs_ull *cand_hi, gs_approx_pick *out)
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
	gs_ull	   *s_hi = reinterpret_cast<gs_ull *>(gs_dyn_smem);	/* cand_hi, m + 2 */
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

/* --------------------------------------------------------------- misc */

__global__ void
k_widen16(const uint16_t *src, uint32_t *dst, gs_ull n)
{
	for (gs_ull i = (gs_ull) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (gs_ull) gridDim.x * blockDim.x)
		dst[i] = src[i];
}

#endif							/* GS_KERNELS_CUH */
