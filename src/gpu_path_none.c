/*
 * gpu_path_none.c — the GPU path of a CPU-only build (USE_CUDA=0): no chunk is
 * pinned, no selection runs on a GPU, and gpuselect.device = 'gpu' is an
 * ERROR (raised through dispatch.c's gs_dispatch_gpu_required, shared with the
 * CUDA build's gpu_path.c).
 */
#include "postgres.h"

#include "dispatch.h"
#include "gpu_path.h"
#include "guc.h"

/* the CUDA-only test hooks do not exist in this build */
void
gpu_path_define_gucs(void)
{
}

void *
gpu_path_chunk_alloc(GsState *st, Size bytes)
{
	(void) st;
	(void) bytes;
	return NULL;
}

void
gpu_path_chunk_filled(GsState *st, int chunkno)
{
	(void) st;
	(void) chunkno;
}

GpuPathOutcome
gpu_path_select(GsState *st, const gs_input *in,
			  const uint64 *ranks, int nranks,
			  uint64 *out_keys, gs_approx_pick *picks,
			  GsRunInfo *info)
{
	(void) st;
	(void) in;
	(void) ranks;
	(void) nranks;
	(void) out_keys;
	(void) picks;
	(void) info;

	if (gs_guc_device == GS_DEVICE_GPU)
		gs_dispatch_gpu_required(ERRCODE_FEATURE_NOT_SUPPORTED, "this build has no CUDA support");
	return GPU_PATH_NOT_USED;
}

void
gpu_path_status(void (*emit) (const char *name, const char *value, void *arg), void *arg)
{
	emit("cuda_build", "off", arg);
	emit("gpu_available", "false", arg);
	emit("gpu_reason", "this build has no CUDA support (built with USE_CUDA=0)", arg);
}
