/*
 * service_client.c — a backend's side of the GPU service (service.h has the
 * protocol).  dispatch.c calls gs_service_select for a group headed for the
 * GPU when the server runs the service: the keys are copied into pool
 * chunks (phase 1: at the final call), the request goes into this
 * backend's job slot, the service is woken, and the backend sleeps on its
 * latch until the answer, a timeout, or the service going away.
 *
 * The backend keeps its own keys, so any failure ends in the CPU engine
 * with the same answer (gpuselect.device = auto; counted as fallen back)
 * or a clean ERROR (gpu).  A cancel or ERROR while waiting abandons the
 * job in a PG_CATCH block (compare-and-swaps and the pool's LWLock only:
 * nothing there can raise an ERROR); a FATAL or normal exit abandons it
 * in an on_shmem_exit callback.  The service frees an abandoned job's
 * chunks once it no longer reads them.
 */
#include "postgres.h"
#include "pg_compat.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "dispatch.h"
#include "guc.h"
#include "service.h"

static bool gs_svc_exit_registered = false;

/* this process's job slot: its proc number (17+; 0-based) or backend id
 * (15/16, 1-based: pg_compat.h maps the name), hence MaxBackends + 1 slots */
static int
gs_svc_my_slot(void)
{
	int			idx = (int) MyProcNumber;

	if (idx < 0 || idx >= gs_svc_ctl->njobs)
		return -1;
	return idx;
}

static void
gs_svc_wake_service(void)
{
	PGPROC	   *svc = gs_svc_ctl->svc_proc;

	if (svc != NULL)
		SetLatch(&svc->procLatch);
}

/*
 * Give up job j: whatever state it is in, afterwards this backend no
 * longer touches it.  Jobs the service may be reading become ABANDONED
 * (the service frees them); the others are freed here.  Never ERRORs.
 */
static void
gs_svc_abandon(int j)
{
	GsSvcJob   *job = &gs_svc_jobs[j];

	if (job->owner_pid != MyProcPid)
		return;
	for (int tries = 0; tries < 1000; tries++)
	{
		uint32		s = pg_atomic_read_u32(&job->state);

		switch ((GsJobState) s)
		{
			case GS_JOB_FREE:
			case GS_JOB_ABANDONED:
				return;
			case GS_JOB_OPEN:
			case GS_JOB_DONE:
			case GS_JOB_FAILED:
				/* the service does not touch these: free them here */
				gs_pool_free_list(job->head, j);
				job->head = -1;
				pg_atomic_write_u32(&job->state, GS_JOB_FREE);
				return;
			case GS_JOB_SUBMITTED:
			case GS_JOB_RUNNING:
			case GS_JOB_WRITING:
				if (pg_atomic_compare_exchange_u32(&job->state, &s, GS_JOB_ABANDONED))
				{
					gs_svc_wake_service();
					return;
				}
				break;			/* the service moved it: look again */
		}
	}
}

static void
gs_svc_client_exit(int code, Datum arg)
{
	int			j = gs_svc_my_slot();

	(void) code;
	(void) arg;
	if (j >= 0)
		gs_svc_abandon(j);
}

/* auto: count and fall back to the CPU; gpu: a clean ERROR */
static GpuPathOutcome
gs_svc_fail(GsRunInfo *info, const char *reason)
{
	if (gs_guc_device == GS_DEVICE_GPU)
		gs_dispatch_gpu_required(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
								 psprintf("the GPU service did not answer: %s", reason));
	pg_atomic_fetch_add_u64(&gs_svc_ctl->fallen_back, 1);
	info->path = psprintf("cpu (fallback: GPU service: %s)", reason);
	return GPU_PATH_NOT_USED;
}

/* the group's keys into the job's first chunks, chunk after chunk */
static bool
gs_svc_copy_keys(int j, const gs_input *in)
{
	Size		cb = gs_svc_ctl->chunk_bytes;
	int			idx = gs_svc_jobs[j].head;
	char	   *mem = gs_pool_chunk(idx, j);
	Size		off = 0;

	for (size_t s = 0; s < in->nsegs; s++)
	{
		const char *src = (const char *) in->segs[s].keys;
		Size		len = (Size) in->segs[s].n * in->key_bytes;

		while (len > 0)
		{
			Size		piece;

			if (off == cb)
			{
				idx = gs_svc_chunks[idx].next;
				mem = gs_pool_chunk(idx, j);
				off = 0;
			}
			if (mem == NULL)
				return false;
			piece = Min(len, cb - off);
			memcpy(mem + off, src, piece);
			src += piece;
			len -= piece;
			off += piece;
		}
	}
	return true;
}

