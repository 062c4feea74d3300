/*
 * datum_state.h — the value store of the types without an order-preserving
 * integer key (numeric, text, interval, uuid, bytea, ...: every type with a
 * btree ordering other than the eight of types.c's key path).
 *
 * Such a state is a GsState of kind GS_T_DATUM whose `datums` points to a
 * GsDatumStore: copies of the group's non-NULL values packed one after the
 * other (each at its type's alignment) in chunks that grow geometrically to
 * GS_DATUM_CHUNK_MAX, all in the aggregate's memory context -- no palloc per
 * row.  Varlena values are stored detoasted with a 4-byte header, the form
 * every comparator reads without a copy.  Selection (datum_select.c) runs on
 * an array of (abbreviated key, pointer) items built from the store.
 */
#ifndef GS_DATUM_STATE_H
#define GS_DATUM_STATE_H

#include "postgres.h"
#include "access/tupmacs.h"
#include "fmgr.h"
#include "storage/dsm.h"
#include "utils/sortsupport.h"

#include "state/shared_fileset.h"
#include "state/state.h"

#define GS_DATUM_CHUNK_MIN	((Size) 1024)
#define GS_DATUM_CHUNK_MAX	((Size) 8 * 1024 * 1024)

typedef struct GsDatumChunk
{
	char	   *data;			/* MAXALIGNed: offsets inside keep the type's alignment */
	Size		used;
	Size		cap;
} GsDatumChunk;

/* what a store's chunks hold */
#define GS_DK_VALUES	0		/* the values themselves */
#define GS_DK_NUMERIC	1		/* numeric values as int64 keys of one dscale (datum_numkey.c) */

typedef struct GsDatumStore
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Oid			sortop;			/* the ordering operator: ORDER BY's (DESC, USING) or the type's < */
	Oid			collation;		/* the sort collation (InvalidOid for non-collatable types) */
	int			nchunks;
	int			maxchunks;
	GsDatumChunk *chunks;
	Size		grow;			/* size of the last chunk grown */

	/*
	 * GS_DK_NUMERIC: the chunks hold uint64 keys (gs_key_from_int64 of
	 * value * 10^dscale), every value of the group so far of this one
	 * dscale; the first value that is not (another dscale, NaN, Infinity,
	 * out of range) turns the store back into values (GS_DK_VALUES).
	 */
	uint8		keymode;
	bool		keydesc;		/* sortop is numeric's ">" (ORDER BY x DESC) */
	bool		keyshort;		/* every value came with a 1-byte varlena header */
	int16		dscale;			/* -1 while the store is empty */

	/*
	 * Non-NULL: the store outgrew gpuselect.work_mem and its values went to
	 * a temporary file (datum_spill.c); the chunks are then its write buffer
	 * (chunks[0]) and at most one value too large for it, keymode is
	 * GS_DK_VALUES for good.
	 */
	struct GsDatumSpill *spill;
	/* never spills: a moving window aggregate's frame (aggs/moving_aggs.c),
	 * which takes its tree before the store passes gpuselect.work_mem */
	bool		in_memory;
} GsDatumStore;

/* where a value goes at offset off of a chunk: its type's alignment */
static inline Size
gs_datum_align(const GsDatumStore *s, Size off)
{
	if (s->typbyval)
		return MAXALIGN(off);
	if (s->typlen == -2)
		return off;
	return att_align_nominal(off, s->typalign);
}

/* the bytes a stored value takes in a chunk (val: as gs_datum_chunk_values gives it) */
static inline Size
gs_datum_stored_size(const GsDatumStore *s, Datum val)
{
	if (s->typbyval)
		return sizeof(Datum);
	if (s->typlen > 0)
		return s->typlen;
	if (s->typlen == -1)
		return VARSIZE(DatumGetPointer(val));
	return strlen(DatumGetPointer(val)) + 1;
}

/* attach an empty store to a new GS_T_DATUM state (gs_state_create) */
extern void gs_datum_store_init(GsState *st);
/* the ordering the state's values are selected in */
extern void gs_datum_set_order(GsState *st, Oid sortop, Oid collation);
/* append one non-NULL value */
extern void gs_datum_append(GsState *st, Datum d);
/* add from's values to into (into's ordering is taken from from if unset) */
extern void gs_datum_combine(GsState *into, const GsState *from);

