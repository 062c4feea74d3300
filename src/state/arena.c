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
 * Lifetime and safety (issue 29: an arena kept for a backend's life, 256 MB
 * each, let idle sessions of any role fill /dev/shm):
 *   - The leader creates an arena at the start of a parallel query whose
 *     plan serializes gpuselect partial states (an Agg node of ours that
 *     serializes), once this backend has seen partial states arrive the
 *     slow way (copied into a segment or through the tuple queue): the first
 *     such query of a backend goes without it.  Its size is what the last
 *     transaction with such states needed (keys in its arena plus keys that
 *     came the slow way), in whole chunks, at most
 *     gpuselect.parallel_arena_size, and reserved first from the server-wide
 *     budget (gpuselect.max_shared_memory, shm_budget.c): a smaller arena, or
 *     none, when the budget is short.
 *   - It is destroyed at the end of the leader's transaction (xact callback,
 *     commit, abort or prepare: the transaction's workers have exited and its
 *     states are gone), and its reservation given back from the leader's
 *     on_dsm_detach callback, which also runs when the backend exits.  An
 *     idle session holds none.  The segment is never pinned: PostgreSQL's
 *     DSM cleanup destroys it after a crash.
 *   - Workers learn its handle from a hidden GUC, gpuselect.parallel_arena,
 *     which the leader sets before the workers start (ExecutorStart hook;
 *     workers receive the leader's settings).  A worker uses the arena only
 *     if its header names the worker's own leader.  (The same hook makes
 *     the query's file set for spilled partial states: shared_fileset.c.)
 *   - Chunks are handed out by an atomic bump offset.  References carry the
 *     arena's serial number (this backend's arenas so far), and the leader
 *     checks handle, serial and bounds before reading: a stale or foreign
 *     reference is an ERROR, never a wrong answer.
 *   - A full arena only means slower: the state's further chunks are
 *     palloc'd and travel as before, and the next transaction's arena is
 *     sized for them.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/nodeAgg.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/guc.h"

#include "base/guc.h"
#include "base/types.h"
#include "service/service.h"
#include "state/arena.h"
#include "state/shared_fileset.h"
#include "state/service_scan.h"
#include "state/shared_state.h"
#include "state/shm_budget.h"

#define GS_ARENA_MAGIC			0x41525347	/* "GSRA" */
/* keys start a page into the segment: chunks are page aligned for DMA */
#define GS_ARENA_KEYS_OFFSET	((Size) 4096)

typedef struct GsArenaHeader
{
	uint32		magic;
	ProcNumber	leader;			/* the backend that created it */
	uint64		size;			/* bytes of the key area */
	pg_atomic_uint64 used;		/* bytes handed out */
	pg_atomic_uint64 generation;	/* serial: the leader's arenas so far */
	uint64		reserved;		/* of the server-wide budget (shm_budget.c) */
} GsArenaHeader;

StaticAssertDecl(sizeof(GsArenaHeader) <= GS_ARENA_KEYS_OFFSET, "arena header must fit before the keys");
StaticAssertDecl(GS_ARENA_CHUNK_BYTES % 4096 == 0, "arena chunks must be page aligned");

int64		gs_states_in_arena = 0;

/*
 * This process's mapping of the arena: its own (leader) or its leader's
 * (worker).  The mapping is pinned (no resource owner): the leader detaches
 * it at its transaction end, a worker when it exits.
 */
static dsm_segment *arena_seg = NULL;
static GsArenaHeader *arena_hdr = NULL;
static char *arena_keys = NULL;
static dsm_handle arena_handle = 0;
static bool worker_tried = false;	/* worker: looked for the arena already */
static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorRun_hook_type prev_executor_run = NULL;
static bool start_hook_ran = false;	/* gs_arena_executor_start has run here */

/* leader: arenas created so far (their serial numbers) */
static uint64 arena_serial = 0;
/* leader: arena bytes this transaction's partial states would have taken */
static uint64 slow_bytes = 0;
static bool slow_large = false;	/* one of them was large: an arena is wanted */
static bool slow_slices = false;	/* some were GROUP BY states (slices) */
/* leader: what the last transaction with partial states needed (0: none yet) */
static uint64 arena_need = 0;
/* leader: the last arena's size and use, for gpuselect_status() */
static uint64 last_size = 0;
static uint64 last_used = 0;

/* this process's chunk for slices (gs_arena_slice), of arena generation slab_gen */
static char *slab = NULL;
static Size slab_used = 0;
static uint64 slab_gen = 0;

/*
 * Leader: its arena is being unmapped (transaction end, or exit), and so
 * destroyed: its workers have gone.  Gives the reservation back.  Never an
 * ERROR: runs inside dsm_detach.
 */
