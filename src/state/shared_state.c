/*
 * shared_state.c — a parallel worker's large partial state reaches the leader
 * through a dynamic shared memory segment; the tuple queue carries only its
 * handle.
 *
 * Why: a serialized state holds every value the worker scanned (8 bytes each
 * for float8).  Through the 64 kB tuple queue the leader received about
 * 1 GB/s (measured: 40 MB from one worker took 43 ms after the scan; with 8
 * workers and 10M rows most of gpu_quantiles' gap to sum(x)).  Through a
 * segment it costs one memcpy in the worker and the page mapping in the
 * leader, and the leader's keys are not copied again (the segment is taken
 * over like a handover chunk, state.c).
 *
 * Lifetime, without pinning the segment (a pinned segment outlives an
 * aborted query: a leak until restart):
 *   - The worker creates the segment, writes the keys, sends the handle, and
 *     keeps its mapping until the leader has attached: at the end of its
 *     transaction (XACT_EVENT_PARALLEL_PRE_COMMIT) it sleeps on the
 *     segment's condition variable until the leader sets `attached`.
 *   - The leader attaches while deserializing, sets `attached`, wakes the
 *     worker, and keeps its mapping until the owning memory context goes.
 *   - If the leader fails or is cancelled first, it terminates its workers
 *     (the sleep is interruptible), every mapping goes, and the segment with
 *     the last one.
 * The segment's bytes are reserved from the server-wide budget
 * (gpuselect.max_shared_memory, shm_budget.c) before it is created; past it
 * the state takes the tuple queue.  A count of mappings in the header (the
 * worker's, then the leader's) says which detach destroys the segment: that
 * process's on_dsm_detach callback gives the reservation back, on success,
 * ERROR, cancel and exit alike.
 * This needs the leader to deserialize every partial tuple a worker sends,
 * or the worker would wait for ever: true for a plain aggregate (no GROUP BY:
 * the finalize step reads all its input before it returns anything), not for
 * grouped plans, where a LIMIT can stop reading early.  The caller
 * (plain_aggs.c) checks that.
 */
#include "postgres.h"

#include <sys/statvfs.h>

#include "access/parallel.h"
#include "access/xact.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/dsm_impl.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "base/guc.h"
#include "state/shared_state.h"
#include "state/shm_budget.h"

#define GS_SHARED_MAGIC		0x4d535347	/* "GSSM" */
/* keys start a cache line into the segment */
#define GS_SHARED_KEYS_OFFSET	((Size) 64)

typedef struct GsSharedHeader
{
	uint32		magic;
	pg_atomic_uint32 attached;	/* set by the leader once it has mapped the segment */
	ConditionVariable cv;		/* the worker sleeps on it until then */
	uint64		key_bytes;
	pg_atomic_uint32 mappings;	/* processes that map it and will give back */
	uint64		reserved;		/* of the server-wide budget (shm_budget.c) */
} GsSharedHeader;

StaticAssertDecl(sizeof(GsSharedHeader) <= GS_SHARED_KEYS_OFFSET,
				 "shared state header must fit before the keys");

int64		gs_states_shared = 0;

/* worker: segments created in this transaction, waiting for the leader */
typedef struct GsPendingSegment
{
	dsm_segment *seg;
	pg_atomic_uint32 *attached; /* in the segment: set by the leader */
	ConditionVariable *cv;		/* in the segment: the worker sleeps on it */
} GsPendingSegment;

static GsPendingSegment *pending;
static int	npending;
static int	maxpending;
static bool xact_callback_registered = false;

static GsSharedHeader *
gs_shared_header(dsm_segment *seg)
{
	return (GsSharedHeader *) dsm_segment_address(seg);
}

/* wait until the leader has mapped every pending segment, then unmap them */
static void
gs_shared_release_pending(bool wait)
{
	while (npending > 0)
	{
		GsPendingSegment *p = &pending[npending - 1];
		dsm_segment *seg = p->seg;

		if (wait)
		{
			ConditionVariablePrepareToSleep(p->cv);
			while (pg_atomic_read_u32(p->attached) == 0)
				ConditionVariableSleep(p->cv, PG_WAIT_EXTENSION);
			ConditionVariableCancelSleep();
		}
		/* off the list first: an ERROR in dsm_detach must not detach twice */
		npending--;
		dsm_detach(seg);
	}
}

static void
gs_shared_xact_callback(XactEvent event, void *arg)
{
	if (npending == 0)
		return;
	switch (event)
	{
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			gs_shared_release_pending(true);
			break;
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_COMMIT:
			/* error paths (and never reached otherwise): just unmap */
			gs_shared_release_pending(false);
			break;
		default:
			break;
	}
}

/*
 * Is there room for a segment of this many bytes?  With the default posix
 * implementation a segment lives in /dev/shm, which containers often keep
 * small (64 MB); a segment that does not fit is an ERROR, not a NULL.
 * Callers ask for slack: several workers may create segments at once.
 */
bool
gs_dsm_room_for(Size bytes)
{
	struct statvfs vfs;

	if (dynamic_shared_memory_type != DSM_IMPL_POSIX)
		return true;
	if (statvfs("/dev/shm", &vfs) != 0)
		return false;
	return (uint64) vfs.f_bavail * (uint64) vfs.f_frsize >= (uint64) bytes;
}

/* room on the pending list for one more segment (before creating it) */
static void
gs_shared_pending_room(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(gs_shared_xact_callback, NULL);
		xact_callback_registered = true;
	}
	if (npending == maxpending)
	{
		int			newmax = maxpending > 0 ? maxpending * 2 : 4;

		if (pending == NULL)
			pending = MemoryContextAlloc(TopMemoryContext, newmax * sizeof(GsPendingSegment));
		else
			pending = repalloc(pending, newmax * sizeof(GsPendingSegment));
		maxpending = newmax;
	}
}

