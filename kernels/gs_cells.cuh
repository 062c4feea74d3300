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
 * width first, so the empty middle costs no cells.  Keys below d0 go to the
 * first cell, keys above d_{m-1} to the last, keys inside the gap to the cell
 * of its upper end: the map is monotone, which is all the lookup needs.
 *
 * Entry of cell c (uint16): J[c] | min(k, 7) << 13, where J[c] = number of
 * splitters below the cell's lowest key (m <= 8191 < 2^13) and k = number of
 * splitters inside the cell; k = 7 means "7 or more: read J[c+1]".  The
 * table has ncells + 1 entries (the last is J = m).
 */
#ifndef GS_CELLS_CUH
#define GS_CELLS_CUH

#include <stdint.h>
#include <cuda_runtime.h>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/functional>

#define GS_CELL_JBITS 13
#define GS_CELL_JMASK 0x1FFFu
#define GS_CELL_KCAP 7u
#define GS_CELLS_MAX 65536
#define GS_CELL_SLOW (2u << GS_CELL_JBITS)	/* entries >= this: two or more splitters */
#define GS_CELL_EMPTY 0xFFFFu	/* while building: J | k << 13 is at most 8190 | 7 << 13 */

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

/* whether the one-splitter lookup (bucket_fast) pays: 4-byte keys with 16
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

/* count: K spl[P] (m < P splitters and the padding) | unsigned hist[2P] | uint16 tab[cap+1] */
static __host__ __device__ __forceinline__ size_t
gs_count_smem(int P, int kb)
{
	return gs_align16((size_t) P * kb) + gs_align16((size_t) 2 * P * 4) +
		gs_align16(((size_t) gs_cells_cap(P, kb) + 1) * 2);
}

/* filter: the keep mask of up to 2P - 1 buckets, one copy per bank
 * (unsigned smask[32 * words]; gs_kernels.cuh, gs_filter_ora) */
static __host__ __device__ __forceinline__ size_t
gs_filter_smem(int P)
{
	return (size_t) ((2 * P + 31) / 32) * 32 * 4;
}

/* binary search over the k >= 2 splitters of cell c (k = 7: read J[c+1]);
 * the rare case of the lookups below, kept out of line of their fast paths */
