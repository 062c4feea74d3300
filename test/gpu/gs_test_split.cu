/*
 * gs_test_split.cu — the engine harness's split-selection part
 * (`gs_test.bin split check|bench`; issue 35): gs_cuda_select_split over
 * one device and over every device the process sees, against the CPU
 * engine's gs_cpu_select on the same keys.
 *
 *   check  2-, 4- and 8-byte keys in ragged segments (some empty), seven
 *          distributions (skew and one value make the narrowing go digit
 *          by digit), 1-1001 ranks, an 8 MB budget that forces several
 *          levels (and, at 1001 ranks, passes of several hundred prefixes),
 *          and the default budget; bad arguments, a
 *          budget too small, an interrupt; the engines' memory back where
 *          it was after every call.
 *   bench  2^GS_SPLIT_LOG2 (default 30) float8 keys in page-locked host
 *          memory, rounds alternating: the read floor (every key copied to
 *          one device, then half to each), the whole input on one device
 *          (copy + gs_cuda_select), the split over one and over two
 *          devices under a budget of GS_SPLIT_BUDGET_MB (default 1024) a
 *          device, for 3 and 101 fractions; the CPU engine once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#include "gs_cuda.h"
#include "gs_keys.h"
#include "gs_pages.h"			/* gs_page_store_key */

static long s_pass, s_fail;

#define SPLIT_CHECK(cond, ...) do { if (cond) s_pass++; else { s_fail++; \
	if (s_fail <= 40) { printf("FAIL: "); printf(__VA_ARGS__); printf("\n"); } } } while (0)

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

enum { SD_UNIFORM, SD_FEW, SD_ONE, SD_SKEW, SD_SORTED, SD_DEEP, SD_EXTREMES, SD_N };
static const char *sd_name[] = {"uniform", "16-distinct", "one-value", "90%-one", "sorted", "deep-prefix", "extremes"};

/* key i of a distribution, as a 64-bit value cut to kb bytes */
static uint64_t
split_key(int dist, uint64_t i, uint64_t n, uint64_t seed, unsigned kb)
{
	uint64_t	r = gs_splitmix64(seed + i);
	uint64_t	mask = kb == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * kb)) - 1;
	uint64_t	top = mask ^ (mask >> 1);

	switch (dist)
	{
		case SD_FEW:
			return (gs_splitmix64(seed + (r & 15)) & mask);
		case SD_ONE:
			return gs_splitmix64(seed) & mask;
		case SD_SKEW:
			return (r % 10) ? (gs_splitmix64(seed) & mask) : (r >> 8) & mask;
		case SD_SORTED:
			return (uint64_t) ((double) i / (double) (n ? n : 1) * (double) mask) & mask;
		case SD_DEEP:
			/* one shared top, the variety in the low bits: level after level */
			return (top | (mask >> 2)) ^ ((r >> 8) & (kb == 2 ? 0xFF : 0xFFFFF));
		case SD_EXTREMES:
			return (r & 1) ? mask : ((r & 2) ? 0 : (r >> 8) & mask);
		default:
			return r & mask;
	}
}

/* ragged segments over one buffer: random lengths, some empty */
static std::vector<gs_segment>
ragged(const char *keys, uint64_t n, unsigned kb, uint64_t seed)
{
	std::vector<gs_segment> segs;
	uint64_t	off = 0,
				j = 0;

	while (off < n)
	{
		uint64_t	r = gs_splitmix64(seed ^ (j++ * 7919));
		uint64_t	len = (r & 7) == 0 ? 0 : 1 + r % (n / 5 + 1000);

		if (len > n - off)
			len = n - off;
		segs.push_back({keys + off * kb, (size_t) len});
		off += len;
	}
	segs.push_back({keys + off * kb, 0});
	return segs;
}

static int
never(void *arg)
{
	(void) arg;
	return 0;
}

static int
always(void *arg)
{
	(void) arg;
	return 1;
}

