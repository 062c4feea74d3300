/*
 * gs_cells.cuh — the bucket lookup of the many-splitter passes (spread
 * counting, filtering, approximate counting): a "cell index" over the sorted
 * splitters, rebuilt in shared memory by every block of a pass.
 *
 * Why not a search tree (the previous version): a 10-13 level Eytzinger
 * search is 10-13 dependent shared-memory reads and ~40 instructions per key,
 * and below level 5 the lanes' random nodes collide on banks; the count and
 * filter passes ran at ~3.5x the time of one read of the input
 * (test/bench/NOTES-gpu.md).  Here a key goes to one of C equal-width cells
 * with a subtraction and a shift; the cell's 16-bit entry says how many
 * splitters lie below the cell and how many inside it.  With C up to 16x the
 * splitter count nearly every cell holds at most one or two splitters,
 * which are compared without a branch; only fuller cells are searched.  So a
 * typical key costs two or three shared-memory reads and the histogram
 * atomic.  No library offers this lookup, hence hand-written.
 *
 * The gap.  Cells are equal-width over [d0, d_{m-1}].  When one gap between
 * neighbouring splitters is more than half of that range (floats of both
 * signs: the order-preserving keys of all the tiny magnitudes lie between the
 * negative and the positive data), keys above the gap are shifted down by its
 * width less one cell's first, so the empty middle costs one cell and the
 * splitters on its two sides stay in different cells.  Keys below d0 go to
 * the first cell, keys above d_{m-1} to the last, keys inside the gap to the
 * places between its two splitters (gs_cells::cell): the map is monotone,
 * which is all the lookup needs.
 *
 * Entries, three encodings:
 * - the one-splitter lookup (gs_cells_one: 4-byte keys): 4 J[c] | 0x8000
 *   [k >= 2].  4 J is at once the byte offset of splitter J and of the
 *   block histogram's counter of the open bucket 2J, so a key's counter
 *   address is the entry (masked) plus 0, 4 or the offset of the equality
 *   counters: no shifts between the table, the splitter and the atomic.  The
 *   histogram keeps the open buckets in words 0..m and the equality buckets
 *   2J+1 in words P+J, so that a warp's atomics spread over all 32 banks
 *   (interleaved, open buckets took only the even banks; NOTES-gpu.md
 *   section 10);
 * - packed (uint32; the approximate count of 4-byte keys up to P = 2048,
 *   whose tables fit shared memory at 4 bytes per cell): the same 4 J and
 *   counters, and on top the cell's first splitter as its offset from the
 *   cell's start (2^sh if none), so that a key is compared by its own offset
 *   in the cell and the splitter is not read at all.  A cell may hold a run
 *   of up to 4 adjacent splitters d, d + 1, .. (clusters of neighbouring
 *   values, few-valued integers); more splitters than that are searched.
 *   Layout: offset << (31 - sh) | [search] << (30 - sh) | 4 J | (run - 1),
 *   which fits with 16 cells per splitter slot (sh <= 28 - log2 P);
 * - the two-splitter lookup (8-byte keys): J[c] | min(k, 7) << 13, k = 7
 *   meaning "7 or more: read J[c+1]"; histogram word b for bucket b.
 * J[c] = number of splitters below the cell's lowest key (m <= 8191; 4095
 * with the one-splitter lookup), k = number of splitters inside the cell.
 * The table has ncells + 1 entries (the last has J = m).
 */
#ifndef GS_CELLS_CUH
#define GS_CELLS_CUH

#include <stdint.h>
#include <cuda_runtime.h>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/functional>
#include <type_traits>

#define GS_CELL_JBITS 13
#define GS_CELL_JMASK 0x1FFFu
#define GS_CELL_KCAP 7u
#define GS_CELLS_MAX 65536
#define GS_CELL_SLOW (2u << GS_CELL_JBITS)	/* entries >= this: two or more splitters */

/*
 * Cell capacity for a level of at most P - 1 splitters (P a power of two)
 * and kb-byte keys: 16 cells per splitter slot, at least 2048, so that cells
 * holding two or more splitters (the only ones searched) are rare.  At most
 * 16384 (a 32 KB table), except for 4-byte keys up to P = 4096 (tables of
 * 64 and 128 KB): there the count is bound by instructions, and the
 * one-splitter lookup that 16 cells per slot allow pays (f32 2^28 level-1
 * count: 101 ranks 665 -> 589 us, 1001 ranks 1022 -> 661 us), while 8-byte
 * keys are bound by DRAM and lost by it (101 ranks 941 -> 1043 us: the
 * larger table leaves fewer warps).  Not monotone in P: see k_count.
 */
