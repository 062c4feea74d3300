/*
 * bulk_fetch.h — one column of a heap tuple, read the fast way where the
 * tuple allows it: at the column's fixed offset when no column before it is
 * variable-length and the tuple has no NULLs and all its columns (what
 * heap_getattr's own cached offset needs), else through heap_getattr (NULL
 * bitmap, attmissingval of a column added later).
 */
#ifndef GS_BULK_FETCH_H
#define GS_BULK_FETCH_H

#include "postgres.h"
#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "access/tupmacs.h"
#include "storage/bufpage.h"

typedef struct GsBulkColumn
{
	AttrNumber	attno;
	int			offset;			/* in a tuple without NULLs; -1: none */
	bool		byval;
	int16		len;
} GsBulkColumn;

extern void gs_bulk_column_init(GsBulkColumn *c, TupleDesc desc, AttrNumber attno);

static inline Datum
gs_bulk_fetch(const GsBulkColumn *c, HeapTuple tup, TupleDesc desc, bool *isnull)
{
	HeapTupleHeader th = tup->t_data;

	if (likely(c->offset >= 0 && !HeapTupleHasNulls(tup) &&
			   HeapTupleHeaderGetNatts(th) >= c->attno))
	{
		*isnull = false;
		return fetch_att((char *) th + th->t_hoff + c->offset, c->byval, c->len);
	}
	return heap_getattr(tup, c->attno, desc, isnull);
}

/*
 * Ask the CPU to start loading the visible tuple at line pointer off while
 * the loop works on earlier ones (the page loops of bulk_scan.c).  A page
 * marked all-visible is listed by page mode from its line pointers alone, so
 * its tuples are not in cache when the loop reaches them, and shared buffers
 * are far larger than the cache: without the hint each row waits on memory
 * at its first load (the header's t_infomask).  A hint only: no fault, no
 * behaviour; a no-op where the compiler has no __builtin_prefetch.
 */
static inline void
gs_bulk_prefetch_tuple(Page page, OffsetNumber off)
{
#if defined(__GNUC__) || defined(__clang__)
	__builtin_prefetch((char *) page + ItemIdGetOffset(PageGetItemId(page, off)));
#endif
}

#endif							/* GS_BULK_FETCH_H */
