/*
 * cpu_select.c — gpuselect's CPU selection engine (no PostgreSQL includes).
 *
 * Exact multiselect (gs_cpu_select): MSD radix selection with range narrowing.
 *
 *   pass 0   min/max of the input.  If min == max every rank is min.
 *   level k  for every live "task" (a key range [lo,hi], the number of keys
 *            below lo, and the wanted ranks that fall inside it) build a
 *            histogram of (key - lo) >> shift, where shift is the smallest
 *            that maps hi - lo onto at most 2^bits buckets (bits = 11..16),
 *            prefix-sum it and find each wanted rank's bucket.  Each wanted
 *            bucket becomes a child task with range [lo + b<<shift, ...] and
 *            therefore a key range at least 2^(bits-1) times narrower.
 *            Children whose range is a single key are answered at once.
 *            If the children hold few keys in total (<= scratch limit) they
 *            are gathered from the input into scratch in one pass, otherwise
 *            the next level rescans the input filtered to the live ranges
 *            (bounded memory).
 *   level 1  on large inputs the first level is the sample bracket [L, H]
 *            (plus slots below/above it).  When the sample shows its key
 *            range mostly empty (float8 values straddling zero, far-apart
 *            clusters) the buckets are spread piecewise by the sample's
 *            density instead of linearly (pw_layout); entries where the
 *            sample clumps (clusters far narrower than an entry) are split
 *            again by child tables.
 *   scratch  gathered tasks are finished depth first on their own copy:
 *            slices <= GS_SORT_MAX keys are sorted; larger ones get their
 *            exact min/max (all-equal finishes at once), a histogram, and a
 *            scatter of the wanted buckets into a ping-pong buffer.
 *
 * Every level shrinks a task's key range by >= 2^10 (input levels with very
 * many tasks use fewer buckets per task, >= 2^4), so the number of levels is
 * bounded by the key width; each level is O(n) plus O(buckets).  Termination
 * and bounded work hold for every distribution.  The input is never written.
 *
 * Approximate multiselect (gs_cpu_select_approx): one level of SampleSelect.
 *   B = approx_buckets (default 1024), n = number of keys,
 *   sample size  s = min(GS_APPROX_OVERSAMPLE * B, n)  (32 * B),
 *   sample i (0 <= i < s) is the key at global position
 *                    gs_splitmix64(seed + i) % n
 *   (global position = index into the concatenation of the segments;
 *   gs_splitmix64 is the contract's, gs_engine.h),
 *   the sample is sorted and the splitters are the sample keys at positions
 *   floor(j * s / B) for j = 1 .. B-1, deduplicated.
 *   One pass over the input counts for every distinct splitter v the keys
 *   < v and == v, and finds the input's min and max with their counts.  Each
 *   candidate (min, splitters, max) then has an exact rank range
 *   [less, less + equal - 1]; a wanted rank gets the candidate whose range is
 *   nearest (distance 0 inside it; ties go to the lower key).  The CUDA
 *   engine uses the same sample, so both give the same answers for a seed.
 *   The counting pass finds a key's splitter through a table linear over
 *   the splitters' key range, with the largest gap folded out when it is
 *   most of that range (float keys of both signs, far clusters: AP_FOLD);
 *   the lookup only changes speed, never the counts.
 *
 * Interrupts: opt->interrupt is polled between passes/levels and after every
 * GS_CHUNK keys of any pass.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_engine.h"

#define GS_CHUNK		((size_t) 1 << 20)	/* keys between interrupt polls */
#define GS_SORT_MAX		2048	/* scratch slices this small are sorted */
#define GS_MAX_BITS		16		/* buckets per histogram: <= 2^16 */
#define GS_MIN_BITS		11
#define GS_MAX_TOTAL_BUCKETS ((size_t) 1 << 21)	/* per input level, all tasks */
#define GS_MAX_DEPTH	24		/* scratch recursion; deeper -> sort */
#define GS_SAMPLE_MIN_N	((size_t) 1 << 16)	/* sample-bracketed first level from here */
#define GS_SAMPLE		16384	/* its sample size */
#define GS_SAMPLE_MARGIN 384	/* ~6 sigma of a sample quantile's position */
#define GS_SAMPLE_TAIL	64		/* L/H at least this far inside the sample */
#define GS_EXACT_SEED	UINT64_C(0x5E1EC7)
#define GS_FEW_DISTINCT	64		/* sample with <= this many values: counting pass */
#define GS_APPROX_TBL_BITS 12	/* approx: splitter lookup table of 4096 entries, */
#define GS_APPROX_TBL_MAX_BITS 16	/* ... up to 65536 */

