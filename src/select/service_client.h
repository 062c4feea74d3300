/*
 * service_client.h — a backend's side of a selection on the GPU service
 * (service_client.c); the protocol and shared layout it speaks are the
 * service's own (service/service.h).
 */
#ifndef GS_SERVICE_CLIENT_H
#define GS_SERVICE_CLIENT_H

#include "postgres.h"

#include "select/dispatch.h"

#include "gs_pages.h"

/* the client (service_client.c): run a selection through the service.
 * Returns GS_GPU_NOT_USED (with the reason in info->path) when the
 * service could not answer in auto mode; ERROR in gpu mode.  in's
 * segments are rebuilt when the keys of st's pool chunks move into the
 * backend's memory (before a wait for the pool). */
extern GsGpuOutcome gs_service_select(GsState *st, gs_input *in, const uint64 *ranks, int nranks,
										uint64 *out_keys, gs_approx_pick *picks,
										GsRunInfo *info);

/*
 * Page shipping (bulk_ship.c): up to GS_SVC_PAGE_SLOTS batches of pinned
 * pages in flight, batch k in this process's page slot k.  Submit hands
 * batch k to the service without waiting; collect waits for its answer and
 * appends its keys to st.  Either false (why set): the caller extracts the
 * batch itself (the job is gone, the pins still the caller's).  Abandon
 * gives up every page job of this process (never ERRORs: reset callbacks
 * call it); only then may the caller drop pins of batches in flight.
 */
extern bool gs_service_pages_submit(int k, const gs_page_column *col, const char *refs,
									Size ref_bytes, int npages, uint64 ntuples,
									const char **why);
extern bool gs_service_pages_collect(int k, GsState *st, const char **why);
/* whether batch k's job is answered (or gone): collecting it will not wait */
extern bool gs_service_pages_answered(int k);
extern void gs_service_pages_abandon(void);

#endif							/* GS_SERVICE_CLIENT_H */
