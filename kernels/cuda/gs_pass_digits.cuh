/*
 * gs_pass_digits.cuh — the two passes of the split selection (internal to
 * kernels/cuda/; driven by gs_cuda_split.cu): keys that do not fit one
 * device stream through it piece by piece, and each piece is either
 * counted by its next radix digit (k_digit_count) or has the keys of the
 * wanted digits appended to a candidate buffer (k_digit_gather).
 *
 * A "prefix" is the top `bits_done` bits every key of the work at hand
 * shares; the digit is the next GS_DIGIT_BITS bits (fewer at the key's
 * end).  Keys under another prefix are skipped by both passes.
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

#define GS_DIGIT_BITS 12
#define GS_DIGIT_BINS (1 << GS_DIGIT_BITS)

/* where a digit sits: keys of 8 sizeof(K) bits, bits_done of them fixed */
struct gs_digit_at
{
	gs_ull		prefix;			/* the fixed top bits, right-aligned */
	int			bits_done;		/* 0: no prefix */
	int			shift;			/* the digit's lowest bit */
	unsigned	mask;			/* the digit's width, as a mask */
};

template <typename K>
static __device__ __forceinline__ bool
gs_digit_of(K key, const gs_digit_at at, unsigned *digit)
{
	constexpr int KB = 8 * (int) sizeof(K);

	/* a shift by the key's width is undefined: no prefix means every key */
	if (at.bits_done > 0 && (gs_ull) (key >> (KB - at.bits_done)) != at.prefix)
		return false;
	*digit = (unsigned) (key >> at.shift) & at.mask;
	return true;
}

/*
 * bins[d] += the keys under at's prefix whose digit is d.  Per block in
 * shared memory (GS_DIGIT_BINS 32-bit counters: a piece holds far fewer
 * than 2^32 keys), added to the 64-bit bins once at the end.
 */
template <typename K>
__global__ void
k_digit_count(const K *keys, gs_ull n, gs_digit_at at, gs_ull *bins)
{
	__shared__ unsigned sh[GS_DIGIT_BINS];

	for (int i = threadIdx.x; i < GS_DIGIT_BINS; i += blockDim.x)
		sh[i] = 0;
	__syncthreads();
	for (gs_ull i = (gs_ull) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (gs_ull) gridDim.x * blockDim.x)
	{
		unsigned	d;

		if (gs_digit_of(keys[i], at, &d))
			atomicAdd(&sh[d], 1u);
	}
	__syncthreads();
	for (int i = threadIdx.x; i <= (int) at.mask; i += blockDim.x)
		if (sh[i])
			atomicAdd(&bins[i], (gs_ull) sh[i]);
}

/*
 * Appends the keys under at's prefix whose digit's bit is set in want (a
 * bitmap of GS_DIGIT_BINS bits) to out, widened to KO, at *out_n (one
 * atomic per warp); never past cap, while *out_n counts them all, so that
 * the driver sees a piece that changed under it.  blockDim is a multiple
 * of 32: a warp's lanes walk the input together.
 */
template <typename K, typename KO>
__global__ void
k_digit_gather(const K *keys, gs_ull n, gs_digit_at at, const unsigned *want, KO *out, gs_ull *out_n,
			   gs_ull cap)
{
	const unsigned lane = threadIdx.x & 31;
	const gs_ull stride = (gs_ull) gridDim.x * blockDim.x;

	for (gs_ull base = (gs_ull) blockIdx.x * blockDim.x + (threadIdx.x - lane); base < n; base += stride)
	{
		const gs_ull i = base + lane;
		K			k = 0;
		unsigned	d = 0;
		bool		take = false;

		if (i < n)
		{
			k = keys[i];
			take = gs_digit_of(k, at, &d) && ((want[d >> 5] >> (d & 31)) & 1u);
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
