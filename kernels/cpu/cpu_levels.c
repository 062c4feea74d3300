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
#define GS_LVL_MIN_BITS		8	/* a small task's histogram: at least 2^8 buckets */

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
 * The input levels' state: the live tasks and their children, the per-task
 * arrays the kernels read, the histogram, the gather's map and scratch
 * buffers, and the first level's piecewise layout.
 */
typedef struct lvl_state
{
	pw_layout	pw;
	task	   *tasks,
			   *kids;
	size_t		nt,				/* live tasks */
				nk,				/* their children */
				nslots;			/* the level's histogram slots (+ 1 dummy) */
	uint64_t   *tlo,
			   *tw;
	unsigned   *tsh;
	size_t	   *thoff;
	uint32_t   *h32;
	uint64_t   *h64;
	int32_t    *map;
	uint64_t   *bm;
	size_t	   *pos;
	uint64_t   *tmn,
			   *tmx;
	uint64_t   *sa,
			   *sb;
	lvl_arg		la;				/* the level's passes' argument */
} lvl_state;

static void
lvl_free(lvl_state *ls)
{
	cpu_pw_free(&ls->pw);
	free(ls->tasks);
	free(ls->kids);
	free(ls->tlo);
	free(ls->tw);
	free(ls->tsh);
	free(ls->thoff);
	free(ls->h32);
	free(ls->h64);
	free(ls->map);
	free(ls->bm);
	free(ls->pos);
	free(ls->tmn);
	free(ls->tmx);
	free(ls->sa);
	free(ls->sb);
}

/* the state for up to e->nu tasks, and the first task: [mn, mx], all ranks */
static gs_status
lvl_start(eng *e, lvl_state *ls, uint64_t n, uint64_t mn, uint64_t mx, int open,
		  const uint64_t *samp, size_t nsamp, size_t sampoff)
{
	task	   *t0;

	memset(ls, 0, sizeof *ls);
	ls->tasks = malloc(e->nu * sizeof(task));
	ls->kids = malloc(e->nu * sizeof(task));
	ls->tlo = malloc(e->nu * sizeof(uint64_t));
	ls->tw = malloc(e->nu * sizeof(uint64_t));
	ls->tsh = malloc(e->nu * sizeof(unsigned));
	ls->thoff = malloc(e->nu * sizeof(size_t));
	ls->pos = malloc(e->nu * sizeof(size_t));
	ls->tmn = malloc(e->nu * sizeof(uint64_t));
	ls->tmx = malloc(e->nu * sizeof(uint64_t));
	if (!ls->tasks || !ls->kids || !ls->tlo || !ls->tw || !ls->tsh || !ls->thoff ||
		!ls->pos || !ls->tmn || !ls->tmx)
		return NOMEM(e->err);
	ls->nt = 1;
	t0 = &ls->tasks[0];
	t0->lo = mn;
	t0->hi = mx;
	t0->base = 0;
	t0->cnt = n;
	t0->r0 = 0;
	t0->r1 = e->nu;
	t0->open = open;
	t0->pw = 0;
	if (open && samp && nsamp > 0)
	{
		int			c = cpu_pw_choose(&ls->pw, mn, mx, samp, nsamp, sampoff, e->ur, e->nu, n);

		if (c < 0)
			return NOMEM(e->err);
		t0->pw = c;
	}
	return GS_OK;
}

/*
 * The level's bucket layout: 2^bits buckets per task at most (fewer when
 * there are many tasks), each task's shift, bucket count and offset in the
 * flat histogram, copied into the arrays the kernels read.
 */
static void
lvl_layout(lvl_state *ls)
{
	task	   *tasks = ls->tasks;
	unsigned	bits = GS_MAX_BITS;
	size_t		nslots = 0,
				t;

	while (bits > 4 && (ls->nt << bits) > GS_MAX_TOTAL_BUCKETS)
		bits--;
	for (t = 0; t < ls->nt; t++)
	{
		uint64_t	range = tasks[t].hi - tasks[t].lo;
		unsigned	tbits = bits;

		/*
		 * No more buckets than keys: a task of a few thousand keys (a GROUP
		 * BY group's final call) with 2^16 buckets spent its time clearing
		 * and scanning the histogram (calloc'd 768 kB per call), not
		 * counting keys.  Fewer buckets only make its children larger.
		 */
		while (tbits > GS_LVL_MIN_BITS && ((uint64_t) 1 << tbits) > tasks[t].cnt)
			tbits--;
		tasks[t].shift = tasks[t].pw ? 0 : shift_for(range, tbits);
		tasks[t].nb = tasks[t].pw ? ls->pw.nslots : (size_t) (range >> tasks[t].shift) + 1;
		tasks[t].hoff = nslots;
		nslots += tasks[t].nb + (tasks[t].open ? 2 : 0);
		ls->tlo[t] = tasks[t].lo;
		ls->tw[t] = range;
		ls->tsh[t] = tasks[t].shift;
		ls->thoff[t] = tasks[t].hoff;
		ls->tmn[t] = UINT64_MAX;
		ls->tmx[t] = 0;
	}
	ls->nslots = nslots;
}

