/*
 * gs_stream.cuh — what every pass of the SampleSelect engine builds on
 * (internal to kernels/cuda/): the key type's largest value, programmatic
 * dependent launch (gs_pdl_enter), the streaming loop over a level's input
 * in per-lane batches (gs_for_each) and the warp-private stream compaction
 * that writes a level's kept keys (gs_stage).
 */
#ifndef GS_STREAM_CUH
#define GS_STREAM_CUH

#include <stdint.h>
#include <cuda_runtime.h>
#include "gs_select.cuh"

template <typename K> struct gs_key_max;
template <> struct gs_key_max<uint32_t> { static constexpr uint32_t v = 0xFFFFFFFFu; };
template <> struct gs_key_max<uint64_t> { static constexpr uint64_t v = ~UINT64_C(0); };

#define GS_FULL 0xFFFFFFFFu

/*
 * Programmatic dependent launch (Hopper; gs_launch in gs_cuda_internal.h):
 * a level
 * kernel first waits until the kernel before it in the stream has completed
 * and its memory is visible, then lets the next one start launching, so
 * that a launch's latency overlaps the kernel before it.  The next kernel's
 * blocks start once every block of this one has started (so they never
 * hold resources this grid still needs) and wait here in turn.  Without
 * the launch attribute both instructions do nothing.  Measured on the H100
 * (six interleaved bench tables, 2^28 f32): 1001 ranks 2.529 vs 2.553 ms
 * (2^26: 0.946 vs 0.991), 101 ranks 1.458 vs 1.547; -DGS_NO_PDL builds
 * without it, for such comparisons.
 */
