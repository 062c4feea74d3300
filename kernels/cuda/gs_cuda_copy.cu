/*
 * gs_cuda_copy.cu — the one staging operation the PostgreSQL path needs that
 * the selection engine (gs_cuda.cu and its drivers) does not offer: joining
 * chunks that were uploaded while the scan ran into one contiguous device
 * buffer.
 *
 * Plain CUDA runtime calls, no engine internals: the caller syncs the engine
 * first (gs_cuda_sync) and this call returns only when the copy is complete,
 * so the engine's own streams need no ordering with the default stream.
 */
#include <cuda_runtime.h>
#include <stdio.h>

#include "gs_cuda.h"

extern "C" gs_status
gs_cuda_copy_device(gs_cuda_engine *e, void *d_dst, const void *d_src, size_t bytes,
				   gs_error *err)
{
	cudaError_t rc;

	(void) e;
	if (bytes == 0)
		return GS_OK;
	rc = cudaMemcpy(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice);
	if (rc == cudaSuccess)
		rc = cudaDeviceSynchronize();	/* device-to-device cudaMemcpy may return early */
	if (rc != cudaSuccess)
	{
		if (err)
		{
			err->status = GS_ERR_DEVICE;
			snprintf(err->message, sizeof(err->message),
					 "device-to-device copy of %zu bytes failed: %s", bytes,
					 cudaGetErrorString(rc));
		}
		return GS_ERR_DEVICE;
	}
	return GS_OK;
}
