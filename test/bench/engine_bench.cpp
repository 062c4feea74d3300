// engine_bench.cpp — times the CPU selection engine (kernels/cpu/: exact
// gs_cpu_select in cpu_exact.c, approximate gs_cpu_select_approx in
// cpu_approx.c) against std::nth_element on the same data.  Built and run by
// engine_bench.sh.
//
//   engine_bench [n] [reps]      defaults: n = 10,000,000, reps = 7
//   engine_bench crossover [reps] selection vs the sort path (cpu_sort.c) for
//                                n = 1M, 10M and 1k..1M evenly spread ranks
//
// For each distribution the keys are float8 values mapped by
// gs_key_from_float8 and stored in 8M-key segments (like the transition
// state's 64 MB chunks).  Every timing is the median of `reps` runs.
// std::nth_element runs on a fresh copy of the doubles each time (the copy is
// not timed: it permutes its input).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "gs_engine.h"
#include "gs_keys.h"
/* cpu_internal.h's forced-path entry (that header is C only) */
gs_status cpu_select_path(const gs_input *in, const uint64_t *ranks, size_t nranks,
						  uint64_t *out_keys, const gs_options *opt, gs_error *err, int path);
}

using clk = std::chrono::steady_clock;

static double
median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

static double
ms_since(clk::time_point t0)
{
	return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

static void
die_if(gs_status st, const gs_error &err, const char *what)
{
	if (st != GS_OK)
	{
		std::fprintf(stderr, "%s failed: %d %s\n", what, (int) st, err.message);
		std::exit(1);
	}
}

struct Row
{
	std::string dist;
	double single, p101, nth, approx, approx_maxerr_pct;
};

static Row
bench(const std::string &name, const std::vector<double> &vals, int reps)
{
	size_t n = vals.size();
	std::vector<uint64_t> keys(n);
	for (size_t i = 0; i < n; i++)
		keys[i] = gs_key_from_float8(vals[i]);

	const size_t seg_keys = (size_t) 8 << 20;
	std::vector<gs_segment> segs;
	for (size_t off = 0; off < n; off += seg_keys)
		segs.push_back({keys.data() + off, std::min(seg_keys, n - off)});
	gs_input in = {segs.data(), segs.size(), 8};

	uint64_t r_single = n / 2;
	std::vector<uint64_t> r101(101);
	for (int i = 0; i <= 100; i++)
		r101[i] = (uint64_t) ((double) i / 100.0 * (double) (n - 1));
	std::vector<uint64_t> out(101);
	std::vector<gs_approx_pick> picks(101);
	gs_options opt = {};
	opt.seed = 42;
	opt.approx_buckets = 1024;
	gs_error err;

	std::vector<double> t_single, t_p101, t_nth, t_approx;
	std::vector<double> copy(n);
	double nth_answer = 0;

	for (int rep = 0; rep < reps; rep++)
	{
		auto t0 = clk::now();
		die_if(gs_cpu_select(&in, &r_single, 1, out.data(), &opt, &err), err, "single");
		t_single.push_back(ms_since(t0));

		t0 = clk::now();
		die_if(gs_cpu_select(&in, r101.data(), 101, out.data(), &opt, &err), err, "p101");
		t_p101.push_back(ms_since(t0));

		std::memcpy(copy.data(), vals.data(), n * sizeof(double));
		t0 = clk::now();
		std::nth_element(copy.begin(), copy.begin() + r_single, copy.end());
		t_nth.push_back(ms_since(t0));
		nth_answer = copy[r_single];

		t0 = clk::now();
		die_if(gs_cpu_select_approx(&in, r101.data(), 101, &opt, picks.data(), &err), err, "approx");
		t_approx.push_back(ms_since(t0));
	}

	// cross-check: the engine's median is nth_element's (as a key)
	uint64_t med;
	die_if(gs_cpu_select(&in, &r_single, 1, &med, &opt, &err), err, "single");
	if (med != gs_key_from_float8(nth_answer))
	{
		std::fprintf(stderr, "%s: engine median %.17g != nth_element %.17g\n", name.c_str(),
					 gs_float8_from_key(med), nth_answer);
		std::exit(1);
	}
	double maxerr = 0;
	for (int i = 0; i <= 100; i++)
	{
		uint64_t r = r101[i];
		double e = r < picks[i].rank_lo ? (double) (picks[i].rank_lo - r)
			: r > picks[i].rank_hi ? (double) (r - picks[i].rank_hi) : 0.0;
		maxerr = std::max(maxerr, e);
	}
	return {name, median(t_single), median(t_p101), median(t_nth), median(t_approx),
			100.0 * maxerr / (double) n};
}

// selection (path 1) vs sort (path 2) on uniform float8 keys: min and
// median of reps runs each, alternating so that load on a shared box hits both
static void
crossover(int reps)
{
	const size_t ns[] = {1000000, 10000000};
	const size_t nrs[] = {1000, 2000, 3000, 5000, 10000, 100000, 300000, 1000000};
	std::mt19937_64 g(777);
	std::uniform_real_distribution<double> u(0.0, 1.0);

	std::printf("uniform float8 keys, evenly spread ranks, %d runs each, ms (min / median)\n\n", reps);
	std::printf("| n | ranks | select min | select med | sort min | sort med | sort/select (min) |\n");
	std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
	for (size_t n : ns)
	{
		std::vector<uint64_t> keys(n);
		for (auto &k : keys)
			k = gs_key_from_float8(u(g));
		const size_t seg_keys = (size_t) 8 << 20;
		std::vector<gs_segment> segs;
		for (size_t off = 0; off < n; off += seg_keys)
			segs.push_back({keys.data() + off, std::min(seg_keys, n - off)});
		gs_input in = {segs.data(), segs.size(), 8};
		gs_options opt = {};
		gs_error err;

		for (size_t nr : nrs)
		{
			std::vector<uint64_t> ranks(nr), o1(nr), o2(nr);
			for (size_t i = 0; i < nr; i++)
				ranks[i] = (uint64_t) ((double) i / (double) (nr > 1 ? nr - 1 : 1) * (double) (n - 1));
			std::vector<double> t[2];
			for (int rep = 0; rep < reps; rep++)
				for (int p = 1; p <= 2; p++)
				{
					auto t0 = clk::now();
					die_if(cpu_select_path(&in, ranks.data(), nr, (p == 1 ? o1 : o2).data(), &opt, &err, p),
						   err, "crossover");
					t[p - 1].push_back(ms_since(t0));
				}
			if (o1 != o2)
			{
				std::fprintf(stderr, "crossover: paths disagree at n %zu ranks %zu\n", n, nr);
				std::exit(1);
			}
			double s1 = *std::min_element(t[0].begin(), t[0].end());
			double s2 = *std::min_element(t[1].begin(), t[1].end());
			std::printf("| %zu | %zu | %.1f | %.1f | %.1f | %.1f | %.2f |\n", n, nr, s1, median(t[0]), s2,
						median(t[1]), s2 / s1);
			std::fflush(stdout);
		}
	}
}

int
main(int argc, char **argv)
{
	if (argc > 1 && std::strcmp(argv[1], "crossover") == 0)
	{
		crossover(argc > 2 ? std::atoi(argv[2]) : 5);
		return 0;
	}
	size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : 10000000;
	int reps = argc > 2 ? std::atoi(argv[2]) : 7;
	std::mt19937_64 g(12345);
	std::vector<Row> rows;

	{
		std::uniform_real_distribution<double> u(0.0, 1.0);
		std::vector<double> v(n);
		for (auto &x : v)
			x = u(g);
		rows.push_back(bench("uniform [0,1)", v, reps));
	}
	{
		// values straddling zero (like random()*2e6-1e6): the key space of a
		// sample bracket spanning both signs is almost all empty (the tiny
		// exponents of both signs), the data sits at its two far ends.  Own
		// generator: the other distributions keep their data.
		std::mt19937_64 gm(54321);
		std::uniform_real_distribution<double> u(-1e6, 1e6);
		std::vector<double> v(n);
		for (auto &x : v)
			x = u(gm);
		rows.push_back(bench("mixed sign [-1e6,1e6)", v, reps));
	}
	{
		// adversarial for radix selection: a dense cluster (1.0 + up to 2^20
		// ulps) holding 99.8% of the keys, plus rare -Inf / +Inf outliers that
		// stretch the key range to nearly the whole 64-bit space.
		std::vector<double> v(n);
		for (auto &x : v)
		{
			uint64_t r = g();
			if (r % 1000 == 0)
				x = -INFINITY;
			else if (r % 1000 == 1)
				x = INFINITY;
			else
			{
				uint64_t b;
				double one = 1.0;
				std::memcpy(&b, &one, 8);
				b += (r >> 20) & ((1u << 20) - 1);
				std::memcpy(&x, &b, 8);
			}
		}
		rows.push_back(bench("cluster+inf outliers", v, reps));
	}
	{
		// few distinct values (16), heavy ties
		std::vector<double> pool(16);
		std::uniform_real_distribution<double> u(-1e9, 1e9);
		for (auto &x : pool)
			x = u(g);
		std::vector<double> v(n);
		for (auto &x : v)
			x = pool[g() % 16];
		rows.push_back(bench("16 distinct", v, reps));
	}
	{
		std::vector<double> v(n);
		for (size_t i = 0; i < n; i++)
			v[i] = (double) i;
		rows.push_back(bench("sorted", v, reps));
	}
	{
		// two narrow far-apart clusters (30% near -1e12, 70% near 3.5): one
		// gap is nearly all of the splitters' key range (the approximate
		// counting pass folds it out).  Own generator, after the other rows.
		std::mt19937_64 gc(24680);
		std::uniform_real_distribution<double> u(0.0, 1e-4);
		std::vector<double> v(n);
		for (auto &x : v)
			x = gc() % 10 < 3 ? -1e12 * (1.0 + u(gc)) : 3.5 + u(gc);
		rows.push_back(bench("2 far clusters", v, reps));
	}

	std::printf("n = %zu float8 keys, median of %d runs, times in ms\n\n", n, reps);
	std::printf("| distribution | nth_element (1 rank) | select 1 rank | speedup vs nth | select 101 ranks | 101 / 1 | approx 1024 (101 ranks) | approx max err %%n |\n");
	std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (auto &r : rows)
		std::printf("| %s | %.1f | %.1f | %.2fx | %.1f | %.2fx | %.1f | %.4f |\n", r.dist.c_str(), r.nth,
					r.single, r.nth / r.single, r.p101, r.p101 / r.single, r.approx,
					r.approx_maxerr_pct);
	return 0;
}