static void
gs_arena_unmapped(dsm_segment *seg, Datum arg)
{
	GsArenaHeader *hdr = (GsArenaHeader *) dsm_segment_address(seg);

	last_size = hdr->size;
	last_used = pg_atomic_read_u64(&hdr->used);
	gs_shm_budget_release((Size) hdr->reserved);
	arena_seg = NULL;
	arena_hdr = NULL;
	arena_keys = NULL;
	arena_handle = 0;
	slab = NULL;
}

static void
gs_arena_xact_callback(XactEvent event, void *arg)
{
	uint64		need;

	if (IsParallelWorker())
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			/* the transaction's workers are gone, and its states with them */
			need = slow_bytes + (arena_hdr ? pg_atomic_read_u64(&arena_hdr->used) : 0);
			/* slices: each process also leaves its last chunk part empty */
			if (slow_slices)
				need += (uint64) (max_parallel_workers_per_gather + 1) * GS_ARENA_CHUNK_BYTES;
			if (need > 0 && (slow_large || arena_hdr != NULL))
				arena_need = need;
			slow_bytes = 0;
			slow_large = false;
			slow_slices = false;
			slab = NULL;
			if (arena_seg != NULL)
				dsm_detach(arena_seg);	/* gs_arena_unmapped forgets it */
			break;
		default:
			break;
	}
}

/* the C function behind our aggregates' serialfunc (plain_aggs.c) */
extern Datum gs_serialize(PG_FUNCTION_ARGS);

/*
 * An Agg node that serializes gpuselect partial states, anywhere below;
 * *values: one of them aggregates a comparison type (GS_T_DATUM: the value
 * spill's file set, shared_fileset.c, may be wanted).
 */
typedef struct GsSerializesOurs
{
	bool		ours;
	bool		values;
} GsSerializesOurs;

static bool
gs_arena_serializes_ours(PlanState *ps, void *context)
{
	GsSerializesOurs *found = (GsSerializesOurs *) context;

	if (ps == NULL)
		return false;
	if (IsA(ps, AggState))
	{
		AggState   *agg = (AggState *) ps;

		if (DO_AGGSPLIT_SERIALIZE(agg->aggsplit))
			for (int i = 0; i < agg->numtrans; i++)
			{
				Aggref	   *aggref = agg->pertrans[i].aggref;
				GsTypeKind	kind;
				uint8		key_bytes;

				if (!OidIsValid(agg->pertrans[i].serialfn_oid) ||
					agg->pertrans[i].serialfn.fn_addr != gs_serialize)
					continue;
				found->ours = true;
				if (aggref != NULL && aggref->args != NIL &&
					gs_type_kind_from_oid(exprType((Node *) linitial_node(TargetEntry, aggref->args)->expr),
										  &kind, &key_bytes, NULL) &&
					kind == GS_T_DATUM)
					found->values = true;
			}
	}
	if (found->ours && found->values)
		return true;			/* nothing more to learn */
	return planstate_tree_walker(ps, gs_arena_serializes_ours, context);
}