/* lay out the level and count its slots in one pass: ls->h64, ls->tmn/tmx */
static gs_status
lvl_histogram(eng *e, lvl_state *ls, const gs_input *in)
{
	const task *t0 = &ls->tasks[0];
	lvl_arg    *la = &ls->la;
	size_t		nslots,
				t;
	gs_status	st;

	lvl_layout(ls);
	nslots = ls->nslots;
	free(ls->h32);
	free(ls->h64);
	ls->h32 = calloc(nslots + 1, sizeof(uint32_t));
	ls->h64 = calloc(nslots + 1, sizeof(uint64_t));
	if (!ls->h32 || !ls->h64)
		return NOMEM(e->err);
	memset(la, 0, sizeof *la);
	la->nt = ls->nt;
	la->lo = ls->tlo;
	la->width = ls->tw;
	la->shift = ls->tsh;
	la->hoff = ls->thoff;
	la->dummy = nslots;
	la->under = t0->open ? t0->hoff + t0->nb : nslots;
	la->over = t0->open ? t0->hoff + t0->nb + 1 : nslots;
	la->h32 = ls->h32;
	la->h64 = ls->h64;
	la->tmn = ls->tmn;
	la->tmx = ls->tmx;
	la->nslots = nslots + 1;
	la->pent = ls->pw.ent;
	la->ptsh = ls->pw.tsh;
	st = cpu_run_pass(in, !t0->pw ? (ls->nt == 1 ? &hist1_kernels : &histn_kernels) :
					  ls->pw.nnodes > 1 ? &histpwt_kernels : &histpw_kernels,
					  la, e->opt, e->err);
	if (st != GS_OK)
		return st;
	for (t = 0; t <= nslots; t++)
		ls->h64[t] += ls->h32[t];
	return GS_OK;
}

/* key range [c->lo, c->hi] of the child in slot `slot` of task tk (task t) */
static void
child_range(const eng *e, const lvl_state *ls, const task *tk, size_t t, size_t slot, task *c)
{
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
		cpu_pw_slot_range(&ls->pw, slot, &c->lo, &c->hi);
	else
	{
		c->lo = tk->lo + ((uint64_t) slot << tk->shift);
		c->hi = c->lo + (((uint64_t) 1 << tk->shift) - 1);
		if (c->hi < c->lo || c->hi > tk->hi)
			c->hi = tk->hi;
		if (!tk->open)
		{
			/* tighten to the keys actually seen */
			c->lo = c->lo < ls->tmn[t] ? ls->tmn[t] : c->lo;
			c->hi = c->hi > ls->tmx[t] ? ls->tmx[t] : c->hi;
		}
	}
}

/*
 * Task t's children, appended to ls->kids: walk its wanted ranks against
 * its cumulative histogram; ranks in one slot share a child.
 */
static void
task_children(eng *e, lvl_state *ls, size_t t)
{
	const task *tk = &ls->tasks[t];
	const uint64_t *h = ls->h64 + tk->hoff;
	const int	open = tk->open;
	const size_t nb = tk->nb;
	task	   *kids = ls->kids;
	size_t		nk = ls->nk;
	uint64_t	cum = 0;
	size_t		first = nk;
	size_t		nv = nb + (open ? 2 : 0);
	size_t		v = 0,
				slot = 0,
				r;

	if (!open && ls->tmn[t] == ls->tmx[t])
	{
		/* all keys of this task are one value (it has >= 1 key: it holds wanted ranks) */
		for (r = tk->r0; r < tk->r1; r++)
			e->uval[r] = ls->tmn[t];
		return;
	}

	/* virtual bucket order: [under], buckets 0..nb-1, [over] */
#define SLOT_OF(v_) (!open ? (v_) : (v_) == 0 ? nb : (v_) == nv - 1 ? nb + 1 : (v_) - 1)
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
		child_range(e, ls, tk, t, slot, c);
		c->base = tk->base + cum;
		c->cnt = h[slot];
		c->r0 = r;
		c->r1 = r + 1;
	}
