/*
 * service_main.c — the GPU service: a background worker (registered by
 * service_shmem.c when gpuselect is preloaded) that runs every backend's
 * GPU-bound selections, so only this process ever creates a CUDA context.
 *
 * It is single-threaded: one loop that waits on its latch, takes the
 * submitted job with the fewest keys (shortest first, aged: a job's size
 * halves for every 100 ms it waits, gs_svc_next_job), runs it on its
 * device backend and publishes the answer, then frees what abandoned jobs
 * and dead backends left.  Device backends:
 *   cpu_test  the CPU engine on the keys in the pool (CI: the whole
 *             protocol without a GPU)
 *   on        the CUDA engine, opened once here (service_cuda.c)
 * The engines are plain C; this file calls them between its own
 * PostgreSQL calls and never raises an ERROR from inside one.  SIGTERM and
 * a sticky device error end the process with exit code 1, so the
 * postmaster starts it again after bgw_restart_time (a crash would take
 * the whole server through crash recovery).
 */
#include "postgres.h"
#include "pg_compat.h"

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
#include "service.h"
#include "service_cuda.h"

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
 * backends that are gone (gs_pool_reap_held).  The service is single-threaded, so
 * no job is running while this runs.
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

		if (s == GS_JOB_FREE)
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
	LWLockRelease(c->lock);
	/* chunks held by scans of backends that died without their cleanup */
	if (gs_pool_reap_held() > 0)
		ereport(DEBUG1, (errmsg("gpuselect GPU service: reclaimed key-pool chunks of a backend that is gone")));
}

/*
 * Shortest job first, with aging: a job's size counts half for every
 * GS_SVC_AGING_MS it has waited.  Pure shortest-first let a stream of small
 * groups (a dashboard's panels) starve a large one for as long as the
 * stream lasted; with the halving a job of n keys waits behind smaller ones
 * at most GS_SVC_AGING_MS * log2(n / their size) -- 0.1 s for every
 * doubling, 1.7 s for 100M keys behind 1k-key jobs -- while a small job
 * still overtakes a large one that has only just arrived.
 */
#define GS_SVC_AGING_MS 100

/* the submitted job with the smallest aged size (-1: none) */
static int
gs_svc_next_job(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			best = -1;
	uint64		best_n = PG_UINT64_MAX;

	for (int j = 0; j < gs_svc_ctl->njobs; j++)
	{
		GsSvcJob   *job = &gs_svc_jobs[j];
		int64		waited_ms;
		uint64		aged;

		if (pg_atomic_read_u32(&job->state) != GS_JOB_SUBMITTED)
			continue;
		waited_ms = (now - job->submit_time) / 1000;
		aged = waited_ms <= 0 ? job->nkeys
			: waited_ms / GS_SVC_AGING_MS >= 64 ? 0
			: job->nkeys >> (waited_ms / GS_SVC_AGING_MS);
		if (aged < best_n)
		{
			best = j;
			best_n = aged;
		}
	}
	return best;
}

/* the engine's interrupt hook in the service: stop on SIGTERM or when
 * the owner abandoned the job (its answer would be dropped anyway) */
static int
gs_svc_interrupt(void *arg)
{
	GsSvcJob   *job = (GsSvcJob *) arg;

	return ShutdownRequestPending ||
		pg_atomic_read_u32(&job->state) == GS_JOB_ABANDONED;
}

/* test hook gpuselect.test_service_delay: an interruptible wait */
static void
gs_svc_test_delay(GsSvcJob *job, int ms)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);

	while (!gs_svc_interrupt(job) && GetCurrentTimestamp() < end)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		pg_atomic_write_u64(&gs_svc_ctl->heartbeat, (uint64) GetCurrentTimestamp());
	}
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
gs_svc_prepare(int j, GsSvcJob *job, gs_input *in, gs_segment **segs, uint64 **ranks,
			   gs_error *err)
{
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

	*segs = palloc(sizeof(gs_segment) * job->key_chunks);
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
		(*segs)[i].keys = mem;
		(*segs)[i].n = (size_t) n;
		total += n;
		idx = gs_svc_chunks[idx].next;
	}
	if (total != nkeys)
	{
		snprintf(err->message, sizeof(err->message), "request does not match its chunks");
		return false;
	}
	in->segs = *segs;
	in->nsegs = (size_t) job->key_chunks;
	in->key_bytes = kb;

	*ranks = palloc(sizeof(uint64) * nranks);
	if (!gs_pool_copy(job->head, j, 0, *ranks, sizeof(uint64) * nranks, false))
	{
		snprintf(err->message, sizeof(err->message), "bad chunk list");
		return false;
	}
	for (int i = 0; i < nranks; i++)
	{
		if ((*ranks)[i] >= nkeys)
		{
			snprintf(err->message, sizeof(err->message), "rank out of range");
			return false;
		}
	}
	err->status = GS_OK;
	return true;
}

