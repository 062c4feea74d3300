/*
 * service_pages.c — the service's side of a PAGES job (issue #31, page
 * shipping; service.h has the job's layout, kernels/gs_pages.h the page
 * references and the extraction).
 *
 * The owner, a bulk scan, checked each page's tuples against its snapshot
 * under the buffer's share lock and sends the buffer id, the block and the
 * visible line pointers; it keeps its own pin on every such buffer until
 * this job is answered (or freed, after it abandoned the job).  Why reading
 * those tuples here without any lock is safe: a pinned buffer is never
 * evicted or replaced, and while a pin is held nothing moves a tuple's data
 * -- pruning and defragmenting a page need a cleanup lock, which a pin
 * blocks -- nor reuses its line pointer (only pruning or VACUUM frees one).
 * A concurrent writer may add tuples (new or reused line pointers; we read
 * only the ones listed), set hint bits or xmax in a header (not the
 * bytes read here: the attribute count, HEAP_HASNULL, t_hoff, the NULL
 * bitmap and the data never change in place for a heap tuple).
 *
 * The service checks what it can: each buffer id is in range, holds the
 * block named and is pinned by someone.  If the owner abandoned the job
 * (cancel, ERROR, exit), its pins go with its resource owner while this may
 * still be reading: every read is bounds-checked against the page
 * (gs_page_tuple_key), so a reused buffer gives garbage keys or
 * GS_PAGE_BAD for an answer that is dropped anyway, never a read outside
 * shared buffers; and the loop stops at the next page once it sees the job
 * abandoned.
 *
 * The main thread checks the request and the buffers here and hands the
 * job to a lane (service_main.c), whose device reads the pages where they
 * lie and extracts there (gs_svc_cuda_extract_pages), or whose thread
 * extracts on the CPU (cpu_test, the test hook, a device that cannot map
 * shared buffers); the lane writes the keys straight into the job's key
 * chunks (their addresses are in its work), and the main thread then only
 * counts them into the chunks' descriptors here.  A buffer the owner
 * unpinned after it abandoned the job may be read meanwhile: memory of
 * shared buffers all the same, and bounds-checked.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/htup_details.h"
#include "miscadmin.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/itemid.h"

#include "service/service.h"
#include "service/service_lanes.h"

/* gs_pages.h restates the heap format: the build fails if it is not this one */
StaticAssertDecl(SizeOfPageHeaderData == GS_PAGE_HEADER_BYTES, "page header size");
StaticAssertDecl(offsetof(PageHeaderData, pd_lower) == GS_PAGE_PD_LOWER, "pd_lower");
StaticAssertDecl(sizeof(ItemIdData) == 4, "line pointer size");
StaticAssertDecl(LP_NORMAL == GS_PAGE_LP_NORMAL, "LP_NORMAL");
StaticAssertDecl(offsetof(HeapTupleHeaderData, t_infomask2) == GS_TUP_INFOMASK2, "t_infomask2");
StaticAssertDecl(offsetof(HeapTupleHeaderData, t_infomask) == GS_TUP_INFOMASK, "t_infomask");
StaticAssertDecl(offsetof(HeapTupleHeaderData, t_hoff) == GS_TUP_HOFF, "t_hoff");
StaticAssertDecl(offsetof(HeapTupleHeaderData, t_bits) == GS_TUP_BITS, "t_bits");
StaticAssertDecl(HEAP_HASNULL == GS_TUP_HASNULL, "HEAP_HASNULL");
StaticAssertDecl(HEAP_NATTS_MASK == GS_TUP_NATTS_MASK, "HEAP_NATTS_MASK");

/* the line pointer's bit layout, which a static assertion cannot see */
static bool
gs_svc_pages_itemid_ok(void)
{
	ItemIdData	id;
	uint32		raw;

	ItemIdSetNormal(&id, 4000, 123);
	memcpy(&raw, &id, sizeof(raw));
	return raw == (4000u | ((uint32) GS_PAGE_LP_NORMAL << 15) | (123u << 17));
}

