/*
 * service_client.c — a backend's side of the GPU service (service.h has the
 * protocol).  dispatch.c calls gs_service_select for a group headed for the
 * GPU when the server runs the service: the keys the scan wrote into pool
 * chunks it holds (service_scan.c) are referred to in place, the keys of
 * the state's palloc'd chunks are copied into job chunks, the request goes
 * into this backend's job slot (service_slot.c), the service is woken,
 * and the backend sleeps on its latch until the answer, a timeout, or the
 * service going away.
 *
 * Held chunks include those parallel workers leased for this backend
 * and a combined state adopted (service_scan.c): they are this backend's
 * like its own scan's, and read in place the same way.
 *
 * The backend keeps its own keys (held chunks are freed only by this
 * backend, with the state), so any failure ends in the CPU engine
 * with the same answer (gpuselect.device = auto; counted as fallen back)
 * or a clean ERROR (gpu).  A cancel or ERROR while waiting abandons the
 * job in a PG_CATCH block (compare-and-swaps and the pool's LWLock only:
 * nothing there can raise an ERROR); a FATAL or normal exit abandons it
 * in an on_shmem_exit callback.  The service frees an abandoned job's
 * chunks once it no longer reads them.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "select/dispatch.h"
#include "base/guc.h"
#include "service/service.h"
#include "select/service_client.h"
#include "state/service_scan.h"

/* auto: count and fall back to the CPU; gpu: a clean ERROR */
static GsGpuOutcome
gs_svc_fail(GsRunInfo *info, const char *reason)
{
	if (gs_guc_device == GS_DEVICE_GPU)
		gs_dispatch_gpu_required(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
								 psprintf("the GPU service did not answer: %s", reason));
	pg_atomic_fetch_add_u64(&gs_svc_ctl->fallen_back, 1);
	info->path = psprintf("cpu (fallback: GPU service: %s)", reason);
	return GS_GPU_NOT_USED;
}

/*
 * The keys of st's palloc'd chunks into the job's copy chunks (the
 * copy_chunks after the io_chunks from head), packed; each copy chunk's
 * count into its descriptor.  Returns the last chunk of the job's own
 * list (-1 when the list is damaged).
 */
static int
gs_svc_copy_keys(int j, const GsState *st, int io_chunks, int copy_chunks)
{
	Size		cb = gs_svc_ctl->chunk_bytes;
	int			idx = gs_svc_jobs[j].head;
	int			tail;
	char	   *mem;
	Size		off = 0;

	/* the io area's last chunk */
	for (int i = 0; i < io_chunks - 1; i++)
	{
		if (gs_pool_chunk(idx, j) == NULL)
			return -1;
		idx = gs_svc_chunks[idx].next;
	}
	if (gs_pool_chunk(idx, j) == NULL)
		return -1;
	if (copy_chunks == 0)
		return idx;
	idx = gs_svc_chunks[idx].next;
	mem = gs_pool_chunk(idx, j);
	tail = idx;
	for (int i = 0; i < st->nchunks; i++)
	{
		const GsChunk *k = &st->chunks[i];
		const char *src = k->data;
		Size		len = (Size) k->n * st->key_bytes;

		if (k->pool_ref != 0)
			continue;
		while (len > 0)
		{
			Size		piece;

			if (off == cb)
			{
				gs_svc_chunks[idx].nkeys = (uint32) (off / st->key_bytes);
				idx = gs_svc_chunks[idx].next;
				mem = gs_pool_chunk(idx, j);
				tail = idx;
				off = 0;
			}
			if (mem == NULL)
				return -1;
			piece = Min(len, cb - off);
			memcpy(mem + off, src, piece);
			src += piece;
			len -= piece;
			off += piece;
		}
	}
	if (mem == NULL)
		return -1;
	gs_svc_chunks[idx].nkeys = (uint32) (off / st->key_bytes);
	return tail;
}

/*
 * After the job's own chunks: the state's held chunks, in place, with
 * their counts.  False when one is not ours (a damaged list).
 */
