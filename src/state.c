/*
 * state.c — the transition state: chunked key buffers, growth, combine,
 * (de)serialization.  See state.h.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "arena.h"
#include "gpu_path.h"
#include "guc.h"
#include "shared_state.h"
#include "state.h"
#include "types.h"

#define GS_SERIAL_MAGIC		0x31535347	/* "GSS1" */
#define GS_SF_HAVE_FRACTION	0x01
#define GS_SF_FRACTION_NULL	0x02
#define GS_SF_HAVE_ARRAY	0x04
#define GS_SF_SHARED		0x08	/* keys in a shared memory segment (shared_state.c) */
#define GS_SF_ARENA			0x10	/* some keys in the leader's arena (arena.c) */

typedef struct GsSerialHeader
{
	uint32		magic;
	Oid			typid;
	uint8		kind;
	uint8		key_bytes;
	uint8		flags;
	uint8		descending;
	uint32		array_bytes;	/* size of the fraction array (varlena), 0 if none */
	float8		fraction;
	int64		nrows;
} GsSerialHeader;

/*
 * With GS_SF_ARENA the fraction array is followed by this and nrefs
 * GsSerialArenaChunk entries; the keys not in the arena follow them.
 */
typedef struct GsSerialArenaHead
{
	uint32		nrefs;
	uint32		pad;
} GsSerialArenaHead;

typedef struct GsSerialArenaChunk
{
	GsArenaRef	ref;
	uint64		n;				/* keys in the chunk */
} GsSerialArenaChunk;

/* follows the fraction array (and arena references) instead of the keys when GS_SF_SHARED is set */
typedef struct GsSerialSharedRef
{
	dsm_handle	handle;
	uint32		pad;
	uint64		key_bytes;
} GsSerialSharedRef;

int64		gs_states_created = 0;
int64		gs_states_taken_over = 0;

GsState *
gs_state_create(MemoryContext mcxt, Oid typid)
{
	GsState    *st;
	GsTypeKind	kind;
	uint8		key_bytes;

	if (!gs_type_kind_from_oid(typid, &kind, &key_bytes, NULL))
		elog(ERROR, "gpuselect: unsupported type %u in transition state", typid);

	st = (GsState *) MemoryContextAllocZero(mcxt, sizeof(GsState));
	st->mcxt = mcxt;
	st->typid = typid;
	st->kind = (uint8) kind;
	st->key_bytes = key_bytes;
	gs_states_created++;
	return st;
}

/*
 * Make room for one more chunk descriptor.  The last chunk, if full, is
 * complete from now on: the GPU path may start copying it to the device.
 */
static void
gs_state_reserve_chunk(GsState *st)
{
	if (st->nchunks > 0)
	{
		GsChunk    *last = &st->chunks[st->nchunks - 1];

		if (last->n == last->cap)
			gpu_path_chunk_filled(st, st->nchunks - 1);
	}
	if (st->nchunks == st->maxchunks)
	{
		int			newmax = st->maxchunks > 0 ? st->maxchunks * 2 : 8;

		if (st->chunks == NULL)
			st->chunks = (GsChunk *) MemoryContextAlloc(st->mcxt, newmax * sizeof(GsChunk));
		else
			st->chunks = (GsChunk *) repalloc(st->chunks, newmax * sizeof(GsChunk));
		st->maxchunks = newmax;
	}
}

/*
 * Add a chunk (the last one is full, or there is none) and return it.
 * Capacities double from one grown chunk to the next; chunks taken over by
 * gs_state_combine do not count, so a small append after a large hand-over
 * does not allocate a chunk as large as the hand-over.
 */
