/*
 * datum_frame.c — the comparison types' window frame (why this way:
 * datum_frame.h).
 */
#include "postgres.h"

#include "access/detoast.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "base/types.h"
#include "state/datum_frame.h"
#include "state/datum_state.h"

#define GS_DFRAME_RING_MIN	64

/* handles by the values they name, then by arrival (ostree.h's GsOsCompare) */
static int
gs_dframe_cmp(uint64 a, uint64 b, void *arg)
{
	GsDatumFrame *f = (GsDatumFrame *) arg;
	const GsDFrameSlot *x = &f->ring[a & f->mask];
	const GsDFrameSlot *y = &f->ring[b & f->mask];
	int			c = ApplySortComparator(x->key, false, y->key, false, &f->ssup);

	if (c == 0 && f->abbrev)
		c = ApplySortAbbrevFullComparator(x->val, false, y->val, false, &f->ssup);
	if (c != 0)
		return c;
	return a < b ? -1 : a > b ? 1 : 0;
}

GsDatumFrame *
gs_dframe_create(MemoryContext mcxt, Oid typid, Oid sortop, Oid collation)
{
	GsDatumFrame *f = (GsDatumFrame *) MemoryContextAllocZero(mcxt, sizeof(GsDatumFrame));
	MemoryContext old;

	f->mcxt = mcxt;
	get_typlenbyval(typid, &f->typlen, &f->typbyval);
	if (!f->typbyval)
		f->values = GenerationContextCreate(mcxt, "gpuselect window frame values",
											0, 8 * 1024, 64 * 1024);
	f->ssup.ssup_cxt = mcxt;
	f->ssup.ssup_collation = collation;
	f->ssup.ssup_nulls_first = false;
	f->ssup.abbreviate = true;
	old = MemoryContextSwitchTo(mcxt);
	PrepareSortSupportFromOrderingOp(sortop, &f->ssup);
	MemoryContextSwitchTo(old);
	/* never aborted: a frame's keys are made one at a time, and a poor key
	 * costs one integer compare before the full one */
	f->abbrev = f->ssup.abbrev_converter != NULL;
	f->ring = (GsDFrameSlot *) MemoryContextAlloc(mcxt, sizeof(GsDFrameSlot) * GS_DFRAME_RING_MIN);
	f->mask = GS_DFRAME_RING_MIN - 1;
	gs_ostree_init(&f->tree, mcxt);
	gs_ostree_set_compare(&f->tree, gs_dframe_cmp, f);
	return f;
}

/* a full ring doubles; the handles keep their values */
static void
gs_dframe_grow(GsDatumFrame *f)
{
	uint64		size = (f->mask + 1) * 2;
	GsDFrameSlot *ring = (GsDFrameSlot *) MemoryContextAllocHuge(f->mcxt, sizeof(GsDFrameSlot) * size);

	for (uint64 h = f->oldest; h < f->next; h++)
		ring[h & (size - 1)] = f->ring[h & f->mask];
	pfree(f->ring);
	f->ring = ring;
	f->mask = size - 1;
}

/* a copy of a non-NULL value in the values context (varlena: detoasted, 4-byte header) */
static Datum
gs_dframe_copy(const GsDatumFrame *f, Datum d)
{
	struct varlena *v;
	struct varlena *flat = NULL;
	Size		len;
	char	   *dst;

	if (f->typbyval)
		return d;
	if (f->typlen != -1)
	{
		len = f->typlen > 0 ? (Size) f->typlen : strlen(DatumGetCString(d)) + 1;
		dst = (char *) MemoryContextAlloc(f->values, len);
		memcpy(dst, DatumGetPointer(d), len);
		return PointerGetDatum(dst);
	}
	v = (struct varlena *) DatumGetPointer(d);
	if (VARATT_IS_EXTENDED(v) && !VARATT_IS_SHORT(v))
		v = flat = detoast_attr(v);
	len = VARSIZE_ANY_EXHDR(v);
	dst = (char *) MemoryContextAlloc(f->values, len + VARHDRSZ);
	SET_VARSIZE(dst, len + VARHDRSZ);
	memcpy(VARDATA(dst), VARDATA_ANY(v), len);
	if (flat != NULL)
		pfree(flat);
	return PointerGetDatum(dst);
}

