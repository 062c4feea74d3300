/*
 * service_pool_queue.c — the key pool's queue: backends whose job found
 * too few free chunks wait here, in arrival order, for all of them at
 * once (the comment below says why that cannot deadlock); and a job's
 * chunks given back (gs_pool_free_list), which wakes the first of them, as
 * service_pool_held.c's frees do.  The free list itself is
 * service_pool.c's, which knows nothing of the queue.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "storage/latch.h"

#include "service/service.h"
#include "service/service_pool.h"

/*
 * The pool's queue.  A backend whose job finds too few free chunks gives
 * back every chunk it holds (service_client.c, gs_service_scan_unload_all)
 * -- unless nobody waits yet: the first in line keeps them
 * (gs_pool_queue_join_first) -- and then waits here for all the chunks of
 * its job at once, so no backend ever waits while it holds chunks another
 * waiter needs (the
 * hold-and-wait of issue #29: three scans each holding a third of the
 * pool, each final call waiting for the others' chunks).  Tickets serve
 * the waiters in arrival order: only the first in line may take chunks,
 * and while anyone waits, gs_pool_alloc and the scans' chunks (held and
 * leased) take none either, so a large job is not starved by small ones
 * and every holder's chunks end up back in the pool: each holder is a
 * running scan (its final call then joins the queue or gets its chunks), a
 * running job, or a state of a query that is not running (a cursor; a
 * waiter's own are unloaded first).  A waiter polls too (50 ms), so a
 * wake-up lost to a race costs a little time, never the wait.
 */

/* the first live waiter (the pool lock held exclusively): its slot, -1 if
 * none; a waiter whose backend is gone without its exit cleanup is dropped */
static int
gs_pool_queue_first(void)
{
	GsSvcControl *c = gs_svc_ctl;
	int			first = -1;
	uint64		best = PG_UINT64_MAX;

	if (c->nwaiting <= 0)
		return -1;
	for (int j = 0; j < c->njobs; j++)
	{
		GsSvcJob   *job = &gs_svc_jobs[j];

		if (job->wait_ticket == 0)
			continue;
		if (job->owner_proc == NULL || job->owner_proc->pid != job->owner_pid)
		{
			job->wait_ticket = 0;
			c->nwaiting--;
			continue;
		}
		if (job->wait_ticket < best)
		{
			best = job->wait_ticket;
			first = j;
		}
	}
	return first;
}

void
gs_pool_wake_queue(void)
{
	int			first = gs_pool_queue_first();

	if (first >= 0)
		SetLatch(&gs_svc_jobs[first].owner_proc->procLatch);
}

/* join the queue (the pool lock held exclusively) */
static void
gs_pool_queue_join_locked(int job, int n)
{
	GsSvcControl *c = gs_svc_ctl;

	if (gs_svc_jobs[job].wait_ticket == 0)
	{
		gs_svc_jobs[job].wait_ticket = ++c->next_ticket;
		gs_svc_jobs[job].wait_need = n;
		c->nwaiting++;
	}
}

void
gs_pool_queue_join(int job, int n)
{
	GsSvcControl *c = gs_svc_ctl;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	gs_pool_queue_join_locked(job, n);
	LWLockRelease(c->lock);
	pg_atomic_fetch_add_u64(&c->pool_waits, 1);
}

/*
 * The first in line may wait holding its chunks: everyone who joins after
 * it gives back what it holds first, and no scan takes chunks while it
 * waits, so the chunks it needs come back from running jobs and scans
 * (finite) and from those behind it (none), never from a waiter's hold.
 * Deciding "first" and joining under one lock hold keeps it to one.
 */
bool
gs_pool_queue_join_first(int job, int n)
{
	GsSvcControl *c = gs_svc_ctl;
	bool		first;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	first = gs_pool_queue_first() < 0;
	if (first)
		gs_pool_queue_join_locked(job, n);
	LWLockRelease(c->lock);
	if (first)
		pg_atomic_fetch_add_u64(&c->pool_waits, 1);
	return first;
}

/*
 * The first in line takes what is free now, up to what it still waits
 * for, appended to its job's list (job->head, so that abandoning the job
 * frees them); it leaves the queue once it has them all.  It fills them
 * while it waits for the rest, so its copy overlaps the job that holds
 * the others (the comment at the top: why that is no hold-and-wait).
 */
int
gs_pool_queue_take(int job, int *tail, int *left)
{
	GsSvcControl *c = gs_svc_ctl;
	GsSvcJob   *me = &gs_svc_jobs[job];
	int			piece = -1;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	if (me->wait_ticket != 0 && gs_pool_queue_first() == job && c->nfree > 0)
	{
		int			n = Min(c->nfree, me->wait_need);
		int			last;

		piece = gs_pool_alloc_locked(n, job);
		Assert(piece >= 0);
		for (last = piece; gs_svc_chunks[last].next >= 0; last = gs_svc_chunks[last].next)
			;
		if (*tail >= 0)
			gs_svc_chunks[*tail].next = piece;
		else
			me->head = piece;
		*tail = last;
		me->wait_need -= n;
		if (me->wait_need == 0)
		{
			me->wait_ticket = 0;
			c->nwaiting--;
			/* the next in line may take what is left */
			gs_pool_wake_queue();
		}
	}
	*left = me->wait_ticket != 0 ? me->wait_need : 0;
	LWLockRelease(c->lock);
	return piece;
}

void
gs_pool_queue_leave(int job)
{
	GsSvcControl *c = gs_svc_ctl;

	if (c == NULL || job < 0 || job >= c->njobs)
		return;
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	if (gs_svc_jobs[job].wait_ticket != 0)
	{
		gs_svc_jobs[job].wait_ticket = 0;
		c->nwaiting--;
		gs_pool_wake_queue();
	}
	LWLockRelease(c->lock);
}

/*
 * Back to the free list (gs_pool_put), then the queue's first waiter woken:
 * the chunks of the list from head that job owns.
 * Stops at the first index out of range, owned by another job, or held by
 * a scan (a job's own chunks come first; held chunks are their holder's
 * to free).  A list is never longer than the pool, so it ends.  Never
 * raises an ERROR: it runs from PG_CATCH blocks and exit callbacks.
 */
void
gs_pool_free_list(int head, int job)
{
	GsSvcControl *c = gs_svc_ctl;
	int			idx = head;
	int			n = 0;

	if (head < 0)
		return;
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	while (idx >= 0 && idx < c->nchunks && gs_svc_chunks[idx].job == job &&
		   !gs_svc_chunks[idx].held && n < c->nchunks)
	{
		int			next = gs_svc_chunks[idx].next;

		gs_pool_put(idx);
		n++;
		idx = next;
	}
	gs_pool_wake_queue();
	LWLockRelease(c->lock);
}