/*
 * The value spill (datum_spill.c).  datum_state.c asks gs_datum_spill_wanted
 * before it adds a chunk (or copies one in), gs_datum_spill_start writes
 * every value held to a new temporary file, and a spilled store's appends
 * go through gs_datum_spill_reserve (its write buffer, flushed to the file
 * when full).  Partial states spill only in plain aggregates (no GROUP BY),
 * into a file the leader opens (shared_fileset.c), since only there does
 * the leader read every partial state.
 */
extern bool gs_datum_spill_wanted(const GsState *st, Size more_bytes);
extern void gs_datum_spill_start(GsState *st);
extern char *gs_datum_spill_reserve(GsState *st, Size size);
/* a chunk of packed values into a store of values: copied, or to its file (combine) */
extern void gs_datum_add_values_chunk(GsState *into, const char *data, Size used);
/* append a chunk of values (used bytes, packed as a store packs them) to a spilled store */
extern void gs_datum_spill_add_chunk(GsState *st, const char *data, Size used);
/* into += from, where from is spilled: its file and buffer, read in passes */
extern void gs_datum_spill_combine_from(GsState *into, const GsState *from);
/* the store's helpers datum_spill.c shares */
extern void gs_datum_append_keys_as_values(GsState *st, const GsDatumChunk *chunks, int nchunks,
										   int dscale, bool short_hdr);
extern GsDatumChunk *gs_datum_new_chunk(GsState *st, Size cap);

/*
 * A spilled partial state serialized (datum_state.c): its buffer flushed,
 * its file completed and closed; *ref names the file in its leader's set
 * (shared_fileset.c), *nrecords its records.  And the leader's side: a
 * state deserialized from such a reference reads that file (as a spilled
 * store whose file is the worker's; combine copies it in passes).
 */
extern void gs_datum_spill_export(GsState *st, GsFileSetRef *ref, int64 *nrecords);
extern void gs_datum_spill_open_shared(GsState *st, const GsFileSetRef *ref, int64 nrecords, int64 nvals);

/* serialized form of a GS_T_DATUM state (magic "GSD2"); see datum_state.c */
extern bool gs_datum_is_serialized(bytea *b);
extern bytea *gs_datum_serialize(const GsState *st);
extern GsState *gs_datum_deserialize(MemoryContext mcxt, bytea *b);

/*
 * The values at the given 0-based ranks of the state's ordering (any order,
 * repeats allowed): out[i] points into the store (valid while the state is).
 */
extern void gs_datum_select(GsState *st, const int64 *ranks, int nranks, Datum *out);

/* numeric keys (datum_numkey.c) */
extern bool gs_numkey_eligible(Oid typid, Oid sortop, bool *descending);
extern bool gs_numkey_from_datum(Datum d, int64 *key, int *dscale, bool *short_hdr);
extern Datum gs_numkey_to_datum(int64 key, int dscale, bool short_hdr);

/* text / varchar under "C": prefix keys (datum_textkey.c) */
extern bool gs_textkey_eligible(const GsState *st, bool *descending);
extern void gs_textkey_select(GsState *st, bool descending, const int64 *ranks, int nranks,
							  Datum *out);

/* final-function bodies (datum_final.c), as ranks.h's for the key path */
extern Datum gs_datum_final_disc(GsState *st, float8 p);
extern ArrayType *gs_datum_final_disc_multi(GsState *st, ArrayType *param, Oid elemtypid);
extern Datum gs_datum_final_cont_interval(GsState *st, float8 p);
extern ArrayType *gs_datum_final_cont_interval_multi(GsState *st, ArrayType *param);

/* one value to select among (select/datum_select.h): its abbreviated key */
typedef struct GsDatumItem
{
	Datum		key;			/* abbreviated key, or the value itself */
	Datum		val;			/* the value (a pointer into the store unless by value) */
} GsDatumItem;

/*
 * The values of one chunk (datum_state.c) into out[].val, at most room of
 * them (more: ERROR, a corrupt store); out NULL: count only.
 */
extern int64 gs_datum_chunk_values(const GsDatumStore *s, const GsDatumChunk *c,
								   GsDatumItem *out, int64 room);

#endif							/* GS_DATUM_STATE_H */
