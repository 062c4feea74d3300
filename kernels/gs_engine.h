/*
 * gs_engine.h — the contract of gpuselect's two selection engines: the CPU
 * engine (kernels/cpu/) and the CUDA engine (kernels/cuda/, whose own API is
 * kernels/cuda/gs_cuda.h).  What both must agree on lives here, once: the
 * statuses, the input and option structs, the approximate mode's sample
 * (GS_APPROX_OVERSAMPLE, gs_splitmix64) and its bucket limits.
 *
 * Rules for everything behind this header:
 *   - no PostgreSQL types, no CUDA types; callable from C, C++ and CUDA code;
 *   - every entry point returns a gs_status and fills *err with a message;
 *     it never aborts, never prints, never longjmps, never throws;
 *   - selection runs on order-preserving unsigned keys (see gs_keys.h):
 *     2-, 4- or 8-byte keys; the caller maps answers back to values.
 *   - inputs are never modified: the same input may be selected again
 *     (PostgreSQL runs a shareable final function more than once).
 */
#ifndef GS_ENGINE_H
#define GS_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gs_status
{
	GS_OK = 0,
	GS_ERR_INVALID,			/* bad arguments: rank >= n, key_bytes not 2/4/8 */
	GS_ERR_NOMEM,			/* host allocation failed */
	GS_ERR_NO_DEVICE,		/* no driver, or no usable GPU */
	GS_ERR_DEVICE_NOMEM,	/* device allocation failed */
	GS_ERR_DEVICE,			/* any other CUDA failure (launch, copy, sync) */
	GS_ERR_TOO_LARGE,		/* input does not fit the device */
	GS_ERR_CANCELED			/* the caller's interrupt hook asked to stop */
} gs_status;

typedef struct gs_error
{
	gs_status	status;
	char		message[256];
} gs_error;

/* One contiguous run of keys; an input is a list of runs (chunked buffers). */
typedef struct gs_segment
{
	const void *keys;
	size_t		n;
} gs_segment;

typedef struct gs_input
{
	const gs_segment *segs;
	size_t		nsegs;
	unsigned	key_bytes;		/* 2, 4 or 8 */
} gs_input;

/* Called between passes; a nonzero return stops the engine with GS_ERR_CANCELED
 * after it has released everything it allocated. */
typedef int (*gs_interrupt_fn) (void *arg);

typedef struct gs_options
{
	gs_interrupt_fn interrupt;	/* may be NULL */
	void	   *interrupt_arg;
	uint64_t	seed;			/* sampling seed: same seed, same sample */
	unsigned	approx_buckets; /* approximate mode: number of buckets (>= 2) */
} gs_options;

/*
 * Approximate mode's number of buckets (opt->approx_buckets): both engines
 * accept 2 .. GS_APPROX_BUCKETS_MAX and use GS_APPROX_BUCKETS_DEFAULT for 0;
 * the gpuselect.approx_buckets setting has the same range and default, so a
 * query gives the same answer on either engine.  8192 is the CUDA engine's
 * limit: its cell index holds at most 8191 splitters.
 */
#define GS_APPROX_BUCKETS_MIN 2
#define GS_APPROX_BUCKETS_MAX 8192
#define GS_APPROX_BUCKETS_DEFAULT 1024

/*
 * splitmix64 (Steele, Lea, Flood 2014), the hash both engines draw their
 * samples with: the approximate sample is key number splitmix64(seed + i) % n
 * of the concatenated input on either engine, so both pick the same
 * splitters.  Callable from C, C++ and CUDA device code.
 */
#if defined(__CUDACC__)
#define GS_ENGINE_FN static inline __host__ __device__
#else
#define GS_ENGINE_FN static inline
#endif

