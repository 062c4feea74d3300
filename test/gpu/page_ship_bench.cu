/*
 * test/gpu/page_ship_bench.cu -- issue 31's question, measured outside the
 * server: once a page's visible tuples are known (heapgetpage), is it
 * faster to extract the aggregated column on the CPU, as the bulk scan does
 * (scan/bulk_scan.c), or to ship the page to the GPU and extract there?
 *
 * The input is N heap pages in PostgreSQL's page layout (24-byte header,
 * 4-byte line pointers, 32-byte tuples of a (x float8) table: 23-byte
 * header, t_hoff 24, the value at its offset), 226 tuples a page, in an
 * mmap(MAP_SHARED) region as shared buffers are.  Each method turns every
 * value into gpuselect's ordered key (the sign-flip of float8) and ends with
 * the keys in device memory, where the engine selects them:
 *   cpu        one thread: line pointer -> tuple -> HASNULL / natts check ->
 *              value -> key into a pinned buffer (the key pool), then one
 *              cudaMemcpy of the keys (bulk_scan.c's loop and what the
 *              service copies)
 *   cpu-only   the same loop, without the copy
 *   gpu-dma    the region registered (cudaHostRegister), the pages copied
 *              to the device in batches of 64 MB (cudaMemcpyAsync, two
 *              streams), a kernel per batch extracts (one block a page)
 *   gpu-zc     the same kernel reading the registered pages in place
 *              (zero-copy over PCIe)
 *   read       floor: the device copy of the pages alone (gpu-dma without
 *              the kernel), and a CPU pass summing the values
 * Every method's keys are checked (sum of keys mod 2^64 and count) against
 * the cpu method's.  Prints one table; median of GS_REPS (default 5) runs
 * after a warm-up.  Visibility checks stay on the CPU in every method (a
 * list of visible offsets per page would travel with the page): not timed
 * here, as heapgetpage costs the same whichever extracts.
 *
 *   nvcc -O3 -arch=sm_90 -o page_ship_bench test/gpu/page_ship_bench.cu
 *   ./page_ship_bench [rows, default 100000000]
 */
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const int PAGE = 8192;
static const int HDR = 24;			/* PageHeaderData */
static const int TUP = 32;			/* MAXALIGN(24 + 8) */
static const int PER_PAGE = (PAGE - HDR) / (TUP + 4);	/* 226 */

/* the page layout's fields, read as PostgreSQL's macros do */
__host__ __device__ static inline uint16_t pd_lower(const uint8_t *p) { return *(const uint16_t *) (p + 12); }
__host__ __device__ static inline uint32_t lp_word(const uint8_t *p, int i) { return *(const uint32_t *) (p + HDR + 4 * i); }
__host__ __device__ static inline uint32_t lp_off(uint32_t w) { return w & 0x7FFF; }
__host__ __device__ static inline uint32_t lp_flags(uint32_t w) { return (w >> 15) & 3; }

__host__ __device__ static inline uint64_t key_of_float8_bits(uint64_t b)
{
	const uint64_t sign = 1ULL << 63;

	if ((b & ~sign) > 0x7FF0000000000000ULL)
		b = 0x7FF8000000000000ULL;	/* NaN: one key, above +Inf */
	return (b & sign) ? ~b : (b | sign);
}

/* one tuple's key; false for a NULL or a short tuple (the slow path's business) */
__host__ __device__ static inline bool tuple_key(const uint8_t *page, uint32_t w, uint64_t *key)
{
	const uint8_t *t = page + lp_off(w);
	uint16_t infomask2 = *(const uint16_t *) (t + 18);
	uint16_t infomask = *(const uint16_t *) (t + 20);
	uint8_t hoff = t[22];

	if ((infomask & 0x0001) || (infomask2 & 0x07FF) < 1)
		return false;
	*key = key_of_float8_bits(*(const uint64_t *) (t + hoff));
	return true;
}

static void build_pages(uint8_t *region, size_t npages, size_t rows)
{
	size_t r = 0;
	uint64_t s = 88172645463325252ULL;

	for (size_t pg = 0; pg < npages; pg++)
	{
		uint8_t *p = region + pg * PAGE;
		int n = (int) std::min<size_t>(PER_PAGE, rows - r);
		uint16_t upper = PAGE;

		memset(p, 0, PAGE);
		for (int i = 0; i < n; i++, r++)
		{
			uint8_t *t;
			double v;

			upper -= TUP;
			t = p + upper;
			*(uint16_t *) (t + 18) = 1;			/* natts */
			*(uint16_t *) (t + 20) = 0x0900;	/* xmin committed, xmax invalid */
			t[22] = 24;
			s ^= s << 13; s ^= s >> 7; s ^= s << 17;
			v = (double) (s >> 11) / 9007199254740992.0 * 2e6 - 1e6;
			memcpy(t + 24, &v, 8);
			*(uint32_t *) (p + HDR + 4 * i) = upper | (1u << 15) | ((uint32_t) (24 + 8) << 17);
		}
		*(uint16_t *) (p + 12) = HDR + 4 * n;	/* pd_lower */
		*(uint16_t *) (p + 14) = upper;			/* pd_upper */
		*(uint16_t *) (p + 16) = PAGE;			/* pd_special */
	}
}

