/*
 * service_pool.c — the GPU service's key pool (service.h): its free list.
 * A job's chunks taken all or nothing, a chunk put back, each chunk's
 * generation and sealing for the service's prefetch, and a job's chunk
 * list read and written as one byte range.  Who waits for chunks, and a
 * job's chunks given back (which wakes the waiters), is
 * service_pool_queue.c's; the chunks scans hold and lease,
 * service_pool_held.c's (service_pool.h: what the three share).  This file
 * calls neither: it is the bottom of the three.
 *
 * Plain shared memory bookkeeping under the pool lock; nothing here raises
 * an ERROR, no CUDA.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include <sys/mman.h>
#include <unistd.h>

#include "storage/latch.h"

#include "base/guc.h"
#include "service/service.h"
#include "service/service_pool.h"

int
gs_pool_alloc(int n, int job)
{
	GsSvcControl *c = gs_svc_ctl;
	int			head = -1;

	if (n <= 0)
		return -1;
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	/* first come, first served: nobody passes a waiter */
	if (c->nwaiting == 0)
		head = gs_pool_alloc_locked(n, job);
	LWLockRelease(c->lock);
	return head;
}

/* n chunks for job (the pool lock held), -1 when fewer are free */
int
gs_pool_alloc_locked(int n, int job)
{
	GsSvcControl *c = gs_svc_ctl;
	int			head = -1;

	if (c->nfree >= n)
	{
		int			prev = -1;

		for (int i = 0; i < n; i++)
		{
			int			idx = c->free_head;

			Assert(idx >= 0 && idx < c->nchunks);
			c->free_head = gs_svc_chunks[idx].next;
			gs_svc_chunks[idx].job = job;
			gs_svc_chunks[idx].next = -1;
			gs_svc_chunks[idx].held = false;
			gs_svc_chunks[idx].leased = false;
			gs_svc_chunks[idx].holder_pid = 0;
			gs_svc_chunks[idx].nkeys = 0;
			if (prev < 0)
				head = idx;
			else
				gs_svc_chunks[prev].next = idx;
			prev = idx;
		}
		c->nfree -= n;
		pg_atomic_fetch_add_u64(&c->bytes_in_use, (uint64) n * c->chunk_bytes);
	}
	return head;
}

/* tell the service that a chunk was sealed, or a sealed one went (prefetch) */
static void
gs_pool_prefetch_wake(void)
{
	PGPROC	   *svc;

	if (pg_atomic_exchange_u32(&gs_svc_ctl->prefetch_pending, 1) != 0)
		return;					/* pending already: the service was woken */
	svc = gs_svc_ctl->svc_proc;
	if (svc != NULL)
		SetLatch(&svc->procLatch);
}

/*
 * Prefetch (service.h, GsSvcChunk): a new generation of chunk idx (taken
 * or freed, the pool lock held).  A device copy of the old one is stale
 * now: the service drops it on its next round.
 */
void
gs_pool_next_gen(int idx)
{
	GsSvcChunk *k = &gs_svc_chunks[idx];
	uint32		gen = pg_atomic_read_u32(&k->gen);

	if (pg_atomic_read_u32(&k->sealed) == gen)
		gs_pool_prefetch_wake();
	/* 0 is never a generation: sealed = 0 means never sealed */
	pg_atomic_write_u32(&k->gen, gen + 1 == 0 ? 1 : gen + 1);
}

