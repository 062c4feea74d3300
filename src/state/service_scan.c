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
 *     on_shmem_exit cleanup of service_slot.c, for whatever is left;
 *   - by the service's reaper (service_pool_held.c gs_pool_reap_held) when the
 *     slot's scan owner is no longer that process (it died without
 *     cleanup).
 * Freeing checks index, slot and pid, takes only the pool's LWLock and
 * never raises an ERROR, so it is safe in reset callbacks during abort.
 *
 * Pool short (only the reserve left: gs_pool_scan_reserve): the state goes
 * on in palloc'd chunks (counted in key_pool_scan_short); nothing fails.
 *
 * Leases: partial states (parallel workers, and the leader's own partial
 * aggregation) of a parallel aggregate, grouped or not.  A worker cannot
 * know the group's size, so it follows the arena's rule (arena.h): once its
 * palloc'd chunks reach GS_ARENA_START_BYTES (a grouped state: a pool
 * chunk's worth), with the service READY,
 * gpuselect.device not cpu and gpuselect.shared_partial_states on, further chunks are pool chunks LEASED to its
 * leader -- held under the leader's job slot and pid, with the chunk's
 * `leased` mark and the slot's lease generation -- and the serialized
 * state carries (slot, generation, index, count) references
 * (state_serial.c).  The worker never frees a lease and may exit at any
 * time.  Lifetime, in the leader:
 *   - At the start of each parallel query (arena.c's ExecutorStart hook,
 *     before workers start) the leader declares itself its slot's scan
 *     owner and registers its exit and transaction-end cleanup; a worker
 *     leases only when the slot's scan owner is its lock group leader with
 *     the leader's current pid.
 *   - Deserializing checks every reference (bounds, slot, holder pid,
 *     leased, generation): a mismatch is an ERROR, never a wild pointer.
 *     The deserialized state reads the chunk but does not own it.
 *   - gs_state_combine ADOPTS the chunk (gs_service_adopt_lease): it stops
 *     being leased and becomes an ordinary held chunk of the combined
 *     state, referred to in place by the final call's job and freed by
 *     the combined state's reset callback, as the leader's own scan chunks.
 *   - Leases no state adopted (LIMIT, early end, an ERROR or cancel in a
 *     worker or the leader, a terminated worker) are freed at the leader's
 *     transaction end (commit, abort, prepare): by then AtEOXact_Parallel
 *     has waited for every worker, and every state of the transaction is
 *     gone.  The lease generation goes up then, so an older reference
 *     never resolves.
 *   - The leader's FATAL or pg_terminate_backend: the abort runs (workers
 *     waited for, leases swept) before the on_shmem_exit cleanup, which
 *     frees whatever (slot, pid) still holds; a leader that vanished
 *     without cleanup (a crash restarts shared memory anyway) is the
 *     reaper's, as its scan owner is gone.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "base/guc.h"
#include "service/service.h"
#include "state/service_scan.h"
#include "state/state.h"

typedef struct GsSvcScan
{
	GsState    *st;
	MemoryContextCallback cb;
	int			slot;			/* this backend's job slot when the first chunk came */
	dlist_node	node;			/* in gs_svc_scans */
} GsSvcScan;

/* every state of this backend that may hold pool chunks (their memory
 * contexts' reset callbacks take them out): gs_service_scan_unload_all */
static dlist_head gs_svc_scans = DLIST_STATIC_INIT(gs_svc_scans);

/* the state's memory goes: its pool chunks with it */
static void
gs_svc_scan_reset(void *arg)
{
	GsSvcScan  *sc = (GsSvcScan *) arg;

	dlist_delete(&sc->node);
	if (sc->st->svc == sc)
	{
		gs_service_scan_release(sc->st);
		sc->st->svc = NULL;
	}
}

/* st's pool chunks go back with its memory (before any chunk is taken:
 * an ERROR here leaves nothing taken) */
