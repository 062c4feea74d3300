/*
 * test/gpu/topk_bench.cu — one rank of 2^28 float4 keys by CUB's
 * DeviceTopK (CCCL 3.3+), beside gpuselect's CUDA engine, CUB's radix sort
 * and a plain read of the keys, all on the same keys in one process.
 *
 * Why a separate program: DeviceTopK is newer than the CCCL that CUDA 13.0
 * ships, so this file is compiled against a newer CCCL's headers (fetched
 * for the run, never kept in the repository: test/gpu/topk_run.sh), while
 * the engine stays built as the module builds it and is called through its
 * plain-C API (gs_cuda.h).  CUB's symbols carry their version in their
 * namespace, so the two CCCLs do not meet at link time.
 *
 * The r-th smallest key (0-based) is the largest of the r + 1 smallest:
 * MinKeys(k = r + 1), then a max over those k.  DeviceTopK only offers
 * unsorted, non-deterministic output today; for the max that is enough.
 * Every method's answer is checked against the sorted keys.
 *
 * Usage: topk_bench [log2 n] (default 28).  Prints a markdown table.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_topk.cuh>
#include <cuda/__execution/determinism.h>
#include <cuda/__execution/output_ordering.h>
#include <cuda/__execution/require.h>
#include <cuda/stream>

#include "gs_engine.h"
#include "gs_cuda.h"
#include "gs_keys.h"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(2); } } while (0)

/* uniform floats in [-1e6, 1e6) as order-preserving keys (the engine's input) */
__global__ void
k_gen(uint64_t seed, uint64_t n, uint32_t *keys)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	z = seed + i * 0x9E3779B97F4A7C15ull;

		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		z ^= z >> 31;
		float		f = (float) ((double) (z >> 11) / 9007199254740992.0 * 2e6 - 1e6);
		uint32_t	b;

		memcpy(&b, &f, 4);
		keys[i] = gs_key_from_float4_bits(b);
	}
}

/* one read of every key: the bandwidth floor */
__global__ void
k_read(const uint4 *in, uint64_t nv, unsigned long long *sink)
{
	unsigned	x = 0;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint4		v = in[i];

		x ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (x == 0x12345678u)
		atomicAdd(sink, 1ull);
}

struct Timer
{
	cudaEvent_t a, b;
	Timer() { CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); }
	void start() { CK(cudaEventRecord(a)); }
	float stop() { float ms; CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); CK(cudaEventElapsedTime(&ms, a, b)); return ms; }
};

