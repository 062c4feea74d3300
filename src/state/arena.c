/*
 * arena.c — the leader's key arena for parallel aggregates (arena.h).
 *
 * Why: without it, a parallel worker's large partial state costs a copy into
 * a fresh shared memory segment (shared_state.c), the leader's own partial
 * state two copies through a bytea, and the leader maps every segment per
 * query, then unmaps them: host memory traffic that parallel sum(x) does not
 * have, most of gpu_quantiles' gap to it
 * (test/bench/results/e2e-2026-11-23-h100-session6.md).  With the arena the
 * keys are written once, during the scan, into memory the leader has mapped
 * since an earlier query.  With the GPU service ready, partial states lease
 * key-pool chunks instead (service_scan.c) and the arena takes only what the
 * pool could not.  A GROUP BY's partial states are many and small: they are
 * copied into slices of an arena chunk when serialized (gs_arena_slice), so
 * that the leader holds references to them, not copies in its hash table.
 *
 * Lifetime and safety:
 *   - The leader creates the arena at the start of a parallel query, once it
 *     has seen a large partial state (or a grouped one of a slice's size)
 *     arrive the slow way: the first such parallel aggregate of a backend
 *     goes without it.  The segment is
 *     created with its full size (gpuselect.parallel_arena_size) and stays
 *     mapped until the backend exits, which removes it.
 *   - Workers learn its handle from a hidden GUC, gpuselect.parallel_arena,
 *     which the leader sets before the workers start (ExecutorStart hook;
 *     workers receive the leader's settings).  A worker uses the arena only
 *     if its header names the worker's own leader.
 *   - Chunks are handed out by an atomic bump offset.  The leader resets it,
 *     and bumps the arena's generation, at the end of each of its
 *     transactions, when no worker of it is left and no state that refers to
 *     the arena is alive.  References carry the generation, and the leader
 *     checks handle, generation and bounds before reading: a stale or foreign
 *     reference is an ERROR, never a wrong answer.
 *   - A full arena only means slower: the state's further chunks are
 *     palloc'd and travel as before.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/guc.h"

#include "state/arena.h"
#include "base/guc.h"
#include "service/service.h"
#include "state/service_scan.h"
#include "state/shared_state.h"

#define GS_ARENA_MAGIC			0x41525347	/* "GSRA" */
/* keys start a page into the segment: chunks are page aligned for DMA */
#define GS_ARENA_KEYS_OFFSET	((Size) 4096)

typedef struct GsArenaHeader
{
	uint32		magic;
	ProcNumber	leader;			/* the backend that created it */
	uint64		size;			/* bytes of the key area */
	pg_atomic_uint64 used;		/* bytes handed out in this generation */
	pg_atomic_uint64 generation;	/* the leader's transactions so far */
} GsArenaHeader;

StaticAssertDecl(sizeof(GsArenaHeader) <= GS_ARENA_KEYS_OFFSET, "arena header must fit before the keys");
StaticAssertDecl(GS_ARENA_CHUNK_BYTES % 4096 == 0, "arena chunks must be page aligned");

int64		gs_states_in_arena = 0;

/*
 * This process's mapping of the arena: its own (leader) or its leader's
 * (worker).  The mapping is pinned, so no dsm_segment pointer needs keeping.
 */
static GsArenaHeader *arena_hdr = NULL;
static char *arena_keys = NULL;
static dsm_handle arena_handle = 0;
static bool worker_tried = false;	/* worker: looked for the arena already */
static bool arena_wanted = false;	/* leader: a large state came the slow way */
static ExecutorStart_hook_type prev_executor_start = NULL;

/* this process's chunk for slices (gs_arena_slice), of arena generation slab_gen */
static char *slab = NULL;
static Size slab_used = 0;
static uint64 slab_gen = 0;

