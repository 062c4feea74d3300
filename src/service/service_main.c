/*
 * service_main.c — the GPU service: a background worker (registered by
 * service_shmem.c when gpuselect is preloaded) that runs every backend's
 * GPU-bound selections, so only this process ever creates CUDA contexts.
 *
 * Two kinds of thread.  The main thread (this file) is PostgreSQL's: it
 * waits on its latch and on the lanes' wake pipe, takes the submitted job
 * with the fewest keys (shortest first by size class, aged, then the first
 * submitted: service_order.h) whenever a device is free,
 * checks the job's chunks and prepares the engine's input, hands it to
 * that device's lane, publishes the answers the lanes hand back, and frees
 * what abandoned jobs and dead backends left.  Lanes (service_lanes.c), one
 * thread per device, only run the engine -- they never call PostgreSQL.
 * Device backends:
 *   cpu_test  the CPU engine on the keys in the pool, on
 *             gpuselect.service_test_devices simulated devices (CI: the
 *             whole protocol, several devices included, without a GPU)
 *   on        the CUDA engine, one per device gpuselect.service_devices
 *             names (service_cuda.c), opened once here
 * A job whose device failed for good (a sticky error) fails; that device
 * takes no more jobs (service_devices.c) and the service exits with code 1,
 * so that the postmaster starts it again after bgw_restart_time, only when
 * no device is left.  SIGTERM exits 1 too (a crash would take the whole
 * server through crash recovery).
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procsignal.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "gs_engine.h"
#include "service/service.h"
#include "service/service_order.h"
#include "service/service_cuda.h"
#include "service/service_lanes.h"

/*
 * What each device holds (main thread only), its running job and its next
 * (gpuselect.service_lane_depth): the job slot, its memory (the engine's
 * input, ranks and answer, read and written by the lane), freed only once
 * the lane has handed the work back.
 */
#define GS_SVC_RUNS_PER_DEVICE GS_SVC_MAX_LANE_DEPTH

typedef struct GsSvcRun
{
	int			job;			/* -1: an empty place */
	MemoryContext cxt;
	gs_lane_work *work;
	TimestampTz start;			/* given to the lane */
} GsSvcRun;

static GsSvcRun svc_runs[GS_SVC_MAX_DEVICES][GS_SVC_RUNS_PER_DEVICE];
static gs_svc_cuda_dev *svc_cuda[GS_SVC_MAX_DEVICES];	/* on: each device's engine */
static int	svc_pool_device = -1;	/* on: the device whose engine locked the pool */
static int	svc_nlanes = 0;		/* lane threads started */

static void gs_svc_release_holds(const int *held, int n);

/* job j runs on a device (a lane reads its chunks): not to be freed */
static bool
gs_svc_job_on_device(int j)
{
	for (int k = 0; k < GS_SVC_MAX_DEVICES; k++)
		for (int r = 0; r < GS_SVC_RUNS_PER_DEVICE; r++)
			if (svc_runs[k][r].job == j)
				return true;
	return false;
}

/* where an abandoned/stale job gets its owner woken */
static void
gs_svc_wake(PGPROC *proc, int pid)
{
	if (proc != NULL && proc->pid == pid)
		SetLatch(&proc->procLatch);
}

/* free a job's chunks and the slot; the caller moved it out of the owner's hands */
static void
gs_svc_release_job(int j)
{
	GsSvcJob   *job = &gs_svc_jobs[j];

	gs_pool_free_list(job->head, j);
	job->head = -1;
	pg_atomic_write_u32(&job->state, GS_JOB_FREE);
	gs_svc_wake(job->owner_proc, job->owner_pid);
}

/*
 * Reap: jobs their owners abandoned, jobs of owners that are gone (proc
 * number and pid no longer match: a proc slot is reused at once, the pair
 * is not), job chunks owned by a FREE slot (an owner that died between
 * taking chunks and recording them), and chunks held by the scans of
 * backends that are gone (gs_pool_reap_held).  A job a lane runs is left
 * alone: the lane notices the abandon (the engine's interrupt hook), and
 * its chunks are freed once the lane has handed the job back.
 */
static TimestampTz last_orphan_scan = 0;

static void
gs_svc_reap(void)
{
	GsSvcControl *c = gs_svc_ctl;

	for (int j = 0; j < c->njobs; j++)
	{
		GsSvcJob   *job = &gs_svc_jobs[j];
		uint32		s = pg_atomic_read_u32(&job->state);

		if (s == GS_JOB_FREE || gs_svc_job_on_device(j))
			continue;
		if (s == GS_JOB_ABANDONED || s == GS_JOB_RUNNING || s == GS_JOB_WRITING)
		{
			/* RUNNING/WRITING here: left by an earlier incarnation of the service */
			gs_svc_release_job(j);
			continue;
		}
		if (job->owner_proc == NULL || job->owner_proc->pid != job->owner_pid)
		{
			uint32		expected = s;

			/* the owner is gone: take the slot from it, then free */
			if (pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_ABANDONED))
				gs_svc_release_job(j);
		}
	}

	/* orphan chunks: an exclusive scan, at most once a second */
	if (!TimestampDifferenceExceeds(last_orphan_scan, GetCurrentTimestamp(), 1000))
		return;
	last_orphan_scan = GetCurrentTimestamp();
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	for (int i = 0; i < c->nchunks; i++)
	{
		int			j = gs_svc_chunks[i].job;

		/* owners set OPEN before they take job chunks and free them before
		 * FREE; held chunks have their own owner check below */
		if (j >= 0 && !gs_svc_chunks[i].held &&
			(j >= c->njobs || pg_atomic_read_u32(&gs_svc_jobs[j].state) == GS_JOB_FREE))
		{
			gs_svc_chunks[i].job = -1;
			gs_svc_chunks[i].next = c->free_head;
			c->free_head = i;
			c->nfree++;
			pg_atomic_fetch_sub_u64(&c->bytes_in_use, c->chunk_bytes);
		}
	}
	gs_pool_wake_queue();
	LWLockRelease(c->lock);
	/* chunks held by scans of backends that died without their cleanup */
	if (gs_pool_reap_held() > 0)
		ereport(DEBUG1, (errmsg("gpuselect GPU service: reclaimed key-pool chunks of a backend that is gone")));
}

