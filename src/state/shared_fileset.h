/*
 * shared_fileset.h — a temporary file that a parallel worker writes and the
 * leader reads: PostgreSQL's SharedFileSet in a small dynamic shared memory
 * segment of its own, named by the segment's handle.  The value spill
 * (datum_spill.c) keeps a partial state past gpuselect.work_mem in one, so
 * that the serialized state names the file instead of carrying the values.
 * See shared_fileset.c for why a segment of its own and for the lifetimes.
 */
#ifndef GS_SHARED_FILESET_H
#define GS_SHARED_FILESET_H

#include "postgres.h"

#include "storage/buffile.h"
#include "storage/dsm.h"

/* one process's mapping of a file set's segment */
typedef struct GsSharedFileSet GsSharedFileSet;

/*
 * Creator (a parallel worker, or the leader for its own partial state):
 * a new segment and file set; the returned struct lives in mcxt.
 */
extern GsSharedFileSet *gs_shared_fileset_create(MemoryContext mcxt);
/* the one file of the set, new, for writing (BufFileExportFileSet when done) */
extern BufFile *gs_shared_fileset_create_file(GsSharedFileSet *fs);
extern dsm_handle gs_shared_fileset_handle(GsSharedFileSet *fs);

/*
 * Reader (the leader): map the set named by handle (or find it mapped,
 * when the leader created it), tell a waiting worker, and open the file
 * read-only.  The mapping lives as long as mcxt.
 */
extern GsSharedFileSet *gs_shared_fileset_attach(dsm_handle handle, MemoryContext mcxt);
extern BufFile *gs_shared_fileset_open_file(GsSharedFileSet *fs);

/* gpuselect_status(): partial states the leader read from such files */
extern int64 gs_states_shared_files;

#endif							/* GS_SHARED_FILESET_H */
