/*
 * gs_kernels.cuh — SampleSelect kernels (internal; included by gs_gpu.cu).
 *
 * One exact level = four launches, all parameters read from device memory
 * (gs_level_state), so the host enqueues several levels without waiting:
 *   k_sample   one block: random sample -> cub::BlockRadixSort -> splitters
 *              (or, if the level's input fits, sort it all: base case)
 *   k_count_*  grid-stride over the input: bucket of every key, per-block
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

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include "gs_select.cuh"

typedef unsigned long long gs_ull;

template <typename K> struct gs_key_max;
template <> struct gs_key_max<uint32_t> { static constexpr uint32_t v = 0xFFFFFFFFu; };
template <> struct gs_key_max<uint64_t> { static constexpr uint64_t v = ~UINT64_C(0); };

#define GS_FULL 0xFFFFFFFFu
#define GS_STAGE 256			/* per-warp staging buffer for compaction (keys) */

template <typename K>
static __device__ __forceinline__ const K *
gs_pick_src(int sel, const K *in, const K *a, const K *b)
{
	return sel == 0 ? in : (sel == 1 ? a : b);
}

/*
 * Calls f(key, valid) for every key of p[0..n), warp-uniformly (every lane of
 * a warp makes the same calls, invalid slots with valid = false, so f may use
 * warp collectives with the full mask).  Body: 16-byte vector loads,
 * GS_UNROLL of them in flight per lane, grid-stride over warps; the unaligned
 * head and the tail are done by warp 0.  p must be aligned to sizeof(K).
 */