static void
gs_svc_scan_attach(GsState *st, int slot)
{
	GsSvcScan  *sc;

	if (st->svc != NULL)
		return;
	sc = (GsSvcScan *) MemoryContextAllocZero(st->mcxt, sizeof(GsSvcScan));
	sc->st = st;
	sc->slot = slot;
	sc->cb.func = gs_svc_scan_reset;
	sc->cb.arg = sc;
	MemoryContextRegisterResetCallback(st->mcxt, &sc->cb);
	dlist_push_tail(&gs_svc_scans, &sc->node);
	st->svc = sc;
}

char *
gs_service_scan_chunk(GsState *st, uint64 *cap, int *pool_ref)
{
	GsSvcControl *c = gs_svc_ctl;
	int			j;
	int			idx;

	/* workers fill partial states only (leases); a service that is not up takes no keys */
	if (IsParallelWorker() || st->key_bytes == 0 ||
		pg_atomic_read_u32(&c->state) != GS_SVC_READY)
		return NULL;
	j = gs_svc_my_slot();
	if (j < 0)
		return NULL;
	gs_svc_register_exit();
	gs_svc_scan_attach(st, j);
	idx = gs_pool_take_held(st->svc->slot);
	if (idx < 0)
	{
		pg_atomic_fetch_add_u64(&c->scan_short, 1);
		return NULL;
	}
	*cap = c->chunk_bytes / st->key_bytes;
	*pool_ref = idx + 1;
	return gs_pool_prefault(gs_svc_pool + (Size) idx * c->chunk_bytes, c->chunk_bytes);
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

/*
 * Before this backend waits for pool chunks (service_client.c): it must
 * hold none while it waits, or two backends each holding part of the pool
 * wait for each other (issue #29).  Every state that holds chunks -- the
 * group being finalized, the other groups and aggregates of the query, a
 * cursor's -- gets its keys copied into its own memory context, chunk by
 * chunk (each chunk is switched over and given back before the next, so an
 * out-of-memory ERROR midway leaves every chunk either pooled or copied),
 * and the chunk goes back to the pool.  The copies are full chunks: later
 * appends start a new one (which is palloc'd while anyone waits for the
 * pool, gs_pool_take_held).  Leases not adopted yet stay: they are still
 * the partial states' (see the README's limits).  Returns the number of
 * chunks given back.
 */
int
gs_service_scan_held_elsewhere(const GsState *except)
{
	dlist_iter	it;
	int			n = 0;

	dlist_foreach(it, &gs_svc_scans)
	{
		GsSvcScan  *sc = dlist_container(GsSvcScan, node, it.cur);
		GsState    *st = sc->st;

		if (st->svc != sc || st == except)
			continue;
		for (int i = 0; i < st->nchunks; i++)
			n += st->chunks[i].pool_ref != 0;
	}
	return n;
}

int
gs_service_scan_unload_all(void)
{
	dlist_iter	it;
	int			n = 0;

	dlist_foreach(it, &gs_svc_scans)
	{
		GsSvcScan  *sc = dlist_container(GsSvcScan, node, it.cur);
		GsState    *st = sc->st;

		if (st->svc != sc)
			continue;
		for (int i = 0; i < st->nchunks; i++)
		{
			GsChunk    *k = &st->chunks[i];
			Size		bytes = (Size) k->n * st->key_bytes;
			int			idx = k->pool_ref - 1;
			char	   *copy;

			if (k->pool_ref == 0)
				continue;
			copy = MemoryContextAllocHuge(st->mcxt, Max(bytes, st->key_bytes));
			memcpy(copy, k->data, bytes);
			k->data = copy;
			k->cap = k->n;
			k->pool_ref = 0;
			k->leased = false;
			gs_pool_free_held(&idx, 1, sc->slot);
			n++;
		}
	}
	return n;
}

/* ---------------- leases (see the header comment) ---------------- */

static bool gs_lease_xact_registered = false;
static bool gs_lease_xact_pending = false;	/* a parallel query ran in this transaction */

/* the leader's transaction ends: its workers are gone, and its states */
static void
gs_lease_xact_callback(XactEvent event, void *arg)
{
	int			j;

	(void) arg;
	if (!gs_lease_xact_pending || IsParallelWorker())
		return;
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	gs_lease_xact_pending = false;
	j = gs_svc_my_slot();
	if (j >= 0)
		(void) gs_pool_free_leases(j);
}

/*
 * Leader, at the start of a parallel query, before its workers start:
 * workers may lease chunks for this process from now on.
 */
void
gs_service_lease_prepare(void)
{
	int			j;

	/*
	 * Whatever the service's state now: it may be READY by the time a
	 * worker asks, and the slot's scan owner stays declared from an earlier
	 * query, so every parallel transaction gets its sweep.
	 */
	if (!gs_service_in_use() || IsParallelWorker())
		return;
	j = gs_svc_my_slot();
	if (j < 0)
		return;
	gs_svc_register_exit();
	if (!gs_lease_xact_registered)
	{
		RegisterXactCallback(gs_lease_xact_callback, NULL);
		gs_lease_xact_registered = true;
	}
	gs_lease_xact_pending = true;
	gs_pool_declare_scan_owner(j);
}

/*
 * A partial state's next chunk, leased for the leader (the worker's lock
 * group leader, or this process when it is the leader).  The caller has
 * checked the arena's rule; NULL: no lease, use the arena or palloc.
 */
char *
gs_service_lease_chunk(GsState *st, uint64 *cap, int *pool_ref)
{
	GsSvcControl *c = gs_svc_ctl;
	PGPROC	   *leader;
	int			slot;
	int			idx;
	uint64		gen = 0;

	/* gpuselect.shared_partial_states = off: the tuple queue for everything */
	if (st->lease_off || st->key_bytes == 0 || !gs_guc_shared_partial_states ||
		!gs_service_in_use() || pg_atomic_read_u32(&c->state) != GS_SVC_READY)
		return NULL;

	/*
	 * A grouped partial state (one per group and participant) waits until
	 * it holds a pool chunk's worth of keys in palloc'd memory: many
	 * mid-sized groups would otherwise tie the pool up in mostly empty
	 * chunks until the leader combines them.  A plain aggregate's one state
	 * leases from the arena's 256 kB on.
	 */
	if (!st->arena_ok && (Size) st->grow_cap * st->key_bytes < c->chunk_bytes)
		return NULL;
	if (IsParallelWorker())
	{
		leader = MyProc->lockGroupLeader;
		slot = (int) ParallelLeaderProcNumber;
	}
	else
	{
		/* the leader's own partial aggregation: only inside a parallel
		 * query it prepared for (its transaction end sweeps) */
		if (!gs_lease_xact_pending)
			return NULL;
		leader = MyProc;
		slot = gs_svc_my_slot();
	}
	if (leader == NULL || slot < 0 || slot >= c->njobs)
		return NULL;
	idx = gs_pool_take_lease(slot, leader, &gen);
	if (idx < 0)
	{
		st->lease_off = true;	/* the pool is short or the leader not ready */
		pg_atomic_fetch_add_u64(&c->scan_short, 1);
		return NULL;
	}
	/* one state's leases share slot and generation (one transaction) */
	st->lease_slot = slot;
	st->lease_gen = gen;
	*cap = c->chunk_bytes / st->key_bytes;
	*pool_ref = idx + 1;
	return gs_pool_prefault(gs_svc_pool + (Size) idx * c->chunk_bytes, c->chunk_bytes);
}

/*
 * Leader: the combined state `into` takes over a leased chunk of a
 * deserialized state (false: it is not leased to this process any more).
 * From now on into's reset callback frees it.
 */
bool
gs_service_adopt_lease(GsState *into, int pool_ref, uint64 gen)
{
	int			j = gs_svc_my_slot();

	if (j < 0)
		return false;
	gs_svc_scan_attach(into, j);	/* before: an ERROR leaves the lease as it was */
	if (!gs_pool_adopt_lease(pool_ref - 1, j, gen))
		return false;
	/* nobody writes an adopted chunk: it may be copied ahead of the job */
	gs_pool_seal(pool_ref - 1);
	return true;
}