static bool
gs_svc_pages_fail(gs_error *err, const char *what)
{
	err->status = GS_ERR_INVALID;
	snprintf(err->message, sizeof(err->message), "%s", what);
	return false;
}

/* the column description is one gs_page_tuple_key can read by */
static bool
gs_svc_pages_column_ok(const gs_page_column *c)
{
	if (c->attnum < 1 || c->attnum > GS_PAGE_MAX_ATTS ||
		(c->key_bytes != 2 && c->key_bytes != 4 && c->key_bytes != 8) ||
		c->attlen[c->attnum - 1] != c->key_bytes || (c->is_float && c->key_bytes == 2))
		return false;
	for (int i = 0; i < c->attnum; i++)
	{
		uint8		al = c->attalign[i];

		if (c->attlen[i] <= 0 || (al != 1 && al != 2 && al != 4 && al != 8))
			return false;
	}
	return true;
}

/* buffer holds block and someone pins it (the owner, we trust, but verify) */
static bool
gs_svc_pages_buffer_ok(const gs_page_ref *r)
{
	BufferDesc *desc;
	uint32		state;

	if (r->buffer < 1 || r->buffer > (uint32) NBuffers)
		return false;
	desc = GetBufferDescriptor(r->buffer - 1);
	state = pg_atomic_read_u32(&desc->state);
	return BUF_STATE_GET_REFCOUNT(state) > 0 && (state & BM_VALID) &&
		desc->tag.blockNum == r->block;
}

/*
 * The references into w->pages: each page's offset in shared buffers (its
 * buffer checked) and an item per listed tuple for the device.
 */
static bool
gs_svc_pages_index(GsSvcJob *job, const char *refs, gs_lane_pages *pg, gs_error *err)
{
	Size		pos = 0;
	uint64		listed = 0;
	uint64	   *page_off = palloc(sizeof(uint64) * job->npages);
	uint32	   *items = palloc(sizeof(uint32) * job->nkeys);

	for (uint32 p = 0; p < job->npages; p++)
	{
		gs_page_ref r;
		const uint16 *offsets;

		if (pos + sizeof(gs_page_ref) > job->ref_bytes)
			return gs_svc_pages_fail(err, "request does not match its chunks");
		memcpy(&r, refs + pos, sizeof(r));
		if (pos + gs_page_ref_bytes(&r) > job->ref_bytes ||
			r.noffsets > MaxHeapTuplesPerPage || listed + r.noffsets > job->nkeys)
			return gs_svc_pages_fail(err, "request does not match its chunks");
		if (!gs_svc_pages_buffer_ok(&r))
			return gs_svc_pages_fail(err, "a page reference is not a pinned buffer of its block");
		offsets = (const uint16 *) (refs + pos + sizeof(gs_page_ref));
		page_off[p] = (uint64) ((char *) BufferGetPage((Buffer) r.buffer) - BufferBlocks);
		for (int i = 0; i < r.noffsets; i++)
			items[listed + i] = GS_PAGE_ITEM(p, (r.flags & GS_PAGE_DENSE) ? i + 1 : offsets[i]);
		listed += r.noffsets;
		pos += gs_page_ref_bytes(&r);
	}
	pg->page_off = page_off;
	pg->items = items;
	pg->nitems = (size_t) listed;
	return true;
}

/* the job's key chunks (after its io chunks), where the lane writes the keys */
static bool
gs_svc_pages_segments(int j, GsSvcJob *job, gs_lane_pages *pg, gs_error *err)
{
	int			idx = job->head;

	pg->segs = palloc(sizeof(void *) * job->key_chunks);
	pg->seg_keys = palloc(sizeof(size_t) * job->key_chunks);
	pg->nsegs = (size_t) job->key_chunks;
	for (int i = 0; i < job->io_chunks + job->key_chunks; i++)
	{
		char	   *mem = gs_pool_chunk(idx, j);

		if (mem == NULL)
			return gs_svc_pages_fail(err, "bad chunk list");
		if (i >= job->io_chunks)
		{
			pg->segs[i - job->io_chunks] = mem;
			pg->seg_keys[i - job->io_chunks] = gs_svc_ctl->chunk_bytes / job->column.key_bytes;
		}
		idx = gs_svc_chunks[idx].next;
	}
	return true;
}