/* one chunk back to the free list (the pool lock held) */
void
gs_pool_put(int idx)
{
	GsSvcControl *c = gs_svc_ctl;

	if (gs_svc_chunks[idx].held)
		pg_atomic_fetch_sub_u64(&c->scan_bytes, c->chunk_bytes);
	gs_pool_next_gen(idx);
	if (gs_svc_chunks[idx].leased && gs_svc_chunks[idx].job >= 0 &&
		gs_svc_chunks[idx].job < c->njobs)
		pg_atomic_fetch_sub_u32(&gs_svc_jobs[gs_svc_chunks[idx].job].nleased, 1);
	gs_svc_chunks[idx].job = -1;
	gs_svc_chunks[idx].held = false;
	gs_svc_chunks[idx].leased = false;
	gs_svc_chunks[idx].lease_gen = 0;
	gs_svc_chunks[idx].holder_pid = 0;
	gs_svc_chunks[idx].nkeys = 0;
	gs_svc_chunks[idx].next = c->free_head;
	c->free_head = idx;
	c->nfree++;
	pg_atomic_fetch_sub_u64(&c->bytes_in_use, c->chunk_bytes);
}

uint64
gs_service_prefetch_bytes(void)
{
	GsSvcControl *c = gs_svc_ctl;
	uint64		pool;

	if (c == NULL || gs_guc_service_prefetch_size == 0)
		return 0;
	/* the copies are of held chunks: never more than the pool */
	pool = (uint64) c->nchunks * c->chunk_bytes;
	if (gs_guc_service_prefetch_size < 0)
		return pool;
	return Min(pool, (uint64) gs_guc_service_prefetch_size << 20);
}

/*
 * Held chunk idx is full and its holder will never write it again (a scan
 * moving on to its next chunk, a leader adopting a worker's chunk): the
 * service may copy it now.  The keys are written before the mark.
 */
void
gs_pool_seal(int idx)
{
	GsSvcChunk *k;

	if (idx < 0 || idx >= gs_svc_ctl->nchunks || gs_service_prefetch_bytes() == 0 ||
		!gs_guc_test_service_prefetch)
		return;
	k = &gs_svc_chunks[idx];
	if (!k->held)
		return;
	pg_write_barrier();
	pg_atomic_write_u32(&k->sealed, pg_atomic_read_u32(&k->gen));
	gs_pool_prefetch_wake();
}

/*
 * Pool memory this backend is about to write, its page tables made
 * writable in one call (gpuselect.prefault_pool_chunks): the pool is
 * shared memory each backend maps on first touch, and a backend that
 * fills chunks at memory speed otherwise takes a page fault per 4 kB of
 * them -- a scan's chunks, and a final call's job chunks, which a new
 * session has never touched.  MADV_POPULATE_WRITE (Linux 5.14) changes no
 * byte; an older kernel's EINVAL leaves the faults to happen as before.
 */
char *
gs_pool_prefault(char *mem, Size bytes)
{
#ifdef MADV_POPULATE_WRITE
	if (gs_guc_prefault_pool_chunks)
	{
		uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
		uintptr_t	start = TYPEALIGN_DOWN(page, (uintptr_t) mem);
		uintptr_t	end = TYPEALIGN(page, (uintptr_t) mem + bytes);

		(void) madvise((void *) start, end - start, MADV_POPULATE_WRITE);
	}
#endif
	return mem;
}

char *
gs_pool_chunk(int idx, int job)
{
	if (idx < 0 || idx >= gs_svc_ctl->nchunks || gs_svc_chunks[idx].job != job)
		return NULL;
	return gs_svc_pool + (Size) idx * gs_svc_ctl->chunk_bytes;
}

bool
gs_pool_copy(int head, int job, Size off, void *buf, Size len, bool to_pool)
{
	Size		cb = gs_svc_ctl->chunk_bytes;
	int			idx = head;
	int			steps = 0;
	char	   *b = (char *) buf;

	while (len > 0)
	{
		char	   *mem = gs_pool_chunk(idx, job);

		if (mem == NULL || ++steps > gs_svc_ctl->nchunks)
			return false;
		if (off >= cb)
			off -= cb;
		else
		{
			Size		piece = Min(len, cb - off);

			if (to_pool)
				memcpy(mem + off, b, piece);
			else
				memcpy(b, mem + off, piece);
			b += piece;
			len -= piece;
			off = 0;
		}
		idx = gs_svc_chunks[idx].next;
	}
	return true;
}
