/*
 * state.h — the transition state shared by every gpuselect aggregate: the
 * group's non-NULL values as order-preserving keys (kernels/gs_keys.h) in a
 * list of chunks.  Chunks grow geometrically up to GS_CHUNK_MAX_BYTES, then
 * further chunks of that size are added: appends are amortised O(1) with no
 * per-row allocation, small groups stay small, and more than 1 GB works.
 */
#ifndef GS_STATE_H
#define GS_STATE_H

#include "postgres.h"
#include "base/pg_compat.h"
#include "fmgr.h"
#include "utils/array.h"

#include "gs_engine.h"

#define GS_CHUNK_MIN_KEYS	16
#define GS_CHUNK_MAX_BYTES	((Size) 64 * 1024 * 1024)

/*
 * Deserialized partial states with at least this many bytes of keys keep
 * them in a memory context of their own, which gs_state_combine takes over
 * instead of copying the keys (see gs_state_deserialize).  Below it, a copy
 * is cheaper than a memory context per state.
 */
#define GS_HANDOVER_MIN_BYTES	((Size) 256 * 1024)

typedef struct GsChunk
{
	char	   *data;			/* keys, key_bytes each */
	uint64		n;				/* keys stored */
	uint64		cap;			/* capacity in keys */
	bool		arena;			/* in the leader's key arena (arena.c): never freed */
	/* 1 + the key-pool chunk index when the chunk is a pool chunk this
	 * backend's scan holds (service_scan.c); 0 otherwise (so a zeroed
	 * chunk is none).  Freed by service_scan.c, never pfree'd. */
	int			pool_ref;
	/* a pool chunk that a partial state leased for its leader
	 * (service_scan.c): it came through a serialized state */
	bool		leased;
	/* leased, in a deserialized state: not adopted by a combined state yet
	 * (gs_state_combine adopts it once, then copies) */
	bool		lease_open;

	/*
	 * Non-NULL: data is the only allocation of this memory context, a child
	 * of the short-lived context the chunk's state was deserialized in, and
	 * gs_state_combine may move it under the combined state.
	 */
	MemoryContext handover;

	/*
	 * Non-NULL: data is the only allocation of this memory context, a child
	 * of the state's, taken over from a deserialized state (the data may be
	 * a shared memory mapping, not palloc'd): a spill deletes the context.
	 */
	MemoryContext owned;
} GsChunk;

struct GsSvcScan;				/* service_scan.c's per-state pool data */

typedef struct GsState
{
	MemoryContext mcxt;			/* aggregate context: chunks and state live here */
	Oid			typid;			/* the aggregated column's type */
	uint8		key_bytes;		/* 2, 4 or 8; 0 for GS_T_DATUM */
	uint8		kind;			/* GsTypeKind (types.h): fixed per state */
	bool		descending;		/* ordered-set form with ORDER BY x DESC */
	bool		partial;		/* will be serialized, never selected on: no GPU chunks */
	bool		arena_ok;		/* partial plain aggregate: large chunks may go in the arena */
	bool		lease_ok;		/* partial state, grouped or not: large chunks may be
								 * key-pool chunks leased to the leader */
	int64		nrows;			/* non-NULL values appended */

	int			nchunks;
	int			maxchunks;
	GsChunk    *chunks;
	uint64		grow_cap;		/* capacity of the last chunk gs_state_grow added */

	/* plain aggregates: the fraction argument, fixed by the first row */
	bool		have_fraction;
	bool		fraction_null;
	float8		fraction;		/* gpu_quantile */
	ArrayType  *fractions;		/* gpu_quantiles (copy in mcxt) */
	/* gpu_quantiles: stored (TOAST) values known equal to fractions (plain_aggs.c) */
	int			fraction_ntoast;
	struct varatt_external fraction_toast[2];

	struct GsSvcScan *svc;		/* NULL unless the state holds key-pool chunks */
	/* a partial state with leased key-pool chunks (pool_ref != 0): the
	 * leader's job slot they are held under, and the lease generation */
	int			lease_slot;
	uint64		lease_gen;
	bool		lease_off;		/* no lease to be had: stop asking */

	/*
	 * A group of a hashed aggregation (final_batch.c): the registry of its
	 * aggregate's groups it is in (NULL: none), its place there, and the
	 * keys a batch selected for it ahead of its final call (memo_nranks
	 * ranks, engine order; 0: none).  gs_dispatch_select answers from the
	 * memo only for exactly these ranks.
	 */
	struct GsFinalBatch *batch;
	int			batch_index;
	int			memo_nranks;
	uint64	   *memo_ranks;
	uint64	   *memo_keys;

	/* kind GS_T_DATUM: the values themselves, no keys (datum_state.h) */
	struct GsDatumStore *datums;
	struct GsSpill *spill;		/* NULL unless the keys went to a temporary
								 * file (spill.c); then chunks[0] is its
								 * write buffer and the only chunk */

	/*
	 * Non-zero: a complete (not partial) state that the bulk scan
	 * (scan/bulk_scan.c) built in this backend and hands to the Finalize
	 * Aggregate right above it by reference (gs_state_serialize_local);
	 * the combine function adopts it whole instead of copying its keys.
	 */
	uint64		handoff_cookie;
} GsState;

