/*
 * cpu_internal.h — private to gpuselect's CPU selection engine (kernels/cpu/;
 * plain C, no PostgreSQL includes).  The public entry points, gs_cpu_select
 * and gs_cpu_select_approx, are declared in gs_engine.h; this header holds
 * what the engine's files share: the tunables more than one file uses, the
 * small helpers (static inline: the compiler inlines them into the per-key
 * loops and per-task code as when the engine was one file), the pass driver's
 * kernel families, the engine context, the piecewise first level's layout
 * and lookup, the splitter counter's state, and the prototypes of the
 * cross-file helpers (prefix cpu_: engine-internal, not an API).
 *
 * The files:
 *   cpu_common.c     error reporting, argument checks, the key sample, introsort
 *   cpu_pass.c       the pass driver (every segment in chunks, interrupt
 *                    polls) and the min/max pass
 *   cpu_exact.c      gs_cpu_select: exact multiselect (sample bracket, the
 *                    bracket pass, few distinct values, tiny inputs)
 *   cpu_levels.c     the input levels: histogram / gather passes over the input
 *   cpu_piecewise.c  the piecewise-linear first level (pw_*)
 *   cpu_scratch.c    the engine context's workspace and the scratch levels
 *   cpu_count.c      counting against distinct splitters (approximate mode;
 *                    few-distinct exact)
 *   cpu_approx.c     gs_cpu_select_approx: one level of SampleSelect
 *   cpu_sort.c       the exact mode's sort path: LSD radix sort, ranks read off
 *   cpu_many.c       gs_cpu_select_many: many inputs on a team of threads
 *
 * Interrupts: opt->interrupt is polled between passes/levels and after every
 * GS_CHUNK keys of any pass.  The input is never written.
 */
#ifndef GS_CPU_INTERNAL_H
#define GS_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gs_engine.h"

#define GS_CHUNK		((size_t) 1 << 20)	/* keys between interrupt polls */
#define GS_SORT_MAX		2048	/* scratch slices this small are sorted */
#define GS_MAX_BITS		16		/* buckets per histogram: <= 2^16 */
#define GS_MAX_DEPTH	24		/* scratch recursion; deeper -> sort */
#define GS_SAMPLE		16384	/* the exact mode's sample size */

/* ---- errors, interrupts (cpu_common.c) ---- */

gs_status	cpu_set_err(gs_error *err, gs_status st, const char *msg);

static inline int
poll_interrupt(const gs_options *opt)
{
	return opt && opt->interrupt && opt->interrupt(opt->interrupt_arg) != 0;
}

#define CANCELED(err) cpu_set_err((err), GS_ERR_CANCELED, "selection canceled by interrupt")
#define NOMEM(err) cpu_set_err((err), GS_ERR_NOMEM, "out of memory in CPU selection engine")

/* ---- small helpers ---- */

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

static inline unsigned
floor_log2(uint64_t x)
{
	unsigned	r = 0;

	while (x >>= 1)
		r++;
	return r;
}

/* smallest shift such that range >> shift < 2^bits */
static inline unsigned
shift_for(uint64_t range, unsigned bits)
{
	unsigned	s = 0;

	while (s < 64 && (range >> s) >= ((uint64_t) 1 << bits))
		s++;
	return s;
}

/* ---- cpu_common.c: shared by both entry points ---- */

gs_status	cpu_check_input(const gs_input *in, size_t nranks, const uint64_t *ranks,
							const void *out, gs_error *err, size_t *n_out);
int			cpu_sample_keys(const gs_input *in, uint64_t n, size_t ns, uint64_t seed,
							uint64_t *out);
void		cpu_sort_u64(uint64_t *a, size_t n);

/* ---- pass driver (cpu_pass.c): every segment in chunks, one kernel per width ---- */

typedef void (*kern_fn) (const void *keys, size_t n, void *arg);

typedef struct kernset
{
	kern_fn		k16;
	kern_fn		k32;
	kern_fn		k64;
	void		(*after_chunk) (void *arg, size_t n);	/* may be NULL */
} kernset;

gs_status	cpu_run_pass(const gs_input *in, const kernset *ks, void *arg,
						 const gs_options *opt, gs_error *err);

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

/* pass 0 of the exact mode: the input's min and max */
gs_status	cpu_minmax_pass(const gs_input *in, uint64_t *mn, uint64_t *mx,
							const gs_options *opt, gs_error *err);

/* ---- engine context (cpu_scratch.c) ---- */

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

void		cpu_eng_free(eng *e);

/*
 * Scratch levels: keys a[0..m) (ours to permute), b[0..m) free; the keys
 * below a's minimum number `base`; resolve unique ranks [r0, r1).
 */
gs_status	cpu_scratch_select(eng *e, uint64_t *a, uint64_t *b, size_t m, uint64_t base,
							   size_t r0, size_t r1, int depth);

/* ---- input levels (cpu_levels.c) ---- */

gs_status	cpu_input_levels(eng *e, const gs_input *in, uint64_t n, uint64_t mn, uint64_t mx,
							 int open, const uint64_t *samp, size_t nsamp, size_t sampoff);

/* ---- the sort path (cpu_sort.c) ---- */

/*
 * Sort a copy of the input and read the unique ascending ranks ur[0..nu)
 * into uval.  *sorted = 0 with GS_OK: its two n-key arrays could not be
 * allocated (select instead).
 */
gs_status	cpu_sort_ranks(const gs_input *in, size_t n, const uint64_t *ur, size_t nu,
						   uint64_t *uval, const gs_options *opt, gs_error *err, int *sorted);

/*
 * gs_cpu_select with the path forced (the unit test and the bench check
 * and time both paths): CPU_PATH_AUTO is gs_cpu_select's cost model.
 */
typedef enum cpu_path
{
	CPU_PATH_AUTO,
	CPU_PATH_SELECT,
	CPU_PATH_SORT
} cpu_path;

gs_status	cpu_select_path(const gs_input *in, const uint64_t *ranks, size_t nranks,
							uint64_t *out_keys, const gs_options *opt, gs_error *err,
							cpu_path path);

/* ---- piecewise-linear first level (cpu_piecewise.c) ---- */

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

int			cpu_pw_choose(pw_layout *pw, uint64_t mn, uint64_t mx, const uint64_t *s, size_t ns,
						  size_t off, const uint64_t *ur, size_t nu, uint64_t n);
void		cpu_pw_slot_range(const pw_layout *pw, size_t slot, uint64_t *lo, uint64_t *hi);
void		cpu_pw_free(pw_layout *pw);

/* ---- counting against distinct splitters (cpu_count.c) ---- */

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

gs_status	cpu_count_splitters(const gs_input *in, size_t n, uint64_t **splp, size_t ns,
								ap_arg *aa_, const gs_options *opt, gs_error *err);

#endif							/* GS_CPU_INTERNAL_H */
