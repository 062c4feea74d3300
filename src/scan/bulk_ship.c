/*
 * bulk_ship.c — page shipping (issue #31; gpuselect.bulk_scan_ship_pages):
 * the bulk scan of one aggregate, without GROUP BY or quals, sends the GPU
 * service its pages instead of their keys.
 *
 * Why: such a scan's time is the backend's per-tuple extraction (a cache
 * miss per tuple); the service can read the same shared buffers and
 * extract there -- on its device, which reads the pages over the bus
 * without a CPU touching them, or on a thread of its own -- while this
 * process goes on scanning (the session 21 figures:
 * test/bench/results/gpu-2026-11-27-session21.md).
 *
 * How.  Page mode (bulk_scan.c) has checked a page's tuples against the
 * snapshot under the buffer's share lock and listed the visible ones.  We
 * take a pin of our own on the buffer (IncrBufferRefCount, remembered by
 * the current resource owner) and append a reference to the current batch:
 * the buffer, its block and the listed line pointers (just a count when
 * they are 1..n, as on most all-visible pages).  heap_getnext then drops
 * its own pin and moves on; ours keeps the page.  A full batch goes to the
 * service as a PAGES job (select/service_client.c) without waiting, and
 * the scan fills the next one: up to GS_SVC_PAGE_SLOTS batches are in
 * flight, each in a page slot of its own.  A batch whose slot comes round
 * again, and every batch at the scan's end, is collected: its keys
 * appended to the state, its pins released.
 *
 * A scan never waits for a service that is behind, except where the
 * session asked for the GPU (gpuselect.device = gpu): when the batch just
 * filled would have to wait for its slot's earlier batch, the scan
 * extracts it itself and refills it.  So a device busy with other work,
 * or parallel workers shipping faster than one device extracts, make
 * shipping no slower than extracting here; the service takes the share it
 * can (measured: test/bench/results/gpu-2026-11-28-session26.md).
 *
 * MVCC and pins.  The listed tuples are the snapshot's answer for this
 * page; checking them later would be wrong (a concurrent commit would
 * change it), so the list travels, not the question.  And the list stays
 * true for as long as we hold the pin: nothing moves a tuple's data or
 * frees its line pointer without a cleanup lock (pruning, VACUUM), which
 * our pin blocks, and a heap tuple's data never changes in place; what a
 * writer may still do to the page -- add tuples (we read only the listed
 * ones), set hint bits or xmax -- touches nothing the extraction reads.
 * That is why we never list "every tuple of an all-visible page": one
 * inserted after our check could be in a reused line pointer.
 *
 * Pins are released after a batch is collected, by the resource owner on
 * ERROR or cancel, and here on rescan and end once the jobs in flight are
 * given up.  The jobs in flight on ERROR are given up by a reset callback
 * of the scan's memory; a slot still busy when it is next wanted is given
 * up then (service_client.c), so none is leaked.  All batches together
 * pin at most GS_BULK_SHIP_MAX_PAGES pages and half a backend's share of
 * shared buffers (NBuffers / MaxBackends), so the read stream's own pin
 * budget and other backends keep room.
 *
 * Fallback: whenever the service does not extract a batch (not ready, the
 * pool full, a failure, a restart), this process still holds the pins and
 * extracts the keys itself, the way the scan does without shipping
 * (gs_bulk_fetch): the answer never depends on the service.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/snapmgr.h"
#include "utils/memutils.h"

#include "aggs/fn_cache.h"
#include "base/guc.h"
#include "scan/bulk_ship.h"
#include "select/service_client.h"
#include "service/service.h"

/* pages pinned by all batches of one scan together, at most */
#define GS_BULK_SHIP_MAX_PAGES 4096

/* one batch: its pinned pages and their references */
typedef struct GsShipBatch
{
	int			npages;
	Buffer	   *buffers;		/* pinned by us, one per reference */
	char	   *refs;			/* gs_page_refs, packed (gs_pages.h) */
	Size		ref_bytes;
	uint64		tuples;			/* listed */
	bool		in_flight;		/* submitted in page slot (its index) */
} GsShipBatch;

