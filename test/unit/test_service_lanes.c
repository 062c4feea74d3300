/*
 * test_service_lanes.c — the GPU service's lane threads (src/service/service_lanes.c)
 * with the CPU engine, without PostgreSQL: that this links at all shows a
 * lane calls no PostgreSQL function.
 *
 * Three lanes run selections at the same time (answers checked against a
 * sort), each wakes the waiting thread through the pipe (poll, no busy
 * wait), run with every signal blocked, stop a held job when its interrupt
 * hook says so, pass an injected failure through, and a stop ends every
 * lane within the deadline, a running job handed back as canceled, and so
 * is one given after it that never started.  Jobs given to a lane while it
 * runs one all come back, in order (service_lane_depth).
 * Prefetched copies: read by a job of their generation, never by another,
 * not after a drop.
 * Ends with "test_service_lanes: N passed, M failed".
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service/service_lanes.h"
#include "unit.h"


#define NLANES 3
#define NKEYS 2000000
#define NRANKS 5

static atomic_int abandon[NLANES];
static atomic_int signals_blocked = 1;
static atomic_int hook_calls = 0;

/* the service's hook reads atomics only; this one also checks the thread's mask */
static int
hook(void *arg)
{
	int			k = (int) (intptr_t) arg;
	sigset_t	cur;

	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (!sigismember(&cur, SIGTERM) || !sigismember(&cur, SIGUSR1) || !sigismember(&cur, SIGINT))
		atomic_store(&signals_blocked, 0);
	atomic_fetch_add(&hook_calls, 1);
	return gs_lanes_stopping() || atomic_load(&abandon[k]);
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* wait (poll on the wake pipe) until `want` works came back; they go into got[] */
static int
collect(gs_lane_work **got, int want, int timeout_ms)
{
	int			n = 0;
	double		end = now_ms() + timeout_ms;

	while (n < want && now_ms() < end)
	{
		struct pollfd p = {gs_lanes_wake_fd(), POLLIN, 0};
		gs_lane_work *w;

		(void) poll(&p, 1, 100);
		for (w = gs_lanes_collect(); w != NULL; w = w->next)
			got[n++] = w;
	}
	return n;
}

static void
setup(gs_lane_work *w, int k, uint64_t *keys, gs_segment *seg, uint64_t *ranks, uint64_t *out)
{
	memset(w, 0, sizeof(*w));
	w->tag = k;
	seg->keys = keys;
	seg->n = NKEYS;
	w->in.segs = seg;
	w->in.nsegs = 1;
	w->in.key_bytes = 8;
	w->ranks = ranks;
	w->nranks = NRANKS;
	w->answer = out;
	w->opt.interrupt = hook;
	w->opt.interrupt_arg = (void *) (intptr_t) k;
	w->inject = GS_OK;
}

static bool
answers_are(const uint64_t *out, const uint64_t *sorted, const uint64_t *ranks)
{
	for (int r = 0; r < NRANKS; r++)
		if (out[r] != sorted[ranks[r]])
			return false;
	return true;
}

static void
wait_prefetched(uint64_t at_least)
{
	struct timespec ms10 = {0, 10 * 1000 * 1000};

	for (int i = 0; i < 500 && gs_lanes_prefetched_bytes() < at_least; i++)
		nanosleep(&ms10, NULL);
}

/* one job on lane 0 over keys, as pool chunk `chunk` in generation *gen */
static bool
run_on_chunk(gs_lane_work *w, uint64_t *keys, gs_segment *seg, uint64_t *ranks, uint64_t *out,
			 const int *chunk, const uint32_t *gen)
{
	gs_lane_work *got[1];

	setup(w, 0, keys, seg, ranks, out);
	w->seg_chunk = chunk;
	w->seg_gen = gen;
	gs_lanes_submit(0, w);
	return collect(got, 1, 60000) == 1 && w->status == GS_OK;
}

/*
 * Prefetch on lane 0: a copy of chunk 2 (keys, generation 5) is read by a
 * job of generation 5 instead of the keys, which are changed afterwards;
 * a job of generation 6, or one after the copy was dropped, reads the keys.
 * `sorted` holds the keys sorted; the keys are restored at the end.
 */
static void
prefetch_checks(uint64_t *keys, uint64_t *sorted, uint64_t *ranks, uint64_t *out,
				gs_segment *seg, gs_lane_work *w)
{
	uint64_t	bytes = sizeof(uint64_t) * NKEYS;
	uint64_t	before = gs_lanes_prefetched_bytes();
	uint64_t   *saved = malloc(bytes);
	uint64_t	zeros[NRANKS] = {0};
	int			chunk = 2;
	uint32_t	gen = 5;

	memcpy(saved, keys, bytes);
	gs_lanes_prefetch(0, chunk, 5, keys, bytes);
	wait_prefetched(before + bytes);
	CHECK(gs_lanes_prefetched_bytes() == before + bytes, "prefetch: the lane copied the chunk");
	memset(keys, 0, bytes);		/* the pool chunk is another generation's now */

	CHECK(run_on_chunk(w, keys, seg, ranks, out, &chunk, &gen), "prefetch: a job of the copy's generation ran");
	CHECK(answers_are(out, sorted, ranks), "... on the copy, not the changed keys");
	CHECK(w->prefetch_used_bytes == bytes, "... and says so");

	gen = 6;
	CHECK(run_on_chunk(w, keys, seg, ranks, out, &chunk, &gen) &&
		  memcmp(out, zeros, sizeof(zeros)) == 0 && w->prefetch_used_bytes == 0,
		  "prefetch: a job of another generation reads the keys");

	gen = 5;
	gs_lanes_unfetch(0, chunk);
	{
		struct timespec ms200 = {0, 200 * 1000 * 1000};

		nanosleep(&ms200, NULL);	/* the lane is idle: the drop runs at once */
	}
	CHECK(run_on_chunk(w, keys, seg, ranks, out, &chunk, &gen) &&
		  memcmp(out, zeros, sizeof(zeros)) == 0 && w->prefetch_used_bytes == 0,
		  "prefetch: a dropped copy is not read");
	memcpy(keys, saved, bytes);
	free(saved);
}

int
main(void)
{
	gs_svc_cuda_dev *devs[NLANES] = {NULL, NULL, NULL};
	bool		ok[NLANES];
	char		why[NLANES][128];
	static uint64_t keys[NLANES][NKEYS];
	uint64_t   *sorted = malloc(sizeof(uint64_t) * NKEYS);
	uint64_t	ranks[NRANKS] = {0, 1, NKEYS / 2, NKEYS - 2, NKEYS - 1};
	uint64_t	out[NLANES][NRANKS];
	gs_segment	seg[NLANES];
	gs_lane_work work[NLANES];
	gs_lane_work *got[NLANES];
	gs_lane_work more[3];
	gs_segment	more_seg[3];
	uint64_t	more_out[3][NRANKS];
	uint64_t	x = 88172645463325252ull;
	double		t0;
	int			n;

	CHECK(gs_lanes_start(NLANES, devs, 4, ok, why) == NLANES, "three lanes start");
	for (int k = 0; k < NLANES; k++)
		CHECK(ok[k], "a CPU lane is usable");
	CHECK(gs_lanes_wake_fd() >= 0, "the wake pipe exists");

	/* three selections at once, each checked against a sort */
	for (int k = 0; k < NLANES; k++)
	{
		for (int i = 0; i < NKEYS; i++)
		{
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			keys[k][i] = x >> (k * 8);	/* a different range per lane */
		}
		setup(&work[k], k, keys[k], &seg[k], ranks, out[k]);
		work[k].cpu_path = k == 1 ? GS_CPU_PATH_SORT : GS_CPU_PATH_SELECT;	/* per thread */
		gs_lanes_submit(k, &work[k]);
	}
	n = collect(got, NLANES, 60000);
	CHECK(n == NLANES, "every lane handed its work back through the pipe");
	for (int i = 0; i < n; i++)
	{
		gs_lane_work *w = got[i];
		int			k = w->tag;
		bool		right = true;

		CHECK(w->lane == k && w->status == GS_OK, "a selection ran on its own lane");
		memcpy(sorted, keys[k], sizeof(uint64_t) * NKEYS);
		qsort(sorted, NKEYS, sizeof(uint64_t), cmp_u64);
		for (int r = 0; r < NRANKS; r++)
			right = right && out[k][r] == sorted[ranks[r]];
		CHECK(right, "the lane's answers equal the sort's");
	}
	CHECK(atomic_load(&hook_calls) > 0, "the engines polled the interrupt hook");
	CHECK(atomic_load(&signals_blocked) == 1, "lane threads run with every signal blocked");

	memcpy(sorted, keys[0], sizeof(uint64_t) * NKEYS);
	qsort(sorted, NKEYS, sizeof(uint64_t), cmp_u64);
	prefetch_checks(keys[0], sorted, ranks, out[0], &seg[0], &work[0]);

	/* a held job stops when its hook says abandoned; an injected failure passes through */
	setup(&work[0], 0, keys[0], &seg[0], ranks, out[0]);
	work[0].delay_ms = 10000;
	setup(&work[1], 1, keys[1], &seg[1], ranks, out[1]);
	work[1].inject = GS_ERR_DEVICE;
	work[1].inject_sticky = true;
	snprintf(work[1].err.message, sizeof(work[1].err.message), "injected");
	t0 = now_ms();
	gs_lanes_submit(0, &work[0]);
	gs_lanes_submit(1, &work[1]);
	n = collect(got, 1, 5000);
	CHECK(n == 1 && got[0] == &work[1], "the injected failure comes back first");
	CHECK(work[1].status == GS_ERR_DEVICE && work[1].sticky &&
		  strcmp(work[1].err.message, "injected") == 0, "... as a sticky device failure, message kept");
	atomic_store(&abandon[0], 1);
	n = collect(got, 1, 5000);
	CHECK(n == 1 && got[0] == &work[0] && work[0].status == GS_ERR_CANCELED,
		  "an abandoned held job comes back canceled");
	CHECK(now_ms() - t0 < 3000, "... long before its delay");
	atomic_store(&abandon[0], 0);

	/*
	 * Jobs given to a lane while it runs one (gpuselect.service_lane_depth
	 * = 2, and the moment after the lane handed one back, before it started
	 * the next): every one comes back, in the order given.
	 */
	{
		gs_lane_work *back[3];
		bool		all_ok = true;

		for (int i = 0; i < 3; i++)
		{
			setup(&more[i], 10 + i, keys[0], &more_seg[i], ranks, more_out[i]);
			more[i].delay_ms = i == 0 ? 200 : 0;	/* the others are given while it runs */
			gs_lanes_submit(0, &more[i]);
		}
		n = collect(back, 3, 60000);
		CHECK(n == 3, "three jobs given to one lane at once all come back");
		for (int i = 0; i < n; i++)
			all_ok = all_ok && back[i] == &more[i] && more[i].status == GS_OK &&
				more_out[i][2] == sorted[ranks[2]];
		CHECK(all_ok, "... in the order given, each answered");
	}

	/*
	 * A lane held for another lane's split job parks (and wakes the main
	 * thread), runs nothing given to it meanwhile, and runs it once
	 * released; gs_lanes_parked says so only while held.
	 */
	{
		gs_lane_work *back[1];
		struct timespec ms100 = {0, 100 * 1000 * 1000};
		bool		parked = false;

		CHECK(!gs_lanes_parked(1), "hold: a lane not held is not parked");
		gs_lanes_hold(1, true);
		for (int i = 0; i < 100 && !(parked = gs_lanes_parked(1)); i++)
			nanosleep(&ms100, NULL);
		CHECK(parked, "hold: the held lane parks");
		setup(&more[0], 30, keys[0], &more_seg[0], ranks, more_out[0]);
		gs_lanes_submit(1, &more[0]);
		CHECK(collect(back, 1, 500) == 0, "hold: a job given to a held lane does not run");
		gs_lanes_hold(1, false);
		CHECK(!gs_lanes_parked(1), "hold: released, the lane is not parked");
		CHECK(collect(back, 1, 60000) == 1 && back[0] == &more[0] && more[0].status == GS_OK &&
			  more_out[0][2] == sorted[ranks[2]], "hold: released, the lane runs the job it was given");
	}

	/*
	 * Stop with a job held on lane 2 and another given after it: every lane
	 * ends within the deadline, and both jobs come back canceled, the one
	 * the lane never started too.
	 */
	setup(&work[2], 2, keys[2], &seg[2], ranks, out[2]);
	work[2].delay_ms = 60000;
	gs_lanes_submit(2, &work[2]);
	setup(&more[0], 20, keys[2], &more_seg[0], ranks, more_out[0]);
	gs_lanes_submit(2, &more[0]);
	{
		struct timespec ms50 = {0, 50 * 1000 * 1000};

		nanosleep(&ms50, NULL);
	}
	t0 = now_ms();
	CHECK(gs_lanes_stop(2000) == 0, "stop: every lane joined");
	CHECK(now_ms() - t0 < 2000, "... within the deadline");
	for (int k = 0; k < NLANES; k++)
		CHECK(gs_lanes_ended(k), "a lane ended");
	n = collect(got, 2, 1000);
	CHECK(n == 2 && got[0] == &work[2] && work[2].status == GS_ERR_CANCELED,
		  "the job running at the stop came back canceled");
	CHECK(n == 2 && got[1] == &more[0] && more[0].status == GS_ERR_CANCELED,
		  "the job given after it came back canceled, never started");

	free(sorted);
	return unit_summary("test_service_lanes");
}