GsChunk *
gs_state_grow(GsState *st)
{
	uint64		cap;
	uint64		maxcap = GS_CHUNK_MAX_BYTES / st->key_bytes;
	Size		bytes;
	void	   *mem = NULL;
	bool		pinned = false;
	GsChunk    *c;

	/* a large partial state of a parallel plain aggregate: the arena */
	if (st->arena_ok && (Size) st->grow_cap * st->key_bytes >= GS_ARENA_START_BYTES)
	{
		mem = gs_arena_alloc();
		if (mem != NULL)
		{
			gs_state_reserve_chunk(st);
			c = &st->chunks[st->nchunks++];
			memset(c, 0, sizeof(*c));
			c->data = (char *) mem;
			c->cap = GS_ARENA_CHUNK_BYTES / st->key_bytes;
			c->arena = true;
			return c;
		}
		st->arena_ok = false;	/* none, or full: palloc from now on */
	}

	cap = st->grow_cap > 0 ? st->grow_cap * 2 : GS_CHUNK_MIN_KEYS;
	if (cap > maxcap)
		cap = maxcap;
	bytes = (Size) cap * st->key_bytes;

	gs_state_reserve_chunk(st);

	/* large groups headed for the GPU may get page-locked chunks */
	if (!st->partial && gs_guc_device != GS_DEVICE_CPU &&
		st->nrows >= (int64) gs_guc_gpu_min_rows)
	{
		mem = gpu_path_chunk_alloc(st, bytes);
		pinned = (mem != NULL);
	}
	if (mem == NULL)
		mem = MemoryContextAlloc(st->mcxt, bytes);

	c = &st->chunks[st->nchunks++];
	c->data = (char *) mem;
	c->n = 0;
	c->cap = cap;
	c->pinned = pinned;
	c->arena = false;
	c->handover = NULL;
	st->grow_cap = cap;
	return c;
}

void
gs_state_append_keys(GsState *st, const char *keys, uint64 n)
{
	while (n > 0)
	{
		GsChunk    *c = st->nchunks > 0 ? &st->chunks[st->nchunks - 1] : NULL;
		uint64		room;

		if (c == NULL || c->n == c->cap)
			c = gs_state_grow(st);
		room = Min(c->cap - c->n, n);
		memcpy(c->data + c->n * st->key_bytes, keys, (Size) room * st->key_bytes);
		c->n += room;
		st->nrows += room;
		keys += room * st->key_bytes;
		n -= room;
	}
}

bool
gs_fraction_arrays_equal(ArrayType *a, ArrayType *b)
{
	Datum	   *ad,
			   *bd;
	bool	   *an,
			   *bn;
	int			na,
				nb;

	if (a == b)
		return true;
	if (VARSIZE(a) == VARSIZE(b) && memcmp(a, b, VARSIZE(a)) == 0)
		return true;
	/* same values, maybe a different representation (null bitmap) */
	if (ARR_NDIM(a) != ARR_NDIM(b))
		return false;
	if (memcmp(ARR_DIMS(a), ARR_DIMS(b), ARR_NDIM(a) * sizeof(int)) != 0 ||
		memcmp(ARR_LBOUND(a), ARR_LBOUND(b), ARR_NDIM(a) * sizeof(int)) != 0)
		return false;
	deconstruct_array(a, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &ad, &an, &na);
	deconstruct_array(b, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &bd, &bn, &nb);
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
	{
		if (an[i] != bn[i])
			return false;
		if (!an[i])
		{
			float8		x = DatumGetFloat8(ad[i]);
			float8		y = DatumGetFloat8(bd[i]);

			if (!(x == y || (isnan(x) && isnan(y))))
				return false;
		}
	}
	return true;
}

void
gs_fraction_mismatch_error(bool is_array)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s: the fraction%s must be the same in every row of a group",
					is_array ? "gpu_quantiles" : "gpu_quantile",
					is_array ? " array" : ""),
			 errhint("The first row of a group fixes the fraction.  For a fraction computed per group, "
					 "use gpu_percentile_disc(...) WITHIN GROUP (ORDER BY x).")));
	pg_unreachable();
}