struct GsBulkShip
{
	gs_page_column column;		/* what the service reads by */
	GsTypeKind	tkind;
	int			max_pages;		/* a batch's */
	int			fill;			/* the batch being filled */
	bool		any_in_flight;
	GsShipBatch batch[GS_SVC_PAGE_SLOTS];
	MemoryContextCallback on_reset;
};

/* the scan's memory goes (end, or ERROR): no job of ours may outlive it */
static void
gs_bulk_ship_on_reset(void *arg)
{
	GsBulkShip *sp = (GsBulkShip *) arg;

	if (sp->any_in_flight)
		gs_service_pages_abandon();
	sp->any_in_flight = false;
}

static uint8
gs_bulk_ship_align(char align)
{
	switch (align)
	{
		case TYPALIGN_CHAR:
			return 1;
		case TYPALIGN_SHORT:
			return 2;
		case TYPALIGN_INT:
			return 4;
		default:
			return 8;
	}
}

GsBulkShip *
gs_bulk_ship_create(MemoryContext cxt, TupleDesc desc, AttrNumber attno, GsTypeKind tkind)
{
	GsBulkShip *sp;
	gs_page_column col;
	Form_pg_attribute att = TupleDescAttr(desc, attno - 1);

	if (!gs_service_in_use() || attno < 1 || attno > GS_PAGE_MAX_ATTS ||
		(att->attlen != 2 && att->attlen != 4 && att->attlen != 8))
		return NULL;
	memset(&col, 0, sizeof(col));
	col.attnum = (uint16) attno;
	col.key_bytes = (uint16) att->attlen;
	col.is_float = (tkind == GS_T_FLOAT4 || tkind == GS_T_FLOAT8);
	for (int i = 0; i < attno; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		/* dropped columns too: old tuples still hold their bytes */
		if (a->attlen <= 0)
			return NULL;
		col.attlen[i] = a->attlen;
		col.attalign[i] = gs_bulk_ship_align(a->attalign);
	}
	if (att->atthasmissing)
	{
		bool		isnull;
		Datum		d = getmissingattr(desc, attno, &isnull);

		col.has_missing = !isnull;
		if (!isnull)
			col.missing_key = gs_key_from_datum(tkind, d);
	}

	sp = MemoryContextAllocZero(cxt, sizeof(GsBulkShip));
	sp->column = col;
	sp->tkind = tkind;
	sp->max_pages = Max(1, Min(GS_BULK_SHIP_MAX_PAGES, NBuffers / MaxBackends / 2) /
						GS_SVC_PAGE_SLOTS);
	for (int k = 0; k < GS_SVC_PAGE_SLOTS; k++)
	{
		GsShipBatch *b = &sp->batch[k];

		b->buffers = MemoryContextAlloc(cxt, sizeof(Buffer) * sp->max_pages);
		b->refs = MemoryContextAlloc(cxt, (sizeof(gs_page_ref) +
										   MAXALIGN(sizeof(uint16) * MaxHeapTuplesPerPage)) *
									 sp->max_pages);
	}
	/* an ERROR leaves jobs in flight: give them up with the scan's memory */
	sp->on_reset.func = gs_bulk_ship_on_reset;
	sp->on_reset.arg = sp;
	MemoryContextRegisterResetCallback(cxt, &sp->on_reset);
	return sp;
}

static bool gs_bulk_ship_append(GsBulkShip *sp, Buffer buf, BlockNumber blk,
								const OffsetNumber *offs, int n);

bool
gs_bulk_ship_page(GsBulkShip *sp, HeapScanDesc hs)
{
	int			first = (int) hs->rs_cindex;
	int			n = (int) hs->rs_ntuples - first;

	if (n <= 0)
		return false;
	/* our pin (the resource owner remembers it): heap_getnext drops its own */
	IncrBufferRefCount(hs->rs_cbuf);
	return gs_bulk_ship_append(sp, hs->rs_cbuf, hs->rs_cblock, &hs->rs_vistuples[first], n);
}

/* a reference to the current batch: buf (whose pin the batch now holds),
 * block blk and its n visible line pointers offs */