/* ------------------------------------------------------------------ */
/* errors, interrupts                                                   */
/* ------------------------------------------------------------------ */

static gs_status
set_err(gs_error *err, gs_status st, const char *msg)
{
	if (err)
	{
		err->status = st;
		snprintf(err->message, sizeof err->message, "%s", msg);
	}
	return st;
}

static int
poll_interrupt(const gs_options *opt)
{
	return opt && opt->interrupt && opt->interrupt(opt->interrupt_arg) != 0;
}

#define CANCELED(err) set_err((err), GS_ERR_CANCELED, "selection canceled by interrupt")
#define NOMEM(err) set_err((err), GS_ERR_NOMEM, "out of memory in CPU selection engine")

/* ------------------------------------------------------------------ */
/* small helpers                                                        */
/* ------------------------------------------------------------------ */

static inline uint64_t
load_key(const void *p, unsigned kb, size_t i)
{
	switch (kb)
	{
		case 2:
			{
				uint16_t	v;

				memcpy(&v, (const char *) p + 2 * i, 2);
				return v;
			}
		case 4:
			{
				uint32_t	v;

				memcpy(&v, (const char *) p + 4 * i, 4);
				return v;
			}
		default:
			{
				uint64_t	v;

				memcpy(&v, (const char *) p + 8 * i, 8);
				return v;
			}
	}
}

static unsigned
floor_log2(uint64_t x)
{
	unsigned	r = 0;

	while (x >>= 1)
		r++;
	return r;
}

/* smallest shift such that range >> shift < 2^bits */
static unsigned
shift_for(uint64_t range, unsigned bits)
{
	unsigned	s = 0;

	while (s < 64 && (range >> s) >= ((uint64_t) 1 << bits))
		s++;
	return s;
}

/* ---- introsort on uint64 (small scratch slices) ---- */

