/*
 * gs_cuda_internal.h — what the CUDA engine's host files share (private to
 * kernels/cuda/; CUDA runtime types, C++): the engine struct, error and
 * memory helpers, the launch helper, and the entries of the two host
 * drivers.
 *
 *   gs_cuda.cu         errors, validation, the selection entries of
 *                      the extern "C" API (gs_cuda.h)
 *   gs_cuda_device.cu  limits (a device's, a smaller card's), launch
 *                      sizing under them, lifecycle (open, close)
 *   gs_cuda_memory.cu  a call's temporaries, the caller's device and
 *                      host memory (recorded), copies, widening 2-byte keys
 *   gs_cuda_test_hooks.cu  fault injection, the test hooks (not in gs_cuda.h)
 *   gs_cuda_exact.cu   exact SampleSelect: multi-level, device-planned
 *   gs_cuda_approx.cu  approximate SampleSelect: one level
 *   gs_cuda_count.cu   the count kernel's variants (k_count), both modes
 *   gs_cuda_split.cu   keys in host memory over several devices: digit
 *                      counts, narrowing, candidates (gs_pass_digits.cuh)
 *
 * Nothing here throws, aborts or prints: every CUDA return code is checked
 * and turned into a gs_status with a message.  No thrust, no operator new;
 * CUB's device algorithms return cudaError_t.  The extern "C" entries also
 * run through gs_guard (catch (...)) as a last line of defence.
 */
#ifndef GS_CUDA_INTERNAL_H
#define GS_CUDA_INTERNAL_H

#include <stddef.h>
#include <cuda_runtime.h>

#include "gs_cuda.h"
#include "gs_select.cuh"		/* gs_ull, gs_level_state, gs_tuning.cuh */

struct gs_alloc_rec
{
	void	   *p;
	size_t		bytes;
	int			host;			/* 0 device, 1 pinned host alloc, 2 registered */
	gs_alloc_rec *next;
};

struct gs_cuda_engine
{
	int			dev;
	cudaStream_t s;				/* selection stream */
	cudaStream_t cs;			/* copy stream */
	cudaEvent_t ev_copy;
	int			nsm;			/* lim.sm_count */
	/* what every launch size and shared-memory budget is planned with: the
	 * device's limits, or a smaller card's (gs_cuda_open_limited) */
	gs_cuda_limits lim;
	/* programmatic dependent launches: the device has them (9.0+) and the
	 * kernels loaded were compiled with griddepcontrol (PTX 9.0+; not the
	 * compute_80 PTX JIT-compiled on a Hopper, say) */
	bool		pdl;
	/* exact mode, per key width (index kb == 8): the most open buckets a
	 * spread level may have (gs_mopen_for; 4096 unless the count or filter
	 * would not fit, and at most half the sample), whether levels of 4096
	 * buckets may draw the wide sample (gs_wide_sample), and k_sample's
	 * layout (gs_sample_layout: the H100's, a T4's, or none fits) */
	int			mopen_max[2];
	bool		wide_ok[2];
	int			sample_layout[2];
	/* approximate mode: runs the 4-byte sample's merge may hold */
	int			approx_runs_max;
	size_t		mem_cap;		/* 0: none */
	size_t		dev_in_use;		/* gs_cuda_alloc */
	size_t		host_in_use;	/* gs_cuda_host_alloc */
	size_t		internal_in_use;	/* temporaries of a running call */
	int			inject;
	int			sort_finish;	/* test hook: 0 cost model, 1 always, 2 never */
	int			exact_path;		/* test hook: GS_CPU_PATH_* values (0 the rule) */
	int			last_exact_sorted;	/* test hook: the last exact call sorted all */
	long long	focus_sort;		/* test hook: single-rank sort threshold, -1 default */
	int			last_sort_bits;	/* test hook: key bits of the last finishing sort */
	double		focus_z;		/* single-rank splitters at -/+ focus_z sigma (test hook) */
	gs_alloc_rec *recs;
	char		name[256];
};

/* k_sample's layouts (gs_cuda_exact.cu, gs_exact_set_attrs), the first
 * that fits a block of e->lim: gs_sample_policy's (8192 keys, 6-bit
 * digits), gs_sample_small_policy's (5-bit digits; 4096 keys of 8 bytes) */
