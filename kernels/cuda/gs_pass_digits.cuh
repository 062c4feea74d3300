/*
 * gs_pass_digits.cuh — the two passes of the split selection (internal to
 * kernels/cuda/; driven by gs_cuda_split.cu): keys that do not fit one
 * device stream through it piece by piece, and each piece is either
 * counted by its next radix digit (k_digit_count) or has the keys of the
 * wanted digits appended to a candidate buffer (k_digit_gather).
 *
 * A level's keys of interest share their top `bits_done` bits with one
 * of its prefixes (each the digits of a rank's narrowing so far); the
 * digit is the next `width` bits (GS_DIGIT_BITS for a few prefixes,
 * fewer for many, so that one pass counts them all).  Keys under no
 * prefix are skipped by both passes.
 *
 * Hand-written rather than CUB's DeviceHistogram / DeviceSelect::If: the
 * count accumulates 64-bit bins over many pieces and devices without a
 * host round trip per piece, and the gather appends in any order (the
 * candidates are selected from, not read in order) to an offset kept on
 * the device, where DeviceSelect wants each piece's output offset on the
 * host, i.e. a synchronisation per piece.
 */
#ifndef GS_PASS_DIGITS_CUH
#define GS_PASS_DIGITS_CUH

#include <stdint.h>
#include <cuda_runtime.h>

#include "gs_select.cuh"		/* gs_ull */

#define GS_DIGIT_BITS 12		/* a level's widest digit */
#define GS_DIGIT_BINS_MAX 10240 /* one pass's counters, all its prefixes: 40 kB of shared memory */
#define GS_DIGIT_PREFIXES_MAX 768	/* ... and its prefixes (6 kB): digits of 3 bits or more */

/*
 * Where one pass's digit sits: every key of the level has bits_done bits
 * fixed, and the digit is the next `width` bits.  The pass works on
 * nprefix prefixes at once (sorted, in global memory), one counter block
 * of 2^width bins each.
 */
struct gs_digit_level
{
	int			bits_done;		/* 0: one prefix, every key */
	int			shift;			/* the digit's lowest bit */
	unsigned	mask;			/* 2^width - 1 */
	int			nprefix;
};

/* the key's prefix among the level's (binary search), or -1: not wanted */
template <typename K>
static __device__ __forceinline__ int
gs_prefix_of(K key, const gs_digit_level lv, const gs_ull *prefix)
{
	constexpr int KB = 8 * (int) sizeof(K);
	int			lo = 0,
				hi = lv.nprefix - 1;
	gs_ull		p;

	/* a shift by the key's width is undefined: no prefix means every key */
	if (lv.bits_done == 0)
		return 0;
	p = (gs_ull) (key >> (KB - lv.bits_done));
	while (lo < hi)
	{
		int			mid = (lo + hi) >> 1;

		if (prefix[mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return prefix[lo] == p ? lo : -1;
}

/* the prefixes into shared memory, for the block's lookups */
static __device__ __forceinline__ void
gs_load_prefixes(gs_ull *sh, const gs_digit_level lv, const gs_ull *prefix)
{
	for (int i = threadIdx.x; i < lv.nprefix; i += blockDim.x)
		sh[i] = prefix[i];
}

/*
 * bins[t << width | d] += the keys under prefix t whose digit is d.  Per
 * block in shared memory (32-bit counters: a piece holds far fewer than
 * 2^32 keys), added to the 64-bit bins once at the end.  Dynamic shared
 * memory: nprefix prefixes, then nprefix << width counters.
 */
template <typename K>
__global__ void
k_digit_count(const K *keys, gs_ull n, gs_digit_level lv, const gs_ull *prefix, gs_ull *bins)
{
	extern __shared__ gs_ull sh_prefix[];
	unsigned   *sh = (unsigned *) (sh_prefix + lv.nprefix);
	const int	width = __popc(lv.mask);
	const int	nb = lv.nprefix << width;

	gs_load_prefixes(sh_prefix, lv, prefix);
	for (int i = threadIdx.x; i < nb; i += blockDim.x)
		sh[i] = 0;
	__syncthreads();
	for (gs_ull i = (gs_ull) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (gs_ull) gridDim.x * blockDim.x)
	{
		const K		k = keys[i];
		const int	t = gs_prefix_of(k, lv, sh_prefix);

		if (t >= 0)
			atomicAdd(&sh[(t << width) | (int) ((unsigned) (k >> lv.shift) & lv.mask)], 1u);
	}
	__syncthreads();
	for (int i = threadIdx.x; i < nb; i += blockDim.x)
		if (sh[i])
			atomicAdd(&bins[i], (gs_ull) sh[i]);
}

/*
 * Appends the keys whose (prefix, digit) bin has its bit set in want to
 * out, widened to KO, at *out_n (one atomic per warp); never past cap,
 * while *out_n counts them all, so that the driver sees a piece that
 * changed under it.  blockDim is a multiple of 32: a warp's lanes walk the
 * input together.  Dynamic shared memory: the nprefix prefixes.
 */
template <typename K, typename KO>
__global__ void
k_digit_gather(const K *keys, gs_ull n, gs_digit_level lv, const gs_ull *prefix, const unsigned *want,
			   KO *out, gs_ull *out_n, gs_ull cap)
{
	extern __shared__ gs_ull sh_prefix[];
	const unsigned lane = threadIdx.x & 31;
	const int	width = __popc(lv.mask);
	const gs_ull stride = (gs_ull) gridDim.x * blockDim.x;

	gs_load_prefixes(sh_prefix, lv, prefix);
	__syncthreads();
	for (gs_ull base = (gs_ull) blockIdx.x * blockDim.x + (threadIdx.x - lane); base < n; base += stride)
	{
		const gs_ull i = base + lane;
		K			k = 0;
		bool		take = false;

		if (i < n)
		{
			k = keys[i];
			const int	t = gs_prefix_of(k, lv, sh_prefix);

			if (t >= 0)
			{
				const unsigned b = ((unsigned) t << width) | ((unsigned) (k >> lv.shift) & lv.mask);

				take = (__ldg(&want[b >> 5]) >> (b & 31)) & 1u;
			}
		}
		const unsigned m = __ballot_sync(0xFFFFFFFFu, take);

		if (m == 0)
			continue;
		const int	leader = __ffs(m) - 1;
		gs_ull		pos = 0;

		if ((int) lane == leader)
			pos = atomicAdd(out_n, (gs_ull) __popc(m));
		pos = __shfl_sync(0xFFFFFFFFu, pos, leader);
		if (take)
		{
			pos += __popc(m & ((1u << lane) - 1u));
			if (pos < cap)
				out[pos] = (KO) k;
		}
	}
}

#endif							/* GS_PASS_DIGITS_CUH */
