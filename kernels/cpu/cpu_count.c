/*
 * cpu_count.c — counting against distinct splitters: one pass over the input
 * counts, for every distinct splitter v, the keys < v and == v, and finds the
 * input's min and max with their counts.  The approximate mode
 * (cpu_approx.c) counts against its sample's splitters; the exact mode
 * (cpu_exact.c) against a sample's few distinct values, which answers every
 * rank inside one value's run.
 *
 * The counting pass finds a key's splitter through a table linear over the
 * splitters' key range, with the largest gap folded out when it is most of
 * that range (float keys of both signs, far clusters: AP_FOLD); the lookup
 * only changes speed, never the counts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define GS_APPROX_TBL_BITS 12	/* approx: splitter lookup table of 4096 entries, */
#define GS_APPROX_TBL_MAX_BITS 16	/* ... up to 65536 */

static inline size_t
lower_bound_u64(const uint64_t *s, size_t n, uint64_t k)
{
	const uint64_t *b = s;

	if (n == 0)
		return 0;
	while (n > 1)
	{
		size_t		half = n / 2;

		b = (b[half] < k) ? b + half : b;
		n -= half;
	}
	return (size_t) (b - s) + (*b < k);
}

/*
 * The gap fold.  Float keys of both signs (values straddling zero) or two
 * far-apart clusters leave one gap between neighbouring splitters that is
 * most of the table's key range; a table linear over that range would spend
 * nearly all its entries on the empty gap and crowd the splitters into a
 * few entries, each key then searching many of them (10M float8 keys in
 * [-1e6, 1e6]: ~8x the time of [0, 1)).  So offsets d = k - tlo above the
 * gap's lower end `at` are clamped to at least its upper end `to` and
 * shifted down by w = to - at - 1: the gap's inside and its upper end fall
 * on at + 1, everything above keeps its spacing.  The map is monotone,
 * which is all the table needs (count_splitters), so the counts, and with
 * them the answers, are those of any other lookup.  Branch-free: which side
 * of the gap a key lies on is a coin toss for mixed signs.
 */
#define AP_FOLD(d_, at_, to_, w_) \
	((d_) > (at_) ? ((d_) > (to_) ? (d_) : (to_)) - (w_) : (d_))

static inline uint64_t
ap_fold(const ap_arg *a, uint64_t d)
{
	return AP_FOLD(d, a->fat, a->fto, a->fw);
}

/*
 * Per key.  The lookup table covers [tlo, tlo + wr] (the splitters
 * spl[ta..tb]; outlying splitters may be left out so that the table stays
 * fine where the splitters are dense).  Entry j = y >> tsh, with y the offset
 * k - tlo (apc) or its fold (apcf), holds the first splitter whose y is >=
 * the entry's start; GS_APPROX_HIT is set when a splitter lies inside the
 * entry.  Most entries hold none (the table has >= 64 entries per
 * splitter): the key is in the gap below that splitter, no search.
 * Otherwise a fixed-length branchless search of `win` (a power of two >= the
 * splitters any entry holds; spl is padded with UINT64_MAX) on the key
 * itself.  Keys outside the table range (rare) take a plain binary search
 * over all splitters and track the input's min/max below spl[0] / above
 * spl[ns-1].  The two variants share this body; the unfolded one keeps the
 * common case free of the fold's three operations.
 */
#define GS_APPROX_HIT UINT32_C(0x80000000)

#define APC_SETUP \
	const uint64_t *spl = a->spl; const size_t ns = a->ns; \
	uint32_t *gap = a->gap; uint32_t *eq = a->eq; \
	uint64_t mn = a->mn; uint64_t mx = a->mx; uint64_t cmn = a->cmn; uint64_t cmx = a->cmx; \
	const uint32_t *tbl = a->tbl; const uint64_t tlo = a->tlo; const uint64_t wr = a->wr; \
	const unsigned sh = a->tsh; const size_t win = a->win; size_t j_;
#define APC_FOLD_SETUP \
	const uint64_t fat = a->fat; const uint64_t fto = a->fto; const uint64_t fw = a->fw;
#define APC_BODY(Y) \
	uint64_t d = k - tlo; \
	if (__builtin_expect(d > wr, 0)) \
	{ \
		size_t ix = lower_bound_u64(spl, ns, k); \
		\
		if (ix < ns && spl[ix] == k) \
			eq[ix]++; \
		else \
			gap[ix]++; \
		if (ix == 0 && k <= mn) { if (k < mn) { mn = k; cmn = 0; } cmn++; } \
		if (ix == ns && k >= mx) { if (k > mx) { mx = k; cmx = 0; } cmx++; } \
	} \
	else \
	{ \
		uint32_t v = tbl[(Y) >> sh]; \
		\
		if (__builtin_expect(!(v & GS_APPROX_HIT), 1)) \
			gap[v]++; \
		else \
		{ \
			const uint64_t *b = spl + (v & ~GS_APPROX_HIT); \
			size_t step; \
			\
			for (step = win >> 1; step > 0; step >>= 1) \
				b = (b[step - 1] < k) ? b + step : b; \
			b += (*b < k); \
			(*b == k ? eq : gap)[b - spl]++; \
		} \
	}
