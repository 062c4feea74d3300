/*
 * spill.h — a group whose keys outgrow gpuselect.work_mem keeps them in a
 * temporary file (BufFile) and is selected in passes over it (spill.c).
 *
 * state.c calls gs_spill_wanted when it is about to add a chunk, and
 * gs_spill_start / gs_spill_flush to write keys out; dispatch.c calls
 * gs_spill_select for a spilled state (st->spill != NULL).  Partial states
 * of parallel workers never spill: they are serialized to the leader.
 */
#ifndef GS_SPILL_H
#define GS_SPILL_H

#include "postgres.h"

#include "lib/ilist.h"
#include "storage/buffile.h"
#include "utils/resowner.h"

#include "state/state.h"

/*
 * A temporary file (BufFile) that lives as long as a memory context: closed
 * by a reset callback on that context when its memory goes (end of query,
 * next sorted group), or earlier by gs_temp_file_close; on ERROR and cancel
 * its resource owner closes and deletes it, and the callback only forgets
 * it (spill.c's header says why).  The key spill and the value spill
 * (datum_spill.c) both keep their files so.  The struct must be allocated
 * in (or outlive) the memory context given to gs_temp_file_open.
 */
typedef struct GsTempFile
{
	BufFile    *file;			/* NULL once closed (or left to its owner) */
	ResourceOwner owner;		/* the file's resource owner */
	MemoryContextCallback cb;
	dlist_node	node;			/* in spill.c's list of open files while file != NULL */
} GsTempFile;

extern void gs_temp_file_open(GsTempFile *tf, MemoryContext mcxt);
/*
 * The same lifetime for a BufFile opened elsewhere (allocated in mcxt, under
 * the current resource owner): a file set's file (shared_fileset.c), which
 * closing does not delete (its set does).
 */
extern void gs_temp_file_adopt(GsTempFile *tf, MemoryContext mcxt, BufFile *file);
extern void gs_temp_file_close(GsTempFile *tf);
/* seek / read exactly, an ERROR on failure */
extern void gs_temp_file_seek(GsTempFile *tf, int fileno, off_t off);
extern void gs_temp_file_read(GsTempFile *tf, void *buf, size_t bytes);

/* the limit in bytes: gpuselect.work_mem, or work_mem when it is -1 */
extern Size gs_spill_limit_bytes(void);

/* would st hold more than the limit with more_bytes more keys in memory? */
extern bool gs_spill_wanted(const GsState *st, Size more_bytes);

/*
 * Write st's in-memory keys to a new temporary file, free the chunks it
 * can (see spill.c), and give st one small write buffer chunk, returned.
 */
extern GsChunk *gs_spill_start(GsState *st);

/* the write buffer is full: append it to the file, return it emptied */
extern GsChunk *gs_spill_flush(GsState *st);

/*
 * Exact selection of nranks 0-based ascending ranks of a spilled state's
 * keys (file + write buffer): out_keys[i] for ranks[i].  Memory: at most
 * about the limit for candidates, plus a 512 kB histogram.  *passes gets
 * the number of passes over the keys.
 */
extern void gs_spill_select(GsState *st, const uint64 *ranks, int nranks,
							uint64 *out_keys, int *passes);

/* gpuselect_status(): states spilled in this backend */
extern int64 gs_states_spilled;

#endif							/* GS_SPILL_H */
