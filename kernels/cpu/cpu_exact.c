/*
 * cpu_exact.c — exact multiselect, gs_cpu_select: MSD radix selection with
 * range narrowing.  This file sorts and deduplicates the wanted ranks, picks
 * the way in, and scatters the answers back in the caller's order.
 *
 *   many ranks  (sort_pays) selection approaches a sort and falls behind
 *            it: cpu_sort.c radix sorts a copy and reads the ranks off.
 *   small    (n < GS_SAMPLE_MIN_N) pass 0 finds the input's min/max
 *            (cpu_pass.c).  If min == max every rank is min; tiny inputs
 *            are copied and sorted; otherwise the input levels
 *            (cpu_levels.c) run from [min, max].
 *   large    a sample brackets the wanted ranks by [L, H] (no min/max pass;
 *            rare outliers do not stretch the histogram), then one of:
 *            - few distinct values in the sample: one counting pass against
 *              them (cpu_count.c) answers every rank inside a value's run;
 *            - a narrow bracket (few ranks close together, e.g. a median):
 *              one pass copies the keys inside [L, H] into scratch
 *              (brk / brkeq kernels below), finished there (cpu_scratch.c);
 *            - otherwise, or when those do not answer every rank, the input
 *              levels with [L, H] as an open first level (slots for keys
 *              outside), laid out piecewise when the sample says so
 *              (cpu_piecewise.c).
 *
 * Every level shrinks a task's key range by >= 2^10 (>= 2^4 on input levels
 * with very many tasks), so the number of levels is bounded by the key
 * width; each level is O(n) plus O(buckets).  Termination and bounded work
 * hold for every distribution.  The input is never written.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define GS_SAMPLE_MIN_N	((size_t) 1 << 16)	/* sample-bracketed first level from here */
#define GS_SAMPLE_MARGIN 384	/* ~6 sigma of a sample quantile's position */
#define GS_SAMPLE_TAIL	64		/* L/H at least this far inside the sample */
#define GS_EXACT_SEED	UINT64_C(0x5E1EC7)
#define GS_FEW_DISTINCT	64		/* sample with <= this many values: counting pass */

/* ---- the bracket pass's kernels (select_narrow) ---- */

/*
 * bracket pass [lo, hi]: count keys < lo, == lo and == hi; copy the keys
 * strictly between (up to cap).  The ends are counted, not copied, so a heavy
 * value at either end (few distinct values) costs nothing to hold.
 */
typedef struct brk_arg
{
	uint64_t	lo,
				hi,
				under,
				eqlo,
				eqhi;
	size_t		pos,
				cap;
	uint64_t   *sc;
} brk_arg;

/* plain variant (no heavy end seen in the sample): copy all of [lo, hi] */
GS_KERNELS(brk, brk_arg,
		   const uint64_t lo = a->lo; const uint64_t w = a->hi - a->lo; uint64_t cu = a->under;
		   size_t pos = a->pos; const size_t cap = a->cap; uint64_t *sc = a->sc;,
		   uint64_t d = k - lo;
		   cu += k < lo;
		   if (d <= w)
		   {
			   if (pos < cap)
				   sc[pos] = k;
			   pos++;
		   },
		   a->under = cu; a->pos = pos;)

GS_KERNELS(brkeq, brk_arg,
		   const uint64_t lo = a->lo; const uint64_t hi = a->hi;
		   const uint64_t mw = hi > lo ? hi - lo - 1 : 0; uint64_t cu = a->under;
		   uint64_t el = a->eqlo; uint64_t eh = a->eqhi;
		   size_t pos = a->pos; const size_t cap = a->cap; uint64_t *sc = a->sc;,
		   uint64_t d = k - lo - 1;	/* < mw exactly when lo < k < hi */
		   cu += k < lo;
		   el += k == lo;
		   eh += k == hi;
		   if (d < mw)
		   {
			   if (pos < cap)
				   sc[pos] = k;
			   pos++;
		   },
		   a->under = cu; a->eqlo = el; a->eqhi = eh; a->pos = pos;)

static const kernset brk_kernels = {brk_16, brk_32, brk_64, NULL};
static const kernset brkeq_kernels = {brkeq_16, brkeq_32, brkeq_64, NULL};

/* ---- the wanted ranks: sorted, deduplicated ---- */

typedef struct rank_ix
{
	uint64_t	rank;
	size_t		ix;
} rank_ix;

