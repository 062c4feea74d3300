/*
 * cpu_levels.c — the input levels of the CPU engine's exact mode: tasks
 * filtered out of the input, level by level.
 *
 * For every live "task" (a key range [lo,hi], the number of keys below lo,
 * and the wanted ranks that fall inside it) a level builds a histogram of
 * (key - lo) >> shift, where shift is the smallest that maps hi - lo onto at
 * most 2^bits buckets (bits = 11..16), prefix-sums it and finds each wanted
 * rank's bucket.  Each wanted bucket becomes a child task with range
 * [lo + b<<shift, ...] and therefore a key range at least 2^(bits-1) times
 * narrower.  Children whose range is a single key are answered at once.  If
 * the children hold few keys in total (<= the gather limit) they are
 * gathered from the input into scratch in one pass and finished there
 * (cpu_scratch.c), otherwise the next level rescans the input filtered to
 * the live ranges (bounded memory).
 *
 * The first level may be open (a sample bracket [L, H] with slots for keys
 * below and above it, cpu_exact.c) and laid out piecewise (cpu_piecewise.c).
 * Every level shrinks a task's key range by >= 2^10 (levels with very many
 * tasks use fewer buckets per task, >= 2^4), so the number of levels is
 * bounded by the key width; each level is O(n) plus O(buckets).
 *
 * The per-key kernels (GS_KERNELS) and the helpers they call (lvl_task,
 * lvl_index, pw_tree_slot) stay in this file or in cpu_internal.h as static
 * inline, so that they are inlined into the kernels.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define GS_MAX_TOTAL_BUCKETS ((size_t) 1 << 21)	/* per input level, all tasks */

typedef struct task
{
	uint64_t	lo,
				hi;				/* key range */
	uint64_t	base;			/* keys below lo */
	uint64_t	cnt;			/* keys in [lo,hi] */
	size_t		r0,
				r1;				/* wanted unique ranks [r0, r1) */
	unsigned	shift;
	size_t		nb;				/* buckets */
	size_t		hoff;			/* offset of its buckets in the flat arrays */
	int			open;			/* + slots for keys < lo and > hi (level 1) */
	int			pw;				/* buckets laid out by the pw_layout (level 1) */
} task;

/* flat index of key k: hoff + bucket, or `dummy` when k is in no task */
typedef struct lvl_arg
{
	size_t		nt;
	const uint64_t *lo;			/* nt, sorted */
	const uint64_t *width;		/* hi - lo */
	const unsigned *shift;
	const size_t *hoff;
	size_t		dummy;
	size_t		under,
				over;			/* single task: slots of keys < lo, > hi */
	const uint32_t *pent;		/* pw_layout entries (piecewise first level) */
	unsigned	ptsh;			/* ... and their width, log2 */
	/* histogram */
	uint32_t   *h32;
	uint64_t   *h64;
	uint64_t   *tmn,
			   *tmx;			/* per task: min/max of its keys */
	size_t		nslots;
	size_t		since_flush;
	/* gather */
	const int32_t *map;			/* flat index -> child, -1 */
	const uint64_t *bm;			/* bitmap of flat indexes with a child */
	size_t	   *pos;			/* per child write position in scratch */
	uint64_t   *scratch;
} lvl_arg;

/* task holding key k, or nt */
static inline size_t
lvl_task(const lvl_arg *a, uint64_t k)
{
	size_t		lo = 0,
				len = a->nt;

	while (len > 1)
	{
		size_t		half = len / 2;

		lo = (a->lo[lo + half] <= k) ? lo + half : lo;
		len -= half;
	}
	if (a->lo[lo] > k || k - a->lo[lo] > a->width[lo])
		return a->nt;
	return lo;
}

static inline size_t
lvl_index(const lvl_arg *a, uint64_t k)
{
	size_t		lo = 0,
				len = a->nt;
	uint64_t	d;

	/* last task with lo <= k */
	while (len > 1)
	{
		size_t		half = len / 2;

		lo = (a->lo[lo + half] <= k) ? lo + half : lo;
		len -= half;
	}
	if (a->lo[lo] > k)
		return a->dummy;
	d = k - a->lo[lo];
	if (d > a->width[lo])
		return a->dummy;
	return a->hoff[lo] + (size_t) (d >> a->shift[lo]);
}

