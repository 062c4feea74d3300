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
 *
 * Two waits are not the service's work on the job (issue #29), and both
 * are bounded by gpuselect.service_timeout (auto: by the CPU's time for
 * the group, GsSvcClock):
 *   - the pool's queue: a backend never waits for chunks while it holds
 *     any another waiter needs (gs_svc_take_chunks gives its held chunks
 *     back first, unless it is first in line), first come first served;
 *     the first in line fills its job's chunks as they come free;
 *   - a restart: a job the restart caught is run by the next incarnation,
 *     or submitted again once it is READY (gs_svc_wait, gs_service_select);
 *     only past the deadline does the request fail, saying so.
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
 * One request's clocks.  deadline: gpuselect.service_timeout from the
 * final call, for the whole request (the pool's queue, a restart, the
 * service's answer).  patience: how long it waits for what is not the
 * service's work on it -- the pool's queue and a restarting service.  In
 * gpu mode that is the deadline.  In auto it is also bounded by the CPU's
 * time for the group: the backend has every key in its own memory (or in
 * chunks it holds), so its CPU engine could answer at once, and waiting is
 * a bet that the GPU frees up soon.  Without a measurement of how long the
 * wait will be, the break-even rule (ski rental) bounds the loss: wait at
 * most as long as the CPU would take, then select on the CPU, so a wait
 * that does not pay off at most doubles the CPU's time, while one that
 * does gives the group the GPU (issue #29: falling back at once let
 * nobody get the GPU under contention).  The CPU's time is estimated from
 * the group's size at GS_SVC_CPU_NS_PER_KEY: the CPU engine's 3-8 ns per
 * value measured for gpuselect.gpu_min_rows (guc.c), at its fast end, so
 * auto errs towards the CPU.
 */
#define GS_SVC_CPU_NS_PER_KEY 5

typedef struct GsSvcClock
{
	TimestampTz deadline;
	TimestampTz patience;
} GsSvcClock;

static void
gs_svc_clock_start(GsSvcClock *clk, uint64 nkeys)
{
	TimestampTz now = GetCurrentTimestamp();

	clk->deadline = TimestampTzPlusMilliseconds(now, gs_guc_service_timeout);
	clk->patience = clk->deadline;
	if (gs_guc_device != GS_DEVICE_GPU)
	{
		uint64		us = nkeys * GS_SVC_CPU_NS_PER_KEY / 1000;

		if (now + (TimestampTz) us < clk->patience)
			clk->patience = now + (TimestampTz) us;
	}
}

static bool
gs_svc_past(TimestampTz t)
{
	return GetCurrentTimestamp() >= t;
}

/* poll/sleep step of the waits below (a SetLatch ends it early) */
static void
gs_svc_nap(TimestampTz until, long max_ms)
{
	long		left = (long) ((until - GetCurrentTimestamp()) / 1000);

	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 Max(1L, Min(left, max_ms)), PG_WAIT_EXTENSION);
}

/*
 * The service READY, waiting while it is starting or restarting (down) up
 * to `until`; false when it is not (then *state says what it is).  Holds
 * nothing while it waits.
 */