static int
cmp_rank_ix(const void *x, const void *y)
{
	const rank_ix *a = (const rank_ix *) x;
	const rank_ix *b = (const rank_ix *) y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->ix < b->ix ? -1 : a->ix > b->ix;
}

/* sort the wanted ranks into ri (with their positions) and their distinct values into ur */
static size_t
unique_ranks(const uint64_t *ranks, size_t nranks, rank_ix *ri, uint64_t *ur)
{
	size_t		i,
				nu = 0;

	for (i = 0; i < nranks; i++)
	{
		ri[i].rank = ranks[i];
		ri[i].ix = i;
	}
	qsort(ri, nranks, sizeof(rank_ix), cmp_rank_ix);
	for (i = 0; i < nranks; i++)
		if (nu == 0 || ur[nu - 1] != ri[i].rank)
			ur[nu++] = ri[i].rank;
	return nu;
}

/* ---- small inputs: min/max pass, then all-equal, sort or the input levels ---- */

/* tiny input: copy and sort */
static gs_status
select_tiny(eng *e, const gs_input *in, size_t n)
{
	uint64_t   *c = malloc(n * sizeof(uint64_t));
	size_t		s,
				i,
				j,
				o = 0;

	if (!c)
		return NOMEM(e->err);
	for (s = 0; s < in->nsegs; s++)
		for (j = 0; j < in->segs[s].n; j++)
			c[o++] = load_key(in->segs[s].keys, in->key_bytes, j);
	cpu_sort_u64(c, n);
	for (i = 0; i < e->nu; i++)
		e->uval[i] = c[e->ur[i]];
	free(c);
	return GS_OK;
}

static gs_status
select_unsampled(eng *e, const gs_input *in, size_t n)
{
	uint64_t	mn,
				mx;
	size_t		i;
	gs_status	st;

	st = cpu_minmax_pass(in, &mn, &mx, e->opt, e->err);
	if (st != GS_OK)
		return st;
	if (mn == mx)
	{
		for (i = 0; i < e->nu; i++)
			e->uval[i] = mn;
		return GS_OK;
	}
	if (n <= GS_SORT_MAX)
		return select_tiny(e, in, n);
	return cpu_input_levels(e, in, n, mn, mx, 0, NULL, 0, 0);
}

/* ---- large inputs: the sample bracket ---- */

/*
 * First level on a sample-bracketed key range [L, H] with extra slots for
 * keys below L and above H: no min/max pass, and rare outliers do not
 * stretch the histogram.  L and H are sample keys GS_SAMPLE_MARGIN sample
 * positions outside the wanted ranks, but at least GS_SAMPLE_TAIL positions
 * inside the sample's ends.  If the sample misleads, a wanted rank lands
 * below L or above H and that slot simply becomes a child task: correct,
 * just one more level.
 */
typedef struct bracket
{
	uint64_t   *sm;				/* the sorted sample, GS_SAMPLE keys */
	size_t		il,
				ih;				/* L = sm[il], H = sm[ih] */
	uint64_t	lo,
				hi;				/* L, H */
	size_t		nmid;			/* sample keys the bracket pass copies */
	int			heavy;			/* a repeated end: the counting bracket pass */
	int			narrow;			/* narrow enough for the bracket pass */
} bracket;