static __host__ __device__ __forceinline__ int
gs_cells_cap(int P, int kb)
{
	const int	c = 16 * P;
	const int	max = kb == 4 && P <= 4096 ? GS_CELLS_MAX : 16384;

	return c < 2048 ? 2048 : (c > max ? max : c);
}

/* whether the one-splitter lookup (hist_fast) pays: 4-byte keys with 16
 * cells per splitter slot.  8-byte keys are bound by DRAM; for them it was
 * neutral on uniform data (approximate count 1090 -> 1080 us) and slower on
 * clustered data, whose keys mostly take its second lookup (approximate
 * f64 2^28, adversarial distribution: 2.35-2.40 ms with it, 1.95x the
 * uniform time against a goal of 2x; 2.13 ms, 1.70x, without) */
static __host__ __device__ __forceinline__ bool
gs_cells_one(int P, int kb)
{
	return kb == 4 && 16 * P <= gs_cells_cap(P, kb);
}

/* dynamic shared memory of the passes (host and device agree on the layout) */
static __host__ __device__ __forceinline__ size_t
gs_align16(size_t x)
{
	return (x + 15) & ~(size_t) 15;
}

/* whether the approximate count of a level of P splitter slots uses packed
 * entries (4 bytes per cell: up to 132 KB for P = 2048) */
static __host__ __device__ __forceinline__ bool
gs_cells_packed(int P, int kb)
{
	return kb == 4 && P <= 2048;
}

/* count: K spl[P] (m < P splitters and the padding; none where k_count
 * reads them in global memory: gspl) | unsigned hist[hwords] (2P, or a
 * window of the buckets: k_count) | tab[cap+1] (uint16, or uint32 packed) */
static __host__ __device__ __forceinline__ size_t
gs_count_smem_for(int P, int kb, int cap, bool packed, int hwords, bool gspl = false)
{
	return (gspl ? 0 : gs_align16((size_t) P * kb)) + gs_align16((size_t) hwords * 4) +
		gs_align16(((size_t) cap + 1) * (packed ? 4 : 2));
}

/* the default layout: the whole histogram, gs_cells_cap cells */
static __host__ __device__ __forceinline__ size_t
gs_count_smem(int P, int kb, bool packed)
{
	return gs_count_smem_for(P, kb, gs_cells_cap(P, kb), packed, 2 * P);
}

/* filter: the keep mask of up to 2P - 1 buckets, one copy per bank
 * (unsigned smask[32 * words]; gs_pass_filter.cuh, gs_filter_ora) */
static __host__ __device__ __forceinline__ size_t
gs_filter_smem(int P)
{
	return (size_t) ((2 * P + 31) / 32) * 32 * 4;
}

/* binary search over splitters j .. hi - 1 (those of a fuller cell); the
 * rare case of the lookups below, kept out of line of their fast paths */
template <typename K>
static __device__ int
gs_cells_search(const K *spl, K x, int j, int hi)
{
	bool		eq = false;

	while (j < hi)
	{
		const int	mid = (j + hi) >> 1;
		const K		t = spl[mid];
		const bool	le = t <= x;

		eq = le ? t == x : eq;
		j = le ? mid + 1 : j;
		hi = le ? hi : mid;
	}
	return 2 * j - (int) eq;
}

template <typename K, bool ONE, bool PACKED = false>
struct gs_cells
{
	typedef typename std::conditional<PACKED, uint32_t, uint16_t>::type entry_t;

	const K    *spl;			/* m sorted distinct splitters (shared; global in
								 * k_count's GSPL), spl[m] = max */
	entry_t    *tab;			/* ncells + 1 entries (shared) */
	K			lo,				/* d0 - 1 (d0 if 0) */
				lo_b,			/* keys above the gap are clamped to at least lo_b ... */
				gapw;			/* ... and shifted down by the gap */
	int			sh,
				cmax;			/* ncells - 1 */
	unsigned	qoff;			/* ONE: byte offset of the equality counters (4 P) */
	unsigned	flag,			/* PACKED: the "search this cell" bit */
				offsh;			/* PACKED: position of the splitter's offset in its cell */
	bool		runs;			/* PACKED: some cell holds a run of adjacent splitters */

