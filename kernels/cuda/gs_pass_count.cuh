/*
 * gs_pass_count.cuh — the count passes (internal to kernels/cuda/): a
 * level's bucket histogram.  Single-rank levels (k_count_focus): four
 * comparisons per key and the predicted bucket's keys written on the way
 * (the speculative filter).  Spread levels and the approximate mode
 * (k_count): the bucket from the cell index (gs_cells.cuh), each key's
 * bucket stored as its oracle for the filter; in approximate mode also the
 * input's min and max with their counts.
 */
#ifndef GS_PASS_COUNT_CUH
#define GS_PASS_COUNT_CUH

#include <cub/block/block_reduce.cuh>
#include "gs_stream.cuh"
#include "gs_cells.cuh"

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
	unsigned   *shist;			/* the window of buckets hb0 .. hb0 + hn - 1 (!ONE) */
	int			hb0;
	unsigned	hn;
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
				/* (the whole histogram but on cards with less shared
				 * memory: k_count's windows) */
				const unsigned w = (unsigned) (b[i] - hb0);

				if (w < hn)
					atomicAdd(&shist[w], 1u);
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
 * dynamic shared memory: gs_count_smem_for(P, sizeof(K), cells_cap, PACKED,
 * hwords, GSPL) for the P the launch was sized for.  The block histogram holds
 * buckets b0 .. b0 + hwords - 1: all 2P words (b0 = 0) but where a card's
 * shared memory is too small for them, where the host runs one pass per
 * window (approximate mode, two-splitter lookup only: gs_count_kernel).
 * THREADS: 256, 512
 * or 1024, so that the blocks that memory allows fill an SM (gs_count_kernel
 * in gs_cuda_count.cu picks the variant).  ONE: the one-splitter lookup hist_fast
 * (gs_cells.cuh says when it pays), held to 64 registers (1024 threads per
 * SM): left alone, ptxas gave its batch ~100, i.e. half the warps (a minimum
 * of 0 blocks means none, as without the argument).  PACKED: its packed
 * table (approximate count only).  GSPL: the splitters are read where they
 * are, dsplit in global memory (its padding dsplit[m] = max written by
 * k_approx_split), not copied into the block: the approximate count of
 * 8-byte keys at P = 8192, whose 64 KB of splitters alone fill a T4's block
 * (gs_count_kernel chooses it only where nothing else fits).
 */
template <typename K, bool MM, int THREADS = gs_count_policy::threads, bool ONE = false, bool PACKED = false,
		  bool GSPL = false>
__global__ void __launch_bounds__(THREADS, ONE ? 1024 / THREADS : 0)
k_count(gs_level_state *st, const K *in, K *bufA, K *bufB, gs_ull *hist, const gs_ull *dsplit,
		gs_minmax *blk_mm, uint16_t *ora, int cells_cap, int b0, int hwords)
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
	static_assert(!GSPL || (sizeof(K) == sizeof(gs_ull) && MM && !ONE),
				  "splitters in global memory: 8-byte keys (dsplit holds them as they are), approximate count");
	K		   *sspl = reinterpret_cast<K *>(gs_dyn_smem);
	unsigned   *shist = reinterpret_cast<unsigned *>(gs_dyn_smem + (GSPL ? 0 : gs_align16((size_t) P * sizeof(K))));
	entry_t    *tab = reinterpret_cast<entry_t *>(reinterpret_cast<unsigned char *>(shist) +
												 gs_align16((size_t) hwords * 4));
	const K    *spl = sspl;

	for (int b = threadIdx.x; b < hwords; b += blockDim.x)
		shist[b] = 0;
	if constexpr (GSPL)
		spl = reinterpret_cast<const K *>(dsplit);
	else
		gs_cells_load<K, THREADS>(sspl, dsplit, m);
	/* this level may have fewer splitters than the launch was sized for;
	 * its table stays within the launch's (gs_cells_cap is not monotone) */
	gs_cells_build<K, ONE, PACKED, THREADS>(f.cs, spl, tab, m, min(gs_cells_cap(P, (int) sizeof(K)), cells_cap));
	f.cs.qoff = 4u * (unsigned) P;
	f.shist = shist;
	f.hb0 = b0;
	f.hn = (unsigned) hwords;
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
	{
		const unsigned w = f.cs.hist_word(f.cs.bucket(gs_key_max<K>::v)) - (unsigned) b0;

		if (w < (unsigned) hwords)
			atomicSub(&shist[w], f.ninvalid);
	}
	__syncthreads();
	for (int b = threadIdx.x; b < nb; b += blockDim.x)
	{
		/* (ONE: b0 = 0 and hwords = 2P, every bucket's word) */
		const unsigned w = f.cs.hist_word(b) - (unsigned) b0;
		const unsigned c = w < (unsigned) hwords ? shist[w] : 0u;

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

#endif							/* GS_PASS_COUNT_CUH */
