/*
 * gpu_path.h — the GPU path as the rest of src/ sees it.  Implemented by
 * gpu_path.c in CUDA builds and by gpu_path_none.c in CPU-only builds, so no other
 * file needs #ifdef GS_HAVE_CUDA.  No CUDA type appears here.
 */
#ifndef GPU_PATH_H
#define GPU_PATH_H

#include "state.h"

/* Result of an attempt to run a selection on the GPU. */
typedef enum GpuPathOutcome
{
	GPU_PATH_DONE,				/* the GPU answered; outputs are filled */
	GPU_PATH_NOT_USED				/* no GPU (or it failed in auto mode): use the CPU */
} GpuPathOutcome;

typedef struct GsRunInfo
{
	const char *path;			/* "cpu", "gpu", "cpu (fallback: ...)" */
	int64		n;
	int64		bytes_copied;
	double		copy_ms;
	double		select_ms;
	int64		rank_bound;		/* approximate mode: max rank error; else 0 */
} GsRunInfo;

/*
 * Chunk memory for a state that is headed for the GPU.  state.c asks for a
 * chunk once the group has at least gpuselect.gpu_min_rows values and the GPU
 * may be used, unless the state is a partial one that will be serialized;
 * NULL means "use ordinary palloc memory".  Pinned memory is
 * released by a reset callback on st->mcxt registered by gpu_path.c.
 */
extern void *gpu_path_chunk_alloc(GsState *st, Size bytes);

/* state.c calls this when a chunk is full: the GPU path may start copying it. */
extern void gpu_path_chunk_filled(GsState *st, int chunkno);

/*
 * Exact (picks == NULL) or approximate selection of nranks 0-based ranks.
 * In gpuselect.device = gpu a failure raises ERROR; in auto it returns
 * GPU_PATH_NOT_USED after one NOTICE per backend and reason.
 */
extern GpuPathOutcome gpu_path_select(GsState *st, const gs_input *in,
								  const uint64 *ranks, int nranks,
								  uint64 *out_keys, gs_approx_pick *picks,
								  GsRunInfo *info);

/* _PG_init: settings that exist only in CUDA builds (test hooks). No CUDA call. */
extern void gpu_path_define_gucs(void);

/* gpuselect_status(): fills name/value pairs about the GPU. */
extern void gpu_path_status(void (*emit) (const char *name, const char *value, void *arg), void *arg);

#endif							/* GPU_PATH_H */
