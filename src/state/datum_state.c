/*
 * datum_state.c — the value store of GS_T_DATUM states (see datum_state.h):
 * append, combine, and the serialized form partial states travel in.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/tupmacs.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "state/datum_state.h"
#include "base/types.h"

void
gs_datum_store_init(GsState *st)
{
	GsDatumStore *s = (GsDatumStore *) MemoryContextAllocZero(st->mcxt, sizeof(GsDatumStore));

	get_typlenbyvalalign(st->typid, &s->typlen, &s->typbyval, &s->typalign);
	s->keymode = GS_DK_VALUES;
	s->dscale = -1;
	st->datums = s;
}

/*
 * Also decides, for a store still empty, whether it starts as numeric keys:
 * numeric in its default btree order, ASC or DESC (USING another operator
 * compares values).
 */
void
gs_datum_set_order(GsState *st, Oid sortop, Oid collation)
{
	GsDatumStore *s = st->datums;
	bool		desc;

	s->sortop = sortop;
	s->collation = collation;
	if (s->nchunks == 0 && gs_numkey_eligible(st->typid, sortop, &desc))
	{
		s->keymode = GS_DK_NUMERIC;
		s->keydesc = desc;
		s->keyshort = true;
		s->dscale = -1;
	}
}

/* a new last chunk of cap bytes, empty */
GsDatumChunk *
gs_datum_new_chunk(GsState *st, Size cap)
{
	GsDatumStore *s = st->datums;
	GsDatumChunk *c;

	if (s->nchunks == s->maxchunks)
	{
		int			newmax = s->maxchunks > 0 ? s->maxchunks * 2 : 8;

		s->chunks = s->chunks == NULL ?
			(GsDatumChunk *) MemoryContextAlloc(st->mcxt, newmax * sizeof(GsDatumChunk)) :
			(GsDatumChunk *) repalloc(s->chunks, newmax * sizeof(GsDatumChunk));
		s->maxchunks = newmax;
	}
	c = &s->chunks[s->nchunks++];
	c->data = (char *) MemoryContextAllocHuge(st->mcxt, cap);
	gs_chunk_advise_huge(c->data, cap);
	c->cap = cap;
	c->used = 0;
	return c;
}

/*
 * A new last chunk with room for `size` bytes (out of line: once per chunk).
 * Beyond gpuselect.work_mem the values go to a temporary file instead
 * (datum_spill.c), and a spilled store's write buffer is flushed there.
 * A store of numeric keys spills in gs_datum_append, never here: the
 * caller writes a key at the address returned.
 */
static pg_noinline char *
gs_datum_reserve_new(GsState *st, Size size)
{
	GsDatumStore *s = st->datums;
	GsDatumChunk *c;
	Size		grow = s->grow > 0 ? Min(s->grow * 2, GS_DATUM_CHUNK_MAX) : GS_DATUM_CHUNK_MIN;
	Size		cap = Max(grow, MAXALIGN(size));	/* a value larger than a chunk gets its own */

	if (s->spill == NULL && s->keymode == GS_DK_VALUES && gs_datum_spill_wanted(st, cap))
		gs_datum_spill_start(st);
	if (s->spill != NULL)
		return gs_datum_spill_reserve(st, size);
	s->grow = grow;
	c = gs_datum_new_chunk(st, cap);
	c->used = size;
	return c->data;
}

/* room for `size` bytes (plus alignment) at the end of the last chunk: the per-row path */
static inline char *
gs_datum_reserve(GsState *st, Size size)
{
	GsDatumStore *s = st->datums;
	GsDatumChunk *c;
	Size		off;

	if (unlikely(s->nchunks == 0))
		return gs_datum_reserve_new(st, size);
	c = &s->chunks[s->nchunks - 1];
	off = gs_datum_align(s, c->used);
	if (unlikely(off + size > c->cap))
		return gs_datum_reserve_new(st, size);
	c->used = off + size;
	return c->data + off;
}

/*
 * Copy the bytes of a short varlena (at most 126).  A memcpy whose length
 * the compiler knows to be small is expanded in place, by gcc as
 * "rep movsq", which takes tens of cycles to start on many Intel cores: it
 * was 28% of a 10M-row text aggregate's time on the H200 host
 * (test/bench/results/types-2026-11-25-h200-host-copy.md).  Fixed-size 8-byte
 * moves, the last one overlapping, need none of that.
 */
