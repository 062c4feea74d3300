/*
 * state.c — the transition state: chunked key buffers, growth, combine.
 * See state.h.  The serialized partial-state formats (gs_state_serialize,
 * gs_state_deserialize) are in state_serial.c.
 */
#include "postgres.h"

#include <math.h>
#include <sys/mman.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "state/arena.h"
#include "base/guc.h"
#include "state/spill.h"
#include "service/service.h"
#include "state/service_scan.h"
#include "state/state.h"
#include "base/types.h"
#include "state/datum_state.h"

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
	if (kind == GS_T_DATUM)
		gs_datum_store_init(st);
	gs_states_created++;
	return st;
}

void
gs_chunk_advise_huge(void *mem, Size bytes)
{
#ifdef MADV_HUGEPAGE
	const uintptr_t huge = (uintptr_t) 2 << 20;
	uintptr_t	start = TYPEALIGN(huge, (uintptr_t) mem);
	uintptr_t	end = TYPEALIGN_DOWN(huge, (uintptr_t) mem + bytes);

	/* advice only: a kernel without THP, or one that refuses, costs nothing */
	if (gs_guc_huge_pages && bytes >= GS_HUGE_CHUNK_BYTES && end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#endif
}

/* Make room for one more chunk descriptor. */
static void
gs_state_reserve_chunk(GsState *st)
{
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
	int			pool_ref = 0;
	GsChunk    *c;

	/* a spilled state appends its write buffer to the file (spill.c) */
	if (st->spill != NULL)
		return gs_spill_flush(st);

	/* a full key-pool chunk is never written again: the GPU service may
	 * copy it to the device while the scan goes on (service_prefetch.c) */
	if (st->nchunks > 0 && st->chunks[st->nchunks - 1].pool_ref != 0 &&
		st->chunks[st->nchunks - 1].n == st->chunks[st->nchunks - 1].cap)
		gs_pool_seal(st->chunks[st->nchunks - 1].pool_ref - 1);

	/*
	 * A large partial state of a parallel aggregate (grouped or not): chunks
	 * of the GPU service's key pool leased to the leader, which reads them
	 * in place (service_scan.c), when the group may go to the GPU; else, for
	 * a plain aggregate, the arena.  Leases need no plain aggregate: they
	 * live until the leader's transaction end, whenever the leader reads
	 * the states (a sorted or spilled Finalize step included).
	 */
	if (st->lease_ok && (Size) st->grow_cap * st->key_bytes >= GS_ARENA_START_BYTES &&
		gs_guc_device != GS_DEVICE_CPU && gs_service_in_use())
	{
		uint64		pool_cap;

		mem = gs_service_lease_chunk(st, &pool_cap, &pool_ref);
		if (mem != NULL)
		{
			gs_state_reserve_chunk(st);
			c = &st->chunks[st->nchunks++];
			memset(c, 0, sizeof(*c));
			c->data = (char *) mem;
			c->cap = pool_cap;
			c->pool_ref = pool_ref;
			c->leased = true;
			return c;
		}
	}
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

	/* beyond gpuselect.work_mem: every key to a temporary file (spill.c) */
	if (gs_spill_wanted(st, bytes))
		return gs_spill_start(st);

	gs_state_reserve_chunk(st);

	/*
	 * Large groups headed for the GPU service: whole chunks of its shared key
	 * pool, written here and read there in place (service_scan.c; NULL when
	 * the pool is short: palloc).
	 */
	if (!st->partial && gs_guc_device != GS_DEVICE_CPU &&
		st->nrows >= (int64) gs_guc_gpu_min_rows && gs_service_in_use())
	{
		uint64		pool_cap;

		mem = gs_service_scan_chunk(st, &pool_cap, &pool_ref);
		if (mem != NULL)
			cap = pool_cap;
	}
	if (mem == NULL)
	{
		mem = MemoryContextAlloc(st->mcxt, bytes);
		gs_chunk_advise_huge(mem, bytes);
	}

	c = &st->chunks[st->nchunks++];
	c->data = (char *) mem;
	c->n = 0;
	c->cap = cap;
	c->arena = false;
	c->pool_ref = pool_ref;
	c->leased = false;
	c->lease_open = false;
	c->handover = NULL;
	c->owned = NULL;
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

int64		gs_fraction_full_compares = 0;

bool
gs_fraction_arrays_equal(ArrayType *a, ArrayType *b)
{
	Datum	   *ad,
			   *bd;
	bool	   *an,
			   *bn;
	int			na,
				nb;

	gs_fraction_full_compares++;
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

	Assert(c->n > 0);
	gs_state_reserve_chunk(into);
	MemoryContextSetParent(c->handover, into->mcxt);

	dst = &into->chunks[into->nchunks++];
	dst->data = c->data;
	dst->n = c->n;
	dst->cap = c->n;
	dst->arena = false;
	dst->pool_ref = 0;
	dst->leased = false;
	dst->lease_open = false;
	dst->handover = NULL;
	dst->owned = c->handover;	/* a spill deletes it (spill.c) */
	c->handover = NULL;
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
	dst->pool_ref = 0;			/* arena chunks never are pool chunks */
	dst->handover = NULL;
	dst->owned = NULL;
	into->nrows += (int64) c->n;
}

/*
 * A chunk a partial state leased in the key pool (service_scan.c) is
 * adopted, not copied: it becomes a held chunk of into, freed with into's
 * memory, and the final call's job reads it in place.  Once adopted, a
 * second combine of the same from copies its keys (which into keeps
 * alive).  A lease that is not this backend's any more is an ERROR.
 */
static void
gs_state_adopt_pool_chunk(GsState *into, const GsState *from, GsChunk *c)
{
	GsChunk    *dst;

	if (!c->lease_open)
	{
		gs_state_append_keys(into, c->data, c->n);
		return;
	}
	gs_state_reserve_chunk(into);	/* before adopting: may ERROR */
	if (!gs_service_adopt_lease(into, c->pool_ref, from->lease_gen))
		elog(ERROR, "gpuselect: a partial state refers to a key-pool chunk that is not leased to this backend");
	c->lease_open = false;
	dst = &into->chunks[into->nchunks++];
	memset(dst, 0, sizeof(*dst));
	dst->data = c->data;
	dst->n = c->n;
	dst->cap = c->n;			/* full: appends go to a new chunk */
	dst->pool_ref = c->pool_ref;
	dst->leased = true;
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

	if (into->kind == GS_T_DATUM)
	{
		gs_datum_combine(into, from);
		return;
	}

	for (int i = 0; i < from->nchunks; i++)
	{
		GsChunk    *c = &from->chunks[i];

		if (into->spill != NULL)
			gs_state_append_keys(into, c->data, c->n);	/* to the file */
		else if (c->arena)
		{
			if (c->n > 0)
				gs_state_refer_arena_chunk(into, c);
		}
		else if (c->pool_ref != 0)
		{
			if (c->n > 0)
				gs_state_adopt_pool_chunk(into, from, c);
		}
		else if (c->handover != NULL)
			gs_state_adopt_chunk(into, c);
		else
			gs_state_append_keys(into, c->data, c->n);
	}

	/* taken-over keys may have brought into past gpuselect.work_mem */
	if (gs_spill_wanted(into, 0))
		gs_spill_start(into);
}

uint64
gs_state_keys_outside_arena(const GsState *st)
{
	uint64		n = 0;

	for (int i = 0; i < st->nchunks; i++)
		if (!st->chunks[i].arena && st->chunks[i].pool_ref == 0)
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
