/*
 * service_scan.h — the state's side of the GPU service's key pool
 * (service_scan.c): a backend's scan writes its keys into pool chunks it
 * holds, and partial states lease pool chunks for their leader.  The pool
 * itself, its chunks and slots are the service's (service/service.h);
 * these functions are a backend's, on a GsState.
 */
#ifndef GS_SERVICE_SCAN_H
#define GS_SERVICE_SCAN_H

#include "postgres.h"

#include "state/state.h"

/* a backend's scan (service_scan.c): a pool chunk for st's next keys
 * (NULL: palloc instead), and st's pool chunks back (reset callback, spill) */
extern char *gs_service_scan_chunk(GsState *st, uint64 *cap, int *pool_ref);
extern void gs_service_scan_release(GsState *st);
/* before a wait for pool chunks: every state of this backend that holds
 * pool chunks gets its keys copied into its own memory and the chunks go
 * back; the number of chunks given back */
extern int	gs_service_scan_unload_all(void);
/* key-pool chunks this backend's states other than st hold */
extern int	gs_service_scan_held_elsewhere(const GsState *st);
/* partial states (service_scan.c): a leased chunk for st's next keys (NULL:
 * arena or palloc), the leader's preparation at the start of a parallel
 * query, a deserialized chunk adopted by the combined state `into` */
extern char *gs_service_lease_chunk(GsState *st, uint64 *cap, int *pool_ref);
extern void gs_service_lease_prepare(void);
extern bool gs_service_adopt_lease(GsState *into, int pool_ref, uint64 gen);

#endif							/* GS_SERVICE_SCAN_H */
