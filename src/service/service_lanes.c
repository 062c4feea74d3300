/*
 * service_lanes.c — the GPU service's lane threads (service_lanes.h): one
 * per device, each running the engine on the jobs the main thread gives it.
 *
 * Deliberately no PostgreSQL header here: everything a lane thread runs is
 * in this file, the engines (kernels/, service_cuda.c) and libc/pthreads.
 * A lane has a mutex/condvar mailbox: the job it runs and the ones given
 * after it (gpuselect.service_lane_depth in all, the main thread's count): a
 * lane that finishes a job starts the next at once instead of idling
 * while the main thread wakes, collects and dispatches -- for small jobs
 * that hand-off was a good part of a device's time (issue #35).  It puts
 * what it finished on the one done list and writes a byte into the wake
 * pipe.  It samples its device's memory (cudaMemGetInfo, not free) after
 * a job only when no next job waits or the last sample is 100 ms old.
 *
 * Split jobs (a group larger than a device): the lane streams the keys
 * through its own device and those of the lanes the main thread holds for
 * it (gs_lanes_hold), which park until released.
 *
 * Prefetch: between jobs a lane also copies sealed pool chunks to its
 * device, and drops such copies, as the main thread orders
 * (service_prefetch.c); the table of its copies is the lane thread's
 * alone.  A job's segment is read from a copy whose generation is the one
 * the job reads (lane_job_copies).
 *
 * Stopping: gs_lanes_stop sets a flag the engines' interrupt hooks read
 * (service_main.c's gs_svc_interrupt), wakes every lane and joins them with
 * a deadline.  A lane stuck in a device call is left running; its work
 * stays allocated and the service exits without running exit handlers that
 * could wait on it (service_main.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* pthread_timedjoin_np */
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "service/service_lanes.h"

typedef struct gs_lane
{
	pthread_t	thread;
	bool		started;		/* the thread exists (joined or not) */
	atomic_bool ended;			/* joined */
	gs_svc_cuda_dev *dev;		/* NULL: the CPU engine */

	pthread_mutex_t mu;			/* the fields below */
	pthread_cond_t cv;
	bool		bound;			/* the device is current in the thread (or CPU) */
	bool		bind_done;
	char		why[128];
	gs_lane_work *todo;			/* jobs given and not started, first first */
	gs_lane_work *todo_tail;	/* (a list: see gs_lanes_submit) */
	gs_lane_work *running;
	bool		hold;			/* lent to another lane's split job (gs_lanes_hold) */
	bool		parked;			/* ... and this thread waits, touching nothing */
	double		job_ms;			/* time in jobs, and in memory samples, */
	double		sample_ms;		/* since the lane started (gs_lanes_readings) */
	double		last_sample;	/* now_ms() of the last memory sample */
	struct gs_lane_op *ops;		/* prefetch copies and drops, in order */
	struct gs_lane_op *ops_tail;
	uint64_t	mem[4];			/* gs_lanes_readings */

	/* the lane thread's alone: its prefetched copies, by pool chunk */
	struct gs_lane_copy *copies;
	int			ncopies;
} gs_lane;

/* a prefetch order (gs_lanes_prefetch / gs_lanes_unfetch) */
typedef struct gs_lane_op
{
	bool		drop;
	int			chunk;
	uint32_t	gen;
	const void *host;
	size_t		bytes;
	struct gs_lane_op *next;
} gs_lane_op;

/* a lane's copy of a sealed pool chunk: device memory (cpu lanes: malloc) */
typedef struct gs_lane_copy
{
	void	   *mem;
	uint32_t	gen;
} gs_lane_copy;

static gs_lane lanes[GS_LANES_MAX];
static int	nlanes = 0;
static atomic_bool stopping = false;
static atomic_uint_fast64_t prefetched_bytes = 0;

/* finished work, and the pipe that tells the main thread about it */
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static gs_lane_work *done_head = NULL;
static gs_lane_work *done_tail = NULL;
static int	wake_pipe[2] = {-1, -1};

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static bool
interrupted(const gs_lane_work *w)
{
	return w->opt.interrupt != NULL && w->opt.interrupt(w->opt.interrupt_arg);
}

