/*
 * state_serial.c — the serialized forms of a partial aggregate state
 * (gs_state_serialize / gs_state_deserialize, see state.h), in which a
 * parallel worker's state (or the leader's own partial aggregation) reaches
 * the combining aggregate.  Both ends are the same build, so the layout is
 * host-endian and unversioned; the magic only catches a bytea that is not a
 * gpuselect state at all.
 *
 * A serialized state is one bytea:
 *
 *   GsSerialHeader   magic "GSS1", the value type (typid, kind, key width),
 *                    flags, ORDER BY direction, the fraction argument
 *                    (gpu_quantile's float8; the size of gpu_quantiles'
 *                    array), and nrows, the number of keys in all.
 *   fraction array   array_bytes of the array varlena, zero-padded to
 *                    MAXALIGN (absent when array_bytes is 0).
 *   arena refs       with GS_SF_ARENA: GsSerialArenaHead and nrefs
 *                    GsSerialArenaChunk entries, each a chunk of keys in the
 *                    leader's key arena (arena.c) as a GsArenaRef (handle,
 *                    generation, offset) and a count; never copied, checked by
 *                    gs_arena_resolve.  The last may be a slice (arena.h)
 *                    into which serializing copied the keys held elsewhere.
 *   pool refs        with GS_SF_POOL: GsSerialPoolHead (the leader's job
 *                    slot and lease generation) and nrefs GsSerialPoolChunk
 *                    entries (chunk index, count), each a chunk of the GPU
 *                    service's key pool leased to the leader
 *                    (service_scan.c); never copied, checked by
 *                    gs_pool_lease_chunk, adopted by gs_state_combine.
 *   the other keys   either inline, (nrows - keys in the arena) * key_bytes
 *                    bytes in chunk order (the tuple-queue form), or, with
 *                    GS_SF_SHARED, a GsSerialSharedRef naming the dynamic
 *                    shared memory segment (shared_state.c) that holds them.
 *
 * A state the bulk scan (scan/bulk_scan.c) built in this backend for the
 * Finalize Aggregate right above it travels by reference instead: "GSL1",
 * this process's pid, the state's address and a cookie the state carries
 * (gs_state_serialize_local).  The bulk scan's serial plan is never
 * parallel-safe, so such a bytea never leaves the backend; the pid and the
 * cookie make a stray one an ERROR rather than a wild pointer.
 *
 * Deserializing checks every length against the bytea before reading; a
 * state of GS_HANDOVER_MIN_BYTES or more of inline or shared keys gets a
 * memory context of its own that gs_state_combine (state.c) takes over.
 * Smaller inline keys are read where they are, in the bytea.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "utils/array.h"
#include "utils/memutils.h"

#include "state/arena.h"
#include "state/datum_state.h"
#include "base/types.h"
#include "base/guc.h"
#include "service/service.h"
#include "state/shared_state.h"
#include "state/state.h"

#define GS_SERIAL_MAGIC		0x31535347	/* "GSS1" */
#define GS_LOCAL_MAGIC		0x314c5347	/* "GSL1" */

typedef struct GsSerialLocal
{
	uint32		magic;
	int32		pid;
	uint64		cookie;
	GsState    *state;
} GsSerialLocal;

static uint64 gs_local_cookies = 0;
#define GS_SF_HAVE_FRACTION	0x01
#define GS_SF_FRACTION_NULL	0x02
#define GS_SF_HAVE_ARRAY	0x04
#define GS_SF_SHARED		0x08	/* keys in a shared memory segment (shared_state.c) */
#define GS_SF_ARENA			0x10	/* some keys in the leader's arena (arena.c) */
#define GS_SF_POOL			0x20	/* some keys in key-pool chunks leased to the leader */

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

/*
 * With GS_SF_POOL (after the arena references, if any) this and nrefs
 * GsSerialPoolChunk entries.
 */
typedef struct GsSerialPoolHead
{
	uint32		nrefs;
	int32		slot;			/* the leader's job slot */
	uint64		gen;			/* its lease generation */
} GsSerialPoolHead;

typedef struct GsSerialPoolChunk
{
	int32		idx;			/* chunk index in the key pool */
	uint32		pad;
	uint64		n;				/* keys in the chunk */
} GsSerialPoolChunk;

