/*
 * gs_tuning.cuh — the CUDA engine's launch sizes and tuning constants, one
 * policy struct per pass (CUB style), each entry with the H100 measurement
 * or the reason that chose it.  Section numbers (§) are those of
 * test/bench/NOTES-gpu.md, whose result tables (test/bench/results/gpu-*.md)
 * hold the full figures; "2^28" is the usual benchmark input (uniform keys,
 * f32 = 4-byte keys, f64 = 8-byte keys).  Plain C++: read by the kernels
 * (as template arguments and __launch_bounds__) and by the host drivers.
 */
#ifndef GS_TUNING_CUH
#define GS_TUNING_CUH

#include <stddef.h>

/* the streaming passes' loop (gs_for_each, gs_filter_ora; gs_stream.cuh) */
struct gs_stream_policy
{
	/* 16-byte loads in flight per lane = one batch (16 f32 / 8 f64 keys),
	 * decided with bit masks: per-key branches and votes had made the passes
	 * issue-bound at 60-90 instructions per key (ncu, 2026-11-22); no
	 * other depth was measured */
	static constexpr int unroll = 4;
};

/* k_sample: one block draws (or reads) a level's sample and sorts it, or
 * selects its two single-rank splitters (gs_pass_sample.cuh) */
struct gs_sample_policy
{
	/* gs_block_select needs 512 (one histogram bin per thread: two targets x
	 * 256); 1024 x 16 instead of 512 x 32 spilled at 64 registers and was
	 * slower (f32 171 -> 215 us over three levels, §8 B) */
	static constexpr int threads = 512;
	/* 8192 sample keys, also the base-case size */
	static constexpr int items = 16;
	/* levels of 4096 buckets draw 16384 keys: 1001 ranks f32 2^28 2.88-2.93
	 * -> 2.59-2.67 ms, f64 5.26 -> 4.76-4.83; it lost at fewer buckets (101
	 * ranks f64 2.15 -> 2.20 ms) and for one rank (f64 1.085 -> 1.108), §8 A */
	static constexpr int items_wide = 32;
	static constexpr int size = threads * items;
	static constexpr int size_wide = threads * items_wide;
	/* digits of the one-block radix sort: 11 passes instead of 16 for f64
	 * (predicted 55 -> ~40 us per level, measured ~52: kept as harmless,
	 * §4 E); 5, 6 or 7 bits barely mattered (166-202 us over three levels, §8 D) */
	static constexpr int radix_bits = 6;
	/* splitter positions per warp in gs_sample_spread (16 warps x 256 >=
	 * 4095 splitters), in rounds of 32 consecutive ones: k_sample 23 -> 10 us
	 * per level with the striped sort (1001 ranks, §8 E) */
	static constexpr int spread_per_warp = 256;
};

/*
 * k_sample where the layout above does not fit a block (gs_exact_set_attrs
 * tries this one next): the T4's 64 KB, against which CUB's BlockRadixSort
 * of 512 threads with 6-bit digits needs 66 KB of temporary storage (its
 * ranking counters: 33 lanes x 512 threads x 4 bytes), whatever the key.
 * 5-bit digits halve the counters (17 lanes: 34 KB); 4 bits would save 1 KB
 * more, since the key exchange (8192 4-byte or 4096 8-byte keys, 33 KB)
 * then sets the size.  8-byte keys draw 4096 keys (512 x 8): 8192 of them
 * are 64 KB alone.  Speed only, the answers are the same: 7 passes instead
 * of 6 for 4-byte keys, 13 for 8-byte keys of half as many (not measured: no
 * T4); spread levels keep two sample keys per open bucket (gs_exact_set_attrs
 * holds mopen_max to half the sample).  Shared memory: 34,976 bytes
 * either width (sizeof gs_sample_smem), + 16 static (sm_75 and sm_90).
 */
struct gs_sample_small_policy
{
	static constexpr int radix_bits = 5;
	static constexpr int items4 = 16;	/* 4-byte keys: 8192 sample keys */
	static constexpr int items8 = 8;	/* 8-byte keys: 4096 */
	/* the smallest opt-in shared memory per block of the architectures
	 * built (sm_75: 64 KB); static_asserts in gs_pass_sample.cuh */
	static constexpr size_t smem_floor = 64 * 1024;
};

/* the wide sample (items_wide) sorted by a grid: k_sample_runs draws and
 * sorts runs, k_sample_merge merges them (gs_pass_sample.cuh); the three
 * sample kernels ~34 us per level against 57 for the one-block sort (§8 D:
 * runs 10 + merge 14 us, k_sample's rest then 23 -> 10 by §8 E) */
struct gs_sample_runs_policy
{
	static constexpr int threads = 256;
	static constexpr int items = 4;
	static constexpr int keys = threads * items;	/* a run */
	/* runs of a wide sample (host side): blocks x keys =
	 * gs_sample_policy::size_wide (static_assert below) */
	static constexpr int blocks = 16;
	/* one key per merge thread: the binary searches are chains of dependent
	 * loads, which many warps hide */
	static constexpr int merge_threads = 1024;
};
static_assert(gs_sample_runs_policy::blocks * gs_sample_runs_policy::keys == gs_sample_policy::size_wide,
			  "the grid-sorted sample fills k_sample's wide block");