/* test hook gpuselect.test_service_delay: sleep in 10 ms steps, interruptibly */
static void
lane_delay(const gs_lane_work *w)
{
	double		end = now_ms() + w->delay_ms;
	struct timespec step = {0, 10 * 1000 * 1000};

	while (!interrupted(w) && now_ms() < end)
		nanosleep(&step, NULL);
}

/* ---------------- prefetched copies (the lane thread's own table) ---------------- */

static void
lane_drop_copy(gs_lane *l, int k)
{
	gs_lane_copy *c = &l->copies[k];

	if (c->mem == NULL)
		return;
	if (l->dev != NULL)
		gs_svc_cuda_unfetch(l->dev, c->mem);
	else
		free(c->mem);
	c->mem = NULL;
	c->gen = 0;
}

/* a copy replaces whatever the lane had of that chunk; a failed copy is no copy */
static void
lane_do_op(gs_lane *l, const gs_lane_op *op)
{
	gs_lane_copy *c;

	if (l->copies == NULL || op->chunk < 0 || op->chunk >= l->ncopies)
		return;
	lane_drop_copy(l, op->chunk);
	if (op->drop || !l->bound)
		return;
	c = &l->copies[op->chunk];
	if (l->dev != NULL)
	{
		gs_error	err;

		memset(&err, 0, sizeof(err));
		if (gs_svc_cuda_prefetch(l->dev, op->host, op->bytes, &c->mem, &err) != GS_OK)
			c->mem = NULL;
	}
	else if ((c->mem = malloc(op->bytes)) != NULL)
		memcpy(c->mem, op->host, op->bytes);
	if (c->mem != NULL)
	{
		c->gen = op->gen;
		atomic_fetch_add(&prefetched_bytes, op->bytes);
	}
}

/*
 * The job's segments whose chunk has a copy of the generation the job
 * reads: that copy (the rest NULL), or NULL when none has.  A copy of
 * another generation is of keys a chunk held before: never read.
 */
static const void **
lane_job_copies(gs_lane *l, gs_lane_work *w)
{
	const void **seg = NULL;
	uint64_t	used = 0;

	if (w->seg_chunk == NULL || w->seg_gen == NULL || l->copies == NULL)
		return NULL;
	for (size_t i = 0; i < w->in.nsegs; i++)
	{
		int			k = w->seg_chunk[i];

		if (k < 0 || k >= l->ncopies || l->copies[k].mem == NULL ||
			l->copies[k].gen != w->seg_gen[i])
			continue;
		if (seg == NULL && (seg = calloc(w->in.nsegs, sizeof(void *))) == NULL)
			return NULL;
		seg[i] = l->copies[k].mem;
		used += (uint64_t) w->in.segs[i].n * w->in.key_bytes;
	}
	w->prefetch_used_bytes = used;
	return seg;
}

/* the CPU engine on the job's keys, prefetched copies read where there are */
static void
lane_run_cpu(gs_lane_work *w, const void **seg)
{
	gs_input	in = w->in;
	gs_segment *segs = NULL;

	if (seg != NULL && (segs = malloc(sizeof(gs_segment) * in.nsegs)) != NULL)
	{
		for (size_t i = 0; i < in.nsegs; i++)
		{
			segs[i] = w->in.segs[i];
			if (seg[i] != NULL)
				segs[i].keys = seg[i];
		}
		in.segs = segs;
	}
	else
		w->prefetch_used_bytes = 0;
	gs_cpu_test_force_path(w->cpu_path);	/* per thread */
	if (w->approx)
		w->status = gs_cpu_select_approx(&in, w->ranks, w->nranks, &w->opt,
										 (gs_approx_pick *) w->answer, &w->err);
	else
		w->status = gs_cpu_select(&in, w->ranks, w->nranks, (uint64_t *) w->answer,
								  &w->opt, &w->err);
	free(segs);
}