/*
 * Run job j (SUBMITTED) and publish its answer.  Returns true when the
 * device is unusable afterwards (sticky error): the caller exits.
 */
static bool
gs_svc_run_job(int j, int mode, MemoryContext jobcxt)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	uint32		expected = GS_JOB_SUBMITTED;
	gs_input	in;
	gs_segment *segs = NULL;
	uint64	   *ranks = NULL;
	void	   *answer = NULL;
	Size		answer_bytes = 0;
	gs_options	opt;
	gs_error	err;
	gs_status	s;
	bool		sticky = false;
	TimestampTz start;
	MemoryContext old;

	if (!pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_RUNNING))
		return false;			/* abandoned meanwhile */
	start = GetCurrentTimestamp();
	job->queue_ms = (double) (start - job->submit_time) / 1000.0;
	job->copy_ms = 0;
	job->bytes_copied = 0;

	old = MemoryContextSwitchTo(jobcxt);
	memset(&err, 0, sizeof(err));
	memset(&opt, 0, sizeof(opt));
	opt.interrupt = gs_svc_interrupt;
	opt.interrupt_arg = job;
	opt.seed = job->seed;
	opt.approx_buckets = job->approx_buckets;

	if (!gs_svc_prepare(j, job, &in, &segs, &ranks, &err))
		s = err.status;
	else
	{
		answer_bytes = job->approx ? sizeof(gs_approx_pick) * job->nranks
			: sizeof(uint64) * job->nranks;
		answer = palloc(answer_bytes);
		if (job->delay_ms > 0)
			gs_svc_test_delay(job, job->delay_ms);

		if (job->fault != GS_SVC_FAULT_NONE &&
			(mode == GS_SERVICE_CPU_TEST ||
			 (job->fault != GS_SVC_FAULT_LAUNCH && job->fault != GS_SVC_FAULT_OOM)))
		{
			s = GS_ERR_DEVICE;
			snprintf(err.message, sizeof(err.message), "injected failure (gpuselect.test_service_fault)");
			sticky = (job->fault == GS_SVC_FAULT_STICKY);
		}
		else if (gs_svc_interrupt(job))
		{
			s = GS_ERR_CANCELED;
			snprintf(err.message, sizeof(err.message), "the service is shutting down or the request was abandoned");
		}
		else if (mode == GS_SERVICE_CPU_TEST)
		{
			memset(&err, 0, sizeof(err));
			gs_cpu_test_force_path(job->cpu_path);
			if (job->approx)
				s = gs_cpu_select_approx(&in, ranks, job->nranks, &opt, answer, &err);
			else
				s = gs_cpu_select(&in, ranks, job->nranks, answer, &opt, &err);
		}
		else
		{
			double		copy_ms;
			uint64_t	copied;

			memset(&err, 0, sizeof(err));
			if (job->fault == GS_SVC_FAULT_LAUNCH)
				gs_svc_cuda_arm_fault(GS_SVC_CUDA_FAULT_LAUNCH);
			else if (job->fault == GS_SVC_FAULT_OOM)
				gs_svc_cuda_arm_fault(GS_SVC_CUDA_FAULT_OOM);
			s = gs_svc_cuda_select(&in, ranks, job->nranks,
								   job->approx ? NULL : (uint64_t *) answer,
								   job->approx ? (gs_approx_pick *) answer : NULL,
								   &opt, &copy_ms, &copied, &sticky, &err);
			job->copy_ms = copy_ms;
			job->bytes_copied = copied;
		}
	}
	job->select_ms = gs_svc_ms_since(start) - job->copy_ms;

	/* publish: RUNNING -> WRITING (fails when the owner abandoned the job) */
	expected = GS_JOB_RUNNING;
	if (!pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_WRITING))
		gs_svc_release_job(j);
	else
	{
		uint32		final = GS_JOB_DONE;

		job->status = s;
		if (s == GS_OK &&
			!gs_pool_copy(job->head, j, sizeof(uint64) * job->nranks, answer, answer_bytes, true))
		{
			job->status = GS_ERR_INVALID;
			snprintf(err.message, sizeof(err.message), "bad chunk list");
		}
		if (job->status != GS_OK)
		{
			final = GS_JOB_FAILED;
			strlcpy(job->message, err.message[0] ? err.message : "the selection failed",
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
			gs_svc_release_job(j);	/* abandoned while the answer was written */
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(jobcxt);
	return sticky;
}

/*
 * Device memory for gpuselect_status(), published by the service (the only
 * process with a context): after every job, and once a second otherwise.
 * cpu_test: no device, all 0.
 */
static TimestampTz last_memory_publish = 0;

static void
gs_svc_publish_memory(int mode, bool now)
{
	GsSvcControl *c = gs_svc_ctl;
	uint64		engine = 0,
				peak = 0,
				used = 0,
				total = 0;

	if (!now && !TimestampDifferenceExceeds(last_memory_publish, GetCurrentTimestamp(), 1000))
		return;
	last_memory_publish = GetCurrentTimestamp();
	if (mode == GS_SERVICE_ON)
		gs_svc_cuda_memory(&engine, &peak, &used, &total);
	pg_atomic_write_u64(&c->device_bytes, engine);
	pg_atomic_write_u64(&c->device_peak, peak);
	pg_atomic_write_u64(&c->device_used, used);
	pg_atomic_write_u64(&c->device_total, total);
}

/* exit callback: backends stop waiting for this incarnation at once */
static void
gs_svc_on_exit(int code, Datum arg)
{
	GsSvcControl *c = gs_svc_ctl;
	uint32		expected = GS_SVC_READY;

	(void) code;
	(void) arg;
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

		if (s == GS_JOB_SUBMITTED || s == GS_JOB_RUNNING || s == GS_JOB_WRITING)
			gs_svc_wake(gs_svc_jobs[j].owner_proc, gs_svc_jobs[j].owner_pid);
	}
	if (gs_guc_service == GS_SERVICE_ON)
		gs_svc_cuda_close();
	/* no context, no device memory of ours */
	pg_atomic_write_u64(&c->device_bytes, 0);
	pg_atomic_write_u64(&c->device_used, 0);
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

static void
gs_svc_open_device(int mode)
{
	GsSvcControl *c = gs_svc_ctl;
	char		device[128];
	gs_error	err;
	TimestampTz t0 = GetCurrentTimestamp();

	memset(&err, 0, sizeof(err));
	if (mode == GS_SERVICE_CPU_TEST)
		strlcpy(device, "cpu_test (the CPU engine)", sizeof(device));
	else if (gs_svc_cuda_open(gs_svc_pool, (size_t) c->nchunks * c->chunk_bytes,
							  device, sizeof(device), &err) != GS_OK)
		gs_svc_unavailable(err.message[0] ? err.message : "the CUDA engine did not open");

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	strlcpy(c->device, device, sizeof(c->device));
	c->reason[0] = '\0';
	LWLockRelease(c->lock);
	ereport(LOG, (errmsg("gpuselect GPU service ready on %s (opened in %.1f ms)",
						 device, gs_svc_ms_since(t0))));
}

void
gs_service_main(Datum arg)
{
	GsSvcControl *c = gs_svc_ctl;
	int			mode = gs_guc_service;
	MemoryContext jobcxt;

	(void) arg;
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGUSR1, procsignal_sigusr1_handler);
	BackgroundWorkerUnblockSignals();

	if (c == NULL)
		proc_exit(1);
	jobcxt = AllocSetContextCreate(TopMemoryContext, "gpuselect service job",
								   ALLOCSET_DEFAULT_SIZES);

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	c->svc_pid = MyProcPid;
	c->svc_proc = MyProc;
	c->up_since = GetCurrentTimestamp();
	c->starts++;
	LWLockRelease(c->lock);
	pg_atomic_fetch_add_u64(&c->epoch, 1);
	pg_atomic_write_u32(&c->state, GS_SVC_STARTING);
	before_shmem_exit(gs_svc_on_exit, (Datum) 0);

	/* what an earlier incarnation left (jobs it ran, chunks of the dead) */
	gs_svc_reap();
	gs_svc_open_device(mode);
	gs_svc_publish_memory(mode, true);
	pg_atomic_write_u32(&c->state, GS_SVC_READY);

	for (;;)
	{
		int			j;

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

		gs_svc_reap();
		j = gs_svc_next_job();
		if (j >= 0)
		{
			if (gs_svc_run_job(j, mode, jobcxt))
			{
				ereport(LOG, (errmsg("gpuselect GPU service: the device failed for good; restarting the service")));
				proc_exit(1);
			}
			gs_svc_publish_memory(mode, true);
			continue;			/* more may be waiting: no sleep */
		}
		gs_svc_publish_memory(mode, false);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
	}
	/* SIGTERM (pg_terminate_backend, shutdown): exit 1 so that it restarts */
	proc_exit(1);
}
