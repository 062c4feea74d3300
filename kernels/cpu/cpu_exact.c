/*
 * cpu_exact.c — exact multiselect, gs_cpu_select: MSD radix selection with
 * range narrowing.  This file sorts and deduplicates the wanted ranks, picks
 * the way in, and scatters the answers back in the caller's order.
 *
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

gs_status
gs_cpu_select(const gs_input *in, const uint64_t *ranks, size_t nranks,
			  uint64_t *out_keys, const gs_options *opt, gs_error *err)
{
	size_t		n,
				i,
				nu;
	gs_status	st;
	rank_ix    *ri = NULL;
	uint64_t   *ur = NULL,
			   *uval = NULL;
	struct
	{
		uint64_t	mn,
					mx;
	}			mm;
	eng			e;
	uint64_t   *sm = NULL;		/* sorted sample (large inputs) */

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
	for (i = 0; i < nranks; i++)
	{
		ri[i].rank = ranks[i];
		ri[i].ix = i;
	}
	qsort(ri, nranks, sizeof(rank_ix), cmp_rank_ix);
	nu = 0;
	for (i = 0; i < nranks; i++)
		if (nu == 0 || ur[nu - 1] != ri[i].rank)
			ur[nu++] = ri[i].rank;

	e.opt = opt;
	e.err = err;
	e.ur = ur;
	e.uval = uval;
	e.nu = nu;
	e.keymax = in->key_bytes == 8 ? UINT64_MAX : ((uint64_t) 1 << (8 * in->key_bytes)) - 1;

	if (n >= GS_SAMPLE_MIN_N)
	{
		/*
		 * First level on a sample-bracketed key range [L, H] with extra
		 * slots for keys below L and above H: no min/max pass, and rare
		 * outliers do not stretch the histogram.  L and H are sample keys
		 * GS_SAMPLE_MARGIN sample positions outside the wanted ranks, but at
		 * least GS_SAMPLE_TAIL positions inside the sample's ends.  If the
		 * sample misleads, a wanted rank lands below L or above H and that
		 * slot simply becomes a child task: correct, just one more level.
		 */
		size_t		pmin,
					pmax,
					il,
					ih,
					nmid,
					nleft = 0;
		size_t	   *left = NULL;
		int			heavy,
					narrow,
					few = 0;

		sm = malloc(GS_SAMPLE * sizeof(uint64_t));
		if (!sm || !cpu_sample_keys(in, n, GS_SAMPLE, GS_EXACT_SEED, sm))
		{
			st = NOMEM(err);
			goto done;
		}
		cpu_sort_u64(sm, GS_SAMPLE);
		pmin = (size_t) ((double) ur[0] / (double) n * GS_SAMPLE);
		pmax = (size_t) ((double) ur[nu - 1] / (double) n * GS_SAMPLE);
		il = pmin > GS_SAMPLE_TAIL + GS_SAMPLE_MARGIN ? pmin - GS_SAMPLE_MARGIN : GS_SAMPLE_TAIL;
		ih = pmax + GS_SAMPLE_MARGIN + GS_SAMPLE_TAIL < GS_SAMPLE ? pmax + GS_SAMPLE_MARGIN
			: GS_SAMPLE - 1 - GS_SAMPLE_TAIL;
		if (il > ih)
			il = ih;
		mm.mn = sm[il];
		mm.mx = sm[ih];
		/* sample keys strictly inside (L, H): the bracket pass copies only
		 * those (keys == L or == H are counted), so a heavy value at either
		 * end, or L == H, needs no room */
		nmid = 0;
		for (i = il; i <= ih; i++)
			nmid += sm[i] > mm.mn && sm[i] < mm.mx;
		/* no repeated end in the sample: the plain pass (cheaper per key)
		 * copying all of [L, H] */
		heavy = nmid + 2 < ih - il + 1;
		if (!heavy)
			nmid = ih - il + 1;
		narrow = pmin > GS_SAMPLE_TAIL + GS_SAMPLE_MARGIN &&
			pmax + GS_SAMPLE_MARGIN + GS_SAMPLE_TAIL < GS_SAMPLE &&
			(double) (nmid + 1) / GS_SAMPLE * (double) n * 2.0 + 4096.0 < (double) n / 8.0;

		/*
		 * Few distinct values in the sample (all heavy) and wanted ranks
		 * too spread for the bracket pass: one counting pass against the
		 * sample's distinct values (the approximate mode's counter) gives
		 * each one's exact run; ranks inside a run are answered.  The rest
		 * (they fall between the values: rare, such keys were unseen by
		 * the sample) go on to the histogram levels below.
		 */
		if (!narrow)
		{
			size_t		nd = 1;

			for (i = 1; i < GS_SAMPLE && nd <= GS_FEW_DISTINCT; i++)
				nd += sm[i] != sm[i - 1];
			if (nd <= GS_FEW_DISTINCT)
			{
				uint64_t   *dv = malloc(GS_FEW_DISTINCT * sizeof(uint64_t));
				ap_arg		ha;

				memset(&ha, 0, sizeof ha);
				left = malloc(nu * sizeof(size_t));
				if (!dv || !left)
				{
					free(dv);
					st = NOMEM(err);
					goto done;
				}
				nd = 0;
				for (i = 0; i < GS_SAMPLE; i++)
					if (nd == 0 || dv[nd - 1] != sm[i])
						dv[nd++] = sm[i];
				st = cpu_count_splitters(in, n, &dv, nd, &ha, opt, err);
				if (st == GS_OK)
				{
					uint64_t	less = 0;
					size_t		v = 0;

					/* resolved: rank in the run of dv[v]; left: ur kept in place */
					nleft = 0;
					for (i = 0; i < nu; i++)
					{
						while (v < nd && less + ha.cnt[2 * v] + ha.cnt[2 * v + 1] <= ur[i])
						{
							less += ha.cnt[2 * v] + ha.cnt[2 * v + 1];
							v++;
						}
						if (v < nd && ur[i] >= less + ha.cnt[2 * v])
							uval[i] = dv[v];
						else
							left[nleft++] = i;
					}
				}
				free(ha.cnt);
				free(ha.gap);
				free(ha.tbl);
				free(dv);
				if (st != GS_OK)
					goto done;
				few = 1;
			}
		}
		if (few)
		{
			/* the ranks left over: histogram levels on just those */
			eng		e2 = e;
			uint64_t   *sur = NULL,
					   *suv = NULL;

			if (nleft > 0)
			{
				sur = malloc(nleft * sizeof(uint64_t));
				suv = malloc(nleft * sizeof(uint64_t));
				if (!sur || !suv)
					st = NOMEM(err);
				else
				{
					for (i = 0; i < nleft; i++)
						sur[i] = ur[left[i]];
					e2.ur = sur;
					e2.uval = suv;
					e2.nu = nleft;
					st = cpu_input_levels(&e2, in, n, mm.mn, mm.mx, 1, sm + il, ih - il + 1, il);
					for (i = 0; st == GS_OK && i < nleft; i++)
						uval[left[i]] = suv[i];
					cpu_eng_free(&e2);
				}
			}
			free(sur);
			free(suv);
			free(left);
			if (st != GS_OK)
				goto done;
			goto answer;
		}

		/*
		 * Narrow bracket (few ranks close together, e.g. a median): one pass
		 * counts the keys below L, equal to L and equal to H, and copies the
		 * keys strictly between (expected nmid / GS_SAMPLE of the input) into
		 * scratch, which is then finished on its own; ranks in the run of L
		 * or of H are answered at once.  If the copy overflows its cap or a
		 * wanted rank is not inside [L, H], fall back to the histogram levels.
		 */
		if (narrow)
		{
			brk_arg		ba;
			int			inside = 1;
			uint64_t	b1,
						b2,
						b3;

			memset(&ba, 0, sizeof ba);
			ba.lo = mm.mn;
			ba.hi = mm.mx;
			ba.cap = (size_t) ((double) (nmid + 1) / GS_SAMPLE * (double) n * 2.0) + 4096;
			e.bra = malloc(ba.cap * sizeof(uint64_t));
			e.brb = malloc(ba.cap * sizeof(uint64_t));
			if (!e.bra || !e.brb)
			{
				st = NOMEM(err);
				goto done;
			}
			ba.sc = e.bra;
			st = cpu_run_pass(in, heavy ? &brkeq_kernels : &brk_kernels, &ba, opt, err);
			if (st != GS_OK)
				goto done;
			/* sorted positions: [under, b1) == L, [b1, b2) copied, [b2, b3) == H */
			b1 = ba.under + ba.eqlo;
			b2 = b1 + ba.pos;
			b3 = b2 + (ba.hi != ba.lo ? ba.eqhi : 0);
			for (i = 0; i < nu; i++)
				if (ur[i] < ba.under || ur[i] >= b3)
					inside = 0;
			if (ba.pos <= ba.cap && inside)
			{
				size_t		i0;

				for (i = 0; i < nu && ur[i] < b1; i++)
					uval[i] = ba.lo;
				for (i0 = i; i < nu && ur[i] < b2; i++)
					;
				st = cpu_scratch_select(&e, e.bra, e.brb, ba.pos, b1, i0, i, 0);
				if (st != GS_OK)
					goto done;
				for (; i < nu; i++)
					uval[i] = ba.hi;
				goto answer;
			}
		}
		st = cpu_input_levels(&e, in, n, mm.mn, mm.mx, 1, sm + il, ih - il + 1, il);
		if (st != GS_OK)
			goto done;
		goto answer;
	}

	st = cpu_minmax_pass(in, &mm.mn, &mm.mx, opt, err);
	if (st != GS_OK)
		goto done;

	if (mm.mn == mm.mx)
	{
		for (i = 0; i < nu; i++)
			uval[i] = mm.mn;
	}
	else if (n <= GS_SORT_MAX)
	{
		/* tiny input: copy and sort */
		uint64_t   *c = malloc(n * sizeof(uint64_t));
		size_t		s,
					j,
					o = 0;

		if (!c)
		{
			st = NOMEM(err);
			goto done;
		}
		for (s = 0; s < in->nsegs; s++)
			for (j = 0; j < in->segs[s].n; j++)
				c[o++] = load_key(in->segs[s].keys, in->key_bytes, j);
		cpu_sort_u64(c, n);
		for (i = 0; i < nu; i++)
			uval[i] = c[ur[i]];
		free(c);
	}
	else
	{
		st = cpu_input_levels(&e, in, n, mm.mn, mm.mx, 0, NULL, 0, 0);
		if (st != GS_OK)
			goto done;
	}

answer:
	/* scatter back in the caller's order */
	{
		size_t		u = 0;

		for (i = 0; i < nranks; i++)
		{
			if (i > 0 && ri[i].rank != ri[i - 1].rank)
				u++;
			out_keys[ri[i].ix] = uval[u];
		}
	}
	st = cpu_set_err(err, GS_OK, "");

done:
	free(sm);
	cpu_eng_free(&e);
	free(ri);
	free(ur);
	free(uval);
	return st;
}