	/* no entry is all ones: J | k << 13 <= 8190 | 7 << 13; 4 J | 0x8000 <=
	 * 0xBFFC; packed, 4 J ends in two zero bits */
	static constexpr entry_t EMPTY = (entry_t) ~entry_t(0);

	/* J of an entry; whether its cell is searched (two or more splitters;
	 * packed: more than a run of adjacent ones) */
	__device__ __forceinline__ int jof(unsigned e) const
	{
		return PACKED ? (int) ((e & (flag - 4)) >> 2) : ONE ? (int) ((e & 0x7FFFu) >> 2) : (int) (e & GS_CELL_JMASK);
	}
	/* (with ONE, also right for the OR of several entries) */
	__device__ __forceinline__ bool slow(unsigned e) const
	{
		return PACKED ? (e & flag) != 0 : ONE ? (e & 0x8000u) != 0 : e >= GS_CELL_SLOW;
	}

	/*
	 * Monotone map key -> position u in the folded range (u = 0: below d0)
	 * and cell u >> sh, no branches.  The fold, for a gap (split, d) between
	 * neighbouring splitters: lo_b = d - 1, gapw = d - split - 2 - w (w the
	 * width of a cell), so z = max(x, lo_b) - gapw is x - gapw from d on and
	 * split + 1 + w below, and min(x, z) keeps keys up to split + 1 + w,
	 * sends the rest of the gap there and d to split + 2 + w: distinct from
	 * both splitters' places, which the packed lookup's offsets need, and a
	 * cell apart (without a gap, lo_b = ~0 and gapw = 0 give z = ~0).
	 */
	__device__ __forceinline__ int cell(K x, K &u) const
	{
		const K		z = (K) ((x > lo_b ? x : lo_b) - gapw);
		const K		y = x < z ? x : z;
		const K		t = (K) (((u = (K) ((y > lo ? y : lo) - lo))) >> sh);

		return (int) (t < (K) cmax ? t : (K) cmax);
	}
	__device__ __forceinline__ int cell(K x) const
	{
		K			u;

		return cell(x, u);
	}

	/*
	 * Bucket of x: 2j (open) or 2j-1 (x == d[j-1]), where j = number of
	 * splitters <= x (the layout of gs_select.cuh).  Two fast paths, both
	 * without a branch; which pays depends on how many cells hold two
	 * splitters (measured, NOTES-gpu.md section 7):
	 *
	 * hist_fast (ONE: 4-byte keys, 16 cells per splitter slot): the byte
	 * offset of x's bucket counter (hist_word), exact for cells with at most one
	 * splitter; reads d[J] only, no guards.  Why that suffices: J counts the
	 * splitters below the cell, so d[J] is the first splitter at or above
	 * it; with k = 0 it lies in a later cell, hence above every key of this
	 * cell (the map is monotone), and with k = 1 it is the cell's one
	 * splitter and the next lies in a later cell.  J < m always (the last
	 * cell holds the last splitter).  Fuller cells show in slow(e); the
	 * caller takes bucket() for those keys.
	 *
	 * bucket_two (8-byte keys; 4-byte keys at P = 8192): exact for cells
	 * with at most two splitters;
	 * reads d[J] and d[J+1] and compares under guards on k; k > 2 is
	 * searched.
	 */
	__device__ __forceinline__ int bucket_two(K x) const
	{
		const int	c = cell(x);
		const unsigned e = tab[c];
		const int	j = jof(e);
		const unsigned k = e >> GS_CELL_JBITS;
		const K		s0 = spl[j],
					s1 = spl[j + 1];	/* j + 1 <= m: spl[m] is padding */
		const bool	k1 = k >= 1,
					k2 = k >= 2;
		int			b = 2 * j + (int) (k1 && x >= s0) + (int) (k1 && x > s0) +
			(int) (k2 && x >= s1) + (int) (k2 && x > s1);

		if (k > 2)
			b = gs_cells_search<K>(spl, x, j, k == GS_CELL_KCAP ? jof(tab[c + 1]) : j + (int) k);
		return b;
	}

