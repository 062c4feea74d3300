/*
 * gs_test.cu — standalone harness of the CUDA engine (kernels/gs_cuda.h).
 *
 *   gs_test check [small]   correctness: every entry point vs. a CUB radix
 *                           sort of a copy (and vs. the CPU engine
 *                           kernels/cpu/ when built with -DGS_HAVE_CPU_ENGINE);
 *                           gs_cuda_extract_pages vs. gs_pages.h's CPU
 *                           extraction and the values written (page_checks)
 *   gs_test bench [out.md]  timing table (CUDA events, median of 25 after warm-up)
 *   gs_test sweep           one rank at 2^28 under several single-rank settings
 *
 * Data is generated on the device from a seed (printed; GS_SEED=... repeats a
 * run), for the 8 PostgreSQL types, mapped to keys with gs_keys.h.
 */
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <math.h>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include "gs_cuda.h"
#include "gs_keys.h"
#include "gs_pages.h"
#include "gs_select.cuh"
#include "gs_block_select.cuh"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); exit(2); } } while (0)

static long g_pass, g_fail;
static int	g_verbose_fail = 40;

static void
check(bool ok, const char *fmt, ...)
{
	if (ok)
	{
		g_pass++;
		return;
	}
	g_fail++;
	if (g_verbose_fail-- > 0)
	{
		va_list		ap;

		va_start(ap, fmt);
		printf("FAIL: ");
		vprintf(fmt, ap);
		printf("\n");
		va_end(ap);
	}
}

enum Type { T_INT2, T_INT4, T_DATE, T_FLOAT4, T_INT8, T_FLOAT8, T_TS, T_TSTZ, NTYPES };
static const char *type_name[] = {"int2", "int4", "date", "float4", "int8", "float8", "timestamp", "timestamptz"};
static __host__ __device__ int	type_kb(int t) { return t == T_INT2 ? 2 : (t <= T_FLOAT4 ? 4 : 8); }

enum Dist { D_UNIFORM, D_SORTED, D_REVERSED, D_EQUAL, D_TWO, D_SIXTEEN, D_ORGAN, D_SPECIAL, D_ADVERSARIAL, NDISTS };
static const char *dist_name[] = {"uniform", "sorted", "reversed", "all-equal", "2-distinct", "16-distinct",
	"organ-pipe", "nan-inf-zero", "adversarial"};

/* one value per (type, dist, i): returned as a double or an int64 */
__device__ static void
gen_value(int dist, uint64_t seed, uint64_t i, uint64_t n, double *fv, int64_t *iv, int bits)
{
	uint64_t	h = gs_splitmix64(seed ^ (i * 0x9E3779B97F4A7C15ULL));
	uint64_t	h2 = gs_splitmix64(h);
	double		u = (double) (h >> 11) * (1.0 / 9007199254740992.0);	/* [0,1) */
	int64_t		lim = bits == 16 ? 32767 : (bits == 32 ? 2147483647LL : 9223372036854775807LL);
	double		flim = 1e30;

	*fv = 0;
	*iv = 0;
	switch (dist)
	{
		case D_UNIFORM:
			*fv = (u * 2 - 1) * 1e6;
			*iv = (int64_t) (h2 % (2 * (uint64_t) lim + 1)) - lim;
			if (bits == 64)
				*iv = (int64_t) h2;
			break;
		case D_SORTED:
		case D_REVERSED:
		case D_ORGAN:
			{
				double		x = (double) i;

				if (dist == D_REVERSED)
					x = (double) (n - 1 - i);
				if (dist == D_ORGAN)
					x = (double) (i < n / 2 ? i : n - 1 - i);
				*fv = x - (double) n / 3;
				*iv = (int64_t) x - (int64_t) (n / 3);
				if (bits == 16)
					*iv = (*iv % 65536 + 65536) % 65536 - 32768;	/* wraps: many repeats */
				break;
			}
		case D_EQUAL:
			*fv = 42.5;
			*iv = 42;
			break;
		case D_TWO:
			*fv = (h2 & 1) ? 7.0 : -3.0;
			*iv = (h2 & 1) ? 7 : -3;
			break;
		case D_SIXTEEN:
			*fv = (double) (h2 % 16) * 1000.0 - 5000.0;
			*iv = (int64_t) (h2 % 16) * 1000 - 5000;
			break;
		case D_SPECIAL:
			{
				int			c = (int) (h2 % 10);

				*fv = (u * 2 - 1) * 1e6;
				*iv = (int64_t) (h2 % 2001) - 1000;
				if (c == 0)
				{
					*fv = __longlong_as_double(0x7FF8000000000000LL | (long long) (h2 >> 40) | ((h2 & 2) ? (long long) 0x8000000000000000ULL : 0));
					*iv = lim;
				}
				else if (c == 1)
				{
					*fv = __longlong_as_double(0x7FF0000000000000LL);
					*iv = -lim - 1;
				}
				else if (c == 2)
				{
					*fv = __longlong_as_double((long long) 0xFFF0000000000000ULL);
					*iv = 0;
				}
				else if (c == 3)
				{
					*fv = 0.0;
					*iv = -1;
				}
				else if (c == 4)
				{
					*fv = -0.0;
					*iv = 1;
				}
				break;
			}
		case D_ADVERSARIAL:
			{
				/* 4 huge clusters (one holds ~half), neighbours in key
				 * order, plus rare outliers spread over the whole range */
				uint64_t	c = h2 % 1000;

				if (c < 3)
				{
					*fv = (u * 2 - 1) * flim;
					*iv = (int64_t) (h % (2 * (uint64_t) (lim / 2))) - lim / 2;
				}
				else if (c < 500)
				{
					*fv = 1.0;
					*iv = 100;
				}
				else if (c < 750)
				{
					*fv = 1.0000001;
					*iv = 101;
				}
				else if (c < 900)
				{
					*fv = -2.5;
					*iv = -7;
				}
				else
				{
					*fv = 3e9 + (double) (h % 7);	/* a small cluster of near values */
					*iv = 3000 + (int64_t) (h % 7);
				}
				break;
			}
	}
}

__global__ void
k_gen(int type, int dist, uint64_t seed, uint64_t n, void *out)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t) gridDim.x * blockDim.x)
	{
		double		fv;
		int64_t		iv;
		int			bits = type_kb(type) * 8;

		gen_value(dist, seed, i, n, &fv, &iv, bits);
		switch (type)
		{
			case T_INT2:
				((uint16_t *) out)[i] = gs_key_from_int16((int16_t) iv);
				break;
			case T_INT4:
				((uint32_t *) out)[i] = gs_key_from_int32((int32_t) iv);
				break;
			case T_DATE:
				((uint32_t *) out)[i] = gs_key_from_int32((int32_t) (iv % 2000000));
				break;
			case T_FLOAT4:
				((uint32_t *) out)[i] = gs_key_from_float4((float) fv);
				break;
			case T_INT8:
				((uint64_t *) out)[i] = gs_key_from_int64(iv);
				break;
			case T_FLOAT8:
				((uint64_t *) out)[i] = gs_key_from_float8(fv);
				break;
			case T_TS:
			case T_TSTZ:
				((uint64_t *) out)[i] = gs_key_from_int64(iv / 1000 * (type == T_TS ? 1 : 3));
				break;
		}
	}
}

template <typename K>
__global__ void
k_gather_ref(const K *sorted, const uint64_t *ranks, int nr, uint64_t *out)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < nr)
		out[i] = sorted[ranks[i]];
}

/* exact rank range of each key in a sorted array: [lower_bound, upper_bound-1] */
template <typename K>
__global__ void
k_bounds(const K *sorted, uint64_t n, const gs_approx_pick *p, int np, uint64_t *lo, uint64_t *hi)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= np)
		return;
	K			key = (K) p[i].key;
	uint64_t	a = 0,
				b = n;

	while (a < b)
	{
		uint64_t	m = (a + b) / 2;

		if (sorted[m] < key)
			a = m + 1;
		else
			b = m;
	}
	lo[i] = a;
	b = n;
	while (a < b)
	{
		uint64_t	m = (a + b) / 2;

		if (sorted[m] <= key)
			a = m + 1;
		else
			b = m;
	}
	hi[i] = a;					/* upper bound (exclusive) */
}

