/*
 * shm_budget.c — the server-wide budget of dynamic shared memory that
 * gpuselect's sessions create for parallel partial states
 * (gpuselect.max_shared_memory; shm_budget.h).
 *
 * Why (issue 29): every arena (arena.c) and every large worker state
 * (shared_state.c) is a dynamic shared memory segment, a file in /dev/shm
 * with the default posix implementation: RAM that no process's memory limit
 * sees.  When each backend kept a 256 MB arena for its life, a few hundred
 * idle sessions of any role held tens of GB, and the OOM killer took the
 * server down.  Now segments live for a query or transaction at most
 * (arena.c, shared_state.c), and all of them together stay under one
 * superuser setting: past it, partial states take the tuple queue (slower,
 * the same answers).
 *
 * The counter (bytes reserved by segments that exist, server-wide):
 *   - A creator reserves before dsm_create and gives the reservation back if
 *     the creation fails or raises an ERROR.
 *   - The segment gives it back when it is destroyed: arena.c from the
 *     leader's on_dsm_detach callback (its mapping is the last: its workers
 *     have exited before its transaction ends), shared_state.c from the last
 *     of the worker's and the leader's mappings (a count in the segment).
 *     Those callbacks run on every detach: at transaction end, on ERROR and
 *     cancel (resource owners, xact callbacks) and at exit, FATAL included
 *     (proc_exit's dsm_backend_shutdown).
 *   - A process that ends without them (SIGKILL, the OOM killer, SIGQUIT)
 *     makes the postmaster restart the server: the counter is then in memory
 *     created anew (the main segment, or the DSM registry, which is in it),
 *     and PostgreSQL destroys every segment registered in its DSM control
 *     segment, ours included (none is pinned; README "Sizing /dev/shm" on
 *     the one window PostgreSQL leaves, inside dsm_create).
 *
 * Where the counter lives (a few bytes, found by name; the same whatever
 * process asks first):
 *   - PostgreSQL 17 and later: GetNamedDSMSegment, the DSM registry, which
 *     serves preloaded and not preloaded libraries alike.
 *   - 15 and 16: ShmemInitStruct in the main shared memory segment.
 *     Preloaded, the space is requested (shmem_request_hook); not preloaded,
 *     it comes from the spare space PostgreSQL leaves at the end of the main
 *     segment for late small allocations (about 100 kB; the lock tables grow
 *     into it too; we take 32 bytes), which ShmemInitStruct hands out in any
 *     backend.  Should that fail, this process uses no shared segments at
 *     all (the tuple queue), and gpuselect_status() says so.  Chosen over
 *     "no shared segments without preloading" on 15/16: that would take the
 *     fast path from the ordinary installation (CREATE EXTENSION only).
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/dsm_impl.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "base/guc.h"
#include "state/shm_budget.h"

#define GS_BUDGET_NAME	"gpuselect shared memory budget"

typedef struct GsShmBudget
{
	pg_atomic_uint64 in_use;	/* bytes reserved by segments that exist */
	pg_atomic_uint64 refused;	/* reservations the cap cut short */
} GsShmBudget;

static GsShmBudget *budget = NULL;
static bool budget_unavailable = false;	/* this process could not find it */
/* set in the postmaster at preload, inherited by every child it forks */
static bool budget_preloaded = false;

#ifndef GS_HAVE_DSM_REGISTRY
static shmem_request_hook_type prev_shmem_request_hook = NULL;

static void
gs_shm_budget_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(GsShmBudget)));
}
#endif

void
gs_shm_budget_preload_init(void)
{
	budget_preloaded = true;
#ifndef GS_HAVE_DSM_REGISTRY
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = gs_shm_budget_request;
#endif
}

static void
gs_shm_budget_init(void *ptr)
{
	GsShmBudget *b = (GsShmBudget *) ptr;

	pg_atomic_init_u64(&b->in_use, 0);
	pg_atomic_init_u64(&b->refused, 0);
}