/* draw and sort the sample, place [L, H] and judge it; bk->sm to be freed */
static gs_status
choose_bracket(eng *e, const gs_input *in, size_t n, bracket *bk)
{
	const uint64_t *ur = e->ur;
	const uint64_t *sm;
	size_t		nu = e->nu,
				pmin,
				pmax,
				il,
				ih,
				i;

	bk->sm = malloc(GS_SAMPLE * sizeof(uint64_t));
	if (!bk->sm || !cpu_sample_keys(in, n, GS_SAMPLE, GS_EXACT_SEED, bk->sm))
		return NOMEM(e->err);
	cpu_sort_u64(bk->sm, GS_SAMPLE);
	sm = bk->sm;
	pmin = (size_t) ((double) ur[0] / (double) n * GS_SAMPLE);
	pmax = (size_t) ((double) ur[nu - 1] / (double) n * GS_SAMPLE);
	il = pmin > GS_SAMPLE_TAIL + GS_SAMPLE_MARGIN ? pmin - GS_SAMPLE_MARGIN : GS_SAMPLE_TAIL;
	ih = pmax + GS_SAMPLE_MARGIN + GS_SAMPLE_TAIL < GS_SAMPLE ? pmax + GS_SAMPLE_MARGIN
		: GS_SAMPLE - 1 - GS_SAMPLE_TAIL;
	if (il > ih)
		il = ih;
	bk->il = il;
	bk->ih = ih;
	bk->lo = sm[il];
	bk->hi = sm[ih];
	/* sample keys strictly inside (L, H): the bracket pass copies only
	 * those (keys == L or == H are counted), so a heavy value at either
	 * end, or L == H, needs no room */
	bk->nmid = 0;
	for (i = il; i <= ih; i++)
		bk->nmid += sm[i] > bk->lo && sm[i] < bk->hi;
	/* no repeated end in the sample: the plain pass (cheaper per key)
	 * copying all of [L, H] */
	bk->heavy = bk->nmid + 2 < ih - il + 1;
	if (!bk->heavy)
		bk->nmid = ih - il + 1;
	bk->narrow = pmin > GS_SAMPLE_TAIL + GS_SAMPLE_MARGIN &&
		pmax + GS_SAMPLE_MARGIN + GS_SAMPLE_TAIL < GS_SAMPLE &&
		(double) (bk->nmid + 1) / GS_SAMPLE * (double) n * 2.0 + 4096.0 < (double) n / 8.0;
	return GS_OK;
}

/* the input levels on the bracket, with the sample keys inside it */
static gs_status
bracket_levels(eng *e, const gs_input *in, size_t n, const bracket *bk)
{
	return cpu_input_levels(e, in, n, bk->lo, bk->hi, 1, bk->sm + bk->il, bk->ih - bk->il + 1,
							bk->il);
}

/*
 * Ranks e->ur[i] inside the run of one of the distinct values dv[0..nd)
 * (counted in ha) are answered; the others' indexes go to left[].  Returns
 * how many are left.
 */
static size_t
resolve_runs(eng *e, const ap_arg *ha, const uint64_t *dv, size_t nd, size_t *left)
{
	uint64_t	less = 0;
	size_t		v = 0,
				i,
				nleft = 0;

	/* resolved: rank in the run of dv[v]; left: ur kept in place */
	for (i = 0; i < e->nu; i++)
	{
		while (v < nd && less + ha->cnt[2 * v] + ha->cnt[2 * v + 1] <= e->ur[i])
		{
			less += ha->cnt[2 * v] + ha->cnt[2 * v + 1];
			v++;
		}
		if (v < nd && e->ur[i] >= less + ha->cnt[2 * v])
			e->uval[i] = dv[v];
		else
			left[nleft++] = i;
	}
	return nleft;
}

/* the ranks left over by resolve_runs: histogram levels on just those */
static gs_status
select_left(eng *e, const gs_input *in, size_t n, const bracket *bk,
			const size_t *left, size_t nleft)
{
	eng			e2 = *e;
	uint64_t   *sur = NULL,
			   *suv = NULL;
	size_t		i;
	gs_status	st = GS_OK;

	if (nleft == 0)
		return GS_OK;
	sur = malloc(nleft * sizeof(uint64_t));
	suv = malloc(nleft * sizeof(uint64_t));
	if (!sur || !suv)
		st = NOMEM(e->err);
	else
	{
		for (i = 0; i < nleft; i++)
			sur[i] = e->ur[left[i]];
		e2.ur = sur;
		e2.uval = suv;
		e2.nu = nleft;
		st = bracket_levels(&e2, in, n, bk);
		for (i = 0; st == GS_OK && i < nleft; i++)
			e->uval[left[i]] = suv[i];
		cpu_eng_free(&e2);
	}
	free(sur);
	free(suv);
	return st;
}

/*
 * Few distinct values in the sample (all heavy) and wanted ranks too spread
 * for the bracket pass: one counting pass against the sample's distinct
 * values (the approximate mode's counter) gives each one's exact run; ranks
 * inside a run are answered.  The rest (they fall between the values: rare,
 * such keys were unseen by the sample) go on to the histogram levels.
 * *answered = 0 (and nothing done) when the sample has more distinct values.
 */