/*
 * Sleep until job j is DONE or FAILED.  Returns NULL then, else why it
 * was given up (the job is abandoned then).  A cancel or ERROR from
 * CHECK_FOR_INTERRUPTS abandons it and is re-thrown.
 */
static const char *
gs_svc_wait(int j, uint64 epoch)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   gs_guc_service_timeout);
	const char *volatile why = NULL;

	PG_TRY();
	{
		for (;;)
		{
			uint32		s;
			long		left;

			/* reset before checking, so a SetLatch after the check wakes us */
			ResetLatch(MyLatch);
			s = pg_atomic_read_u32(&job->state);
			if (s == GS_JOB_DONE || s == GS_JOB_FAILED)
				break;
			if (s != GS_JOB_SUBMITTED && s != GS_JOB_RUNNING && s != GS_JOB_WRITING)
			{
				why = "the request was dropped";
				break;
			}
			if (pg_atomic_read_u32(&gs_svc_ctl->state) != GS_SVC_READY ||
				pg_atomic_read_u64(&gs_svc_ctl->epoch) != epoch)
			{
				why = "the service stopped";
				break;
			}
			left = (long) ((deadline - GetCurrentTimestamp()) / 1000);
			if (left <= 0)
			{
				why = "timed out (gpuselect.service_timeout)";
				pg_atomic_fetch_add_u64(&gs_svc_ctl->timed_out, 1);
				break;
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 Min(left, 100L), PG_WAIT_EXTENSION);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		gs_svc_abandon(j);
		pg_atomic_fetch_add_u64(&gs_svc_ctl->canceled, 1);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (why != NULL)
		gs_svc_abandon(j);
	return why;
}

/* a job of ours the service has not freed yet (abandoned earlier): wait a little */
static bool
gs_svc_slot_free(int j)
{
	GsSvcJob   *job = &gs_svc_jobs[j];

	for (int i = 0; i < 100; i++)
	{
		uint32		s = pg_atomic_read_u32(&job->state);

		if (s == GS_JOB_FREE)
			return true;
		if (job->owner_pid == MyProcPid && s != GS_JOB_ABANDONED)
			gs_svc_abandon(j);	/* a leftover of ours: free it */
		else
		{
			gs_svc_wake_service();
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 10L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	return pg_atomic_read_u32(&job->state) == GS_JOB_FREE;
}

/*
 * Chunks for job j (held OPEN).  The pool full with other sessions' keys:
 * auto falls back to the CPU at once (its engine is right here), gpu waits
 * for chunks to come back, up to gpuselect.service_timeout, polling (phase
 * 1: nobody signals a freed chunk).  A cancel while waiting frees the slot
 * and is re-thrown.  -1: none.
 */
static int
gs_svc_take_chunks(int j, int n)
{
	int			head = gs_pool_alloc(n, j);
	TimestampTz deadline;

	if (head >= 0 || gs_guc_device != GS_DEVICE_GPU)
		return head;
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), gs_guc_service_timeout);
	PG_TRY();
	{
		while (head < 0 && GetCurrentTimestamp() < deadline &&
			   pg_atomic_read_u32(&gs_svc_ctl->state) == GS_SVC_READY)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 5L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			head = gs_pool_alloc(n, j);
		}
	}
	PG_CATCH();
	{
		gs_svc_abandon(j);		/* OPEN, no chunks: back to FREE */
		PG_RE_THROW();
	}
	PG_END_TRY();
	return head;
}