void
gs_dframe_add(GsDatumFrame *f, Datum d)
{
	GsDFrameSlot *slot;

	if (f->next - f->oldest > f->mask)
		gs_dframe_grow(f);
	slot = &f->ring[f->next & f->mask];
	slot->val = gs_dframe_copy(f, d);
	slot->key = f->abbrev ? f->ssup.abbrev_converter(slot->val, &f->ssup) : slot->val;
	gs_ostree_insert(&f->tree, f->next);
	f->next++;
}

/* the stored copy a (gs_dframe_copy's form) has the bytes of value d */
static bool
gs_dframe_same_bytes(const GsDatumFrame *f, Datum a, Datum d)
{
	struct varlena *v;
	bool		same;

	if (f->typbyval)
		return a == d;
	if (f->typlen > 0)
		return memcmp(DatumGetPointer(a), DatumGetPointer(d), f->typlen) == 0;
	if (f->typlen != -1)
		return strcmp(DatumGetCString(a), DatumGetCString(d)) == 0;
	v = (struct varlena *) DatumGetPointer(d);
	if (VARATT_IS_EXTENDED(v) && !VARATT_IS_SHORT(v))
		v = detoast_attr(v);
	same = VARSIZE_ANY_EXHDR(v) == VARSIZE(DatumGetPointer(a)) - VARHDRSZ &&
		memcmp(VARDATA_ANY(v), VARDATA(DatumGetPointer(a)), VARSIZE_ANY_EXHDR(v)) == 0;
	if (v != (struct varlena *) DatumGetPointer(d))
		pfree(v);
	return same;
}

void
gs_dframe_remove_oldest(GsDatumFrame *f, Datum d)
{
	uint64		h = f->oldest;
	Datum		a;

	if (h == f->next)
		elog(ERROR, "gpuselect: a row left an empty window frame");
	a = f->ring[h & f->mask].val;
	/* rows leave in the order they came (datum_frame.h): the oldest is this row */
	if (!gs_dframe_same_bytes(f, a, d) || !gs_ostree_delete(&f->tree, h))
		elog(ERROR, "gpuselect: a row leaving the window frame was not its oldest");
	if (!f->typbyval)
		pfree(DatumGetPointer(a));
	f->oldest++;
}

void
gs_dframe_add_state(GsDatumFrame *f, const GsState *st)
{
	const GsDatumStore *s = st->datums;
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "gpuselect frame values",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);

	if (s->spill != NULL)
		elog(ERROR, "gpuselect: a window aggregate's values spilled");
	for (int i = 0; i < s->nchunks; i++)
	{
		const GsDatumChunk *c = &s->chunks[i];

		if (s->keymode == GS_DK_NUMERIC)
		{
			/* numeric values of one scale, kept as keys (datum_numkey.c) */
			for (Size j = 0; j < c->used / sizeof(uint64); j++)
			{
				int64		v = gs_int64_from_key(((const uint64 *) c->data)[j]);

				gs_dframe_add(f, gs_numkey_to_datum(v, s->dscale, s->keyshort));
				MemoryContextReset(tmp);
			}
		}
		else
		{
			int64		n = gs_datum_chunk_values(s, c, NULL, INT64_MAX);
			GsDatumItem *items = (GsDatumItem *) palloc(sizeof(GsDatumItem) * Max(n, 1));

			gs_datum_chunk_values(s, c, items, n);
			for (int64 j = 0; j < n; j++)
				gs_dframe_add(f, items[j].val);
			pfree(items);
		}
		CHECK_FOR_INTERRUPTS();
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
}

Datum
gs_dframe_at(const GsDatumFrame *f, uint64 k)
{
	return f->ring[gs_ostree_select(&f->tree, k) & f->mask].val;
}
