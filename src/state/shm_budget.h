/*
 * shm_budget.h — the server-wide budget (gpuselect.max_shared_memory) of the
 * dynamic shared memory that sessions create for parallel partial states:
 * the leaders' key arenas (arena.c) and the workers' per-state segments
 * (shared_state.c).  See shm_budget.c for where the counter lives and how
 * every reservation is given back.
 */
#ifndef GS_SHM_BUDGET_H
#define GS_SHM_BUDGET_H

#include "postgres.h"

/* _PG_init while preloading: space for the counter in the main segment */
extern void gs_shm_budget_preload_init(void);

/*
 * Reserve between min_bytes and want_bytes (as much as the cap leaves);
 * returns the bytes reserved, 0 if not even min_bytes fit or there is no
 * budget (then the caller uses the tuple queue or its own memory).  Call
 * before creating the segment; the segment gives them back when it is
 * destroyed (gs_shm_budget_release).
 */
extern Size gs_shm_budget_reserve(Size min_bytes, Size want_bytes);

/*
 * Find the counter in this process, so that a segment's last detach here can
 * give back what another process reserved (gs_shm_budget_release never looks
 * it up: it must not ERROR).  False: no budget, no shared segments.
 */
extern bool gs_shm_budget_attach(void);

/* give back a reservation: never an ERROR (runs in on_dsm_detach callbacks) */
extern void gs_shm_budget_release(Size bytes);

/* gpuselect_status(): server-wide bytes reserved, the cap, refusals, where */
extern void gs_shm_budget_usage(uint64 *in_use, uint64 *limit, uint64 *refused,
								const char **where);

#endif							/* GS_SHM_BUDGET_H */
