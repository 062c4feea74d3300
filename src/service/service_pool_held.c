/*
 * service_pool_held.c — key-pool chunks HELD by a backend's scan (service.h
 * says what held means): taken one at a time while the scan writes keys
 * into them, leased for the partial states of the leader's parallel
 * workers and adopted by the leader, linked after a job's own chunks,
 * freed by their holder, and reaped by the service when the holder is
 * gone.  The rules of scans and leases: state/service_scan.c.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "miscadmin.h"

#include "service/service.h"
#include "service/service_pool.h"

/*
 * Scans may not take the last chunks: a job needs at least one for its
 * ranks and answers (and some for the keys of palloc'd chunks), and a
 * pool held entirely by scans would send every final call to the CPU.
 */
static int
gs_pool_scan_reserve(void)
{
	return Max(2, gs_svc_ctl->nchunks / 16);
}

static inline bool
gs_pool_held_by(int idx, int job, int pid)
{
	return idx >= 0 && idx < gs_svc_ctl->nchunks && gs_svc_chunks[idx].job == job &&
		gs_svc_chunks[idx].held && gs_svc_chunks[idx].holder_pid == pid;
}

/* a free chunk, held for (job, pid) (the pool lock held; nfree checked) */
static int
gs_pool_take_one(int job, int pid)
{
	GsSvcControl *c = gs_svc_ctl;
	int			idx = c->free_head;

	Assert(idx >= 0 && idx < c->nchunks);
	c->free_head = gs_svc_chunks[idx].next;
	c->nfree--;
	gs_svc_chunks[idx].job = job;
	gs_svc_chunks[idx].next = -1;
	gs_svc_chunks[idx].held = true;
	gs_svc_chunks[idx].leased = false;
	gs_svc_chunks[idx].holder_pid = pid;
	gs_svc_chunks[idx].nkeys = 0;
	gs_svc_chunks[idx].lease_gen = 0;
	gs_pool_next_gen(idx);
	pg_atomic_fetch_add_u64(&c->bytes_in_use, c->chunk_bytes);
	pg_atomic_fetch_add_u64(&c->scan_bytes, c->chunk_bytes);
	return idx;
}

int
gs_pool_take_held(int job)
{
	GsSvcControl *c = gs_svc_ctl;
	int			idx = -1;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	/* none while a final call waits in the queue: the scan goes on in palloc */
	if (c->nfree > gs_pool_scan_reserve() && c->nwaiting == 0)
	{
		idx = gs_pool_take_one(job, MyProcPid);
		/* this process is the slot's scan owner: the reaper checks it */
		gs_svc_jobs[job].scan_proc = MyProc;
		gs_svc_jobs[job].scan_pid = MyProcPid;
	}
	LWLockRelease(c->lock);
	return idx;
}

void
gs_pool_declare_scan_owner(int job)
{
	GsSvcControl *c = gs_svc_ctl;

	/* only this process writes its own slot's scan owner */
	if (gs_svc_jobs[job].scan_proc == MyProc && gs_svc_jobs[job].scan_pid == MyProcPid)
		return;
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	gs_svc_jobs[job].scan_proc = MyProc;
	gs_svc_jobs[job].scan_pid = MyProcPid;
	LWLockRelease(c->lock);
}

/*
 * A lease is held for the leader exactly as the leader's own scan chunks
 * are (job slot, pid), so the leader's exit cleanup and the reaper cover
 * it; the caller may be a parallel worker.  The slot's scan owner must be
 * `leader` running its current pid: the leader declared itself at the
 * start of the parallel query (gs_pool_declare_scan_owner), so a leader
 * that is gone, or a slot reused by another backend, gets no lease.
 */
int
gs_pool_take_lease(int job, PGPROC *leader, uint64 *gen)
{
	GsSvcControl *c = gs_svc_ctl;
	GsSvcJob   *owner;
	int			pid;
	int			idx = -1;

	if (job < 0 || job >= c->njobs || leader == NULL)
		return -1;
	owner = &gs_svc_jobs[job];
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	pid = leader->pid;
	if (pid != 0 && owner->scan_proc == leader && owner->scan_pid == pid &&
		c->nfree > gs_pool_scan_reserve() && c->nwaiting == 0)
	{
		idx = gs_pool_take_one(job, pid);
		gs_svc_chunks[idx].leased = true;
		gs_svc_chunks[idx].lease_gen = owner->lease_gen;
		*gen = owner->lease_gen;
		pg_atomic_fetch_add_u32(&owner->nleased, 1);
	}
	LWLockRelease(c->lock);
	return idx;
}

