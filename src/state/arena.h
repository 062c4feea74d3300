/*
 * arena.h — the leader's key arena for parallel aggregates: one dynamic
 * shared memory segment per leader transaction, sized to what the session's
 * last such transaction needed and within the server-wide budget
 * (shm_budget.h), into which parallel workers (and the leader's own partial
 * aggregation) write their keys during the scan.  A partial state then
 * serializes as a list of (offset, count) references: no copy in the worker,
 * none in the leader, no segment per worker state.  See arena.c for the
 * lifetime rules.
 */
#ifndef GS_ARENA_H
#define GS_ARENA_H

#include "postgres.h"
#include "storage/dsm.h"

/* arena chunks are this large: waste is at most one per partial state */
#define GS_ARENA_CHUNK_BYTES	((Size) 4 << 20)

/* a partial state takes arena chunks once its palloc'd chunks reach this */
#define GS_ARENA_START_BYTES	((Size) 256 << 10)

/* deserialized partial states with keys in the arena (gpuselect_status) */
extern int64 gs_states_in_arena;

/*
 * _PG_init: the ExecutorStart hook (ExecutorRun for the query that loads the
 * library) that hands the arena, key-pool leases and the value spill's file
 * set (shared_fileset.c) to parallel workers
 */
extern void gs_arena_install_hook(void);

/*
 * Leader: a partial state reached the finalize step the slow way (copied
 * into a segment or the tuple queue) and would have taken this many bytes
 * of arena.  Once a large one (wants_arena: a plain aggregate's of 1 MB, a
 * grouped one of a slice's size) has, the next transactions' parallel
 * queries of gpuselect aggregates get an arena sized for all of them (at
 * most gpuselect.parallel_arena_size).
 */
extern void gs_arena_note_slow_bytes(Size bytes, bool wants_arena);
/* the same for a GROUP BY's state of a slice's size (bytes of keys) */
extern void gs_arena_note_slow_slice(Size bytes);

/*
 * Worker, or the leader's own partial aggregation: GS_ARENA_CHUNK_BYTES of
 * arena for keys, or NULL (no arena, or it is full).
 */
extern char *gs_arena_alloc(void);

/*
 * Slices: a serialized partial state of GS_ARENA_SLICE_MIN_BYTES to
 * GS_ARENA_SLICE_MAX_BYTES of keys that are not in the arena already (a
 * GROUP BY's many small states, a plain aggregate's first chunks) is copied
 * into a slice of this process's current arena chunk, and travels as one
 * more reference: no bytes through the tuple queue, no copy in the leader's
 * combine.  Slices are carved from chunks (gs_arena_alloc), so chunks stay
 * aligned; one slice never crosses a chunk.  A smaller state travels inline.
 */
#define GS_ARENA_SLICE_MIN_BYTES	((Size) 1024)
#define GS_ARENA_SLICE_MAX_BYTES	(GS_ARENA_CHUNK_BYTES / 4)
#define GS_ARENA_SLICE_ALIGN		64

/* bytes of arena for one state's keys, or NULL (no arena, full, too large) */
extern char *gs_arena_slice(Size bytes);

/* what a serialized state records of an arena chunk or slice returned above */
typedef struct GsArenaRef
{
	dsm_handle	handle;			/* the leader's arena */
	uint32		pad;
	uint64		generation;		/* the arena's serial number (its leader's arenas so far) */
	uint64		offset;			/* of the chunk in the arena's key area */
} GsArenaRef;

extern void gs_arena_ref(const char *chunk, GsArenaRef *ref);

/*
 * Leader: the keys of a reference, checked against this backend's arena
 * (handle, serial number, bounds, within one chunk); ERROR if it does not
 * belong to them.
 */
extern char *gs_arena_resolve(const GsArenaRef *ref, Size bytes);

/*
 * gpuselect_status: this transaction's arena (size, 0: none; bytes handed
 * out) and the last one this backend gave back
 */
extern void gs_arena_usage(uint64 *size, uint64 *used, uint64 *prev_size, uint64 *prev_used);

#endif							/* GS_ARENA_H */