static void
gs_arena_xact_callback(XactEvent event, void *arg)
{
	if (arena_hdr == NULL || IsParallelWorker())
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			/* the transaction's workers are gone, and its states with them */
			if (pg_atomic_read_u64(&arena_hdr->used) > 0)
			{
				pg_atomic_write_u64(&arena_hdr->used, 0);
				pg_atomic_fetch_add_u64(&arena_hdr->generation, 1);
			}
			break;
		default:
			break;
	}
}

/* leader: create the arena if it is wanted, and publish its handle */
static void
gs_arena_prepare(void)
{
	char		want[16] = "";

	if (arena_hdr == NULL && gs_guc_parallel_arena_size > 0)
	{
		Size		size = (Size) gs_guc_parallel_arena_size << 20;
		dsm_segment *seg;

		/* a segment that does not fit /dev/shm would be an ERROR: skip it */
		if (!gs_dsm_room_for(size + ((Size) 64 << 20)))
			return;
		seg = dsm_create(GS_ARENA_KEYS_OFFSET + size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
		if (seg == NULL)
			return;
		dsm_pin_mapping(seg);	/* for the backend's life */
		arena_hdr = (GsArenaHeader *) dsm_segment_address(seg);
		arena_hdr->magic = GS_ARENA_MAGIC;
		arena_hdr->leader = MyProcNumber;
		arena_hdr->size = size;
		pg_atomic_init_u64(&arena_hdr->used, 0);
		pg_atomic_init_u64(&arena_hdr->generation, 0);
		arena_keys = (char *) arena_hdr + GS_ARENA_KEYS_OFFSET;
		arena_handle = dsm_segment_handle(seg);
		RegisterXactCallback(gs_arena_xact_callback, NULL);
	}
	if (arena_hdr != NULL && gs_guc_parallel_arena_size > 0)
		snprintf(want, sizeof(want), "%u", (unsigned) arena_handle);
	/* the setting is transactional: an abort may have undone it */
	if (strcmp(gs_guc_parallel_arena ? gs_guc_parallel_arena : "", want) != 0)
		SetConfigOption("gpuselect.parallel_arena", want, PGC_SUSET, PGC_S_SESSION);
}

static void
gs_arena_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	/* before the workers start: they take the settings as they are then */
	if (queryDesc->plannedstmt->parallelModeNeeded &&
		!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && !IsParallelWorker() && !IsInParallelMode())
	{
		/* with the GPU service, workers lease key-pool chunks for this backend */
		gs_service_lease_prepare();
		if (arena_wanted)
			gs_arena_prepare();
	}
}

void
gs_arena_install_hook(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = gs_arena_executor_start;
}

void
gs_arena_note_large_state(void)
{
	if (!IsParallelWorker())
		arena_wanted = true;
}

/* worker: map the leader's arena, once; false if there is none to use */
static bool
gs_arena_attach(void)
{
	unsigned long h;
	char	   *end;
	dsm_segment *seg;
	GsArenaHeader *hdr;

	worker_tried = true;
	if (gs_guc_parallel_arena == NULL || gs_guc_parallel_arena[0] == '\0')
		return false;
	h = strtoul(gs_guc_parallel_arena, &end, 10);
	if (*end != '\0' || h == 0 || h > PG_UINT32_MAX)
		return false;
	seg = dsm_find_mapping((dsm_handle) h);
	if (seg == NULL)
		seg = dsm_attach((dsm_handle) h);
	if (seg == NULL)
		return false;
	hdr = (GsArenaHeader *) dsm_segment_address(seg);
	if (dsm_segment_map_length(seg) < GS_ARENA_KEYS_OFFSET ||
		hdr->magic != GS_ARENA_MAGIC || hdr->leader != ParallelLeaderProcNumber ||
		dsm_segment_map_length(seg) < GS_ARENA_KEYS_OFFSET + hdr->size)
	{
		dsm_detach(seg);		/* not our leader's: do not touch it */
		return false;
	}
	dsm_pin_mapping(seg);		/* until the worker exits */
	arena_hdr = hdr;
	arena_keys = (char *) hdr + GS_ARENA_KEYS_OFFSET;
	arena_handle = (dsm_handle) h;
	return true;
}