/*
 * An exact job streams through the devices when told (a job larger than
 * a device, or the test hook) or when it does not fit this device now;
 * approximate jobs and injected engine faults keep the one-device path.
 */
static bool
lane_wants_split(gs_lane *l, gs_lane_work *w)
{
	if (w->approx || w->engine_fault != GS_SVC_CUDA_FAULT_NONE)
		return false;
	if (w->split)
		return true;
	return !gs_svc_cuda_fits(l->dev, gs_input_count(&w->in), w->in.key_bytes, w->nranks);
}

/* the split: this lane's device first, then the held lanes' */
static void
lane_run_split(gs_lane *l, gs_lane_work *w)
{
	gs_svc_cuda_dev *devs[GS_LANES_MAX];
	int			ndevs = 0;

	devs[ndevs++] = l->dev;
	for (int i = 0; i < w->nsplit_lanes; i++)
		if (lanes[w->split_lanes[i]].dev != NULL)
			devs[ndevs++] = lanes[w->split_lanes[i]].dev;
	memset(&w->err, 0, sizeof(w->err));
	w->status = gs_svc_cuda_select_split(devs, ndevs, &w->in, w->ranks, w->nranks,
										 (uint64_t *) w->answer, w->split_budget, &w->opt,
										 &w->copy_ms, &w->bytes_copied, &w->sticky, &w->err);
	w->split_used = true;
}

/* a PAGES job on the CPU: each listed tuple read where the page lies,
 * the keys gathered here, then into the job's chunks in order */
static gs_status
lane_pages_cpu(gs_lane_work *w)
{
	gs_lane_pages *pg = &w->pages;
	size_t		kb = pg->column.key_bytes;
	size_t		pos = 0;
	uint64_t	n = 0;
	size_t		off = 0;
	char	   *keys = malloc(kb * (pg->nitems ? pg->nitems : 1));

	if (keys == NULL)
	{
		snprintf(w->err.message, sizeof(w->err.message), "out of host memory");
		return w->err.status = GS_ERR_NOMEM;
	}

	for (size_t p = 0; p < pg->npages; p++)
	{
		gs_page_ref r;
		const uint16_t *offsets;

		if (interrupted(w))
		{
			free(keys);
			snprintf(w->err.message, sizeof(w->err.message), "the request was abandoned");
			return w->err.status = GS_ERR_CANCELED;
		}
		memcpy(&r, pg->refs + pos, sizeof(r));
		offsets = (const uint16_t *) (pg->refs + pos + sizeof(r));
		if (n + r.noffsets > pg->nitems ||
			gs_page_extract_cpu((const uint8_t *) pg->base + pg->page_off[p], pg->page_bytes,
								&r, offsets, &pg->column, keys, &n) != 0)
		{
			free(keys);
			snprintf(w->err.message, sizeof(w->err.message), "a listed tuple does not fit its page");
			return w->err.status = GS_ERR_INVALID;
		}
		pos += gs_page_ref_bytes(&r);
	}
	for (size_t i = 0; i < pg->nsegs && off < n; i++)
	{
		size_t		take = pg->seg_keys[i] < n - off ? pg->seg_keys[i] : n - off;

		memcpy(pg->segs[i], keys + off * kb, take * kb);
		off += take;
	}
	free(keys);
	if (off < n)
	{
		snprintf(w->err.message, sizeof(w->err.message), "the job's chunks hold too few keys");
		return w->err.status = GS_ERR_INVALID;
	}
	pg->nkeys = (size_t) n;
	return GS_OK;
}