/*
 * The submitted job that runs next (service_order.h: shortest first by
 * size class, aged, then the first submitted) among those a free device
 * can take now (-1: none).  Only a test hook's job, pinned to a device in
 * rotation that is busy, waits for that device.
 */
static int
gs_svc_next_job(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			best = -1;
	uint64		best_aged = 0;
	TimestampTz best_submit = 0;

	for (int j = 0; j < gs_svc_ctl->njobs; j++)
	{
		GsSvcJob   *job = &gs_svc_jobs[j];
		uint64		aged;

		if (pg_atomic_read_u32(&job->state) != GS_JOB_SUBMITTED ||
			job->kind != GS_SVC_JOB_SELECT)
			continue;
		if (gs_svc_device_ok(job->fail_device) && !gs_svc_device_free(job->fail_device))
			continue;
		aged = gs_svc_aged_keys(job->nkeys, (now - job->submit_time) / 1000);
		if (best < 0 || gs_svc_runs_before(aged, job->submit_time, best_aged, best_submit))
		{
			best = j;
			best_aged = aged;
			best_submit = job->submit_time;
		}
	}
	return best;
}

/*
 * The engine's interrupt hook, polled by a lane thread: stop when the
 * service stops or the owner abandoned the job (its answer would be
 * dropped anyway).  Thread-safe: it reads two atomics, nothing else.
 */
static int
gs_svc_interrupt(void *arg)
{
	GsSvcJob   *job = (GsSvcJob *) arg;

	return gs_lanes_stopping() ||
		pg_atomic_read_u32(&job->state) == GS_JOB_ABANDONED;
}

static double
gs_svc_ms_since(TimestampTz t)
{
	return (double) (GetCurrentTimestamp() - t) / 1000.0;
}

/*
 * Read and check the request, build the engine's input over the job's
 * chunks: io_chunks (ranks, answers), then key_chunks, each with its count
 * in the descriptor; the held ones must be held by the job's owner.  False
 * (with err set) on anything inconsistent: the owner wrote it, but the
 * service checks every index, owner and count before it reads.
 */
static bool
gs_svc_prepare(int j, GsSvcJob *job, gs_lane_work *w, gs_error *err)
{
	gs_input   *in = &w->in;
	gs_segment *segs;
	int		   *seg_chunk;
	uint32	   *seg_gen;
	uint64	   *ranks;
	Size		cb = gs_svc_ctl->chunk_bytes;
	uint32		kb = job->key_bytes;
	uint64		nkeys = job->nkeys;
	int			nranks = job->nranks;
	uint64		per_chunk;
	int			idx = job->head;
	uint64		total = 0;

	err->status = GS_ERR_INVALID;
	if ((kb != 2 && kb != 4 && kb != 8) || nkeys == 0 || nranks <= 0 ||
		job->io_chunks <= 0 || job->key_chunks <= 0 ||
		job->io_chunks + job->key_chunks != job->nchunks ||
		job->nchunks > gs_svc_ctl->nchunks)
	{
		snprintf(err->message, sizeof(err->message), "malformed request");
		return false;
	}
	per_chunk = cb / kb;
	if ((uint64) nranks * GS_SVC_IO_BYTES_PER_RANK > (uint64) job->io_chunks * cb)
	{
		snprintf(err->message, sizeof(err->message), "request does not match its chunks");
		return false;
	}
	for (int i = 0; i < job->io_chunks; i++)
	{
		if (gs_pool_chunk(idx, j) == NULL || gs_svc_chunks[idx].held)
		{
			snprintf(err->message, sizeof(err->message), "bad chunk list");
			return false;
		}
		idx = gs_svc_chunks[idx].next;
	}

	segs = palloc(sizeof(gs_segment) * job->key_chunks);
	seg_chunk = palloc(sizeof(int) * job->key_chunks);
	seg_gen = palloc(sizeof(uint32) * job->key_chunks);
	for (int i = 0; i < job->key_chunks; i++)
	{
		char	   *mem = gs_pool_chunk(idx, j);
		uint32		n;

		if (mem == NULL ||
			(gs_svc_chunks[idx].held && gs_svc_chunks[idx].holder_pid != job->owner_pid))
		{
			snprintf(err->message, sizeof(err->message), "bad chunk list");
			return false;
		}
		n = gs_svc_chunks[idx].nkeys;
		if (n == 0 || n > per_chunk || total + n > nkeys)
		{
			snprintf(err->message, sizeof(err->message), "request does not match its chunks");
			return false;
		}
		segs[i].keys = mem;
		segs[i].n = (size_t) n;
		/* held chunks may have a prefetched copy (service_prefetch.c) */
		seg_chunk[i] = gs_svc_chunks[idx].held ? idx : -1;
		seg_gen[i] = pg_atomic_read_u32(&gs_svc_chunks[idx].gen);
		total += n;
		idx = gs_svc_chunks[idx].next;
	}
	if (total != nkeys)
	{
		snprintf(err->message, sizeof(err->message), "request does not match its chunks");
		return false;
	}
	in->segs = segs;
	in->nsegs = (size_t) job->key_chunks;
	in->key_bytes = kb;
	w->seg_chunk = seg_chunk;
	w->seg_gen = seg_gen;

	ranks = palloc(sizeof(uint64) * nranks);
	w->ranks = ranks;
	if (!gs_pool_copy(job->head, j, 0, ranks, sizeof(uint64) * nranks, false))
	{
		snprintf(err->message, sizeof(err->message), "bad chunk list");
		return false;
	}
	for (int i = 0; i < nranks; i++)
	{
		if (ranks[i] >= nkeys)
		{
			snprintf(err->message, sizeof(err->message), "rank out of range");
			return false;
		}
	}
	err->status = GS_OK;
	return true;
}

