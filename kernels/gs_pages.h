/*
 * gs_pages.h — keys read straight out of heap page images (issue #31, page
 * shipping): the contract between the backend that checked a page's tuples
 * against its snapshot and whoever extracts the aggregated column from the
 * page (the GPU service's CPU in stage 1, a device kernel in stage 2).
 *
 * Why: the bulk scan's serial time is bounded by the backend's per-tuple
 * extraction (a cache miss per tuple).  Shipping the page (a buffer id and
 * the visible line pointers the backend checked) moves that work elsewhere;
 * test/bench/results/gpu-2026-11-27-session21.md has the figures.
 *
 * What a reader needs: the column's layout (gs_page_column) -- every column
 * up to the aggregated one is fixed-length (dropped ones included: their
 * attlen and attalign stay in the catalog and their bytes in old tuples), so
 * a tuple's column offset follows from its NULL bitmap alone -- and the key
 * mapping of gs_keys.h.  A tuple with fewer attributes than the column (the
 * column added later) has the column's attmissingval, or NULL.
 *
 * The heap format is restated here as numbers, since this header has no
 * PostgreSQL (the GPU kernels include it): the service checks them against
 * PostgreSQL's own headers at compile time (service_pages.c), so a change of
 * format fails the build instead of reading garbage.  Every read is bounds-
 * checked against the page, so a damaged (or, after an abandoned job, a
 * reused) page gives GS_PAGE_BAD, never a read outside it.
 *
 * Plain C, header-only, no PostgreSQL; usable in .cu files.
 */
#ifndef GS_PAGES_H
#define GS_PAGES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gs_keys.h"

/* columns 1..attnum a page job can describe */
#define GS_PAGE_MAX_ATTS 32

/* the heap format (PostgreSQL 15-18; service_pages.c asserts each) */
#define GS_PAGE_HEADER_BYTES 24		/* SizeOfPageHeaderData */
#define GS_PAGE_PD_LOWER 12			/* offsetof(PageHeaderData, pd_lower) */
#define GS_PAGE_LP_NORMAL 1
#define GS_TUP_INFOMASK2 18			/* offsetof(HeapTupleHeaderData, t_infomask2) */
#define GS_TUP_INFOMASK 20
#define GS_TUP_HOFF 22
#define GS_TUP_BITS 23				/* offsetof(HeapTupleHeaderData, t_bits) */
#define GS_TUP_HASNULL 0x0001		/* HEAP_HASNULL */
#define GS_TUP_NATTS_MASK 0x07FF	/* HEAP_NATTS_MASK */

#if defined(__CUDACC__)
#define GS_PAGE_FN static inline __host__ __device__
#else
#define GS_PAGE_FN static inline
#endif

/* the aggregated column and the columns before it */
typedef struct gs_page_column
{
	uint16_t	attnum;			/* 1-based, <= GS_PAGE_MAX_ATTS */
	uint16_t	key_bytes;		/* 2, 4 or 8: the column's attlen */
	uint8_t		is_float;		/* float4/float8 key mapping, else integer */
	uint8_t		has_missing;	/* a tuple without the column: missing_key */
	uint64_t	missing_key;	/* ... else such a tuple is NULL */
	int16_t		attlen[GS_PAGE_MAX_ATTS];	/* columns 1..attnum, each > 0 */
	uint8_t		attalign[GS_PAGE_MAX_ATTS]; /* bytes: 1, 2, 4 or 8 */
} gs_page_column;

/*
 * One page of a request (packed one after another, each 4-byte aligned):
 * the header, then noffsets line pointer numbers, unless GS_PAGE_DENSE says
 * they are 1..noffsets (a page whose every line pointer was visible).
 */
typedef struct gs_page_ref
{
	uint32_t	buffer;			/* the shared buffer (1-based, PostgreSQL's Buffer) */
	uint32_t	block;			/* the block it holds (checked by the service) */
	uint16_t	noffsets;
	uint16_t	flags;
} gs_page_ref;

#define GS_PAGE_DENSE 0x0001

static inline size_t
gs_page_ref_bytes(const gs_page_ref *r)
{
	size_t		n = (r->flags & GS_PAGE_DENSE) ? 0 : r->noffsets;

	return sizeof(gs_page_ref) + ((n * sizeof(uint16_t) + 3) & ~(size_t) 3);
}

/* one listed tuple of a device batch (gs_cuda_extract_pages): the page's
 * index in the batch (high 16 bits) and its line pointer number (low 16) */
#define GS_PAGE_ITEM(page, off) (((uint32_t) (page) << 16) | (uint32_t) (off))

/* what reading one tuple gives */
#define GS_PAGE_KEY 1
#define GS_PAGE_NULL 0
#define GS_PAGE_BAD (-1)

GS_PAGE_FN uint64_t
gs_page_key_of(const uint8_t *p, const gs_page_column *c)
{
	if (c->key_bytes == 2)
	{
		int16_t		v;

		memcpy(&v, p, 2);
		return gs_key_from_int16(v);
	}
	if (c->key_bytes == 4)
	{
		uint32_t	b;

		memcpy(&b, p, 4);
		return c->is_float ? gs_key_from_float4_bits(b) : gs_key_from_int32((int32_t) b);
	}
	{
		uint64_t	b;

		memcpy(&b, p, 8);
		return c->is_float ? gs_key_from_float8_bits(b) : gs_key_from_int64((int64_t) b);
	}
}