static bool
gs_bulk_ship_append(GsBulkShip *sp, Buffer buf, BlockNumber blk, const OffsetNumber *offs,
					int n)
{
	GsShipBatch *b = &sp->batch[sp->fill];
	gs_page_ref r;
	bool		dense = true;

	for (int i = 0; i < n && dense; i++)
		dense = offs[i] == (OffsetNumber) (i + 1);
	r.buffer = (uint32) buf;
	r.block = blk;
	r.noffsets = (uint16) n;
	r.flags = dense ? GS_PAGE_DENSE : 0;
	b->buffers[b->npages++] = buf;
	memcpy(b->refs + b->ref_bytes, &r, sizeof(r));
	if (!dense)
		memcpy(b->refs + b->ref_bytes + sizeof(r), offs, sizeof(uint16) * n);
	b->ref_bytes += gs_page_ref_bytes(&r);
	b->tuples += n;
	return b->npages >= sp->max_pages;
}

/*
 * Whether gs_bulk_ship_read_page may read rel's pages for this snapshot:
 * an MVCC snapshot, shared buffers (the service cannot see a temporary
 * table's), and not SERIALIZABLE (whose conflict checks per tuple we leave
 * to heap_getnext, which then reads the pages).
 */
bool
gs_bulk_ship_own_pages(Relation rel, Snapshot snapshot)
{
	return IsMVCCSnapshot(snapshot) && !IsolationIsSerializable() &&
		!RelationUsesLocalBuffers(rel);
}

/*
 * The pinned buffer buf (its pin now the batch's or released here) taken as
 * heap_getnext's page mode takes a page (heapgetpage /
 * heap_prepare_pagescan): pruned if it may be, then under the buffer's
 * share lock each normal line pointer's tuple checked against the
 * snapshot -- all of them visible on a page marked all-visible, unless the
 * snapshot was taken during recovery -- and the visible ones listed in the
 * current batch, which keeps the pin; heap_getnext's per-tuple bookkeeping
 * is what this saves.  Only under gs_bulk_ship_own_pages.  *ntuples: the
 * visible tuples; true when the batch is full.
 */
