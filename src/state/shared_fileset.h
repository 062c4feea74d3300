/*
 * shared_fileset.h — temporary files that parallel workers (and the leader
 * itself) write and the leader reads: PostgreSQL's SharedFileSet in a small
 * dynamic shared memory segment of the leader's, one per query whose plan
 * serializes partial states of comparison types.  The value spill
 * (datum_spill.c) keeps a partial state past gpuselect.work_mem in a file of
 * it, so that the serialized state names the file instead of carrying the
 * values, grouped or not.  See shared_fileset.c for why the leader's set and
 * for the lifetimes.
 */
#ifndef GS_SHARED_FILESET_H
#define GS_SHARED_FILESET_H

#include "postgres.h"

#include "storage/buffile.h"
#include "storage/dsm.h"

/* what a serialized partial state records of its file */
typedef struct GsFileSetRef
{
	dsm_handle	handle;			/* the leader's set */
	uint32		number;			/* the file's number in the set (its name) */
} GsFileSetRef;

/*
 * Leader, at ExecutorStart (arena.c's hook): wanted, a new set for the
 * query, living as long as query_cxt (its es_query_cxt), within the
 * server-wide budget (gpuselect.max_shared_memory; none when it is short).
 * publish: name this query's set (or none) to the parallel workers
 * about to start (the hidden setting gpuselect.parallel_fileset).
 */
extern void gs_shared_fileset_query_start(MemoryContext query_cxt, bool wanted, bool publish);

/*
 * Writer (a worker, or the leader's own partial state): is there a set to
 * write into -- the leader's newest, or a worker's leader's (attached on
 * first use)?  False: partial states stay in memory.
 */
extern bool gs_shared_fileset_available(void);
/*
 * A new file of that set, for writing, under the current resource owner and
 * memory context, and its reference.  The writer completes it
 * (BufFileExportFileSet) and closes it; the set deletes it.
 */
extern BufFile *gs_shared_fileset_create_file(GsFileSetRef *ref);

/*
 * Leader: open the file a reference names, read-only, in one of this
 * backend's live sets; an ERROR if it names none, or the file was deleted
 * (read already).
 */
extern BufFile *gs_shared_fileset_open_file(const GsFileSetRef *ref);
/* leader: the file has been read (and closed): delete it now, not with the set */
extern void gs_shared_fileset_delete_file(const GsFileSetRef *ref);

/* gpuselect_status(): partial states the leader read from such files */
extern int64 gs_states_shared_files;

#endif							/* GS_SHARED_FILESET_H */