static bool
gs_fraction_same(const GsState *a, const GsState *b)
{
	if (a->fraction_null != b->fraction_null)
		return false;
	if (a->fraction_null)
		return true;
	if ((a->fractions != NULL) != (b->fractions != NULL))
		return false;
	if (a->fractions)
		return gs_fraction_arrays_equal(a->fractions, b->fractions);
	return a->fraction == b->fraction || (isnan(a->fraction) && isnan(b->fraction));
}

/*
 * Take over a deserialized chunk instead of copying its keys: its memory
 * context moves under into's, so the keys live and are freed with into (on
 * success, ERROR and cancel alike).  The chunk is full and never written
 * again: further appends to into go to a new chunk.  from still points at
 * the same, unchanged keys; only its right to hand them over is cleared, so
 * a state combined twice would be copied the second time.
 */
static void
gs_state_adopt_chunk(GsState *into, GsChunk *c)
{
	GsChunk    *dst;

	Assert(!c->pinned && c->n > 0);
	gs_state_reserve_chunk(into);
	MemoryContextSetParent(c->handover, into->mcxt);
	c->handover = NULL;

	dst = &into->chunks[into->nchunks++];
	dst->data = c->data;
	dst->n = c->n;
	dst->cap = c->n;
	dst->pinned = false;
	dst->arena = false;
	dst->handover = NULL;
	into->nrows += (int64) c->n;
	gs_states_taken_over++;
}

/*
 * A chunk in the leader's arena is referred to, not copied: the arena keeps
 * it until the end of the transaction, which every state of it ends before.
 */
static void
gs_state_refer_arena_chunk(GsState *into, const GsChunk *c)
{
	GsChunk    *dst;

	gs_state_reserve_chunk(into);
	dst = &into->chunks[into->nchunks++];
	*dst = *c;
	dst->cap = c->n;			/* full: appends go to a new chunk */
	dst->handover = NULL;
	into->nrows += (int64) c->n;
}

/*
 * Add from's keys to into.  PostgreSQL passes a combine function a freshly
 * deserialized second argument (in per-input-tuple memory) and never reads it
 * again, which is what lets handover chunks be taken over; states that were
 * not deserialized have none and are only read.
 */
void
gs_state_combine(GsState *into, GsState *from)
{
	if (from == NULL)
		return;
	if (into->kind != from->kind || into->key_bytes != from->key_bytes)
		elog(ERROR, "gpuselect: cannot combine states of different types");

	if (from->have_fraction)
	{
		if (!into->have_fraction)
		{
			into->have_fraction = true;
			into->fraction_null = from->fraction_null;
			into->fraction = from->fraction;
			if (from->fractions)
			{
				Size		sz = VARSIZE(from->fractions);

				into->fractions = (ArrayType *) MemoryContextAlloc(into->mcxt, sz);
				memcpy(into->fractions, from->fractions, sz);
			}
		}
		else if (!gs_fraction_same(into, from))
			gs_fraction_mismatch_error(into->fractions != NULL || from->fractions != NULL);
	}

	for (int i = 0; i < from->nchunks; i++)
	{
		GsChunk    *c = &from->chunks[i];

		if (c->arena)
		{
			if (c->n > 0)
				gs_state_refer_arena_chunk(into, c);
		}
		else if (c->handover != NULL)
			gs_state_adopt_chunk(into, c);
		else
			gs_state_append_keys(into, c->data, c->n);
	}
}

static void
gs_state_copy_keys(const GsState *st, char *p)
{
	for (int i = 0; i < st->nchunks; i++)
	{
		Size		sz = (Size) st->chunks[i].n * st->key_bytes;

		if (st->chunks[i].arena)
			continue;			/* travels as a reference */
		memcpy(p, st->chunks[i].data, sz);
		p += sz;
	}
}

/*
 * allow_shared: the caller knows the leader deserializes every partial state
 * (shared_state.c says why that matters); large ones then travel in shared
 * memory and the bytea carries only the segment's handle.
 */