/* a PAGES job: on the device where there is one that maps shared buffers */
static void
lane_run_pages(gs_lane *l, gs_lane_work *w)
{
	gs_lane_pages *pg = &w->pages;
	double		t0 = now_ms();

	memset(&w->err, 0, sizeof(w->err));
	pg->on_device = false;
	pg->nkeys = 0;
	if (l->dev != NULL && !pg->on_cpu)
	{
		w->status = gs_svc_cuda_extract_pages(l->dev, pg->base, pg->base_bytes, pg->page_off,
											  pg->npages, pg->page_bytes, pg->items,
											  pg->nitems, &pg->column, pg->segs, pg->seg_keys,
											  pg->nsegs, &pg->nkeys, &w->sticky, &w->err);
		if (w->status == GS_OK)
		{
			pg->on_device = true;
			w->bytes_copied = (uint64_t) pg->npages * pg->page_bytes;
			w->copy_ms = now_ms() - t0;
			return;
		}
		/* not mapped (or no engine): the CPU below; a real failure fails the job */
		if (w->status != GS_ERR_NO_DEVICE || w->sticky)
			return;
		memset(&w->err, 0, sizeof(w->err));
	}
	w->status = lane_pages_cpu(w);
}

static void
lane_run(gs_lane *l, gs_lane_work *w)
{
	w->status = GS_OK;
	w->sticky = false;
	w->copy_ms = 0;
	w->bytes_copied = 0;
	w->prefetch_used_bytes = 0;
	w->split_used = false;
	if (w->delay_ms > 0)
		lane_delay(w);

	if (w->engine_fault != GS_SVC_CUDA_FAULT_NONE && l->dev == NULL)
	{
		/* no engine to fail inside: a plain job failure (cpu_test) */
		w->status = w->err.status = GS_ERR_DEVICE;
		snprintf(w->err.message, sizeof(w->err.message),
				 "injected failure (gpuselect.test_service_fault)");
	}
	else if (w->inject != GS_OK)
	{
		/* the main thread wrote the message */
		w->status = w->err.status = w->inject;
		w->sticky = w->inject_sticky;
	}
	else if (interrupted(w))
	{
		w->status = w->err.status = GS_ERR_CANCELED;
		snprintf(w->err.message, sizeof(w->err.message),
				 "the service is shutting down or the request was abandoned");
	}
	else if (w->pages.npages > 0)
		lane_run_pages(l, w);
	else if (l->dev != NULL && lane_wants_split(l, w))
		lane_run_split(l, w);
	else if (l->dev != NULL)
	{
		const void **seg = lane_job_copies(l, w);

		memset(&w->err, 0, sizeof(w->err));
		if (w->engine_fault != GS_SVC_CUDA_FAULT_NONE)
			gs_svc_cuda_arm_fault(l->dev, w->engine_fault);
		w->status = gs_svc_cuda_select(l->dev, &w->in, seg, w->ranks, w->nranks,
									   w->approx ? NULL : (uint64_t *) w->answer,
									   w->approx ? (gs_approx_pick *) w->answer : NULL,
									   &w->opt, &w->copy_ms, &w->bytes_copied,
									   &w->sticky, &w->err);
		free(seg);
	}
	else
	{
		const void **seg = lane_job_copies(l, w);

		memset(&w->err, 0, sizeof(w->err));
		lane_run_cpu(w, seg);
		free(seg);
	}
}

static void lane_finished(gs_lane_work *w);
static void lane_wake_main(void);

static void
lane_sample_memory(gs_lane *l)
{
	uint64_t	m[4];
	double		t0 = now_ms();

	if (l->dev == NULL)
		return;
	gs_svc_cuda_memory(l->dev, &m[0], &m[1], &m[2], &m[3]);
	pthread_mutex_lock(&l->mu);
	memcpy(l->mem, m, sizeof(m));
	l->last_sample = now_ms();
	l->sample_ms += l->last_sample - t0;
	pthread_mutex_unlock(&l->mu);
}

/* after a job: sample unless the next job waits and the last sample is recent */
static void
lane_sample_after_job(gs_lane *l)
{
	bool		due;

	pthread_mutex_lock(&l->mu);
	due = l->todo == NULL || now_ms() - l->last_sample >= 100.0;
	pthread_mutex_unlock(&l->mu);
	if (due)
		lane_sample_memory(l);
}