/* one plain read of every key: the bandwidth floor */
template <typename K>
__global__ void
k_readpass(const K *in, uint64_t n, unsigned long long *sink)
{
	const uint4 *v = (const uint4 *) in;
	uint64_t	nv = n * sizeof(K) / 16;
	unsigned	acc = 0;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint4		x = __ldcs(v + i);

		acc ^= x.x ^ x.y ^ x.z ^ x.w;
	}
	if (acc == 0x12345678u)
		atomicAdd(sink, 1ULL);
}

#ifdef GS_HAVE_CPU_ENGINE
#include "gs_engine.h"
#endif

static gs_cuda_engine *E;
static uint64_t g_seed;

static std::vector<uint64_t>
rank_set(uint64_t n, int which, uint64_t seed)
{
	std::vector<uint64_t> r;

	if (n == 0)
		return r;
	if (which == 0)
	{
		uint64_t	c[] = {0, 1, n / 2, n - 1};

		for (uint64_t x : c)
			r.push_back(x < n ? x : n - 1);
	}
	else
	{
		int			k = which == 1 ? 101 : 1001;

		for (int i = 0; i < k; i++)
			r.push_back((uint64_t) ((double) i * (double) (n - 1) / (k - 1)));
		/* a few random ones and repeats, out of order */
		for (int i = 0; i < 8; i++)
			r.push_back(gs_splitmix64(seed + i) % n);
		std::swap(r[0], r[r.size() - 1]);
		r.push_back(r[3]);
	}
	return r;
}

extern "C" void gs_cuda_test_sort_finish(gs_cuda_engine *e, int mode);
extern "C" void gs_cuda_test_exact_path(gs_cuda_engine *e, int path);
extern "C" int gs_cuda_test_last_exact_sorted(gs_cuda_engine *e);
extern "C" void gs_cuda_test_focus_sort(gs_cuda_engine *e, long long below);
extern "C" int gs_cuda_test_last_sort_bits(gs_cuda_engine *e);
extern "C" void gs_cuda_test_focus_z(gs_cuda_engine *e, double z);
extern "C" void gs_cuda_test_plan(gs_cuda_engine *e, char *buf, size_t len);