static bool
gs_svc_link_held(int j, const GsState *st, int tail, int nheld)
{
	int		   *idx;
	uint32	   *nk;
	int			n = 0;
	bool		ok;

	if (nheld == 0)
		return true;
	idx = palloc(sizeof(int) * nheld);
	nk = palloc(sizeof(uint32) * nheld);
	for (int i = 0; i < st->nchunks; i++)
	{
		if (st->chunks[i].pool_ref == 0 || st->chunks[i].n == 0)
			continue;
		idx[n] = st->chunks[i].pool_ref - 1;
		nk[n] = (uint32) st->chunks[i].n;
		n++;
	}
	Assert(n == nheld);
	ok = gs_pool_link_held(tail, idx, nk, n, j);
	pfree(idx);
	pfree(nk);
	return ok;
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
 * for chunks to come back, up to gpuselect.service_timeout, polling
 * (nobody signals a freed chunk yet) -- unless the chunks missing are held
 * by this backend's own scans (other groups of the same query), which
 * only go back after this call.  A cancel while waiting frees the slot
 * and is re-thrown.  -1: none.
 */
static int
gs_svc_take_chunks(int j, int n)
{
	int			head = gs_pool_alloc(n, j);
	TimestampTz deadline;

	if (head >= 0 || gs_guc_device != GS_DEVICE_GPU)
		return head;
	/* what is missing is held by this backend's own scans: nobody gives it back */
	if (gs_svc_ctl->nchunks - gs_service_scan_held_chunks() < n)
		return -1;
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

/* the state's held chunks, the keys outside them, and the keys in held
 * chunks partial states leased (written by parallel workers, or by the
 * leader's own partial aggregation) */
static void
gs_svc_count_chunks(const GsState *st, int *nheld, uint64 *unpooled, uint64 *leased)
{
	*nheld = 0;
	*unpooled = 0;
	*leased = 0;
	for (int i = 0; i < st->nchunks; i++)
	{
		if (st->chunks[i].n == 0)
			continue;
		if (st->chunks[i].pool_ref != 0)
		{
			(*nheld)++;
			if (st->chunks[i].leased)
				*leased += st->chunks[i].n;
		}
		else
			*unpooled += st->chunks[i].n;
	}
}

/* the request's fields, this session's settings among them (its chunks are linked) */
static void
gs_svc_describe_job(GsSvcJob *job, unsigned key_bytes, uint64 n, int nranks, bool approx,
					int io_chunks, int key_chunks)
{
	job->key_bytes = key_bytes;
	job->approx = approx;
	job->approx_buckets = (uint32) gs_guc_approx_buckets;
	job->seed = (uint64) gs_guc_seed;
	job->cpu_path = gs_guc_test_cpu_path;
	job->delay_ms = gs_guc_test_service_delay;
	job->fault = gs_guc_test_service_fault;
	job->fail_device = gs_guc_test_service_fail_device;
	job->nkeys = n;
	job->nranks = nranks;
	job->io_chunks = io_chunks;
	job->key_chunks = key_chunks;
	job->nchunks = io_chunks + key_chunks;
	job->submit_time = GetCurrentTimestamp();
	job->status = GS_OK;
	job->message[0] = '\0';
}

GsGpuOutcome
gs_service_select(GsState *st, const gs_input *in, const uint64 *ranks, int nranks,
				  uint64 *out_keys, gs_approx_pick *picks, GsRunInfo *info)
{
	GsSvcControl *c = gs_svc_ctl;
	GsSvcJob   *job;
	int			j;
	uint64		n = gs_input_count(in);
	Size		cb = c->chunk_bytes;
	uint64		per_chunk = cb / in->key_bytes;
	int64		io_chunks = (int64) (((uint64) nranks * GS_SVC_IO_BYTES_PER_RANK + cb - 1) / cb);
	int			nheld;
	uint64		unpooled;
	uint64		leased;
	int64		copy_chunks;
	uint64		epoch;
	uint32		expected;
	const char *why;
	int			tail;
	bool		ok;

	if (pg_atomic_read_u32(&c->state) != GS_SVC_READY)
		return gs_svc_fail(info, psprintf("the service is %s",
										  gs_svc_state_name(pg_atomic_read_u32(&c->state))));
	j = gs_svc_my_slot();
	if (j < 0)
		return gs_svc_fail(info, "this process has no job slot");
	gs_svc_register_exit();
	if (!gs_svc_slot_free(j))
		return gs_svc_fail(info, "this process's job slot is still busy");
	if ((int64) ((n + per_chunk - 1) / per_chunk) + io_chunks > c->nchunks)
	{
		pg_atomic_fetch_add_u64(&c->pool_exhausted, 1);
		return gs_svc_fail(info, "the group is larger than the key pool");
	}
	gs_svc_count_chunks(st, &nheld, &unpooled, &leased);
	copy_chunks = (int64) ((unpooled + per_chunk - 1) / per_chunk);
	if (copy_chunks + nheld + io_chunks > c->nchunks)
		return gs_svc_fail(info, "the group is larger than the key pool");

	/* take the slot (FREE -> OPEN), then chunks for it */
	job = &gs_svc_jobs[j];
	job->owner_proc = MyProc;
	job->owner_pid = MyProcPid;
	job->head = -1;
	expected = GS_JOB_FREE;
	if (!pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_OPEN))
		return gs_svc_fail(info, "this process's job slot is still busy");
	job->head = gs_svc_take_chunks(j, (int) (io_chunks + copy_chunks));
	if (job->head < 0)
	{
		pg_atomic_write_u32(&job->state, GS_JOB_FREE);
		pg_atomic_fetch_add_u64(&c->pool_exhausted, 1);
		return gs_svc_fail(info, "the key pool is exhausted");
	}
	/* ranks into the io area; palloc'd keys copied; held chunks in place */
	ok = gs_pool_copy(job->head, j, 0, (void *) ranks, sizeof(uint64) * nranks, true);
	tail = ok ? gs_svc_copy_keys(j, st, (int) io_chunks, (int) copy_chunks) : -1;
	ok = tail >= 0 && gs_svc_link_held(j, st, tail, nheld);
	if (!ok)
	{
		gs_svc_abandon(j);
		return gs_svc_fail(info, "the key pool's chunk list is damaged");
	}

	gs_svc_describe_job(job, in->key_bytes, n, nranks, picks != NULL,
						(int) io_chunks, (int) copy_chunks + nheld);
	epoch = pg_atomic_read_u64(&c->epoch);
	job->epoch = epoch;
	pg_atomic_fetch_add_u64(&c->scan_keys_in_place, n - unpooled);
	pg_atomic_fetch_add_u64(&c->scan_keys_copied, unpooled);
	pg_atomic_fetch_add_u64(&c->worker_keys_in_place, leased);
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
	ok = picks ? gs_pool_copy(job->head, j, sizeof(uint64) * nranks, picks,
							  sizeof(gs_approx_pick) * nranks, false)
		: gs_pool_copy(job->head, j, sizeof(uint64) * nranks, out_keys,
					   sizeof(uint64) * nranks, false);
	info->copy_ms = job->copy_ms;
	info->select_ms = job->queue_ms + job->select_ms;
	info->bytes_copied = (int64) job->bytes_copied;
	gs_svc_abandon(j);			/* DONE: frees the job's chunks (not the held ones) and the slot */
	if (!ok)
		return gs_svc_fail(info, "the key pool's chunk list is damaged");
	info->path = "service";
	return GS_GPU_DONE;
}