/* the count passes (k_count_focus, k_count; gs_pass_count.cuh) and the filter
 * (k_filter, gs_pass_filter.cuh) */
struct gs_count_policy
{
	/* k_count_focus, k_filter, and k_count up to wide_above bytes of shared
	 * memory (three or four blocks per SM; at P = 1024 256-thread blocks
	 * already fill the register file, §6 B) */
	static constexpr int threads = 256;
	/* k_count above wide_above: two blocks per SM (55-64 registers); 1001
	 * ranks f32 count 2247 -> 1630 us over 3 levels, call 4.11 -> 3.43 ms (§6 B) */
	static constexpr int threads_wide = 512;
	static constexpr size_t wide_above = 64 * 1024;
	/* k_count above full_above (the 128 KB table of 4-byte keys at P =
	 * 4096): one block per SM; level-1 count 1022 -> 661 us (§7 D) */
	static constexpr int threads_full = 1024;
	static constexpr size_t full_above = 112 * 1024;
	/* one-splitter lookups, then atomics, in chunks of this many keys:
	 * approximate count f32 2^28 522 us (8: 546; 16: 668, ptxas spills) */
	static constexpr int chunk = 4;
	/* not a knob: the oracle slots past n (fewer than 2 V, gs_ora_store) */
	static constexpr int ora_pad = 8;
};

/* the one-block plan (k_plan, gs_pass_plan.cuh; also k_approx_split and
 * k_approx_pick, gs_pass_approx.cuh) */
struct gs_plan_policy
{
	/* spread levels; 512 or 256 threads with more buckets each were slower
	 * (1001 ranks, three levels: ~80 us -> 111 / 132, §8 C) */
	static constexpr int threads = 1024;
	/* threads x items >= 2 x 4095 + 1 buckets (the approximate pick: two
	 * passes for 2 x 8191 + 1) */
	static constexpr int items = 8;
	/* single-rank levels (5 buckets): 8.7 -> 6.4 us per level against a
	 * 1024-thread block (§5 D) */
	static constexpr int threads_focus = 32;
};

/* the approximate sample as sorted runs (k_approx_runs, then k_sample_merge;
 * gs_pass_approx.cuh): for 4-byte keys two launches instead of a device
 * radix sort's six (43 + 6 us before, §10 E) */
struct gs_approx_policy
{
	/* runs of 4096 rather than the spread levels' 1024: 8 runs instead of 32
	 * cut the merge's searches per key from 31 to 7 (runs + merge for 32768
	 * keys 12 + 25 -> 26 + 10 us, §10 E) */
	static constexpr int run_threads = 1024;
	static constexpr int run_items = gs_sample_runs_policy::items;
	static constexpr int run_keys = run_threads * run_items;
	/* runs held by one merge block's shared memory (8 x 4096 4-byte keys:
	 * GS_APPROX_OVERSAMPLE x the default 1024 buckets) */
	static constexpr int runs_max = 8;
};

/* host-side choices of the exact driver (gs_cuda_exact.cu) */
struct gs_host_policy
{
	/* single rank: once a level leaves at most this many keys, one radix sort
	 * replaces the remaining levels (2^21 best or tied for both key widths in
	 * `gs_test sweep`, 2026-11-22; §4 E); also sizes the sort's temp storage */
	static constexpr size_t focus_sort_max = (size_t) 1 << 21;
	/* single rank: splitters at -/+ (z sigma + 16) around the rank keep ~3.7%
	 * of a level (z = 4: 4.8%) and miss in ~0.3% of levels; f64 one rank
	 * z = 4 1.106-1.142, 3 1.089-1.114, 2.5 1.060-1.093 ms, 2.5 not taken
	 * (1.2% of levels would pay a whole extra pass, §5 C) */
	static constexpr double focus_z = 3.0;
};

/* exact mode's choice between selection and one radix sort of the whole
 * input (CUB DeviceRadixSort, then a gather of every rank): the sort costs
 * the same whatever the ranks, selection's levels grow with them (issue 18
 * item 7; the CPU engine's rule is kernels/cpu/cpu_exact.c's sort_pays).
 * Sort when n >= min_n and the distinct ranks reach min_ranks or
 * n / keys_per_rank.  `gs_test crossover` (test/gpu/run.sh crossover;
 * test/bench/results/gpu-2026-11-23-sort-crossover.md), H100, uniform keys,
 * evenly spread ranks, select / sort ms:
 *   4096 ranks: the sort wins at every size and width measured (f64 2^26
 *     7.94 / 4.79, f32 2^26 2.27 / 1.85, f64 2^20 0.56 / 0.42);
 *   1024 ranks: selection wins from 2^23 keys (f64 2^26 1.67 / 4.49, f64
 *     2^23 0.61 / 0.76), the sort below (f64 2^20 0.34 / 0.25);
 *   16384+ ranks of f64 at 2^23 and 2^26 keys: selection did not converge
 *     in 96 levels (an ERROR; auto fell back to the CPU), the sort 2-100 ms.
 * Erring to the sort is the safe side: it costs what it costs whatever the
 * ranks, selection past its cliff does not. */
struct gs_sort_path_policy
{
	static constexpr size_t min_n = (size_t) 1 << 16;
	static constexpr size_t min_ranks = 4096;
	static constexpr size_t keys_per_rank = 2048;
};

#endif							/* GS_TUNING_CUH */