static float
median(std::vector<float> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

int
main(int argc, char **argv)
{
	int			lg = argc > 1 ? atoi(argv[1]) : 28;
	uint64_t	n = 1ull << lg;
	const int	REPS = 15, WARM = 3;
	uint32_t   *d_keys, *d_sorted, *d_topk, *d_max;
	void	   *d_tmp = NULL;
	size_t		tmp_sort = 0, tmp_topk = 0, tmp_max = 0, tmpb;
	unsigned long long *d_sink;
	gs_cuda_engine *E;
	gs_error	err;
	char		name[256];
	size_t		fr, tot;
	int			nsm;
	Timer		t;

	if (gs_cuda_open(0, &E, &err) != GS_OK)
	{
		fprintf(stderr, "gs_cuda_open: %s\n", err.message);
		return 2;
	}
	gs_cuda_device_info(E, name, sizeof name, &fr, &tot, &err);
	CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
	CK(cudaMalloc(&d_keys, n * 4));
	CK(cudaMalloc(&d_sorted, n * 4));
	CK(cudaMalloc(&d_topk, n * 4));
	CK(cudaMalloc(&d_max, 4));
	CK(cudaMalloc(&d_sink, 8));
	k_gen<<<nsm * 8, 256>>>(42, n, d_keys);
	CK(cudaGetLastError());

	auto req = cuda::execution::require(cuda::execution::determinism::not_guaranteed,
										cuda::execution::output_ordering::unsorted);
	cuda::stream_ref sref{cudaStream_t{}};
	auto env = cuda::std::execution::env{sref, req};

	CK(cub::DeviceRadixSort::SortKeys(NULL, tmp_sort, d_keys, d_sorted, (int64_t) n));
	CK(cub::DeviceTopK::MinKeys(NULL, tmp_topk, d_keys, d_topk, (int64_t) n, (int64_t) n, env));
	CK(cub::DeviceReduce::Max(NULL, tmp_max, d_topk, d_max, (int64_t) n));
	tmpb = std::max(tmp_sort, std::max(tmp_topk, tmp_max));
	CK(cudaMalloc(&d_tmp, tmpb));
	CK(cub::DeviceRadixSort::SortKeys(d_tmp, tmpb, d_keys, d_sorted, (int64_t) n));
	CK(cudaDeviceSynchronize());

	printf("device: %s, n = 2^%d float4 keys (uniform), median of %d after %d warm-up\n\n", name, lg, REPS, WARM);
	printf("| rank | read pass ms | CUB radix sort ms | CUB DeviceTopK MinKeys(k = r + 1) + max ms | gpuselect engine ms | TopK / engine | checks |\n");
	printf("|---|---|---|---|---|---|---|\n");

	std::vector<float> v;

	v.clear();
	for (int i = 0; i < REPS + WARM; i++)
	{
		t.start();
		k_read<<<nsm * 8, 256>>>((const uint4 *) d_keys, n / 4, d_sink);
		float		ms = t.stop();

		if (i >= WARM)
			v.push_back(ms);
	}
	float		t_read = median(v);

	v.clear();
	for (int i = 0; i < REPS + WARM; i++)
	{
		size_t		tb = tmpb;

		t.start();
		CK(cub::DeviceRadixSort::SortKeys(d_tmp, tb, d_keys, d_sorted, (int64_t) n));
		float		ms = t.stop();

		if (i >= WARM)
			v.push_back(ms);
	}
	float		t_sort = median(v);

	for (double p : {0.01, 0.5, 0.99})
	{
		uint64_t	r = (uint64_t) (p * (double) (n - 1));
		uint32_t	want, got_topk = 0;
		uint64_t	got_engine = 0;
		int			bad = 0;
		gs_options	opt;

		CK(cudaMemcpy(&want, d_sorted + r, 4, cudaMemcpyDeviceToHost));
		v.clear();
		for (int i = 0; i < REPS + WARM; i++)
		{
			size_t		tb = tmpb;

			t.start();
			CK(cub::DeviceTopK::MinKeys(d_tmp, tb, d_keys, d_topk, (int64_t) n, (int64_t) (r + 1), env));
			tb = tmpb;
			CK(cub::DeviceReduce::Max(d_tmp, tb, d_topk, d_max, (int64_t) (r + 1)));
			float		ms = t.stop();

			CK(cudaMemcpy(&got_topk, d_max, 4, cudaMemcpyDeviceToHost));
			bad += got_topk != want;
			if (i >= WARM)
				v.push_back(ms);
		}
		float		t_topk = median(v);

		memset(&opt, 0, sizeof opt);
		v.clear();
		for (int i = 0; i < REPS + WARM; i++)
		{
			opt.seed = 1000 + i;
			t.start();
			gs_status	st = gs_cuda_select(E, d_keys, n, 4, &r, 1, &got_engine, &opt, &err);
			float		ms = t.stop();

			if (st != GS_OK)
			{
				fprintf(stderr, "engine: %s\n", err.message);
				return 2;
			}
			bad += got_engine != want;
			if (i >= WARM)
				v.push_back(ms);
		}
		float		t_engine = median(v);

		printf("| %.2f (n-1) | %.2f | %.2f | %.2f | %.2f | %.1fx | %s |\n", p, t_read, t_sort, t_topk, t_engine,
			   t_topk / t_engine, bad ? "WRONG" : "ok");
	}
	gs_cuda_close(E);
	return 0;
}