/*
 * Publish job j's outcome: RUNNING -> WRITING, the answer (status OK) or
 * the message, WRITING -> DONE | FAILED, wake the owner.  A job its owner
 * abandoned meanwhile is freed instead.  Returns 1 (served), 0 (failed)
 * or -1 (dropped).
 */
static int
gs_svc_publish(int j, gs_status s, const char *message, void *answer, Size answer_bytes)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	uint32		expected = GS_JOB_RUNNING;
	uint32		final = GS_JOB_DONE;

	if (!pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_WRITING))
	{
		gs_svc_release_job(j);
		return -1;
	}
	job->status = s;
	if (s == GS_OK &&
		!gs_pool_copy(job->head, j, sizeof(uint64) * job->nranks, answer, answer_bytes, true))
	{
		job->status = GS_ERR_INVALID;
		message = "bad chunk list";
	}
	if (job->status != GS_OK)
	{
		final = GS_JOB_FAILED;
		strlcpy(job->message, message && message[0] ? message : "the selection failed",
				sizeof(job->message));
		pg_atomic_fetch_add_u64(&gs_svc_ctl->failed, 1);
	}
	else
		pg_atomic_fetch_add_u64(&gs_svc_ctl->served, 1);
	pg_write_barrier();
	expected = GS_JOB_WRITING;
	if (pg_atomic_compare_exchange_u32(&job->state, &expected, final))
		gs_svc_wake(job->owner_proc, job->owner_pid);
	else
	{
		gs_svc_release_job(j);	/* abandoned while the answer was written */
		return -1;
	}
	return final == GS_JOB_DONE ? 1 : 0;
}

static Size
gs_svc_answer_bytes(const GsSvcJob *job)
{
	return job->approx ? sizeof(gs_approx_pick) * job->nranks : sizeof(uint64) * job->nranks;
}

typedef bool (*GsSvcPrepare) (int j, GsSvcJob *job, gs_lane_work *w, gs_error *err);

/*
 * Claim job j (SUBMITTED -> RUNNING) for free device d: a run slot of d,
 * the job's timings, and its lane work built by prepare (gs_svc_prepare,
 * gs_svc_pages_prepare) in a memory context of the run's own, which stays
 * current for the caller to finish the work in.  NULL when the job was
 * abandoned meanwhile, or failed prepare's checks (answered at once).
 */
static gs_lane_work *
gs_svc_claim_run(int j, int d, GsSvcPrepare prepare, bool large, GsSvcRun **runp,
				 MemoryContext *old)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	uint32		expected = GS_JOB_SUBMITTED;
	GsSvcRun   *run = NULL;
	gs_lane_work *w;
	gs_error	err;

	for (int r = 0; r < GS_SVC_RUNS_PER_DEVICE && run == NULL; r++)
		if (svc_runs[d][r].job < 0)
			run = &svc_runs[d][r];
	if (run == NULL)
		elog(ERROR, "gpuselect GPU service: device %d has no room for a job", d);
	if (!pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_RUNNING))
		return NULL;			/* abandoned meanwhile */
	run->start = GetCurrentTimestamp();
	job->queue_ms = (double) (run->start - job->submit_time) / 1000.0;
	job->copy_ms = 0;
	job->bytes_copied = 0;

	/* a page job's item lists are larger than a selection's ranks */
	run->cxt = large
		? AllocSetContextCreate(TopMemoryContext, "gpuselect service pages", ALLOCSET_DEFAULT_SIZES)
		: AllocSetContextCreate(TopMemoryContext, "gpuselect service job", ALLOCSET_SMALL_SIZES);
	*old = MemoryContextSwitchTo(run->cxt);
	memset(&err, 0, sizeof(err));
	w = palloc0(sizeof(gs_lane_work));
	if (!prepare(j, job, w, &err))
	{
		MemoryContextSwitchTo(*old);
		job->select_ms = gs_svc_ms_since(run->start);
		(void) gs_svc_publish(j, err.status, err.message, NULL, 0);
		MemoryContextDelete(run->cxt);
		run->cxt = NULL;
		return NULL;
	}
	w->tag = j;
	w->opt.interrupt = gs_svc_interrupt;
	w->opt.interrupt_arg = job;
	w->delay_ms = job->delay_ms;
	w->inject = GS_OK;
	*runp = run;
	return w;
}