	template <bool RUNS = false>
	__device__ __forceinline__ unsigned hist_fast(K x, unsigned &e) const
	{
		if constexpr (PACKED)
		{
			/* the cell's first splitter as an offset in the cell: compare
			 * x's offset, no splitter read (section 10 of NOTES-gpu.md) */
			K			u;
			const unsigned c = (unsigned) cell(x, u);

			e = tab[c];

			const unsigned ox = (unsigned) u - (c << sh),
						off = e >> offsh,
						a = e & (flag - 4);	/* 4 J */

			if constexpr (RUNS)
			{
				/* a run of r adjacent splitters d, d + 1, .. at off: equal
				 * to splitter J + (ox - off), or above them all */
				const unsigned d = ox - off;

				return ox < off ? a : (d <= (e & 3u) ? a + qoff + 4u * d : a + 4u * (e & 3u) + 4u);
			}
			else
			{
				const unsigned up = ox > off ? 4u : qoff;

				return ox >= off ? a + up : a;
			}
		}
		else
		{
			e = tab[cell(x)];

			const unsigned a = e & 0x7FFFu;	/* 4 J */
			const K		s = *reinterpret_cast<const K *>(reinterpret_cast<const unsigned char *>(spl) + a);
			const unsigned up = x > s ? 4u : qoff;

			return x >= s ? a + up : a;
		}
	}

	/* the block histogram's word of bucket b: with ONE the open buckets 2J
	 * are words J and the equality buckets 2J+1 words P + J, so that the
	 * atomics of a warp spread over all 32 banks (interleaved, the open
	 * buckets took only the even ones); else word b */
	__device__ __forceinline__ unsigned hist_word(int b) const
	{
		return ONE ? ((b & 1) ? (qoff >> 2) + (unsigned) (b >> 1) : (unsigned) (b >> 1)) : (unsigned) b;
	}

	/* bucket of x, any cell */
	__device__ __forceinline__ int bucket(K x) const
	{
		const int	c = cell(x);
		const unsigned e = tab[c];
		const int	j = jof(e);

		if (slow(e) || (PACKED && (e & 3u)))	/* (packed: also runs) */
		{
			const unsigned k = e >> GS_CELL_JBITS;

			return gs_cells_search<K>(spl, x, j, ONE || k == GS_CELL_KCAP ? jof(tab[c + 1]) : j + (int) k);
		}
		const K		s0 = spl[j];

		return 2 * j + (int) (x >= s0) + (int) (x > s0);
	}
};

/* smallest shift s with (span >> s) < cap */
template <typename K>
static __device__ __forceinline__ int
gs_cells_shift(K span, int cap)
{
	int			s = 0;

	while ((span >> s) >= (K) cap)
		s++;
	return s;
}

/* a gap between neighbouring splitters: its width and its lower splitter */
struct gs_gap
{
	unsigned long long w;
	int			at;
};

/* the wider gap; of two equal ones the lower (deterministic across blocks) */
struct gs_gap_max
{
	__device__ __forceinline__ gs_gap operator() (const gs_gap &a, const gs_gap &b) const
	{
		return (b.w > a.w || (b.w == a.w && b.at < a.at)) ? b : a;
	}
};

/* the m splitters (dsplit, sorted, distinct) into spl, and the padding
 * spl[m] = max (bucket_two reads spl[J + 1]); ends with __syncthreads */
template <typename K, int THREADS>
static __device__ __forceinline__ void
gs_cells_load(K *spl, const unsigned long long *dsplit, int m)
{
	const int	tid = threadIdx.x;

	for (int i = tid; i < m; i += THREADS)
		spl[i] = (K) dsplit[i];
	if (tid == 0)
		spl[m] = (K) ~K(0);		/* padding: bucket_two reads spl[J + 1] */
	__syncthreads();
}

/* the widest gap between neighbouring splitters (thread, then block) into
 * s_widest; ends with __syncthreads */
template <typename K, int THREADS>
static __device__ __forceinline__ void
gs_cells_widest(const K *spl, int m, typename cub::BlockReduce<gs_gap, THREADS>::TempStorage &s_red,
				gs_gap &s_widest)
{
	typedef cub::BlockReduce<gs_gap, THREADS> GapReduce;
	const int	tid = threadIdx.x;
	gs_gap		mine = {0, 0};

	for (int i = tid; i + 1 < m; i += THREADS)
	{
		const gs_gap here = {(unsigned long long) (K) (spl[i + 1] - spl[i]), i};

		mine = gs_gap_max()(mine, here);
	}
	const gs_gap widest = GapReduce(s_red).Reduce(mine, gs_gap_max());

	if (tid == 0)
		s_widest = widest;
	__syncthreads();
}