/*
 * Worker: keep seg mapped until the leader sets *attached (both in the
 * segment) and broadcasts cv, at the end of the worker's transaction;
 * unmapped then, or at once on abort.  The mapping is pinned: the resource
 * owner leaves it.
 */
static void
gs_shared_hold_until_attached(dsm_segment *seg, pg_atomic_uint32 *attached,
							  ConditionVariable *cv)
{
	gs_shared_pending_room();
	/* unmapped by gs_shared_release_pending, not by the resource owner */
	dsm_pin_mapping(seg);
	pending[npending].seg = seg;
	pending[npending].attached = attached;
	pending[npending].cv = cv;
	npending++;
}

bool
gs_shared_state_wanted(Size key_bytes)
{
	return IsParallelWorker() && gs_guc_shared_partial_states &&
		key_bytes >= GS_SHARED_STATE_MIN_BYTES &&
		gs_dsm_room_for(key_bytes * 4 + ((Size) 64 << 20));
}

/*
 * A process's mapping goes (on_dsm_detach): the last one gives the
 * segment's reservation back, as the segment goes with it.  Never an ERROR.
 */
static void
gs_shared_unmapped(dsm_segment *seg, Datum arg)
{
	GsSharedHeader *h = gs_shared_header(seg);

	if (pg_atomic_sub_fetch_u32(&h->mappings, 1) == 0)
		gs_shm_budget_release((Size) h->reserved);
}

char *
gs_shared_state_create(Size key_bytes, dsm_handle *handle)
{
	dsm_segment *volatile seg = NULL;
	volatile bool owned = false;
	GsSharedHeader *h;
	Size		reserved;

	gs_shared_pending_room();
	reserved = GS_SHARED_KEYS_OFFSET + key_bytes;
	if (gs_shm_budget_reserve(reserved, reserved) == 0)
		return NULL;			/* past gpuselect.max_shared_memory: the queue */
	/* until gs_shared_unmapped owns the reservation, an ERROR gives it back */
	PG_TRY();
	{
		seg = dsm_create(reserved, DSM_CREATE_NULL_IF_MAXSEGMENTS);
		if (seg != NULL)
		{
			h = gs_shared_header(seg);
			pg_atomic_init_u32(&h->mappings, 1);
			h->reserved = reserved;
			on_dsm_detach(seg, gs_shared_unmapped, (Datum) 0);
			owned = true;
		}
	}
	PG_CATCH();
	{
		if (!owned)
			gs_shm_budget_release(reserved);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (seg == NULL)
	{
		gs_shm_budget_release(reserved);
		return NULL;
	}
	h = gs_shared_header(seg);
	h->magic = GS_SHARED_MAGIC;
	pg_atomic_init_u32(&h->attached, 0);
	ConditionVariableInit(&h->cv);
	gs_shared_hold_until_attached(seg, &h->attached, &h->cv);
	h->key_bytes = key_bytes;
	*handle = dsm_segment_handle(seg);
	return (char *) h + GS_SHARED_KEYS_OFFSET;
}

/* the leader's mapping of one segment, owned by a memory context */
typedef struct GsSharedMapping
{
	MemoryContextCallback cb;
	dsm_segment *seg;
} GsSharedMapping;

static void
gs_shared_mapping_release(void *arg)
{
	GsSharedMapping *m = (GsSharedMapping *) arg;

	if (m->seg != NULL)
	{
		dsm_segment *seg = m->seg;

		m->seg = NULL;
		dsm_detach(seg);
	}
}

char *
gs_shared_state_attach(dsm_handle handle, Size key_bytes, MemoryContext owner)
{
	GsSharedMapping *m;
	dsm_segment *seg;
	GsSharedHeader *h;

	/* the callback first: once the mapping is pinned, it is its only owner */
	m = (GsSharedMapping *) MemoryContextAllocZero(owner, sizeof(GsSharedMapping));
	m->cb.func = gs_shared_mapping_release;
	m->cb.arg = m;
	MemoryContextRegisterResetCallback(owner, &m->cb);

	/* until pinned, the resource owner unmaps it if an ERROR comes first */
	seg = dsm_attach(handle);
	if (seg == NULL)
		elog(ERROR, "gpuselect: a parallel worker's partial state is no longer in shared memory");
	h = gs_shared_header(seg);
	if (dsm_segment_map_length(seg) < GS_SHARED_KEYS_OFFSET + key_bytes ||
		h->magic != GS_SHARED_MAGIC || h->key_bytes != key_bytes)
		elog(ERROR, "gpuselect: a parallel worker's shared partial state is corrupt");

	/*
	 * One more mapping to give the reservation back (the worker's holds on
	 * until `attached`): the counter found and the callback registered
	 * first, so an ERROR in either counts none.
	 */
	if (!gs_shm_budget_attach())
		elog(ERROR, "gpuselect: no shared memory budget for a worker's shared partial state");
	on_dsm_detach(seg, gs_shared_unmapped, (Datum) 0);
	pg_atomic_fetch_add_u32(&h->mappings, 1);

	/* the worker may go now */
	pg_atomic_write_u32(&h->attached, 1);
	ConditionVariableBroadcast(&h->cv);

	dsm_pin_mapping(seg);
	m->seg = seg;
	gs_states_shared++;

	if (gs_guc_test_fail_shared_attach)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("gpuselect: test hook: failing after attaching a shared partial state")));
	return (char *) h + GS_SHARED_KEYS_OFFSET;
}
