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
 * Keys a[0..m) (ours to permute), b[0..m) free; the keys below a's minimum
 * number `base`; resolve unique ranks [r0, r1).
 */
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
				nch,
				b_cur;
	uint32_t   *h;
	int32_t    *map;
	child	   *ch;
	uint64_t	cum;
	gs_status	st = GS_OK;

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
	map = e->wmap[depth];
	memset(h, 0, nb * sizeof(uint32_t));
	for (i = 0; i < m; i++)
		h[(a[i] - mn) >> shift]++;

	ch = malloc((r1 - r0) * sizeof(child));
	if (!ch)
		return NOMEM(e->err);

	/* walk ranks (ascending) against the cumulative histogram */
	nch = 0;
	cum = 0;
	b_cur = 0;
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

	/* scatter wanted buckets into b */
	{
		size_t		off = 0;
		size_t		c;
		size_t	   *pos;

		pos = malloc(nch * sizeof(size_t));
		if (!pos)
		{
			free(ch);
			return NOMEM(e->err);
		}
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
	}
	free(ch);
	return st;
}