/* the claimed run's work (its context left) to device d's lane */
static void
gs_svc_hand_to_lane(GsSvcRun *run, int j, int d, gs_lane_work *w, MemoryContext old)
{
	MemoryContextSwitchTo(old);
	run->job = j;
	run->work = w;
	gs_svc_device_start(d, gs_svc_jobs[j].nkeys);
	gs_lanes_submit(d, w);
}

/*
 * Start job j (SUBMITTED) on free device d: claim it, check its chunks
 * and build the engine's input in a memory context of its own, and give
 * it to d's lane.  A request that fails the checks is answered at once.
 */
static void
gs_svc_start_job(int j, int d, const int *held, int nheld)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	GsSvcRun   *run = NULL;
	gs_lane_work *w;
	MemoryContext old;

	w = gs_svc_claim_run(j, d, gs_svc_prepare, false, &run, &old);
	if (w == NULL)
	{
		gs_svc_release_holds(held, nheld);
		return;
	}
	w->nranks = (size_t) job->nranks;
	w->approx = job->approx;
	w->answer = palloc(gs_svc_answer_bytes(job));
	w->opt.seed = job->seed;
	w->opt.approx_buckets = job->approx_buckets;
	w->cpu_path = job->cpu_path;
	if (job->fail_device == d)
	{
		w->inject = GS_ERR_DEVICE;
		w->inject_sticky = true;
		snprintf(w->err.message, sizeof(w->err.message),
				 "injected failure of device %d (gpuselect.test_service_fail_device)", d);
	}
	else if (job->fault == GS_SVC_FAULT_LAUNCH)
		w->engine_fault = GS_SVC_CUDA_FAULT_LAUNCH;
	else if (job->fault == GS_SVC_FAULT_OOM)
		w->engine_fault = GS_SVC_CUDA_FAULT_OOM;
	else if (job->fault != GS_SVC_FAULT_NONE)
	{
		w->inject = GS_ERR_DEVICE;
		w->inject_sticky = (job->fault == GS_SVC_FAULT_STICKY);
		snprintf(w->err.message, sizeof(w->err.message),
				 "injected failure (gpuselect.test_service_fault)");
	}
	/*
	 * A split job: one the other devices are held for (gs_svc_job_wide),
	 * or the test hook's (with one device too, and a budget small enough
	 * for several levels); the lane also splits a job that does not fit
	 * its device when it comes to run it.
	 */
	w->split = !job->approx &&
		(nheld > 0 || (job->split_keys > 0 && job->nkeys > (uint64) job->split_keys));
	w->split_budget = job->split_keys > 0 ? GS_SVC_TEST_SPLIT_BUDGET : 0;
	for (int i = 0; i < nheld; i++)
		w->split_lanes[i] = held[i];
	w->nsplit_lanes = nheld;
	gs_svc_hand_to_lane(run, j, d, w, old);
}

/*
 * Job j (RUNNING) goes back to SUBMITTED, chunks and request untouched, when
 * the job was fine but could not finish where it ran:
 *  - this service's own stop (SIGTERM, no device left) interrupted it: the
 *    next incarnation runs it, and its owner waits across the restart
 *    (service_client.c) instead of failing with the engine's "canceled" of
 *    a cancel nobody sent (issue #29);
 *  - its device failed for good while another is in rotation: that one
 *    runs it, so losing one GPU of several fails no query, in gpu mode too
 *    (issue #35).  Its submit time stays, so it keeps its place by age.
 * An owner that abandoned it meanwhile gets it freed instead.
 */
static void
gs_svc_requeue(int j)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	uint32		expected = GS_JOB_RUNNING;

	if (pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_SUBMITTED))
	{
		pg_atomic_fetch_add_u64(&gs_svc_ctl->requeued, 1);
		gs_svc_wake(job->owner_proc, job->owner_pid);
		SetLatch(MyLatch);		/* dispatch again on the next loop */
	}
	else
		gs_svc_release_job(j);
}

/* a PAGES job the lane finished: its chunks' counts (the lane wrote the keys), published */
static int
gs_svc_finish_pages(int j, gs_lane_work *w)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	gs_error	err;

	memset(&err, 0, sizeof(err));
	if (w->status != GS_OK)
		return gs_svc_publish(j, w->status, w->err.message, NULL, 0);
	if (pg_atomic_read_u32(&job->state) != GS_JOB_RUNNING)
		return gs_svc_publish(j, GS_ERR_CANCELED, "abandoned", NULL, 0);	/* frees it */
	if (!gs_svc_pages_store(j, job, w, &err))
		return gs_svc_publish(j, err.status, err.message, NULL, 0);
	if (w->pages.on_device)
		pg_atomic_fetch_add_u64(&gs_svc_ctl->pages_on_device, w->pages.npages);
	else
		pg_atomic_fetch_add_u64(&gs_svc_ctl->pages_on_cpu, w->pages.npages);
	return gs_svc_publish(j, GS_OK, NULL, NULL, 0);
}