static gs_status
select_few_distinct(eng *e, const gs_input *in, size_t n, const bracket *bk, int *answered)
{
	const uint64_t *sm = bk->sm;
	uint64_t   *dv;
	size_t	   *left;
	size_t		nd = 1,
				nleft = 0,
				i;
	ap_arg		ha;
	gs_status	st;

	*answered = 0;
	for (i = 1; i < GS_SAMPLE && nd <= GS_FEW_DISTINCT; i++)
		nd += sm[i] != sm[i - 1];
	if (nd > GS_FEW_DISTINCT)
		return GS_OK;
	dv = malloc(GS_FEW_DISTINCT * sizeof(uint64_t));
	memset(&ha, 0, sizeof ha);
	left = malloc(e->nu * sizeof(size_t));
	if (!dv || !left)
	{
		free(dv);
		free(left);
		return NOMEM(e->err);
	}
	nd = 0;
	for (i = 0; i < GS_SAMPLE; i++)
		if (nd == 0 || dv[nd - 1] != sm[i])
			dv[nd++] = sm[i];
	st = cpu_count_splitters(in, n, &dv, nd, &ha, e->opt, e->err);
	if (st == GS_OK)
		nleft = resolve_runs(e, &ha, dv, nd, left);
	free(ha.cnt);
	free(ha.gap);
	free(ha.tbl);
	free(dv);
	if (st == GS_OK)
	{
		*answered = 1;
		st = select_left(e, in, n, bk, left, nleft);
	}
	free(left);
	return st;
}

/*
 * Narrow bracket (few ranks close together, e.g. a median): one pass counts
 * the keys below L, equal to L and equal to H, and copies the keys strictly
 * between (expected nmid / GS_SAMPLE of the input) into scratch, which is
 * then finished on its own; ranks in the run of L or of H are answered at
 * once.  If the copy overflows its cap or a wanted rank is not inside
 * [L, H], *answered = 0: fall back to the histogram levels.
 */
static gs_status
select_narrow(eng *e, const gs_input *in, size_t n, const bracket *bk, int *answered)
{
	const uint64_t *ur = e->ur;
	size_t		nu = e->nu,
				i,
				i0;
	brk_arg		ba;
	int			inside = 1;
	uint64_t	b1,
				b2,
				b3;
	gs_status	st;

	*answered = 0;
	memset(&ba, 0, sizeof ba);
	ba.lo = bk->lo;
	ba.hi = bk->hi;
	ba.cap = (size_t) ((double) (bk->nmid + 1) / GS_SAMPLE * (double) n * 2.0) + 4096;
	e->bra = malloc(ba.cap * sizeof(uint64_t));
	e->brb = malloc(ba.cap * sizeof(uint64_t));
	if (!e->bra || !e->brb)
		return NOMEM(e->err);
	ba.sc = e->bra;
	st = cpu_run_pass(in, bk->heavy ? &brkeq_kernels : &brk_kernels, &ba, e->opt, e->err);
	if (st != GS_OK)
		return st;
	/* sorted positions: [under, b1) == L, [b1, b2) copied, [b2, b3) == H */
	b1 = ba.under + ba.eqlo;
	b2 = b1 + ba.pos;
	b3 = b2 + (ba.hi != ba.lo ? ba.eqhi : 0);
	for (i = 0; i < nu; i++)
		if (ur[i] < ba.under || ur[i] >= b3)
			inside = 0;
	if (ba.pos > ba.cap || !inside)
		return GS_OK;
	*answered = 1;
	for (i = 0; i < nu && ur[i] < b1; i++)
		e->uval[i] = ba.lo;
	for (i0 = i; i < nu && ur[i] < b2; i++)
		;
	st = cpu_scratch_select(e, e->bra, e->brb, ba.pos, b1, i0, i, 0);
	if (st != GS_OK)
		return st;
	for (; i < nu; i++)
		e->uval[i] = ba.hi;
	return GS_OK;
}

static gs_status
select_sampled(eng *e, const gs_input *in, size_t n)
{
	bracket		bk;
	int			answered = 0;
	gs_status	st;

	memset(&bk, 0, sizeof bk);
	st = choose_bracket(e, in, n, &bk);
	if (st == GS_OK && !bk.narrow)
		st = select_few_distinct(e, in, n, &bk, &answered);
	if (st == GS_OK && !answered && bk.narrow)
		st = select_narrow(e, in, n, &bk, &answered);
	if (st == GS_OK && !answered)
		st = bracket_levels(e, in, n, &bk);
	free(bk.sm);
	return st;
}

