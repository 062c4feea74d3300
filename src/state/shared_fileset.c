/*
 * shared_fileset.c — temporary files that parallel workers (and the leader
 * itself) write and the leader reads (see shared_fileset.h).
 *
 * Why a segment of the leader's, one per query.  A SharedFileSet must live
 * in shared memory that every process using it maps; the parallel query's
 * own segment would do, but an aggregate's support functions get no share
 * of it (only custom scans and foreign tables have DSM estimate/initialize
 * callbacks).  A set created by the writer would have to stay mapped until
 * the leader attached it -- the worker waiting for the leader at its
 * commit, which only a plain aggregate's Finalize step guarantees (a GROUP
 * BY's leader may stop reading early: a LIMIT, and the worker would wait
 * for ever).  So the leader creates the set before its workers start, and
 * every writer adds files to it; nobody waits for anybody:
 *   - At ExecutorStart of a query whose plan serializes partial states of
 *     comparison types (arena.c's hook), the leader reserves the segment's
 *     bytes from the server-wide budget (gpuselect.max_shared_memory,
 *     shm_budget.c), creates it, and names it to the workers through a
 *     hidden setting, gpuselect.parallel_fileset (workers receive the
 *     leader's settings), as the key arena is named.  Past the budget there
 *     is no set: partial states then stay in memory and travel whole, as
 *     the serial form always allowed (the leader's combined state still
 *     spills on its own).
 *   - The leader keeps its mapping as long as the query's memory
 *     (es_query_cxt, a reset callback): ExecutorEnd, or the portal's
 *     cleanup on ERROR and cancel; its workers have exited by then.  The
 *     set's last detach deletes every file in it (SharedFileSet's own
 *     on_dsm_detach), read or not; the last mapping (a count in the
 *     segment) gives the reservation back.  Never pinned: PostgreSQL's DSM
 *     cleanup destroys it after a crash, and its files go with the temporary
 *     directories at restart.
 *   - A worker attaches the set named by the setting on its first spill,
 *     if its header names the worker's own leader, and keeps its mapping
 *     until it exits (the exit detaches it, success or not).  Its files are
 *     closed by its resource owner on ERROR, deleted by the set.
 *   - A file is named by a number the set hands out (an atomic counter in
 *     its header: unique among all its writers, whatever their pids); the
 *     serialized state carries (set handle, number) and the leader opens it by
 *     name, read-only, in whichever of its live sets has that handle: a
 *     stale or foreign reference is an ERROR, never a wrong answer.
 *   - The leader deletes a file once its combine has read it: a rescanned
 *     Gather (a correlated subquery) would otherwise pile up every round's
 *     files until the query ends, on no one's temp_file_limit (a writer's
 *     closed files no longer count).  So a serialized state is read once: a
 *     second read (a Finalize step over a Sort that rewinds its stored
 *     partial states on a rescan, where the planner put no Material) is an
 *     ERROR, as for key-pool leases.  Files the leader never reads (a LIMIT)
 *     stay until the query ends.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include <fcntl.h>

#include "access/parallel.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/sharedfileset.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "base/guc.h"
#include "state/shared_fileset.h"
#include "state/shm_budget.h"

#define GS_FILESET_MAGIC	0x53464447	/* "GDFS" */

typedef struct GsFileSetHeader
{
	uint32		magic;
	ProcNumber	leader;			/* the backend that created it */
	pg_atomic_uint32 mappings;	/* processes that map it and will give back */
	pg_atomic_uint32 files;		/* files created in it so far (their names) */
	uint64		reserved;		/* of the server-wide budget (shm_budget.c) */
	SharedFileSet fileset;
} GsFileSetHeader;

/* the segment's size, and what it is charged: a page (what /dev/shm takes) */
#define GS_FILESET_SEGMENT_BYTES	((Size) TYPEALIGN(4096, sizeof(GsFileSetHeader)))

/* leader: one live set of a query (in its es_query_cxt) */
typedef struct GsQueryFileSet
{
	MemoryContextCallback cb;
	dsm_segment *seg;			/* NULL: not (yet) created, or gone */
	GsFileSetHeader *h;
	dsm_handle	handle;
	struct GsQueryFileSet *next;
} GsQueryFileSet;

int64		gs_states_shared_files = 0;

/* leader: this backend's live sets, the newest first */
static GsQueryFileSet *leader_sets = NULL;

/* worker: its leader's set, once attached */
static GsFileSetHeader *worker_set = NULL;
static dsm_handle worker_handle = 0;
static bool worker_tried = false;
static bool worker_counted = false;

