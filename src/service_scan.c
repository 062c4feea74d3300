/*
 * service_scan.c — keys written straight into the GPU service's key pool
 * during the scan (issue #16, phase 2).
 *
 * When the server runs the service, a state headed for the GPU (not
 * partial, gpuselect.device not cpu, at least gpuselect.gpu_min_rows keys:
 * gs_state_grow's rule) takes its further chunks from the shared pool, one
 * whole pool chunk (chunk_bytes / key_bytes keys) at a time, instead of
 * palloc.  The final call's job refers to those chunks in place
 * (service_client.c); only the keys of the state's palloc'd chunks (those
 * before the group reached gpu_min_rows, or after the pool ran short) are
 * copied into job chunks then.
 *
 * Ownership.  A chunk taken here is HELD (service.h): owned by this
 * backend's job slot and pid, never by a job, so no job's end, timeout or
 * abandonment frees it while the state still reads it (a CPU fallback
 * reads the same memory).  It goes back
 *   - when the state's memory context is reset or deleted (a reset
 *     callback: the query's end, ERROR, cancel, a rescan, the next group
 *     of a sorted GROUP BY), or when the state spills (spill.c);
 *   - at backend exit (FATAL, pg_terminate_backend, normal exit), by the
 *     on_shmem_exit cleanup of service_client.c, for whatever is left;
 *   - by the service's reaper (service_shmem.c gs_pool_reap_held) when the
 *     slot's scan owner is no longer that process (it died without
 *     cleanup).
 * Freeing checks index, slot and pid, takes only the pool's LWLock and
 * never raises an ERROR, so it is safe in reset callbacks during abort.
 *
 * Pool short (only the reserve left: gs_pool_scan_reserve): the state goes
 * on in palloc'd chunks (counted in key_pool_scan_short); nothing fails.
 */
#include "postgres.h"
#include "pg_compat.h"

#include "access/parallel.h"
#include "utils/memutils.h"

#include "guc.h"
#include "service.h"
#include "state.h"

/* pool chunks this backend's scans hold now (service_client.c: a wait for
 * chunks that only our own scans could give back is not worth waiting) */
static int	gs_svc_scan_held = 0;

int
gs_service_scan_held_chunks(void)
{
	return gs_svc_scan_held;
}

typedef struct GsSvcScan
{
	GsState    *st;
	MemoryContextCallback cb;
	int			slot;			/* this backend's job slot when the first chunk came */
} GsSvcScan;

/* the state's memory goes: its pool chunks with it */
static void
gs_svc_scan_reset(void *arg)
{
	GsSvcScan  *sc = (GsSvcScan *) arg;

	if (sc->st->svc == sc)
	{
		gs_service_scan_release(sc->st);
		sc->st->svc = NULL;
	}
}

char *
gs_service_scan_chunk(GsState *st, uint64 *cap, int *pool_ref)
{
	GsSvcControl *c = gs_svc_ctl;
	int			j;
	int			idx;

	/* workers fill partial states only; a service that is not up takes no keys */
	if (IsParallelWorker() || st->key_bytes == 0 ||
		pg_atomic_read_u32(&c->state) != GS_SVC_READY)
		return NULL;
	j = gs_svc_my_slot();
	if (j < 0)
		return NULL;
	gs_svc_register_exit();
	if (st->svc == NULL)
	{
		/* before the chunk: an ERROR here leaves nothing taken */
		GsSvcScan  *sc = (GsSvcScan *) MemoryContextAllocZero(st->mcxt, sizeof(GsSvcScan));

		sc->st = st;
		sc->slot = j;
		sc->cb.func = gs_svc_scan_reset;
		sc->cb.arg = sc;
		MemoryContextRegisterResetCallback(st->mcxt, &sc->cb);
		st->svc = sc;
	}
	idx = gs_pool_take_held(st->svc->slot);
	if (idx < 0)
	{
		pg_atomic_fetch_add_u64(&c->scan_short, 1);
		return NULL;
	}
	gs_svc_scan_held++;
	*cap = c->chunk_bytes / st->key_bytes;
	*pool_ref = idx + 1;
	return gs_svc_pool + (Size) idx * c->chunk_bytes;
}

/*
 * Every pool chunk of st back to the pool; the chunks stay in st's list
 * (their keys unreadable from now on), so callers either drop the list
 * (spill) or are the reset callback.  No palloc, no ERROR.
 */
void
gs_service_scan_release(GsState *st)
{
	int			batch[64];
	int			nb = 0;

	if (st->svc == NULL)
		return;
	for (int i = 0; i < st->nchunks; i++)
	{
		GsChunk    *k = &st->chunks[i];

		if (k->pool_ref == 0)
			continue;
		batch[nb++] = k->pool_ref - 1;
		gs_svc_scan_held--;
		k->pool_ref = 0;
		k->data = NULL;
		k->n = k->cap = 0;
		if (nb == lengthof(batch))
		{
			gs_pool_free_held(batch, nb, st->svc->slot);
			nb = 0;
		}
	}
	gs_pool_free_held(batch, nb, st->svc->slot);
}