/* follows the fraction array (and arena references) instead of the keys when GS_SF_SHARED is set */
typedef struct GsSerialSharedRef
{
	dsm_handle	handle;
	uint32		pad;
	uint64		key_bytes;
} GsSerialSharedRef;

static void
gs_state_copy_keys(const GsState *st, char *p)
{
	for (int i = 0; i < st->nchunks; i++)
	{
		Size		sz = (Size) st->chunks[i].n * st->key_bytes;

		if (st->chunks[i].arena || st->chunks[i].pool_ref != 0)
			continue;			/* travels as a reference */
		memcpy(p, st->chunks[i].data, sz);
		p += sz;
	}
}

uint64
gs_serial_limit(void)
{
	/* gpuselect.test_max_serial_bytes (test hook) lowers the limit */
	return gs_guc_test_max_serial_bytes > 0 ?
		(uint64) gs_guc_test_max_serial_bytes : (uint64) MaxAllocSize;
}

/*
 * Keys and values alike (datum_state.c).  The ways out: no workers, or for
 * the built-ins no rewrite; the ordered-set form is none, since the planner
 * rewrite (planner.c) plans gpuselect's own as plain aggregates too.
 */
void
gs_serial_too_large(int64 nrows, uint64 total, uint64 limit)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("gpuselect: a partial aggregate state of " INT64_FORMAT " values (" UINT64_FORMAT " bytes) is too large to pass between parallel workers",
					nrows, total),
			 errdetail("Serialized states are limited to " UINT64_FORMAT " bytes.", limit),
			 errhint("Use fewer parallel workers (e.g. SET max_parallel_workers_per_gather = 0); "
					 "for the built-in percentile_disc or percentile_cont, SET gpuselect.accelerate_builtins = off.")));
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
	uint32		npool = 0;
	uint64		arena_keys = 0;
	uint64		keybytes;
	Size		arena_bytes;
	GsSerialSharedRef ref;
	char	   *shared_keys = NULL;
	char	   *slice = NULL;
	uint64		slice_keys = 0;
	uint64		total;
	uint64		limit = gs_serial_limit();
	bytea	   *b;
	char	   *p;

	if (st->kind == GS_T_DATUM)
		return gs_datum_serialize(st);	/* values, not keys: datum_state.c */
	for (int i = 0; i < st->nchunks; i++)
		if (st->chunks[i].arena && st->chunks[i].n > 0)
		{
			nrefs++;
			arena_keys += st->chunks[i].n;
		}
		else if (st->chunks[i].pool_ref != 0 && st->chunks[i].n > 0)
		{
			npool++;
			arena_keys += st->chunks[i].n;
		}
	/* the keys that are not in the arena or the pool travel as before */
	keybytes = ((uint64) st->nrows - arena_keys) * st->key_bytes;

	memset(&ref, 0, sizeof(ref));
	if (allow_shared && gs_shared_state_wanted((Size) keybytes))
		shared_keys = gs_shared_state_create((Size) keybytes, &ref.handle);
	/* or, not too large, in a slice of the leader's arena (arena.h) */
	if (shared_keys == NULL && keybytes >= GS_ARENA_SLICE_MIN_BYTES &&
		keybytes <= GS_ARENA_SLICE_MAX_BYTES)
		slice = gs_arena_slice((Size) keybytes);
	if (slice != NULL)
	{
		gs_state_copy_keys(st, slice);
		slice_keys = (uint64) st->nrows - arena_keys;
		nrefs++;
		keybytes = 0;
	}
	arena_bytes = nrefs > 0 ? sizeof(GsSerialArenaHead) + (Size) nrefs * sizeof(GsSerialArenaChunk) : 0;
	if (npool > 0)
		arena_bytes += sizeof(GsSerialPoolHead) + (Size) npool * sizeof(GsSerialPoolChunk);
	if (shared_keys != NULL)
	{
		ref.key_bytes = keybytes;
		gs_state_copy_keys(st, shared_keys);
		total = (uint64) VARHDRSZ + sizeof(hdr) + array_padded + arena_bytes + sizeof(ref);
	}
	else
		total = (uint64) VARHDRSZ + sizeof(hdr) + array_padded + arena_bytes + keybytes;

	if (total > limit)
		gs_serial_too_large(st->nrows, total, limit);

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = GS_SERIAL_MAGIC;
	hdr.typid = st->typid;
	hdr.kind = st->kind;
	hdr.key_bytes = st->key_bytes;
	hdr.flags = (st->have_fraction ? GS_SF_HAVE_FRACTION : 0) |
		(st->fraction_null ? GS_SF_FRACTION_NULL : 0) |
		(st->fractions ? GS_SF_HAVE_ARRAY : 0) |
		(shared_keys ? GS_SF_SHARED : 0) |
		(nrefs > 0 ? GS_SF_ARENA : 0) |
		(npool > 0 ? GS_SF_POOL : 0);
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
		if (slice != NULL)
		{
			GsSerialArenaChunk ac;

			gs_arena_ref(slice, &ac.ref);
			ac.n = slice_keys;
			memcpy(p, &ac, sizeof(ac));
			p += sizeof(ac);
		}
	}
	if (npool > 0)
	{
		GsSerialPoolHead ph;

		memset(&ph, 0, sizeof(ph));
		ph.nrefs = npool;
		ph.slot = st->lease_slot;
		ph.gen = st->lease_gen;
		memcpy(p, &ph, sizeof(ph));
		p += sizeof(ph);
		for (int i = 0; i < st->nchunks; i++)
		{
			GsSerialPoolChunk pc;

			if (st->chunks[i].pool_ref == 0 || st->chunks[i].n == 0)
				continue;
			memset(&pc, 0, sizeof(pc));
			pc.idx = st->chunks[i].pool_ref - 1;
			pc.n = st->chunks[i].n;
			memcpy(p, &pc, sizeof(pc));
			p += sizeof(pc);
		}
	}
	if (shared_keys)
		memcpy(p, &ref, sizeof(ref));
	else if (slice == NULL)
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
	c->arena = arena;
	c->pool_ref = 0;
	c->leased = false;
	c->lease_open = false;
	c->handover = handover;
	c->owned = NULL;
	st->nrows += (int64) n;
}