/* leader: create this transaction's arena, sized to need, within the budget */
static void
gs_arena_create(void)
{
	Size		ceiling = ((Size) gs_guc_parallel_arena_size << 20) / GS_ARENA_CHUNK_BYTES * GS_ARENA_CHUNK_BYTES;
	Size		want,
				granted,
				size;
	dsm_segment *volatile seg = NULL;
	volatile bool owned = false;
	GsArenaHeader *hdr;

	if (ceiling == 0 || arena_need == 0)
		return;
	want = Min(ceiling, (Size) TYPEALIGN64(GS_ARENA_CHUNK_BYTES, arena_need));
	/* a segment that does not fit /dev/shm would be an ERROR: skip it */
	if (!gs_dsm_room_for(want + ((Size) 64 << 20)))
		return;
	granted = gs_shm_budget_reserve(GS_ARENA_KEYS_OFFSET + GS_ARENA_CHUNK_BYTES,
									GS_ARENA_KEYS_OFFSET + want);
	if (granted == 0)
		return;
	size = (granted - GS_ARENA_KEYS_OFFSET) / GS_ARENA_CHUNK_BYTES * GS_ARENA_CHUNK_BYTES;

	/* until gs_arena_unmapped owns the reservation, an ERROR gives it back */
	PG_TRY();
	{
		seg = dsm_create(GS_ARENA_KEYS_OFFSET + size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
		if (seg != NULL)
		{
			hdr = (GsArenaHeader *) dsm_segment_address(seg);
			hdr->reserved = granted;
			hdr->size = size;
			on_dsm_detach(seg, gs_arena_unmapped, (Datum) 0);
			owned = true;
		}
	}
	PG_CATCH();
	{
		if (!owned)
			gs_shm_budget_release(granted);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (seg == NULL)
	{
		gs_shm_budget_release(granted);
		return;
	}
	dsm_pin_mapping(seg);		/* until the transaction ends */
	hdr = (GsArenaHeader *) dsm_segment_address(seg);
	hdr->magic = GS_ARENA_MAGIC;
	hdr->leader = MyProcNumber;
	pg_atomic_init_u64(&hdr->used, 0);
	pg_atomic_init_u64(&hdr->generation, ++arena_serial);
	arena_seg = seg;
	arena_hdr = hdr;
	arena_keys = (char *) hdr + GS_ARENA_KEYS_OFFSET;
	arena_handle = dsm_segment_handle(seg);
}

/* leader: the arena for this parallel query, if it wants one; publish its handle */
static void
gs_arena_prepare(const GsSerializesOurs *found)
{
	char		want[16] = "";

	if (arena_hdr == NULL && arena_need > 0 && gs_guc_shared_partial_states &&
		gs_guc_parallel_arena_size > 0 && found->ours)
		gs_arena_create();
	if (arena_hdr != NULL && gs_guc_parallel_arena_size > 0)
		snprintf(want, sizeof(want), "%u", (unsigned) arena_handle);
	/* the setting is transactional: an abort may have undone it */
	if (strcmp(gs_guc_parallel_arena ? gs_guc_parallel_arena : "", want) != 0)
		SetConfigOption("gpuselect.parallel_arena", want, PGC_SUSET, PGC_S_SESSION);
}

/*
 * Leader: what a query's parallel workers (and its own partial states) need
 * before they start: key-pool leases, the arena, the value spill's file set.
 */
static void
gs_query_prepare(QueryDesc *queryDesc, int eflags)
{
	GsSerializesOurs found = {false, false};
	bool		publish;

	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) || IsParallelWorker())
		return;
	/* before the workers start: they take the settings as they are then */
	publish = queryDesc->plannedstmt->parallelModeNeeded && !IsInParallelMode();
	gs_arena_serializes_ours(queryDesc->planstate, &found);
	if (publish)
	{
		/* with the GPU service, workers lease key-pool chunks for this backend */
		gs_service_lease_prepare();
		gs_arena_prepare(&found);
	}
	/*
	 * Partial states of comparison types past gpuselect.work_mem go to files
	 * of a set the leader creates for the query (serial partial aggregation
	 * of partitions too, in this process): shared_fileset.c
	 */
	gs_shared_fileset_query_start(queryDesc->estate->es_query_cxt, found.values, publish);
}

static void
gs_arena_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	start_hook_ran = true;
	gs_query_prepare(queryDesc, eflags);
}

/*
 * Not preloaded, this library is loaded by the first query that calls one
 * of its functions, inside that query's ExecutorStart (ExecInitAgg looks
 * the functions up), after the hook above would have run: that query is
 * prepared here, before ExecutePlan enters parallel mode and its workers
 * take the leader's settings.
 */
static void
gs_arena_executor_run(GS_EXECUTOR_RUN_PARAMS)
{
	if (!start_hook_ran)
	{
		start_hook_ran = true;
		gs_query_prepare(queryDesc, queryDesc->estate->es_top_eflags);
	}
	if (prev_executor_run)
		prev_executor_run(GS_EXECUTOR_RUN_ARGS);
	else
		standard_ExecutorRun(GS_EXECUTOR_RUN_ARGS);
}

void
gs_arena_install_hook(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = gs_arena_executor_start;
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = gs_arena_executor_run;
	RegisterXactCallback(gs_arena_xact_callback, NULL);
}

void
gs_arena_note_slow_bytes(Size bytes, bool wants_arena)
{
	if (IsParallelWorker())
		return;
	slow_bytes += bytes;
	slow_large |= wants_arena;
}

void
gs_arena_note_slow_slice(Size bytes)
{
	if (IsParallelWorker())
		return;
	/* a slice leaves at most a quarter of a chunk unused (gs_arena_slice) */
	slow_bytes += bytes + bytes / 3;
	slow_large = slow_slices = true;
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
	arena_seg = seg;
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
 * transaction ends (its arena goes); a worker's lives as long as the worker,
 * inside one transaction.
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
		(arena_hdr == NULL || slab_gen != pg_atomic_read_u64(&arena_hdr->generation) ||
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
gs_arena_usage(uint64 *size, uint64 *used, uint64 *prev_size, uint64 *prev_used)
{
	bool		mine = arena_hdr != NULL && !IsParallelWorker();

	*size = mine ? arena_hdr->size : 0;
	*used = mine ? pg_atomic_read_u64(&arena_hdr->used) : 0;
	*prev_size = last_size;
	*prev_used = last_used;
}