static inline void
gs_copy_short(char *dst, const char *src, Size len)
{
	if (len >= 8)
	{
		for (Size i = 0; i + 8 < len; i += 8)
			memcpy(dst + i, src + i, 8);
		memcpy(dst + len - 8, src + len - 8, 8);
	}
	else if (len >= 4)
	{
		memcpy(dst, src, 4);
		memcpy(dst + len - 4, src + len - 4, 4);
	}
	else
	{
		for (Size i = 0; i < len; i++)
			dst[i] = src[i];
	}
}

/* the value path's append (the store holds values) */
static void
gs_datum_append_value(GsState *st, Datum d)
{
	GsDatumStore *s = st->datums;

	if (s->typbyval)
		*(Datum *) gs_datum_reserve(st, sizeof(Datum)) = d;
	else if (s->typlen > 0)
		memcpy(gs_datum_reserve(st, s->typlen), DatumGetPointer(d), s->typlen);
	else if (s->typlen == -1)
	{
		struct varlena *v = (struct varlena *) DatumGetPointer(d);

		if (VARATT_IS_SHORT(v))
		{
			/* the common case of a value read from a tuple: widen the header, no detoast copy */
			Size		datalen = VARSIZE_SHORT(v) - VARHDRSZ_SHORT;
			char	   *dst = gs_datum_reserve(st, datalen + VARHDRSZ);

			SET_VARSIZE(dst, datalen + VARHDRSZ);
			gs_copy_short(VARDATA(dst), VARDATA_SHORT(v), datalen);
		}
		else if (VARATT_IS_EXTENDED(v))
		{
			struct varlena *flat = detoast_attr(v);

			memcpy(gs_datum_reserve(st, VARSIZE(flat)), flat, VARSIZE(flat));
			pfree(flat);
		}
		else
			memcpy(gs_datum_reserve(st, VARSIZE(v)), v, VARSIZE(v));
	}
	else
	{
		Size		len = strlen(DatumGetCString(d)) + 1;

		memcpy(gs_datum_reserve(st, len), DatumGetCString(d), len);
	}
	st->nrows++;
}

/*
 * Append the numeric values of n keys (of dscale) as values: a store leaving
 * the key path, or keys combined into a store of values.  The rebuilt
 * numerics are made in a scratch context reset as it goes.
 */
