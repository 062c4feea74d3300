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

/* page shipping: the service extracts the column's keys from pinned pages
 * into st; false (why set): the caller extracts them itself */
extern bool gs_service_extract_pages(GsState *st, const gs_page_column *col,
									 const char *refs, Size ref_bytes, int npages,
									 uint64 ntuples, const char **why);

#endif							/* GS_SERVICE_CLIENT_H */