template <typename K>
static void
run_case(int type, int dist, uint64_t n, const void *d_keys16, K *d_keys, K *d_sorted, void *d_tmp, size_t tmpb,
		 bool with_cpu)
{
	char		tag[128];

	snprintf(tag, sizeof tag, "%s/%s/n=%llu", type_name[type], dist_name[dist], (unsigned long long) n);
	/* reference: radix sort of a copy */
	if (n > 0)
	{
		size_t		tb = tmpb;

		CK(cub::DeviceRadixSort::SortKeys(d_tmp, tb, d_keys, d_sorted, (int64_t) n, 0, (int) sizeof(K) * 8));
	}
	std::vector<K> hkeys;

	(void) d_keys16;
#ifdef GS_HAVE_CPU_ENGINE
	if (with_cpu && n > 0)
	{
		hkeys.resize(n);
		CK(cudaMemcpy(hkeys.data(), d_keys, n * sizeof(K), cudaMemcpyDeviceToHost));
	}
#else
	(void) with_cpu;
#endif
	uint64_t   *d_r,
			   *d_o;

	CK(cudaMalloc(&d_r, 2048 * 8));
	CK(cudaMalloc(&d_o, 2048 * 8));
	if (n > 0)
	{
		/* one rank (the single-rank path: two splitters, speculative write,
		 * finishing sort), also with the finishing sort forced after level 1
		 * and with it switched off */
		uint64_t	singles[] = {0, n / 2, n - 1, gs_splitmix64(g_seed ^ n) % n};

		for (uint64_t r : singles)
		{
			uint64_t	ref1;

			CK(cudaMemcpy(d_r, &r, 8, cudaMemcpyHostToDevice));
			k_gather_ref<K><<<1, 32>>>(d_sorted, d_r, 1, d_o);
			CK(cudaGetLastError());
			CK(cudaMemcpy(&ref1, d_o, 8, cudaMemcpyDeviceToHost));
			/* modes 0-2: finishing sort by the threshold, always, never;
			 * mode 3: splitters a hair around the rank (z = 0.05), so the
			 * speculative write misses often and the filter pass runs */
			for (int mode = 0; mode < 4; mode++)
			{
				uint64_t	got = 0xDEADBEEFDEADBEEFULL;
				gs_options	opt;
				gs_error	err;

				memset(&opt, 0, sizeof opt);
				opt.seed = g_seed * 17 + r + mode;
				gs_cuda_test_sort_finish(E, mode < 3 ? mode : 2);
				gs_cuda_test_focus_z(E, mode == 3 ? 0.05 : 0);
				gs_status	st = gs_cuda_select(E, d_keys, n, sizeof(K), &r, 1, &got, &opt, &err);

				gs_cuda_test_sort_finish(E, 0);
				gs_cuda_test_focus_z(E, 0);
				check(st == GS_OK && got == ref1, "%s one rank %llu (finishing sort mode %d): status %d %s, got %llx want %llx",
					  tag, (unsigned long long) r, mode, (int) st, err.message, (unsigned long long) got,
					  (unsigned long long) ref1);
			}
		}
	}
	for (int which = 0; which < 3; which++)
	{
		std::vector<uint64_t> ranks = rank_set(n, which, g_seed + n);
		size_t		nr = ranks.size();

		if (nr == 0)
			continue;
		std::vector<uint64_t> out(nr, 0xDEADBEEFDEADBEEFULL),
					ref(nr);
		gs_options	opt;
		gs_error	err;

		memset(&opt, 0, sizeof opt);
		opt.seed = g_seed * 31 + which;
		gs_status	st = gs_cuda_select(E, d_keys, n, sizeof(K), ranks.data(), nr, out.data(), &opt, &err);

		check(st == GS_OK, "%s exact(%zu ranks): status %d %s", tag, nr, (int) st, err.message);
		CK(cudaMemcpy(d_r, ranks.data(), nr * 8, cudaMemcpyHostToDevice));
		k_gather_ref<K><<<(unsigned) ((nr + 255) / 256), 256>>>(d_sorted, d_r, (int) nr, d_o);
		CK(cudaGetLastError());
		CK(cudaMemcpy(ref.data(), d_o, nr * 8, cudaMemcpyDeviceToHost));
		int			bad = 0;

		for (size_t i = 0; i < nr; i++)
			if (out[i] != ref[i] && bad++ < 1)
				check(false, "%s exact rank %llu: got %llx want %llx", tag, (unsigned long long) ranks[i],
					  (unsigned long long) out[i], (unsigned long long) ref[i]);
		if (!bad)
			check(true, "");
		/* the multiselect finishing sort forced after the first level (mode
		 * 1), and none at all: levels down to the base case (mode 2) */
		for (int mode = 1; nr > 1 && mode <= 2; mode++)
		{
			std::vector<uint64_t> out2(nr, 0xDEADBEEFDEADBEEFULL);

			if (mode == 2 && n > (1u << 24))
				break;
			gs_cuda_test_sort_finish(E, mode);
			st = gs_cuda_select(E, d_keys, n, sizeof(K), ranks.data(), nr, out2.data(), &opt, &err);
			gs_cuda_test_sort_finish(E, 0);
			check(st == GS_OK && out2 == ref, "%s exact(%zu ranks, finishing sort mode %d): status %d %s", tag, nr,
				  mode, (int) st, err.message);
		}
		/* the whole input sorted (the path of very many ranks): same answers */
		{
			std::vector<uint64_t> out3(nr, 0xDEADBEEFDEADBEEFULL);

			gs_cuda_test_exact_path(E, GS_CPU_PATH_SORT);
			st = gs_cuda_select(E, d_keys, n, sizeof(K), ranks.data(), nr, out3.data(), &opt, &err);
			int			sorted = gs_cuda_test_last_exact_sorted(E);

			gs_cuda_test_exact_path(E, GS_CPU_PATH_AUTO);
			check(st == GS_OK && sorted && out3 == ref, "%s exact(%zu ranks, whole-input sort): status %d %s sorted %d",
				  tag, nr, (int) st, err.message, sorted);
		}
#ifdef GS_HAVE_CPU_ENGINE
		if (with_cpu)
		{
			std::vector<uint64_t> cpu(nr, 1);
			gs_segment	seg = {hkeys.data(), n};
			gs_input	in = {&seg, 1, (unsigned) sizeof(K)};

			st = gs_cpu_select(&in, ranks.data(), nr, cpu.data(), &opt, &err);
			check(st == GS_OK && cpu == out, "%s exact vs CPU engine (status %d %s)", tag, (int) st, err.message);
		}
#endif
		/* approximate */
		/* every count-kernel variant: 7 and 1024 (256 threads, one-splitter
		 * lookup), 2048 (512 threads; one-splitter for 4-byte keys), 4096
		 * (4-byte keys: 65536 cells, 1024 threads), 8192 (the most splitters;
		 * 1024 threads, two-splitter lookup) */
		unsigned	Bs[] = {1024, 7, 8192, 2048, 4096};

		for (unsigned B : Bs)
		{
			std::vector<gs_approx_pick> pk(nr);

			for (auto &p : pk)
				p.key = p.rank_lo = p.rank_hi = 0xDEADBEEFDEADBEEFULL;
			opt.approx_buckets = B;
			st = gs_cuda_select_approx(E, d_keys, n, sizeof(K), ranks.data(), nr, &opt, pk.data(), &err);
			check(st == GS_OK, "%s approx B=%u: status %d %s", tag, B, (int) st, err.message);
			gs_approx_pick *d_p;
			uint64_t   *d_lo,
					   *d_hi;

			CK(cudaMalloc(&d_p, nr * sizeof(gs_approx_pick)));
			CK(cudaMalloc(&d_lo, nr * 8));
			CK(cudaMalloc(&d_hi, nr * 8));
			CK(cudaMemcpy(d_p, pk.data(), nr * sizeof(gs_approx_pick), cudaMemcpyHostToDevice));
			k_bounds<K><<<(unsigned) ((nr + 255) / 256), 256>>>(d_sorted, n, d_p, (int) nr, d_lo, d_hi);
			CK(cudaGetLastError());
			std::vector<uint64_t> lo(nr),
						hi(nr);

			CK(cudaMemcpy(lo.data(), d_lo, nr * 8, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(hi.data(), d_hi, nr * 8, cudaMemcpyDeviceToHost));
			CK(cudaFree(d_p));
			CK(cudaFree(d_lo));
			CK(cudaFree(d_hi));
			bad = 0;
			/* 4n/B for a full sample; with n < 32B the s = n draws are made
			 * with replacement and may miss a quarter of the keys or more */
			double		bound = 4.0 * (double) n / B + 2 + (n < (uint64_t) GS_APPROX_OVERSAMPLE * B ? 0.5 * (double) n : 0.0);

			for (size_t i = 0; i < nr; i++)
			{
				bool		present = hi[i] > lo[i];
				bool		exact = pk[i].rank_lo == lo[i] && pk[i].rank_hi + 1 == hi[i];
				uint64_t	r = ranks[i];
				double		e = r < pk[i].rank_lo ? (double) (pk[i].rank_lo - r) :
					(r > pk[i].rank_hi ? (double) (r - pk[i].rank_hi) : 0.0);

				if ((!present || !exact || e > bound) && bad++ < 1)
					check(false, "%s approx B=%u rank %llu: key %llx range [%llu,%llu] true [%llu,%llu) err %.0f bound %.0f",
						  tag, B, (unsigned long long) r, (unsigned long long) pk[i].key,
						  (unsigned long long) pk[i].rank_lo, (unsigned long long) pk[i].rank_hi,
						  (unsigned long long) lo[i], (unsigned long long) hi[i], e, bound);
			}
			if (!bad)
				check(true, "");
#ifdef GS_HAVE_CPU_ENGINE
			if (with_cpu)
			{
				std::vector<gs_approx_pick> cp(nr);
				gs_segment	seg = {hkeys.data(), n};
				gs_input	in = {&seg, 1, (unsigned) sizeof(K)};

				st = gs_cpu_select_approx(&in, ranks.data(), nr, &opt, cp.data(), &err);
				bool		same = st == GS_OK;

				for (size_t i = 0; same && i < nr; i++)
					same = cp[i].key == pk[i].key && cp[i].rank_lo == pk[i].rank_lo && cp[i].rank_hi == pk[i].rank_hi;
				check(same, "%s approx B=%u differs from the CPU engine (status %d)", tag, B, (int) st);
			}
#endif
		}
	}
	CK(cudaFree(d_r));
	CK(cudaFree(d_o));
}

static void
run_type(int type, int dist, uint64_t n, bool with_cpu)
{
	int			kb = type_kb(type);
	size_t		ek = kb == 2 ? 4 : kb;
	void	   *d_raw = NULL,
			   *d_keys = NULL,
			   *d_sorted = NULL,
			   *d_tmp = NULL;
	size_t		tmpb = 0;
	gs_error	err;
	uint64_t	seed = g_seed ^ ((uint64_t) type << 40) ^ ((uint64_t) dist << 32) ^ n;

	CK(cudaMalloc(&d_raw, (n + 1) * kb));
	if (n)
	{
		k_gen<<<1024, 256>>>(type, dist, seed, n, d_raw);
		CK(cudaGetLastError());
	}
	if (kb == 2)
	{
		CK(cudaMalloc(&d_keys, (n + 1) * 4));
		check(gs_cuda_widen16(E, d_raw, d_keys, n, &err) == GS_OK, "widen16: %s", err.message);
	}
	else
		d_keys = d_raw;
	CK(cudaMalloc(&d_sorted, (n + 1) * ek));
	if (ek == 4)
		CK(cub::DeviceRadixSort::SortKeys(NULL, tmpb, (uint32_t *) NULL, (uint32_t *) NULL, (int64_t) n));
	else
		CK(cub::DeviceRadixSort::SortKeys(NULL, tmpb, (uint64_t *) NULL, (uint64_t *) NULL, (int64_t) n));
	CK(cudaMalloc(&d_tmp, tmpb + 16));
	CK(cudaDeviceSynchronize());
	if (ek == 4)
		run_case<uint32_t>(type, dist, n, d_raw, (uint32_t *) d_keys, (uint32_t *) d_sorted, d_tmp, tmpb, with_cpu);
	else
		run_case<uint64_t>(type, dist, n, d_raw, (uint64_t *) d_keys, (uint64_t *) d_sorted, d_tmp, tmpb, with_cpu);
	if (kb == 2)
		CK(cudaFree(d_keys));
	CK(cudaFree(d_raw));
	CK(cudaFree(d_sorted));
	CK(cudaFree(d_tmp));
	size_t		dev = 1,
				host = 1;

	gs_cuda_memory_in_use(E, &dev, &host);
	check(dev == 0 && host == 0, "memory in use after %s/%s/%llu: %zu device, %zu host", type_name[type],
		  dist_name[dist], (unsigned long long) n, dev, host);
}

/* ------------------------------------------------------------ block select */

/* one block of 512 threads x ITEMS keys selects ranks r[0], r[1] of
 * in[0..512 ITEMS): 16 (k_sample's 8192 keys), 8 (its 4096 8-byte keys on
 * a T4: gs_sample_small_policy) */
template <typename K, int ITEMS>
__global__ void __launch_bounds__(512)
k_test_select(const K *in, unsigned r0, unsigned r1, int nt, K *out)
{
	typedef gs_block_select<K, 512, ITEMS> Sel;
	__shared__ typename Sel::TempStorage ts;
	K			items[ITEMS];
	unsigned	r[2] = {r0, r1};
	K			v[2];

	for (int i = 0; i < ITEMS; i++)
		items[i] = in[threadIdx.x * ITEMS + i];
	Sel(ts).select(items, nt, r, v);
	if (threadIdx.x == 0)
	{
		out[0] = v[0];
		out[1] = v[1];
	}
}

/* gs_block_select (the single-rank levels' splitters) against std::sort:
 * a wrong splitter would only slow the engine down, never change an answer,
 * so the end-to-end checks cannot see it */
template <typename K, int ITEMS>
static void
block_select_checks(void)
{
	const int	S = 512 * ITEMS;
	std::vector<K> h(S), sorted;
	K		   *d_in,
			   *d_out;
	K			got[2];

	CK(cudaMalloc(&d_in, S * sizeof(K)));
	CK(cudaMalloc(&d_out, 2 * sizeof(K)));
	for (int shape = 0; shape < 7; shape++)
	{
		uint64_t	x = g_seed + 77 * shape;

		for (int i = 0; i < S; i++)
		{
			const uint64_t u = gs_splitmix64(x + i);
			K			k;

			switch (shape)
			{
				case 0: k = (K) u; break;								/* all bits random */
				case 1: k = (K) (u % 3); break;							/* three values */
				case 2: k = (K) 12345; break;							/* all equal */
				case 3: k = (K) ((~K(0) >> 1) + (K) (u % 1000)); break;	/* shared high bits */
				case 4: k = i % 7 == 0 ? ~K(0) : (K) (u >> 40); break;	/* padding-like maxima */
				case 5: k = (K) (i / 64); break;						/* runs */
				default: k = (K) (i < S / 2 ? 0 : u); break;			/* half zero */
			}
			h[i] = k;
		}
		sorted = h;
		std::sort(sorted.begin(), sorted.end());
		CK(cudaMemcpy(d_in, h.data(), S * sizeof(K), cudaMemcpyHostToDevice));
		const unsigned pairs[][2] = {{0, S - 1}, {S / 2, S / 2}, {1, 2}, {3 * S / 8, 5 * S / 8}, {S - 1, 0},
			{S / 2 - 1, S / 2}};

		for (auto &pr : pairs)
			for (int nt = 1; nt <= 2; nt++)
			{
				k_test_select<K, ITEMS><<<1, 512>>>(d_in, pr[0], pr[1], nt, d_out);
				CK(cudaGetLastError());
				CK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
				check(got[0] == sorted[pr[0]] && (nt == 1 || got[1] == sorted[pr[1]]),
					  "block select kb=%d items=%d shape=%d ranks %u,%u nt=%d", (int) sizeof(K), ITEMS, shape, pr[0],
					  pr[1], nt);
			}
	}
	CK(cudaFree(d_in));
	CK(cudaFree(d_out));
}

static int
interrupt_yes(void *arg)
{
	return ++*(int *) arg >= 2;
}

static void
api_checks(void)
{
	gs_error	err;
	gs_options	opt;
	uint64_t	r = 0,
				o = 0;
	void	   *d = NULL;
	size_t		dev,
				host;

	memset(&opt, 0, sizeof opt);
	char		name[128];
	size_t		fr,
				tot;

	check(gs_cuda_device_info(E, name, sizeof name, &fr, &tot, &err) == GS_OK && tot > 0, "device_info");
	check(gs_cuda_select(E, NULL, 0, 4, NULL, 0, NULL, &opt, &err) == GS_OK, "n=0 no ranks");
	check(gs_cuda_select(E, NULL, 0, 4, &r, 1, &o, &opt, &err) == GS_ERR_INVALID, "n=0 with a rank");
	check(gs_cuda_alloc(E, 1 << 20, &d, &err) == GS_OK, "alloc");
	check(gs_cuda_select(E, d, 10, 3, &r, 1, &o, &opt, &err) == GS_ERR_INVALID, "key_bytes 3");
	r = 10;
	check(gs_cuda_select(E, d, 10, 4, &r, 1, &o, &opt, &err) == GS_ERR_INVALID, "rank >= n");
	r = 0;
	opt.approx_buckets = 1;
	check(gs_cuda_select_approx(E, d, 10, 4, &r, 1, &opt, (gs_approx_pick *) &o, &err) == GS_ERR_INVALID, "buckets 1");
	CK(cudaMemset(d, 0x11, 1 << 20));
	/* launch-failure injection, then recovery */
	gs_cuda_inject_launch_failures(E, 1);
	check(gs_cuda_select(E, d, 100000, 4, &r, 1, &o, &opt, &err) == GS_ERR_DEVICE, "injected failure");
	gs_cuda_memory_in_use(E, &dev, &host);
	check(dev == (1 << 20), "memory after injected failure: %zu", dev);
	check(gs_cuda_select(E, d, 100000, 4, &r, 1, &o, &opt, &err) == GS_OK && o == 0x11111111u, "after injection");
	/* memory cap */
	gs_cuda_set_memory_cap(E, (1 << 20) + 1000);
	check(gs_cuda_select(E, d, 200000, 4, &r, 1, &o, &opt, &err) == GS_ERR_DEVICE_NOMEM, "memory cap: %s", err.message);
	void	   *d2 = NULL;

	check(gs_cuda_alloc(E, 4096, &d2, &err) == GS_ERR_DEVICE_NOMEM && d2 == NULL, "alloc beyond cap");
	gs_cuda_set_memory_cap(E, 0);
	gs_cuda_memory_in_use(E, &dev, &host);
	check(dev == (1 << 20), "memory after cap failure: %zu", dev);
	/* interrupt: the hook answers yes at its second call, so the engine must
	 * poll it again after the first level (distinct keys: all-equal input
	 * would be resolved by that level's equality bucket) */
	int			calls = 0;
	uint64_t	rmid = 100000;

	k_gen<<<256, 256>>>(T_FLOAT4, D_UNIFORM, g_seed, 200000, d);
	CK(cudaDeviceSynchronize());
	opt.interrupt = interrupt_yes;
	opt.interrupt_arg = &calls;
	check(gs_cuda_select(E, d, 200000, 4, &rmid, 1, &o, &opt, &err) == GS_ERR_CANCELED && calls == 2,
		  "interrupt: status %d after %d polls", (int) err.status, calls);
	opt.interrupt = NULL;
	/* too large */
	uint64_t	big = (uint64_t) 1 << 40;

	r = 5;
	gs_status	st = gs_cuda_select(E, d, big, 8, &r, 1, &o, &opt, &err);

	check(st == GS_ERR_TOO_LARGE || st == GS_ERR_DEVICE_NOMEM, "too large: %d %s", (int) st, err.message);
	/* pinned host memory, register, async copy, sync */
	void	   *h = NULL;

	check(gs_cuda_host_alloc(E, 1 << 20, &h, &err) == GS_OK, "host alloc");
	memset(h, 0x22, 1 << 20);
	check(gs_cuda_copy_to_device_async(E, d, h, 1 << 20, &err) == GS_OK, "copy async");
	r = 7;
	opt.seed = 1;
	check(gs_cuda_select(E, d, 1 << 18, 4, &r, 1, &o, &opt, &err) == GS_OK && o == 0x22222222u, "select after async copy");
	gs_cuda_memory_in_use(E, &dev, &host);
	check(host == (1 << 20), "pinned in use %zu", host);
	gs_cuda_host_free(E, h);
	std::vector<char> reg(1 << 20);

	check(gs_cuda_host_register(E, reg.data(), reg.size(), &err) == GS_OK, "register: %s", err.message);
	check(gs_cuda_copy_to_device_async(E, d, reg.data(), reg.size(), &err) == GS_OK, "copy registered");
	check(gs_cuda_sync(E, &err) == GS_OK, "sync");
	gs_cuda_host_unregister(E, reg.data());
	/* a job's buffer from the stream-ordered pool (the service's): counted,
	 * filled on the copy stream, selected from, refused past the cap, freed */
	{
		void	   *da = NULL,
				   *db = NULL;
		std::vector<uint32_t> hk(1 << 16);

		for (size_t i = 0; i < hk.size(); i++)
			hk[i] = (uint32_t) ((i * 2654435761u) % hk.size());		/* a permutation of 0..2^16-1 */
		check(gs_cuda_alloc_async(E, hk.size() * 4, &da, &err) == GS_OK && da != NULL, "alloc async");
		gs_cuda_memory_in_use(E, &dev, &host);
		check(dev == (1 << 20) + hk.size() * 4, "alloc async counted: %zu", dev);
		check(gs_cuda_copy_to_device_async(E, da, hk.data(), hk.size() * 4, &err) == GS_OK &&
			  gs_cuda_sync(E, &err) == GS_OK, "copy into the async buffer");
		r = 12345;
		check(gs_cuda_select(E, da, hk.size(), 4, &r, 1, &o, &opt, &err) == GS_OK && o == 12345u,
			  "select from the async buffer: %llu", (unsigned long long) o);
		gs_cuda_set_memory_cap(E, (1 << 20) + hk.size() * 4 + 1000);
		check(gs_cuda_alloc_async(E, 4096, &db, &err) == GS_ERR_DEVICE_NOMEM && db == NULL, "alloc async beyond cap");
		gs_cuda_set_memory_cap(E, 0);
		gs_cuda_free_async(E, da);
		check(gs_cuda_sync(E, &err) == GS_OK, "sync after free async");
	}
	gs_cuda_free(E, d);
	gs_cuda_memory_in_use(E, &dev, &host);
	check(dev == 0 && host == 0, "leak: %zu %zu", dev, host);
	check(gs_cuda_scratch_bytes(E, (size_t) 1 << 28, 8, 1) > 0, "scratch bytes");
}

/* ------------------------------------------------------------ bench */

static float
median(std::vector<float> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

template <typename K>
static void
bench_one(FILE *md, const char *tname, int type, int dist, uint64_t n)
{
	K		   *d_keys,
			   *d_sorted;
	void	   *d_tmp;
	size_t		tmpb = 0;
	unsigned long long *d_sink;
	uint64_t   *d_r,
			   *d_o;
	cudaEvent_t a,
				b;
	const int	REPS = 25,		/* median of 25 after 5 warm-up calls */
				WARM = 5;

	CK(cudaMalloc(&d_keys, n * sizeof(K)));
	CK(cudaMalloc(&d_sorted, n * sizeof(K)));
	CK(cub::DeviceRadixSort::SortKeys(NULL, tmpb, (K *) NULL, (K *) NULL, (int64_t) n));
	CK(cudaMalloc(&d_tmp, tmpb));
	CK(cudaMalloc(&d_sink, 8));
	CK(cudaMalloc(&d_r, 8));
	CK(cudaMalloc(&d_o, 8));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	k_gen<<<4096, 256>>>(type, dist, g_seed + n, n, d_keys);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	int			nsm;

	CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
	std::vector<float> t;
	float		ms;

	/* read pass */
	t.clear();
	for (int i = 0; i < REPS + WARM; i++)
	{
		CK(cudaEventRecord(a));
		k_readpass<K><<<nsm * 8, 256>>>(d_keys, n, d_sink);
		CK(cudaEventRecord(b));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		if (i >= WARM)
			t.push_back(ms);
	}
	float		t_read = median(t);

	/* CUB sort + pick */
	uint64_t	mid = n / 2;

	CK(cudaMemcpy(d_r, &mid, 8, cudaMemcpyHostToDevice));
	t.clear();
	for (int i = 0; i < REPS + WARM; i++)
	{
		size_t		tb = tmpb;

		CK(cudaEventRecord(a));
		CK(cub::DeviceRadixSort::SortKeys(d_tmp, tb, d_keys, d_sorted, (int64_t) n));
		k_gather_ref<K><<<1, 32>>>(d_sorted, d_r, 1, d_o);
		CK(cudaEventRecord(b));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		if (i >= WARM)
			t.push_back(ms);
	}
	float		t_sort = median(t);
	std::vector<uint64_t> sorted_h;	/* for the approx error: ranks from d_sorted */

	/* selections (host-synchronous calls: time includes the whole call) */
	float		t_sel[3];
	int			bad = 0;

	for (int which = 0; which < 3; which++)
	{
		std::vector<uint64_t> ranks;

		if (which == 0)
			ranks.push_back(n / 2);
		else
		{
			int			k = which == 1 ? 101 : 1001;

			for (int i = 0; i < k; i++)
				ranks.push_back((uint64_t) ((double) i * (double) (n - 1) / (k - 1)));
		}
		std::vector<uint64_t> out(ranks.size());
		gs_options	opt;
		gs_error	err;

		memset(&opt, 0, sizeof opt);
		t.clear();
		for (int i = 0; i < REPS + WARM; i++)
		{
			opt.seed = g_seed + i;
			CK(cudaEventRecord(a, 0));
			gs_status	st = gs_cuda_select(E, d_keys, n, sizeof(K), ranks.data(), ranks.size(), out.data(), &opt, &err);

			CK(cudaEventRecord(b, 0));
			CK(cudaEventSynchronize(b));
			if (st != GS_OK)
			{
				printf("bench select failed: %s\n", err.message);
				bad++;
			}
			CK(cudaEventElapsedTime(&ms, a, b));
			if (i >= WARM)
				t.push_back(ms);
		}
		t_sel[which] = median(t);
		/* spot-check against the sort */
		uint64_t	want;

		CK(cudaMemcpy(d_r, &ranks[ranks.size() / 2], 8, cudaMemcpyHostToDevice));
		k_gather_ref<K><<<1, 32>>>(d_sorted, d_r, 1, d_o);
		CK(cudaMemcpy(&want, d_o, 8, cudaMemcpyDeviceToHost));
		if (want != out[ranks.size() / 2])
			bad++;
	}
	/* approximate: 1024 buckets, 101 ranks */
	float		t_apx;
	double		maxerr = 0,
				sumerr = 0;
	{
		std::vector<uint64_t> ranks;

		for (int i = 0; i < 101; i++)
			ranks.push_back((uint64_t) ((double) i * (double) (n - 1) / 100));
		std::vector<gs_approx_pick> pk(ranks.size());
		gs_options	opt;
		gs_error	err;

		memset(&opt, 0, sizeof opt);
		opt.approx_buckets = 1024;
		t.clear();
		for (int i = 0; i < REPS + WARM; i++)
		{
			opt.seed = g_seed + 1000 + i;
			CK(cudaEventRecord(a, 0));
			gs_status	st = gs_cuda_select_approx(E, d_keys, n, sizeof(K), ranks.data(), ranks.size(), &opt, pk.data(), &err);

			CK(cudaEventRecord(b, 0));
			CK(cudaEventSynchronize(b));
			if (st != GS_OK)
			{
				printf("bench approx failed: %s\n", err.message);
				bad++;
			}
			CK(cudaEventElapsedTime(&ms, a, b));
			if (i >= WARM)
				t.push_back(ms);
			for (size_t k = 0; k < ranks.size(); k++)
			{
				uint64_t	r = ranks[k];
				double		e = r < pk[k].rank_lo ? (double) (pk[k].rank_lo - r) :
					(r > pk[k].rank_hi ? (double) (r - pk[k].rank_hi) : 0.0);

				maxerr = fmax(maxerr, e);
				sumerr += e;
			}
		}
		t_apx = median(t);
		sumerr /= (double) (REPS + WARM) * ranks.size();
	}
	double		scratch = (double) gs_cuda_scratch_bytes(E, n, sizeof(K), 1) / ((double) n * sizeof(K));
	char		line[512];

	snprintf(line, sizeof line,
			 "| %s | 2^%d | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.4f%% / %.4f%% | %.3f | %s |",
			 tname, (int) log2((double) n), dist_name[dist], t_read, t_sort, t_sel[0], t_sel[1], t_sel[2], t_apx,
			 100.0 * maxerr / n, 100.0 * sumerr / n, scratch, bad ? "WRONG" : "ok");
	printf("%s\n", line);
	fflush(stdout);
	if (md)
		fprintf(md, "%s\n", line);
	CK(cudaFree(d_keys));
	CK(cudaFree(d_sorted));
	CK(cudaFree(d_tmp));
	CK(cudaFree(d_sink));
	CK(cudaFree(d_r));
	CK(cudaFree(d_o));
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
}

/* one exact call's milliseconds, median of reps after 2 warm-ups (one call
 * if the first takes over a second); the answers into out */
static float
time_exact(const void *d, uint64_t n, int kb, const std::vector<uint64_t> &ranks, std::vector<uint64_t> &out,
		   int path)
{
	std::vector<float> ts;
	gs_options	opt;
	gs_error	err;

	memset(&opt, 0, sizeof opt);
	gs_cuda_test_exact_path(E, path);
	for (int rep = 0; rep < 7; rep++)
	{
		struct timespec t0, t1;

		opt.seed = g_seed + rep;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (gs_cuda_select(E, d, n, kb, ranks.data(), ranks.size(), out.data(), &opt, &err) != GS_OK)
			printf("crossover: %s\n", err.message);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		float		ms = (float) ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);

		if (rep >= 2 || ms > 1000)
			ts.push_back(ms);
		if (ms > 1000)
			break;
	}
	gs_cuda_test_exact_path(E, GS_CPU_PATH_AUTO);
	return median(ts);
}

/* exact selection against the whole-input sort, by key width, n and number
 * of evenly spread ranks (issue 18 item 7): where does the sort win? */
static int
crossover(const char *mdpath)
{
	FILE	   *md = mdpath ? fopen(mdpath, "w") : NULL;
	const char *hdr = "| keys | n | ranks | select ms | sort ms | sort/select | rule picks | check |\n|---|---:|---:|---:|---:|---:|---|---|";
	char		name[256];
	size_t		fr,
				tot;
	gs_error	err;

	gs_cuda_device_info(E, name, sizeof name, &fr, &tot, &err);
	printf("device: %s\n%s\n", name, hdr);
	if (md)
		fprintf(md, "device: %s, seed %llu, uniform keys, evenly spread ranks, median of 5 after 2 warm-ups\n\n%s\n",
				name, (unsigned long long) g_seed, hdr);
	for (int kb = 4; kb <= 8; kb += 4)
		for (uint64_t n : {(uint64_t) 1 << 20, (uint64_t) 1 << 23, (uint64_t) 1 << 26})
		{
			void	   *d;

			CK(cudaMalloc(&d, n * kb));
			k_gen<<<4096, 256>>>(kb == 4 ? T_FLOAT4 : T_FLOAT8, D_UNIFORM, g_seed, n, d);
			CK(cudaDeviceSynchronize());
			for (uint64_t nr : {256, 1024, 2048, 4096, 8192, 16384, 65536, 262144, 1048576})
			{
				if (nr > n / 4)
					break;
				std::vector<uint64_t> ranks(nr), a(nr), b(nr);

				for (uint64_t i = 0; i < nr; i++)
					ranks[i] = (uint64_t) ((double) i * (double) (n - 1) / (double) (nr - 1));
				float		tsel = time_exact(d, n, kb, ranks, a, GS_CPU_PATH_SELECT);
				float		tsort = time_exact(d, n, kb, ranks, b, GS_CPU_PATH_SORT);
				std::vector<uint64_t> c(nr);

				gs_cuda_select(E, d, n, kb, ranks.data(), nr, c.data(), NULL, &err);
				const char *pick = gs_cuda_test_last_exact_sorted(E) ? "sort" : "select";
				char		line[256];

				snprintf(line, sizeof line, "| f%d | %llu | %llu | %.3f | %.3f | %.2f | %s | %s |", kb * 8,
						 (unsigned long long) n, (unsigned long long) nr, tsel, tsort, tsort / tsel, pick,
						 a == b && b == c ? "equal" : "MISMATCH");
				printf("%s\n", line);
				if (md)
					fprintf(md, "%s\n", line);
				fflush(stdout);
			}
			CK(cudaFree(d));
		}
	if (md)
		fclose(md);
	gs_cuda_close(E);
	return 0;
}

/*
 * page_checks: gs_cuda_extract_pages (issue #31) on heap page images built
 * here byte by byte (the format gs_pages.h restates), against the keys of
 * the values written and against gs_page_extract_cpu on the same pages.
 * Columns 1..4: int2, int4 (NULLs), a dropped int4, the key column (NULLs);
 * some tuples have 3 attributes (the column added later: missing_key or
 * NULL), some line pointers are unused or not listed (not visible).
 */
static uint32_t
page_put_tuple(uint8_t *page, uint32_t *upper, int natts, const bool *isnull, const int64_t *v,
			   const gs_page_column *col)
{
	bool		hasnull = false;
	uint32_t	hoff,
				pos = 0,
				len;
	uint8_t		t[256];

	memset(t, 0, sizeof t);
	for (int i = 0; i < natts; i++)
		hasnull |= isnull[i];
	hoff = GS_TUP_BITS + (hasnull ? (natts + 7) / 8 : 0);
	hoff = (hoff + 7) & ~7u;
	for (int i = 0; i < natts; i++)
	{
		uint32_t	al = col->attalign[i];

		if (isnull[i])
			continue;
		if (hasnull)
			t[GS_TUP_BITS + i / 8] |= (uint8_t) (1 << (i % 8));
		pos = (pos + al - 1) & ~(al - 1);
		memcpy(t + hoff + pos, &v[i], (size_t) col->attlen[i]);	/* little-endian */
		pos += (uint32_t) col->attlen[i];
	}
	len = hoff + pos;
	{
		uint16_t	im2 = (uint16_t) natts,
					im = hasnull ? GS_TUP_HASNULL : 0;

		memcpy(t + GS_TUP_INFOMASK2, &im2, 2);
		memcpy(t + GS_TUP_INFOMASK, &im, 2);
		t[GS_TUP_HOFF] = (uint8_t) hoff;
	}
	*upper = (*upper - len) & ~7u;
	memcpy(page + *upper, t, len);
	return *upper | (GS_PAGE_LP_NORMAL << 15) | (len << 17);
}

static void
page_checks_one(unsigned kb, bool is_float, bool has_missing)
{
	const size_t PB = 8192;
	const int	npages = 300;
	gs_page_column col;
	std::vector<uint8_t> pages(PB * npages, 0);
	std::vector<uint32_t> items;
	std::vector<uint64_t> expect;
	uint64_t	rs = g_seed ^ (kb * 131 + is_float * 7 + has_missing);

	memset(&col, 0, sizeof col);
	col.attnum = 4;
	col.key_bytes = (uint16_t) kb;
	col.is_float = is_float;
	col.has_missing = has_missing;
	col.missing_key = has_missing ? (kb == 2 ? gs_key_from_int16(25) : kb == 4 ? gs_key_from_int32(25)
									 : gs_key_from_int64(25)) : 0;
	{
		int16_t		len[4] = {2, 4, 4, (int16_t) kb};
		uint8_t		al[4] = {2, 4, 4, (uint8_t) kb};

		for (int i = 0; i < 4; i++)
		{
			col.attlen[i] = len[i];
			col.attalign[i] = al[i];
		}
	}
	for (int p = 0; p < npages; p++)
	{
		uint8_t    *page = pages.data() + PB * p;
		uint32_t	upper = (uint32_t) PB;
		int			nlp = 0;
		int			ntup = 20 + (int) (gs_splitmix64(rs++) % 100);

		for (int k = 0; k < ntup; k++)
		{
			uint64_t	r = gs_splitmix64(rs++);
			bool		isnull[4] = {false, (r & 3) == 0, (r & 12) == 0, (r & 0x70) == 0};
			int64_t		v[4] = {(int16_t) r, (int32_t) (r >> 8), 7, 0};
			int			natts = (r >> 40) % 10 == 0 ? 3 : 4;
			uint32_t	lp;

			if ((r >> 44) % 13 == 0)
			{
				nlp++;			/* an unused line pointer (0) */
				continue;
			}
			if (kb == 2)
				v[3] = (int16_t) (r >> 16);
			else if (kb == 4)
			{
				float		f = (float) ((int32_t) (r >> 16)) / 7.0f;
				int32_t		b;

				memcpy(&b, &f, 4);
				v[3] = is_float ? (int64_t) (uint32_t) b : (int64_t) (int32_t) (r >> 16);
			}
			else
			{
				double		d = (double) (int64_t) r / 3.0;

				if (is_float)
					memcpy(&v[3], &d, 8);
				else
					v[3] = (int64_t) r;
			}
			lp = page_put_tuple(page, &upper, natts, isnull, v, &col);
			memcpy(page + GS_PAGE_HEADER_BYTES + 4 * nlp, &lp, 4);
			nlp++;
			if ((r >> 50) % 5 == 0)
				continue;		/* not visible: not listed */
			items.push_back(GS_PAGE_ITEM(p, nlp));
			if (natts < 4)
			{
				if (has_missing)
					expect.push_back(col.missing_key);
			}
			else if (!isnull[3])
				expect.push_back(kb == 2 ? gs_key_from_int16((int16_t) v[3])
								 : kb == 4 ? (is_float ? gs_key_from_float4_bits((uint32_t) v[3])
											  : gs_key_from_int32((int32_t) v[3]))
								 : (is_float ? gs_key_from_float8_bits((uint64_t) v[3])
									: gs_key_from_int64(v[3])));
		}
		{
			uint16_t	lower = (uint16_t) (GS_PAGE_HEADER_BYTES + 4 * nlp);

			memcpy(page + GS_PAGE_PD_LOWER, &lower, 2);
		}
	}

	/* the CPU extraction, page by page */
	uint64_t	ncpu = 0;
	std::vector<uint64_t> cpu_keys;

	for (int p = 0; p < npages; p++)
	{
		std::vector<uint16_t> offs;
		gs_page_ref r;

		for (uint32_t it : items)
			if ((int) (it >> 16) == p)
				offs.push_back((uint16_t) (it & 0xFFFF));
		r.buffer = 1;
		r.block = (uint32_t) p;
		r.noffsets = (uint16_t) offs.size();
		r.flags = 0;
		std::vector<uint64_t> k8(offs.size() + 1);
		uint64_t	n = 0;

		check(gs_page_extract_cpu(pages.data() + PB * p, PB, &r, offs.data(), &col, k8.data(), &n) == 0,
			  "pages kb %u: CPU extraction of page %d", kb, p);
		for (uint64_t i = 0; i < n; i++)
			cpu_keys.push_back(kb == 2 ? ((uint16_t *) k8.data())[i] : kb == 4 ? ((uint32_t *) k8.data())[i]
							   : k8[i]);
		ncpu += n;
	}
	check(cpu_keys == expect, "pages kb %u float %d missing %d: CPU extraction equals the values written",
		  kb, (int) is_float, (int) has_missing);

	/* the device's */
	void	   *d_pages,
			   *d_keys;
	uint32_t   *d_items;
	size_t		nout = 0;
	gs_error	err;

	CK(cudaMalloc(&d_pages, pages.size()));
	CK(cudaMalloc((void **) &d_items, sizeof(uint32_t) * items.size()));
	CK(cudaMalloc(&d_keys, (size_t) kb * items.size() + 8));
	CK(cudaMemcpy(d_pages, pages.data(), pages.size(), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d_items, items.data(), sizeof(uint32_t) * items.size(), cudaMemcpyHostToDevice));
	gs_status	st = gs_cuda_extract_pages(E, d_pages, npages, PB, d_items, items.size(), &col,
										   d_keys, &nout, &err);

	check(st == GS_OK, "gs_cuda_extract_pages: %s", err.message);
	std::vector<uint8_t> raw((size_t) kb * items.size() + 8);

	CK(cudaMemcpy(raw.data(), d_keys, raw.size(), cudaMemcpyDeviceToHost));
	std::vector<uint64_t> dev;

	for (size_t i = 0; i < nout; i++)
		dev.push_back(kb == 2 ? ((uint16_t *) raw.data())[i] : kb == 4 ? ((uint32_t *) raw.data())[i]
					  : ((uint64_t *) raw.data())[i]);
	check(nout == ncpu && dev == cpu_keys, "pages kb %u float %d missing %d: device equals CPU (%zu vs %llu keys)",
		  kb, (int) is_float, (int) has_missing, nout, (unsigned long long) ncpu);

	/*
	 * The mapped path (the service's page shipping): the same pages in
	 * registered host memory, in reverse order and one page apart, read by
	 * the device where they lie; the keys come back to the host.
	 */
	{
		size_t		slots = 2 * (size_t) npages + 1;
		std::vector<uint8_t> host(PB * slots + 4096);
		uint8_t    *base = (uint8_t *) (((uintptr_t) host.data() + 4095) & ~(uintptr_t) 4095);
		std::vector<uint64_t> addrs(npages);
		uint64_t	d_base = 0;
		std::vector<uint8_t> hkeys((size_t) kb * items.size() + 8);
		size_t		nmap = 0;
		/* two segments, the first holding about a third of the keys */
		size_t		seg_keys[2] = {items.size() / 3, items.size() - items.size() / 3 + 1};
		void	   *segs[2] = {hkeys.data(), hkeys.data() + kb * seg_keys[0]};

		for (int p = 0; p < npages; p++)
			memcpy(base + PB * (2 * (size_t) (npages - 1 - p) + 1), pages.data() + PB * p, PB);
		st = gs_cuda_host_register_mapped(E, base, PB * slots, &err);
		check(st == GS_OK, "gs_cuda_host_register_mapped: %s", err.message);
		st = gs_cuda_host_device_address(E, base, &d_base, &err);
		check(st == GS_OK && d_base != 0, "gs_cuda_host_device_address: %s", err.message);
		for (int p = 0; p < npages; p++)
			addrs[p] = d_base + PB * (2 * (uint64_t) (npages - 1 - p) + 1);
		st = gs_cuda_extract_mapped_pages(E, addrs.data(), npages, PB, items.data(), items.size(),
										  &col, segs, seg_keys, 2, &nmap, &err);
		check(st == GS_OK, "gs_cuda_extract_mapped_pages: %s", err.message);
		std::vector<uint64_t> mk;

		for (size_t i = 0; i < nmap; i++)
			mk.push_back(kb == 2 ? ((uint16_t *) hkeys.data())[i] : kb == 4 ? ((uint32_t *) hkeys.data())[i]
						 : ((uint64_t *) hkeys.data())[i]);
		check(nmap == ncpu && mk == cpu_keys,
			  "pages kb %u float %d missing %d: mapped pages on the device equal the CPU (%zu vs %llu keys)",
			  kb, (int) is_float, (int) has_missing, nmap, (unsigned long long) ncpu);
		{
			size_t		few[1] = {1};

			st = gs_cuda_extract_mapped_pages(E, addrs.data(), npages, PB, items.data(), items.size(),
											  &col, segs, few, 1, &nmap, &err);
			check(ncpu <= 1 || st == GS_ERR_INVALID,
				  "gs_cuda_extract_mapped_pages: segments too small are refused (%d)", (int) st);
		}
		addrs[0] += 8;
		st = gs_cuda_extract_mapped_pages(E, addrs.data(), npages, PB, items.data(), items.size(),
										  &col, segs, seg_keys, 2, &nmap, &err);
		check(st == GS_ERR_INVALID, "gs_cuda_extract_mapped_pages: a misaligned page address is refused (%d)",
			  (int) st);
		gs_cuda_host_unregister(E, base);
	}

	/* a listed line pointer past pd_lower: a clean GS_ERR_INVALID */
	{
		uint32_t	badit = GS_PAGE_ITEM(0, 400);

		CK(cudaMemcpy(d_items, &badit, sizeof badit, cudaMemcpyHostToDevice));
		st = gs_cuda_extract_pages(E, d_pages, npages, PB, d_items, 1, &col, d_keys, &nout, &err);
		check(st == GS_ERR_INVALID, "gs_cuda_extract_pages: a tuple outside its page is refused (%d)", (int) st);
	}
	CK(cudaFree(d_pages));
	CK(cudaFree(d_items));
	CK(cudaFree(d_keys));
}

static void
page_checks(void)
{
	long		f0 = g_fail;

	page_checks_one(2, false, false);
	page_checks_one(4, false, true);
	page_checks_one(4, true, false);
	page_checks_one(8, false, true);
	page_checks_one(8, true, true);
	printf("page extraction: %s\n", g_fail == f0 ? "ok" : "FAILED");
}

int			gs_test_split(gs_cuda_engine *e0, const char *what, uint64_t seed);

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "check";
	gs_error	err;

	g_seed = getenv("GS_SEED") ? strtoull(getenv("GS_SEED"), NULL, 0) : (uint64_t) time(NULL) * 2654435761ULL;
	printf("seed %llu\n", (unsigned long long) g_seed);
	/* GS_DEVICE_LIMITS=sm_80|sm_86|...: plan with a smaller card's limits
	 * (test/gpu/arch_limits.sh) */
	if (gs_cuda_open_limited(0, getenv("GS_DEVICE_LIMITS"), &E, &err) != GS_OK)
	{
		printf("gs_cuda_open: %s\n0 passed, 1 failed\n", err.message);
		return 1;
	}
	{
		gs_cuda_limits lim;
		char		name[256];

		gs_cuda_get_limits(E, &lim);
		gs_cuda_device_info(E, name, sizeof name, NULL, NULL, &err);
		printf("device %s: cc %d.%d, %d SMs, %d threads and %d blocks per SM, shared memory %zu per block, "
			   "%zu per SM\n", name, lim.cc_major, lim.cc_minor, lim.sm_count, lim.max_threads_per_sm,
			   lim.max_blocks_per_sm, lim.smem_per_block, lim.smem_per_sm);
		{
			char		plan[1024];

			gs_cuda_test_plan(E, plan, sizeof plan);
			printf("plan: %s\n", plan);
		}
	}
	if (strcmp(mode, "split") == 0)
	{
		/* the split selection over the devices (test/gpu/gs_test_split.cu) */
		int			rc = gs_test_split(E, argc > 2 ? argv[2] : "check", g_seed);

		gs_cuda_close(E);
		return rc;
	}
	if (strcmp(mode, "check") == 0)
	{
		bool		small = argc > 2 && strcmp(argv[2], "small") == 0;
		/* "race": the few cases racecheck can finish in a device call; sizes
		 * above the 8192-key base case, so the count/filter kernels run */
		bool		race = argc > 2 && strcmp(argv[2], "race") == 0;

		api_checks();
		page_checks();
		block_select_checks<uint32_t, 16>();
		block_select_checks<uint64_t, 16>();
		block_select_checks<uint64_t, 8>();
		/* 6000: above the 4096-key base case of 8-byte keys on a T4
		 * (GS_DEVICE_LIMITS=sm_75), below the 8192 of the others */
		uint64_t	sizes[] = {0, 1, 2, 3, 31, 1000, 6000, 9000, 100000, 1 << 20, 1 << 24, 1 << 26, 1 << 28};
		int			nsz = sizeof sizes / sizeof sizes[0];

		for (int si = 0; si < nsz; si++)
		{
			uint64_t	n = sizes[si];

			if (small && n > (getenv("GS_TINY") && *getenv("GS_TINY") ? 9000u : 100000u))
				break;
			if (race && n != 9000 && n != 100000)
				continue;
			for (int type = 0; type < NTYPES; type++)
				for (int dist = 0; dist < NDISTS; dist++)
				{
					if (race && ((type != T_FLOAT4 && type != T_FLOAT8) ||
								 (dist != D_UNIFORM && dist != D_ADVERSARIAL && dist != D_SPECIAL)))
						continue;
					if (small && ((type != T_INT2 && type != T_FLOAT4 && type != T_FLOAT8) ||
								  (dist != D_UNIFORM && dist != D_EQUAL && dist != D_ADVERSARIAL && dist != D_SPECIAL) ||
								  (n > 0 && n < 1000)))
						continue;
					if (n == (1u << 26) && type != T_INT4 && type != T_FLOAT8)
						continue;
					if (n == (1u << 28) && !((type == T_FLOAT4 || type == T_FLOAT8) &&
											(dist == D_UNIFORM || dist == D_ADVERSARIAL || dist == D_SPECIAL || dist == D_SORTED)))
						continue;
					run_type(type, dist, n, n <= (1u << 20));
				}
			printf("size %llu done: %ld passed, %ld failed\n", (unsigned long long) n, g_pass, g_fail);
			fflush(stdout);
		}
		gs_cuda_close(E);
		printf("%ld passed, %ld failed\n", g_pass, g_fail);
		return g_fail ? 1 : 0;
	}
	if (strcmp(mode, "prof") == 0)
	{
		/* a few calls of each kind on f32 and f64 2^28 uniform, for a profiler;
		 * GS_PROF_ONLY="kb:kind" limits it to one (test/gpu/run.sh prof runs
		 * ncu once per kind so that kernel times can be told apart) */
		const char *only = getenv("GS_PROF_ONLY");
		const int	reps = getenv("GS_PROF_REPS") ? atoi(getenv("GS_PROF_REPS")) : 5;
		const int	pdist = getenv("GS_PROF_DIST") ? atoi(getenv("GS_PROF_DIST")) : D_UNIFORM;

		for (int kb = 4; kb <= 8; kb += 4)
		{
			if (only && atoi(only) != kb)
				continue;
			uint64_t	n = (uint64_t) 1 << 28;
			void	   *d;

			CK(cudaMalloc(&d, n * kb));
			k_gen<<<4096, 256>>>(kb == 4 ? T_FLOAT4 : T_FLOAT8, pdist, g_seed, n, d);
			CK(cudaDeviceSynchronize());
			for (int which = 0; which < 4; which++)
			{
				if (only && strchr(only, ':') && atoi(strchr(only, ':') + 1) != which)
					continue;
				std::vector<uint64_t> ranks;
				int			k = which == 0 ? 1 : (which == 1 ? 101 : (which == 2 ? 1001 : 101));

				for (int i = 0; i < k; i++)
					ranks.push_back(k == 1 ? n / 2 : (uint64_t) ((double) i * (double) (n - 1) / (k - 1)));
				std::vector<uint64_t> out(k);
				std::vector<gs_approx_pick> pk(k);
				gs_options	opt;

				memset(&opt, 0, sizeof opt);
				opt.approx_buckets = 1024;
				for (int rep = 0; rep < reps; rep++)
				{
					struct timespec t0, t1;

					opt.seed = g_seed + rep;
					clock_gettime(CLOCK_MONOTONIC, &t0);
					gs_status	st = which == 3 ?
						gs_cuda_select_approx(E, d, n, kb, ranks.data(), k, &opt, pk.data(), &err) :
						gs_cuda_select(E, d, n, kb, ranks.data(), k, out.data(), &opt, &err);

					clock_gettime(CLOCK_MONOTONIC, &t1);
					printf("prof kb=%d kind=%d rep=%d status=%d %.3f ms\n", kb, which, rep, (int) st,
						   (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
				}
			}
			CK(cudaFree(d));
		}
		gs_cuda_close(E);
		return 0;
	}
	if (strcmp(mode, "sweep") == 0)
	{
		/* single rank at n = 2^28 under several finishing-sort thresholds
		 * (keys; -1 = default) and splitter distances (sigmas; 0 = default),
		 * to choose the defaults; the key bits of the last call's finishing
		 * sort in brackets */
		struct { long long th; double z; const char *name; } cf[] = {
			{-1, 0, "default"}, {-1, 4.0, "z=4"}, {-1, 2.5, "z=2.5"}, {1 << 19, 0, "sort<=2^19"},
			{1 << 17, 0, "sort<=2^17"}, {0, 0, "never sort"}};
		const uint64_t n = (uint64_t) 1 << 28;

		printf("| type | dist | rank |");
		for (auto &c : cf)
			printf(" %s |", c.name);
		printf("\n|---|---|---|---|---|---|---|---|---|\n");
		for (int kb = 4; kb <= 8; kb += 4)
			for (int dist : {D_UNIFORM, D_ADVERSARIAL})
			{
				void	   *d;

				CK(cudaMalloc(&d, n * kb));
				k_gen<<<4096, 256>>>(kb == 4 ? T_FLOAT4 : T_FLOAT8, dist, g_seed, n, d);
				CK(cudaDeviceSynchronize());
				for (uint64_t r : {n / 2, n / 100})
				{
					printf("| f%d | %s | %s |", kb * 8, dist_name[dist], r == n / 2 ? "n/2" : "n/100");
					uint64_t	first = 0;

					for (auto &c : cf)
					{
						std::vector<float> ts;
						uint64_t	out = 0;
						gs_options	opt;

						memset(&opt, 0, sizeof opt);
						gs_cuda_test_focus_sort(E, c.th);
						gs_cuda_test_focus_z(E, c.z);
						/* 10 warm-up calls: the clocks ramp up from idle */
						for (int rep = 0; rep < 25; rep++)
						{
							struct timespec t0, t1;

							opt.seed = g_seed + rep;
							clock_gettime(CLOCK_MONOTONIC, &t0);
							if (gs_cuda_select(E, d, n, kb, &r, 1, &out, &opt, &err) != GS_OK)
								printf("sweep: %s\n", err.message);
							clock_gettime(CLOCK_MONOTONIC, &t1);
							if (rep >= 10)
								ts.push_back((float) ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6));
						}
						if (&c == &cf[0])
							first = out;
						printf(" %.3f%s (%db) |", median(ts), out == first ? "" : " MISMATCH", gs_cuda_test_last_sort_bits(E));
					}
					printf("\n");
				}
				gs_cuda_test_focus_sort(E, -1);
				gs_cuda_test_focus_z(E, 0);
				CK(cudaFree(d));
			}
		gs_cuda_close(E);
		return 0;
	}
	if (strcmp(mode, "crossover") == 0)
		return crossover(argc > 2 ? argv[2] : NULL);
	/* bench */
	FILE	   *md = argc > 2 ? fopen(argv[2], "w") : NULL;
	char		name[256];
	size_t		fr,
				tot;

	gs_cuda_device_info(E, name, sizeof name, &fr, &tot, &err);
	const char *hdr = "| type | n | dist | read pass ms | CUB sort+pick ms | exact 1 rank ms | 101 ranks ms | 1001 ranks ms | approx 1024b ms | approx max/mean rank err (%n) | scratch/input (1 rank) | check |\n|---|---|---|---|---|---|---|---|---|---|---|---|";

	printf("device: %s\n%s\n", name, hdr);
	if (md)
		fprintf(md, "device: %s, seed %llu\n\n%s\n", name, (unsigned long long) g_seed, hdr);
	uint64_t	ns[] = {1 << 24, 1 << 26, 1 << 28};

	for (uint64_t n : ns)
		for (int dist : {D_UNIFORM, D_ADVERSARIAL})
		{
			bench_one<uint32_t>(md, "f32", T_FLOAT4, dist, n);
			bench_one<uint64_t>(md, "f64", T_FLOAT8, dist, n);
		}
	if (md)
		fclose(md);
	gs_cuda_close(E);
	return 0;
}
