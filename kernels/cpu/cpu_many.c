/*
 * cpu_many.c — gs_cpu_select_many: the exact multiselect of many independent
 * inputs (the groups of a GROUP BY) on the calling thread and a team of
 * helper threads.
 *
 * Why threads here: a hashed aggregation finalizes its groups one after
 * another in one backend after every worker has finished (the leader's
 * serial tail of a parallel GROUP BY: 720 hourly groups of 14k keys took
 * 53-72 ms of a 450 ms dashboard query on the H200 host).  The groups are
 * independent, the cores are idle by then, and the engine is plain C with
 * no shared mutable state (its one per-thread setting, the test path, is
 * __thread), so the selections can run side by side.  No library of the
 * toolchain offers a portable team of threads for C that returns to the
 * caller between items (OpenMP's runtime cannot be polled for interrupts
 * from the calling thread while its team works), so this is a small one
 * written by hand: a shared item counter, a stop flag, and a counter of
 * helpers still running under a mutex and condition variable.
 *
 * The rules the caller (a PostgreSQL backend) needs:
 *   - helpers never call opt->interrupt: only the calling thread does,
 *     between its own items, inside them (the engine's polls), and every
 *     millisecond while it waits for the helpers, and once before it starts
 *     them (an interrupt pending then starts none).  A nonzero answer sets the
 *     stop flag, which the helpers' own polls read: every item still running
 *     ends with GS_ERR_CANCELED within one engine poll (GS_CHUNK keys).
 *     GS_INTERRUPT_DRAIN instead lets the items under way finish (the
 *     caller's own too) and starts no more: the caller can then deal with
 *     an interrupt that may turn out harmless with no helper alive, and
 *     run the items left (status GS_ERR_CANCELED) again, having lost none
 *     of the work done.
 *   - helpers start with every signal blocked (the mask is set around
 *     pthread_create and restored), so the process's signal handlers only
 *     ever run on the calling thread.
 *   - every helper is joined before gs_cpu_select_many returns, whatever
 *     happened: nothing of the team outlives the call.
 *   - if no helper can be started the calling thread does all items itself.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_internal.h"

#define GS_MANY_MAX_THREADS 64

typedef struct many_team
{
	gs_select_item *items;
	size_t		nitems;
	atomic_size_t next;			/* the next item to take */
	atomic_int	stop;			/* set on cancel or on the first failure */
	atomic_int	drain;			/* GS_INTERRUPT_DRAIN: no new items */
	const gs_options *caller_opt;	/* the caller's options and hook */
	pthread_mutex_t mu;
	pthread_cond_t done_cv;
	unsigned	running;		/* helpers not yet finished (under mu) */
	gs_error	first_err;		/* the first failing item's error (under mu) */
	int			have_err;
} many_team;

/* the helpers' interrupt hook: only the stop flag */
static int
many_stopped(void *arg)
{
	return atomic_load_explicit(&((many_team *) arg)->stop, memory_order_relaxed);
}

static void
many_note_failure(many_team *t, const gs_error *err, gs_status s)
{
	atomic_store(&t->stop, 1);
	if (s == GS_ERR_CANCELED)
		return;					/* a consequence of the stop, not its cause */
	pthread_mutex_lock(&t->mu);
	if (!t->have_err)
	{
		t->first_err = *err;
		t->first_err.status = s;
		t->have_err = 1;
	}
	pthread_mutex_unlock(&t->mu);
}

/* the caller's hook, its answer applied to the team: nonzero to stop now */
static int
many_caller_poll(many_team *t)
{
	const gs_options *opt = t->caller_opt;
	int			r = opt && opt->interrupt ? opt->interrupt(opt->interrupt_arg) : 0;

	if (r == GS_INTERRUPT_DRAIN)
	{
		atomic_store(&t->drain, 1);
		return 0;
	}
	if (r != 0)
		atomic_store(&t->stop, 1);
	return r != 0;
}

/* the hook of the caller's own engine calls */
static int
many_caller_hook(void *arg)
{
	return many_caller_poll((many_team *) arg);
}

/* take items until none is left or the team stops; opt is the taker's own */
static void
many_run_items(many_team *t, const gs_options *opt, int caller)
{
	for (;;)
	{
		size_t		i;
		gs_error	err;
		gs_status	s;

		if (atomic_load(&t->stop) || atomic_load(&t->drain))
			return;
		if (caller && many_caller_poll(t) != 0)
			return;
		if (atomic_load(&t->drain))
			return;
		i = atomic_fetch_add(&t->next, 1);
		if (i >= t->nitems)
			return;
		memset(&err, 0, sizeof(err));
		s = gs_cpu_select(&t->items[i].in, t->items[i].ranks, t->items[i].nranks,
						  t->items[i].out_keys, opt, &err);
		t->items[i].status = s;
		if (s != GS_OK)
			many_note_failure(t, &err, s);
	}
}

