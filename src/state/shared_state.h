/*
 * shared_state.h — large partial states go from a parallel worker to the
 * leader in a dynamic shared memory segment instead of through the tuple
 * queue.  See shared_state.c for why and for the segment's lifetime.
 */
#ifndef GS_SHARED_STATE_H
#define GS_SHARED_STATE_H

#include "postgres.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"

/*
 * Partial states with fewer bytes of keys than this go through the tuple
 * queue: there a few hundred kB cost less than creating and mapping a
 * segment.
 */
#define GS_SHARED_STATE_MIN_BYTES	((Size) 1024 * 1024)

/* partial states received through shared memory (gpuselect_status) */
extern int64 gs_states_shared;

/*
 * Worker side.  Whether a partial state with this many bytes of keys goes
 * through shared memory: a parallel worker, gpuselect.shared_partial_states
 * on, at least GS_SHARED_STATE_MIN_BYTES, and room for the segment.  The
 * caller has checked that the leader reads every partial tuple (a plain
 * aggregate, no GROUP BY).
 */
extern bool gs_shared_state_wanted(Size key_bytes);

/*
 * Create a segment for key_bytes bytes of keys; returns where to write them
 * and sets *handle, or returns NULL (no segment slot free: use the queue).
 * The worker keeps the segment mapped until the leader has attached it.
 */
extern char *gs_shared_state_create(Size key_bytes, dsm_handle *handle);

/*
 * Leader side.  Attach the segment, tell the worker, and return the keys.
 * The mapping lives as long as the memory context owner: a reset callback
 * detaches it (success, ERROR and cancel alike).
 */
extern char *gs_shared_state_attach(dsm_handle handle, Size key_bytes,
									MemoryContext owner);

/* room in /dev/shm (posix segments) for a segment of this many bytes */
extern bool gs_dsm_room_for(Size bytes);

#endif							/* GS_SHARED_STATE_H */