/*
 * Fill step 1: every entry of the nent is marked empty; the first splitter
 * of each occupied cell writes that cell's entry (packed: with its run of
 * adjacent splitters, s_runs = 1 where one has two or more).  fits: whether
 * packed entries hold the offsets (gs_cells_build).
 */
template <typename K, bool ONE, bool PACKED, int THREADS>
static __device__ __forceinline__ void
gs_cells_mark(const gs_cells<K, ONE, PACKED> &cs, const K *spl, typename gs_cells<K, ONE, PACKED>::entry_t *tab,
			  int m, int nent, bool fits, int &s_runs)
{
	typedef typename gs_cells<K, ONE, PACKED>::entry_t entry_t;
	const int	tid = threadIdx.x;

	for (int c = tid; c < nent; c += THREADS)
		tab[c] = gs_cells<K, ONE, PACKED>::EMPTY;
	__syncthreads();
	for (int i = tid; i < m; i += THREADS)
	{
		K			u;
		const int	ci = cs.cell(spl[i], u);

		if (i > 0 && cs.cell(spl[i - 1]) == ci)
			continue;
		unsigned	k = 1;

		while (k < GS_CELL_KCAP && i + (int) k < m && cs.cell(spl[i + (int) k]) == ci)
			k++;
		if (PACKED)
		{
			/* r: the run of adjacent splitters from the cell's first (up
			 * to 4: r - 1 in bits 0-1); more splitters than that: search */
			unsigned	r = 1;

			while (r < 4 && r < k && spl[i + (int) r] == (K) (spl[i] + r))
				r++;
			if (r > 1 && fits)
				s_runs = 1;
			tab[ci] = (entry_t) ((unsigned) i << 2 |
								 (k > r || !fits ? cs.flag
								  : ((unsigned) u - ((unsigned) ci << cs.sh)) << cs.offsh | (r - 1)));
		}
		else
			tab[ci] = (entry_t) (ONE ? (unsigned) i << 2 | (k >= 2 ? 0x8000u : 0u) : (unsigned) i | (k << GS_CELL_JBITS));
	}
}

/*
 * Fill step 2: an empty cell's J is the J of the next occupied cell above
 * it (m above the last one; the entry after the last cell is always empty).
 * Thread t takes the run of `per` cells numbered THREADS-1-t from the
 * bottom, so that a scan in thread order runs from the top down: the lowest
 * J in each run, a block exclusive min-scan, then each thread fills its run
 * from its top (per = nent / THREADS rounded up).  Ends with __syncthreads.
 */
template <typename K, bool ONE, bool PACKED, int THREADS>
static __device__ __forceinline__ void
gs_cells_fill_empty(const gs_cells<K, ONE, PACKED> &cs, typename gs_cells<K, ONE, PACKED>::entry_t *tab, int m,
					int nent, int per, typename cub::BlockScan<int, THREADS>::TempStorage &s_scan)
{
	typedef typename gs_cells<K, ONE, PACKED>::entry_t entry_t;
	typedef cub::BlockScan<int, THREADS> RunScan;
	const int	tid = threadIdx.x;
	const int	c0 = (THREADS - 1 - tid) * per;
	const int	c1 = c0 + per < nent ? c0 + per : nent;
	int			lowest = m,
				above;

	for (int c = c1 - 1; c >= c0; c--)
	{
		const unsigned e = tab[c];

		if (e != gs_cells<K, ONE, PACKED>::EMPTY)
			lowest = cs.jof(e);
	}
	RunScan(s_scan).ExclusiveScan(lowest, above, m, cuda::minimum<int>());
	for (int c = c1 - 1; c >= c0; c--)
	{
		const unsigned e = tab[c];

		if (e == gs_cells<K, ONE, PACKED>::EMPTY)	/* packed: offset 2^sh, above every key of the cell */
			tab[c] = (entry_t) (PACKED ? (unsigned) above << 2 | 1u << 31 : ONE ? above << 2 : above);
		else
			above = cs.jof(e);
	}
	__syncthreads();
}