/*
 * Sort instead of selecting when the distinct wanted ranks are at least
 * n / GS_SORT_KEYS_PER_RANK or GS_SORT_MIN_RANKS, on inputs of
 * GS_SAMPLE_MIN_N keys or more (below, selection takes well under a
 * millisecond and the unit tests keep exercising it).  Measured on uniform
 * float8 keys (test/bench/results/engine-2026-11-23-sort-crossover.md,
 * 2-core AMD EPYC, ms min of 3, select / sort):
 *   n = 1M:   5k ranks 18 / 49,   10k ranks 208 / 40
 *   n = 10M:  3k ranks 183 / 496,  5k ranks 1213 / 455
 * The sort costs ~50 ns a key whatever the ranks; selection is cheaper until
 * the ranks crowd its levels, then it falls off a cliff (10-60x, at n/100
 * ranks for 1M keys, between 3k and 5k ranks for 10M).  Sorting early is
 * the safe side: it costs at most about what the built-in's sort costs.
 */
#define GS_SORT_KEYS_PER_RANK	100
#define GS_SORT_MIN_RANKS		4000

static int
sort_pays(size_t n, size_t nu)
{
	return n >= GS_SAMPLE_MIN_N &&
		(nu >= GS_SORT_MIN_RANKS || (double) nu * GS_SORT_KEYS_PER_RANK >= (double) n);
}

/* gs_cpu_test_force_path (gs_engine.h): a test hook, CPU_PATH_AUTO unless
 * set; per thread, so that the GPU service's lanes (one thread per device)
 * each run their own job's setting */
static __thread cpu_path forced_path = CPU_PATH_AUTO;

void
gs_cpu_test_force_path(int path)
{
	forced_path = path == GS_CPU_PATH_SELECT ? CPU_PATH_SELECT
		: path == GS_CPU_PATH_SORT ? CPU_PATH_SORT : CPU_PATH_AUTO;
}

gs_status
gs_cpu_select(const gs_input *in, const uint64_t *ranks, size_t nranks,
			  uint64_t *out_keys, const gs_options *opt, gs_error *err)
{
	return cpu_select_path(in, ranks, nranks, out_keys, opt, err, forced_path);
}

gs_status
cpu_select_path(const gs_input *in, const uint64_t *ranks, size_t nranks,
				uint64_t *out_keys, const gs_options *opt, gs_error *err, cpu_path path)
{
	int			sorted = 0;
	size_t		n,
				i,
				u;
	gs_status	st;
	rank_ix    *ri = NULL;
	uint64_t   *ur = NULL,
			   *uval = NULL;
	eng			e;

	st = cpu_check_input(in, nranks, ranks, out_keys, err, &n);
	if (st != GS_OK)
		return st;
	cpu_set_err(err, GS_OK, "");
	if (nranks == 0)
		return GS_OK;
	if (poll_interrupt(opt))
		return CANCELED(err);

	memset(&e, 0, sizeof e);
	ri = malloc(nranks * sizeof(rank_ix));
	ur = malloc(nranks * sizeof(uint64_t));
	uval = malloc(nranks * sizeof(uint64_t));
	if (!ri || !ur || !uval)
	{
		st = NOMEM(err);
		goto done;
	}
	e.opt = opt;
	e.err = err;
	e.ur = ur;
	e.uval = uval;
	e.nu = unique_ranks(ranks, nranks, ri, ur);
	e.keymax = in->key_bytes == 8 ? UINT64_MAX : ((uint64_t) 1 << (8 * in->key_bytes)) - 1;

	if (path == CPU_PATH_SORT || (path == CPU_PATH_AUTO && sort_pays(n, e.nu)))
		st = cpu_sort_ranks(in, n, ur, e.nu, uval, opt, err, &sorted);
	if (st == GS_OK && !sorted)
		st = n >= GS_SAMPLE_MIN_N ? select_sampled(&e, in, n) : select_unsampled(&e, in, n);
	if (st != GS_OK)
		goto done;

	/* scatter back in the caller's order */
	for (i = 0, u = 0; i < nranks; i++)
	{
		if (i > 0 && ri[i].rank != ri[i - 1].rank)
			u++;
		out_keys[ri[i].ix] = uval[u];
	}
	st = cpu_set_err(err, GS_OK, "");

done:
	cpu_eng_free(&e);
	free(ri);
	free(ur);
	free(uval);
	return st;
}