/*
 * A lane handed back work w: take the device out of rotation when it failed
 * for good, then publish the answer or requeue the job (gs_svc_requeue),
 * and count.  Then the job's memory goes.
 */
static void
gs_svc_finish_job(gs_lane_work *w)
{
	int			d = w->lane;
	GsSvcRun   *run = NULL;
	int			j;
	GsSvcJob   *job;
	int			outcome;

	for (int r = 0; r < GS_SVC_RUNS_PER_DEVICE && run == NULL; r++)
		if (svc_runs[d][r].work == w)
			run = &svc_runs[d][r];
	Assert(run != NULL);
	j = run->job;
	job = &gs_svc_jobs[j];
	Assert(j == w->tag);
	job->copy_ms = w->copy_ms;
	job->bytes_copied = w->bytes_copied;
	pg_atomic_fetch_add_u64(&gs_svc_ctl->prefetch_used_bytes, w->prefetch_used_bytes);
	/* the lane's time is the selection's; the rest, from the submit on, the wait */
	job->select_ms = w->run_ms - w->copy_ms;
	job->queue_ms = Max(gs_svc_ms_since(job->submit_time) - w->run_ms, 0.0);
	if (w->sticky)
	{
		gs_svc_device_fail(d, w->err.message[0] ? w->err.message : "a device error");
		ereport(LOG,
				(errmsg("gpuselect GPU service: device %d failed for good and is out of rotation (%d left): %s",
						d, gs_svc_devices_ok(), w->err.message)));
	}
	if (w->status == GS_ERR_CANCELED && gs_lanes_stopping())
	{
		gs_svc_requeue(j);		/* our own stop: the next incarnation runs it */
		outcome = -1;
	}
	else if (w->sticky && gs_svc_devices_ok() > 0)
	{
		gs_svc_requeue(j);		/* its device failed: another one runs it */
		outcome = 0;
	}
	else if (w->pages.npages > 0)
		outcome = gs_svc_finish_pages(j, w);
	else
		outcome = gs_svc_publish(j, w->status, w->err.message, w->answer,
								 (w->approx ? sizeof(gs_approx_pick) : sizeof(uint64)) * w->nranks);
	gs_svc_device_end(d, job->nkeys, outcome);
	if (w->split_used || w->split || w->nsplit_lanes > 0)
		pg_atomic_fetch_add_u64(&gs_svc_ctl->split_jobs, 1);
	gs_svc_release_holds(w->split_lanes, w->nsplit_lanes);
	run->job = -1;
	run->work = NULL;
	MemoryContextDelete(run->cxt);
	run->cxt = NULL;
}

/*
 * Split jobs (gs_lane_work.split): an exact job too large for one device
 * streams through all of them (gs_cuda_select_split).  It runs on the
 * first device in rotation, and the main thread holds every other one for
 * it: from the moment all are idle until the job is collected, a held
 * device counts one job running (so nothing is given to it) and its lane
 * thread parks, touching its engine no more (gs_lanes_hold), so that the
 * split job's lane uses that engine alone.  While the devices drain, the
 * job stays at the head of the queue and nothing else is given out, so
 * smaller jobs cannot overtake it for ever.
 */
static int	svc_hold_job = -1;	/* the split job the holds below wait for */
static int	svc_held[GS_SVC_MAX_DEVICES];
static int	svc_nheld = 0;

static void
gs_svc_release_holds(const int *held, int n)
{
	for (int i = 0; i < n; i++)
	{
		gs_lanes_hold(held[i], false);
		gs_svc_device_hold(held[i], false);
	}
}

/*
 * Whether job j is one for every device: the test hook says so, or its
 * keys and about as much again of scratch exceed the least free device in
 * rotation (as last sampled).  With one device in rotation, none is: its
 * lane streams a job that does not fit through that device alone.
 */
static bool
gs_svc_job_wide(int j)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	uint64		least = 0;

	if (job->approx || gs_svc_devices_ok() < 2)
		return false;
	if (job->split_keys > 0)
		return job->nkeys > (uint64) job->split_keys;
	for (int k = 0; k < gs_svc_ctl->ndevices; k++)
	{
		GsSvcDevice *d = &gs_svc_ctl->devices[k];
		uint64		total = pg_atomic_read_u64(&d->total_bytes);
		uint64		used = pg_atomic_read_u64(&d->used_bytes);

		if (!gs_svc_device_ok(k) || total == 0)
			continue;
		if (least == 0 || total - Min(used, total) < least)
			least = total - Min(used, total);
	}
	return least > 0 && job->nkeys * (uint64) (job->key_bytes + Max(job->key_bytes, 4)) > least;
}

/*
 * Start split job j once every device in rotation is idle and the lanes of
 * all but the first have parked; false while it waits (a lane that parks
 * wakes the main thread).
 */