/* this process's pointer to the counter, or NULL (none: no shared segments) */
static GsShmBudget *
gs_shm_budget_get(void)
{
	bool		found;

	if (budget != NULL || budget_unavailable)
		return budget;
#ifdef GS_HAVE_DSM_REGISTRY
	budget = GetNamedDSMSegment(GS_BUDGET_NAME, sizeof(GsShmBudget),
								gs_shm_budget_init, &found);
#else
	{
		MemoryContext cxt = CurrentMemoryContext;
		GsShmBudget *b = NULL;

		/*
		 * ShmemInitStruct releases its own lock before any ERROR (no space
		 * left, no index entry): only ours is held when one comes.
		 */
		LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
		PG_TRY();
		{
			b = ShmemInitStruct(GS_BUDGET_NAME, sizeof(GsShmBudget), &found);
			if (!found)
				gs_shm_budget_init(b);
		}
		PG_CATCH();
		{
			LWLockRelease(AddinShmemInitLock);
			MemoryContextSwitchTo(cxt);
			FlushErrorState();
			budget_unavailable = true;
			return NULL;
		}
		PG_END_TRY();
		LWLockRelease(AddinShmemInitLock);
		budget = b;
	}
#endif
	return budget;
}

/* the cap in bytes: the setting, or (-1) a quarter of /dev/shm */
static uint64
gs_shm_budget_limit(void)
{
	struct statvfs vfs;
	long		pages,
				page_size;

	if (gs_guc_max_shared_memory >= 0)
		return (uint64) gs_guc_max_shared_memory << 20;
	/*
	 * /dev/shm is half of RAM by default and a container's 64 MB where it
	 * is small: a quarter of it leaves room for PostgreSQL's own parallel
	 * query segments and everything else that lives there.  Segments not
	 * in /dev/shm (sysv, mmap): an eighth of RAM, the same on a default host.
	 */
	if (dynamic_shared_memory_type == DSM_IMPL_POSIX)
		return statvfs("/dev/shm", &vfs) == 0 ?
			(uint64) vfs.f_blocks * (uint64) vfs.f_frsize / 4 : 0;
	pages = sysconf(_SC_PHYS_PAGES);
	page_size = sysconf(_SC_PAGESIZE);
	return pages > 0 && page_size > 0 ? (uint64) pages * (uint64) page_size / 8 : 0;
}

bool
gs_shm_budget_attach(void)
{
	return gs_shm_budget_get() != NULL;
}

Size
gs_shm_budget_reserve(Size min_bytes, Size want_bytes)
{
	GsShmBudget *b = gs_shm_budget_get();
	uint64		limit = gs_shm_budget_limit();
	uint64		cur;

	Assert(min_bytes <= want_bytes);
	if (b == NULL)
		return 0;
	cur = pg_atomic_read_u64(&b->in_use);
	for (;;)
	{
		uint64		room = cur < limit ? limit - cur : 0;
		uint64		take = Min((uint64) want_bytes, room);

		if (take < min_bytes)
		{
			pg_atomic_fetch_add_u64(&b->refused, 1);
			return 0;
		}
		if (pg_atomic_compare_exchange_u64(&b->in_use, &cur, cur + take))
		{
			if (take < want_bytes)
				pg_atomic_fetch_add_u64(&b->refused, 1);
			return (Size) take;
		}
	}
}

void
gs_shm_budget_release(Size bytes)
{
	/* a process that reserved, or gs_shm_budget_attach'ed, has budget set */
	if (budget == NULL || bytes == 0)
		return;
	Assert(pg_atomic_read_u64(&budget->in_use) >= bytes);
	pg_atomic_fetch_sub_u64(&budget->in_use, bytes);
}

void
gs_shm_budget_usage(uint64 *in_use, uint64 *limit, uint64 *refused, const char **where)
{
	GsShmBudget *b = gs_shm_budget_get();

	*in_use = b ? pg_atomic_read_u64(&b->in_use) : 0;
	*refused = b ? pg_atomic_read_u64(&b->refused) : 0;
	*limit = gs_shm_budget_limit();
#ifdef GS_HAVE_DSM_REGISTRY
	*where = b ? "dsm registry" : "none";
#else
	*where = !b ? "none: no room in the main shared memory segment (tuple queue only)" :
		budget_preloaded ? "main shared memory" : "main shared memory, spare space";
#endif
}