enum gs_sample_layout
{
	GS_SAMPLE_DEFAULT = 0,
	GS_SAMPLE_SMALL = 1,
	GS_SAMPLE_NONE = 2			/* exact mode declines: GS_ERR_TOO_LARGE */
};

/* ---- errors (gs_cuda.cu) ---- */

gs_status	gs_fail(gs_error *err, gs_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
gs_status	gs_ok(gs_error *err);
gs_status	gs_cuda_fail(gs_error *err, cudaError_t ce, const char *what);
/* GS_ERR_CANCELED when the options' interrupt hook says so */
gs_status	gs_check_interrupt(const gs_options *opt, gs_error *err);

/*
 * The extern "C" entries' last line of defence: run body (a lambda that
 * returns a gs_status) and turn a C++ exception escaping it into
 * GS_ERR_DEVICE naming the entry, so that none crosses into C.
 */
template <typename Body>
static inline gs_status
gs_guard(gs_error *err, const char *entry, Body body)
{
	try
	{
		return body();
	}
	catch (...)
	{
		return gs_fail(err, GS_ERR_DEVICE, "unexpected C++ exception in %s", entry);
	}
}

#define GS_CK(call, what) do { cudaError_t ce_ = (call); \
	if (ce_ != cudaSuccess) { rc = gs_cuda_fail(err, ce_, what); goto done; } } while (0)

/* ---- a call's device temporaries (gs_cuda_memory.cu): stream-ordered, counted
 * against the memory cap ---- */

gs_status	gs_dev_alloc_internal(gs_cuda_engine *e, size_t bytes, void **p, gs_error *err);
void		gs_dev_free_internal(gs_cuda_engine *e, void *p, size_t bytes);

static inline size_t
gs_round_up(size_t x)
{
	return (x + 255) & ~(size_t) 255;
}

/* ---- launches ---- */

/* blocks of fn (threads each, dyn bytes of dynamic shared memory) that
 * fill the device: the runtime's occupancy, bounded by e->lim
 * (gs_cuda_device.cu, as the three after it) */
int			gs_occ_grid(gs_cuda_engine *e, const void *fn, size_t dyn, int threads = gs_count_policy::threads);
/* static shared memory of a kernel as loaded for this device (0 if unknown) */
size_t		gs_static_smem(const void *fn);
/* whether fn's launch with dyn bytes of dynamic shared memory fits a block
 * under e->lim (static + dynamic <= smem_per_block) */
bool		gs_smem_fits(const gs_cuda_engine *e, const void *fn, size_t dyn);
/* the dynamic shared memory fn may use under e->lim (its static taken off) */
size_t		gs_dyn_budget(const gs_cuda_engine *e, const void *fn);

/*
 * Launch a level kernel on the engine's selection stream, as a programmatic
 * dependent launch where e->pdl says the device and the loaded code have
 * them (and unless built with -DGS_NO_PDL); gs_pdl_enter in gs_stream.cuh
 * says what the kernel does with it.  Launch errors surface in the
 * cudaGetLastError after each level.  Hand-written: CUB has no launch
 * helper for this.
 */
template <typename... Params, typename... Args>
static void
gs_launch(const gs_cuda_engine *e, void (*fn) (Params...), int grid, int threads, size_t smem, Args... args)
{
#ifndef GS_NO_PDL
	if (e->pdl)
	{
		cudaLaunchConfig_t cfg = {};
		cudaLaunchAttribute at = {};

		cfg.gridDim = dim3((unsigned) grid);
		cfg.blockDim = dim3((unsigned) threads);
		cfg.dynamicSmemBytes = smem;
		cfg.stream = e->s;
		at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
		at.val.programmaticStreamSerializationAllowed = 1;
		cfg.attrs = &at;
		cfg.numAttrs = 1;
		(void) cudaLaunchKernelEx(&cfg, fn, static_cast<Params>(args)...);
		return;
	}
#endif
	fn<<<grid, threads, smem, e->s>>>(static_cast<Params>(args)...);
}

/* ---- the count kernel of a many-splitter level (gs_cuda_count.cu) ---- */