/*
 * Job j, RUNNING on the main thread: check the request and its buffers and
 * describe it for a lane in w->pages (memory of the current context, which
 * outlives the lane's work).  False, err set: answer it failed.
 */
bool
gs_svc_pages_prepare(int j, GsSvcJob *job, gs_lane_work *w, gs_error *err)
{
	Size		cb = gs_svc_ctl->chunk_bytes;
	unsigned	kb = job->column.key_bytes;
	gs_lane_pages *pg = &w->pages;
	char	   *refs;

	err->status = GS_OK;
	if (!gs_svc_pages_itemid_ok())
		return gs_svc_pages_fail(err, "this build's line pointer layout is not gs_pages.h's");
	if (!gs_svc_pages_column_ok(&job->column) || job->key_bytes != kb ||
		job->npages == 0 || job->npages > 65536 || job->io_chunks <= 0 ||
		job->key_chunks <= 0 || job->io_chunks + job->key_chunks != job->nchunks ||
		job->nchunks > gs_svc_ctl->nchunks ||
		job->ref_bytes > (uint64) job->io_chunks * cb)
		return gs_svc_pages_fail(err, "malformed request");
	if (job->nkeys == 0 || job->nkeys > (uint64) job->key_chunks * (cb / kb))
		return gs_svc_pages_fail(err, "request does not match its chunks");
	if (job->fault != GS_SVC_FAULT_NONE)
		return gs_svc_pages_fail(err, "injected failure (gpuselect.test_service_fault)");

	refs = palloc(job->ref_bytes);
	if (!gs_pool_copy(job->head, j, 0, refs, job->ref_bytes, false))
		return gs_svc_pages_fail(err, "bad chunk list");
	if (!gs_svc_pages_index(job, refs, pg, err))
		return false;
	pg->npages = job->npages;
	pg->base = BufferBlocks;
	pg->base_bytes = (size_t) NBuffers * BLCKSZ;
	pg->page_bytes = BLCKSZ;
	pg->refs = refs;
	pg->ref_bytes = job->ref_bytes;
	pg->column = job->column;
	pg->on_cpu = job->pages_on_cpu;
	return gs_svc_pages_segments(j, job, pg, err);
}

/*
 * The lane wrote its keys into job j's key chunks in order, each filled
 * before the next: each chunk's count into its descriptor, out_keys the
 * total.
 */
bool
gs_svc_pages_store(int j, GsSvcJob *job, const gs_lane_work *w, gs_error *err)
{
	uint64		per_chunk = gs_svc_ctl->chunk_bytes / job->column.key_bytes;
	uint64		left;
	int			idx;

	err->status = GS_OK;
	if (w->pages.nkeys > job->nkeys)
		return gs_svc_pages_fail(err, "more keys than listed tuples");
	job->out_keys = w->pages.nkeys;
	idx = job->head;
	for (int i = 0; i < job->io_chunks; i++)
	{
		if (gs_pool_chunk(idx, j) == NULL)
			return gs_svc_pages_fail(err, "bad chunk list");
		idx = gs_svc_chunks[idx].next;
	}
	left = job->out_keys;
	for (int i = 0; i < job->key_chunks; i++)
	{
		if (gs_pool_chunk(idx, j) == NULL)
			return gs_svc_pages_fail(err, "bad chunk list");
		gs_svc_chunks[idx].nkeys = (uint32) Min(left, per_chunk);
		left -= gs_svc_chunks[idx].nkeys;
		idx = gs_svc_chunks[idx].next;
	}
	return true;
}