static bool
gs_svc_start_wide(int j)
{
	int			lead = -1;
	int			others[GS_SVC_MAX_DEVICES];
	int			n = 0;

	if (svc_nheld == 0)
	{
		for (int k = 0; k < gs_svc_ctl->ndevices; k++)
		{
			if (!gs_svc_device_ok(k))
				continue;
			if (!gs_svc_device_idle(k))
				return false;	/* draining */
			if (lead < 0)
				lead = k;
			else
				others[n++] = k;
		}
		if (lead < 0)
			return false;
		for (int i = 0; i < n; i++)
		{
			gs_svc_device_hold(others[i], true);
			gs_lanes_hold(others[i], true);
			svc_held[i] = others[i];
		}
		svc_nheld = n;
		svc_hold_job = j;
	}
	for (int i = 0; i < svc_nheld; i++)
		if (!gs_lanes_parked(svc_held[i]))
			return false;
	for (int k = 0; k < gs_svc_ctl->ndevices && lead < 0; k++)
		if (gs_svc_device_ok(k) && gs_svc_device_idle(k))
			lead = k;
	if (lead < 0)
		return false;
	gs_svc_start_job(j, lead, svc_held, svc_nheld);
	/* the job owns the holds now: its collection releases them */
	svc_nheld = 0;
	svc_hold_job = -1;
	return true;
}

/*
 * PAGES jobs (issue #31, page shipping; service_pages.c): checked here and
 * given to lanes before any selection, since a scan is waiting to go on;
 * one that finds every device full waits for the next dispatch.  A page
 * job in a lane counts as a job on its device, like a selection.
 */
static void
gs_svc_start_page_job(int j, int d)
{
	GsSvcRun   *run = NULL;
	gs_lane_work *w;
	MemoryContext old;

	w = gs_svc_claim_run(j, d, gs_svc_pages_prepare, true, &run, &old);
	if (w == NULL)
		return;
	gs_svc_jobs[j].out_keys = 0;
	gs_svc_hand_to_lane(run, j, d, w, old);
}

static void
gs_svc_start_page_jobs(void)
{
	for (int j = 0; j < gs_svc_ctl->njobs; j++)
	{
		GsSvcJob   *job = &gs_svc_jobs[j];
		int			d;

		if (job->kind != GS_SVC_JOB_PAGES ||
			pg_atomic_read_u32(&job->state) != GS_JOB_SUBMITTED)
			continue;
		d = gs_svc_device_pick(-1, -1);
		if (d < 0)
			return;				/* every device full */
		gs_svc_start_page_job(j, d);
	}
}

/* give waiting jobs to free devices, shortest (aged) first */
static void
gs_svc_dispatch(void)
{
	gs_svc_start_page_jobs();
	for (;;)
	{
		int			j,
					d;
		bool		any_free = false;

		for (int k = 0; k < gs_svc_ctl->ndevices && !any_free; k++)
			any_free = gs_svc_device_free(k);
		if (!any_free)
			return;
		j = gs_svc_next_job();
		if (j != svc_hold_job && svc_nheld > 0)
		{
			/* the split job that waited for them is gone, or another comes first */
			gs_svc_release_holds(svc_held, svc_nheld);
			svc_nheld = 0;
			svc_hold_job = -1;
		}
		if (j < 0)
			return;
		if (gs_svc_job_wide(j))
		{
			if (!gs_svc_start_wide(j))
				return;			/* it waits at the head for the devices */
			continue;
		}
		/* an idle device first, the one with the job's prefetched copies if it is */
		d = gs_svc_device_pick(gs_svc_jobs[j].fail_device, gs_prefetch_device(j));
		if (d < 0)
			return;				/* every device full */
		gs_svc_start_job(j, d, NULL, 0);
	}
}

/*
 * Device memory for gpuselect_status(): what each CUDA lane last sampled
 * (service_lanes.h says when), per device and summed; and each lane's time
 * in jobs and samples.  cpu_test: no device memory, all 0.
 */
static void
gs_svc_publish_memory(void)
{
	GsSvcControl *c = gs_svc_ctl;
	uint64		sum[4] = {0, 0, 0, 0};

	for (int k = 0; k < c->ndevices && k < svc_nlanes; k++)
	{
		GsSvcDevice *d = &c->devices[k];
		uint64_t	m[4];
		double		job_ms,
					sample_ms;

		gs_lanes_readings(k, m, &job_ms, &sample_ms);
		pg_atomic_write_u64(&d->lane_job_us, (uint64) (job_ms * 1000.0));
		pg_atomic_write_u64(&d->lane_sample_us, (uint64) (sample_ms * 1000.0));
		pg_atomic_write_u64(&d->engine_bytes, m[0]);
		pg_atomic_write_u64(&d->engine_peak, m[1]);
		pg_atomic_write_u64(&d->used_bytes, m[2]);
		pg_atomic_write_u64(&d->total_bytes, m[3]);
		for (int i = 0; i < 4; i++)
			sum[i] += m[i];
	}
	pg_atomic_write_u64(&c->device_bytes, sum[0]);
	pg_atomic_write_u64(&c->device_peak, sum[1]);
	pg_atomic_write_u64(&c->device_used, sum[2]);
	pg_atomic_write_u64(&c->device_total, sum[3]);
}

/*
 * Stop the lanes (a running engine call sees the stop through its
 * interrupt hook), then close the engines of the lanes that ended -- the
 * one that page-locked the pool last, and only when every lane ended.
 * Returns the number of lanes still running.
 */