/*
 * At the stop: a next job the lane never started goes back as canceled
 * (service_main.c requeues it for the next incarnation, as it does the
 * running job the stop interrupted).
 */
static void
lane_return_unstarted(gs_lane *l)
{
	gs_lane_work *w;

	pthread_mutex_lock(&l->mu);
	w = l->todo;
	l->todo = l->todo_tail = NULL;
	pthread_mutex_unlock(&l->mu);
	while (w != NULL)
	{
		gs_lane_work *next = w->next;

		memset(&w->err, 0, sizeof(w->err));
		w->status = w->err.status = GS_ERR_CANCELED;
		w->sticky = false;
		w->copy_ms = w->run_ms = 0;
		w->bytes_copied = w->prefetch_used_bytes = 0;
		snprintf(w->err.message, sizeof(w->err.message),
				 "the service is shutting down or the request was abandoned");
		lane_finished(w);
		w = next;
	}
}

/* a byte into the wake pipe: the main thread looks at the lanes again */
static void
lane_wake_main(void)
{
	char		b = 1;
	ssize_t		rc;

	/* a full pipe (EAGAIN) wakes the main thread already */
	rc = write(wake_pipe[1], &b, 1);
	(void) rc;
}

static void
lane_finished(gs_lane_work *w)
{
	pthread_mutex_lock(&done_mu);
	w->next = NULL;
	if (done_tail)
		done_tail->next = w;
	else
		done_head = w;
	done_tail = w;
	pthread_mutex_unlock(&done_mu);
	lane_wake_main();
}

static void *
lane_main(void *arg)
{
	gs_lane    *l = (gs_lane *) arg;
	bool		ok = true;
	char		why[128] = "";

	if (l->dev != NULL)
	{
		gs_error	err;

		memset(&err, 0, sizeof(err));
		ok = gs_svc_cuda_bind(l->dev, &err) == GS_OK;
		if (!ok)
			snprintf(why, sizeof(why), "%.*s", (int) sizeof(why) - 1, err.message);
	}
	pthread_mutex_lock(&l->mu);
	l->bound = ok;
	l->bind_done = true;
	snprintf(l->why, sizeof(l->why), "%s", why);
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	if (ok)
		lane_sample_memory(l);

	pthread_mutex_lock(&l->mu);
	while (!atomic_load(&stopping))
	{
		gs_lane_work *w = l->todo;

		if (l->hold)
		{
			/* lent: say so once, then wait for the release or the stop */
			if (!l->parked)
			{
				l->parked = true;
				pthread_mutex_unlock(&l->mu);
				lane_wake_main();
				pthread_mutex_lock(&l->mu);
			}
			else
				pthread_cond_wait(&l->cv, &l->mu);
			continue;
		}
		l->parked = false;
		if (w != NULL)
		{
			double		t0;

			l->todo = w->next;
			if (l->todo == NULL)
				l->todo_tail = NULL;
			w->next = NULL;
			l->running = w;
			pthread_mutex_unlock(&l->mu);
			t0 = now_ms();
			lane_run(l, w);
			w->run_ms = now_ms() - t0;
			pthread_mutex_lock(&l->mu);
			l->running = NULL;
			l->job_ms += w->run_ms;
			pthread_mutex_unlock(&l->mu);
			lane_finished(w);	/* the answer first, then the sample */
			if (ok)
				lane_sample_after_job(l);
			pthread_mutex_lock(&l->mu);
			continue;
		}
		else if (l->ops != NULL)
		{
			/* no job waits: one prefetch order, then look again */
			gs_lane_op *op = l->ops;
			bool		last;

			l->ops = op->next;
			if (l->ops == NULL)
				l->ops_tail = NULL;
			last = l->ops == NULL;
			pthread_mutex_unlock(&l->mu);
			lane_do_op(l, op);
			free(op);
			if (last && ok)
				lane_sample_memory(l);
			pthread_mutex_lock(&l->mu);
			continue;
		}
		else
		{
			struct timespec until;

			/* idle: the device's memory once a second for the status */
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			if (pthread_cond_timedwait(&l->cv, &l->mu, &until) == ETIMEDOUT && ok)
			{
				pthread_mutex_unlock(&l->mu);
				lane_sample_memory(l);
				pthread_mutex_lock(&l->mu);
			}
		}
	}
	/* orders never run, and the copies: the engine is still open */
	pthread_mutex_unlock(&l->mu);
	lane_return_unstarted(l);
	pthread_mutex_lock(&l->mu);
	while (l->ops != NULL)
	{
		gs_lane_op *op = l->ops;

		l->ops = op->next;
		free(op);
	}
	l->ops_tail = NULL;
	pthread_mutex_unlock(&l->mu);
	for (int k = 0; l->copies != NULL && k < l->ncopies; k++)
		lane_drop_copy(l, k);
	return NULL;
}

