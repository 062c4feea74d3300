/*
 * cpu_piecewise.c — the piecewise-linear first level of the CPU engine's
 * exact mode.  On large inputs the first input level is the sample bracket
 * [L, H] (plus slots below/above it, cpu_exact.c).  When the sample shows
 * its key range mostly empty (float8 values straddling zero, far-apart
 * clusters) the buckets are spread piecewise by the sample's density instead
 * of linearly (pw_layout, cpu_internal.h, whose lookup pw_tree_slot the
 * first level's kernels in cpu_levels.c inline); entries where the sample
 * clumps (clusters far narrower than an entry) are split again by child
 * tables.  This file builds the layout, maps a slot back to its key range,
 * and decides from the sample whether the layout pays.
 *
 * Linear buckets over the sample bracket [L, H] fail when most of its key
 * range is empty: float8 values straddling zero have their keys at the two
 * far ends of the range (the tiny exponents of both signs lie between and
 * hold almost nothing), two far-apart clusters likewise.  The few buckets
 * over the data then hold most of the input, too much to gather, and the
 * next levels rescan it all.
 *
 * The piecewise layout cuts [L, H] into nent <= 2^GS_PW_ENT_BITS entries of
 * 2^tsh keys and gives entry j 2^(tsh - sub_j) buckets of 2^sub_j keys, about
 * as many as its share of the sample keys in [L, H] times 2^GS_MAX_BITS
 * (rounded down to a power of two; at least one, at most one per key).
 * Slots stay in key order and each is one contiguous key range, so the rank
 * walk, the children and the gather work as for linear buckets.  It is used
 * only at the first level (open task), so the later levels and their bound
 * are unchanged.
 *
 * An entry is 2^tsh keys, about 2^-12 of [L, H]; a cluster much narrower
 * than that (far-apart clusters each narrow relative to its magnitude, e.g.
 * float8 values near -1e12 and near 3.5) gets its entry's slots spread over
 * the whole entry, lands in a handful of them, and the layout gains nothing
 * over linear buckets.  pw_fill gives such entries child tables (below).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define GS_PW_MAX_NODES	16		/* tables, the root included (2 x 16 KB each) */
#define GS_PW_REFINE_LB	6		/* refine entries owed >= 2^6 slots ... */
#define GS_PW_CLUMP		8		/* ... whose sample values outnumber the slots
								 * they hit 8 to 1 */

/*
 * Fill table `node` (entries of 2^sh keys from offset dbase) from the sorted
 * sample keys s[0..ns) that fall in it; ntot: all sample keys of the layout.
 *
 * The entries are fixed-width, so a cluster much narrower than its entry
 * (two far clusters, each narrow relative to its magnitude) gets its share
 * of slots spread over the whole entry and sits in a handful of them: the
 * wanted slots would hold most of the input.  Such an entry is refined
 * instead: its slots go to a child table of 2^GS_PW_ENT_BITS entries over
 * the same keys, filled the same way (recursively; a child whose cluster is
 * still narrower is refined again).  Slots stay in key order: a child's
 * slots are numbered where its parent entry's would have been.  0 on no
 * memory.
 */
static int
pw_fill(pw_layout *pw, size_t node, unsigned sh, size_t nent, uint64_t dbase,
		const uint64_t *s, size_t ns, size_t ntot)
{
	const uint64_t budget = (uint64_t) 1 << GS_MAX_BITS;
	const size_t tb = node << GS_PW_ENT_BITS;
	size_t		i,
				j = 0;

	for (i = 0; i < nent; i++)
	{
		size_t		j0 = j,
					x,
					nval = 1,
					nhit = 1;
		uint64_t	want;
		unsigned	lb;

		while (j < ns && (s[j] - pw->lo - dbase) >> sh == i)
			j++;
		want = (uint64_t) (j - j0) * budget / ntot;
		lb = want > 1 ? floor_log2(want) : 0;
		if (lb > sh)
			lb = sh;			/* no bucket narrower than one key */
		pw->first[tb + i] = (uint32_t) pw->nslots;

		/*
		 * Clumped: many distinct sample values share few of the entry's
		 * slots (spread data hits about as many slots as it has values; one
		 * heavy value is one value, which no finer slot would split).  The
		 * count of values, not the sample's min/max span, so that a few
		 * stragglers around a narrow cluster do not hide it.
		 */
		if (lb >= GS_PW_REFINE_LB && sh >= 2 * GS_PW_ENT_BITS &&
			pw->nnodes < GS_PW_MAX_NODES)
			for (x = j0 + 1; x < j; x++)
			{
				nval += s[x] != s[x - 1];
				nhit += (s[x] - pw->lo - dbase) >> (sh - lb) !=
					(s[x - 1] - pw->lo - dbase) >> (sh - lb);
			}
		if (nval >= GS_PW_CLUMP * nhit)
		{
			size_t		child = pw->nnodes++;
			size_t		sz = pw->nnodes << GS_PW_ENT_BITS;
			uint32_t   *ne = realloc(pw->ent, sz * sizeof(uint32_t));

			if (!ne)
				return 0;
			pw->ent = ne;
			ne = realloc(pw->first, sz * sizeof(uint32_t));
			if (!ne)
				return 0;
			pw->first = ne;
			pw->ent[tb + i] = (uint32_t) child | ((uint32_t) PW_NODE << PW_OFF_BITS);
			if (!pw_fill(pw, child, sh - GS_PW_ENT_BITS, (size_t) 1 << GS_PW_ENT_BITS,
						 dbase + ((uint64_t) i << sh), s + j0, j - j0, ntot))
				return 0;
			continue;
		}
		pw->ent[tb + i] = (uint32_t) pw->nslots | ((uint32_t) (sh - lb) << PW_OFF_BITS);
		pw->nslots += (size_t) 1 << lb;
	}
	return 1;
}