static bool
gs_svc_wait_ready(TimestampTz until, uint32 *state)
{
	for (;;)
	{
		*state = pg_atomic_read_u32(&gs_svc_ctl->state);
		if (*state == GS_SVC_READY)
			return true;
		/* off, or no device (it tries again in a minute): no use waiting */
		if (*state != GS_SVC_STARTING && *state != GS_SVC_DOWN)
			return false;
		if (gs_svc_past(until))
			return false;
		gs_svc_nap(until, 20L);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* outcomes of one attempt (gs_svc_attempt) and of a wait */
typedef enum GsSvcEnd
{
	GS_SVC_ANSWERED,			/* the job is DONE or FAILED: read it */
	GS_SVC_GIVEN_UP,			/* why says why; nothing left to clean */
	GS_SVC_RESTARTED			/* a restart dropped the job: submit it again */
} GsSvcEnd;

/*
 * Sleep until job j is DONE or FAILED (ANSWERED).  A service restart
 * (its state not READY, or a new epoch) does not end the wait: the dying
 * service hands the job it was running back as SUBMITTED (service_main.c,
 * gs_svc_requeue), one that was waiting stays so, and once the service is
 * READY again (it reaps what the old one left before that) the job is
 * either still there, run by the new one, or gone (RESTARTED: the caller
 * submits it again).  Gives up (the job abandoned, why set) at the
 * deadline, or for a restart at clk's patience.  A cancel or ERROR from
 * CHECK_FOR_INTERRUPTS abandons the job and is re-thrown.
 */
static GsSvcEnd
gs_svc_wait(int j, uint64 epoch, const GsSvcClock *clk, bool *restarted, const char **why)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	volatile GsSvcEnd end = GS_SVC_ANSWERED;
	volatile uint64 my_epoch = epoch;

	*why = NULL;
	PG_TRY();
	{
		for (;;)
		{
			uint32		s,
						svc;
			bool		live;

			/* reset before checking, so a SetLatch after the check wakes us */
			ResetLatch(MyLatch);
			s = pg_atomic_read_u32(&job->state);
			if (s == GS_JOB_DONE || s == GS_JOB_FAILED)
				break;
			live = gs_svc_job_live(s);
			svc = pg_atomic_read_u32(&gs_svc_ctl->state);
			if (svc != GS_SVC_READY || pg_atomic_read_u64(&gs_svc_ctl->epoch) != my_epoch)
			{
				*restarted = true;
				if (svc == GS_SVC_READY)
				{
					/* the new incarnation: its start reaped the old one's leftovers */
					my_epoch = pg_atomic_read_u64(&gs_svc_ctl->epoch);
					if (!live)
					{
						end = GS_SVC_RESTARTED;
						break;
					}
					continue;
				}
				if (gs_svc_past(clk->patience))
				{
					*why = gs_guc_device == GS_DEVICE_GPU
						? "the service restarted and was not ready again within gpuselect.service_timeout"
						: "the service restarted and was not ready again within the CPU's time for this group";
					end = GS_SVC_GIVEN_UP;
					break;
				}
			}
			else if (!live)
			{
				*why = "the request was dropped";
				end = GS_SVC_GIVEN_UP;
				break;
			}
			if (gs_svc_past(clk->deadline))
			{
				*why = "timed out (gpuselect.service_timeout)";
				pg_atomic_fetch_add_u64(&gs_svc_ctl->timed_out, 1);
				end = GS_SVC_GIVEN_UP;
				break;
			}
			gs_svc_nap(clk->deadline, 100L);
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

	if (end != GS_SVC_ANSWERED)
		gs_svc_abandon(j);
	return end;
}

/*
 * This backend's job slot FREE: a job of ours abandoned earlier waits for
 * the service to free it (a restarting service does that when it is back),
 * a leftover we still own is freed here.  Up to `until`.
 */
static bool
gs_svc_slot_free(int j, TimestampTz until)
{
	GsSvcJob   *job = &gs_svc_jobs[j];

	for (;;)
	{
		uint32		s = pg_atomic_read_u32(&job->state);

		if (s == GS_JOB_FREE)
			return true;
		if (job->owner_pid == MyProcPid && s != GS_JOB_ABANDONED)
		{
			gs_svc_abandon(j);	/* a leftover of ours: free it */
			continue;
		}
		if (gs_svc_past(until))
			return false;
		gs_svc_wake_service();
		gs_svc_nap(until, 10L);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
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
	job->kind = GS_SVC_JOB_SELECT;
	job->key_bytes = key_bytes;
	job->approx = approx;
	job->approx_buckets = (uint32) gs_guc_approx_buckets;
	job->seed = (uint64) gs_guc_seed;
	job->cpu_path = gs_guc_test_cpu_path;
	job->delay_ms = gs_guc_test_service_delay;
	job->fault = gs_guc_test_service_fault;
	job->fail_device = gs_guc_test_service_fail_device;
	job->split_keys = gs_guc_test_service_split_keys;
	job->nkeys = n;
	job->nranks = nranks;
	job->io_chunks = io_chunks;
	job->key_chunks = key_chunks;
	job->nchunks = io_chunks + key_chunks;
	job->submit_time = GetCurrentTimestamp();
	job->status = GS_OK;
	job->message[0] = '\0';
}

/* one request's shape and where its keys are */
typedef struct GsSvcReq
{
	GsState    *st;
	gs_input   *in;
	const uint64 *ranks;
	int			nranks;
	bool		approx;
	uint64		n;
	uint64		per_chunk;		/* keys per pool chunk */
	int			io_chunks;
	/* gs_svc_count_chunks */
	int			nheld;
	uint64		unpooled;
	uint64		leased;
	bool		submitted;		/* once: the key counters below were added */
	/* where the time went (gpuselect.debug), the last attempt's */
	double		unload_ms;		/* held chunks' keys copied out (the queue) */
	double		take_ms;		/* the job's chunks taken and filled */
	double		fill_ms;		/* ... of which copying keys into them */
	TimestampTz submitted_at;
} GsSvcReq;

static int
gs_svc_copy_chunks(const GsSvcReq *r)
{
	return (int) ((r->unpooled + r->per_chunk - 1) / r->per_chunk);
}

/*
 * The copy of a state's palloc'd keys into its job's chunks, which may
 * come a few at a time (the pool's queue, gs_svc_take_chunks): the job's
 * list is its io chunks (ranks, answers), then its copy chunks, each
 * filled full but the last, packed, its count in its descriptor.
 */
typedef struct GsSvcFill
{
	int			seen;			/* chunks of the job's list so far */
	int			tail;			/* the last of them (-1: none) */
	int			from;			/* the state's chunk being copied */
	Size		off;			/* ... bytes of it copied */
	bool		ok;				/* false: a chunk was not the job's (a damaged list) */
	int			waiting;		/* chunks filled before the job had them all */
	double		ms;				/* time spent copying */
} GsSvcFill;

static void
gs_svc_fill_start(GsSvcFill *f)
{
	f->seen = 0;
	f->tail = -1;
	f->from = 0;
	f->off = 0;
	f->ok = true;
	f->waiting = 0;
	f->ms = 0;
}

/* one copy chunk's worth of st's palloc'd keys, from where f stands, into mem */
static Size
gs_svc_fill_chunk(GsSvcFill *f, const GsState *st, char *mem)
{
	Size		cb = gs_svc_ctl->chunk_bytes;
	Size		done = 0;

	while (done < cb && f->from < st->nchunks)
	{
		const GsChunk *k = &st->chunks[f->from];
		Size		len = (Size) k->n * st->key_bytes;
		Size		piece;

		if (k->pool_ref != 0 || f->off >= len)
		{
			f->from++;
			f->off = 0;
			continue;
		}
		piece = Min(len - f->off, cb - done);
		memcpy(mem + done, k->data + f->off, piece);
		f->off += piece;
		done += piece;
	}
	return done;
}

/*
 * The n chunks of job j's list from `first` (just taken): io chunks are
 * skipped, copy chunks filled.
 */
static void
gs_svc_fill(int j, const GsSvcReq *r, GsSvcFill *f, int first, int n)
{
	int			idx = first;
	TimestampTz t0 = GetCurrentTimestamp();

	for (int i = 0; i < n && f->ok; i++)
	{
		char	   *mem = gs_pool_chunk(idx, j);

		if (mem == NULL)
		{
			f->ok = false;
			break;
		}
		if (f->seen >= r->io_chunks)
			gs_svc_chunks[idx].nkeys = (uint32)
				(gs_svc_fill_chunk(f, r->st, gs_pool_prefault(mem, gs_svc_ctl->chunk_bytes)) /
				 r->st->key_bytes);
		f->seen++;
		f->tail = idx;
		idx = gs_svc_chunks[idx].next;
	}
	f->ms += (double) (GetCurrentTimestamp() - t0) / 1000.0;
}

/*
 * Chunks for job j (held OPEN), filled with the keys of the state's
 * palloc'd chunks (f): at once when the pool has them and nobody waits
 * for it; else, first in line, it waits keeping what it holds; behind
 * someone, this backend first gives back every chunk it holds
 * (gs_service_scan_unload_all: the keys move into its states' memory, and
 * in's segments follow), then waits, holding none, in the pool's queue.
 * Once first in line it takes the job's chunks as they come free and
 * fills them while it waits for the rest; either up to clk's patience.  A
 * cancel while waiting leaves the queue, frees the slot and its chunks
 * and is re-thrown.  Returns the first chunk, -1 when the wait ran out
 * (nothing taken then).
 */
static int
gs_svc_take_chunks(int j, GsSvcReq *r, const GsSvcClock *clk, GsSvcFill *f)
{
	GsSvcControl *c = gs_svc_ctl;
	GsSvcJob   *job = &gs_svc_jobs[j];
	int			need = r->io_chunks + gs_svc_copy_chunks(r);
	volatile int left = need;

	gs_svc_fill_start(f);
	if (need + r->nheld <= c->nchunks)
	{
		int			head = gs_pool_alloc(need, j);

		if (head >= 0)
		{
			gs_svc_fill(j, r, f, head, need);
			return head;
		}
	}
	/* auto with no patience left (a small group): the CPU, without the copy */
	if (need + r->nheld <= c->nchunks && gs_svc_past(clk->patience))
		return -1;
	PG_TRY();
	{
		/*
		 * First in line (nobody waits yet) with room for what it holds and
		 * needs, and no chunk held by this backend's other states (the same
		 * query's other groups or aggregates, whose final calls come after
		 * this one: it would wait for itself): it waits keeping its chunks,
		 * whose keys need no copy out and back in (service_pool_queue.c says
		 * why nobody waits for them).  Else every chunk back first (an
		 * out-of-memory ERROR here frees the slot too).
		 */
		if (need + r->nheld > c->nchunks || gs_service_scan_held_elsewhere(r->st) > 0 ||
			!gs_pool_queue_join_first(j, need))
		{
			TimestampTz t0 = GetCurrentTimestamp();

			if (gs_service_scan_unload_all() > 0)
			{
				pfree((void *) r->in->segs);
				gs_state_input(r->st, r->in);
				gs_svc_count_chunks(r->st, &r->nheld, &r->unpooled, &r->leased);
			}
			r->unload_ms = (double) (GetCurrentTimestamp() - t0) / 1000.0;
			left = need = r->io_chunks + gs_svc_copy_chunks(r);
			gs_pool_queue_join(j, need);
		}
		for (;;)
		{
			int			was = left;
			int			now_left;
			int			piece;

			ResetLatch(MyLatch);
			piece = gs_pool_queue_take(j, &f->tail, &now_left);
			left = now_left;
			if (piece >= 0)
			{
				gs_svc_fill(j, r, f, piece, was - left);
				/* filled while the rest of the pool was still busy */
				if (left > 0)
					f->waiting += was - left;
			}
			if (left == 0 || gs_svc_past(clk->patience))
				break;
			gs_svc_nap(clk->patience, 50L);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		gs_pool_queue_leave(j);
		gs_svc_abandon(j);		/* OPEN: the chunks it took freed, back to FREE */
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (left == 0)
		return job->head;
	/* it ran out: out of the queue, and what it took back to the pool */
	gs_pool_queue_leave(j);
	gs_pool_free_list(job->head, j);
	job->head = -1;
	return -1;
}

/*
 * This process's job slot j, FREE -> OPEN once it is free (waiting until
 * `until`), with us as its owner and no chunks yet; false (and why) when
 * it stays busy.
 */
static bool
gs_svc_open_slot(int j, TimestampTz until, const char **why)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	uint32		expected = GS_JOB_FREE;

	if (!gs_svc_slot_free(j, until))
	{
		*why = "this process's job slot is still busy";
		return false;
	}
	job->owner_proc = MyProc;
	job->owner_pid = MyProcPid;
	job->head = -1;
	if (!pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_OPEN))
	{
		*why = "this process's job slot is still busy";
		return false;
	}
	return true;
}

/*
 * Job j (OPEN, its request written) to the service: the incarnation it
 * goes to in *epoch, then OPEN -> SUBMITTED (the compare-and-swap is a
 * full barrier: the request is visible first) and the service woken; false
 * (the slot abandoned, and why) when the job was dropped meanwhile.
 */
static bool
gs_svc_submit(int j, uint64 *epoch, const char **why)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	uint32		expected = GS_JOB_OPEN;

	*epoch = pg_atomic_read_u64(&gs_svc_ctl->epoch);
	job->epoch = *epoch;
	if (!pg_atomic_compare_exchange_u32(&job->state, &expected, GS_JOB_SUBMITTED))
	{
		gs_svc_abandon(j);
		*why = "the request was dropped";
		return false;
	}
	gs_svc_wake_service();
	return true;
}

/*
 * One submission: the slot, its chunks, the request, the wait.  ANSWERED:
 * the job is DONE or FAILED and still ours; RESTARTED: a service restart
 * dropped it (the slot is being freed); GIVEN_UP: why says why.
 */
static GsSvcEnd
gs_svc_attempt(GsSvcReq *r, const GsSvcClock *clk, bool *restarted, const char **why)
{
	GsSvcControl *c = gs_svc_ctl;
	int			j = gs_svc_my_slot();
	GsSvcJob   *job = &gs_svc_jobs[j];
	uint32		state;
	uint64		epoch;
	GsSvcFill	fill;
	TimestampTz t0;
	bool		ok;

	if (!gs_svc_wait_ready(clk->patience, &state))
	{
		*why = *restarted ? (gs_guc_device == GS_DEVICE_GPU
							 ? "the service restarted and was not ready again within gpuselect.service_timeout"
							 : "the service restarted and was not ready again within the CPU's time for this group")
			: psprintf("the service is %s", gs_svc_state_name(state));
		return GS_SVC_GIVEN_UP;
	}
	/* take the slot (FREE -> OPEN), then chunks for it */
	if (!gs_svc_open_slot(j, clk->deadline, why))
		return GS_SVC_GIVEN_UP;
	r->unload_ms = 0;
	t0 = GetCurrentTimestamp();
	job->head = gs_svc_take_chunks(j, r, clk, &fill);
	r->take_ms = (double) (GetCurrentTimestamp() - t0) / 1000.0;
	r->fill_ms = fill.ms;
	if (fill.waiting > 0)
		pg_atomic_fetch_add_u64(&c->pool_filled_waiting, (uint64) fill.waiting);
	if (job->head < 0)
	{
		pg_atomic_write_u32(&job->state, GS_JOB_FREE);
		pg_atomic_fetch_add_u64(&c->pool_exhausted, 1);
		*why = "the key pool is exhausted";
		return GS_SVC_GIVEN_UP;
	}
	/* ranks into the io area; palloc'd keys copied; held chunks in place */
	ok = gs_pool_copy(job->head, j, 0, (void *) r->ranks, sizeof(uint64) * r->nranks, true);
	ok = ok && fill.ok && fill.seen == r->io_chunks + gs_svc_copy_chunks(r) &&
		gs_svc_link_held(j, r->st, fill.tail, r->nheld);
	if (!ok)
	{
		gs_svc_abandon(j);
		*why = "the key pool's chunk list is damaged";
		return GS_SVC_GIVEN_UP;
	}

	gs_svc_describe_job(job, r->in->key_bytes, r->n, r->nranks, r->approx,
						r->io_chunks, gs_svc_copy_chunks(r) + r->nheld);
	if (!r->submitted)
	{
		/* what the request hands the service (a retry after a restart: once) */
		pg_atomic_fetch_add_u64(&c->scan_keys_in_place, r->n - r->unpooled);
		pg_atomic_fetch_add_u64(&c->scan_keys_copied, r->unpooled);
		pg_atomic_fetch_add_u64(&c->worker_keys_in_place, r->leased);
		r->submitted = true;
	}
	if (!gs_svc_submit(j, &epoch, why))
		return GS_SVC_GIVEN_UP;
	r->submitted_at = GetCurrentTimestamp();
	return gs_svc_wait(j, epoch, clk, restarted, why);
}

GsGpuOutcome
gs_service_select(GsState *st, gs_input *in, const uint64 *ranks, int nranks,
				  uint64 *out_keys, gs_approx_pick *picks, GsRunInfo *info)
{
	GsSvcControl *c = gs_svc_ctl;
	GsSvcJob   *job;
	GsSvcReq	r;
	GsSvcClock	clk;
	GsSvcEnd	end;
	int			j;
	Size		cb = c->chunk_bytes;
	bool		restarted = false;
	bool		counted = false;
	const char *why = NULL;
	bool		ok;

	memset(&r, 0, sizeof(r));
	r.st = st;
	r.in = in;
	r.ranks = ranks;
	r.nranks = nranks;
	r.approx = picks != NULL;
	r.n = gs_input_count(in);
	r.per_chunk = cb / in->key_bytes;
	r.io_chunks = (int) (((uint64) nranks * GS_SVC_IO_BYTES_PER_RANK + cb - 1) / cb);

	j = gs_svc_my_slot();
	if (j < 0)
		return gs_svc_fail(info, "this process has no job slot");
	gs_svc_register_exit();
	/* one that cannot fit even alone never will: at once (gpu: 55000) */
	if ((r.n + r.per_chunk - 1) / r.per_chunk + (uint64) r.io_chunks > (uint64) c->nchunks)
	{
		pg_atomic_fetch_add_u64(&c->pool_exhausted, 1);
		return gs_svc_fail(info, "the group is larger than the key pool");
	}
	gs_svc_count_chunks(st, &r.nheld, &r.unpooled, &r.leased);
	gs_svc_clock_start(&clk, r.n);

	/* a restart that drops the job: submitted again while time is left */
	for (;;)
	{
		end = gs_svc_attempt(&r, &clk, &restarted, &why);
		if (restarted && !counted)
		{
			pg_atomic_fetch_add_u64(&c->restart_waits, 1);
			counted = true;
		}
		if (end != GS_SVC_RESTARTED)
			break;
	}
	if (end == GS_SVC_GIVEN_UP)
		return gs_svc_fail(info, why);

	job = &gs_svc_jobs[j];
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
	info->svc_unload_ms = r.unload_ms;
	info->svc_take_ms = r.take_ms;
	info->svc_fill_ms = r.fill_ms;
	info->svc_queue_ms = job->queue_ms;
	info->svc_answer_ms = (double) (GetCurrentTimestamp() - r.submitted_at) / 1000.0;
	gs_svc_abandon(j);			/* DONE: frees the job's chunks (not the held ones) and the slot */
	if (!ok)
		return gs_svc_fail(info, "the key pool's chunk list is damaged");
	info->path = "service";
	return GS_GPU_DONE;
}

/*
 * Page shipping (issue #31; service.h: the PAGES job).  The bulk scan pinned
 * npages shared buffers and listed, in refs, the tuples it found visible on
 * each (ntuples in all); the service reads the column's keys out of them
 * into the job's key chunks, appended to the scan's state at collection.
 * The caller keeps its pins until the job is collected or abandoned, so it
 * unpins only once the service is done with the pages, or after we gave
 * the job up (a cancel or ERROR: the pins then go with the resource owner;
 * service_pages.c says why that is safe).  Nothing here waits for the
 * service to come back or for room: a batch the service does not take is
 * the caller's to extract, and so is one it does not answer.
 */
static GsSvcClock gs_svc_page_clk[GS_SVC_PAGE_SLOTS];
static uint64 gs_svc_page_epoch[GS_SVC_PAGE_SLOTS];

bool
gs_service_pages_submit(int k, const gs_page_column *col, const char *refs,
						Size ref_bytes, int npages, uint64 ntuples, const char **why)
{
	GsSvcControl *c = gs_svc_ctl;
	Size		cb = c->chunk_bytes;
	uint64		per_chunk = cb / col->key_bytes;
	int			io_chunks = (int) ((ref_bytes + cb - 1) / cb);
	int			key_chunks = (int) ((ntuples + per_chunk - 1) / per_chunk);
	int			j = gs_svc_page_slot(k);
	GsSvcJob   *job;

	*why = NULL;
	if (j < 0)
	{
		*why = "this process has no page slot";
		return false;
	}
	if (npages <= 0 || ntuples == 0 || io_chunks + key_chunks > c->nchunks)
	{
		*why = "the batch does not fit the key pool";
		return false;
	}
	if (pg_atomic_read_u32(&c->state) != GS_SVC_READY)
	{
		*why = psprintf("the service is %s", gs_svc_state_name(pg_atomic_read_u32(&c->state)));
		return false;
	}
	job = &gs_svc_jobs[j];
	gs_svc_register_exit();
	gs_svc_clock_start(&gs_svc_page_clk[k], ntuples);
	/* the slot (FREE -> OPEN, no waiting), its chunks, the references */
	if (!gs_svc_open_slot(j, GetCurrentTimestamp(), why))
		return false;
	job->head = gs_pool_alloc(io_chunks + key_chunks, j);
	if (job->head < 0)
	{
		pg_atomic_write_u32(&job->state, GS_JOB_FREE);
		*why = "the key pool has no room now";
		return false;
	}
	if (!gs_pool_copy(job->head, j, 0, (void *) refs, ref_bytes, true))
	{
		gs_svc_abandon(j);
		*why = "the key pool's chunk list is damaged";
		return false;
	}
	gs_svc_describe_job(job, col->key_bytes, ntuples, 0, false, io_chunks, key_chunks);
	job->kind = GS_SVC_JOB_PAGES;
	job->ref_bytes = ref_bytes;
	job->npages = (uint32) npages;
	job->column = *col;
	job->out_keys = 0;
	job->pages_on_cpu = gs_guc_test_ship_pages_cpu;
	return gs_svc_submit(j, &gs_svc_page_epoch[k], why);
}

/* job j (DONE)'s keys, the key chunks after the io area, into st */
static bool
gs_svc_pages_append(int j, GsState *st)
{
	GsSvcJob   *job = &gs_svc_jobs[j];
	uint64		per_chunk = gs_svc_ctl->chunk_bytes / job->key_bytes;
	uint64		got = 0;
	int			idx = job->head;

	for (int i = 0; i < job->io_chunks + job->key_chunks && idx >= 0; i++)
	{
		char	   *mem = gs_pool_chunk(idx, j);
		uint32		n;

		if (mem == NULL)
			break;
		n = gs_svc_chunks[idx].nkeys;
		if (i >= job->io_chunks && n > 0 && n <= per_chunk && got + n <= job->out_keys)
		{
			gs_state_append_keys(st, mem, n);
			got += n;
		}
		idx = gs_svc_chunks[idx].next;
	}
	return got == job->out_keys;
}

bool
gs_service_pages_collect(int k, GsState *st, const char **why)
{
	int			j = gs_svc_page_slot(k);
	GsSvcJob   *job;
	bool		restarted = false;

	*why = NULL;
	if (j < 0)
	{
		*why = "this process has no page slot";
		return false;
	}
	job = &gs_svc_jobs[j];
	/* a restart is not waited out: the keys are ours to read anyway */
	gs_svc_page_clk[k].patience = Min(gs_svc_page_clk[k].patience, GetCurrentTimestamp());
	if (gs_svc_wait(j, gs_svc_page_epoch[k], &gs_svc_page_clk[k], &restarted, why) !=
		GS_SVC_ANSWERED)
	{
		if (*why == NULL)
			*why = "the service restarted";
		return false;
	}
	pg_read_barrier();
	if (pg_atomic_read_u32(&job->state) == GS_JOB_FAILED)
	{
		*why = pstrdup(job->message);
		gs_svc_abandon(j);
		return false;
	}
	if (!gs_svc_pages_append(j, st))
	{
		/* keys already appended cannot be taken back: a clean ERROR */
		gs_svc_abandon(j);
		elog(ERROR, "gpuselect: a page job's answer does not match its chunks");
	}
	gs_svc_abandon(j);			/* DONE: frees the job's chunks and the slot */
	return true;
}

bool
gs_service_pages_answered(int k)
{
	int			j = gs_svc_page_slot(k);
	uint32		s;

	if (j < 0)
		return true;
	s = pg_atomic_read_u32(&gs_svc_jobs[j].state);
	return !gs_svc_job_live(s);
}

void
gs_service_pages_abandon(void)
{
	if (gs_svc_ctl == NULL)
		return;
	for (int k = 0; k < GS_SVC_PAGE_SLOTS; k++)
	{
		int			j = gs_svc_page_slot(k);

		if (j >= 0)
			gs_svc_abandon(j);
	}
}