bytea *
gs_state_serialize(const GsState *st, bool allow_shared)
{
	GsSerialHeader hdr;
	uint32		array_bytes = st->fractions ? VARSIZE(st->fractions) : 0;
	Size		array_padded = MAXALIGN(array_bytes);
	uint32		nrefs = 0;
	uint64		arena_keys = 0;
	uint64		keybytes;
	Size		arena_bytes;
	GsSerialSharedRef ref;
	char	   *shared_keys = NULL;
	uint64		total;
	/* gpuselect.test_max_serial_bytes (test hook) lowers the limit */
	uint64		limit = gs_guc_test_max_serial_bytes > 0 ?
		(uint64) gs_guc_test_max_serial_bytes : (uint64) MaxAllocSize;
	bytea	   *b;
	char	   *p;

	for (int i = 0; i < st->nchunks; i++)
		if (st->chunks[i].arena && st->chunks[i].n > 0)
		{
			nrefs++;
			arena_keys += st->chunks[i].n;
		}
	/* the keys that are not in the arena travel as before */
	keybytes = ((uint64) st->nrows - arena_keys) * st->key_bytes;
	arena_bytes = nrefs > 0 ? sizeof(GsSerialArenaHead) + (Size) nrefs * sizeof(GsSerialArenaChunk) : 0;

	memset(&ref, 0, sizeof(ref));
	if (allow_shared && gs_shared_state_wanted((Size) keybytes))
		shared_keys = gs_shared_state_create((Size) keybytes, &ref.handle);
	if (shared_keys != NULL)
	{
		ref.key_bytes = keybytes;
		gs_state_copy_keys(st, shared_keys);
		total = (uint64) VARHDRSZ + sizeof(hdr) + array_padded + arena_bytes + sizeof(ref);
	}
	else
		total = (uint64) VARHDRSZ + sizeof(hdr) + array_padded + arena_bytes + keybytes;

	if (total > limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuselect: a partial aggregate state of " INT64_FORMAT " values (" UINT64_FORMAT " bytes) is too large to pass between parallel workers",
						st->nrows, total),
				 errdetail("Serialized states are limited to " UINT64_FORMAT " bytes.", limit),
				 errhint("Use fewer parallel workers (e.g. SET max_parallel_workers_per_gather = 0), "
						 "or the ordered-set form gpu_percentile_disc(...) WITHIN GROUP (ORDER BY x), which is never split across workers.")));

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = GS_SERIAL_MAGIC;
	hdr.typid = st->typid;
	hdr.kind = st->kind;
	hdr.key_bytes = st->key_bytes;
	hdr.flags = (st->have_fraction ? GS_SF_HAVE_FRACTION : 0) |
		(st->fraction_null ? GS_SF_FRACTION_NULL : 0) |
		(st->fractions ? GS_SF_HAVE_ARRAY : 0) |
		(shared_keys ? GS_SF_SHARED : 0) |
		(nrefs > 0 ? GS_SF_ARENA : 0);
	hdr.descending = st->descending ? 1 : 0;
	hdr.array_bytes = array_bytes;
	hdr.fraction = st->fraction;
	hdr.nrows = st->nrows;

	b = (bytea *) palloc((Size) total);
	SET_VARSIZE(b, (Size) total);
	p = VARDATA(b);
	memcpy(p, &hdr, sizeof(hdr));
	p += sizeof(hdr);
	if (array_bytes)
	{
		memcpy(p, st->fractions, array_bytes);
		memset(p + array_bytes, 0, array_padded - array_bytes);
	}
	p += array_padded;
	if (nrefs > 0)
	{
		GsSerialArenaHead head;

		memset(&head, 0, sizeof(head));
		head.nrefs = nrefs;
		memcpy(p, &head, sizeof(head));
		p += sizeof(head);
		for (int i = 0; i < st->nchunks; i++)
		{
			GsSerialArenaChunk ac;

			if (!st->chunks[i].arena || st->chunks[i].n == 0)
				continue;
			gs_arena_ref(st->chunks[i].data, &ac.ref);
			ac.n = st->chunks[i].n;
			memcpy(p, &ac, sizeof(ac));
			p += sizeof(ac);
		}
	}
	if (shared_keys)
		memcpy(p, &ref, sizeof(ref));
	else
		gs_state_copy_keys(st, p);
	return b;
}