/* s[0..ns): sorted sample keys, all in [lo, hi], ns >= 1.  0 on no memory. */
static int
pw_build(pw_layout *pw, uint64_t lo, uint64_t hi, const uint64_t *s, size_t ns)
{
	pw->lo = lo;
	pw->w = hi - lo;
	pw->tsh = shift_for(pw->w, GS_PW_ENT_BITS);
	pw->nent = (size_t) (pw->w >> pw->tsh) + 1;
	pw->nslots = 0;
	pw->nnodes = 1;
	pw->ent = malloc(sizeof(uint32_t) << GS_PW_ENT_BITS);
	pw->first = malloc(sizeof(uint32_t) << GS_PW_ENT_BITS);
	if (!pw->ent || !pw->first)
		return 0;

	/*
	 * nslots <= budget + GS_PW_MAX_NODES * 2^GS_PW_ENT_BITS < 2^PW_OFF_BITS;
	 * sub <= tsh <= 52 < PW_NODE fits the rest
	 */
	return pw_fill(pw, 0, pw->tsh, pw->nent, 0, s, ns, ns);
}

void
cpu_pw_free(pw_layout *pw)
{
	free(pw->ent);
	free(pw->first);
	pw->ent = NULL;
	pw->first = NULL;
}

static inline size_t
pw_slot(const pw_layout *pw, uint64_t k)
{
	return pw_tree_slot(pw->ent, pw->tsh, k - pw->lo);
}

/* key range [*lo, *hi] of a slot holding keys */
void
cpu_pw_slot_range(const pw_layout *pw, size_t slot, uint64_t *lo, uint64_t *hi)
{
	size_t		tb = 0,
				nent = pw->nent;
	unsigned	sh = pw->tsh;
	uint64_t	dbase = 0;

	for (;;)
	{
		size_t		a = 0,
					len = nent;
		uint32_t	e;
		unsigned	sub;

		/* last entry whose first slot is <= slot (first slots strictly increase) */
		while (len > 1)
		{
			size_t		half = len / 2;

			a = pw->first[tb + a + half] <= slot ? a + half : a;
			len -= half;
		}
		e = pw->ent[tb + a];
		sub = e >> PW_OFF_BITS;
		if (sub == PW_NODE)
		{
			dbase += (uint64_t) a << sh;
			tb = (size_t) (e & PW_OFF_MASK) << GS_PW_ENT_BITS;
			nent = (size_t) 1 << GS_PW_ENT_BITS;
			sh -= GS_PW_ENT_BITS;
			continue;
		}
		*lo = pw->lo + dbase + ((uint64_t) a << sh) +
			((uint64_t) (slot - (e & PW_OFF_MASK)) << sub);
		*hi = *lo + ((UINT64_C(1) << sub) - 1);
		if (*hi < *lo || *hi > pw->lo + pw->w)
			*hi = pw->lo + pw->w;
		return;
	}
}

/*
 * Expected input keys in the first level's wanted buckets under a layout:
 * slot[0..ns) are the slots of the sorted sample keys in [L, H] (sample
 * positions off .. off + ns - 1 of GS_SAMPLE); each wanted rank's sample
 * position names a slot, whose sample keys, scaled to n, estimate its keys.
 * Ranks outside the bracket go to the under/over slots under any layout and
 * are left out.
 */
static double
est_wanted(const size_t *slot, size_t ns, size_t off, const uint64_t *ur, size_t nu, uint64_t n)
{
	double		sum = 0;
	size_t		i,
				prev = SIZE_MAX;

	for (i = 0; i < nu; i++)
	{
		size_t		p = (size_t) ((double) ur[i] / (double) n * GS_SAMPLE),
					a,
					b;

		if (p < off || p - off >= ns || slot[p - off] == prev)
			continue;
		p -= off;
		prev = slot[p];
		for (a = p; a > 0 && slot[a - 1] == prev; a--)
			;
		for (b = p + 1; b < ns && slot[b] == prev; b++)
			;
		sum += (double) (b - a);
	}
	return sum * (double) n / GS_SAMPLE;
}

/*
 * Take the piecewise layout for the first level over [mn, mx] when the
 * sample says linear buckets would leave much of the input in the wanted
 * buckets (a costly gather or rescans) and the piecewise ones halve that.
 * Otherwise (e.g. uniform data) linear buckets: one table load less per key.
 * Returns 1 with *pw built, 0 (nothing to free), -1 on no memory.
 */
int
cpu_pw_choose(pw_layout *pw, uint64_t mn, uint64_t mx, const uint64_t *s, size_t ns, size_t off,
			  const uint64_t *ur, size_t nu, uint64_t n)
{
	size_t	   *slot = malloc(ns * sizeof(size_t));
	unsigned	sh = shift_for(mx - mn, GS_MAX_BITS);
	double		lin,
				pwe;
	size_t		i;

	memset(pw, 0, sizeof *pw);
	if (!slot)
		return -1;
	for (i = 0; i < ns; i++)
		slot[i] = (size_t) ((s[i] - mn) >> sh);
	lin = est_wanted(slot, ns, off, ur, nu, n);
	if (lin <= (double) n / 32)
	{
		free(slot);
		return 0;
	}
	if (!pw_build(pw, mn, mx, s, ns))
	{
		free(slot);
		cpu_pw_free(pw);
		return -1;
	}
	for (i = 0; i < ns; i++)
		slot[i] = pw_slot(pw, s[i]);
	pwe = est_wanted(slot, ns, off, ur, nu, n);
	free(slot);
	if (pwe * 2 < lin)
		return 1;
	cpu_pw_free(pw);
	return 0;
}