static void
insertion_sort_u64(uint64_t *a, size_t n)
{
	size_t		i;

	for (i = 1; i < n; i++)
	{
		uint64_t	v = a[i];
		size_t		j = i;

		while (j > 0 && a[j - 1] > v)
		{
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

static void
sift_down_u64(uint64_t *a, size_t start, size_t n)
{
	size_t		root = start;

	for (;;)
	{
		size_t		child = 2 * root + 1;
		uint64_t	t;

		if (child >= n)
			break;
		if (child + 1 < n && a[child] < a[child + 1])
			child++;
		if (a[root] >= a[child])
			break;
		t = a[root];
		a[root] = a[child];
		a[child] = t;
		root = child;
	}
}

static void
heap_sort_u64(uint64_t *a, size_t n)
{
	size_t		i;

	if (n < 2)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down_u64(a, i, n);
	for (i = n - 1; i > 0; i--)
	{
		uint64_t	t = a[0];

		a[0] = a[i];
		a[i] = t;
		sift_down_u64(a, 0, i);
	}
}

static void
intro_sort_u64(uint64_t *a, size_t n, unsigned depth)
{
	while (n > 24)
	{
		uint64_t	x,
					y,
					z,
					p;
		size_t		i,
					j;

		if (depth == 0)
		{
			heap_sort_u64(a, n);
			return;
		}
		depth--;
		x = a[0];
		y = a[n / 2];
		z = a[n - 1];
		p = (x < y) ? ((y < z) ? y : (x < z ? z : x)) : ((x < z) ? x : (y < z ? z : y));
		/* Hoare partition */
		i = 0;
		j = n - 1;
		for (;;)
		{
			uint64_t	t;

			while (a[i] < p)
				i++;
			while (a[j] > p)
				j--;
			if (i >= j)
				break;
			t = a[i];
			a[i] = a[j];
			a[j] = t;
			i++;
			j--;
		}
		/* [0, j] <= p <= [j+1, n) */
		if (j + 1 < n - j - 1)
		{
			intro_sort_u64(a, j + 1, depth);
			a += j + 1;
			n -= j + 1;
		}
		else
		{
			intro_sort_u64(a + j + 1, n - j - 1, depth);
			n = j + 1;
		}
	}
	insertion_sort_u64(a, n);
}

static void
sort_u64(uint64_t *a, size_t n)
{
	if (n > 1)
		intro_sort_u64(a, n, 2 * (floor_log2(n) + 1));
}

/* ------------------------------------------------------------------ */
/* pass driver: iterate every segment in chunks, one kernel per width   */
/* ------------------------------------------------------------------ */

typedef void (*kern_fn) (const void *keys, size_t n, void *arg);

typedef struct kernset
{
	kern_fn		k16;
	kern_fn		k32;
	kern_fn		k64;
	void		(*after_chunk) (void *arg, size_t n);	/* may be NULL */
} kernset;

static gs_status
run_pass(const gs_input *in, const kernset *ks, void *arg,
		 const gs_options *opt, gs_error *err)
{
	kern_fn		k = in->key_bytes == 2 ? ks->k16 : in->key_bytes == 4 ? ks->k32 : ks->k64;
	size_t		s;

	for (s = 0; s < in->nsegs; s++)
	{
		const char *p = (const char *) in->segs[s].keys;
		size_t		left = in->segs[s].n;

		while (left > 0)
		{
			size_t		c = left < GS_CHUNK ? left : GS_CHUNK;

			k(p, c, arg);
			if (ks->after_chunk)
				ks->after_chunk(arg, c);
			p += c * in->key_bytes;
			left -= c;
			if (c == GS_CHUNK && poll_interrupt(opt))
				return CANCELED(err);
		}
	}
	if (poll_interrupt(opt))
		return CANCELED(err);
	return GS_OK;
}

/* Instantiate a kernel body for the three widths.  BODY uses `k` (the key,
 * widened to uint64) and `a` (the typed argument). */
#define GS_KERNELS(NAME, ARGT, SETUP, BODY, FINISH) \
static void NAME##_16(const void *kp_, size_t n_, void *arg_) \
{ const uint16_t *kp = (const uint16_t *) kp_; ARGT *a = (ARGT *) arg_; size_t i_; SETUP \
  for (i_ = 0; i_ < n_; i_++) { uint64_t k = kp[i_]; BODY } FINISH } \
static void NAME##_32(const void *kp_, size_t n_, void *arg_) \
{ const uint32_t *kp = (const uint32_t *) kp_; ARGT *a = (ARGT *) arg_; size_t i_; SETUP \
  for (i_ = 0; i_ < n_; i_++) { uint64_t k = kp[i_]; BODY } FINISH } \
static void NAME##_64(const void *kp_, size_t n_, void *arg_) \
{ const uint64_t *kp = (const uint64_t *) kp_; ARGT *a = (ARGT *) arg_; size_t i_; SETUP \
  for (i_ = 0; i_ < n_; i_++) { uint64_t k = kp[i_]; BODY } FINISH }

/* ---- min/max ---- */

typedef struct mm_arg
{
	uint64_t	mn,
				mx;
} mm_arg;

GS_KERNELS(mm, mm_arg,
		   uint64_t mn = a->mn; uint64_t mx = a->mx;,
		   mn = k < mn ? k : mn; mx = k > mx ? k : mx;,
		   a->mn = mn; a->mx = mx;)

static const kernset mm_kernels = {mm_16, mm_32, mm_64, NULL};

/* ------------------------------------------------------------------ */
/* input levels: tasks filtered out of the input                        */
/* ------------------------------------------------------------------ */

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

/*
 * Piecewise-linear first level (see pw_layout): entry j = d >> tsh holds its
 * first slot and its sub-bucket shift.  One small-table load more than hist1.
 */
#define PW_OFF_BITS 26
#define PW_OFF_MASK ((UINT32_C(1) << PW_OFF_BITS) - 1)
#define PW_SLOT(ent_, tsh_, tm_, d_) \
	((size_t) (ent_[(d_) >> (tsh_)] & PW_OFF_MASK) + \
	 (size_t) (((d_) & (tm_)) >> (ent_[(d_) >> (tsh_)] >> PW_OFF_BITS)))
#define GS_PW_ENT_BITS	12		/* entries per pw_layout table, log2 */
#define PW_NODE			63		/* "sub" of an entry refined into a child table */

/*
 * Slot of offset d when the layout has child tables (pw_build refines an
 * entry whose sample keys sit in a tiny part of it): table t holds entries
 * t << GS_PW_ENT_BITS ..; an entry marked PW_NODE names the child table that
 * splits its 2^sh keys into 2^GS_PW_ENT_BITS entries.  At most a few steps:
 * each one narrows the entry width by 2^GS_PW_ENT_BITS.
 */
static inline size_t
pw_tree_slot(const uint32_t *ent, unsigned tsh, uint64_t d)
{
	uint32_t	e = ent[d >> tsh];
	unsigned	sh = tsh;

	while ((e >> PW_OFF_BITS) == PW_NODE)
	{
		sh -= GS_PW_ENT_BITS;
		e = ent[((size_t) (e & PW_OFF_MASK) << GS_PW_ENT_BITS) +
				(size_t) ((d >> sh) & ((UINT64_C(1) << GS_PW_ENT_BITS) - 1))];
	}
	return (size_t) (e & PW_OFF_MASK) +
		(size_t) ((d & ((UINT64_C(1) << sh) - 1)) >> (e >> PW_OFF_BITS));
}

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

static const kernset hist1_kernels = {hist1_16, hist1_32, hist1_64, hist_flush};
static const kernset histn_kernels = {histn_16, histn_32, histn_64, hist_flush};
static const kernset gath1_kernels = {gath1_16, gath1_32, gath1_64, NULL};
static const kernset gathn_kernels = {gathn_16, gathn_32, gathn_64, NULL};
static const kernset histpw_kernels = {histpw_16, histpw_32, histpw_64, hist_flush};
static const kernset gathpw_kernels = {gathpw_16, gathpw_32, gathpw_64, NULL};
static const kernset histpwt_kernels = {histpwt_16, histpwt_32, histpwt_64, hist_flush};
static const kernset gathpwt_kernels = {gathpwt_16, gathpwt_32, gathpwt_64, NULL};

/* ------------------------------------------------------------------ */
/* engine context                                                       */
/* ------------------------------------------------------------------ */

typedef struct eng
{
	const gs_options *opt;
	gs_error   *err;
	const uint64_t *ur;			/* unique wanted ranks, ascending */
	uint64_t   *uval;			/* their keys */
	size_t		nu;
	uint64_t	keymax;
	uint64_t   *bra,
			   *brb;			/* bracket pass scratch */
	/* per-depth workspace for scratch levels */
	uint32_t   *whist[GS_MAX_DEPTH];
	int32_t    *wmap[GS_MAX_DEPTH];
} eng;

static void
eng_free(eng *e)
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

/* ------------------------------------------------------------------ */
/* scratch levels                                                       */
/* ------------------------------------------------------------------ */

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
static gs_status
scratch_select(eng *e, uint64_t *a, uint64_t *b, size_t m, uint64_t base,
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
		sort_u64(a, m);
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
			st = scratch_select(e, b + off, a + off, ch[c].cnt, ch[c].base,
								ch[c].r0, ch[c].r1, depth + 1);
			off += ch[c].cnt;
		}
	}
	free(ch);
	return st;
}

/* ------------------------------------------------------------------ */
/* exact select                                                         */
/* ------------------------------------------------------------------ */

/* out[i] = key at global position splitmix64(seed + i) % n, i < ns */
static int
sample_keys(const gs_input *in, uint64_t n, size_t ns, uint64_t seed, uint64_t *out)
{
	uint64_t   *segstart = malloc((in->nsegs + 1) * sizeof(uint64_t));
	size_t		i,
				s;

	if (!segstart)
		return 0;
	segstart[0] = 0;
	for (s = 0; s < in->nsegs; s++)
		segstart[s + 1] = segstart[s] + in->segs[s].n;
	for (i = 0; i < ns; i++)
	{
		uint64_t	p = gs_splitmix64(seed + (uint64_t) i) % n;
		size_t		lo = 0,
					hi = in->nsegs;

		/* last segment with segstart[seg] <= p; it is not empty */
		while (hi - lo > 1)
		{
			size_t		mid = (lo + hi) / 2;

			if (segstart[mid] <= p)
				lo = mid;
			else
				hi = mid;
		}
		out[i] = load_key(in->segs[lo].keys, in->key_bytes, (size_t) (p - segstart[lo]));
	}
	free(segstart);
	return 1;
}

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

static gs_status
check_input(const gs_input *in, size_t nranks, const uint64_t *ranks, const void *out,
			gs_error *err, size_t *n_out)
{
	size_t		s;
	size_t		n;

	if (!in || (in->nsegs > 0 && !in->segs))
		return set_err(err, GS_ERR_INVALID, "invalid input: no segment list");
	if (in->key_bytes != 2 && in->key_bytes != 4 && in->key_bytes != 8)
		return set_err(err, GS_ERR_INVALID, "invalid key width (must be 2, 4 or 8 bytes)");
	for (s = 0; s < in->nsegs; s++)
		if (in->segs[s].n > 0 && !in->segs[s].keys)
			return set_err(err, GS_ERR_INVALID, "invalid input: segment without keys");
	if (nranks > 0 && (!ranks || !out))
		return set_err(err, GS_ERR_INVALID, "invalid arguments: NULL ranks or output");
	n = gs_input_count(in);
	for (s = 0; s < nranks; s++)
		if (ranks[s] >= n)
		{
			char		msg[128];

			snprintf(msg, sizeof msg, "rank %llu out of range for %llu keys",
					 (unsigned long long) ranks[s], (unsigned long long) n);
			return set_err(err, GS_ERR_INVALID, msg);
		}
	*n_out = n;
	return GS_OK;
}

/* ------------------------------------------------------------------ */
/* piecewise-linear first level                                         */
/* ------------------------------------------------------------------ */

/*
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
#define GS_PW_MAX_NODES	16		/* tables, the root included (2 x 16 KB each) */
#define GS_PW_REFINE_LB	6		/* refine entries owed >= 2^6 slots ... */
#define GS_PW_CLUMP		8		/* ... whose sample values outnumber the slots
								 * they hit 8 to 1 */

typedef struct pw_layout
{
	uint64_t	lo,
				w;				/* [lo, lo + w] = [L, H] */
	unsigned	tsh;			/* root entry width, log2 */
	size_t		nent,			/* root entries */
				nslots,
				nnodes;			/* tables; > 1: pw_tree_slot kernels */
	uint32_t   *ent;			/* nnodes tables of 2^GS_PW_ENT_BITS: entry's
								 * first slot | sub << PW_OFF_BITS, or child
								 * table | PW_NODE << PW_OFF_BITS */
	uint32_t   *first;			/* the same shape: entry's first slot */
} pw_layout;

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

static void
pw_free(pw_layout *pw)
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
static void
pw_slot_range(const pw_layout *pw, size_t slot, uint64_t *lo, uint64_t *hi)
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
static int
pw_choose(pw_layout *pw, uint64_t mn, uint64_t mx, const uint64_t *s, size_t ns, size_t off,
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
		pw_free(pw);
		return -1;
	}
	for (i = 0; i < ns; i++)
		slot[i] = pw_slot(pw, s[i]);
	pwe = est_wanted(slot, ns, off, ur, nu, n);
	free(slot);
	if (pwe * 2 < lin)
		return 1;
	pw_free(pw);
	return 0;
}

