/*
 * service_pool.h — what the key pool's files share, private to them:
 * everyone else calls the pool through service.h.  Three steps that run
 * with the pool lock (GsSvcControl.lock) held exclusively, by more than
 * one of the files:
 *
 *   service_pool.c        the free list: a job's chunks taken, a chunk put
 *                         back, chunk generations and sealing (prefetch),
 *                         a chunk list's memory and copies; it calls
 *                         neither of the others
 *   service_pool_queue.c  the queue of backends waiting for chunks, and a
 *                         job's chunks given back (which wakes it)
 *   service_pool_held.c   chunks held by scans and leased for parallel
 *                         workers' partial states; the reaper of those
 *                         whose holder is gone
 *
 * The pool's memory and descriptors are set up with the rest of the
 * service's shared memory (service_shmem.c).
 */
#ifndef GS_SERVICE_POOL_H
#define GS_SERVICE_POOL_H

#include "service/service.h"

/* n chunks for job from the free list, -1 when fewer are free (lock held) */
extern int	gs_pool_alloc_locked(int n, int job);
/* a new generation of chunk idx, taken or freed: a device copy of the old
 * one is stale (prefetch; lock held) */
extern void gs_pool_next_gen(int idx);
/* one chunk back to the free list, whoever held or leased it (lock held) */
extern void gs_pool_put(int idx);

#endif							/* GS_SERVICE_POOL_H */