void
gs_datum_append_keys_as_values(GsState *st, const GsDatumChunk *chunks, int nchunks,
							   int dscale, bool short_hdr)
{
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "gpuselect numeric keys",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);

	for (int i = 0; i < nchunks; i++)
	{
		const uint64 *keys = (const uint64 *) chunks[i].data;
		Size		n = chunks[i].used / sizeof(uint64);

		for (Size j = 0; j < n; j++)
		{
			gs_datum_append_value(st, gs_numkey_to_datum(gs_int64_from_key(keys[j]), dscale, short_hdr));
			if ((j & 1023) == 1023)
			{
				MemoryContextReset(tmp);
				CHECK_FOR_INTERRUPTS();
			}
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
}

/* a store of numeric keys becomes a store of the values (the first value that breaks the rule) */
static void
gs_datum_keys_to_values(GsState *st)
{
	GsDatumStore *s = st->datums;
	GsDatumChunk *old = s->chunks;
	int			nold = s->nchunks;

	Assert(s->keymode == GS_DK_NUMERIC);
	s->keymode = GS_DK_VALUES;
	s->chunks = NULL;
	s->nchunks = s->maxchunks = 0;
	s->grow = 0;
	st->nrows = 0;
	gs_datum_append_keys_as_values(st, old, nold, s->dscale, s->keyshort);
	for (int i = 0; i < nold; i++)
		pfree(old[i].data);
	if (old)
		pfree(old);
}

void
gs_datum_append(GsState *st, Datum d)
{
	GsDatumStore *s = st->datums;

	if (s->keymode == GS_DK_NUMERIC)
	{
		int64		v;
		int			dscale;
		bool		short_hdr;

		if (gs_numkey_from_datum(d, &v, &dscale, &short_hdr) &&
			(dscale == s->dscale || s->dscale < 0))
		{
			GsDatumChunk *c = s->nchunks > 0 ? &s->chunks[s->nchunks - 1] : NULL;

			s->dscale = (int16) dscale;
			s->keyshort &= short_hdr;
			if (likely(c != NULL && c->used + sizeof(uint64) <= c->cap))
			{
				*(uint64 *) (c->data + c->used) = gs_key_from_int64(v);
				c->used += sizeof(uint64);
				st->nrows++;
				return;
			}
			/* a new chunk of keys, unless that passes gpuselect.work_mem */
			if (!gs_datum_spill_wanted(st, s->grow > 0 ? Min(s->grow * 2, GS_DATUM_CHUNK_MAX) :
									   GS_DATUM_CHUNK_MIN))
			{
				*(uint64 *) gs_datum_reserve(st, sizeof(uint64)) = gs_key_from_int64(v);
				st->nrows++;
				return;
			}
			gs_datum_spill_start(st);	/* the keys go to the file as values */
		}
		else
			gs_datum_keys_to_values(st);
	}
	gs_datum_append_value(st, d);
}

/*
 * The values of one chunk as Datums (out may be NULL: count only).  Every
 * length is checked against the chunk, so a corrupt serialized state is an
 * ERROR, not a wild read.  Returns the number of values.
 */
int64
gs_datum_chunk_values(const GsDatumStore *s, const GsDatumChunk *c, GsDatumItem *out, int64 room)
{
	Size		off = 0;
	int64		n = 0;

	for (;;)
	{
		Size		size;
		const char *p;

		if (off >= c->used)
			break;
		off = gs_datum_align(s, off);
		if (off >= c->used)
			elog(ERROR, "gpuselect: corrupt value store");
		p = c->data + off;
		if (s->typbyval)
			size = sizeof(Datum);
		else if (s->typlen > 0)
			size = s->typlen;
		else if (s->typlen == -1)
		{
			if (off + VARHDRSZ > c->used || VARATT_IS_EXTENDED(p))
				elog(ERROR, "gpuselect: corrupt value store");
			size = VARSIZE(p);
		}
		else
			size = strnlen(p, c->used - off) + 1;
		if (size > c->used - off || n >= room)
			elog(ERROR, "gpuselect: corrupt value store");
		if (out)
			out[n].val = s->typbyval ? *(const Datum *) p : PointerGetDatum(p);
		n++;
		off += size;
		if ((n & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return n;
}

/* a chunk holding exactly `bytes` copied from data */
static void
gs_datum_add_chunk_copy(GsState *st, const char *data, Size bytes)
{
	GsDatumChunk *c;

	if (bytes == 0)
		return;
	c = gs_datum_new_chunk(st, bytes);
	memcpy(c->data, data, bytes);
	c->used = bytes;			/* full: appends go to a new chunk */
}

/*
 * A chunk of packed values added to a store of values (combine): copied,
 * or written to the temporary file when the store has spilled or the copy
 * would take it past gpuselect.work_mem.  The caller counts the rows.
 */
void
gs_datum_add_values_chunk(GsState *into, const char *data, Size used)
{
	Assert(into->datums->keymode == GS_DK_VALUES);
	if (into->datums->spill == NULL && gs_datum_spill_wanted(into, used))
		gs_datum_spill_start(into);
	if (into->datums->spill != NULL)
		gs_datum_spill_add_chunk(into, data, used);
	else
		gs_datum_add_chunk_copy(into, data, used);
}

void
gs_datum_combine(GsState *into, const GsState *from)
{
	GsDatumStore *fs = from->datums;

	if (into->typid != from->typid)
		elog(ERROR, "gpuselect: cannot combine states of different types");
	if (!OidIsValid(into->datums->sortop))
		gs_datum_set_order(into, fs->sortop, fs->collation);
	else if (OidIsValid(fs->sortop) &&
			 (into->datums->sortop != fs->sortop || into->datums->collation != fs->collation))
		elog(ERROR, "gpuselect: cannot combine states of different orderings");
	if (from->nrows == 0)
		return;
	if (fs->spill != NULL)
	{
		if (into->datums->keymode == GS_DK_NUMERIC)
			gs_datum_keys_to_values(into);
		gs_datum_spill_combine_from(into, from);	/* read back from its file */
		return;
	}
	if (into->datums->keymode == GS_DK_NUMERIC && fs->keymode == GS_DK_NUMERIC &&
		(into->datums->dscale == fs->dscale || into->nrows == 0))
	{
		Size		bytes = 0;

		for (int i = 0; i < fs->nchunks; i++)
			bytes += fs->chunks[i].used;
		if (!gs_datum_spill_wanted(into, bytes))
		{
			/* keys of one dscale on both sides: the key chunks as they are */
			into->datums->dscale = fs->dscale;
			into->datums->keyshort &= fs->keyshort;
			for (int i = 0; i < fs->nchunks; i++)
				gs_datum_add_chunk_copy(into, fs->chunks[i].data, fs->chunks[i].used);
			into->nrows += from->nrows;
			return;
		}
		gs_datum_spill_start(into); /* beyond gpuselect.work_mem: values in a file */
	}
	if (into->datums->keymode == GS_DK_NUMERIC)
		gs_datum_keys_to_values(into);
	if (fs->keymode == GS_DK_NUMERIC)
	{
		gs_datum_append_keys_as_values(into, fs->chunks, fs->nchunks, fs->dscale, fs->keyshort);
		return;					/* appending counted the rows (and spilled if need be) */
	}
	/* a worker's values may take into past gpuselect.work_mem: spilled before copying */
	for (int i = 0; i < fs->nchunks; i++)
		gs_datum_add_values_chunk(into, fs->chunks[i].data, fs->chunks[i].used);
	into->nrows += from->nrows;
}

/* ---------------- serialized form ----------------
 *
 *   GsDatumSerialHeader  magic "GSD2", type, ordering, the fraction argument
 *                        (as state_serial.c's header), nrows, nchunks, and
 *                        what the chunks hold (keymode: values, or numeric
 *                        keys with their dscale and header form)
 *   fraction array       array_bytes, zero-padded to MAXALIGN
 *   nchunks times        uint64 used, then `used` bytes of a chunk, padded to
 *                        MAXALIGN (offsets in a chunk keep their alignment)
 *   or, for a spilled partial state (GS_DSF_SHARED_FILE, nchunks 0):
 *   GsDatumSerialFile    the file holding its values (the leader's file
 *                        set's handle, the writer's pid and file number:
 *                        shared_fileset.c) and its records; the leader
 *                        reads them from there (datum_spill.c)
 *
 * Host-endian and unversioned like the key states: both ends are one build.
 */
#define GS_DATUM_SERIAL_MAGIC	0x32445347	/* "GSD2" */
#define GS_DSF_HAVE_FRACTION	0x01
#define GS_DSF_FRACTION_NULL	0x02
#define GS_DSF_HAVE_ARRAY		0x04
#define GS_DSF_SHARED_FILE		0x08

typedef struct GsDatumSerialFile
{
	GsFileSetRef ref;
	int64		nrecords;
} GsDatumSerialFile;

typedef struct GsDatumSerialHeader
{
	uint32		magic;
	Oid			typid;
	Oid			sortop;
	Oid			collation;
	uint32		flags;
	uint32		array_bytes;
	float8		fraction;
	int64		nrows;
	int64		nchunks;
	uint8		keymode;		/* GS_DK_VALUES or GS_DK_NUMERIC */
	bool		keyshort;
	int16		dscale;
} GsDatumSerialHeader;

bool
gs_datum_is_serialized(bytea *b)
{
	uint32		magic;

	if (VARSIZE(b) - VARHDRSZ < sizeof(GsDatumSerialHeader))
		return false;
	memcpy(&magic, VARDATA(b), sizeof(magic));
	return magic == GS_DATUM_SERIAL_MAGIC;
}

bytea *
gs_datum_serialize(const GsState *st)
{
	const GsDatumStore *s = st->datums;
	GsDatumSerialHeader hdr;
	uint32		array_bytes = st->fractions ? VARSIZE(st->fractions) : 0;
	uint64		total = VARHDRSZ + sizeof(hdr) + MAXALIGN(array_bytes);
	bytea	   *b;
	char	   *p;

	GsDatumSerialFile ref;

	/* a partial state that spilled: its file completed, only its name travels */
	if (s->spill != NULL)
	{
		gs_datum_spill_export((GsState *) st, &ref.ref, &ref.nrecords);
		total += MAXALIGN(sizeof(ref));
	}
	else
		for (int i = 0; i < s->nchunks; i++)
			total += sizeof(uint64) + MAXALIGN(s->chunks[i].used);
	if (total > gs_serial_limit())
		gs_serial_too_large(st->nrows, total, gs_serial_limit());

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = GS_DATUM_SERIAL_MAGIC;
	hdr.typid = st->typid;
	hdr.sortop = s->sortop;
	hdr.collation = s->collation;
	hdr.flags = (st->have_fraction ? GS_DSF_HAVE_FRACTION : 0) |
		(st->fraction_null ? GS_DSF_FRACTION_NULL : 0) |
		(st->fractions ? GS_DSF_HAVE_ARRAY : 0) |
		(s->spill != NULL ? GS_DSF_SHARED_FILE : 0);
	hdr.array_bytes = array_bytes;
	hdr.fraction = st->fraction;
	hdr.nrows = st->nrows;
	hdr.nchunks = s->spill != NULL ? 0 : s->nchunks;
	hdr.keymode = s->keymode;
	hdr.keyshort = s->keyshort;
	hdr.dscale = s->dscale;

	b = (bytea *) palloc0((Size) total);
	SET_VARSIZE(b, (Size) total);
	p = VARDATA(b);
	memcpy(p, &hdr, sizeof(hdr));
	p += sizeof(hdr);
	if (array_bytes)
		memcpy(p, st->fractions, array_bytes);
	p += MAXALIGN(array_bytes);
	if (s->spill != NULL)
	{
		memcpy(p, &ref, sizeof(ref));
		return b;
	}
	for (int i = 0; i < s->nchunks; i++)
	{
		uint64		used = s->chunks[i].used;

		memcpy(p, &used, sizeof(used));
		p += sizeof(used);
		memcpy(p, s->chunks[i].data, used);
		p += MAXALIGN(used);
	}
	return b;
}

GsState *
gs_datum_deserialize(MemoryContext mcxt, bytea *b)
{
	GsDatumSerialHeader hdr;
	const char *p = VARDATA(b);
	const char *end = p + (VARSIZE(b) - VARHDRSZ);
	GsState    *st;
	int64		counted = 0;

	memcpy(&hdr, p, sizeof(hdr));
	p += sizeof(hdr);
	if (hdr.nrows < 0 || hdr.nchunks < 0 || hdr.array_bytes > (Size) (end - p) ||
		MAXALIGN(hdr.array_bytes) > (Size) (end - p))
		elog(ERROR, "gpuselect: serialized state has a bad length");

	st = gs_state_create(mcxt, hdr.typid);
	if (st->datums == NULL)
		elog(ERROR, "gpuselect: serialized state has a bad header");
	gs_datum_set_order(st, hdr.sortop, hdr.collation);
	if (hdr.keymode != st->datums->keymode && hdr.keymode != GS_DK_VALUES)
		elog(ERROR, "gpuselect: serialized state has a bad header");
	if (hdr.keymode == GS_DK_NUMERIC &&
		(hdr.nrows > 0 ? hdr.dscale < 0 || hdr.dscale > NUMERIC_MAX_DISPLAY_SCALE : hdr.dscale != -1))
		elog(ERROR, "gpuselect: serialized state has a bad header");
	st->datums->keymode = hdr.keymode;
	st->datums->keyshort = hdr.keyshort;
	st->datums->dscale = hdr.dscale;
	st->have_fraction = (hdr.flags & GS_DSF_HAVE_FRACTION) != 0;
	st->fraction_null = (hdr.flags & GS_DSF_FRACTION_NULL) != 0;
	st->fraction = hdr.fraction;
	if (hdr.flags & GS_DSF_HAVE_ARRAY)
	{
		st->fractions = (ArrayType *) MemoryContextAlloc(mcxt, hdr.array_bytes);
		memcpy(st->fractions, p, hdr.array_bytes);
	}
	p += MAXALIGN(hdr.array_bytes);

	if (hdr.flags & GS_DSF_SHARED_FILE)
	{
		GsDatumSerialFile ref;

		if (hdr.nchunks != 0 || hdr.keymode != GS_DK_VALUES ||
			(Size) (end - p) != MAXALIGN(sizeof(ref)))
			elog(ERROR, "gpuselect: serialized state has a bad length");
		memcpy(&ref, p, sizeof(ref));
		/* the values stay in the worker's file until combine copies them */
		gs_datum_spill_open_shared(st, &ref.ref, ref.nrecords, hdr.nrows);
		return st;
	}
	for (int64 i = 0; i < hdr.nchunks; i++)
	{
		uint64		used;
		GsDatumChunk *c;

		if ((Size) (end - p) < sizeof(used))
			elog(ERROR, "gpuselect: serialized state is truncated");
		memcpy(&used, p, sizeof(used));
		p += sizeof(used);
		if (used == 0 || used > (uint64) (end - p) || MAXALIGN(used) > (uint64) (end - p))
			elog(ERROR, "gpuselect: serialized state is truncated");
		gs_datum_add_chunk_copy(st, p, (Size) used);
		c = &st->datums->chunks[st->datums->nchunks - 1];
		if (hdr.keymode == GS_DK_NUMERIC)
		{
			if (used % sizeof(uint64) != 0 || used / sizeof(uint64) > (uint64) (hdr.nrows - counted))
				elog(ERROR, "gpuselect: serialized state has a bad length");
			counted += used / sizeof(uint64);
		}
		else
			counted += gs_datum_chunk_values(st->datums, c, NULL, hdr.nrows - counted);
		p += MAXALIGN(used);
	}
	if (p != end || counted != hdr.nrows)
		elog(ERROR, "gpuselect: serialized state has a bad length");
	st->nrows = counted;
	return st;
}