/* single task: idx = d <= width ? d >> shift : dummy */
GS_KERNELS(hist1, lvl_arg,
		   uint32_t *h = a->h32; const uint64_t lo = a->lo[0]; const uint64_t w = a->width[0];
		   const unsigned sh = a->shift[0]; const size_t un = a->under; const size_t ov = a->over;
		   uint64_t mn = a->tmn[0]; uint64_t mx = a->tmx[0]; uint32_t cu = 0; uint32_t cout = 0;,
		   /* out-of-range keys are counted in registers: one memory slot for
			* them all would serialise on store-to-load forwarding */
		   uint64_t d = k - lo;
		   cu += k < lo;
		   if (d <= w)
		   {
			   h[d >> sh]++;
			   mn = k < mn ? k : mn;
			   mx = k > mx ? k : mx;
		   }
		   else
			   cout++;,
		   a->tmn[0] = mn; a->tmx[0] = mx; h[un] += cu; h[ov] += cout - cu;)

/* piecewise first-level histogram; SLOT: the slot of the offset d */
#define HISTPW_SETUP \
	uint32_t *h = a->h32; const uint64_t lo = a->lo[0]; const uint64_t w = a->width[0]; \
	const uint32_t *ent = a->pent; const unsigned tsh = a->ptsh; \
	const size_t un = a->under; const size_t ov = a->over; uint32_t cu = 0; uint32_t cout = 0;
#define HISTPW_BODY(SLOT) \
	uint64_t d = k - lo; \
	cu += k < lo; \
	if (d <= w) \
		h[(SLOT)]++; \
	else \
		cout++;
#define HISTPW_FINISH h[un] += cu; h[ov] += cout - cu;

GS_KERNELS(histpw, lvl_arg, HISTPW_SETUP const uint64_t tm = (UINT64_C(1) << tsh) - 1;,
		   HISTPW_BODY(PW_SLOT(ent, tsh, tm, d)), HISTPW_FINISH)

GS_KERNELS(histn, lvl_arg, uint32_t *h = a->h32; uint64_t *tmn = a->tmn; uint64_t *tmx = a->tmx;,
		   size_t t = lvl_task(a, k);
		   if (t < a->nt)
		   {
			   h[a->hoff[t] + (size_t) ((k - a->lo[t]) >> a->shift[t])]++;
			   tmn[t] = k < tmn[t] ? k : tmn[t];
			   tmx[t] = k > tmx[t] ? k : tmx[t];
		   }
		   ,)

/*
 * First-level gather: keys whose slot is marked go to their task's part of
 * the scratch buffer, out-of-range keys to the below/above tasks if those are
 * kept.  SLOT: the slot of the offset d (linear or piecewise first level).
 */
#define GATH1_SETUP \
	const int32_t *map = a->map; const uint64_t lo = a->lo[0]; const uint64_t w = a->width[0]; \
	size_t *pos = a->pos; uint64_t *sc = a->scratch; \
	const uint64_t *bm = a->bm; const int32_t cun = map[a->under]; const int32_t cov = map[a->over];
#define GATH1_BODY(SLOT) \
	uint64_t d = k - lo; \
	if (d <= w) \
	{ \
		size_t ix = (SLOT); \
		if ((bm[ix >> 6] >> (ix & 63)) & 1) \
			sc[pos[map[ix]]++] = k; \
	} \
	else \
	{ \
		int32_t c = k < lo ? cun : cov; \
		if (c >= 0) \
			sc[pos[c]++] = k; \
	}

GS_KERNELS(gath1, lvl_arg, GATH1_SETUP const unsigned sh = a->shift[0];,
		   GATH1_BODY((size_t) (d >> sh)),)
GS_KERNELS(gathpw, lvl_arg,
		   GATH1_SETUP const uint32_t *ent = a->pent; const unsigned tsh = a->ptsh;
		   const uint64_t tm = (UINT64_C(1) << tsh) - 1;,
		   GATH1_BODY(PW_SLOT(ent, tsh, tm, d)),)

