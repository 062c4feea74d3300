/*
 * datum_spill.h — the value spill's parts that datum_spill.c (a spilled
 * store: its file, its sample, writing) and datum_spill_select.c (selection
 * in passes over the file) share.  Private to those two files; what
 * datum_state.c calls is declared in datum_state.h.
 *
 * A file is a sequence of records: a GsDRecord header, then `used` bytes of
 * values packed as a GsDatumStore packs them (each at its type's alignment
 * from the record's start), so a record read back into a MAXALIGNed buffer
 * is a chunk gs_datum_chunk_values reads.
 */
#ifndef GS_DATUM_SPILL_H
#define GS_DATUM_SPILL_H

#include "postgres.h"

#include "common/pg_prng.h"

#include "state/datum_state.h"
#include "state/shared_fileset.h"
#include "state/spill.h"

/* a reservoir sample of the values written to a file */
typedef struct GsDSample
{
	MemoryContext cxt;			/* the copies of by-reference values */
	pg_prng_state rng;
	int			cap;			/* values kept at most (halved when over maxbytes) */
	int			n;
	int64		seen;
	Datum	   *vals;
	Size	   *sizes;
	Size		bytes;			/* the copies' memory */
	Size		maxbytes;
} GsDSample;

/* a temporary file of records (GsDRecord and the packed values) */
typedef struct GsDFile
{
	GsTempFile	tf;
	int64		nrecords;
	int64		nvals;
	int			end_fileno;		/* where the next record goes */
	off_t		end_off;
} GsDFile;

typedef struct GsDRecord
{
	uint64		used;			/* bytes of packed values that follow */
	uint64		nvals;
} GsDRecord;

/*
 * a spilled store's file and sample (GsDatumStore.spill).  A partial state's
 * file is in its leader's file set (shared_fileset.c): written by the state
 * that spilled until it is serialized (exported: read-only, closed), read by
 * the state deserialized from it.
 */
typedef struct GsDatumSpill
{
	GsDFile		file;
	GsDSample	sample;
	bool		shared;			/* in the leader's file set (ref), not a private file */
	GsFileSetRef ref;
	bool		exported;		/* serialized: the file is complete and closed */
} GsDatumSpill;

/* the limit's shares: a write buffer (a quarter of it, 8 kB to 1 MB) */
extern Size gs_dspill_buffer_bytes(void);

/* a reservoir sample (fixed seed) in a memory context of its own under parent */
extern void gs_dsample_init(GsDSample *sm, MemoryContext parent);
extern void gs_dsample_add(GsDSample *sm, const GsDatumStore *s, Datum val, Size size);

/* a new file (GsTempFile: lives as long as mcxt), a record appended to it */
extern void gs_dfile_open(GsDFile *f, MemoryContext mcxt);
/* the same, but a new file of the leader's file set (a partial state's), named in *ref */
extern void gs_dfile_open_shared(GsDFile *f, MemoryContext mcxt, GsFileSetRef *ref);
extern void gs_dfile_write(GsDFile *f, const char *data, Size used, int64 nvals);

/*
 * Read the file's records in order: gs_dfile_rewind, then nrecords calls of
 * gs_dfile_read, each of which reads one into *buf (grown in mcxt as
 * needed, MAXALIGNed) and returns its header.
 */
extern void gs_dfile_rewind(GsDFile *f);
extern GsDRecord gs_dfile_read(GsDFile *f, char **buf, Size *cap, MemoryContext mcxt);

#endif							/* GS_DATUM_SPILL_H */
