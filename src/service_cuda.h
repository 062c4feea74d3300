/*
 * service_cuda.h — the GPU service's CUDA device backend: the CUDA engine
 * (kernels/cuda/gs_cuda.h) driven on keys in the shared key pool.  Plain C,
 * no PostgreSQL: service_main.c calls it between its own PostgreSQL calls,
 * so no ereport/longjmp can cross a CUDA frame.  service_cuda.c implements
 * it in CUDA builds, service_cuda_none.c in CPU-only builds (where the
 * service never runs in "on" mode).  One engine per process, opened once.
 */
#ifndef GS_SERVICE_CUDA_H
#define GS_SERVICE_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs_engine.h"

/* open device 0 and page-lock the pool once; name gets the device's name
 * (with a note when the pool could not be page-locked) */
gs_status	gs_svc_cuda_open(void *pool, size_t pool_bytes, char *name, size_t namelen,
							 gs_error *err);

/*
 * One selection: copy the input's segments (pool memory) to one device
 * buffer, widen 2-byte keys, select (exact: picks == NULL), free.  Returns
 * the engine's status; *sticky is set when the context is unusable after a
 * device failure (the service then exits and is restarted).
 */
gs_status	gs_svc_cuda_select(const gs_input *in, const uint64_t *ranks, size_t nranks,
							   uint64_t *out_keys, gs_approx_pick *picks,
							   const gs_options *opt, double *copy_ms, uint64_t *bytes_copied,
							   bool *sticky, gs_error *err);

/*
 * Test hook (gpuselect.test_service_fault 'launch' / 'oom'): the next
 * selection meets the CUDA engine's own injected faults, so the failure
 * takes the engine's real error paths: a failed kernel launch, or device
 * memory that holds the job's keys but none of the selection's scratch.
 * Disarmed when that selection returns.
 */
typedef enum gs_svc_cuda_fault
{
	GS_SVC_CUDA_FAULT_LAUNCH = 1,
	GS_SVC_CUDA_FAULT_OOM = 2
} gs_svc_cuda_fault;

void		gs_svc_cuda_arm_fault(gs_svc_cuda_fault kind);

/* device memory the engine holds now (status) */
size_t		gs_svc_cuda_device_bytes(void);

/*
 * For gpuselect_status(), read by the service between jobs: the engine's
 * device memory now and its peak during a job (its own accounting), and
 * the device's memory in use by every process and its total
 * (cudaMemGetInfo).  All 0 when the engine is not open.
 */
void		gs_svc_cuda_memory(uint64_t *engine_bytes, uint64_t *engine_peak,
							   uint64_t *device_used, uint64_t *device_total);

void		gs_svc_cuda_close(void);

#endif							/* GS_SERVICE_CUDA_H */