#define APC_FINISH \
	a->mn = mn; a->mx = mx; a->cmn = cmn; a->cmx = cmx; \
	/* 32-bit counters (half the cache footprint) for one chunk at most */ \
	for (j_ = 0; j_ <= ns; j_++) \
	{ \
		a->cnt[2 * j_] += gap[j_]; \
		a->cnt[2 * j_ + 1] += eq[j_]; \
		gap[j_] = 0; \
		eq[j_] = 0; \
	}

GS_KERNELS(apc, ap_arg, APC_SETUP, APC_BODY(d), APC_FINISH)
GS_KERNELS(apcf, ap_arg, APC_SETUP APC_FOLD_SETUP, APC_BODY(AP_FOLD(d, fat, fto, fw)), APC_FINISH)

static const kernset apc_kernels = {apc_16, apc_32, apc_64, NULL};
static const kernset apcf_kernels = {apcf_16, apcf_32, apcf_64, NULL};

/*
 * Table range spl[lo..hi] with its shift for 2^bits entries and, if `fold`,
 * its fold; returns the most splitters that share one entry (`span`, what a
 * key may have to search).  The fold takes the largest gap between
 * neighbours when it is more than half the range, as the CUDA engine's cell
 * index does (kernels/cuda/gs_cells.cuh): then the rest of the range is less
 * than half, and folding at least doubles the table's resolution everywhere.
 * Without such a gap (or with !fold) aa->fat = UINT64_MAX: no fold.
 */
static size_t
ap_layout(ap_arg *aa, const uint64_t *spl, size_t lo, size_t hi, unsigned bits, int fold)
{
	uint64_t	range = spl[hi] - spl[lo],
				g = 0,
				prev = 0;
	size_t		j,
				gi = lo,
				run = 1,
				span = 1;

	for (j = lo; j < hi; j++)
		if (spl[j + 1] - spl[j] > g)
		{
			g = spl[j + 1] - spl[j];
			gi = j;
		}
	aa->tlo = spl[lo];
	aa->wr = range;
	aa->fat = UINT64_MAX;
	aa->fto = aa->fw = 0;
	if (fold && g > range / 2 && g > 1)
	{
		aa->fat = spl[gi] - spl[lo];
		aa->fto = spl[gi + 1] - spl[lo];
		aa->fw = g - 1;
	}
	aa->tsh = shift_for(range - aa->fw, bits);
	for (j = lo; j <= hi; j++)
	{
		uint64_t	e = ap_fold(aa, spl[j] - spl[lo]) >> aa->tsh;

		run = j > lo && e == prev ? run + 1 : 1;
		span = run > span ? run : span;
		prev = e;
	}
	return span;
}

/*
 * Choose the table range, fold and size (fills aa's tlo, wr, fold, tsh and
 * win; returns the table's entry count).  Up to 32 outlying splitters at
 * either end may be left out when that makes the densest entry hold fewer
 * splitters (e.g. a dense cluster plus far outliers).  2^bits entries, >= 64
 * per splitter and >= n/64, 2^12 .. 2^16.  Smallest span wins; on a tie no
 * fold (three operations less per key), then fewer trimmed splitters.  The
 * untrimmed, unfolded table is kept at once if no entry has > 2 splitters.
 */