static __device__ __forceinline__ void
gs_pdl_enter()
{
#if !defined(GS_NO_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* per-lane batch of a streaming pass: U 16-byte loads = N keys;
 * the warp's compaction stage holds one worst-case batch (32 N keys) */
template <typename K>
struct gs_batch
{
	static constexpr int U = gs_stream_policy::unroll;
	static constexpr int V = 16 / (int) sizeof(K);
	static constexpr int N = U * V;
	static constexpr int STAGE = 32 * N;
	static constexpr unsigned ALL = (1u << N) - 1;
};

/*
 * Where a batch's keys sit, for passes that keep per-key side data (the
 * oracles): in the main loop, a lane's u-th 16-byte vector is vector
 * vec + 32 u of the aligned body (keys head + V (vec + 32 u) ...); the one
 * edge batch holds the unaligned head (slot 0) and the tail (slot 1) keys.
 */
struct gs_at
{
	gs_ull		vec;			/* this lane's first vector; edge: nvec */
	bool		edge;
};

template <typename K>
static __device__ __forceinline__ const K *
gs_pick_src(int sel, const K *in, const K *a, const K *b)
{
	return sel == 0 ? in : (sel == 1 ? a : b);
}

/*
 * Streams p[0..n) through f in per-lane batches: f.batch(xs, valid, at) gets
 * N = gs_batch<K>::N keys, bit i of valid saying whether xs[i] is a key
 * (invalid slots hold the largest key), and where they sit (gs_at, for the
 * oracles).  Calls are warp-uniform (every lane
 * of a warp makes the same calls), so f may use warp collectives.  Why
 * batches: per-key branches and per-key warp votes made the passes issue-bound
 * at 60-90 instructions per key (ncu, 2026-11-22); with a batch, f decides
 * with bit masks and compacts once per batch.  Body: 16-byte streaming loads,
 * U = gs_stream_policy::unroll in flight per lane, grid-stride over warps; the unaligned head
 * and the tail (< V keys each) are one extra batch of warp 0.
 * nblocks: the blocks taking part (blocks 0 .. nblocks-1; 0 = the grid).
 */
template <typename K, typename F>
static __device__ __forceinline__ void
gs_for_each(const K *p, gs_ull n, F &f, unsigned nblocks = 0)
{
	constexpr int U = gs_batch<K>::U;
	constexpr int V = gs_batch<K>::V;
	constexpr int N = gs_batch<K>::N;
	const unsigned lane = threadIdx.x & 31;
	const gs_ull gwarp = ((gs_ull) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const gs_ull nwarps = ((gs_ull) (nblocks ? nblocks : gridDim.x) * blockDim.x) >> 5;
	gs_ull		head = ((16 - ((uintptr_t) p & 15)) & 15) / sizeof(K);

	if (head > n)
		head = n;
	const gs_ull nvec = (n - head) / V;
	const gs_ull tail0 = head + nvec * V;

	if (gwarp == 0)
	{
		K			xs[N];
		const gs_ull t = tail0 + lane;
		const bool	vh = lane < head,
					vt = t < n;

#pragma unroll
		for (int i = 0; i < N; i++)
			xs[i] = gs_key_max<K>::v;
		if (vh)
			xs[0] = p[lane];
		if (vt)
			xs[1] = p[t];
		f.batch(xs, (unsigned) vh | ((unsigned) vt << 1), gs_at{nvec, true});
	}
	const uint4 *vp = reinterpret_cast<const uint4 *>(p + head);

	for (gs_ull w = gwarp * 32 * U; w < nvec; w += nwarps * 32 * U)
	{
		uint4		buf[U];
		unsigned	valid = 0;

		if (w + 32 * U <= nvec)
		{
			/* the warp's whole batch is in range (all but the last): no
			 * per-load bounds or fill (~3 instructions per key of the
			 * approximate count, NOTES-gpu.md section 10) */
#pragma unroll
			for (int u = 0; u < U; u++)
				buf[u] = __ldcs(vp + w + (gs_ull) u * 32 + lane);	/* streamed: read once per pass */
			valid = gs_batch<K>::ALL;
		}
		else
		{
#pragma unroll
			for (int u = 0; u < U; u++)
			{
				const gs_ull i = w + (gs_ull) u * 32 + lane;

				if (i < nvec)
				{
					buf[u] = __ldcs(vp + i);
					valid |= ((1u << V) - 1) << (u * V);
				}
				else
					buf[u] = make_uint4(~0u, ~0u, ~0u, ~0u);
			}
		}
		K			xs[N];

#pragma unroll
		for (int u = 0; u < U; u++)
			memcpy(&xs[u * V], &buf[u], 16);
		f.batch(xs, valid, gs_at{w + lane, false});
	}
}

/*
 * Warp-private staging for stream compaction: a batch's kept keys (bit mask
 * per lane) get their positions from one warp scan of the per-lane counts
 * and go to a shared-memory buffer; a full buffer is flushed to global memory
 * with ONE global atomic per flush (a single global counter would otherwise
 * serialise the grid).  Positions beyond cap are dropped (the plan kernel
 * sees out_count > cap and does not use the buffer).
 */
template <typename K>
struct gs_stage
{
	K		   *s;				/* gs_batch<K>::STAGE keys (shared) */
	unsigned	cnt;			/* warp-uniform */
	K		   *dst;
	gs_ull	   *gcnt;
	gs_ull		cap;

	__device__ __forceinline__ void flush()
	{
		__syncwarp();
		if (cnt == 0)
			return;
		const unsigned lane = threadIdx.x & 31;
		gs_ull		base = 0;

		if (lane == 0)
			base = atomicAdd(gcnt, (gs_ull) cnt);
		base = __shfl_sync(GS_FULL, base, 0);
		for (unsigned i = lane; i < cnt; i += 32)
		{
			gs_ull		pos = base + i;

			if (pos < cap)
				dst[pos] = s[i];
		}
		__syncwarp();
		cnt = 0;
	}

	template <int N>
	__device__ __forceinline__ void push(const K (&xs)[N], unsigned keep)
	{
		if (!__any_sync(GS_FULL, keep))
			return;
		const unsigned lane = threadIdx.x & 31;
		const unsigned mine = __popc(keep);
		unsigned	incl = mine;

#pragma unroll
		for (int o = 1; o < 32; o <<= 1)
		{
			const unsigned y = __shfl_up_sync(GS_FULL, incl, o);

			incl += lane >= (unsigned) o ? y : 0u;
		}
		const unsigned total = __shfl_sync(GS_FULL, incl, 31);

		if (cnt + total > (unsigned) gs_batch<K>::STAGE)
			flush();
		unsigned	pos = cnt + incl - mine;

#pragma unroll
		for (int i = 0; i < N; i++)
			if ((keep >> i) & 1u)
				s[pos++] = xs[i];
		cnt += total;
	}
};

#endif							/* GS_STREAM_CUH */