/* the same two with child tables (pw_tree_slot) */
GS_KERNELS(histpwt, lvl_arg, HISTPW_SETUP, HISTPW_BODY(pw_tree_slot(ent, tsh, d)), HISTPW_FINISH)
GS_KERNELS(gathpwt, lvl_arg,
		   GATH1_SETUP const uint32_t *ent = a->pent; const unsigned tsh = a->ptsh;,
		   GATH1_BODY(pw_tree_slot(ent, tsh, d)),)

GS_KERNELS(gathn, lvl_arg,
		   const int32_t *map = a->map; size_t *pos = a->pos; uint64_t *sc = a->scratch;,
		   int32_t c = map[lvl_index(a, k)]; if (c >= 0) sc[pos[c]++] = k;,
		   )

static void
hist_flush(void *arg_, size_t n)
{
	lvl_arg    *a = (lvl_arg *) arg_;

	a->since_flush += n;
	if (a->since_flush > (size_t) UINT32_MAX - GS_CHUNK)
	{
		size_t		i;

		for (i = 0; i < a->nslots; i++)
		{
			a->h64[i] += a->h32[i];
			a->h32[i] = 0;
		}
		a->since_flush = 0;
	}
}

static const kernset hist1_kernels = {hist1_16, hist1_32, hist1_64, hist_flush};
static const kernset histn_kernels = {histn_16, histn_32, histn_64, hist_flush};
static const kernset gath1_kernels = {gath1_16, gath1_32, gath1_64, NULL};
static const kernset gathn_kernels = {gathn_16, gathn_32, gathn_64, NULL};
static const kernset histpw_kernels = {histpw_16, histpw_32, histpw_64, hist_flush};
static const kernset gathpw_kernels = {gathpw_16, gathpw_32, gathpw_64, NULL};
static const kernset histpwt_kernels = {histpwt_16, histpwt_32, histpwt_64, hist_flush};
static const kernset gathpwt_kernels = {gathpwt_16, gathpwt_32, gathpwt_64, NULL};

/*
 * The input levels.  Resolves unique ranks [0, nu) given the input's min/max
 * (open: a sample bracket, with slots for keys outside).  samp[0..nsamp): the
 * sorted sample keys inside [mn, mx] at sample positions sampoff.., or NULL.
 */