extern GsState *gs_state_create(MemoryContext mcxt, Oid typid);

/*
 * Large chunks of keys or values (GS_HUGE_CHUNK_BYTES and more) are written
 * once, front to back: with gpuselect.huge_pages, ask the kernel for
 * transparent huge pages for the 2 MB pages inside them.
 */
#define GS_HUGE_CHUNK_BYTES		((Size) 4 << 20)
extern void gs_chunk_advise_huge(void *mem, Size bytes);
/* states created in this backend (gpuselect_status: shows state sharing) */
extern int64 gs_states_created;
/* partial states whose keys combine took over instead of copying (gpuselect_status) */
extern int64 gs_states_taken_over;
extern GsChunk *gs_state_grow(GsState *st);
/* append n keys of st->key_bytes each (combine) */
extern void gs_state_append_keys(GsState *st, const char *keys, uint64 n);
/* from's keys may be taken over by into (handover chunks); they stay valid */
extern void gs_state_combine(GsState *into, GsState *from);
/* the serialized partial-state formats: state_serial.c */
extern bytea *gs_state_serialize(const GsState *st, bool allow_shared);
extern GsState *gs_state_deserialize(MemoryContext mcxt, bytea *b);
/* a state handed by reference to an aggregate in this same backend ("GSL1") */
extern bytea *gs_state_serialize_local(GsState *st);
/* the largest serialized state: MaxAllocSize, less under gpuselect.test_max_serial_bytes */
extern uint64 gs_serial_limit(void);
/* ERROR 54000 for a state of nrows values that would serialize to total > limit bytes */
pg_noreturn extern void gs_serial_too_large(int64 nrows, uint64 total, uint64 limit);
/*
 * Plain aggregates' fraction argument: the first row fixes it, every later
 * row (and every partial state combined in) must carry the same value.
 */
extern bool gs_fraction_arrays_equal(ArrayType *a, ArrayType *b);
/* calls of gs_fraction_arrays_equal: full comparisons (gpuselect_status) */
extern int64 gs_fraction_full_compares;
pg_noreturn extern void gs_fraction_mismatch_error(bool is_array);

/* keys that travel the slow way: neither in the leader's arena (arena.h)
 * nor in key-pool chunks leased to it (service_scan.c) */
extern uint64 gs_state_keys_outside_arena(const GsState *st);

/* the state's keys as an engine input; segs palloc'd in CurrentMemoryContext */
extern void gs_state_input(const GsState *st, gs_input *in);

/* Hot path: append one key (width known by the caller's type dispatch). */
#define GS_DEFINE_APPEND(NAME, KEYTYPE) \
static inline void \
NAME(GsState *st, KEYTYPE k) \
{ \
	GsChunk    *c = st->nchunks > 0 ? &st->chunks[st->nchunks - 1] : NULL; \
	if (unlikely(c == NULL || c->n == c->cap)) \
		c = gs_state_grow(st); \
	((KEYTYPE *) c->data)[c->n++] = k; \
	st->nrows++; \
}
GS_DEFINE_APPEND(gs_state_append16, uint16)
GS_DEFINE_APPEND(gs_state_append32, uint32)
GS_DEFINE_APPEND(gs_state_append64, uint64)

#endif							/* GS_STATE_H */