/* one more chunk of a deserialized state: n keys at data, full */
static void
gs_state_add_chunk(GsState *st, char *data, uint64 n, MemoryContext handover, bool arena)
{
	GsChunk    *c;

	if (st->nchunks == st->maxchunks)
	{
		int			newmax = st->maxchunks > 0 ? st->maxchunks * 2 : 1;

		st->chunks = st->chunks
			? (GsChunk *) repalloc(st->chunks, newmax * sizeof(GsChunk))
			: (GsChunk *) MemoryContextAlloc(st->mcxt, newmax * sizeof(GsChunk));
		st->maxchunks = newmax;
	}
	c = &st->chunks[st->nchunks++];
	c->data = data;
	c->n = n;
	c->cap = n;
	c->pinned = false;
	c->arena = arena;
	c->handover = handover;
	st->nrows += (int64) n;
}

/*
 * A deserialized state's keys not in the arena: one exact-size chunk (the state is only read,
 * by the combine function).  Large keys get a memory context of their own, a
 * child of st->mcxt -- the per-input-tuple context PostgreSQL deserializes
 * in -- so that gs_state_combine can take them over rather than copy them a
 * second time.  If nothing takes them over (an ERROR, or a hash aggregate
 * that spills the input tuple instead of combining it), they are freed with
 * that short-lived context, as small states are.
 */
static void
gs_state_copy_in_keys(GsState *st, const char *keys, uint64 n)
{
	Size		bytes = (Size) n * st->key_bytes;
	MemoryContext handover = NULL;
	char	   *data;

	if (bytes >= GS_HANDOVER_MIN_BYTES)
	{
		handover = AllocSetContextCreate(st->mcxt, "gpuselect partial state keys",
										 ALLOCSET_SMALL_SIZES);
		data = MemoryContextAllocHuge(handover, bytes);
	}
	else
		data = MemoryContextAllocHuge(st->mcxt, bytes);
	memcpy(data, keys, bytes);
	gs_state_add_chunk(st, data, n, handover, false);
}

/*
 * A deserialized state whose keys are in a worker's shared memory segment:
 * the mapping belongs to a handover context, so the combine takes it over
 * like copied keys (and it is unmapped with whichever context ends up
 * owning it).
 */
static void
gs_state_map_shared_keys(GsState *st, dsm_handle handle, uint64 n)
{
	MemoryContext handover = AllocSetContextCreate(st->mcxt, "gpuselect shared partial state",
												   ALLOCSET_SMALL_SIZES);

	gs_state_add_chunk(st, gs_shared_state_attach(handle, (Size) n * st->key_bytes, handover),
					   n, handover, false);
}