/*
 * The input levels.  Resolves unique ranks [0, nu) given the input's min/max
 * (open: a sample bracket, with slots for keys outside).  samp[0..nsamp): the
 * sorted sample keys inside [mn, mx] at sample positions sampoff.., or NULL.
 */
static gs_status
input_levels(eng *e, const gs_input *in, uint64_t n, uint64_t mn, uint64_t mx, int open,
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
		int			c = pw_choose(&pw, mn, mx, samp, nsamp, sampoff, e->ur, e->nu, n);

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
		st = run_pass(in, !tasks[0].pw ? (nt == 1 ? &hist1_kernels : &histn_kernels) :
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
					pw_slot_range(&pw, slot, &c->lo, &c->hi);
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
			st = run_pass(in, !tasks[0].pw ? (nt == 1 ? &gath1_kernels : &gathn_kernels) :
						  pw.nnodes > 1 ? &gathpwt_kernels : &gathpw_kernels,
						  &la, e->opt, e->err);
			if (st != GS_OK)
				goto done;
			off = 0;
			for (t = 0; t < nk && st == GS_OK; t++)
			{
				st = scratch_select(e, sa + off, sb + off, (size_t) kids[t].cnt, kids[t].base,
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
	pw_free(&pw);
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

/* ---- counting against distinct splitters (approximate mode; few-distinct exact) ---- */

typedef struct ap_arg
{
	const uint64_t *spl;		/* ns distinct splitters, ascending, padded with
								 * UINT64_MAX up to ns + win */
	size_t		ns;
	uint32_t   *tbl;			/* lookup table over [tlo, tlo + wr] */
	uint64_t	tlo,
				wr;
	uint64_t	fat,
				fto,
				fw;				/* fold (AP_FOLD); fat == UINT64_MAX: none */
	unsigned	tsh;
	unsigned	win;			/* power of two >= the splitters any table entry spans */
	uint64_t   *cnt;			/* 2*(ns+1): [2i] keys in gap below spl[i], [2i+1] keys == spl[i] */
	uint32_t   *gap,
			   *eq;				/* ns+1 each: the same for the current chunk */
	/* keys outside [spl[0], spl[ns-1]]: their min / max with counts */
	uint64_t	mn,
				mx,
				cmn,
				cmx;
} ap_arg;

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
 * index does (kernels/gs_cells.cuh): then the rest of the range is less than
 * half, and folding at least doubles the table's resolution everywhere.
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

/*
 * One counting pass against ns distinct ascending splitters *splp (malloc'd;
 * reallocated to pad it): aa->cnt[2i] = keys between spl[i-1] and spl[i],
 * aa->cnt[2i+1] = keys == spl[i], aa->cnt[2ns] = keys above spl[ns-1]; the
 * input's min/max with their counts in aa->mn/cmn, aa->mx/cmx.  The caller
 * frees aa->cnt, aa->gap and aa->tbl (also on error).
 */
static gs_status
count_splitters(const gs_input *in, size_t n, uint64_t **splp, size_t ns, ap_arg *aa_,
				const gs_options *opt, gs_error *err)
{
	uint64_t   *spl = *splp;
	ap_arg		aa = *aa_;
	size_t		i,
				nt,
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
	/* pad the splitters for the search window */
	{
		uint64_t   *ps = realloc(spl, (ns + aa.win) * sizeof(uint64_t));

		if (!ps)
		{
			st = NOMEM(err);
			goto done;
		}
		spl = ps;
		*splp = ps;
		for (i = ns; i < ns + aa.win; i++)
			spl[i] = UINT64_MAX;
	}
	aa.spl = spl;
	aa.mn = UINT64_MAX;
	aa.mx = 0;
	st = run_pass(in, aa.fat == UINT64_MAX ? &apc_kernels : &apcf_kernels, &aa, opt, err);
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
	mm_arg		mm;
	eng			e;
	uint64_t   *sm = NULL;		/* sorted sample (large inputs) */

	st = check_input(in, nranks, ranks, out_keys, err, &n);
	if (st != GS_OK)
		return st;
	set_err(err, GS_OK, "");
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
		if (!sm || !sample_keys(in, n, GS_SAMPLE, GS_EXACT_SEED, sm))
		{
			st = NOMEM(err);
			goto done;
		}
		sort_u64(sm, GS_SAMPLE);
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
				st = count_splitters(in, n, &dv, nd, &ha, opt, err);
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
					st = input_levels(&e2, in, n, mm.mn, mm.mx, 1, sm + il, ih - il + 1, il);
					for (i = 0; st == GS_OK && i < nleft; i++)
						uval[left[i]] = suv[i];
					eng_free(&e2);
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
			st = run_pass(in, heavy ? &brkeq_kernels : &brk_kernels, &ba, opt, err);
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
				st = scratch_select(&e, e.bra, e.brb, ba.pos, b1, i0, i, 0);
				if (st != GS_OK)
					goto done;
				for (; i < nu; i++)
					uval[i] = ba.hi;
				goto answer;
			}
		}
		st = input_levels(&e, in, n, mm.mn, mm.mx, 1, sm + il, ih - il + 1, il);
		if (st != GS_OK)
			goto done;
		goto answer;
	}

	mm.mn = UINT64_MAX;
	mm.mx = 0;
	st = run_pass(in, &mm_kernels, &mm, opt, err);
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
		sort_u64(c, n);
		for (i = 0; i < nu; i++)
			uval[i] = c[ur[i]];
		free(c);
	}
	else
	{
		st = input_levels(&e, in, n, mm.mn, mm.mx, 0, NULL, 0, 0);
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
	st = set_err(err, GS_OK, "");

done:
	free(sm);
	eng_free(&e);
	free(ri);
	free(ur);
	free(uval);
	return st;
}

/* ------------------------------------------------------------------ */
/* approximate select                                                   */
/* ------------------------------------------------------------------ */

typedef struct cand
{
	uint64_t	key,
				lo,
				hi;
} cand;

gs_status
gs_cpu_select_approx(const gs_input *in, const uint64_t *ranks, size_t nranks,
					 const gs_options *opt, gs_approx_pick *out, gs_error *err)
{
	size_t		n,
				i,
				nsamp,
				ns,
				nc;
	unsigned	B;
	uint64_t	seed;
	gs_status	st;
	uint64_t   *samp = NULL,
			   *spl = NULL;
	cand	   *cd = NULL;
	ap_arg		aa;

	memset(&aa, 0, sizeof aa);
	st = check_input(in, nranks, ranks, out, err, &n);
	if (st != GS_OK)
		return st;
	B = opt && opt->approx_buckets ? opt->approx_buckets : GS_APPROX_BUCKETS_DEFAULT;
	seed = opt ? opt->seed : 0;
	if (B < GS_APPROX_BUCKETS_MIN || B > GS_APPROX_BUCKETS_MAX)
		return set_err(err, GS_ERR_INVALID, "approx_buckets must be between 2 and 8192");
	set_err(err, GS_OK, "");
	if (nranks == 0)
		return GS_OK;
	if (poll_interrupt(opt))
		return CANCELED(err);

	/* sample: position splitmix64(seed + i) % n, i < s = min(32B, n) */
	nsamp = (size_t) GS_APPROX_OVERSAMPLE * B;
	if (nsamp > n)
		nsamp = n;
	samp = malloc(nsamp * sizeof(uint64_t));
	spl = malloc(B * sizeof(uint64_t));
	if (!samp || !spl)
	{
		st = NOMEM(err);
		goto done;
	}
	if (!sample_keys(in, n, nsamp, seed, samp))
	{
		st = NOMEM(err);
		goto done;
	}
	sort_u64(samp, nsamp);
	ns = 0;
	for (i = 1; i < B; i++)
	{
		uint64_t	v = samp[(size_t) (((uint64_t) i * nsamp) / B)];

		if (ns == 0 || spl[ns - 1] != v)
			spl[ns++] = v;
	}
	if (poll_interrupt(opt))
	{
		st = CANCELED(err);
		goto done;
	}

	st = count_splitters(in, n, &spl, ns, &aa, opt, err);
	if (st != GS_OK)
		goto done;

	/* candidates in key order with exact rank ranges */
	cd = malloc((ns + 2) * sizeof(cand));
	if (!cd)
	{
		st = NOMEM(err);
		goto done;
	}
	nc = 0;
	cd[nc].key = aa.mn;
	cd[nc].lo = 0;
	cd[nc].hi = aa.cmn - 1;
	nc++;
	{
		uint64_t	less = 0;

		for (i = 0; i < ns; i++)
		{
			less += aa.cnt[2 * i];
			if (spl[i] != aa.mn && spl[i] != aa.mx)
			{
				cd[nc].key = spl[i];
				cd[nc].lo = less;
				cd[nc].hi = less + aa.cnt[2 * i + 1] - 1;
				nc++;
			}
			less += aa.cnt[2 * i + 1];
		}
	}
	if (aa.mx != aa.mn)
	{
		cd[nc].key = aa.mx;
		cd[nc].lo = (uint64_t) n - aa.cmx;
		cd[nc].hi = (uint64_t) n - 1;
		nc++;
	}

	for (i = 0; i < nranks; i++)
	{
		uint64_t	r = ranks[i];
		size_t		lo = 0,
					hi = nc,
					best;

		/* first candidate with hi >= r */
		while (lo < hi)
		{
			size_t		mid = (lo + hi) / 2;

			if (cd[mid].hi < r)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == nc)
			best = nc - 1;
		else if (cd[lo].lo <= r || lo == 0)
			best = lo;
		else
		{
			/* r lies between cd[lo-1].hi and cd[lo].lo: nearer wins, ties lower */
			uint64_t	dl = r - cd[lo - 1].hi;
			uint64_t	dh = cd[lo].lo - r;

			best = dh < dl ? lo : lo - 1;
		}
		out[i].key = cd[best].key;
		out[i].rank_lo = cd[best].lo;
		out[i].rank_hi = cd[best].hi;
	}
	st = set_err(err, GS_OK, "");

done:
	free(samp);
	free(spl);
	free(aa.cnt);
	free(aa.gap);
	free(aa.tbl);
	free(cd);
	return st;
}
