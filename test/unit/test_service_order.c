/*
 * test_service_order.c — the GPU service's choice of the next job
 * (src/service/service_order.h): the rule's cases, and a simulated busy
 * device where equal jobs of many sessions must be served in the order
 * they came (before, ties went to the lowest job slot, and the highest
 * slots waited for the 100 ms aging step).
 * Ends with "test_service_order: N passed, M failed".
 */
#include "unit.h"
#include "service/service_order.h"

/* the service's loop over its slots (service_main.c, gs_svc_next_job) */
static int
next_job(int n, const int *submitted, const uint64_t *nkeys, const int64_t *submit_us, int64_t now_us)
{
	int			best = -1;
	uint64_t	best_aged = 0;
	int64_t		best_submit = 0;

	for (int j = 0; j < n; j++)
	{
		uint64_t	aged;

		if (!submitted[j])
			continue;
		aged = gs_svc_aged_keys(nkeys[j], (now_us - submit_us[j]) / 1000);
		if (best < 0 || gs_svc_runs_before(aged, submit_us[j], best_aged, best_submit))
		{
			best = j;
			best_aged = aged;
			best_submit = submit_us[j];
		}
	}
	return best;
}

static void
test_rule(void)
{
	unit_context = "rule";
	CHECK(gs_svc_aged_keys(1000, 0) == 1000, "no wait, no aging");
	CHECK(gs_svc_aged_keys(1000, 99) == 1000, "under one step");
	CHECK(gs_svc_aged_keys(1000, 100) == 500, "one step halves");
	CHECK(gs_svc_aged_keys(UINT64_MAX, 6400) == 0, "64 steps: nothing left");
	CHECK(gs_svc_aged_keys(1000, -5) == 1000, "a clock going back does not age");
	CHECK(gs_svc_size_class(0) == 0 && gs_svc_size_class(1) == 1 && gs_svc_size_class(2) == 2 &&
		  gs_svc_size_class(3) == 2 && gs_svc_size_class(UINT64_MAX) == 64, "classes");
	/* a smaller class first, whenever submitted */
	CHECK(gs_svc_runs_before(1000, 50, 100000, 10), "small before large");
	CHECK(!gs_svc_runs_before(100000, 10, 1000, 50), "large not before small");
	/* one class: first come, first served, whatever the exact sizes */
	CHECK(gs_svc_runs_before(100100, 10, 100000, 20), "equal class: the earlier");
	CHECK(!gs_svc_runs_before(100000, 20, 100100, 10), "equal class: not the later");
	CHECK(!gs_svc_runs_before(100000, 10, 100000, 10), "a tie keeps the one chosen");
}

/*
 * 64 sessions, each submitting a 100k-key job again as soon as its last
 * one is answered, one device taking 0.3 ms a job: every job must start
 * within the time the others' jobs take (64 x 0.3 ms, plus slack), which
 * serving ties by slot broke (the highest slots waited ~100 ms).
 */
static void
test_busy_device(void)
{
	enum
	{
		N = 64
	};
	int			submitted[N];
	uint64_t	nkeys[N];
	int64_t		submit_us[N];
	int64_t		now = 0,
				worst = 0;
	const int64_t job_us = 300;

	unit_context = "busy device";
	for (int j = 0; j < N; j++)
	{
		submitted[j] = 1;
		nkeys[j] = 100000 + (rnd() % 1000);	/* groups of about one size */
		submit_us[j] = (int64_t) (N - j);	/* the highest slots came first */
	}
	for (int served = 0; served < 20000; served++)
	{
		int			j = next_job(N, submitted, nkeys, submit_us, now);

		if (now - submit_us[j] > worst)
			worst = now - submit_us[j];
		now += job_us;
		/* answered: its session submits the next one at once */
		submit_us[j] = now;
	}
	CHECK(worst <= (N + 1) * job_us, "longest wait %lld us, more than %d jobs' time",
		  (long long) worst, N + 1);

	/* a large job among them is not starved: aging takes it first in time */
	nkeys[0] = 100000000;
	submit_us[0] = now;
	{
		int64_t		since = now;
		int			ran = 0;

		for (int served = 0; served < 20000 && !ran; served++)
		{
			int			j = next_job(N, submitted, nkeys, submit_us, now);

			now += job_us;
			if (j == 0)
				ran = 1;
			else
				submit_us[j] = now;
		}
		CHECK(ran && now - since <= 1100 * 1000, "the large job waited %lld us",
			  (long long) (now - since));
	}
}

int
main(void)
{
	rng_state = 20261128;
	test_rule();
	test_busy_device();
	return unit_summary("test_service_order");
}