/*
 * A process's mapping goes (on_dsm_detach): the last one gives the segment's
 * reservation back, as the segment goes with it.  arg 1: a worker's, which
 * counts only once its increment is done.  Never an ERROR.
 */
static void
gs_fileset_unmapped(dsm_segment *seg, Datum arg)
{
	GsFileSetHeader *h = (GsFileSetHeader *) dsm_segment_address(seg);

	if (DatumGetBool(arg))
	{
		if (!worker_counted)
			return;
		worker_counted = false;
		worker_set = NULL;
	}
	if (pg_atomic_sub_fetch_u32(&h->mappings, 1) == 0)
		gs_shm_budget_release((Size) h->reserved);
}

/* leader: the query's memory goes (ExecutorEnd, or cleanup after an abort) */
static void
gs_fileset_query_end(void *arg)
{
	GsQueryFileSet *qs = (GsQueryFileSet *) arg;
	GsQueryFileSet **p;

	for (p = &leader_sets; *p != NULL; p = &(*p)->next)
		if (*p == qs)
		{
			*p = qs->next;
			break;
		}
	if (qs->seg != NULL)
	{
		dsm_segment *seg = qs->seg;

		qs->seg = NULL;
		dsm_detach(seg);		/* the last detach deletes the files */
	}
}

