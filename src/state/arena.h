/*
 * arena.h — the leader's key arena for parallel aggregates: one dynamic
 * shared memory segment per leader backend, kept for the backend's life,
 * into which parallel workers (and the leader's own partial aggregation)
 * write their keys during the scan.  A partial state then serializes as a
 * list of (offset, count) references: no copy in the worker, none in the
 * leader, no segment to create, map and unmap per query.  See
 * arena.c for the lifetime rules.
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

/* _PG_init: the ExecutorStart hook that hands the arena to parallel workers */
extern void gs_arena_install_hook(void);

/*
 * Leader: a large partial state (or a grouped one of a slice's size) reached
 * the finalize step the slow way (copied into a segment or the tuple queue);
 * parallel queries from now on get an arena (gpuselect.parallel_arena_size).
 */
extern void gs_arena_note_large_state(void);

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
	uint64		generation;		/* of the arena's current transaction */
	uint64		offset;			/* of the chunk in the arena's key area */
} GsArenaRef;

extern void gs_arena_ref(const char *chunk, GsArenaRef *ref);

/*
 * Leader: the keys of a reference, checked against this backend's arena
 * (handle, generation, bounds, within one chunk); ERROR if it does not
 * belong to them.
 */
extern char *gs_arena_resolve(const GsArenaRef *ref, Size bytes);

/* gpuselect_status: arena size (0: none) and bytes handed out */
extern void gs_arena_usage(uint64 *size, uint64 *used);

#endif							/* GS_ARENA_H */
