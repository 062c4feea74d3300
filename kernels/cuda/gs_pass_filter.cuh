/*
 * gs_pass_filter.cuh — the filter pass (internal to kernels/cuda/; included
 * by one translation unit only, since k_advance is not a template): writes
 * the kept buckets' keys compacted into the next level's buffer, spread
 * levels from the count's oracles, single-rank levels when the speculative
 * write of k_count_focus missed; k_advance then makes that buffer the
 * level's input.
 */
#ifndef GS_PASS_FILTER_CUH
#define GS_PASS_FILTER_CUH

#include <type_traits>
#include "gs_pass_count.cuh"	/* gs_keep_range, gs_push_offsets, gs_active_blocks */

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

/* dynamic shared memory: gs_filter_smem(P); ora_words: the count pass
 * used the one-splitter lookup, so the oracles are counter words
 * (gs_count_launch::one) */
template <typename K>
__global__ void __launch_bounds__(gs_count_policy::threads)
k_filter(gs_level_state *st, const K *in, K *bufA, K *bufB, const gs_ull *dsplit,
		 const unsigned char *wmask, const uint16_t *ora, int ora_words)
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
	/* the count's choice for the call (spread levels have P <= 4096,
	 * where it depends on the key width and the card's shared memory) */
	const bool	words = ora_words != 0;
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

#endif							/* GS_PASS_FILTER_CUH */