char *
gs_arena_alloc(void)
{
	uint64		cur;

	/* shared_partial_states = off means the tuple queue, for everything */
	if (!gs_guc_shared_partial_states ||
		gs_guc_parallel_arena == NULL || gs_guc_parallel_arena[0] == '\0')
		return NULL;
	if (IsParallelWorker())
	{
		if (arena_hdr == NULL && (worker_tried || !gs_arena_attach()))
			return NULL;
	}
	else if (arena_hdr == NULL)
		return NULL;

	cur = pg_atomic_read_u64(&arena_hdr->used);
	for (;;)
	{
		if (cur > arena_hdr->size || arena_hdr->size - cur < GS_ARENA_CHUNK_BYTES)
			return NULL;
		if (pg_atomic_compare_exchange_u64(&arena_hdr->used, &cur, cur + GS_ARENA_CHUNK_BYTES))
			return arena_keys + cur;
	}
}

/*
 * Slices are bump-allocated from one chunk per process; the rest of a chunk
 * too short for the next slice is left unused (at most a quarter of it,
 * GS_ARENA_SLICE_MAX_BYTES).  The leader's chunk is forgotten once its
 * transaction ends (the generation moves on and the chunk is handed out
 * again); a worker's lives as long as the worker, inside one transaction.
 */
char *
gs_arena_slice(Size bytes)
{
	char	   *p;

	bytes = TYPEALIGN(GS_ARENA_SLICE_ALIGN, bytes);
	/* shared_partial_states = off: the tuple queue, even mid-transaction */
	if (bytes == 0 || bytes > GS_ARENA_SLICE_MAX_BYTES || !gs_guc_shared_partial_states)
		return NULL;
	if (slab != NULL &&
		(slab_gen != pg_atomic_read_u64(&arena_hdr->generation) ||
		 GS_ARENA_CHUNK_BYTES - slab_used < bytes))
		slab = NULL;
	if (slab == NULL)
	{
		slab = gs_arena_alloc();	/* attaches a worker to the arena */
		if (slab == NULL)
			return NULL;
		slab_used = 0;
		slab_gen = pg_atomic_read_u64(&arena_hdr->generation);
	}
	p = slab + slab_used;
	slab_used += bytes;
	return p;
}

void
gs_arena_ref(const char *chunk, GsArenaRef *ref)
{
	Assert(arena_hdr != NULL && chunk >= arena_keys && chunk < arena_keys + arena_hdr->size);
	memset(ref, 0, sizeof(*ref));
	ref->handle = arena_handle;
	ref->generation = pg_atomic_read_u64(&arena_hdr->generation);
	ref->offset = (uint64) (chunk - arena_keys);
}

char *
gs_arena_resolve(const GsArenaRef *ref, Size bytes)
{
	/* a chunk, or a slice of one (gs_arena_slice): never across two */
	if (arena_hdr == NULL || IsParallelWorker() || ref->handle != arena_handle ||
		ref->generation != pg_atomic_read_u64(&arena_hdr->generation) ||
		ref->offset % GS_ARENA_SLICE_ALIGN != 0 || bytes == 0 || bytes > GS_ARENA_CHUNK_BYTES ||
		ref->offset > pg_atomic_read_u64(&arena_hdr->used) ||
		bytes > pg_atomic_read_u64(&arena_hdr->used) - ref->offset ||
		ref->offset / GS_ARENA_CHUNK_BYTES != (ref->offset + bytes - 1) / GS_ARENA_CHUNK_BYTES)
		elog(ERROR, "gpuselect: a partial state refers to keys that are not in this backend's arena");
	return arena_keys + ref->offset;
}

void
gs_arena_usage(uint64 *size, uint64 *used)
{
	bool		mine = arena_hdr != NULL && !IsParallelWorker();

	*size = mine ? arena_hdr->size : 0;
	*used = mine ? pg_atomic_read_u64(&arena_hdr->used) : 0;
}