/*
 * Block-cooperative (THREADS threads): over the m splitters spl (sorted,
 * distinct, 1 <= m < P, and the padding spl[m] = max: gs_cells_load, or
 * global memory written so), choose the fold and fill the table.  Ends with
 * __syncthreads.  Every block of a pass builds the same table (a few
 * microseconds), which costs less than a separate kernel plus a copy from
 * global memory.
 */
template <typename K, bool ONE, bool PACKED, int THREADS>
static __device__ void
gs_cells_build(gs_cells<K, ONE, PACKED> &cs, const K *spl, typename gs_cells<K, ONE, PACKED>::entry_t *tab,
			   int m, int cap)
{
	__shared__ typename cub::BlockReduce<gs_gap, THREADS>::TempStorage s_red;
	__shared__ gs_gap s_widest;
	__shared__ int s_runs;
	__shared__ typename cub::BlockScan<int, THREADS>::TempStorage s_scan;

	cs.spl = spl;

	gs_cells_widest<K, THREADS>(spl, m, s_red, s_widest);

	const unsigned long long g = s_widest.w;
	const int	gi = s_widest.at;

	/* fold out the largest gap if it is over half the range (every thread
	 * computes the same values; kept here: as a helper it compiled to
	 * another compare for 8-byte keys, sm_90) */
	cs.tab = tab;
	cs.lo = (K) (spl[0] - (spl[0] > 0));	/* keys below d0 get u = 0, d0 u = 1 */

	const K		span = (K) (spl[m - 1] - cs.lo);

	cs.lo_b = (K) ~K(0);
	cs.gapw = 0;
	if (m >= 2 && (K) g > span / 2 && g >= 2)
	{
		/*
		 * Fold all of the gap but one cell's width w = 2^sh, so that the
		 * splitters on its two sides stay in different cells (folded to
		 * neighbouring keys they shared a cell: for clustered data of both
		 * signs that cell held most keys and every one was searched,
		 * NOTES-gpu.md section 10).  sh is the shift of the folded range.
		 */
		const K		gw = (K) ((K) g - 2);
		int			sh = gs_cells_shift<K>((K) (span - gw), cap);

		while ((K) ((K) (span - gw) + ((K) 1 << sh)) >> sh >= (K) cap)
			sh++;
		if (gw > ((K) 1 << sh))
		{
			cs.lo_b = (K) (spl[gi + 1] - 1);
			cs.gapw = (K) (gw - ((K) 1 << sh));
		}
	}
	const K		folded = (K) (span - cs.gapw);

	cs.sh = gs_cells_shift<K>(folded, cap);
	cs.cmax = (int) (folded >> cs.sh);

	/* packed entries: the offset's sh + 1 bits on top, the flag below them,
	 * 4 J below that.  With at least 16 cells per splitter slot (how the
	 * launch sizes a packed table) they always fit; if they did not, every
	 * cell is flagged and searched (right, slow) */
	bool		fits = true;

	if constexpr (PACKED)
	{
		fits = cs.sh <= 28 && 4u * (unsigned) m < (1u << (30 - cs.sh));
		cs.offsh = 31u - (unsigned) cs.sh;
		cs.flag = fits ? 1u << (30 - cs.sh) : 1u << 31;
	}
	if (threadIdx.x == 0)
		s_runs = 0;

	/*
	 * Fill, in block-wide steps (gs_cells_mark, gs_cells_fill_empty).  (It
	 * was: the first splitter of each occupied cell also filled the empty
	 * cells since the previous occupied one, one thread per stretch; when
	 * splitters crowd into a few cells, as after a spread level, a few
	 * threads filled thousands of cells while the block waited: ncu showed
	 * that loop as most of level 2's time, NOTES-gpu.md §5 J.)
	 */
	const int	nent = cs.cmax + 2;
	const int	per = (nent + THREADS - 1) / THREADS;

	gs_cells_mark<K, ONE, PACKED, THREADS>(cs, spl, tab, m, nent, fits, s_runs);
	__syncthreads();
	if constexpr (PACKED)
		cs.runs = s_runs != 0;
	gs_cells_fill_empty<K, ONE, PACKED, THREADS>(cs, tab, m, nent, per, s_scan);
}

#endif							/* GS_CELLS_CUH */