GpuPathOutcome
gs_service_select(const gs_input *in, const uint64 *ranks, int nranks,
				  uint64 *out_keys, gs_approx_pick *picks, GsRunInfo *info)
{
	GsSvcControl *c = gs_svc_ctl;
	GsSvcJob   *job;
	int			j;
	uint64		n = gs_input_count(in);
	Size		cb = c->chunk_bytes;
	uint64		per_chunk = cb / in->key_bytes;
	int64		key_chunks = (int64) ((n + per_chunk - 1) / per_chunk);
	int64		io_chunks = (int64) (((uint64) nranks * GS_SVC_IO_BYTES_PER_RANK + cb - 1) / cb);
	uint64		epoch;
	uint32		expected;
	const char *why;
	Size		io_off;
	bool		ok;

	if (pg_atomic_read_u32(&c->state) != GS_SVC_READY)
		return gs_svc_fail(info, psprintf("the service is %s",
										  gs_svc_state_name(pg_atomic_read_u32(&c->state))));
	j = gs_svc_my_slot();
	if (j < 0)
		return gs_svc_fail(info, "this process has no job slot");
	if (!gs_svc_exit_registered)
	{
		on_shmem_exit(gs_svc_client_exit, (Datum) 0);
		gs_svc_exit_registered = true;
	}
	if (!gs_svc_slot_free(j))
		return gs_svc_fail(info, "this process's job slot is still busy");
	if (key_chunks + io_chunks > c->nchunks)
	{
		pg_atomic_fetch_add_u64(&c->pool_exhausted, 1);
		return gs_svc_fail(info, "the group is larger than the key pool");
	}

	/* take the slot (FREE -> OPEN), then chunks for it */
	job = &gs_svc_jobs[j];
	job->owner_proc = MyProc;
	job->owner_pid = MyProcPid;
	job->head = -1;
	expected = GS_JOB_FREE;
	if (!pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_OPEN))
		return gs_svc_fail(info, "this process's job slot is still busy");
	job->head = gs_svc_take_chunks(j, (int) (key_chunks + io_chunks));
	if (job->head < 0)
	{
		pg_atomic_write_u32(&job->state, GS_JOB_FREE);
		pg_atomic_fetch_add_u64(&c->pool_exhausted, 1);
		return gs_svc_fail(info, "the key pool is exhausted");
	}
	io_off = (Size) key_chunks * cb;
	ok = gs_svc_copy_keys(j, in) &&
		gs_pool_copy(job->head, j, io_off, (void *) ranks, sizeof(uint64) * nranks, true);
	if (!ok)
	{
		gs_svc_abandon(j);
		return gs_svc_fail(info, "the key pool's chunk list is damaged");
	}

	job->key_bytes = in->key_bytes;
	job->approx = (picks != NULL);
	job->approx_buckets = (uint32) gs_guc_approx_buckets;
	job->seed = (uint64) gs_guc_seed;
	job->cpu_path = gs_guc_test_cpu_path;
	job->delay_ms = gs_guc_test_service_delay;
	job->fault = gs_guc_test_service_fault;
	job->nkeys = n;
	job->nranks = nranks;
	job->key_chunks = (int) key_chunks;
	job->nchunks = (int) (key_chunks + io_chunks);
	job->submit_time = GetCurrentTimestamp();
	job->status = GS_OK;
	job->message[0] = '\0';
	epoch = pg_atomic_read_u64(&c->epoch);
	job->epoch = epoch;
	/* the compare-and-swap is a full barrier: the request is visible first */
	expected = GS_JOB_OPEN;
	if (!pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_SUBMITTED))
	{
		gs_svc_abandon(j);
		return gs_svc_fail(info, "the request was dropped");
	}
	gs_svc_wake_service();

	why = gs_svc_wait(j, epoch);
	if (why != NULL)
		return gs_svc_fail(info, why);

	pg_read_barrier();
	if (pg_atomic_read_u32(&job->state) == GS_JOB_FAILED)
	{
		char		msg[sizeof(job->message)];

		strlcpy(msg, job->message, sizeof(msg));
		gs_svc_abandon(j);
		return gs_svc_fail(info, psprintf("the selection failed: %s", msg));
	}
	io_off += sizeof(uint64) * nranks;
	ok = picks ? gs_pool_copy(job->head, j, io_off, picks, sizeof(gs_approx_pick) * nranks, false)
		: gs_pool_copy(job->head, j, io_off, out_keys, sizeof(uint64) * nranks, false);
	info->copy_ms = job->copy_ms;
	info->select_ms = job->queue_ms + job->select_ms;
	info->bytes_copied = (int64) job->bytes_copied;
	gs_svc_abandon(j);			/* DONE: frees the chunks and the slot */
	if (!ok)
		return gs_svc_fail(info, "the key pool's chunk list is damaged");
	info->path = "service";
	return GPU_PATH_DONE;
}