/*
 * A deserialized state's inline keys.  The state is only read, by the
 * combine function, while PostgreSQL processes the input tuple that holds
 * the bytea (gs_deserialize's comment), so small keys stay in the bytea: the
 * combine copies them into the group's state, the one copy they need (a
 * GROUP BY's many small partial states would otherwise be copied twice).
 * Large keys are copied into a memory context of their own, a child of
 * st->mcxt -- the per-input-tuple context PostgreSQL deserializes in -- so
 * that gs_state_combine can take them over rather than copy them a second
 * time.  If nothing takes them over (an ERROR, or a hash aggregate that
 * spills the input tuple instead of combining it), they are freed with that
 * short-lived context.
 */
static void
gs_state_add_inline_keys(GsState *st, const char *keys, uint64 n)
{
	Size		bytes = (Size) n * st->key_bytes;
	MemoryContext handover;
	char	   *data;

	if (bytes < GS_HANDOVER_MIN_BYTES)
	{
		gs_state_add_chunk(st, (char *) keys, n, NULL, false);
		return;
	}
	handover = AllocSetContextCreate(st->mcxt, "gpuselect partial state keys",
									 ALLOCSET_SMALL_SIZES);
	data = MemoryContextAllocHuge(handover, bytes);
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

/*
 * The leased chunks of a serialized state (ph's nrefs entries at p): each
 * checked against the pool (index, this backend's job slot and pid, still
 * leased, the lease generation) and its count against the chunk's size
 * and the state's; any mismatch is an ERROR.  The chunks stay leased
 * until gs_state_combine adopts them; the deserialized state only reads.
 */
static void
gs_state_resolve_pool_refs(GsState *st, const char *p, const GsSerialPoolHead *ph, uint64 nrows)
{
	if (!gs_service_in_use() || ph->slot != gs_svc_my_slot())
		elog(ERROR, "gpuselect: a partial state refers to key-pool chunks that are not leased to this backend");
	for (uint32 i = 0; i < ph->nrefs; i++)
	{
		GsSerialPoolChunk pc;
		char	   *data;
		GsChunk    *c;

		memcpy(&pc, p, sizeof(pc));
		p += sizeof(pc);
		if (pc.n == 0 || pc.n > gs_svc_ctl->chunk_bytes / st->key_bytes ||
			(uint64) st->nrows + pc.n > nrows)
			elog(ERROR, "gpuselect: serialized state has a bad length");
		data = gs_pool_lease_chunk(pc.idx, ph->slot, ph->gen);
		if (data == NULL)
			elog(ERROR, "gpuselect: a partial state refers to a key-pool chunk that is not leased to this backend");
		gs_state_add_chunk(st, data, pc.n, NULL, false);
		c = &st->chunks[st->nchunks - 1];
		c->pool_ref = pc.idx + 1;
		c->leased = true;
		c->lease_open = true;
	}
	st->lease_slot = ph->slot;
	st->lease_gen = ph->gen;
}

bytea *
gs_state_serialize_local(GsState *st)
{
	bytea	   *b = (bytea *) palloc(VARHDRSZ + sizeof(GsSerialLocal));
	GsSerialLocal loc;

	if (st->handoff_cookie == 0)
		st->handoff_cookie = ++gs_local_cookies;
	memset(&loc, 0, sizeof(loc));
	loc.magic = GS_LOCAL_MAGIC;
	loc.pid = MyProcPid;
	loc.cookie = st->handoff_cookie;
	loc.state = st;
	SET_VARSIZE(b, VARHDRSZ + sizeof(loc));
	memcpy(VARDATA(b), &loc, sizeof(loc));
	return b;
}

/* the state a "GSL1" bytea refers to; ERROR if it is not this backend's */
static GsState *
gs_state_deserialize_local(bytea *b)
{
	GsSerialLocal loc;

	if (VARSIZE(b) - VARHDRSZ != sizeof(loc))
		elog(ERROR, "gpuselect: serialized state has a bad length");
	memcpy(&loc, VARDATA(b), sizeof(loc));
	if (loc.pid != MyProcPid || loc.cookie == 0 || loc.cookie > gs_local_cookies ||
		loc.state == NULL || loc.state->handoff_cookie != loc.cookie)
		elog(ERROR, "gpuselect: a state handed over by reference is not this backend's");
	return loc.state;
}

GsState *
gs_state_deserialize(MemoryContext mcxt, bytea *b)
{
	GsSerialHeader hdr;
	GsSerialArenaHead head;
	GsSerialPoolHead ph;
	const char *p = VARDATA(b);
	Size		len = VARSIZE(b) - VARHDRSZ;
	Size		array_padded;
	Size		fixed;
	uint64		rest;
	GsState    *st;

	if (gs_datum_is_serialized(b))
		return gs_datum_deserialize(mcxt, b);	/* values, not keys: datum_state.c */
	if (len >= sizeof(uint32) && *(const uint32 *) p == GS_LOCAL_MAGIC)
		return gs_state_deserialize_local(b);
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
	memset(&ph, 0, sizeof(ph));
	if (hdr.flags & GS_SF_POOL)
	{
		if (fixed + sizeof(ph) > len)
			elog(ERROR, "gpuselect: serialized state has a bad length");
		memcpy(&ph, VARDATA(b) + fixed, sizeof(ph));
		if (ph.nrefs == 0 || ph.nrefs > (len - fixed - sizeof(ph)) / sizeof(GsSerialPoolChunk))
			elog(ERROR, "gpuselect: serialized state has a bad length");
		fixed += sizeof(ph) + (Size) ph.nrefs * sizeof(GsSerialPoolChunk);
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

	/* keys in key-pool chunks leased to this backend: checked, never copied */
	if (hdr.flags & GS_SF_POOL)
	{
		p += sizeof(ph);
		gs_state_resolve_pool_refs(st, p, &ph, (uint64) hdr.nrows);
		p += (Size) ph.nrefs * sizeof(GsSerialPoolChunk);
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
		gs_state_add_inline_keys(st, p, rest);
	Assert(st->nrows == hdr.nrows);
	return st;
}