template <typename K>
static __device__ int
gs_cells_search(const K *spl, const uint16_t *tab, int c, K x, int j, unsigned k)
{
	int			hi = k == GS_CELL_KCAP ? (int) (tab[c + 1] & GS_CELL_JMASK) : j + (int) k;
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

template <typename K>
struct gs_cells
{
	const K    *spl;			/* m sorted distinct splitters (shared), spl[m] = max */
	uint16_t   *tab;			/* ncells + 1 entries (shared) */
	K			lo,				/* d0 */
				split,			/* keys above split are folded down ... */
				lo_b,			/* ... clamped to at least lo_b ... */
				gapw;			/* ... and shifted down by the gap (lo_b - split - 1) */
	int			sh,
				ncells;

	/* monotone map key -> cell (no branches: selects, min/max) */
	__device__ __forceinline__ int cell(K x) const
	{
		const K		y = x > split ? (K) ((x > lo_b ? x : lo_b) - gapw) : x;
		const K		t = (K) (((y > lo ? y : lo) - lo) >> sh);

		return t < (K) ncells ? (int) t : ncells - 1;
	}

	/*
	 * Bucket of x: 2j (open) or 2j-1 (x == d[j-1]), where j = number of
	 * splitters <= x (the layout of gs_select.cuh).  Two fast paths, both
	 * without a branch; which pays depends on how many cells hold two
	 * splitters (measured, NOTES-gpu.md section 7):
	 *
	 * bucket_fast, where the table has 16 cells per splitter slot
	 * (gs_cells_one): exact for cells with at most one splitter; reads d[J]
	 * only, no guards.  Why that suffices: J counts the splitters below the
	 * cell, so d[J] is the first splitter at or above it; with k = 0 it
	 * lies in a later cell, hence above every key of this cell (the map is
	 * monotone), and with k = 1 it is the cell's one splitter and the next
	 * lies in a later cell.  J < m always (the last cell holds the last
	 * splitter).  Fuller cells show in e (e >= GS_CELL_SLOW); the caller
	 * takes bucket() for those keys.  About half the instructions of
	 * bucket_two.
	 *
	 * bucket_two, with fewer cells per slot: exact for cells with at most
	 * two splitters; reads d[J] and d[J+1] and compares under guards on k;
	 * k > 2 is searched.  There the key space of floats is not uniform
	 * (half of the keys of uniform data share one exponent), many keys'
	 * cells hold two splitters, and bucket_fast's second lookups would
	 * diverge in most warps.
	 */
	__device__ __forceinline__ int bucket_two(K x) const
	{
		const int	c = cell(x);
		const unsigned e = tab[c];
		const int	j = (int) (e & GS_CELL_JMASK);
		const unsigned k = e >> GS_CELL_JBITS;
		const K		s0 = spl[j],
					s1 = spl[j + 1];	/* j + 1 <= m: spl[m] is padding */
		const bool	k1 = k >= 1,
					k2 = k >= 2;
		int			b = 2 * j + (int) (k1 && x >= s0) + (int) (k1 && x > s0) +
			(int) (k2 && x >= s1) + (int) (k2 && x > s1);

		if (k > 2)
			b = gs_cells_search<K>(spl, tab, c, x, j, k);
		return b;
	}

	/* the bucket of x in a cell of entry e that holds at most one splitter */
	__device__ __forceinline__ int bucket_one(unsigned e, K x) const
	{
		const int	j = (int) (e & GS_CELL_JMASK);
		const K		s0 = spl[j];

		return 2 * j + (int) (x >= s0) + (int) (x > s0);
	}

	__device__ __forceinline__ int bucket_fast(K x, unsigned &e) const
	{
		e = tab[cell(x)];
		return bucket_one(e, x);
	}

	/* bucket of x, any cell */
	__device__ __forceinline__ int bucket(K x) const
	{
		const int	c = cell(x);
		const unsigned e = tab[c];
		const unsigned k = e >> GS_CELL_JBITS;

		if (k >= 2)
			return gs_cells_search<K>(spl, tab, c, x, (int) (e & GS_CELL_JMASK), k);
		return bucket_one(e, x);
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

/*
 * Block-cooperative (THREADS threads): load the m splitters (dsplit, sorted,
 * distinct, 1 <= m < P) into spl (room for m + 1), choose the fold and fill the
 * table.  Ends with __syncthreads.  Every block of a pass builds the same
 * table (a few microseconds), which costs less than a separate kernel plus a
 * copy from global memory.
 */
template <typename K, int THREADS>
static __device__ void
gs_cells_build(gs_cells<K> &cs, K *spl, uint16_t *tab, const unsigned long long *dsplit, int m, int cap)
{
	typedef cub::BlockReduce<gs_gap, THREADS> GapReduce;
	__shared__ typename GapReduce::TempStorage s_red;
	__shared__ gs_gap s_widest;
	const int	tid = threadIdx.x;

	for (int i = tid; i < m; i += THREADS)
		spl[i] = (K) dsplit[i];
	if (tid == 0)
		spl[m] = (K) ~K(0);		/* padding: bucket_two reads spl[J + 1] */
	__syncthreads();

	/* the widest gap between neighbours (thread, then block) */
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
	const unsigned long long g = s_widest.w;
	const int	gi = s_widest.at;

	/* fold out the largest gap if it is over half the range (every thread
	 * computes the same values) */
	const K		span = (K) (spl[m - 1] - spl[0]);

	cs.spl = spl;
	cs.tab = tab;
	cs.lo = spl[0];
	if (m >= 2 && (K) g > span / 2)
	{
		cs.split = spl[gi];
		cs.lo_b = spl[gi + 1];
		cs.gapw = (K) (cs.lo_b - cs.split - 1);
	}
	else
	{
		cs.split = (K) ~K(0);
		cs.lo_b = cs.split;
		cs.gapw = 0;
	}
	const K		folded = (K) (span - cs.gapw);

	cs.sh = gs_cells_shift<K>(folded, cap);
	cs.ncells = (int) (folded >> cs.sh) + 1;

	/*
	 * Fill, in block-wide steps.  (It was: the first splitter of each occupied
	 * cell also filled the empty cells since the previous occupied one, one
	 * thread per stretch; when splitters crowd into a few cells, as after a
	 * spread level, a few threads filled thousands of cells while the block
	 * waited: ncu showed that loop as most of level 2's time, NOTES-gpu.md
	 * §5 J.)
	 * 1. Every entry is marked empty; the first splitter of each occupied cell
	 *    writes that cell's entry.
	 * 2. An empty cell's J is the J of the next occupied cell above it (m
	 *    above the last one; the entry after the last cell is always empty).
	 *    Thread t takes the run of `per` cells numbered THREADS-1-t from the
	 *    bottom, so that a scan in thread order runs from the top down: the
	 *    lowest J in each run, a block exclusive min-scan, then each thread
	 *    fills its run from its top.
	 */
	typedef cub::BlockScan<int, THREADS> RunScan;
	__shared__ typename RunScan::TempStorage s_scan;
	const int	nent = cs.ncells + 1;
	const int	per = (nent + THREADS - 1) / THREADS;

	for (int c = tid; c < nent; c += THREADS)
		tab[c] = GS_CELL_EMPTY;
	__syncthreads();
	for (int i = tid; i < m; i += THREADS)
	{
		const int	ci = cs.cell(spl[i]);

		if (i > 0 && cs.cell(spl[i - 1]) == ci)
			continue;
		unsigned	k = 1;

		while (k < GS_CELL_KCAP && i + (int) k < m && cs.cell(spl[i + k]) == ci)
			k++;
		tab[ci] = (uint16_t) ((unsigned) i | (k << GS_CELL_JBITS));
	}
	__syncthreads();

	const int	c0 = (THREADS - 1 - tid) * per;
	const int	c1 = c0 + per < nent ? c0 + per : nent;
	int			lowest = m,
				above;

	for (int c = c1 - 1; c >= c0; c--)
	{
		const unsigned e = tab[c];

		if (e != GS_CELL_EMPTY)
			lowest = (int) (e & GS_CELL_JMASK);
	}
	RunScan(s_scan).ExclusiveScan(lowest, above, m, cuda::minimum<int>());
	for (int c = c1 - 1; c >= c0; c--)
	{
		const unsigned e = tab[c];

		if (e == GS_CELL_EMPTY)
			tab[c] = (uint16_t) above;
		else
			above = (int) (e & GS_CELL_JMASK);
	}
	__syncthreads();
}

#endif							/* GS_CELLS_CUH */
