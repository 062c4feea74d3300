/*
 * gs_select.cuh — the SampleSelect level of the CUDA engine (internal to
 * kernels/cuda/): what a level does and where its passes live, the bucket
 * layout and the level state.
 *
 * One exact level = four launches, all parameters read from device memory
 * (gs_level_state), so the host enqueues several levels without waiting:
 *   k_sample   one block: random sample -> splitters (many ranks:
 *              cub::BlockRadixSort; one rank: two order statistics by block
 *              radix selection); if the level's input fits, the base
 *              case: sort it (or select the one rank) and read the answers.
 *              Levels of 4096 buckets draw a sample twice as large, sorted
 *              by a grid first (k_sample_runs, k_sample_merge)
 *              [gs_pass_sample.cuh]
 *   k_count_*  grid-stride over the input in per-lane batches: bucket of every
 *              key (many splitters: the cell index of gs_cells.cuh), per-block
 *              histograms merged with global atomics; in single-rank
 *              ("focused") mode also writes the predicted bucket's keys
 *              (speculative filter fused into the count pass)
 *              [gs_pass_count.cuh]
 *   k_plan     one block: prefix sums, the bucket of every wanted rank,
 *              equality buckets resolve ranks, ranks mapped into the kept
 *              buckets; decides whether the filter pass is needed
 *              [gs_pass_plan.cuh]
 *   k_filter   grid-stride: writes the kept buckets' keys (skipped when the
 *              speculative write of k_count_focus was right)
 *              [gs_pass_filter.cuh]
 * A level's kept buckets (all ranks together) are compacted into one buffer
 * and the next level treats that buffer as one multiselect problem whose
 * ranks are shifted by the sizes of the dropped buckets below them: one
 * launch per level for all active buckets.  The streaming loop and the
 * compaction the passes share are in gs_stream.cuh, the approximate mode's
 * one level in gs_pass_approx.cuh, every launch size in gs_tuning.cuh; the
 * host drivers are gs_cuda_exact.cu and gs_cuda_approx.cu.
 *
 * Bucket layout of one level (equality buckets, Ribizel & Anzt 2020 §4.3):
 * the m distinct splitters d[0] < ... < d[m-1] define 2m+1 buckets
 *     bucket 2j   : d[j-1] < x < d[j]     (open bucket; d[-1] = -inf, d[m] = +inf)
 *     bucket 2j+1 : x == d[j]             (equality bucket: one value)
 * Every splitter is an element of the current input, so every open bucket
 * holds fewer elements than the level's input: recursion on open buckets
 * always terminates, and a rank that lands in an equality bucket is resolved
 * at once (all-equal / few-distinct inputs finish after one level).
 */
#ifndef GS_SELECT_CUH
#define GS_SELECT_CUH

#include <stdint.h>
#include <cuda_runtime.h>

#include "gs_engine.h"	/* gs_splitmix64, GS_APPROX_BUCKETS_MAX */
#include "gs_tuning.cuh"

typedef unsigned long long gs_ull;

#define GS_MAX_SPLIT_EXACT 4095		/* exact mode: at most 4096 open buckets */
#define GS_MAX_SPLIT (GS_APPROX_BUCKETS_MAX - 1)	/* approx mode: approx_buckets-1 splitters */

/* Level state, one per call, in device memory.  Written by the single-block
 * sample/plan kernels, read by all; the host reads it only between batches
 * of levels. */
struct gs_level_state
{
	unsigned long long n;		/* current input size */
	unsigned long long cap;		/* capacity of each ping-pong buffer (elements) */
	unsigned long long out_count;	/* elements written to dst in this level */
	unsigned long long seed;
	int			src;			/* 0 = caller's input, 1 = buffer A, 2 = buffer B */
	int			dst;
	int			iter;			/* level attempts so far (salt of the sample) */
	int			done;
	int			stuck;			/* gave up: host falls back to a full sort */
	int			retries;
	int			focused;		/* 1: single-rank mode (2 splitters around the rank) */
	int			spec;			/* this level wrote predicted buckets during counting */
	int			need_filter;	/* plan found the prediction wrong: run the filter pass */
	int			m;				/* distinct splitters */
	int			nb;				/* buckets = 2m+1 */
	int			depth;			/* P = 1 << depth >= m+1: padded splitter count (shared-memory layout) */
	int			nranks;			/* distinct ranks */
	int			nactive;		/* unresolved ranks */
	int			mopen;			/* spread mode: wanted open buckets */
	unsigned	pmask;			/* focused mode: predicted (written) buckets, bit per bucket */
	/* Focused mode keeps one bucket per level and writes its keys as offsets
	 * from the bucket's lowest key: the level input holds key - kbase (a
	 * finishing sort then needs only the bits of kspan).  Spread mode: 0. */
	unsigned long long kbase;
	double		focus_z;		/* focused mode: splitters at -/+ focus_z sigma (+16) around the rank */
	unsigned long long kspan;	/* every value in the level's output is <= kspan */
};

/* Min/max with multiplicity, for the approximate mode's extra candidates. */
struct gs_minmax
{
	unsigned long long mn, mx;
	unsigned long long cmn, cmx;
};

#endif							/* GS_SELECT_CUH */