static void
check_one(gs_cuda_engine **eng, int neng, unsigned kb, int dist, uint64_t n, size_t budget, int nr, uint64_t seed)
{
	char	   *keys = NULL;
	gs_error	err;
	std::vector<uint64_t> ranks(nr), got(nr), want(nr);

	if (gs_cuda_host_alloc(eng[0], n * kb + 16, (void **) &keys, &err) != GS_OK)
	{
		SPLIT_CHECK(false, "host alloc %llu keys: %s", (unsigned long long) n, err.message);
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		gs_page_store_key(keys, i, split_key(dist, i, n, seed, kb), kb);
	for (int j = 0; j < nr; j++)
		ranks[j] = j == 0 ? 0 : j == 1 ? n - 1 : (j == 2 ? n / 2 : gs_splitmix64(seed * 31 + j) % n);
	std::vector<gs_segment> segs = ragged(keys, n, kb, seed);
	gs_input	in = {segs.data(), segs.size(), kb};
	gs_options	opt;
	gs_split_stats st;
	size_t		before[2] = {0, 0},
				after[2] = {0, 0};

	memset(&opt, 0, sizeof opt);
	opt.interrupt = never;
	for (int i = 0; i < neng; i++)
		gs_cuda_memory_in_use(eng[i], &before[i], NULL);
	gs_status	s = gs_cuda_select_split(eng, neng, &in, ranks.data(), nr, got.data(), budget, &opt, &st, &err);
	gs_status	c = gs_cpu_select(&in, ranks.data(), nr, want.data(), NULL, &err);

	for (int i = 0; i < neng; i++)
		gs_cuda_memory_in_use(eng[i], &after[i], NULL);
	SPLIT_CHECK(s == GS_OK && c == GS_OK, "%u-byte %s n=%llu devices=%d budget=%zu ranks=%d: status %d/%d %s", kb,
				sd_name[dist], (unsigned long long) n, neng, budget, nr, s, c, err.message);
	if (s == GS_OK && c == GS_OK)
	{
		int			bad = 0;

		for (int j = 0; j < nr; j++)
			bad += got[j] != want[j];
		SPLIT_CHECK(bad == 0, "%u-byte %s n=%llu devices=%d budget=%zu: %d of %d ranks differ (rank %llu: %llx vs %llx)",
					kb, sd_name[dist], (unsigned long long) n, neng, budget, bad, nr,
					(unsigned long long) ranks[0], (unsigned long long) got[0], (unsigned long long) want[0]);
	}
	for (int i = 0; i < neng; i++)
		SPLIT_CHECK(before[i] == after[i], "device %d memory %zu -> %zu after a split call", i, before[i], after[i]);
	gs_cuda_host_free(eng[0], keys);
}

static void
check_errors(gs_cuda_engine **eng, int neng)
{
	uint64_t	keys[1000],
				r = 5,
				bad_r = 1000,
				out = 0;
	gs_segment	seg = {keys, 1000};
	gs_input	in = {&seg, 1, 8};
	gs_options	opt;
	gs_error	err;
	gs_cuda_engine *twice[2] = {eng[0], eng[0]};

	for (int i = 0; i < 1000; i++)
		keys[i] = gs_splitmix64(i);
	memset(&opt, 0, sizeof opt);
	SPLIT_CHECK(gs_cuda_select_split(eng, neng, &in, &bad_r, 1, &out, 0, NULL, NULL, &err) == GS_ERR_INVALID,
				"a rank past the input is GS_ERR_INVALID");
	SPLIT_CHECK(gs_cuda_select_split(twice, 2, &in, &r, 1, &out, 0, NULL, NULL, &err) == GS_ERR_INVALID,
				"one device twice is GS_ERR_INVALID");
	SPLIT_CHECK(gs_cuda_select_split(eng, neng, &in, &r, 1, &out, (size_t) 4 << 20, NULL, NULL, &err) ==
				GS_ERR_TOO_LARGE, "a 4 MB budget is GS_ERR_TOO_LARGE: %s", err.message);
	opt.interrupt = always;
	SPLIT_CHECK(gs_cuda_select_split(eng, neng, &in, &r, 1, &out, 0, &opt, NULL, &err) == GS_ERR_CANCELED,
				"an interrupt is GS_ERR_CANCELED");
	seg.n = 0;
	SPLIT_CHECK(gs_cuda_select_split(eng, neng, &in, &r, 1, &out, 0, NULL, NULL, &err) == GS_ERR_INVALID,
				"ranks of an empty input are GS_ERR_INVALID");
	SPLIT_CHECK(gs_cuda_select_split(eng, neng, &in, NULL, 0, NULL, 0, NULL, NULL, &err) == GS_OK,
				"no ranks of an empty input is GS_OK");
}

static int
split_check(gs_cuda_engine **eng, int neng, uint64_t seed)
{
	const size_t small = (size_t) 8 << 20;
	const uint64_t sizes[] = {1, 1000, 3000000, 30000000};
	const int	nrs[] = {1, 3, 101, 1001};

	for (int d = 1; d <= neng; d++)
	{
		check_errors(eng, d);
		for (unsigned kb = 2; kb <= 8; kb *= 2)
			for (int dist = 0; dist < SD_N; dist++)
				for (int si = 0; si < 4; si++)
				{
					if (sizes[si] == 30000000 && dist != SD_UNIFORM && dist != SD_DEEP && dist != SD_SKEW)
						continue;
					for (int ri = 0; ri < 4; ri++)
					{
						/* 1001 ranks: past GS_DIGIT_PREFIXES_MAX open prefixes in a level,
						 * and more candidates than a gather may take */
						if (ri == 3 && (si < 2 || (dist != SD_UNIFORM && dist != SD_SKEW && dist != SD_SORTED)))
							continue;
						uint64_t	sd = seed + kb * 1000 + dist * 100 + si * 10 + ri;

						check_one(eng, d, kb, dist, sizes[si], small, nrs[ri], sd);
						if (ri == 1 && si >= 2)
							check_one(eng, d, kb, dist, sizes[si], 0, nrs[ri], sd);
					}
				}
		printf("split check, %d device(s): %ld passed, %ld failed\n", d, s_pass, s_fail);
		fflush(stdout);
	}
	printf("%ld passed, %ld failed\n", s_pass, s_fail);
	return s_fail ? 1 : 0;
}

/* ------------------------------------------------------------ bench */

static double
copy_floor(gs_cuda_engine **eng, int neng, const char *keys, uint64_t n)
{
	const size_t piece = (size_t) 64 << 20;
	std::vector<void *> buf(neng);
	std::vector<cudaStream_t> st(neng);
	double		t0;

	for (int i = 0; i < neng; i++)
	{
		cudaSetDevice(i);
		cudaMalloc(&buf[i], 2 * piece);
		cudaStreamCreate(&st[i]);
	}
	t0 = now_ms();
	size_t		bytes = n * 8;

	for (size_t off = 0, b = 0; off < bytes; off += piece, b++)
	{
		int			i = (int) (b % neng);
		size_t		len = std::min(piece, bytes - off);

		cudaSetDevice(i);
		cudaMemcpyAsync((char *) buf[i] + ((b / neng) & 1) * piece, keys + off, len, cudaMemcpyHostToDevice, st[i]);
	}
	for (int i = 0; i < neng; i++)
		cudaStreamSynchronize(st[i]);
	t0 = now_ms() - t0;
	for (int i = 0; i < neng; i++)
	{
		cudaSetDevice(i);
		cudaFree(buf[i]);
		cudaStreamDestroy(st[i]);
	}
	cudaSetDevice(0);
	(void) eng;
	return t0;
}

static double
whole_on_one(gs_cuda_engine *e, const char *keys, uint64_t n, const uint64_t *ranks, int nr, uint64_t *out)
{
	void	   *d = NULL;
	gs_error	err;
	double		t0 = now_ms();

	if (gs_cuda_alloc(e, n * 8, &d, &err) != GS_OK)
		return -1;
	gs_cuda_copy_to_device_async(e, d, keys, n * 8, &err);
	gs_cuda_sync(e, &err);
	gs_status	s = gs_cuda_select(e, d, n, 8, ranks, nr, out, NULL, &err);

	t0 = now_ms() - t0;
	gs_cuda_free(e, d);
	return s == GS_OK ? t0 : -1;
}

static int
split_bench(gs_cuda_engine **eng, int neng, uint64_t seed)
{
	const int	lg = getenv("GS_SPLIT_LOG2") ? atoi(getenv("GS_SPLIT_LOG2")) : 30;
	const uint64_t n = UINT64_C(1) << lg;
	const size_t budget = (size_t) (getenv("GS_SPLIT_BUDGET_MB") ? atoi(getenv("GS_SPLIT_BUDGET_MB")) : 1024) << 20;
	const int	rounds = getenv("GS_SPLIT_ROUNDS") ? atoi(getenv("GS_SPLIT_ROUNDS")) : 3;
	uint64_t   *keys = NULL;
	gs_error	err;
	int			fr_n[2] = {3, 101};
	std::vector<uint64_t> ranks[2], ref[2];

	if (gs_cuda_host_alloc(eng[0], n * 8, (void **) &keys, &err) != GS_OK)
	{
		printf("host alloc of 2^%d keys: %s\n", lg, err.message);
		return 1;
	}
	double		g0 = now_ms();

	for (uint64_t i = 0; i < n; i++)
		keys[i] = gs_key_from_float8((double) (gs_splitmix64(seed + i) >> 11) * 0x1.0p-53 * 1e6 - 5e5);
	printf("generated 2^%d float8 keys (%.1f GB, page-locked) in %.0f ms; budget %zu MB a device; %d device(s)\n",
		   lg, n * 8 / 1e9, now_ms() - g0, budget >> 20, neng);
	for (int f = 0; f < 2; f++)
		for (int j = 0; j < fr_n[f]; j++)
		{
			double		p = fr_n[f] == 3 ? (j == 0 ? 0.5 : j == 1 ? 0.9 : 0.99) : j / 100.0;

			ranks[f].push_back((uint64_t) (p * (double) (n - 1)));
		}
	for (int f = 0; f < 2; f++)
	{
		ref[f].resize(fr_n[f]);
		if (whole_on_one(eng[0], (const char *) keys, n, ranks[f].data(), fr_n[f], ref[f].data()) < 0)
			printf("whole-on-one-device reference failed\n");
	}

	gs_segment	seg = {keys, (size_t) n};
	gs_input	in = {&seg, 1, 8};

	printf("\n| round | read floor, 1 device | read floor, %d devices | whole on 1 device, 3 fr | split 1 device, 3 fr | "
		   "split %d devices, 3 fr | whole on 1, 101 fr | split 1, 101 fr | split %d, 101 fr |\n|---|---|---|---|---|---|---|---|---|\n",
		   neng, neng, neng);
	int			wrong = 0;
	gs_split_stats st1,
				st2;

	for (int r = 0; r < rounds; r++)
	{
		double		t[8];
		std::vector<uint64_t> out(101);

		t[0] = copy_floor(eng, 1, (const char *) keys, n);
		t[1] = copy_floor(eng, neng, (const char *) keys, n);
		for (int f = 0; f < 2; f++)
		{
			double		a;

			t[2 + 3 * f] = whole_on_one(eng[0], (const char *) keys, n, ranks[f].data(), fr_n[f], out.data());
			a = now_ms();
			if (gs_cuda_select_split(eng, 1, &in, ranks[f].data(), fr_n[f], out.data(), budget, NULL, &st1, &err) != GS_OK)
				printf("split, 1 device: %s\n", err.message);
			t[3 + 3 * f] = now_ms() - a;
			wrong += memcmp(out.data(), ref[f].data(), fr_n[f] * 8) != 0;
			a = now_ms();
			if (gs_cuda_select_split(eng, neng, &in, ranks[f].data(), fr_n[f], out.data(), budget, NULL, &st2, &err) != GS_OK)
				printf("split, %d devices: %s\n", neng, err.message);
			t[4 + 3 * f] = now_ms() - a;
			wrong += memcmp(out.data(), ref[f].data(), fr_n[f] * 8) != 0;
		}
		printf("| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", r + 1, t[0], t[1], t[2], t[3], t[4],
			   t[5], t[6], t[7]);
		fflush(stdout);
	}
	printf("\nlast split (101 fr): 1 device %d count + %d gather passes, %llu candidates; %d devices %d + %d, %llu\n",
		   st1.count_passes, st1.gather_passes, (unsigned long long) st1.candidates, neng, st2.count_passes,
		   st2.gather_passes, (unsigned long long) st2.candidates);
	if (!getenv("GS_SPLIT_NO_CPU"))
	{
		std::vector<uint64_t> out(3);
		double		a = now_ms();

		gs_cpu_select(&in, ranks[0].data(), 3, out.data(), NULL, &err);
		printf("CPU engine (gs_cpu_select, one thread), 3 fractions: %.0f ms\n", now_ms() - a);
		wrong += memcmp(out.data(), ref[0].data(), 24) != 0;
	}
	printf("answers differing from the whole-on-one-device reference: %d\n", wrong);
	gs_cuda_host_free(eng[0], keys);
	return wrong ? 1 : 0;
}

/* gs_test.bin split check|bench: e0 is the harness's engine on device 0 */
int
gs_test_split(gs_cuda_engine *e0, const char *what, uint64_t seed)
{
	gs_cuda_engine *eng[2] = {e0, NULL};
	int			count = 0,
				neng = 1,
				rc;
	gs_error	err;

	if (gs_cuda_device_count(&count, &err) == GS_OK && count >= 2 &&
		gs_cuda_open(1, &eng[1], &err) == GS_OK)
		neng = 2;
	gs_cuda_make_current(e0, &err);
	printf("split %s over up to %d device(s)\n", what, neng);
	if (strcmp(what, "bench") == 0)
		rc = split_bench(eng, neng, seed);
	else
		rc = split_check(eng, neng, seed);
	if (eng[1])
		gs_cuda_close(eng[1]);
	return rc;
}