template <typename K, typename F>
static __device__ __forceinline__ void
gs_for_each(const K *p, gs_ull n, F &f)
{
	constexpr int V = 16 / sizeof(K);
	const unsigned lane = threadIdx.x & 31;
	const gs_ull gwarp = ((gs_ull) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const gs_ull nwarps = ((gs_ull) gridDim.x * blockDim.x) >> 5;
	gs_ull		head = ((16 - ((uintptr_t) p & 15)) & 15) / sizeof(K);

	if (head > n)
		head = n;
	const gs_ull nvec = (n - head) / V;
	const gs_ull tail0 = head + nvec * V;

	if (gwarp == 0)
	{
		bool		v = lane < head;
		K			x = v ? p[lane] : K(0);

		f(x, v);
		gs_ull		t = tail0 + lane;
		bool		v2 = t < n;
		K			y = v2 ? p[t] : K(0);

		f(y, v2);
	}
	const uint4 *vp = reinterpret_cast<const uint4 *>(p + head);

	for (gs_ull w = gwarp * 32 * GS_UNROLL; w < nvec; w += nwarps * 32 * GS_UNROLL)
	{
		uint4		buf[GS_UNROLL];
		bool		ok[GS_UNROLL];

#pragma unroll
		for (int u = 0; u < GS_UNROLL; u++)
		{
			gs_ull		i = w + (gs_ull) u * 32 + lane;

			ok[u] = i < nvec;
			if (ok[u])
				buf[u] = __ldcs(vp + i);	/* streamed: read once per pass */
			else
				buf[u] = make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (int u = 0; u < GS_UNROLL; u++)
		{
			K			xs[V];

			memcpy(xs, &buf[u], 16);
#pragma unroll
			for (int v = 0; v < V; v++)
				f(xs[v], ok[u]);
		}
	}
}

/*
 * Warp-private staging for stream compaction (paper 004: warp-aggregated
 * positions): kept keys go to a shared-memory buffer with ballot/popc; a full
 * buffer is flushed with ONE global atomic per ~224 keys instead of one per
 * warp and slot (a single global counter would otherwise serialise).
 */
template <typename K>
struct gs_stage
{
	K		   *s;
	unsigned	cnt;
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

	__device__ __forceinline__ void push(bool keep, K x)
	{
		unsigned	bal = __ballot_sync(GS_FULL, keep);

		if (bal == 0)
			return;
		const unsigned lane = threadIdx.x & 31;

		if (keep)
			s[cnt + __popc(bal & ((1u << lane) - 1))] = x;
		cnt += __popc(bal);
		if (cnt > GS_STAGE - 32)
			flush();
	}
};

/* ---- implicit search tree (Eytzinger layout in shared memory) ----
 * Node i has children 2i+1 and 2i+2; level l occupies [2^l-1, 2^(l+1)-1), so
 * the nodes a warp can touch at one level are consecutive words: few bank
 * conflicts (a sorted array would put them 2^k words apart, one bank). */
template <typename K>
static __device__ void
gs_build_tree(K *tree, int depth, int m, const gs_ull *dsplit)
{
	const int	P = 1 << depth;

	for (int i = threadIdx.x; i < P - 1; i += blockDim.x)
	{
		int			l = 31 - __clz(i + 1);
		int			pos = i + 1 - (1 << l);
		int			inorder = ((2 * pos + 1) << (depth - 1 - l)) - 1;

		tree[i] = inorder < m ? (K) dsplit[inorder] : gs_key_max<K>::v;
	}
}

/* bucket of x: 2j (open, j = #splitters <= x ... strictly below) or 2j-1 (== d[j-1]) */
template <typename K>
static __device__ __forceinline__ int
gs_bucket(const K *tree, int depth, int m, K dlast, K x)
{
	int			i = 0;
	K			last = 0;

	for (int l = 0; l < depth; l++)
	{
		K			t = tree[i];
		bool		ge = x >= t;

		i = 2 * i + 1 + (int) ge;
		last = ge ? t : last;
	}
	int			j = i - ((1 << depth) - 1);	/* tree entries <= x */
	bool		eq;

	if (j > m)
	{							/* x == max key, padded nodes counted */
		j = m;
		eq = dlast == x;
	}
	else
		eq = j > 0 && last == x;
	return eq ? 2 * j - 1 : 2 * j;
}

/* Same search with the depth known at compile time: the loop unrolls, so
 * the searches of the 4-16 keys a lane holds interleave (ILP) instead of
 * running as one dependent chain each with loop overhead.  D == 0: runtime. */
template <typename K, int D>
static __device__ __forceinline__ int
gs_bucket_d(const K *tree, int depth, int m, K dlast, K x)
{
	if (D == 0)
		return gs_bucket<K>(tree, depth, m, dlast, x);
	int			i = 0;
	K			last = 0;

#pragma unroll
	for (int l = 0; l < D; l++)
	{
		K			t = tree[i];
		bool		ge = x >= t;

		i = 2 * i + 1 + (int) ge;
		last = ge ? t : last;
	}
	int			j = i - ((1 << D) - 1);
	bool		eq;

	if (j > m)
	{
		j = m;
		eq = dlast == x;
	}
	else
		eq = j > 0 && last == x;
	return eq ? 2 * j - 1 : 2 * j;
}

/* calls body.template run<D>() with D = depth for depths 6..13, else D = 0 */
#define GS_DEPTH_DISPATCH(depth, CALL) \
	switch (depth) { \
		case 6: CALL(6); break; case 7: CALL(7); break; case 8: CALL(8); break; \
		case 9: CALL(9); break; case 10: CALL(10); break; case 11: CALL(11); break; \
		case 12: CALL(12); break; case 13: CALL(13); break; \
		default: CALL(0); break; }

/* ---------------------------------------------------------------- sample */

template <typename K>
struct gs_sample_smem
{
	typedef cub::BlockRadixSort<K, GS_SAMPLE_THREADS, GS_SAMPLE_ITEMS> Sort;
	typedef cub::BlockScan<int, GS_SAMPLE_THREADS> Scan;
	union
	{
		typename Sort::TempStorage sort;
		K			sorted[GS_SAMPLE_SIZE];
	};
	typename Scan::TempStorage scan;
};

template <typename K>
__global__ void __launch_bounds__(GS_SAMPLE_THREADS)
k_sample(gs_level_state *st, const K *in, K *bufA, K *bufB, gs_ull *hist, gs_ull *dsplit,
		 gs_ull *rank_cur, int *resolved, gs_ull *result)
{
	typedef gs_sample_smem<K> S;
	extern __shared__ __align__(16) unsigned char gs_dyn_smem[];
	S		   &sm = *reinterpret_cast<S *>(gs_dyn_smem);
	__shared__ int s_m;
	const int	tid = threadIdx.x;

	if (st->done)
		return;
	const gs_ull n = st->n;
	const K    *src = gs_pick_src<K>(st->src, in, bufA, bufB);
	const bool	base = n <= GS_SAMPLE_SIZE;
	K			items[GS_SAMPLE_ITEMS];

	if (base)
	{
#pragma unroll
		for (int i = 0; i < GS_SAMPLE_ITEMS; i++)
		{
			gs_ull		idx = (gs_ull) tid * GS_SAMPLE_ITEMS + i;

			items[i] = idx < n ? src[idx] : gs_key_max<K>::v;
		}
	}
	else
	{
		const gs_ull salt = st->seed + (gs_ull) (st->iter + 1) * UINT64_C(0x632BE59BD9B4E019);

#pragma unroll
		for (int i = 0; i < GS_SAMPLE_ITEMS; i++)
			items[i] = src[gs_splitmix64(salt + (gs_ull) tid * GS_SAMPLE_ITEMS + i) % n];
	}
	typename S::Sort(sm.sort).Sort(items);
	__syncthreads();
#pragma unroll
	for (int i = 0; i < GS_SAMPLE_ITEMS; i++)
		sm.sorted[tid * GS_SAMPLE_ITEMS + i] = items[i];
	__syncthreads();

	const int	nranks = st->nranks;

	if (base)
	{
		/* base case: the whole level input is sorted; every rank is read off */
		for (int k = tid; k < nranks; k += GS_SAMPLE_THREADS)
			if (!resolved[k])
			{
				result[k] = sm.sorted[rank_cur[k]];
				resolved[k] = 1;
			}
		if (tid == 0)
		{
			st->nactive = 0;
			st->done = 1;
		}
		return;
	}

	if (st->focused)
	{
		/*
		 * Single rank (Floyd-Rivest style choice of SampleSelect's splitters):
		 * two splitters at sample positions p -/+ delta around the rank's
		 * expected sample position; the open bucket between them holds the
		 * rank with probability ~1 - 6e-5 and ~2*delta/8192 of the keys, and
		 * is written during counting.  Equality buckets on both splitters
		 * keep clusters at the edges out of it.
		 */
		if (tid == 0)
		{
			int			k = 0;

			while (k < nranks - 1 && resolved[k])
				k++;
			const gs_ull r = rank_cur[k];
			const double q = (double) r / (double) n;
			const double S = GS_SAMPLE_SIZE;
			long long	p = (long long) (q * S);
			long long	delta = (long long) (4.0 * sqrt(S * q * (1.0 - q))) + 16;
			long long	lo = p - delta,
						hi = p + delta;
			int			m = 0;
			unsigned	pmask;

			if (lo >= 0)
				dsplit[m++] = sm.sorted[lo];
			if (hi < GS_SAMPLE_SIZE)
			{
				K			v = sm.sorted[hi];

				if (m == 0 || (K) dsplit[0] != v)
					dsplit[m++] = v;
			}
			/* predicted open buckets */
			if (lo < 0)
				pmask = 1u;		/* below hi */
			else if (hi >= GS_SAMPLE_SIZE)
				pmask = 1u << 2;	/* above lo */
			else if (m == 2)
				pmask = 1u << 2;	/* between lo and hi */
			else
				pmask = 0;		/* lo == hi: expected in the equality bucket */
			st->m = m;
			st->nb = 2 * m + 1;
			st->pmask = pmask;
			st->spec = 1;
		}
	}
	else
	{
		/* spread: mopen-1 evenly spaced sample positions, deduplicated */
		const int	mopen = st->mopen;
		const int	mraw = mopen - 1;
		int			flags[8];
		K			keys[8];

#pragma unroll
		for (int i = 0; i < 8; i++)
		{
			int			s = tid * 8 + i;

			flags[i] = 0;
			keys[i] = 0;
			if (s < mraw)
			{
				int			pos = (int) (((long long) (s + 1) * GS_SAMPLE_SIZE) / mopen);
				int			prv = (int) (((long long) s * GS_SAMPLE_SIZE) / mopen);

				keys[i] = sm.sorted[pos];
				flags[i] = (s == 0 || sm.sorted[prv] != keys[i]) ? 1 : 0;
			}
		}
		int			total;

		typename S::Scan(sm.scan).ExclusiveSum(flags, flags, total);
		/* flags[] now holds output positions; recompute the keep test */
#pragma unroll
		for (int i = 0; i < 8; i++)
		{
			int			s = tid * 8 + i;

			if (s < mraw)
			{
				int			prv = (int) (((long long) s * GS_SAMPLE_SIZE) / mopen);

				if (s == 0 || sm.sorted[prv] != keys[i])
					dsplit[flags[i]] = keys[i];
			}
		}
		if (tid == 0)
		{
			s_m = total;
			st->m = total;
			st->nb = 2 * total + 1;
			st->pmask = 0;
			st->spec = 0;
		}
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

	for (int b = tid; b < nb; b += GS_SAMPLE_THREADS)
		hist[b] = 0;
}

/* ------------------------------------------------------ focused counting */

/* 2 splitters, buckets 0..4 from 4 comparisons: no tree, counts in registers */
template <typename K>
struct gs_focus_fn
{
	K			d0,
				d1;
	bool		two;
	bool		spec;
	unsigned	pmask;
	unsigned	nv,
				gt0,
				ge0,
				gt1,
				ge1;
	gs_stage<K> stage;

	__device__ __forceinline__ int bucket(K x) const
	{
		return (int) (x > d0) + (int) (x >= d0) + (two ? (int) (x > d1) + (int) (x >= d1) : 0);
	}

	__device__ __forceinline__ void operator() (K x, bool valid)
	{
		nv += valid;
		gt0 += valid && x > d0;
		ge0 += valid && x >= d0;
		gt1 += valid && x > d1;
		ge1 += valid && x >= d1;
		if (spec)
			stage.push(valid && ((pmask >> bucket(x)) & 1u), x);
	}
};

template <typename K>
__global__ void __launch_bounds__(GS_COUNT_THREADS)
k_count_focus(gs_level_state *st, const K *in, K *bufA, K *bufB, gs_ull *hist, const gs_ull *dsplit)
{
	__shared__ K s_stage[GS_COUNT_THREADS / 32][GS_STAGE];
	__shared__ unsigned s_cnt[5];

	if (st->done || !st->focused)
		return;
	const int	warp = threadIdx.x >> 5;
	const int	m = st->m;
	gs_focus_fn<K> f;

	f.d0 = (K) dsplit[0];
	f.two = m == 2;
	f.d1 = f.two ? (K) dsplit[1] : gs_key_max<K>::v;
	f.spec = st->spec != 0;
	f.pmask = st->pmask;
	f.nv = f.gt0 = f.ge0 = f.gt1 = f.ge1 = 0;
	f.stage.s = s_stage[warp];
	f.stage.cnt = 0;
	f.stage.dst = st->dst == 1 ? bufA : bufB;
	f.stage.gcnt = &st->out_count;
	f.stage.cap = st->cap;
	if (threadIdx.x < 5)
		s_cnt[threadIdx.x] = 0;
	__syncthreads();

	gs_for_each<K>(gs_pick_src<K>(st->src, in, bufA, bufB), st->n, f);
	if (f.spec)
		f.stage.flush();

	unsigned	c[5];

	c[0] = f.nv - f.ge0;
	c[1] = f.ge0 - f.gt0;
	if (f.two)
	{
		c[2] = f.gt0 - f.ge1;
		c[3] = f.ge1 - f.gt1;
		c[4] = f.gt1;
	}
	else
	{
		c[2] = f.gt0;
		c[3] = c[4] = 0;
	}
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

/* -------------------------------------------------- spread counting (tree) */

template <typename K, bool MM, int D>
struct gs_count_fn
{
	const K    *tree;
	unsigned   *shist;
	int			depth,
				m;
	K			dlast;
	K			mn,
				mx;
	unsigned	cmn,
				cmx;

	__device__ __forceinline__ void operator() (K x, bool valid)
	{
		if (!valid)
			return;
		int			b = gs_bucket_d<K, D>(tree, depth, m, dlast, x);

		atomicAdd(&shist[b], 1u);
		if (MM)
		{
			if (x < mn)
			{
				mn = x;
				cmn = 1;
			}
			else if (x == mn)
				cmn++;
			if (x > mx)
			{
				mx = x;
				cmx = 1;
			}
			else if (x == mx)
				cmx++;
		}
	}
};

template <typename K>
static __device__ __forceinline__ void
gs_mm_merge(K &mn, gs_ull &cmn, K &mx, gs_ull &cmx, K mn2, gs_ull cmn2, K mx2, gs_ull cmx2)
{
	if (mn2 < mn)
	{
		mn = mn2;
		cmn = cmn2;
	}
	else if (mn2 == mn)
		cmn += cmn2;
	if (mx2 > mx)
	{
		mx = mx2;
		cmx = cmx2;
	}
	else if (mx2 == mx)
		cmx += cmx2;
}

/* dynamic shared memory: K tree[P]; unsigned hist[2P] */
template <typename K, bool MM>
__global__ void __launch_bounds__(GS_COUNT_THREADS)
k_count(gs_level_state *st, const K *in, K *bufA, K *bufB, gs_ull *hist, const gs_ull *dsplit,
		gs_minmax *blk_mm)
{
	extern __shared__ __align__(16) unsigned char gs_dyn_smem[];
	__shared__ K s_mn[GS_COUNT_THREADS / 32],
				s_mx[GS_COUNT_THREADS / 32];
	__shared__ gs_ull s_cmn[GS_COUNT_THREADS / 32],
				s_cmx[GS_COUNT_THREADS / 32];

	if (st->done || st->focused)
		return;
	const int	depth = st->depth;
	const int	m = st->m;
	const int	P = 1 << depth;
	const int	nb = 2 * m + 1;
	K		   *tree = reinterpret_cast<K *>(gs_dyn_smem);
	unsigned   *shist = reinterpret_cast<unsigned *>(tree + P);

	gs_build_tree<K>(tree, depth, m, dsplit);
	for (int b = threadIdx.x; b < nb; b += blockDim.x)
		shist[b] = 0;
	__syncthreads();

	K			mn = gs_key_max<K>::v,
				mx = 0;
	unsigned	fcmn = 0,
				fcmx = 0;
	const K    *src = gs_pick_src<K>(st->src, in, bufA, bufB);
	const gs_ull n = st->n;
	const K		dlast = m > 0 ? (K) dsplit[m - 1] : K(0);

#define GS_COUNT_CALL(DD) do { \
		gs_count_fn<K, MM, DD> f; \
		f.tree = tree; f.shist = shist; f.depth = depth; f.m = m; f.dlast = dlast; \
		f.mn = gs_key_max<K>::v; f.mx = 0; f.cmn = f.cmx = 0; \
		gs_for_each<K>(src, n, f); \
		mn = f.mn; mx = f.mx; fcmn = f.cmn; fcmx = f.cmx; } while (0)
	GS_DEPTH_DISPATCH(depth, GS_COUNT_CALL)
#undef GS_COUNT_CALL
	__syncthreads();
	for (int b = threadIdx.x; b < nb; b += blockDim.x)
		if (shist[b])
			atomicAdd(&hist[b], (gs_ull) shist[b]);

	if (MM)
	{
		gs_ull		cmn = fcmn,
					cmx = fcmx;

		for (int o = 16; o > 0; o >>= 1)
		{
			K			mn2 = __shfl_xor_sync(GS_FULL, mn, o);
			K			mx2 = __shfl_xor_sync(GS_FULL, mx, o);
			gs_ull		cmn2 = __shfl_xor_sync(GS_FULL, cmn, o);
			gs_ull		cmx2 = __shfl_xor_sync(GS_FULL, cmx, o);

			gs_mm_merge<K>(mn, cmn, mx, cmx, mn2, cmn2, mx2, cmx2);
		}
		const int	w = threadIdx.x >> 5;

		if ((threadIdx.x & 31) == 0)
		{
			s_mn[w] = mn;
			s_mx[w] = mx;
			s_cmn[w] = cmn;
			s_cmx[w] = cmx;
		}
		__syncthreads();
		if (threadIdx.x == 0)
		{
			for (int i = 1; i < GS_COUNT_THREADS / 32; i++)
				gs_mm_merge<K>(mn, cmn, mx, cmx, s_mn[i], s_cmn[i], s_mx[i], s_cmx[i]);
			blk_mm[blockIdx.x].mn = mn;
			blk_mm[blockIdx.x].mx = mx;
			blk_mm[blockIdx.x].cmn = cmn;
			blk_mm[blockIdx.x].cmx = cmx;
		}
	}
}

/* ------------------------------------------------------------------ plan */

#define GS_PLAN_THREADS 1024
#define GS_PLAN_ITEMS 8			/* 8192 >= 2*4095+1 buckets */

template <typename K>
__global__ void __launch_bounds__(GS_PLAN_THREADS)
k_plan(gs_level_state *st, const gs_ull *hist, gs_ull *start, gs_ull *below, const gs_ull *dsplit,
	   unsigned char *wmask, gs_ull *rank_cur, int *resolved, int *rank_bucket, gs_ull *result)
{
	typedef cub::BlockScan<gs_ull, GS_PLAN_THREADS> Scan;
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
	gs_ull		v[GS_PLAN_ITEMS];

#pragma unroll
	for (int i = 0; i < GS_PLAN_ITEMS; i++)
	{
		int			b = tid * GS_PLAN_ITEMS + i;

		v[i] = b < nb ? hist[b] : 0;
	}
	Scan(ts).ExclusiveSum(v, v);
#pragma unroll
	for (int i = 0; i < GS_PLAN_ITEMS; i++)
	{
		int			b = tid * GS_PLAN_ITEMS + i;

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

	for (int k = tid; k < nranks; k += GS_PLAN_THREADS)
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
			result[k] = dsplit[lo >> 1];	/* equality bucket: done */
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
		for (int b = tid; b < nb; b += GS_PLAN_THREADS)
			wmask[b] = (pmask >> b) & 1u;
	}
	__syncthreads();

	gs_ull		excluded;

#pragma unroll
	for (int i = 0; i < GS_PLAN_ITEMS; i++)
	{
		int			b = tid * GS_PLAN_ITEMS + i;

		v[i] = (b < nb && !wmask[b]) ? hist[b] : 0;
	}
	__syncthreads();
	Scan(ts).ExclusiveSum(v, v, excluded);
#pragma unroll
	for (int i = 0; i < GS_PLAN_ITEMS; i++)
	{
		int			b = tid * GS_PLAN_ITEMS + i;

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
	for (int k = tid; k < nranks; k += GS_PLAN_THREADS)
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
	}
}

/* ---------------------------------------------------------------- filter */

template <typename K, int D>
struct gs_filter_fn
{
	const K    *tree;
	const unsigned char *mask;
	int			depth,
				m;
	K			dlast;
	gs_stage<K> stage;

	__device__ __forceinline__ void operator() (K x, bool valid)
	{
		bool		keep = false;

		if (valid)
			keep = mask[gs_bucket_d<K, D>(tree, depth, m, dlast, x)] != 0;
		stage.push(keep, x);
	}
};

template <typename K>
struct gs_filter_focus_fn
{
	K			d0,
				d1;
	bool		two;
	unsigned	wm;
	gs_stage<K> stage;

	__device__ __forceinline__ void operator() (K x, bool valid)
	{
		int			b = (int) (x > d0) + (int) (x >= d0) + (two ? (int) (x > d1) + (int) (x >= d1) : 0);

		stage.push(valid && ((wm >> b) & 1u), x);
	}
};

/* dynamic shared memory: K tree[P]; unsigned char mask[2P] */
template <typename K>
__global__ void __launch_bounds__(GS_COUNT_THREADS)
k_filter(gs_level_state *st, const K *in, K *bufA, K *bufB, const gs_ull *dsplit,
		 const unsigned char *wmask)
{
	extern __shared__ __align__(16) unsigned char gs_dyn_smem[];
	__shared__ K s_stage[GS_COUNT_THREADS / 32][GS_STAGE];

	if (st->done || !st->need_filter)
		return;
	const int	warp = threadIdx.x >> 5;
	const int	m = st->m;
	const K    *src = gs_pick_src<K>(st->src, in, bufA, bufB);
	const gs_ull n = st->n;
	gs_stage<K> stage;

	stage.s = s_stage[warp];
	stage.cnt = 0;
	stage.dst = st->dst == 1 ? bufA : bufB;
	stage.gcnt = &st->out_count;
	stage.cap = st->cap;

	if (st->focused)
	{
		gs_filter_focus_fn<K> f;

		f.d0 = (K) dsplit[0];
		f.two = m == 2;
		f.d1 = f.two ? (K) dsplit[1] : gs_key_max<K>::v;
		f.wm = 0;
		for (int b = 0; b < 5 && b < 2 * m + 1; b++)
			f.wm |= (unsigned) (wmask[b] != 0) << b;
		f.stage = stage;
		gs_for_each<K>(src, n, f);
		f.stage.flush();
	}
	else
	{
		const int	depth = st->depth;
		const int	P = 1 << depth;
		K		   *tree = reinterpret_cast<K *>(gs_dyn_smem);
		unsigned char *mask = reinterpret_cast<unsigned char *>(tree + P);

		gs_build_tree<K>(tree, depth, m, dsplit);
		for (int b = threadIdx.x; b < 2 * m + 1; b += blockDim.x)
			mask[b] = wmask[b];
		__syncthreads();
		const K		dlast = m > 0 ? (K) dsplit[m - 1] : K(0);

#define GS_FILTER_CALL(DD) do { \
		gs_filter_fn<K, DD> f; \
		f.tree = tree; f.mask = mask; f.depth = depth; f.m = m; f.dlast = dlast; \
		f.stage = stage; \
		gs_for_each<K>(src, n, f); \
		f.stage.flush(); } while (0)
		GS_DEPTH_DISPATCH(depth, GS_FILTER_CALL)
#undef GS_FILTER_CALL
	}
}

/* after the filter: the compacted buffer is the next level's input */
__global__ void
k_advance(gs_level_state *st, const gs_ull *below)
{
	if (st->done || !st->need_filter)
		return;
	st->src = st->dst;
	st->n = below[st->nb];
	st->need_filter = 0;
}

/* --------------------------------------------------------- approximate */

template <typename K>
__global__ void
k_approx_sample(const K *in, gs_ull n, gs_ull s, gs_ull seed, K *sample)
{
	gs_ull		i = (gs_ull) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < s)
		sample[i] = in[gs_splitmix64(seed + i) % n];
}

/* approx_buckets-1 splitters at sample positions i*s/B (i = 1..B-1), deduplicated */
template <typename K>
__global__ void __launch_bounds__(GS_PLAN_THREADS)
k_approx_split(gs_level_state *st, const K *sorted, gs_ull s, int B, gs_ull *dsplit, gs_ull *hist)
{
	typedef cub::BlockScan<int, GS_PLAN_THREADS> Scan;
	__shared__ typename Scan::TempStorage ts;
	const int	tid = threadIdx.x;
	int			flags[GS_PLAN_ITEMS];
	K			keys[GS_PLAN_ITEMS];
	const int	mraw = B - 1;

#pragma unroll
	for (int i = 0; i < GS_PLAN_ITEMS; i++)
	{
		int			j = tid * GS_PLAN_ITEMS + i + 1;	/* splitter index 1..B-1 */

		flags[i] = 0;
		keys[i] = 0;
		if (j <= mraw)
		{
			keys[i] = sorted[(gs_ull) j * s / (gs_ull) B];
			flags[i] = (j == 1 || sorted[(gs_ull) (j - 1) * s / (gs_ull) B] != keys[i]) ? 1 : 0;
		}
	}
	int			total;
	int			pos[GS_PLAN_ITEMS];

	Scan(ts).ExclusiveSum(flags, pos, total);
#pragma unroll
	for (int i = 0; i < GS_PLAN_ITEMS; i++)
		if (flags[i])
			dsplit[pos[i]] = keys[i];
	for (int b = tid; b < 2 * total + 1; b += GS_PLAN_THREADS)
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
__global__ void __launch_bounds__(GS_PLAN_THREADS)
k_approx_pick(gs_level_state *st, const gs_ull *hist, const gs_ull *dsplit, const gs_minmax *blk_mm,
			  int nblk, const gs_ull *ranks, int nranks, gs_ull *cand_key, gs_ull *cand_lo,
			  gs_ull *cand_hi, gs_approx_pick *out)
{
	typedef cub::BlockScan<gs_ull, GS_PLAN_THREADS> Scan;
	__shared__ typename Scan::TempStorage ts;
	__shared__ gs_ull s_mm[4];
	__shared__ int s_nc;
	const int	tid = threadIdx.x;
	const int	m = st->m;
	const int	nb = 2 * m + 1;
	const gs_ull n = st->n;

	if (tid == 0)
	{
		K			mn = gs_key_max<K>::v,
					mx = 0;
		gs_ull		cmn = 0,
					cmx = 0;

		for (int i = 0; i < nblk; i++)
			if (blk_mm[i].cmn)
				gs_mm_merge<K>(mn, cmn, mx, cmx, (K) blk_mm[i].mn, blk_mm[i].cmn,
							   (K) blk_mm[i].mx, blk_mm[i].cmx);
		s_mm[0] = mn;
		s_mm[1] = cmn;
		s_mm[2] = mx;
		s_mm[3] = cmx;
	}
	/* prefix sums over 2*8191+1 buckets: 16 per thread, two passes of 8 */
	gs_ull		carry = 0;

	for (int half = 0; half < 2; half++)
	{
		gs_ull		v[GS_PLAN_ITEMS],
					agg;
		const int	b0 = half * GS_PLAN_THREADS * GS_PLAN_ITEMS;

#pragma unroll
		for (int i = 0; i < GS_PLAN_ITEMS; i++)
		{
			int			b = b0 + tid * GS_PLAN_ITEMS + i;

			v[i] = b < nb ? hist[b] : 0;
		}
		__syncthreads();
		Scan(ts).ExclusiveSum(v, v, agg);
#pragma unroll
		for (int i = 0; i < GS_PLAN_ITEMS; i++)
		{
			int			b = b0 + tid * GS_PLAN_ITEMS + i;

			/* equality bucket 2j+1 of splitter j: lo = start, hi = start+count-1 */
			if (b < nb && (b & 1))
			{
				int			j = b >> 1;

				cand_key[j + 1] = dsplit[j];
				cand_lo[j + 1] = carry + v[i];
				cand_hi[j + 1] = carry + v[i] + hist[b] - 1;
			}
		}
		carry += agg;
	}
	__syncthreads();
	if (tid == 0)
	{
		/* min and max, unless they are splitters already */
		int			nc = m + 2;

		cand_key[0] = s_mm[0];
		cand_lo[0] = 0;
		cand_hi[0] = s_mm[1] - 1;
		cand_key[m + 1] = s_mm[2];
		cand_lo[m + 1] = n - s_mm[3];
		cand_hi[m + 1] = n - 1;
		s_nc = nc;
	}
	__syncthreads();
	const int	nc = s_nc;

	for (int k = tid; k < nranks; k += GS_PLAN_THREADS)
	{
		const gs_ull r = ranks[k];
		/* first candidate with hi >= r (ranges are increasing and disjoint,
		 * except that min/max may repeat the first/last splitter) */
		int			lo = 0,
					hi = nc - 1;

		while (lo < hi)
		{
			int			mid = (lo + hi) >> 1;

			if (cand_hi[mid] >= r)
				hi = mid;
			else
				lo = mid + 1;
		}
		int			c = lo;

		if (cand_lo[c] > r && c > 0)
		{
			gs_ull		eu = cand_lo[c] - r;
			gs_ull		ed = r - cand_hi[c - 1];

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
