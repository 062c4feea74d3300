/*
 * shared_fileset.c — a temporary file a parallel worker writes and the
 * leader reads (see shared_fileset.h).
 *
 * Why a segment of its own.  A SharedFileSet must live in shared memory
 * that both processes map; the parallel query's own segment would do, but
 * an aggregate's support functions get no share of it (only custom scans
 * and foreign tables have DSM estimate/initialize callbacks).  So the
 * process whose state spills creates a segment of a few hundred bytes
 * holding the set, and the serialized state carries its handle -- the same
 * route as a worker's large key state (shared_state.c), and the same
 * lifetime rules, without pinning the segment (a pinned segment would
 * outlive an aborted query):
 *   - A worker keeps its mapping until the leader has attached: at the end
 *     of its transaction it sleeps until the leader sets `attached`
 *     (gs_shared_hold_until_attached, shared_state.c).  Only plain
 *     aggregates spill partial states so: their finalizing step reads every
 *     partial state, so the leader always comes (a GROUP BY's could stop
 *     early, and the worker would wait for ever).
 *   - The leader attaches the set (SharedFileSetAttach counts it), wakes
 *     the worker, and keeps its mapping as long as the memory context it is
 *     given (the deserialized state's: until the combine has copied it).
 *   - The leader's own partial state (it takes part in the scan) is read in
 *     the process that made it: the mapping is found, not attached again,
 *     and the creating state's memory context unmaps it.
 *   - The last detach of a set deletes its files (SharedFileSet's own
 *     on_dsm_detach): after the leader has read them, or on ERROR and
 *     cancel in either process, whose resource owners close the files and
 *     whose aborts unmap the segment (a worker's pending list, the leader's
 *     memory context callbacks).
 * The segment is not charged to gpuselect.max_shared_memory: it is a few
 * hundred bytes, and its data is on disk (temp_file_limit applies).
 */
#include "postgres.h"

#include <fcntl.h>

#include "access/parallel.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/sharedfileset.h"
#include "utils/memutils.h"

#include "state/shared_fileset.h"
#include "state/shared_state.h"

#define GS_FILESET_MAGIC	0x53464447	/* "GDFS" */
#define GS_FILESET_FILE		"gsvalues"	/* the set's one file */

typedef struct GsFileSetHeader
{
	uint32		magic;
	pg_atomic_uint32 attached;	/* set by the leader once it has mapped the segment */
	ConditionVariable cv;		/* a worker sleeps on it until then */
	SharedFileSet fileset;
} GsFileSetHeader;

struct GsSharedFileSet
{
	MemoryContextCallback cb;
	dsm_segment *seg;			/* ours to unmap (NULL: not, or done) */
	GsFileSetHeader *h;
	dsm_handle handle;
};

int64		gs_states_shared_files = 0;

/* memory context callback: this process's mapping goes (never an ERROR) */
static void
gs_shared_fileset_unmap(void *arg)
{
	GsSharedFileSet *fs = (GsSharedFileSet *) arg;

	if (fs->seg != NULL)
	{
		dsm_segment *seg = fs->seg;

		fs->seg = NULL;
		dsm_detach(seg);
	}
}

/* a new struct in mcxt whose mapping (once set) mcxt unmaps */
static GsSharedFileSet *
gs_shared_fileset_new(MemoryContext mcxt)
{
	GsSharedFileSet *fs = MemoryContextAllocZero(mcxt, sizeof(GsSharedFileSet));

	fs->cb.func = gs_shared_fileset_unmap;
	fs->cb.arg = fs;
	MemoryContextRegisterResetCallback(mcxt, &fs->cb);
	return fs;
}

GsSharedFileSet *
gs_shared_fileset_create(MemoryContext mcxt)
{
	GsSharedFileSet *fs = gs_shared_fileset_new(mcxt);
	dsm_segment *seg;
	GsFileSetHeader *h;

	/* the resource owner unmaps it if an ERROR comes before it is pinned */
	seg = dsm_create(sizeof(GsFileSetHeader), 0);
	h = (GsFileSetHeader *) dsm_segment_address(seg);
	h->magic = GS_FILESET_MAGIC;
	pg_atomic_init_u32(&h->attached, 0);
	ConditionVariableInit(&h->cv);
	SharedFileSetInit(&h->fileset, seg);
	fs->h = h;
	fs->handle = dsm_segment_handle(seg);
	if (IsParallelWorker())
		gs_shared_hold_until_attached(seg, &h->attached, &h->cv);	/* pins the mapping */
	else
	{
		dsm_pin_mapping(seg);
		fs->seg = seg;
	}
	return fs;
}

BufFile *
gs_shared_fileset_create_file(GsSharedFileSet *fs)
{
	return BufFileCreateFileSet(&fs->h->fileset.fs, GS_FILESET_FILE);
}

dsm_handle
gs_shared_fileset_handle(GsSharedFileSet *fs)
{
	return fs->handle;
}

GsSharedFileSet *
gs_shared_fileset_attach(dsm_handle handle, MemoryContext mcxt)
{
	GsSharedFileSet *fs = gs_shared_fileset_new(mcxt);
	dsm_segment *seg = dsm_find_mapping(handle);

	fs->handle = handle;
	if (seg != NULL)
	{
		/* made by this process (the leader's own share): its creator unmaps it */
		fs->h = (GsFileSetHeader *) dsm_segment_address(seg);
		if (fs->h->magic != GS_FILESET_MAGIC)
			elog(ERROR, "gpuselect: a partial state's spill file set is corrupt");
		gs_states_shared_files++;
		return fs;
	}
	/* until pinned, the resource owner unmaps it if an ERROR comes first */
	seg = dsm_attach(handle);
	if (seg == NULL)
		elog(ERROR, "gpuselect: a parallel worker's spilled partial state is no longer there");
	fs->h = (GsFileSetHeader *) dsm_segment_address(seg);
	if (dsm_segment_map_length(seg) < sizeof(GsFileSetHeader) ||
		fs->h->magic != GS_FILESET_MAGIC)
		elog(ERROR, "gpuselect: a partial state's spill file set is corrupt");
	SharedFileSetAttach(&fs->h->fileset, seg);
	dsm_pin_mapping(seg);
	fs->seg = seg;

	/* the worker may go now: the set's files stay until our mapping goes */
	pg_atomic_write_u32(&fs->h->attached, 1);
	ConditionVariableBroadcast(&fs->h->cv);
	gs_states_shared_files++;
	return fs;
}

BufFile *
gs_shared_fileset_open_file(GsSharedFileSet *fs)
{
	return BufFileOpenFileSet(&fs->h->fileset.fs, GS_FILESET_FILE, O_RDONLY, false);
}