/* one block a page: the page into shared memory (16-byte loads), then a thread a tuple */
__global__ void k_extract(const uint8_t *pages, size_t npages, uint64_t *keys, unsigned long long *nkeys)
{
	__shared__ uint4 buf[PAGE / 16];
	__shared__ unsigned int base;
	__shared__ unsigned int cnt;
	const uint8_t *sp = (const uint8_t *) buf;

	for (size_t pg = blockIdx.x; pg < npages; pg += gridDim.x)
	{
		const uint4 *src = (const uint4 *) (pages + pg * PAGE);

		for (int i = threadIdx.x; i < PAGE / 16; i += blockDim.x)
			buf[i] = src[i];
		if (threadIdx.x == 0)
			cnt = 0;
		__syncthreads();
		{
			int n = (pd_lower(sp) - HDR) / 4;
			uint64_t k = 0;
			bool ok = false;
			unsigned int slot = 0;

			if (threadIdx.x < n)
			{
				uint32_t w = lp_word(sp, threadIdx.x);

				ok = lp_flags(w) == 1 && tuple_key(sp, w, &k);
				if (ok)
					slot = atomicAdd(&cnt, 1u);
			}
			__syncthreads();
			if (threadIdx.x == 0)
				base = (unsigned int) atomicAdd(nkeys, (unsigned long long) cnt);
			__syncthreads();
			if (ok)
				keys[base + slot] = k;
		}
		__syncthreads();
	}
}