bool
gs_bulk_ship_take_page(GsBulkShip *sp, Relation rel, Buffer buf, Snapshot snapshot,
					   int *ntuples, bool *all_visible)
{
	BlockNumber blk = BufferGetBlockNumber(buf);
	OffsetNumber offs[MaxHeapTuplesPerPage];
	Page		page;
	OffsetNumber lines;
	bool		av;
	int			n = 0;

	heap_page_prune_opt(rel, buf);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
#if PG_VERSION_NUM < 170000
	TestForOldSnapshot(snapshot, rel, page);
#endif
	lines = PageGetMaxOffsetNumber(page);
	*all_visible = PageIsAllVisible(page);
	av = *all_visible && !snapshot->takenDuringRecovery;
	for (OffsetNumber off = FirstOffsetNumber; off <= lines; off++)
	{
		ItemId		lp = PageGetItemId(page, off);

		if (!ItemIdIsNormal(lp))
			continue;
		if (!av)
		{
			HeapTupleData tup;

			tup.t_tableOid = RelationGetRelid(rel);
			tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tup.t_len = ItemIdGetLength(lp);
			ItemPointerSet(&tup.t_self, blk, off);
			if (!HeapTupleSatisfiesVisibility(&tup, snapshot, buf))
				continue;
		}
		offs[n++] = off;
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	*ntuples = n;
	if (n == 0)
	{
		ReleaseBuffer(buf);
		return false;
	}
	return gs_bulk_ship_append(sp, buf, blk, offs, n);
}

/* batch b's keys extracted here, from the pages we still pin */
static void
gs_bulk_ship_extract_here(GsBulkShip *sp, GsShipBatch *b, GsState *st,
						  const GsBulkColumn *col, TupleDesc desc, Oid relid)
{
	Size		pos = 0;
	HeapTupleData tup;

	tup.t_tableOid = relid;
	ItemPointerSetInvalid(&tup.t_self);
	for (int p = 0; p < b->npages; p++)
	{
		gs_page_ref r;
		const uint16 *offsets;
		Page		page = BufferGetPage(b->buffers[p]);

		memcpy(&r, b->refs + pos, sizeof(r));
		offsets = (const uint16 *) (b->refs + pos + sizeof(r));
		for (int i = 0; i < r.noffsets; i++)
		{
			OffsetNumber off = (r.flags & GS_PAGE_DENSE) ? (OffsetNumber) (i + 1) : offsets[i];
			ItemId		lp = PageGetItemId(page, off);
			bool		isnull;
			Datum		d;

			tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tup.t_len = ItemIdGetLength(lp);
			d = gs_bulk_fetch(col, &tup, desc, &isnull);
			if (!isnull)
				gs_append_datum(st, sp->tkind, d);
		}
		pos += gs_page_ref_bytes(&r);
	}
}

/* batch b's pins released, the batch empty */
static void
gs_bulk_ship_release(GsShipBatch *b)
{
	for (int p = 0; p < b->npages; p++)
		ReleaseBuffer(b->buffers[p]);
	b->npages = 0;
	b->ref_bytes = 0;
	b->tuples = 0;
	b->in_flight = false;
}

/* batch k in flight: its keys into st, by the service or else by us */
static void
gs_bulk_ship_collect(GsBulkShip *sp, int k, GsState *st, const GsBulkColumn *col,
					 TupleDesc desc, Oid relid, uint64 *pages_shipped)
{
	GsShipBatch *b = &sp->batch[k];
	const char *why = NULL;

	if (gs_service_pages_collect(k, st, &why))
		*pages_shipped += b->npages;
	else
	{
		elog(DEBUG1, "gpuselect: %d pages extracted by the scan: %s", b->npages, why);
		gs_bulk_ship_extract_here(sp, b, st, col, desc, relid);
	}
	gs_bulk_ship_release(b);
}

/* the batch being filled to the service (or extracted here, also when the
 * service is behind: above), then the next one made ready to fill:
 * collected first if it is still in flight */
void
gs_bulk_ship_flush(GsBulkShip *sp, GsState *st, const GsBulkColumn *col,
				   TupleDesc desc, Oid relid, uint64 *pages_shipped)
{
	GsShipBatch *b = &sp->batch[sp->fill];
	const char *why = NULL;

	if (b->npages > 0)
	{
		int			next = (sp->fill + 1) % GS_SVC_PAGE_SLOTS;

		if (gs_guc_device != GS_DEVICE_GPU && sp->batch[next].in_flight &&
			!gs_service_pages_answered(next))
		{
			/* the service is behind: this one is ours, its slot refilled */
			gs_bulk_ship_extract_here(sp, b, st, col, desc, relid);
			gs_bulk_ship_release(b);
			return;
		}
		if (b->tuples > 0 &&
			gs_service_pages_submit(sp->fill, &sp->column, b->refs, b->ref_bytes, b->npages,
									b->tuples, &why))
		{
			b->in_flight = true;
			sp->any_in_flight = true;
		}
		else
		{
			elog(DEBUG1, "gpuselect: %d pages extracted by the scan: %s", b->npages,
				 why ? why : "no tuples");
			gs_bulk_ship_extract_here(sp, b, st, col, desc, relid);
			gs_bulk_ship_release(b);
		}
		sp->fill = (sp->fill + 1) % GS_SVC_PAGE_SLOTS;
	}
	if (sp->batch[sp->fill].in_flight)
		gs_bulk_ship_collect(sp, sp->fill, st, col, desc, relid, pages_shipped);
}

/* the scan's end: the last batch sent, every batch collected */
void
gs_bulk_ship_finish(GsBulkShip *sp, GsState *st, const GsBulkColumn *col,
					TupleDesc desc, Oid relid, uint64 *pages_shipped)
{
	gs_bulk_ship_flush(sp, st, col, desc, relid, pages_shipped);
	for (int i = 0; i < GS_SVC_PAGE_SLOTS; i++)
	{
		int			k = (sp->fill + i) % GS_SVC_PAGE_SLOTS;

		if (sp->batch[k].in_flight)
			gs_bulk_ship_collect(sp, k, st, col, desc, relid, pages_shipped);
	}
	sp->any_in_flight = false;
	sp->fill = 0;
}

/* rescan or end: the jobs in flight given up first, then every pin */
void
gs_bulk_ship_discard(GsBulkShip *sp)
{
	if (sp->any_in_flight)
		gs_service_pages_abandon();
	sp->any_in_flight = false;
	for (int k = 0; k < GS_SVC_PAGE_SLOTS; k++)
		gs_bulk_ship_release(&sp->batch[k]);
	sp->fill = 0;
}