/* leader: a new segment with a set in it, reserved from the budget; NULL if none */
static dsm_segment *
gs_fileset_create_segment(void)
{
	Size		size = GS_FILESET_SEGMENT_BYTES;
	dsm_segment *volatile seg = NULL;
	volatile bool owned = false;
	GsFileSetHeader *h;

	if (gs_shm_budget_reserve(size, size) == 0)
		return NULL;			/* past gpuselect.max_shared_memory */
	/* until gs_fileset_unmapped owns the reservation, an ERROR gives it back */
	PG_TRY();
	{
		seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
		if (seg != NULL)
		{
			h = (GsFileSetHeader *) dsm_segment_address(seg);
			pg_atomic_init_u32(&h->mappings, 1);
			h->reserved = size;
			on_dsm_detach(seg, gs_fileset_unmapped, BoolGetDatum(false));
			owned = true;
		}
	}
	PG_CATCH();
	{
		if (!owned)
			gs_shm_budget_release(size);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (seg == NULL)
	{
		gs_shm_budget_release(size);
		return NULL;
	}
	/* an ERROR from here on: the resource owner detaches it (not pinned yet) */
	h = (GsFileSetHeader *) dsm_segment_address(seg);
	h->magic = GS_FILESET_MAGIC;
	h->leader = MyProcNumber;
	pg_atomic_init_u32(&h->files, 0);
	SharedFileSetInit(&h->fileset, seg);
	return seg;
}

void
gs_shared_fileset_query_start(MemoryContext query_cxt, bool wanted, bool publish)
{
	char		name[16] = "";
	GsQueryFileSet *made = NULL;

	if (wanted)
	{
		/* the callback first: once the mapping is pinned, it is its only owner */
		GsQueryFileSet *qs = MemoryContextAllocZero(query_cxt, sizeof(GsQueryFileSet));
		dsm_segment *seg;

		qs->cb.func = gs_fileset_query_end;
		qs->cb.arg = qs;
		MemoryContextRegisterResetCallback(query_cxt, &qs->cb);
		seg = gs_fileset_create_segment();
		if (seg != NULL)
		{
			dsm_pin_mapping(seg);
			qs->seg = seg;
			qs->h = (GsFileSetHeader *) dsm_segment_address(seg);
			qs->handle = dsm_segment_handle(seg);
			qs->next = leader_sets;
			leader_sets = qs;
			made = qs;
		}
	}
	if (!publish)
		return;
	if (made != NULL)
		snprintf(name, sizeof(name), "%u", (unsigned) made->handle);
	/* the setting is transactional: an abort may have undone it */
	if (strcmp(gs_guc_parallel_fileset ? gs_guc_parallel_fileset : "", name) != 0)
		SetConfigOption("gpuselect.parallel_fileset", name, PGC_SUSET, PGC_S_SESSION);
}

/* worker: map the leader's set, once; false if there is none to use */
static bool
gs_fileset_worker_attach(void)
{
	unsigned long hv;
	char	   *end;
	dsm_segment *seg;
	GsFileSetHeader *h;
	uint32		cur;

	worker_tried = true;
	if (gs_guc_parallel_fileset == NULL || gs_guc_parallel_fileset[0] == '\0')
		return false;
	hv = strtoul(gs_guc_parallel_fileset, &end, 10);
	if (*end != '\0' || hv == 0 || hv > PG_UINT32_MAX)
		return false;
	/* until pinned, the resource owner unmaps it if an ERROR comes first */
	seg = dsm_attach((dsm_handle) hv);
	if (seg == NULL)
		return false;			/* the leader's query is over */
	h = (GsFileSetHeader *) dsm_segment_address(seg);
	if (dsm_segment_map_length(seg) < sizeof(GsFileSetHeader) ||
		h->magic != GS_FILESET_MAGIC || h->leader != ParallelLeaderProcNumber ||
		!gs_shm_budget_attach())
	{
		dsm_detach(seg);		/* not our leader's: do not touch it */
		return false;
	}
	/* one more mapping to give the reservation back; never from zero (gone) */
	on_dsm_detach(seg, gs_fileset_unmapped, BoolGetDatum(true));
	cur = pg_atomic_read_u32(&h->mappings);
	do
	{
		if (cur == 0)
		{
			dsm_detach(seg);
			return false;
		}
	} while (!pg_atomic_compare_exchange_u32(&h->mappings, &cur, cur + 1));
	worker_counted = true;
	SharedFileSetAttach(&h->fileset, seg);	/* an ERROR if it is being destroyed */
	dsm_pin_mapping(seg);		/* until the worker exits */
	worker_set = h;
	worker_handle = (dsm_handle) hv;
	return true;
}

/* this process's set to write into, or NULL */
static GsFileSetHeader *
gs_fileset_for_writing(dsm_handle *handle)
{
	if (IsParallelWorker())
	{
		if (worker_set == NULL && (worker_tried || !gs_fileset_worker_attach()))
			return NULL;
		*handle = worker_handle;
		return worker_set;
	}
	if (leader_sets == NULL)
		return NULL;
	*handle = leader_sets->handle;
	return leader_sets->h;
}

bool
gs_shared_fileset_available(void)
{
	dsm_handle	handle;

	return gs_fileset_for_writing(&handle) != NULL;
}

static GsQueryFileSet *gs_fileset_find(const GsFileSetRef *ref);

static void
gs_fileset_file_name(char *name, Size size, const GsFileSetRef *ref)
{
	snprintf(name, size, "gsv%u", (unsigned) ref->number);
}

BufFile *
gs_shared_fileset_create_file(GsFileSetRef *ref)
{
	GsFileSetHeader *h;
	char		name[MAXPGPATH];

	memset(ref, 0, sizeof(*ref));
	h = gs_fileset_for_writing(&ref->handle);
	if (h == NULL)
		elog(ERROR, "gpuselect: no file set for a spilled partial state");
	ref->number = pg_atomic_add_fetch_u32(&h->files, 1);
	gs_fileset_file_name(name, sizeof(name), ref);
	return BufFileCreateFileSet(&h->fileset.fs, name);
}

BufFile *
gs_shared_fileset_open_file(const GsFileSetRef *ref)
{
	GsQueryFileSet *qs;
	char		name[MAXPGPATH];
	BufFile    *file;

	qs = gs_fileset_find(ref);
	if (IsParallelWorker() || qs == NULL || ref->number == 0 ||
		ref->number > pg_atomic_read_u32(&qs->h->files))
		elog(ERROR, "gpuselect: a spilled partial state's file set is not this backend's");
	gs_fileset_file_name(name, sizeof(name), ref);
	file = BufFileOpenFileSet(&qs->h->fileset.fs, name, O_RDONLY, true);
	if (file == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuselect: a spilled partial state was read already"),
				 errdetail("Its file is deleted once read; a plan that reads the same partial states twice needs a Material node.")));
	gs_states_shared_files++;
	return file;
}

/* the set a reference names, for the leader; NULL if none */
static GsQueryFileSet *
gs_fileset_find(const GsFileSetRef *ref)
{
	for (GsQueryFileSet *qs = leader_sets; qs != NULL; qs = qs->next)
		if (qs->handle == ref->handle)
			return qs;
	return NULL;
}

void
gs_shared_fileset_delete_file(const GsFileSetRef *ref)
{
	GsQueryFileSet *qs = gs_fileset_find(ref);
	char		name[MAXPGPATH];

	if (qs == NULL || qs->seg == NULL)
		return;					/* the set is gone, and its files with it */
	gs_fileset_file_name(name, sizeof(name), ref);
	BufFileDeleteFileSet(&qs->h->fileset.fs, name, true);
}
