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

#include "state/state.h"

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
