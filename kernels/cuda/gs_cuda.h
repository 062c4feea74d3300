/*
 * gs_cuda.h — the CUDA engine's plain-C interface (no CUDA types).
 *
 * Same contract as gs_engine.h: every call returns a gs_status and fills
 * *err; nothing aborts, prints, throws or longjmps; everything a call
 * allocates for itself is freed before it returns.  One gs_cuda_engine per
 * device and process (a PostgreSQL backend, the GPU service's lanes, or the
 * standalone harness); an engine is not thread-safe: one thread at a time.  Never call any of this in the postmaster or _PG_init: the
 * CUDA context must be created lazily in the process that uses it.
 */
#ifndef GS_CUDA_H
#define GS_CUDA_H

#include "gs_engine.h"
#include "gs_pages.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gs_cuda_engine gs_cuda_engine;

/* ---- lifecycle ---- */

/* Creates the context on device `ordinal`.  GS_ERR_NO_DEVICE when there is no
 * driver (cudaGetDeviceCount gives 35) or no device (100), or when the device
 * is older than compute capability 7.5 (the oldest the build targets). */
gs_status	gs_cuda_open(int ordinal, gs_cuda_engine **out, gs_error *err);

/*
 * The device limits the engine plans every launch size and shared-memory
 * budget with (read from the device at open: cudaDeviceGetAttribute).
 * smem_per_block is the opt-in maximum of one block, static and dynamic
 * shared memory together.
 */
typedef struct gs_cuda_limits
{
	int			cc_major,
				cc_minor;
	int			sm_count;
	int			max_threads_per_sm;
	int			max_blocks_per_sm;
	size_t		smem_per_block;
	size_t		smem_per_sm;
} gs_cuda_limits;

/*
 * A test setting: like gs_cuda_open, but the engine plans with a smaller
 * card's limits, each the smaller of the preset's and the device's, so that
 * one GPU runs the paths of others (the runtime then refuses any launch
 * that would need more shared memory than the preset allows).  Presets:
 * "sm_75" (T4), "sm_80" (A100), "sm_86" (A10), "sm_89" (L4); NULL or ""
 * plans with the device's own limits.  GS_ERR_INVALID for another name.
 * Callers read it from GS_DEVICE_LIMITS (test/gpu/gs_test.cu, the service).
 */
gs_status	gs_cuda_open_limited(int ordinal, const char *limits, gs_cuda_engine **out, gs_error *err);
/* the limits e plans with */
void		gs_cuda_get_limits(const gs_cuda_engine *e, gs_cuda_limits *out);
void		gs_cuda_close(gs_cuda_engine *e);
/* Number of CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies);
 * GS_ERR_NO_DEVICE without a driver or a device. */
gs_status	gs_cuda_device_count(int *count, gs_error *err);
/* Makes e's device current in the calling thread.  The current device is
 * per thread: a thread other than the one that opened e calls this before
 * any other call on e (gs_cuda_alloc, the copies and gs_cuda_device_info
 * use the current device; the selections set it themselves). */
gs_status	gs_cuda_make_current(gs_cuda_engine *e, gs_error *err);
gs_status	gs_cuda_device_info(gs_cuda_engine *e, char *name, size_t namelen,
							   size_t *free_bytes, size_t *total_bytes, gs_error *err);

/* ---- selection on keys already in device memory ----
 * d_keys: n keys of key_bytes (4 or 8; callers widen 2-byte keys to 4).
 * Synchronous: results are on the host when the call returns.  The input is
 * not modified.  opt->interrupt is polled between levels. */
gs_status	gs_cuda_select(gs_cuda_engine *e, const void *d_keys, size_t n, unsigned key_bytes,
						  const uint64_t *ranks, size_t nranks, uint64_t *out_keys,
						  const gs_options *opt, gs_error *err);
gs_status	gs_cuda_select_approx(gs_cuda_engine *e, const void *d_keys, size_t n, unsigned key_bytes,
								 const uint64_t *ranks, size_t nranks,
								 const gs_options *opt, gs_approx_pick *out, gs_error *err);

/* ---- selection of keys in host memory that need not fit a device ----
 * Exact multiselect as gs_cuda_select, of in's keys (2, 4 or 8 bytes, in
 * host memory; page-locked for full speed) over the devices of nengines
 * engines (1 to 16, distinct devices) at once: radix-digit counts of each
 * device's share, merged here, narrow the ranks to candidates that are
 * gathered onto engines[0] and selected there (kernels/cuda/gs_cuda_split.cu
 * says how).  Each device uses at most `budget` bytes (0: half of the
 * least free device's memory); GS_ERR_TOO_LARGE under 8 MB.  The caller
 * holds every engine for the call, and the keys do not change during it
 * (GS_ERR_INVALID if a pass finds they did).  Out keys are widened to 64
 * bits.  stats may be NULL. */
typedef struct gs_split_stats
{
	int			count_passes;	/* passes that counted a digit */
	int			gather_passes;	/* passes that gathered candidates */
	uint64_t	candidates;		/* keys gathered, all passes */
	uint64_t	bytes_read;		/* host bytes copied to the devices */
} gs_split_stats;

gs_status	gs_cuda_select_split(gs_cuda_engine *const *engines, int nengines, const gs_input *in,
								 const uint64_t *ranks, size_t nranks, uint64_t *out_keys, size_t budget,
								 const gs_options *opt, gs_split_stats *stats, gs_error *err);

