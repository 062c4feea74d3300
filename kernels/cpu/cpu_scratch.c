/*
 * cpu_scratch.c — the CPU engine's scratch levels: tasks gathered out of the
 * input (cpu_levels.c, or the exact mode's bracket pass) are finished depth
 * first on their own copy.  Slices <= GS_SORT_MAX keys are sorted; larger
 * ones get their exact min/max (all-equal finishes at once), a histogram of
 * 2^11 .. 2^16 buckets, and a scatter of the wanted buckets into a ping-pong
 * buffer, one recursion level per wanted bucket.  Each level shrinks a
 * slice's key range by >= 2^10; deeper than GS_MAX_DEPTH a slice is sorted.
 * The engine context's per-depth workspace (eng, cpu_internal.h) lives here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define GS_MIN_BITS		11

void
cpu_eng_free(eng *e)
{
	int			i;

	free(e->bra);
	free(e->brb);
	for (i = 0; i < GS_MAX_DEPTH; i++)
	{
		free(e->whist[i]);
		free(e->wmap[i]);
	}
}

typedef struct child
{
	uint64_t	lo,
				hi,
				base,
				cnt;
	size_t		r0,
				r1;
	size_t		bucket;
} child;

/*
 * Walk the wanted ranks [r0, r1) (ascending) against the cumulative
 * histogram h of the keys in [mn, mx] (buckets of 2^shift keys): one child
 * per wanted bucket, into ch.  Returns the number of children.
 */
static size_t
scratch_children(const eng *e, const uint32_t *h, uint64_t mn, uint64_t mx, unsigned shift,
				 uint64_t base, size_t r0, size_t r1, child *ch)
{
	size_t		r,
				nch = 0,
				b_cur = 0;
	uint64_t	cum = 0;

	for (r = r0; r < r1; r++)
	{
		uint64_t	lr = e->ur[r] - base;

		while (cum + h[b_cur] <= lr)
		{
			cum += h[b_cur];
			b_cur++;
		}
		if (nch > 0 && ch[nch - 1].bucket == b_cur)
		{
			ch[nch - 1].r1 = r + 1;
			continue;
		}
		ch[nch].bucket = b_cur;
		ch[nch].lo = mn + ((uint64_t) b_cur << shift);
		ch[nch].hi = ch[nch].lo + (((uint64_t) 1 << shift) - 1);
		if (ch[nch].hi < ch[nch].lo || ch[nch].hi > mx)
			ch[nch].hi = mx;
		ch[nch].base = base + cum;
		ch[nch].cnt = h[b_cur];
		ch[nch].r0 = r;
		ch[nch].r1 = r + 1;
		nch++;
	}
	return nch;
}

/*
 * Scatter the keys of the wanted buckets of a[0..m) (nb buckets of 2^shift
 * keys from mn) into b, child by child, then finish each child on its part
 * of b (with a as its free buffer); single-key children are answered.
 */
static gs_status
scratch_scatter(eng *e, uint64_t *a, uint64_t *b, size_t m, uint64_t mn, unsigned shift,
				size_t nb, const child *ch, size_t nch, int depth)
{
	int32_t    *map = e->wmap[depth];
	size_t		off = 0;
	size_t		c,
				i,
				r;
	size_t	   *pos;
	gs_status	st = GS_OK;

	pos = malloc(nch * sizeof(size_t));
	if (!pos)
		return NOMEM(e->err);
	for (i = 0; i < nb; i++)
		map[i] = -1;
	for (c = 0; c < nch; c++)
	{
		pos[c] = off;
		if (ch[c].lo != ch[c].hi)
		{
			map[ch[c].bucket] = (int32_t) c;
			off += ch[c].cnt;
		}
	}
	for (i = 0; i < m; i++)
	{
		uint64_t	k = a[i];
		int32_t		cc = map[(k - mn) >> shift];

		if (cc >= 0)
			b[pos[cc]++] = k;
	}
	free(pos);
	off = 0;
	for (c = 0; c < nch && st == GS_OK; c++)
	{
		if (ch[c].lo == ch[c].hi)
		{
			for (r = ch[c].r0; r < ch[c].r1; r++)
				e->uval[r] = ch[c].lo;
			continue;
		}
		st = cpu_scratch_select(e, b + off, a + off, ch[c].cnt, ch[c].base,
								ch[c].r0, ch[c].r1, depth + 1);
		off += ch[c].cnt;
	}
	return st;
}

gs_status
cpu_scratch_select(eng *e, uint64_t *a, uint64_t *b, size_t m, uint64_t base,
				   size_t r0, size_t r1, int depth)
{
	uint64_t	mn,
				mx,
				range;
	unsigned	bits,
				shift;
	size_t		nb,
				i,
				r,
				nch;
	uint32_t   *h;
	child	   *ch;
	gs_status	st;

	if (r0 >= r1)
		return GS_OK;
	if (m >= GS_CHUNK && poll_interrupt(e->opt))
		return CANCELED(e->err);
	if (m <= GS_SORT_MAX || depth >= GS_MAX_DEPTH)
	{
		cpu_sort_u64(a, m);
		for (r = r0; r < r1; r++)
			e->uval[r] = a[e->ur[r] - base];
		return GS_OK;
	}
	mn = mx = a[0];
	for (i = 1; i < m; i++)
	{
		mn = a[i] < mn ? a[i] : mn;
		mx = a[i] > mx ? a[i] : mx;
	}
	if (mn == mx)
	{
		for (r = r0; r < r1; r++)
			e->uval[r] = mn;
		return GS_OK;
	}
	range = mx - mn;
	bits = floor_log2(m) - 2;
	bits = bits < GS_MIN_BITS ? GS_MIN_BITS : bits > GS_MAX_BITS ? GS_MAX_BITS : bits;
	shift = shift_for(range, bits);
	nb = (size_t) (range >> shift) + 1;

	if (!e->whist[depth])
	{
		e->whist[depth] = malloc(sizeof(uint32_t) << GS_MAX_BITS);
		e->wmap[depth] = malloc(sizeof(int32_t) << GS_MAX_BITS);
		if (!e->whist[depth] || !e->wmap[depth])
			return NOMEM(e->err);
	}
	h = e->whist[depth];
	memset(h, 0, nb * sizeof(uint32_t));
	for (i = 0; i < m; i++)
		h[(a[i] - mn) >> shift]++;

	ch = malloc((r1 - r0) * sizeof(child));
	if (!ch)
		return NOMEM(e->err);
	nch = scratch_children(e, h, mn, mx, shift, base, r0, r1, ch);
	st = scratch_scatter(e, a, b, m, mn, shift, nb, ch, nch, depth);
	free(ch);
	return st;
}