static int
gs_svc_stop_lanes(void)
{
	int			left = gs_lanes_stop(2000);

	for (int k = 0; k < GS_SVC_MAX_DEVICES; k++)
	{
		if (svc_cuda[k] == NULL || k == svc_pool_device || !gs_lanes_ended(k))
			continue;
		gs_svc_cuda_close(svc_cuda[k]);
		svc_cuda[k] = NULL;
	}
	if (left == 0 && svc_pool_device >= 0 && svc_cuda[svc_pool_device] != NULL)
	{
		gs_svc_cuda_close(svc_cuda[svc_pool_device]);
		svc_cuda[svc_pool_device] = NULL;
	}
	return left;
}

/*
 * Exit callback: stop the lanes and publish what they handed back (a job
 * the stop interrupted goes back to SUBMITTED for the next incarnation:
 * gs_svc_requeue), then wake the owners of waiting jobs, which wait for
 * the service to be back (up to gpuselect.service_timeout; auto: as long
 * as the CPU would take) and then see their job run by it.
 */
static void
gs_svc_on_exit(int code, Datum arg)
{
	GsSvcControl *c = gs_svc_ctl;
	uint32		expected = GS_SVC_READY;
	gs_lane_work *done;

	(void) code;
	(void) arg;
	if (gs_svc_stop_lanes() > 0)
		ereport(LOG, (errmsg("gpuselect GPU service: a lane did not stop within 2 s; exiting without it")));
	done = gs_lanes_collect();
	while (done != NULL)
	{
		gs_lane_work *next = done->next;

		gs_svc_finish_job(done);
		done = next;
	}

	if (!pg_atomic_compare_exchange_u32(&c->state, &expected, GS_SVC_DOWN))
	{
		expected = GS_SVC_STARTING;
		(void) pg_atomic_compare_exchange_u32(&c->state, &expected, GS_SVC_DOWN);
	}
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	if (c->svc_pid == MyProcPid)
	{
		c->svc_pid = 0;
		c->svc_proc = NULL;
	}
	LWLockRelease(c->lock);
	for (int j = 0; j < c->njobs; j++)
	{
		uint32		s = pg_atomic_read_u32(&gs_svc_jobs[j].state);

		if (gs_svc_job_live(s))
			gs_svc_wake(gs_svc_jobs[j].owner_proc, gs_svc_jobs[j].owner_pid);
	}
	/* no context, no device memory of ours */
	pg_atomic_write_u64(&c->prefetch_resident, 0);
	pg_atomic_write_u64(&c->device_bytes, 0);
	pg_atomic_write_u64(&c->device_used, 0);
	for (int k = 0; k < c->ndevices; k++)
	{
		pg_atomic_write_u64(&c->devices[k].engine_bytes, 0);
		pg_atomic_write_u64(&c->devices[k].used_bytes, 0);
	}
}

/*
 * Last of all (after every shared memory exit callback, the PGPROC already
 * released): a lane still inside a device call could make the C library's
 * exit handlers (the CUDA runtime's teardown) wait for it; leave at once,
 * with the exit code the postmaster expects from a service that restarts.
 */
static void
gs_svc_on_proc_exit(int code, Datum arg)
{
	(void) arg;
	for (int k = 0; k < svc_nlanes; k++)
		if (!gs_lanes_ended(k))
			_exit(code == 0 ? 0 : 1);
}

/* no usable device: say why, wait (CUDA caches a failed init per process), exit 1 */
pg_noreturn static void
gs_svc_unavailable(const char *why)
{
	GsSvcControl *c = gs_svc_ctl;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	strlcpy(c->reason, why, sizeof(c->reason));
	LWLockRelease(c->lock);
	pg_atomic_write_u32(&c->state, GS_SVC_UNAVAILABLE);
	ereport(LOG, (errmsg("gpuselect GPU service: no usable device: %s", why)));
	for (int i = 0; i < 600 && !ShutdownRequestPending; i++)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	proc_exit(1);
}

/*
 * Open the devices (CUDA: one engine each, the pool page-locked through
 * the first that opens; cpu_test: simulated ones) and start one lane per
 * device.  A device that does not open or bind is listed as failed; none
 * usable: unavailable.
 */