gs_status
cpu_input_levels(eng *e, const gs_input *in, uint64_t n, uint64_t mn, uint64_t mx, int open,
			 const uint64_t *samp, size_t nsamp, size_t sampoff)
{
	pw_layout	pw;
	task	   *tasks = NULL,
			   *kids = NULL;
	size_t		nt = 1,
				nk,
				t,
				r;
	uint64_t   *tlo = NULL,
			   *tw = NULL;
	unsigned   *tsh = NULL;
	size_t	   *thoff = NULL;
	uint32_t   *h32 = NULL;
	uint64_t   *h64 = NULL;
	int32_t    *map = NULL;
	uint64_t   *bm = NULL;
	size_t	   *pos = NULL;
	uint64_t   *tmn = NULL,
			   *tmx = NULL;
	uint64_t   *sa = NULL,
			   *sb = NULL;
	gs_status	st = GS_OK;
	uint64_t	limit;

	memset(&pw, 0, sizeof pw);
	/* gather when the wanted buckets hold at most this many keys */
	limit = n / 4;
	if (limit < ((uint64_t) 1 << 16))
		limit = (uint64_t) 1 << 16;

	tasks = malloc(e->nu * sizeof(task));
	kids = malloc(e->nu * sizeof(task));
	tlo = malloc(e->nu * sizeof(uint64_t));
	tw = malloc(e->nu * sizeof(uint64_t));
	tsh = malloc(e->nu * sizeof(unsigned));
	thoff = malloc(e->nu * sizeof(size_t));
	pos = malloc(e->nu * sizeof(size_t));
	tmn = malloc(e->nu * sizeof(uint64_t));
	tmx = malloc(e->nu * sizeof(uint64_t));
	if (!tasks || !kids || !tlo || !tw || !tsh || !thoff || !pos || !tmn || !tmx)
	{
		st = NOMEM(e->err);
		goto done;
	}
	tasks[0].lo = mn;
	tasks[0].hi = mx;
	tasks[0].base = 0;
	tasks[0].cnt = n;
	tasks[0].r0 = 0;
	tasks[0].r1 = e->nu;
	tasks[0].open = open;
	tasks[0].pw = 0;
	if (open && samp && nsamp > 0)
	{
		int			c = cpu_pw_choose(&pw, mn, mx, samp, nsamp, sampoff, e->ur, e->nu, n);

		if (c < 0)
		{
			st = NOMEM(e->err);
			goto done;
		}
		tasks[0].pw = c;
	}

	for (;;)
	{
		unsigned	bits;
		size_t		nslots;
		lvl_arg		la;
		uint64_t	total;

		/* bucket layout */
		bits = GS_MAX_BITS;
		while (bits > 4 && (nt << bits) > GS_MAX_TOTAL_BUCKETS)
			bits--;
		nslots = 0;
		for (t = 0; t < nt; t++)
		{
			uint64_t	range = tasks[t].hi - tasks[t].lo;

			tasks[t].shift = tasks[t].pw ? 0 : shift_for(range, bits);
			tasks[t].nb = tasks[t].pw ? pw.nslots : (size_t) (range >> tasks[t].shift) + 1;
			tasks[t].hoff = nslots;
			nslots += tasks[t].nb + (tasks[t].open ? 2 : 0);
			tlo[t] = tasks[t].lo;
			tw[t] = range;
			tsh[t] = tasks[t].shift;
			thoff[t] = tasks[t].hoff;
			tmn[t] = UINT64_MAX;
			tmx[t] = 0;
		}
		free(h32);
		free(h64);
		h32 = calloc(nslots + 1, sizeof(uint32_t));
		h64 = calloc(nslots + 1, sizeof(uint64_t));
		if (!h32 || !h64)
		{
			st = NOMEM(e->err);
			goto done;
		}
		memset(&la, 0, sizeof la);
		la.nt = nt;
		la.lo = tlo;
		la.width = tw;
		la.shift = tsh;
		la.hoff = thoff;
		la.dummy = nslots;
		la.under = tasks[0].open ? tasks[0].hoff + tasks[0].nb : nslots;
		la.over = tasks[0].open ? tasks[0].hoff + tasks[0].nb + 1 : nslots;
		la.h32 = h32;
		la.h64 = h64;
		la.tmn = tmn;
		la.tmx = tmx;
		la.nslots = nslots + 1;
		la.pent = pw.ent;
		la.ptsh = pw.tsh;
		st = cpu_run_pass(in, !tasks[0].pw ? (nt == 1 ? &hist1_kernels : &histn_kernels) :
					  pw.nnodes > 1 ? &histpwt_kernels : &histpw_kernels,
					  &la, e->opt, e->err);
		if (st != GS_OK)
			goto done;
		for (t = 0; t <= nslots; t++)
			h64[t] += h32[t];

		/* children */
		nk = 0;
		total = 0;
		for (t = 0; t < nt; t++)
		{
			const task *tk = &tasks[t];
			const uint64_t *h = h64 + tk->hoff;
			uint64_t	cum = 0;
			size_t		first = nk;
			size_t		nv = tk->nb + (tk->open ? 2 : 0);
			size_t		v = 0,
						slot = 0;

			if (!tk->open && tmn[t] == tmx[t])
			{
				/* all keys of this task are one value (it has >= 1 key: it holds wanted ranks) */
				for (r = tk->r0; r < tk->r1; r++)
					e->uval[r] = tmn[t];
				continue;
			}

			/* virtual bucket order: [under], buckets 0..nb-1, [over] */
#define SLOT_OF(v_) (!tk->open ? (v_) : (v_) == 0 ? tk->nb : (v_) == nv - 1 ? tk->nb + 1 : (v_) - 1)
			for (r = tk->r0; r < tk->r1; r++)
			{
				uint64_t	lr = e->ur[r] - tk->base;
				task	   *c;

				slot = SLOT_OF(v);
				while (cum + h[slot] <= lr)
				{
					cum += h[slot];
					v++;
					slot = SLOT_OF(v);
				}
				if (nk > first && kids[nk - 1].hoff == tk->hoff + slot)
				{
					kids[nk - 1].r1 = r + 1;
					continue;
				}
				c = &kids[nk++];
				c->hoff = tk->hoff + slot;	/* flat slot, for the gather map */
				c->open = 0;
				c->pw = 0;
				if (slot == tk->nb)
				{
					c->lo = 0;
					c->hi = tk->lo - 1;
				}
				else if (slot == tk->nb + 1)
				{
					c->lo = tk->hi + 1;
					c->hi = e->keymax;
				}
				else if (tk->pw)
					cpu_pw_slot_range(&pw, slot, &c->lo, &c->hi);
				else
				{
					c->lo = tk->lo + ((uint64_t) slot << tk->shift);
					c->hi = c->lo + (((uint64_t) 1 << tk->shift) - 1);
					if (c->hi < c->lo || c->hi > tk->hi)
						c->hi = tk->hi;
					if (!tk->open)
					{
						/* tighten to the keys actually seen */
						c->lo = c->lo < tmn[t] ? tmn[t] : c->lo;
						c->hi = c->hi > tmx[t] ? tmx[t] : c->hi;
					}
				}
				c->base = tk->base + cum;
				c->cnt = h[slot];
				c->r0 = r;
				c->r1 = r + 1;
			}
#undef SLOT_OF
		}
		/* answer single-key children, keep the rest */
		{
			size_t		j = 0;

			for (t = 0; t < nk; t++)
			{
				if (kids[t].lo == kids[t].hi)
				{
					for (r = kids[t].r0; r < kids[t].r1; r++)
						e->uval[r] = kids[t].lo;
					continue;
				}
				total += kids[t].cnt;
				kids[j++] = kids[t];
			}
			nk = j;
		}
		if (nk == 0)
			break;
		if (poll_interrupt(e->opt))
		{
			st = CANCELED(e->err);
			goto done;
		}

		if (total <= limit)
		{
			/* gather into scratch, then finish each child depth first */
			uint64_t	off = 0;

			map = malloc((nslots + 1) * sizeof(int32_t));
			bm = calloc(nslots / 64 + 1, sizeof(uint64_t));
			sa = malloc((size_t) total * sizeof(uint64_t) + 8);
			sb = malloc((size_t) total * sizeof(uint64_t) + 8);
			if (!map || !bm || !sa || !sb)
			{
				st = NOMEM(e->err);
				goto done;
			}
			for (t = 0; t <= nslots; t++)
				map[t] = -1;
			for (t = 0; t < nk; t++)
			{
				map[kids[t].hoff] = (int32_t) t;
				bm[kids[t].hoff >> 6] |= (uint64_t) 1 << (kids[t].hoff & 63);
				pos[t] = off;
				off += kids[t].cnt;
			}
			la.map = map;
			la.bm = bm;
			la.pos = pos;
			la.scratch = sa;
			st = cpu_run_pass(in, !tasks[0].pw ? (nt == 1 ? &gath1_kernels : &gathn_kernels) :
						  pw.nnodes > 1 ? &gathpwt_kernels : &gathpw_kernels,
						  &la, e->opt, e->err);
			if (st != GS_OK)
				goto done;
			off = 0;
			for (t = 0; t < nk && st == GS_OK; t++)
			{
				st = cpu_scratch_select(e, sa + off, sb + off, (size_t) kids[t].cnt, kids[t].base,
									kids[t].r0, kids[t].r1, 0);
				off += kids[t].cnt;
			}
			break;
		}

		/* rescan the input next level, filtered to the children's ranges */
		{
			task	   *tmp = tasks;

			tasks = kids;
			kids = tmp;
			nt = nk;
		}
	}

done:
	cpu_pw_free(&pw);
	free(tasks);
	free(kids);
	free(tlo);
	free(tw);
	free(tsh);
	free(thoff);
	free(h32);
	free(h64);
	free(map);
	free(bm);
	free(pos);
	free(tmn);
	free(tmx);
	free(sa);
	free(sb);
	return st;
}