#undef SLOT_OF
	ls->nk = nk;
}

/* answer the single-key children, keep the rest; returns the keys they hold */
static uint64_t
lvl_keep_children(eng *e, lvl_state *ls)
{
	task	   *kids = ls->kids;
	uint64_t	total = 0;
	size_t		j = 0,
				t,
				r;

	for (t = 0; t < ls->nk; t++)
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
	ls->nk = j;
	return total;
}

/* gather the children's `total` keys into scratch, then finish each child depth first */
static gs_status
lvl_gather_finish(eng *e, lvl_state *ls, const gs_input *in, uint64_t total)
{
	const task *kids = ls->kids;
	lvl_arg    *la = &ls->la;
	size_t		nslots = ls->nslots,
				t;
	uint64_t	off = 0;
	gs_status	st;

	ls->map = malloc((nslots + 1) * sizeof(int32_t));
	ls->bm = calloc(nslots / 64 + 1, sizeof(uint64_t));
	ls->sa = malloc((size_t) total * sizeof(uint64_t) + 8);
	ls->sb = malloc((size_t) total * sizeof(uint64_t) + 8);
	if (!ls->map || !ls->bm || !ls->sa || !ls->sb)
		return NOMEM(e->err);
	for (t = 0; t <= nslots; t++)
		ls->map[t] = -1;
	for (t = 0; t < ls->nk; t++)
	{
		ls->map[kids[t].hoff] = (int32_t) t;
		ls->bm[kids[t].hoff >> 6] |= (uint64_t) 1 << (kids[t].hoff & 63);
		ls->pos[t] = off;
		off += kids[t].cnt;
	}
	la->map = ls->map;
	la->bm = ls->bm;
	la->pos = ls->pos;
	la->scratch = ls->sa;
	st = cpu_run_pass(in, !ls->tasks[0].pw ? (ls->nt == 1 ? &gath1_kernels : &gathn_kernels) :
					  ls->pw.nnodes > 1 ? &gathpwt_kernels : &gathpw_kernels,
					  la, e->opt, e->err);
	if (st != GS_OK)
		return st;
	off = 0;
	for (t = 0; t < ls->nk && st == GS_OK; t++)
	{
		st = cpu_scratch_select(e, ls->sa + off, ls->sb + off, (size_t) kids[t].cnt,
								kids[t].base, kids[t].r0, kids[t].r1, 0);
		off += kids[t].cnt;
	}
	return st;
}

/*
 * The input levels.  Resolves unique ranks [0, nu) given the input's min/max
 * (open: a sample bracket, with slots for keys outside).  samp[0..nsamp): the
 * sorted sample keys inside [mn, mx] at sample positions sampoff.., or NULL.
 */
gs_status
cpu_input_levels(eng *e, const gs_input *in, uint64_t n, uint64_t mn, uint64_t mx, int open,
				 const uint64_t *samp, size_t nsamp, size_t sampoff)
{
	lvl_state	ls;
	gs_status	st;
	uint64_t	limit;

	/* gather when the wanted buckets hold at most this many keys */
	limit = n / 4;
	if (limit < ((uint64_t) 1 << 16))
		limit = (uint64_t) 1 << 16;

	st = lvl_start(e, &ls, n, mn, mx, open, samp, nsamp, sampoff);
	while (st == GS_OK)
	{
		uint64_t	total;
		size_t		t;

		st = lvl_histogram(e, &ls, in);
		if (st != GS_OK)
			break;
		ls.nk = 0;
		for (t = 0; t < ls.nt; t++)
			task_children(e, &ls, t);
		total = lvl_keep_children(e, &ls);
		if (ls.nk == 0)
			break;
		if (poll_interrupt(e->opt))
		{
			st = CANCELED(e->err);
			break;
		}
		if (total <= limit)
		{
			st = lvl_gather_finish(e, &ls, in, total);
			break;
		}

		/* rescan the input next level, filtered to the children's ranges */
		{
			task	   *tmp = ls.tasks;

			ls.tasks = ls.kids;
			ls.kids = tmp;
			ls.nt = ls.nk;
		}
	}
	lvl_free(&ls);
	return st;
}