/* Peak device temporaries (bytes, excluding the input) the calls above use
 * on e, whose device's limits decide the layouts (NULL: as an H100 would). */
size_t		gs_cuda_scratch_bytes(const gs_cuda_engine *e, size_t n, unsigned key_bytes, size_t nranks);

/* ---- memory and copies, for callers that stage their own data ---- */
gs_status	gs_cuda_alloc(gs_cuda_engine *e, size_t bytes, void **d_ptr, gs_error *err);
void		gs_cuda_free(gs_cuda_engine *e, void *d_ptr);
/* the same from the device's stream-ordered pool (no device-wide sync, no
 * driver call for a size the pool holds): allocated in order on the copy
 * stream, freed after the work both streams enqueued on it */
gs_status	gs_cuda_alloc_async(gs_cuda_engine *e, size_t bytes, void **d_ptr, gs_error *err);
void		gs_cuda_free_async(gs_cuda_engine *e, void *d_ptr);
/* page-locked host memory: allocate, or register/unregister existing memory */
gs_status	gs_cuda_host_alloc(gs_cuda_engine *e, size_t bytes, void **h_ptr, gs_error *err);
void		gs_cuda_host_free(gs_cuda_engine *e, void *h_ptr);
gs_status	gs_cuda_host_register(gs_cuda_engine *e, void *h_ptr, size_t bytes, gs_error *err);
void		gs_cuda_host_unregister(gs_cuda_engine *e, void *h_ptr);
/* asynchronous host->device copy on the engine's copy stream */
gs_status	gs_cuda_copy_to_device_async(gs_cuda_engine *e, void *d_dst, const void *h_src,
										size_t bytes, gs_error *err);
/* device-to-device copy on the engine's copy stream (ordered with the copies above) */
gs_status	gs_cuda_copy_device_async(gs_cuda_engine *e, void *d_dst, const void *d_src,
									  size_t bytes, gs_error *err);
/* widen 2-byte keys to 4-byte keys on the device (n keys, src and dst on device) */
gs_status	gs_cuda_widen16(gs_cuda_engine *e, const void *d_src16, void *d_dst32, size_t n,
						   gs_error *err);
/* ---- keys out of heap page images (gs_pages.h; issue #31, page shipping) ----
 * d_pages: npages (<= 65536) images of page_bytes each on the device; d_items:
 * n listed tuples, each (page index << 16) | line pointer number; the keys of
 * the non-NULL ones, in item order, into d_keys (room for n keys of
 * col->key_bytes), their count in *out_n.  GS_ERR_INVALID when a listed tuple
 * does not fit its page.  Synchronous. */
gs_status	gs_cuda_extract_pages(gs_cuda_engine *e, const void *d_pages, size_t npages,
								  size_t page_bytes, const uint32_t *d_items, size_t n,
								  const gs_page_column *col, void *d_keys, size_t *out_n,
								  gs_error *err);
/* page-lock host memory and map it for every device (portable, mapped):
 * the page-shipping path reads shared buffers where they are */
gs_status	gs_cuda_host_register_mapped(gs_cuda_engine *e, void *h_ptr, size_t bytes,
										 gs_error *err);
/* the device address, in this engine's context, of registered-mapped h_ptr */
gs_status	gs_cuda_host_device_address(gs_cuda_engine *e, void *h_ptr, uint64_t *d_addr,
										gs_error *err);
/* ---- keys out of heap pages the device reads in host memory ----
 * d_addrs[i] (host array): page i's device address (gs_cuda_host_device_address
 * of a registered-mapped page, a multiple of 16), npages <= 65536; h_items
 * (host) as gs_cuda_extract_pages' d_items.  The pages are gathered to the
 * device, extracted there, and the keys of the non-NULL tuples copied to the
 * host segments h_segs[0..nsegs) in order, each filled to its room of
 * seg_keys[i] keys before the next (room for n keys in all; page-locked
 * segments are copied to directly), their count in *out_n.  Synchronous. */
gs_status	gs_cuda_extract_mapped_pages(gs_cuda_engine *e, const uint64_t *d_addrs,
										 size_t npages, size_t page_bytes,
										 const uint32_t *h_items, size_t n,
										 const gs_page_column *col, void *const *h_segs,
										 const size_t *seg_keys, size_t nsegs,
										 size_t *out_n, gs_error *err);
/* wait for every copy and kernel the engine has queued */
gs_status	gs_cuda_sync(gs_cuda_engine *e, gs_error *err);

/* ---- fault injection, for tests ---- */
/* device allocations beyond `bytes` in total fail as GS_ERR_DEVICE_NOMEM (0: no cap) */
void		gs_cuda_set_memory_cap(gs_cuda_engine *e, size_t bytes);
/* the next `count` selection calls fail as if a launch had failed (GS_ERR_DEVICE) */
void		gs_cuda_inject_launch_failures(gs_cuda_engine *e, int count);
/* bytes currently allocated through gs_cuda_alloc / gs_cuda_host_alloc (leak checks) */
void		gs_cuda_memory_in_use(gs_cuda_engine *e, size_t *device_bytes, size_t *host_pinned_bytes);

#ifdef __cplusplus
}
#endif

#endif							/* GS_CUDA_H */