GsState *
gs_state_deserialize(MemoryContext mcxt, bytea *b)
{
	GsSerialHeader hdr;
	GsSerialArenaHead head;
	const char *p = VARDATA(b);
	Size		len = VARSIZE(b) - VARHDRSZ;
	Size		array_padded;
	Size		fixed;
	uint64		rest;
	GsState    *st;

	if (len < sizeof(hdr))
		elog(ERROR, "gpuselect: serialized state is truncated");
	memcpy(&hdr, p, sizeof(hdr));
	if (hdr.magic != GS_SERIAL_MAGIC)
		elog(ERROR, "gpuselect: serialized state has a bad header");
	array_padded = MAXALIGN(hdr.array_bytes);
	if (hdr.nrows < 0 || hdr.array_bytes > len || sizeof(hdr) + array_padded > len)
		elog(ERROR, "gpuselect: serialized state has a bad length");
	memset(&head, 0, sizeof(head));
	fixed = sizeof(hdr) + array_padded;
	if (hdr.flags & GS_SF_ARENA)
	{
		if (fixed + sizeof(head) > len)
			elog(ERROR, "gpuselect: serialized state has a bad length");
		memcpy(&head, p + fixed, sizeof(head));
		if (head.nrefs == 0 || head.nrefs > (len - fixed - sizeof(head)) / sizeof(GsSerialArenaChunk))
			elog(ERROR, "gpuselect: serialized state has a bad length");
		fixed += sizeof(head) + (Size) head.nrefs * sizeof(GsSerialArenaChunk);
	}
	p += sizeof(hdr);

	st = gs_state_create(mcxt, hdr.typid);
	if (st->key_bytes != hdr.key_bytes || st->kind != hdr.kind)
		elog(ERROR, "gpuselect: serialized state has a bad type");
	st->descending = hdr.descending != 0;
	st->have_fraction = (hdr.flags & GS_SF_HAVE_FRACTION) != 0;
	st->fraction_null = (hdr.flags & GS_SF_FRACTION_NULL) != 0;
	st->fraction = hdr.fraction;
	if (hdr.flags & GS_SF_HAVE_ARRAY)
	{
		st->fractions = (ArrayType *) MemoryContextAlloc(mcxt, hdr.array_bytes);
		memcpy(st->fractions, p, hdr.array_bytes);
	}
	p += array_padded;

	/* keys in the leader's arena: referred to, checked, never copied */
	if (hdr.flags & GS_SF_ARENA)
	{
		p += sizeof(head);
		for (uint32 i = 0; i < head.nrefs; i++)
		{
			GsSerialArenaChunk ac;

			memcpy(&ac, p, sizeof(ac));
			p += sizeof(ac);
			if (ac.n == 0 || ac.n > GS_ARENA_CHUNK_BYTES / st->key_bytes ||
				(uint64) st->nrows + ac.n > (uint64) hdr.nrows)
				elog(ERROR, "gpuselect: serialized state has a bad length");
			gs_state_add_chunk(st, gs_arena_resolve(&ac.ref, (Size) ac.n * st->key_bytes), ac.n,
							   NULL, true);
		}
		gs_states_in_arena++;
	}

	/* the rest: in a worker's segment, or right here */
	rest = (uint64) hdr.nrows - (uint64) st->nrows;
	if (len - fixed != ((hdr.flags & GS_SF_SHARED) ? sizeof(GsSerialSharedRef) : rest * hdr.key_bytes))
		elog(ERROR, "gpuselect: serialized state has a bad length");
	if (hdr.flags & GS_SF_SHARED)
	{
		GsSerialSharedRef ref;

		memcpy(&ref, p, sizeof(ref));
		if (ref.key_bytes != rest * hdr.key_bytes || rest == 0)
			elog(ERROR, "gpuselect: serialized state has a bad length");
		gs_state_map_shared_keys(st, ref.handle, rest);
	}
	else if (rest > 0)
		gs_state_copy_in_keys(st, p, rest);
	Assert(st->nrows == hdr.nrows);
	return st;
}

uint64
gs_state_keys_outside_arena(const GsState *st)
{
	uint64		n = 0;

	for (int i = 0; i < st->nchunks; i++)
		if (!st->chunks[i].arena)
			n += st->chunks[i].n;
	return n;
}

void
gs_state_input(const GsState *st, gs_input *in)
{
	gs_segment *segs = (gs_segment *) palloc(sizeof(gs_segment) * Max(st->nchunks, 1));
	size_t		nsegs = 0;

	for (int i = 0; i < st->nchunks; i++)
	{
		if (st->chunks[i].n == 0)
			continue;
		segs[nsegs].keys = st->chunks[i].data;
		segs[nsegs].n = (size_t) st->chunks[i].n;
		nsegs++;
	}
	in->segs = segs;
	in->nsegs = nsegs;
	in->key_bytes = st->key_bytes;
}