typedef struct many_helper
{
	many_team  *team;
	gs_options	opt;			/* the caller's, with the stop flag as the hook */
} many_helper;

static void *
many_helper_main(void *arg)
{
	many_helper *h = (many_helper *) arg;
	many_team  *t = h->team;

	many_run_items(t, &h->opt, 0);
	pthread_mutex_lock(&t->mu);
	t->running--;
	pthread_cond_signal(&t->done_cv);
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* wait for the helpers, polling the caller's hook every millisecond */
static void
many_wait_helpers(many_team *t)
{
	pthread_mutex_lock(&t->mu);
	while (t->running > 0)
	{
		struct timespec until;

		pthread_mutex_unlock(&t->mu);
		if (!atomic_load(&t->stop))
			(void) many_caller_poll(t);
		pthread_mutex_lock(&t->mu);
		if (t->running == 0)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 1000000;
		if (until.tv_nsec >= 1000000000)
		{
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		(void) pthread_cond_timedwait(&t->done_cv, &t->mu, &until);
	}
	pthread_mutex_unlock(&t->mu);
}

/* start up to n helpers with every signal blocked; returns how many started */
static unsigned
many_start_helpers(many_team *t, many_helper *h, pthread_t *tid, unsigned n)
{
	sigset_t	all,
				old;
	unsigned	started = 0;

	sigfillset(&all);
	if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0)
		return 0;
	for (unsigned i = 0; i < n; i++)
	{
		pthread_mutex_lock(&t->mu);
		t->running++;
		pthread_mutex_unlock(&t->mu);
		if (pthread_create(&tid[i], NULL, many_helper_main, &h[i]) != 0)
		{
			pthread_mutex_lock(&t->mu);
			t->running--;
			pthread_mutex_unlock(&t->mu);
			break;				/* the threads that did start do the work */
		}
		started++;
	}
	(void) pthread_sigmask(SIG_SETMASK, &old, NULL);
	return started;
}

gs_status
gs_cpu_select_many(gs_select_item *items, size_t nitems, unsigned nthreads,
				   const gs_options *opt, gs_error *err)
{
	many_team	t = {.mu = PTHREAD_MUTEX_INITIALIZER, .done_cv = PTHREAD_COND_INITIALIZER};
	gs_options	base;			/* the caller's options, or none */
	gs_options	caller;			/* base with the team's view of its hook */
	many_helper h[GS_MANY_MAX_THREADS];
	pthread_t	tid[GS_MANY_MAX_THREADS];
	unsigned	started = 0;
	gs_status	result = GS_OK;

	if (nitems > 0 && !items)
		return cpu_set_err(err, GS_ERR_INVALID, "invalid arguments: NULL items");
	for (size_t i = 0; i < nitems; i++)
		items[i].status = GS_ERR_CANCELED;	/* until an item has run */
	if (nthreads > GS_MANY_MAX_THREADS)
		nthreads = GS_MANY_MAX_THREADS;
	if (nitems > 0 && nthreads > nitems - 1)
		nthreads = (unsigned) (nitems - 1);

	t.items = items;
	t.nitems = nitems;
	atomic_init(&t.next, 0);
	atomic_init(&t.stop, 0);
	atomic_init(&t.drain, 0);
	t.caller_opt = opt;
	if (opt)
		base = *opt;
	else
		memset(&base, 0, sizeof(base));
	caller = base;
	caller.interrupt = many_caller_hook;
	caller.interrupt_arg = &t;
	for (unsigned i = 0; i < nthreads; i++)
	{
		h[i].team = &t;
		h[i].opt = base;
		h[i].opt.interrupt = many_stopped;
		h[i].opt.interrupt_arg = &t;
	}
	/* an interrupt already pending stops the batch before any helper starts */
	(void) many_caller_poll(&t);
	if (nthreads > 0 && !atomic_load(&t.stop) && !atomic_load(&t.drain))
		started = many_start_helpers(&t, h, tid, nthreads);

	many_run_items(&t, &caller, 1);
	if (started > 0)
	{
		many_wait_helpers(&t);
		for (unsigned i = 0; i < started; i++)
			pthread_join(tid[i], NULL);
	}

	if (t.have_err)
	{
		if (err)
			*err = t.first_err;
		return t.first_err.status;
	}
	for (size_t i = 0; i < nitems; i++)
		if (items[i].status != GS_OK)
		{
			result = CANCELED(err);
			break;
		}
	return result;
}
