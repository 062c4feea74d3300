/*
 * bulk_ship.h — page shipping for the bulk scan (issue #31): the
 * pages of an ungrouped single-aggregate scan sent to the GPU service, which
 * extracts the column's keys from them (bulk_ship.c says how and why it is
 * safe; service.h the PAGES job; kernels/gs_pages.h the page references).
 */
#ifndef GS_BULK_SHIP_H
#define GS_BULK_SHIP_H

#include "postgres.h"

#include "access/heapam.h"

#include "base/types.h"
#include "scan/bulk_fetch.h"
#include "state/state.h"

typedef struct GsBulkShip GsBulkShip;

/* a shipper for column attno of desc, in cxt; NULL when the column cannot
 * be shipped (a variable-length column before it, past GS_PAGE_MAX_ATTS)
 * or the service is not running */
extern GsBulkShip *gs_bulk_ship_create(MemoryContext cxt, TupleDesc desc, AttrNumber attno,
									   GsTypeKind tkind);
/* the page heap_getnext is on (its visible tuples from rs_cindex on): pinned
 * and listed in the current batch; true when the batch is full (flush) */
extern bool gs_bulk_ship_page(GsBulkShip *sp, HeapScanDesc hs);
/* the scan's own page loop (bulk_scan.c): whether it may read rel's pages
 * for snapshot, and one pinned buffer's page checked and listed, its pin
 * taken over (bulk_ship.c says how); true when the batch is full (flush) */
extern bool gs_bulk_ship_own_pages(Relation rel, Snapshot snapshot);
extern bool gs_bulk_ship_take_page(GsBulkShip *sp, Relation rel, Buffer buf,
								   Snapshot snapshot, int *ntuples, bool *all_visible);
/* the current batch to the service without waiting (or its keys extracted
 * here, through col, when the service does not take it); then the next
 * batch, collected first if still in flight: its keys into st, its pins
 * released; *pages_shipped += the pages the service extracted */
extern void gs_bulk_ship_flush(GsBulkShip *sp, GsState *st, const GsBulkColumn *col,
							   TupleDesc desc, Oid relid, uint64 *pages_shipped);
/* the scan's end: flush, then every batch in flight collected */
extern void gs_bulk_ship_finish(GsBulkShip *sp, GsState *st, const GsBulkColumn *col,
								TupleDesc desc, Oid relid, uint64 *pages_shipped);
/* rescan or end: the jobs in flight given up, every pin released (no keys) */
extern void gs_bulk_ship_discard(GsBulkShip *sp);

#endif							/* GS_BULK_SHIP_H */
