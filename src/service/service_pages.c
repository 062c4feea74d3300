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
 * Stage 1 extracts on this (the main) thread's CPU, in cpu_test and on
 * alike: CI exercises the protocol and the pins.  Stage 2 hands the pages
 * to a lane, which copies them to its device and extracts there
 * (gs_cuda_extract_pages, kernels/cuda/gs_pass_pages.cuh).
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

/* the keys of every listed tuple into out (room for job->nkeys) */
static bool
gs_svc_pages_extract(GsSvcJob *job, const char *refs, void *out, gs_error *err)
{
	Size		pos = 0;
	uint64		listed = 0;
	uint64		n = 0;

	for (uint32 p = 0; p < job->npages; p++)
	{
		gs_page_ref r;
		const uint16 *offsets;

		if (pg_atomic_read_u32(&job->state) == GS_JOB_ABANDONED)
			return gs_svc_pages_fail(err, "abandoned");
		if (pos + sizeof(gs_page_ref) > job->ref_bytes)
			return gs_svc_pages_fail(err, "request does not match its chunks");
		memcpy(&r, refs + pos, sizeof(r));
		if (pos + gs_page_ref_bytes(&r) > job->ref_bytes ||
			r.noffsets > MaxHeapTuplesPerPage || listed + r.noffsets > job->nkeys)
			return gs_svc_pages_fail(err, "request does not match its chunks");
		if (!gs_svc_pages_buffer_ok(&r))
			return gs_svc_pages_fail(err, "a page reference is not a pinned buffer of its block");
		offsets = (const uint16 *) (refs + pos + sizeof(gs_page_ref));
		if (gs_page_extract_cpu((const uint8 *) BufferGetPage((Buffer) r.buffer), BLCKSZ,
								&r, offsets, &job->column, out, &n) != 0)
			return gs_svc_pages_fail(err, "a listed tuple does not fit its page");
		listed += r.noffsets;
		pos += gs_page_ref_bytes(&r);
	}
	job->out_keys = n;
	return true;
}

/*
 * Job j, RUNNING on this thread: check the request, extract, and write the
 * keys into the job's key chunks (after its io chunks), each chunk's count
 * in its descriptor.
 */
bool
gs_svc_pages_run(int j, GsSvcJob *job, gs_error *err)
{
	Size		cb = gs_svc_ctl->chunk_bytes;
	unsigned	kb = job->column.key_bytes;
	uint64		per_chunk;
	char	   *refs;
	char	   *out;
	uint64		left;
	int			idx;

	err->status = GS_OK;
	job->out_keys = 0;
	if (!gs_svc_pages_itemid_ok())
		return gs_svc_pages_fail(err, "this build's line pointer layout is not gs_pages.h's");
	if (!gs_svc_pages_column_ok(&job->column) || job->key_bytes != kb ||
		job->npages == 0 || job->io_chunks <= 0 || job->key_chunks <= 0 ||
		job->io_chunks + job->key_chunks != job->nchunks ||
		job->nchunks > gs_svc_ctl->nchunks ||
		job->ref_bytes > (uint64) job->io_chunks * cb)
		return gs_svc_pages_fail(err, "malformed request");
	per_chunk = cb / kb;
	if (job->nkeys == 0 || job->nkeys > (uint64) job->key_chunks * per_chunk)
		return gs_svc_pages_fail(err, "request does not match its chunks");

	/*
	 * gpuselect.test_service_delay (tests: a cancel while the service holds
	 * the job): on this thread, so it holds up the service's loop too
	 */
	for (int waited = 0; waited < job->delay_ms &&
		 pg_atomic_read_u32(&job->state) != GS_JOB_ABANDONED; waited += 10)
		pg_usleep(10000L);

	if (job->fault != GS_SVC_FAULT_NONE)
		return gs_svc_pages_fail(err, "injected failure (gpuselect.test_service_fault)");

	refs = palloc(job->ref_bytes);
	out = palloc((Size) job->nkeys * kb);
	if (!gs_pool_copy(job->head, j, 0, refs, job->ref_bytes, false))
		return gs_svc_pages_fail(err, "bad chunk list");
	if (!gs_svc_pages_extract(job, refs, out, err))
		return false;

	/* the keys into the key chunks, full ones first */
	if (!gs_pool_copy(job->head, j, (Size) job->io_chunks * cb, out,
					  (Size) job->out_keys * kb, true))
		return gs_svc_pages_fail(err, "bad chunk list");
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