static inline bool
gs_pool_leased_to_me(int idx, int job, uint64 gen)
{
	return idx >= 0 && idx < gs_svc_ctl->nchunks && job >= 0 && job < gs_svc_ctl->njobs &&
		gs_svc_chunks[idx].job == job && gs_svc_chunks[idx].held &&
		gs_svc_chunks[idx].leased && gs_svc_chunks[idx].holder_pid == MyProcPid &&
		gs_svc_chunks[idx].lease_gen == gen && gs_svc_jobs[job].lease_gen == gen;
}

char *
gs_pool_lease_chunk(int idx, int job, uint64 gen)
{
	GsSvcControl *c = gs_svc_ctl;
	bool		ok;

	LWLockAcquire(c->lock, LW_SHARED);
	ok = gs_pool_leased_to_me(idx, job, gen);
	LWLockRelease(c->lock);
	return ok ? gs_svc_pool + (Size) idx * c->chunk_bytes : NULL;
}

bool
gs_pool_adopt_lease(int idx, int job, uint64 gen)
{
	GsSvcControl *c = gs_svc_ctl;
	bool		ok;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	ok = gs_pool_leased_to_me(idx, job, gen);
	if (ok)
	{
		gs_svc_chunks[idx].leased = false;
		pg_atomic_fetch_sub_u32(&gs_svc_jobs[job].nleased, 1);
	}
	LWLockRelease(c->lock);
	return ok;
}

/* never raises an ERROR: runs in transaction-end callbacks */
int
gs_pool_free_leases(int job)
{
	GsSvcControl *c = gs_svc_ctl;
	int			n = 0;
	/* no worker is left to lease more: none now means none to look for */
	bool		any = pg_atomic_read_u32(&gs_svc_jobs[job].nleased) > 0;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	for (int i = 0; any && i < c->nchunks; i++)
		if (gs_svc_chunks[i].leased && gs_pool_held_by(i, job, MyProcPid))
		{
			gs_pool_put(i);
			n++;
		}
	gs_svc_jobs[job].lease_gen++;
	if (n > 0)
		gs_pool_wake_queue();
	LWLockRelease(c->lock);
	if (n > 0)
		pg_atomic_fetch_add_u64(&c->leases_swept, (uint64) n);
	return n;
}

void
gs_pool_free_held(const int *idx, int n, int job)
{
	GsSvcControl *c = gs_svc_ctl;

	if (n <= 0)
		return;
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	for (int i = 0; i < n; i++)
		if (gs_pool_held_by(idx[i], job, MyProcPid))
			gs_pool_put(idx[i]);
	gs_pool_wake_queue();
	LWLockRelease(c->lock);
}

void
gs_pool_free_all_held(int job, int pid)
{
	GsSvcControl *c = gs_svc_ctl;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	for (int i = 0; i < c->nchunks; i++)
		if (gs_pool_held_by(i, job, pid))
			gs_pool_put(i);
	gs_pool_wake_queue();
	LWLockRelease(c->lock);
}

bool
gs_pool_link_held(int tail, const int *idx, const uint32 *nkeys, int n, int job)
{
	GsSvcControl *c = gs_svc_ctl;
	bool		ok = true;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	for (int i = 0; i < n && ok; i++)
	{
		ok = gs_pool_held_by(idx[i], job, MyProcPid) &&
			(tail < 0 || gs_svc_chunks[tail].job == job);
		if (!ok)
			break;
		if (tail >= 0)
			gs_svc_chunks[tail].next = idx[i];
		gs_svc_chunks[idx[i]].nkeys = nkeys[i];
		gs_svc_chunks[idx[i]].next = -1;
		tail = idx[i];
	}
	LWLockRelease(c->lock);
	return ok;
}

/*
 * Held chunks whose holder is gone: the slot's scan owner is another
 * process now, or its PGPROC no longer runs that pid (proc slots are
 * reused at once, proc and pid together are not).  A backend's exit
 * cleanup frees its held chunks; this catches a holder that died without
 * running it.  Returns the number freed.
 */
int
gs_pool_reap_held(void)
{
	GsSvcControl *c = gs_svc_ctl;
	int			n = 0;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	for (int i = 0; i < c->nchunks; i++)
	{
		GsSvcChunk *ch = &gs_svc_chunks[i];
		GsSvcJob   *owner;

		if (ch->job < 0 || !ch->held)
			continue;
		if (ch->job >= c->njobs)
		{
			gs_pool_put(i);
			n++;
			continue;
		}
		owner = &gs_svc_jobs[ch->job];
		if (owner->scan_pid != ch->holder_pid || owner->scan_proc == NULL ||
			owner->scan_proc->pid != ch->holder_pid)
		{
			gs_pool_put(i);
			n++;
		}
	}
	if (n > 0)
		gs_pool_wake_queue();
	LWLockRelease(c->lock);
	return n;
}