/*
 * The count kernel of a many-splitter level of P splitter slots (MM:
 * approximate mode, which also finds the min and max): 1024 threads per SM
 * or fewer, in as many blocks as its shared memory allows (on the H100 up
 * to 64 KB: three or four 256-thread blocks; up to 112 KB: two of 512; else
 * one of 1024; the thresholds scale with the device's shared memory per
 * SM), so that enough warps keep loads in flight; the one-splitter lookup
 * where the cell table has 16 cells per slot (gs_cells_one).  Where the
 * default layout does not fit a block of e->lim (gs_count_kernel says the
 * order): plain entries instead of packed, the two-splitter lookup, a
 * smaller table, and last the histogram in windows of hwords buckets, one
 * pass over the input each (approximate mode only; for 8-byte keys with
 * the splitters left in global memory where even that does not fit: a T4
 * at 8192 buckets).
 */
template <typename K>
struct gs_count_launch
{
	void		(*fn) (gs_level_state *, const K *, K *, K *, gs_ull *, const gs_ull *, gs_minmax *, uint16_t *, int,
					   int, int);
	int			threads;
	size_t		smem;			/* dynamic shared memory: gs_count_smem_for */
	int			cells_cap;		/* the kernel's cells_cap argument: gs_cells_cap(P) or less */
	bool		one;			/* the one-splitter lookup: oracles are counter words */
	int			hwords;			/* histogram words per pass (2 P: all of it) */
	int			passes;			/* windows of hwords buckets, up to 2 P - 1 buckets */
	bool		gspl;			/* the splitters read in global memory (k_count's GSPL) */
};

/* the variant for a level of P splitter slots under e->lim; mm:
 * approximate mode.  fn NULL: none fits (the caller takes fewer buckets, or
 * fails with GS_ERR_TOO_LARGE) */
template <typename K>
gs_count_launch<K> gs_count_kernel(const gs_cuda_engine *e, bool mm, int P);
/* every variant's shared-memory limit under e->lim, both modes and key
 * widths (gs_cuda_open) */
cudaError_t gs_count_set_attrs(const gs_cuda_engine *e);

/* ---- the exact driver (gs_cuda_exact.cu; K = uint32_t, uint64_t) ---- */

template <typename K>
gs_status	gs_select_exact(gs_cuda_engine *e, const K *d_in, size_t n, const uint64_t *ranks, size_t nranks,
							uint64_t *out_keys, const gs_options *opt, gs_error *err);
/* peak device temporaries of an exact call with nu distinct ranks on e
 * (its layouts: gs_exact_set_attrs); e NULL: on an H100 */
size_t		gs_exact_scratch(const gs_cuda_engine *e, size_t n, unsigned kb, size_t nu);
/* keys of k_sample's one-block sample on e (gs_sample_layout), also its
 * base case */
int			gs_exact_sample_keys(const gs_cuda_engine *e, unsigned kb);
/* the exact kernels' shared-memory limits under e->lim, both key widths,
 * and what exact mode may use there (e->mopen_max, wide_ok, sample_layout;
 * gs_cuda_open) */
cudaError_t gs_exact_set_attrs(gs_cuda_engine *e);

/* ---- the approximate driver (gs_cuda_approx.cu; K = uint32_t, uint64_t) ---- */

template <typename K>
gs_status	gs_select_approx_t(gs_cuda_engine *e, const K *d_in, size_t n, const uint64_t *ranks, size_t nranks,
							   const gs_options *opt, gs_approx_pick *out, gs_error *err);
/* device temporaries of an approximate call of B buckets counted by nblk
 * blocks, its 4-byte sample merged from at most runs_max runs;
 * *cub_bytes: CUB's temporary storage for the sample sort */
size_t		gs_approx_scratch(size_t n, unsigned kb, size_t nranks, unsigned B, int nblk, int runs_max,
							  size_t *cub_bytes);
/* the approximate kernels' shared-memory limits under e->lim, both key
 * widths, and e->approx_runs_max */
cudaError_t gs_approx_set_attrs(gs_cuda_engine *e);

#endif							/* GS_CUDA_INTERNAL_H */