static void
gs_svc_open_devices(int mode)
{
	GsSvcControl *c = gs_svc_ctl;
	int			ordinals[GS_SVC_MAX_DEVICES];
	char		names[GS_SVC_MAX_DEVICES][96];
	char		why[GS_SVC_MAX_DEVICES][128];
	bool		ok[GS_SVC_MAX_DEVICES];
	int			n,
				count = GS_SVC_MAX_DEVICES;
	char		device[128];
	gs_error	err;
	TimestampTz t0 = GetCurrentTimestamp();

	memset(&err, 0, sizeof(err));
	if (mode == GS_SERVICE_ON &&
		gs_svc_cuda_device_count(&count, &err) != GS_OK)
		gs_svc_unavailable(err.message[0] ? err.message : "no CUDA device");
	n = gs_svc_devices_wanted(mode, ordinals, count, device, sizeof(device));
	if (n <= 0)
		gs_svc_unavailable(device);

	for (int k = 0; k < n; k++)
	{
		ok[k] = true;
		why[k][0] = '\0';
		if (mode == GS_SERVICE_CPU_TEST)
		{
			snprintf(names[k], sizeof(names[k]), n == 1 ? "cpu_test (the CPU engine)"
					 : "cpu_test device %d (the CPU engine)", k);
			continue;
		}
		memset(&err, 0, sizeof(err));
		if (gs_svc_cuda_open(ordinals[k], svc_pool_device < 0 ? gs_svc_pool : NULL,
							 (size_t) c->nchunks * c->chunk_bytes, &svc_cuda[k],
							 names[k], sizeof(names[k]), &err) != GS_OK)
		{
			ok[k] = false;
			snprintf(names[k], sizeof(names[k]), "CUDA device %d", ordinals[k]);
			snprintf(why[k], sizeof(why[k]), "did not open: %s",
					 err.message[0] ? err.message : "the CUDA engine did not open");
		}
		else if (svc_pool_device < 0)
			svc_pool_device = k;
	}
	if (mode == GS_SERVICE_ON && svc_pool_device < 0)
		gs_svc_unavailable(why[0]);

	/* one lane per device; the ones that did not open stay idle */
	{
		bool		lane_ok[GS_SVC_MAX_DEVICES];
		char		lane_why[GS_SVC_MAX_DEVICES][128];

		svc_nlanes = gs_lanes_start(n, mode == GS_SERVICE_ON ? svc_cuda : NULL, c->nchunks,
									lane_ok, lane_why);
		for (int k = 0; k < n; k++)
		{
			if (ok[k] && !lane_ok[k])
			{
				ok[k] = false;
				strlcpy(why[k], lane_why[k], sizeof(why[k]));
			}
			gs_svc_device_set(k, ordinals[k], names[k], ok[k], why[k]);
		}
	}
	if (gs_svc_devices_ok() == 0)
		gs_svc_unavailable(why[0]);

	if (n == 1)
		strlcpy(device, names[0], sizeof(device));
	else
		snprintf(device, sizeof(device), "%d devices (%d usable): %s%s", n, gs_svc_devices_ok(),
				 names[0], n > 1 ? ", ..." : "");
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	strlcpy(c->device, device, sizeof(c->device));
	c->reason[0] = '\0';
	LWLockRelease(c->lock);
	ereport(LOG, (errmsg("gpuselect GPU service ready on %s (opened in %.1f ms)",
						 device, gs_svc_ms_since(t0))));
	for (int k = 0; k < n; k++)
		if (!ok[k])
			ereport(LOG, (errmsg("gpuselect GPU service: device %d (%s) is not used: %s",
								 k, names[k], why[k])));
}

void
gs_service_main(Datum arg)
{
	GsSvcControl *c = gs_svc_ctl;
	int			mode = gs_guc_service;
	WaitEventSet *wait_set;

	(void) arg;
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGUSR1, procsignal_sigusr1_handler);
	BackgroundWorkerUnblockSignals();

	if (c == NULL)
		proc_exit(1);
	for (int k = 0; k < GS_SVC_MAX_DEVICES; k++)
		for (int r = 0; r < GS_SVC_RUNS_PER_DEVICE; r++)
			svc_runs[k][r].job = -1;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	c->svc_pid = MyProcPid;
	c->svc_proc = MyProc;
	c->up_since = GetCurrentTimestamp();
	c->starts++;
	c->ndevices = 0;
	LWLockRelease(c->lock);
	pg_atomic_fetch_add_u64(&c->epoch, 1);
	pg_atomic_write_u32(&c->state, GS_SVC_STARTING);
	on_proc_exit(gs_svc_on_proc_exit, (Datum) 0);
	before_shmem_exit(gs_svc_on_exit, (Datum) 0);

	/* what an earlier incarnation left (jobs it ran, chunks of the dead) */
	gs_svc_reap();
	gs_svc_open_devices(mode);
	gs_svc_publish_memory();	/* the devices' sizes: the prefetch budget reads them */
	gs_prefetch_start();

	/* the latch, the lanes' wake pipe, postmaster death */
	wait_set = gs_create_wait_set(3);
	AddWaitEventToSet(wait_set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(wait_set, WL_SOCKET_READABLE, gs_lanes_wake_fd(), NULL, NULL);
	AddWaitEventToSet(wait_set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	pg_atomic_write_u32(&c->state, GS_SVC_READY);

	for (;;)
	{
		WaitEvent	ev;
		gs_lane_work *done;

		ResetLatch(MyLatch);
		if (ShutdownRequestPending)
			break;
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		CHECK_FOR_INTERRUPTS();
		pg_atomic_write_u64(&c->heartbeat, (uint64) GetCurrentTimestamp());

		done = gs_lanes_collect();
		while (done != NULL)
		{
			gs_lane_work *next = done->next;

			gs_svc_finish_job(done);
			done = next;
		}
		if (gs_svc_devices_ok() == 0)
		{
			ereport(LOG, (errmsg("gpuselect GPU service: no device left; restarting the service")));
			proc_exit(1);
		}
		gs_svc_reap();
		gs_svc_dispatch();
		gs_prefetch_round();
		gs_svc_publish_memory();
		(void) WaitEventSetWait(wait_set, 100, &ev, 1, PG_WAIT_EXTENSION);
	}
	/* SIGTERM (pg_terminate_backend, shutdown): exit 1 so that it restarts */
	proc_exit(1);
}