/*
 * The key of the column in the tuple at line pointer off (1-based) of a
 * page of page_bytes: GS_PAGE_KEY (*key set), GS_PAGE_NULL, or GS_PAGE_BAD
 * when the line pointer or tuple does not fit the page.
 */
GS_PAGE_FN int
gs_page_tuple_key(const uint8_t *page, size_t page_bytes, uint16_t off,
				  const gs_page_column *c, uint64_t *key)
{
	uint16_t	lower;
	uint32_t	lp;
	uint32_t	lp_off,
				lp_len;
	const uint8_t *t;
	uint16_t	infomask2,
				infomask,
				natts;
	uint32_t	hoff,
				pos = 0;

	memcpy(&lower, page + GS_PAGE_PD_LOWER, 2);
	if (off == 0 || lower > page_bytes ||
		GS_PAGE_HEADER_BYTES + (size_t) off * 4 > lower)
		return GS_PAGE_BAD;
	memcpy(&lp, page + GS_PAGE_HEADER_BYTES + ((size_t) off - 1) * 4, 4);
	/* ItemIdData: lp_off:15, lp_flags:2, lp_len:15, low bits first */
	lp_off = lp & 0x7FFF;
	lp_len = lp >> 17;
	if (((lp >> 15) & 3) != GS_PAGE_LP_NORMAL || lp_len < GS_TUP_BITS ||
		(size_t) lp_off + lp_len > page_bytes)
		return GS_PAGE_BAD;
	t = page + lp_off;
	memcpy(&infomask2, t + GS_TUP_INFOMASK2, 2);
	memcpy(&infomask, t + GS_TUP_INFOMASK, 2);
	hoff = t[GS_TUP_HOFF];
	natts = infomask2 & GS_TUP_NATTS_MASK;
	if (hoff < GS_TUP_BITS || hoff > lp_len)
		return GS_PAGE_BAD;
	if (natts < c->attnum)
	{
		/* the column was added after this tuple was written */
		*key = c->missing_key;
		return c->has_missing ? GS_PAGE_KEY : GS_PAGE_NULL;
	}
	if (infomask & GS_TUP_HASNULL)
	{
		const uint8_t *bits = t + GS_TUP_BITS;

		if (GS_TUP_BITS + ((size_t) c->attnum + 7) / 8 > hoff)
			return GS_PAGE_BAD;
		/* the offset follows from the NULLs before the column */
		for (int i = 0; i < c->attnum; i++)
		{
			uint32_t	al = c->attalign[i];

			if (!(bits[i >> 3] & (1 << (i & 7))))
			{
				if (i == c->attnum - 1)
					return GS_PAGE_NULL;
				continue;
			}
			pos = (pos + al - 1) & ~(al - 1);
			if (i < c->attnum - 1)
				pos += (uint32_t) c->attlen[i];
		}
	}
	else
	{
		for (int i = 0; i < c->attnum; i++)
		{
			uint32_t	al = c->attalign[i];

			pos = (pos + al - 1) & ~(al - 1);
			if (i < c->attnum - 1)
				pos += (uint32_t) c->attlen[i];
		}
	}
	if ((size_t) hoff + pos + c->key_bytes > lp_len)
		return GS_PAGE_BAD;
	*key = gs_page_key_of(t + hoff + pos, c);
	return GS_PAGE_KEY;
}

/* a key of c->key_bytes stored at index i of out */
GS_PAGE_FN void
gs_page_store_key(void *out, uint64_t i, uint64_t key, unsigned key_bytes)
{
	if (key_bytes == 2)
		((uint16_t *) out)[i] = (uint16_t) key;
	else if (key_bytes == 4)
		((uint32_t *) out)[i] = (uint32_t) key;
	else
		((uint64_t *) out)[i] = key;
}

/*
 * The CPU extraction of one page (the reference the device's is checked
 * against, and the service's in stage 1): the keys of the listed tuples,
 * NULLs skipped, appended to out at *n (room for noffsets more).  0, or
 * GS_PAGE_BAD at the first tuple that does not fit the page.
 */
static inline int
gs_page_extract_cpu(const uint8_t *page, size_t page_bytes, const gs_page_ref *r,
					const uint16_t *offsets, const gs_page_column *c, void *out, uint64_t *n)
{
	for (uint32_t i = 0; i < r->noffsets; i++)
	{
		uint16_t	off = (r->flags & GS_PAGE_DENSE) ? (uint16_t) (i + 1) : offsets[i];
		uint64_t	key;
		int			got = gs_page_tuple_key(page, page_bytes, off, c, &key);

		if (got == GS_PAGE_BAD)
			return GS_PAGE_BAD;
		if (got == GS_PAGE_KEY)
			gs_page_store_key(out, (*n)++, key, c->key_bytes);
	}
	return 0;
}

#endif							/* GS_PAGES_H */