int
gs_lanes_start(int n, gs_svc_cuda_dev **devs, int nchunks, bool *ok, char (*why)[128])
{
	sigset_t	all,
				old;
	int			started = 0;

	if (n > GS_LANES_MAX)
		n = GS_LANES_MAX;
	for (int i = 0; i < n; i++)
	{
		ok[i] = false;
		snprintf(why[i], sizeof(why[i]), "no lane thread");
	}
	if (pipe(wake_pipe) != 0)
	{
		for (int i = 0; i < n; i++)
			snprintf(why[i], sizeof(why[i]), "pipe: %s", strerror(errno));
		return 0;
	}
	for (int k = 0; k < 2; k++)
	{
		fcntl(wake_pipe[k], F_SETFL, fcntl(wake_pipe[k], F_GETFL) | O_NONBLOCK);
		fcntl(wake_pipe[k], F_SETFD, FD_CLOEXEC);
	}

	/* threads inherit the creating thread's mask: create them with every signal blocked */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < n; i++)
	{
		gs_lane    *l = &lanes[i];
		int			rc;

		memset(l, 0, sizeof(*l));
		l->dev = devs ? devs[i] : NULL;
		/* no table (nchunks 0, or no memory): this lane prefetches nothing */
		l->copies = nchunks > 0 ? calloc(nchunks, sizeof(gs_lane_copy)) : NULL;
		l->ncopies = l->copies != NULL ? nchunks : 0;
		pthread_mutex_init(&l->mu, NULL);
		pthread_cond_init(&l->cv, NULL);
		rc = pthread_create(&l->thread, NULL, lane_main, l);
		if (rc != 0)
		{
			snprintf(why[i], sizeof(why[i]), "pthread_create: %s", strerror(rc));
			break;
		}
		l->started = true;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	nlanes = started;

	/* each lane says whether its device is current (a few ms at most) */
	for (int i = 0; i < started; i++)
	{
		gs_lane    *l = &lanes[i];

		pthread_mutex_lock(&l->mu);
		while (!l->bind_done)
			pthread_cond_wait(&l->cv, &l->mu);
		ok[i] = l->bound;
		snprintf(why[i], sizeof(why[i]), "%s", l->why);
		pthread_mutex_unlock(&l->mu);
	}
	return started;
}

int
gs_lanes_wake_fd(void)
{
	return wake_pipe[0];
}