GS_ENGINE_FN uint64_t
gs_splitmix64(uint64_t x)
{
	uint64_t	z = x + UINT64_C(0x9E3779B97F4A7C15);

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Approximate answer for one wanted rank: a key that occurs in the input and
 * the exact range of 0-based sorted positions it occupies.  The rank error of
 * the answer for wanted rank r is 0 if rank_lo <= r <= rank_hi, else the
 * distance to the nearer end. */
typedef struct gs_approx_pick
{
	uint64_t	key;
	uint64_t	rank_lo;
	uint64_t	rank_hi;
} gs_approx_pick;

/* ---- CPU engine (kernels/cpu/; no PostgreSQL dependency) ---- */

/*
 * Exact multiselect: out_keys[i] = the key at 0-based rank ranks[i] of the
 * sorted input (keys widened to uint64).  ranks may be in any order and may
 * repeat; all ranks are resolved together, level by level (never one
 * selection per rank).  n == 0 with nranks > 0 is GS_ERR_INVALID.
 */
gs_status	gs_cpu_select(const gs_input *in, const uint64_t *ranks, size_t nranks,
						  uint64_t *out_keys, const gs_options *opt, gs_error *err);

/*
 * Approximate multiselect: one level of SampleSelect with opt->approx_buckets
 * buckets from a sample drawn with opt->seed; for each wanted rank returns the
 * splitter whose rank range is nearest.  Counting gives each splitter's exact
 * rank range.  Both engines draw the same sample, of min(GS_APPROX_OVERSAMPLE
 * * B, n) keys: with 32 sample keys per bucket the gaps between splitters
 * vary by ~18% (8 per bucket: ~35%, which put the largest error at 1024
 * buckets slightly above 0.1% of n in some runs, H100 2026-11-22).
 */
#define GS_APPROX_OVERSAMPLE 32
gs_status	gs_cpu_select_approx(const gs_input *in, const uint64_t *ranks, size_t nranks,
								 const gs_options *opt, gs_approx_pick *out, gs_error *err);

/*
 * Exact multiselect of many independent inputs (the groups of a GROUP BY),
 * item by item as gs_cpu_select, on the calling thread and up to nthreads
 * helper threads (kernels/cpu/cpu_many.c; never more helpers than items - 1;
 * 0: the calling thread alone).  Only the calling thread calls
 * opt->interrupt; a nonzero answer stops every item still running, and the
 * call returns GS_ERR_CANCELED once every helper has been joined;
 * GS_INTERRUPT_DRAIN lets the items under way finish and starts no more
 * (the same return, with fewer items left).  Helpers run with every signal
 * blocked.  Each item's status says whether its out_keys were written
 * (GS_OK); the call returns GS_OK when every item's is, else the first
 * failure's status and message (or GS_ERR_CANCELED).
 */
#define GS_INTERRUPT_DRAIN 2
typedef struct gs_select_item
{
	gs_input	in;
	const uint64_t *ranks;
	size_t		nranks;
	uint64_t   *out_keys;
	gs_status	status;			/* out */
} gs_select_item;

gs_status	gs_cpu_select_many(gs_select_item *items, size_t nitems, unsigned nthreads,
							   const gs_options *opt, gs_error *err);

/*
 * Test hook (per thread: it holds for the calling thread's later calls):
 * the exact CPU engine's choice between selection and its sort path.
 * 0: by the cost model (the default); 1: always select; 2: always sort.
 * Lets a test hold a long selection (TAP 008 cancels one mid-way) or run
 * the sort path on small data.
 */
#define GS_CPU_PATH_AUTO 0
#define GS_CPU_PATH_SELECT 1
#define GS_CPU_PATH_SORT 2
void		gs_cpu_test_force_path(int path);

/* Total number of keys in an input. */
static inline size_t
gs_input_count(const gs_input *in)
{
	size_t		n = 0;

	for (size_t i = 0; i < in->nsegs; i++)
		n += in->segs[i].n;
	return n;
}

#ifdef __cplusplus
}
#endif

#endif							/* GS_ENGINE_H */
