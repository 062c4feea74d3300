/*
 * service_cuda.h — the GPU service's CUDA device backend: the CUDA engine
 * (kernels/cuda/gs_cuda.h) driven on keys in the shared key pool.  Plain C,
 * no PostgreSQL: the service's lanes (service_lanes.c) call it, so no
 * ereport/longjmp can cross a CUDA frame.  service_cuda.c implements it in
 * CUDA builds, service_cuda_none.c in CPU-only builds (where the service
 * never runs in "on" mode).
 *
 * One gs_svc_cuda_dev per device, each with its own engine (context,
 * streams).  The service's main thread opens them all before the lanes
 * start and closes each once its lane has ended; in between, only that
 * device's lane thread uses it, after gs_svc_cuda_bind.
 */
#ifndef GS_SERVICE_CUDA_H
#define GS_SERVICE_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs_engine.h"
#include "gs_pages.h"

typedef struct gs_svc_cuda_dev gs_svc_cuda_dev;

/* the devices CUDA lets this process see (CUDA_VISIBLE_DEVICES applies) */
gs_status	gs_svc_cuda_device_count(int *count, gs_error *err);

/*
 * Open device `ordinal`.  pool != NULL: page-lock the key pool through this
 * device's engine (portable: every context then treats it as pinned); done
 * once, by the first device opened.  name gets the device's name (with a
 * note when the pool could not be page-locked).
 */
gs_status	gs_svc_cuda_open(int ordinal, void *pool, size_t pool_bytes, gs_svc_cuda_dev **out,
							 char *name, size_t namelen, gs_error *err);

/* make the device current in the calling thread (a lane, once, first) */
gs_status	gs_svc_cuda_bind(gs_svc_cuda_dev *dev, gs_error *err);

/*
 * One selection: copy the input's segments (pool memory; or, where
 * seg_dev[i] is not NULL, the prefetched device copy of segment i) to one
 * device buffer, widen 2-byte keys, select (exact: picks == NULL), free.
 * *bytes_copied counts the host bytes only.  Returns the engine's status;
 * *sticky is set when the context is unusable after a device failure (the
 * service then takes the device out of rotation).
 */
gs_status	gs_svc_cuda_select(gs_svc_cuda_dev *dev, const gs_input *in, const void *const *seg_dev,
							   const uint64_t *ranks, size_t nranks, uint64_t *out_keys,
							   gs_approx_pick *picks, const gs_options *opt, double *copy_ms,
							   uint64_t *bytes_copied, bool *sticky, gs_error *err);

/*
 * Whether an exact selection of nkeys keys (key_bytes wide, nranks ranks)
 * fits dev's memory now: keys, widened copy, scratch.  Asks the device
 * (cudaMemGetInfo) only when the job needs more than half of its memory.
 */
bool		gs_svc_cuda_fits(gs_svc_cuda_dev *dev, size_t nkeys, unsigned key_bytes, size_t nranks);
/*
 * An exact selection that need not fit a device: the keys stay in the pool
 * and stream through devs[0..ndevs) (the calling lane's device first; the
 * others are held idle by the main thread for the call), counted by radix
 * digit, narrowed, the candidates selected on devs[0]
 * (gs_cuda_select_split).  budget: bytes each device may use (0: the
 * engine's default).  *sticky: devs[0]'s context is unusable after it.
 */
gs_status	gs_svc_cuda_select_split(gs_svc_cuda_dev *const *devs, int ndevs, const gs_input *in,
									 const uint64_t *ranks, size_t nranks, uint64_t *out_keys,
									 size_t budget, const gs_options *opt, double *copy_ms,
									 uint64_t *bytes_copied, bool *sticky, gs_error *err);
/* prefetch: a device copy of `bytes` at host (a sealed pool chunk),
 * complete when this returns; and its release */
gs_status	gs_svc_cuda_prefetch(gs_svc_cuda_dev *dev, const void *host, size_t bytes,
								 void **d_copy, gs_error *err);
void		gs_svc_cuda_unfetch(gs_svc_cuda_dev *dev, void *d_copy);

/*
 * Test hook (gpuselect.test_service_fault 'launch' / 'oom'), called by the
 * device's lane right before gs_svc_cuda_select: that selection meets the
 * CUDA engine's own injected faults, so the failure takes the engine's real
 * error paths: a failed kernel launch, or device memory that holds the
 * job's keys but none of the selection's scratch.  Disarmed when that
 * selection returns; neither leaves the device unusable.
 */
typedef enum gs_svc_cuda_fault
{
	GS_SVC_CUDA_FAULT_NONE = 0,
	GS_SVC_CUDA_FAULT_LAUNCH = 1,
	GS_SVC_CUDA_FAULT_OOM = 2
} gs_svc_cuda_fault;

void		gs_svc_cuda_arm_fault(gs_svc_cuda_dev *dev, gs_svc_cuda_fault kind);

/*
 * For gpuselect_status(), read by the device's lane between jobs: the
 * engine's device memory now and its peak during a job (its own
 * accounting), and the device's memory in use by every process and its
 * total (cudaMemGetInfo).  All 0 when dev is NULL.
 */
void		gs_svc_cuda_memory(gs_svc_cuda_dev *dev, uint64_t *engine_bytes, uint64_t *engine_peak,
							   uint64_t *device_used, uint64_t *device_total);

/*
 * Page shipping (issue #31): the keys of the listed tuples (items:
 * GS_PAGE_ITEM(page, line pointer)) of npages shared-buffer pages, at
 * byte offsets page_off[] of base (shared buffers, base_bytes in all), read
 * by the device where they are and extracted there; into the host segments
 * segs[0..nsegs) in order (seg_keys[i] keys of room each; pool chunks,
 * page-locked, so the device copies into them directly), their count in
 * *out_n.  The first call of any device page-locks
 * and maps base for all of them; GS_ERR_NO_DEVICE when that failed (the
 * lane extracts on the CPU then).
 */
gs_status	gs_svc_cuda_extract_pages(gs_svc_cuda_dev *dev, void *base, size_t base_bytes,
									  const uint64_t *page_off, size_t npages, size_t page_bytes,
									  const uint32_t *items, size_t n, const gs_page_column *col,
									  void *const *segs, const size_t *seg_keys, size_t nsegs,
									  size_t *out_n, bool *sticky, gs_error *err);

/* unlocks the pool (and shared buffers) if this device locked them: close
 * that device last */
void		gs_svc_cuda_close(gs_svc_cuda_dev *dev);

#endif							/* GS_SERVICE_CUDA_H */