void
gs_lanes_submit(int lane, gs_lane_work *w)
{
	gs_lane    *l = &lanes[lane];

	w->lane = lane;
	w->next = NULL;
	pthread_mutex_lock(&l->mu);

	/*
	 * A list, not one place: the main thread counts a job as the device's
	 * until it has collected it from the done list, so it may give the lane
	 * a job while the one before is still in this list -- the lane handed
	 * back the job it ran and has not yet started the next.  (One place
	 * overwritten there lost a job; session 24's load benchmark found it.)
	 * The count keeps the list at depth jobs or fewer.
	 */
	if (l->todo_tail)
		l->todo_tail->next = w;
	else
		l->todo = w;
	l->todo_tail = w;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

void
gs_lanes_hold(int lane, bool on)
{
	gs_lane    *l;

	if (lane < 0 || lane >= nlanes || !lanes[lane].started)
		return;
	l = &lanes[lane];
	pthread_mutex_lock(&l->mu);
	l->hold = on;
	if (!on)
		l->parked = false;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

bool
gs_lanes_parked(int lane)
{
	gs_lane    *l;
	bool		parked;

	if (lane < 0 || lane >= nlanes || !lanes[lane].started)
		return false;
	l = &lanes[lane];
	pthread_mutex_lock(&l->mu);
	parked = l->hold && l->parked;
	pthread_mutex_unlock(&l->mu);
	return parked;
}

static void
lanes_order(int lane, bool drop, int chunk, uint32_t gen, const void *host, size_t bytes)
{
	gs_lane    *l;
	gs_lane_op *op;

	if (lane < 0 || lane >= nlanes || !lanes[lane].started)
		return;
	l = &lanes[lane];
	/* no memory: a copy is not made (the job copies from the pool); a drop
	 * is lost, and the stale copy stays until that chunk is copied again or
	 * the lane ends (never read: its generation is past) */
	if ((op = malloc(sizeof(gs_lane_op))) == NULL)
		return;
	op->drop = drop;
	op->chunk = chunk;
	op->gen = gen;
	op->host = host;
	op->bytes = bytes;
	op->next = NULL;
	pthread_mutex_lock(&l->mu);
	if (l->ops_tail)
		l->ops_tail->next = op;
	else
		l->ops = op;
	l->ops_tail = op;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

void
gs_lanes_prefetch(int lane, int chunk, uint32_t gen, const void *host, size_t bytes)
{
	lanes_order(lane, false, chunk, gen, host, bytes);
}

void
gs_lanes_unfetch(int lane, int chunk)
{
	lanes_order(lane, true, chunk, 0, NULL, 0);
}

uint64_t
gs_lanes_prefetched_bytes(void)
{
	return atomic_load(&prefetched_bytes);
}

gs_lane_work *
gs_lanes_collect(void)
{
	gs_lane_work *list;
	char		buf[64];

	if (wake_pipe[0] >= 0)
		while (read(wake_pipe[0], buf, sizeof(buf)) > 0)
			;
	pthread_mutex_lock(&done_mu);
	list = done_head;
	done_head = done_tail = NULL;
	pthread_mutex_unlock(&done_mu);
	return list;
}

bool
gs_lanes_stopping(void)
{
	return atomic_load(&stopping);
}

int
gs_lanes_stop(int timeout_ms)
{
	struct timespec until;
	int			left = 0;

	atomic_store(&stopping, true);
	for (int i = 0; i < nlanes; i++)
	{
		pthread_mutex_lock(&lanes[i].mu);
		pthread_cond_broadcast(&lanes[i].cv);
		pthread_mutex_unlock(&lanes[i].mu);
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L)
	{
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	for (int i = 0; i < nlanes; i++)
	{
		gs_lane    *l = &lanes[i];

		if (!l->started || atomic_load(&l->ended))
			continue;
		if (pthread_timedjoin_np(l->thread, NULL, &until) == 0)
			atomic_store(&l->ended, true);
		else
			left++;
	}
	return left;
}

bool
gs_lanes_ended(int lane)
{
	return lane < 0 || lane >= GS_LANES_MAX || !lanes[lane].started ||
		atomic_load(&lanes[lane].ended);
}

void
gs_lanes_readings(int lane, uint64_t mem[4], double *job_ms, double *sample_ms)
{
	gs_lane    *l;

	memset(mem, 0, sizeof(uint64_t) * 4);
	*job_ms = *sample_ms = 0;
	if (lane < 0 || lane >= nlanes || !lanes[lane].started)
		return;
	l = &lanes[lane];
	pthread_mutex_lock(&l->mu);
	memcpy(mem, l->mem, sizeof(l->mem));
	*job_ms = l->job_ms;
	*sample_ms = l->sample_ms;
	pthread_mutex_unlock(&l->mu);
}