static size_t
ap_choose_table(ap_arg *aa, const uint64_t *spl, size_t ns, size_t n, size_t *ta, size_t *tb)
{
	static const size_t trims[] = {0, 1, 2, 4, 8, 16, 32};
	const size_t ntr = sizeof trims / sizeof trims[0];
	unsigned	bits = GS_APPROX_TBL_BITS;
	size_t		best_span = SIZE_MAX,
				best_trim = 0,
				x,
				y;
	int			best_fold = 0,
				f;

	while (bits < GS_APPROX_TBL_MAX_BITS &&
		   (((size_t) 1 << bits) < 64 * ns || ((size_t) 1 << bits) < n / 64))
		bits++;
	*ta = 0;
	*tb = ns - 1;
	for (x = 0; x < ntr; x++)
		for (y = 0; y < ntr; y++)
			for (f = 0; f < 2; f++)
			{
				size_t		trim = trims[x] + trims[y],
							span;
				int			folded;

				if (trim >= ns)
					continue;
				span = ap_layout(aa, spl, trims[x], ns - 1 - trims[y], bits, f);
				folded = aa->fat != UINT64_MAX;
				if (f && !folded)
					continue;	/* no gap to fold: same as f = 0 */
				if (span < best_span ||
					(span == best_span && (folded < best_fold ||
										   (folded == best_fold && trim < best_trim))))
				{
					best_span = span;
					best_trim = trim;
					best_fold = folded;
					*ta = trims[x];
					*tb = ns - 1 - trims[y];
				}
				if (x == 0 && y == 0 && !f && span <= 2)
					x = y = ntr, f = 2;	/* plain table is fine: keep it */
			}
	ap_layout(aa, spl, *ta, *tb, bits, best_fold);
	aa->win = 1;
	while (aa->win < best_span)
		aa->win <<= 1;
	return (size_t) ((aa->wr - aa->fw) >> aa->tsh) + 1;
}

/*
 * tbl[j] = first splitter whose folded offset is >= start(j), flagged if it
 * is also < start(j+1) (and inside the table range spl[ta..tb]).
 */
static void
ap_fill_table(ap_arg *aa, const uint64_t *spl, size_t ns, size_t nt, size_t ta, size_t tb)
{
	size_t		j,
				l = ta;

	for (j = 0; j < nt; j++)
	{
		uint64_t	start = (uint64_t) j << aa->tsh;

		while (l < ns && ap_fold(aa, spl[l] - aa->tlo) < start)
			l++;
		aa->tbl[j] = (uint32_t) l;
		if (l < ns && l <= tb &&
			(j + 1 == nt || ap_fold(aa, spl[l] - aa->tlo) < ((uint64_t) (j + 1) << aa->tsh)))
			aa->tbl[j] |= GS_APPROX_HIT;
	}
}

/* pad the splitters with UINT64_MAX for the search window; NULL on no memory */
static uint64_t *
pad_splitters(uint64_t *spl, size_t ns, unsigned win)
{
	uint64_t   *ps = realloc(spl, (ns + win) * sizeof(uint64_t));
	size_t		i;

	if (!ps)
		return NULL;
	for (i = ns; i < ns + win; i++)
		ps[i] = UINT64_MAX;
	return ps;
}

/*
 * One counting pass against ns distinct ascending splitters *splp (malloc'd;
 * reallocated to pad it): aa->cnt[2i] = keys between spl[i-1] and spl[i],
 * aa->cnt[2i+1] = keys == spl[i], aa->cnt[2ns] = keys above spl[ns-1]; the
 * input's min/max with their counts in aa->mn/cmn, aa->mx/cmx.  The caller
 * frees aa->cnt, aa->gap and aa->tbl (also on error).
 */
gs_status
cpu_count_splitters(const gs_input *in, size_t n, uint64_t **splp, size_t ns, ap_arg *aa_,
					const gs_options *opt, gs_error *err)
{
	uint64_t   *spl = *splp;
	ap_arg		aa = *aa_;
	size_t		nt,
				ta,
				tb;
	gs_status	st = GS_OK;

	aa.spl = spl;
	aa.ns = ns;
	aa.cnt = calloc(2 * (ns + 1), sizeof(uint64_t));
	aa.gap = calloc(2 * (ns + 1), sizeof(uint32_t));
	if (!aa.cnt || !aa.gap)
	{
		st = NOMEM(err);
		goto done;
	}
	aa.eq = aa.gap + ns + 1;
	nt = ap_choose_table(&aa, spl, ns, n, &ta, &tb);
	aa.tbl = malloc(nt * sizeof(uint32_t));
	if (!aa.tbl)
	{
		st = NOMEM(err);
		goto done;
	}
	ap_fill_table(&aa, spl, ns, nt, ta, tb);
	spl = pad_splitters(spl, ns, aa.win);
	if (!spl)
	{
		st = NOMEM(err);
		goto done;
	}
	*splp = spl;
	aa.spl = spl;
	aa.mn = UINT64_MAX;
	aa.mx = 0;
	st = cpu_run_pass(in, aa.fat == UINT64_MAX ? &apc_kernels : &apcf_kernels, &aa, opt, err);
	if (st != GS_OK)
		goto done;
	/* the input's min/max: outside the splitters if any key was, else the end splitters */
	if (aa.cmn == 0)
	{
		aa.mn = spl[0];
		aa.cmn = aa.cnt[1];
	}
	if (aa.cmx == 0)
	{
		aa.mx = spl[ns - 1];
		aa.cmx = aa.cnt[2 * (ns - 1) + 1];
	}
done:
	*aa_ = aa;
	return st;
}