static double now_ms()
{
	return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static size_t cpu_extract(const uint8_t *region, size_t npages, uint64_t *out)
{
	size_t m = 0;

	for (size_t pg = 0; pg < npages; pg++)
	{
		const uint8_t *p = region + pg * PAGE;
		int n = (pd_lower(p) - HDR) / 4;

		for (int i = 0; i < n; i++)
		{
			uint32_t w = lp_word(p, i);
			uint64_t k;

			if (lp_flags(w) == 1 && tuple_key(p, w, &k))
				out[m++] = k;
		}
	}
	return m;
}

struct Check { uint64_t sum; size_t n; };

static Check host_check(const uint64_t *k, size_t n)
{
	Check c = {0, n};

	for (size_t i = 0; i < n; i++)
		c.sum += k[i];
	return c;
}

static Check dev_check(const uint64_t *d, size_t n)
{
	std::vector<uint64_t> h(n);

	CK(cudaMemcpy(h.data(), d, n * 8, cudaMemcpyDeviceToHost));
	return host_check(h.data(), n);
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

int main(int argc, char **argv)
{
	size_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000000ULL;
	size_t npages = (rows + PER_PAGE - 1) / PER_PAGE;
	size_t bytes = npages * PAGE;
	int reps = getenv("GS_REPS") ? atoi(getenv("GS_REPS")) : 5;
	const size_t batch_pages = (64u << 20) / PAGE;
	uint8_t *region = (uint8_t *) mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t *pinned, *d_keys;
	uint8_t *d_pages[2];
	unsigned long long *d_n;
	cudaStream_t st[2];
	cudaDeviceProp prop;
	double t0, reg_ms;
	Check ref;
	std::vector<double> t_cpu, t_cpu_only, t_dma, t_zc, t_read, t_sum;

	if (region == MAP_FAILED)
		return perror("mmap"), 1;
	build_pages(region, npages, rows);
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaMallocHost((void **) &pinned, rows * 8));
	CK(cudaMalloc((void **) &d_keys, rows * 8));
	CK(cudaMalloc((void **) &d_n, 8));
	for (int s = 0; s < 2; s++)
	{
		CK(cudaMalloc((void **) &d_pages[s], batch_pages * PAGE));
		CK(cudaStreamCreate(&st[s]));
	}
	t0 = now_ms();
	CK(cudaHostRegister(region, bytes, cudaHostRegisterMapped));
	reg_ms = now_ms() - t0;
	ref = host_check(pinned, cpu_extract(region, npages, pinned));

	for (int r = -1; r < reps; r++)
	{
		size_t m;
		double a, b;
		unsigned long long nk;
		uint8_t *zc;
		volatile double sink = 0;
		Check c;

		/* cpu: extract into the pinned buffer, then copy the keys */
		a = now_ms();
		m = cpu_extract(region, npages, pinned);
		b = now_ms();
		CK(cudaMemcpy(d_keys, pinned, m * 8, cudaMemcpyHostToDevice));
		if (r >= 0)
		{
			t_cpu_only.push_back(b - a);
			t_cpu.push_back(now_ms() - a);
		}
		c = dev_check(d_keys, m);
		if (c.sum != ref.sum || c.n != ref.n)
			return fprintf(stderr, "cpu: wrong keys\n"), 1;

		/* gpu-dma: batches of pages copied, extracted on the device */
		CK(cudaMemset(d_n, 0, 8));
		CK(cudaDeviceSynchronize());
		a = now_ms();
		for (size_t first = 0, i = 0; first < npages; first += batch_pages, i++)
		{
			size_t n = std::min(batch_pages, npages - first);
			int s = (int) (i & 1);

			CK(cudaMemcpyAsync(d_pages[s], region + first * PAGE, n * PAGE, cudaMemcpyHostToDevice, st[s]));
			k_extract<<<prop.multiProcessorCount * 8, 256, 0, st[s]>>>(d_pages[s], n, d_keys, d_n);
		}
		CK(cudaDeviceSynchronize());
		if (r >= 0)
			t_dma.push_back(now_ms() - a);
		CK(cudaMemcpy(&nk, d_n, 8, cudaMemcpyDeviceToHost));
		c = dev_check(d_keys, nk);
		if (c.sum != ref.sum || c.n != ref.n)
			return fprintf(stderr, "gpu-dma: wrong keys\n"), 1;

		/* gpu-zc: the kernel reads the registered pages in place */
		CK(cudaHostGetDevicePointer((void **) &zc, region, 0));
		CK(cudaMemset(d_n, 0, 8));
		CK(cudaDeviceSynchronize());
		a = now_ms();
		k_extract<<<prop.multiProcessorCount * 8, 256>>>(zc, npages, d_keys, d_n);
		CK(cudaDeviceSynchronize());
		if (r >= 0)
			t_zc.push_back(now_ms() - a);
		CK(cudaMemcpy(&nk, d_n, 8, cudaMemcpyDeviceToHost));
		c = dev_check(d_keys, nk);
		if (c.sum != ref.sum || c.n != ref.n)
			return fprintf(stderr, "gpu-zc: wrong keys\n"), 1;

		/* read floors: the pages' copy alone; a CPU pass over the values */
		a = now_ms();
		for (size_t first = 0, i = 0; first < npages; first += batch_pages, i++)
			CK(cudaMemcpyAsync(d_pages[i & 1], region + first * PAGE,
							   std::min(batch_pages, npages - first) * PAGE, cudaMemcpyHostToDevice, st[i & 1]));
		CK(cudaDeviceSynchronize());
		if (r >= 0)
			t_read.push_back(now_ms() - a);
		a = now_ms();
		{
			double s = 0;

			for (size_t pg = 0; pg < npages; pg++)
			{
				const uint8_t *p = region + pg * PAGE;
				int n = (pd_lower(p) - HDR) / 4;

				for (int i = 0; i < n; i++)
					s += *(const double *) (p + lp_off(lp_word(p, i)) + 24);
			}
			sink = s;
		}
		if (r >= 0)
			t_sum.push_back(now_ms() - a);
		(void) sink;
	}
	printf("page shipping, %zu rows in %zu pages (%.2f GB), %s, median of %d\n",
		   rows, npages, bytes / 1e9, prop.name, reps);
	printf("| method | ms | ns / row |\n|---|---:|---:|\n");
	printf("| cpu: extract on one core into pinned memory + copy the keys | %.1f | %.2f |\n", median(t_cpu), median(t_cpu) * 1e6 / rows);
	printf("| cpu-only: the extraction alone | %.1f | %.2f |\n", median(t_cpu_only), median(t_cpu_only) * 1e6 / rows);
	printf("| gpu-dma: pages copied in 64 MB batches, extracted on the device | %.1f | %.2f |\n", median(t_dma), median(t_dma) * 1e6 / rows);
	printf("| gpu-zc: extracted on the device from the registered pages in place | %.1f | %.2f |\n", median(t_zc), median(t_zc) * 1e6 / rows);
	printf("| floor: the pages' copy alone | %.1f | %.2f |\n", median(t_read), median(t_read) * 1e6 / rows);
	printf("| floor: one core summing the values (sum(x)'s loop without the executor) | %.1f | %.2f |\n", median(t_sum), median(t_sum) * 1e6 / rows);
	printf("| cudaHostRegister of the %.2f GB region (once) | %.1f | |\n", bytes / 1e9, reg_ms);
	printf("keys checked: %zu, every method the same\n", ref.n);
	return 0;
}
