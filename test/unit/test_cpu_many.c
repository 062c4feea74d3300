/*
 * test_cpu_many.c — gs_cpu_select_many (kernels/cpu/cpu_many.c): many inputs
 * on a team of threads.
 *
 *   - every item's answers equal a sort-based reference, for 0, 1, 3 and 8
 *     helpers, groups of 0..40k keys of 2, 4 and 8 bytes in 1..9 segments,
 *     1..6 ranks (repeated and unsorted too);
 *   - a cancel from the caller's hook stops the batch: GS_ERR_CANCELED, and
 *     the hook is polled while the helpers work (the caller's own items are
 *     few: one huge item keeps a helper busy);
 *   - GS_INTERRUPT_DRAIN: the items under way finish, the others come back
 *     GS_ERR_CANCELED, and running those again completes every answer;
 *   - an invalid item (rank out of range) fails the batch with its message;
 *   - signals sent to the process while helpers run are handled on the
 *     calling thread (helpers start with every signal blocked).
 *
 * Ends with "test_cpu_many: N passed, M failed"; exits nonzero on failure.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs_engine.h"
#include "unit.h"

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

typedef struct group
{
	unsigned	kb;
	size_t		n;
	void	   *keys;
	gs_segment	segs[9];
	uint64_t   *sorted;			/* reference */
	uint64_t	ranks[6];
	uint64_t	out[6];
} group;

static uint64_t
key_at(const void *p, unsigned kb, size_t i)
{
	if (kb == 2)
		return ((const uint16_t *) p)[i];
	if (kb == 4)
		return ((const uint32_t *) p)[i];
	return ((const uint64_t *) p)[i];
}

static void
make_group(group *g, gs_select_item *it, size_t n, unsigned kb)
{
	size_t		nsegs = 1 + rnd() % 9,
				off = 0;
	unsigned	shift = (unsigned) (rnd() % (8 * kb));	/* few or many distinct */

	memset(g, 0, sizeof(*g));
	g->kb = kb;
	g->n = n;
	g->keys = malloc(n * kb + 8);
	g->sorted = malloc(n * sizeof(uint64_t) + 8);
	for (size_t i = 0; i < n; i++)
	{
		uint64_t	k = rnd() >> shift;

		if (kb == 2)
			((uint16_t *) g->keys)[i] = (uint16_t) k;
		else if (kb == 4)
			((uint32_t *) g->keys)[i] = (uint32_t) k;
		else
			((uint64_t *) g->keys)[i] = k;
		g->sorted[i] = key_at(g->keys, kb, i);
	}
	qsort(g->sorted, n, sizeof(uint64_t), cmp_u64);
	for (size_t s = 0; s < nsegs; s++)
	{
		size_t		m = s + 1 == nsegs ? n - off : (n - off) / 2;

		g->segs[s].keys = (const char *) g->keys + off * kb;
		g->segs[s].n = m;
		off += m;
	}
	memset(it, 0, sizeof(*it));
	it->in.segs = g->segs;
	it->in.nsegs = nsegs;
	it->in.key_bytes = kb;
	it->nranks = n == 0 ? 0 : 1 + rnd() % 6;
	for (size_t r = 0; r < it->nranks; r++)
		g->ranks[r] = r > 0 && rnd() % 4 == 0 ? g->ranks[r - 1] : rnd() % n;
	it->ranks = g->ranks;
	it->out_keys = g->out;
}

static void
free_groups(group *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		free(g[i].keys);
		free(g[i].sorted);
	}
}

static void
test_answers(unsigned nthreads)
{
	enum
	{
	NG = 300};
	static group g[NG];
	static gs_select_item it[NG];
	static const unsigned kbs[] = {2, 4, 8};
	gs_error	err;
	gs_status	s;

	for (size_t i = 0; i < NG; i++)
	{
		size_t		n = rnd() % 8 == 0 ? rnd() % 40000 : rnd() % 3000;

		make_group(&g[i], &it[i], n, kbs[rnd() % 3]);
	}
	memset(&err, 0, sizeof(err));
	s = gs_cpu_select_many(it, NG, nthreads, NULL, &err);
	CHECK(s == GS_OK, "threads %u: status %d (%s)", nthreads, (int) s, err.message);
	for (size_t i = 0; i < NG; i++)
	{
		CHECK(it[i].status == GS_OK, "threads %u item %zu: status %d", nthreads, i, (int) it[i].status);
		for (size_t r = 0; r < it[i].nranks; r++)
			CHECK(g[i].out[r] == g[i].sorted[g[i].ranks[r]],
				  "threads %u item %zu (n %zu, %u bytes) rank %llu: %llu, want %llu", nthreads, i,
				  g[i].n, g[i].kb, (unsigned long long) g[i].ranks[r],
				  (unsigned long long) g[i].out[r], (unsigned long long) g[i].sorted[g[i].ranks[r]]);
	}
	free_groups(g, NG);
}

/* ---- cancel ---- */

static int	polls;
static int	cancel_at;

static int
cancel_hook(void *arg)
{
	(void) arg;
	return ++polls >= cancel_at;
}

static void
test_cancel(void)
{
	enum
	{
	NG = 4};
	group		g[NG];
	gs_select_item it[NG];
	gs_options	opt;
	gs_error	err;
	gs_status	s;

	/* one large item (several engine polls) and small ones */
	make_group(&g[0], &it[0], (size_t) 6 << 20, 8);
	for (int i = 1; i < NG; i++)
		make_group(&g[i], &it[i], 1000, 4);
	memset(&opt, 0, sizeof(opt));
	opt.interrupt = cancel_hook;
	for (int at = 1; at <= 3; at++)
	{
		polls = 0;
		cancel_at = at;
		memset(&err, 0, sizeof(err));
		s = gs_cpu_select_many(it, NG, 3, &opt, &err);
		CHECK(s == GS_ERR_CANCELED, "cancel at poll %d: status %d (%s)", at, (int) s, err.message);
		CHECK(polls >= at, "cancel at poll %d: %d polls", at, polls);
	}
	/* never canceled: every item answers, and the caller polled */
	polls = 0;
	cancel_at = 1 << 30;
	s = gs_cpu_select_many(it, NG, 3, &opt, &err);
	CHECK(s == GS_OK, "no cancel: status %d", (int) s);
	CHECK(polls > 0, "no cancel: the caller's hook was never polled");
	for (int i = 0; i < NG; i++)
		for (size_t r = 0; r < it[i].nranks; r++)
			CHECK(g[i].out[r] == g[i].sorted[g[i].ranks[r]], "no cancel: item %d rank %zu", i, r);
	free_groups(g, NG);
}

/* ---- drain: the items under way finish, the rest run again later ---- */

static int	drain_at;

static int
drain_hook(void *arg)
{
	(void) arg;
	return ++polls == drain_at ? GS_INTERRUPT_DRAIN : 0;
}

static void
test_drain(void)
{
	enum
	{
	NG = 200};
	static group g[NG];
	static gs_select_item it[NG];
	gs_select_item left[NG];
	size_t		back[NG];
	gs_options	opt;
	gs_error	err;
	gs_status	s;
	int			runs = 0;
	size_t		nleft = NG;

	for (int i = 0; i < NG; i++)
		make_group(&g[i], &it[i], 20000 + rnd() % 20000, 8);
	for (size_t i = 0; i < NG; i++)
	{
		left[i] = it[i];
		back[i] = i;
	}
	memset(&opt, 0, sizeof(opt));
	opt.interrupt = drain_hook;
	/* each run drains at its first poll: progress only through the items
	 * already under way, until every item is done */
	while (nleft > 0 && runs < 10000)
	{
		size_t		k = 0;

		polls = 0;
		drain_at = 1 + runs % 3;
		s = gs_cpu_select_many(left, nleft, 3, &opt, &err);
		CHECK(s == GS_OK || s == GS_ERR_CANCELED, "drain: status %d", (int) s);
		for (size_t i = 0; i < nleft; i++)
		{
			it[back[i]].status = left[i].status;
			if (left[i].status != GS_OK)
			{
				CHECK(left[i].status == GS_ERR_CANCELED, "drain: item status %d", (int) left[i].status);
				left[k] = left[i];
				back[k++] = back[i];
			}
		}
		CHECK(k < nleft || s == GS_ERR_CANCELED, "drain: no progress and no cancel");
		nleft = k;
		runs++;
	}
	CHECK(nleft == 0, "drain: %zu items never done in %d runs", nleft, runs);
	CHECK(runs > 1, "drain: the first run did everything (%d runs)", runs);
	for (int i = 0; i < NG; i++)
		for (size_t r = 0; r < it[i].nranks; r++)
			CHECK(g[i].out[r] == g[i].sorted[g[i].ranks[r]], "drain: item %d rank %zu", i, r);
	free_groups(g, NG);
}

/* ---- an invalid item ---- */

static void
test_invalid(void)
{
	enum
	{
	NG = 40};
	group		g[NG];
	gs_select_item it[NG];
	gs_error	err;
	gs_status	s;

	for (int i = 0; i < NG; i++)
		make_group(&g[i], &it[i], 2000, 8);
	g[17].ranks[0] = 2000;		/* out of range */
	if (it[17].nranks == 0)
		it[17].nranks = 1;
	memset(&err, 0, sizeof(err));
	s = gs_cpu_select_many(it, NG, 4, NULL, &err);
	CHECK(s == GS_ERR_INVALID, "invalid item: status %d", (int) s);
	CHECK(strstr(err.message, "out of range") != NULL, "invalid item: message '%s'", err.message);
	CHECK(it[17].status == GS_ERR_INVALID, "invalid item: its status %d", (int) it[17].status);
	free_groups(g, NG);
}

/* ---- signals go to the calling thread ---- */

static pthread_t main_thread;
static volatile sig_atomic_t sig_seen,
			sig_elsewhere;

static void
on_usr1(int signo)
{
	(void) signo;
	sig_seen++;
	if (!pthread_equal(pthread_self(), main_thread))
		sig_elsewhere++;
}

static int	kills;

static int
kill_hook(void *arg)
{
	(void) arg;
	if (kills < 50)
	{
		kills++;
		kill(getpid(), SIGUSR1);
	}
	return 0;
}

static void
test_signals(void)
{
	enum
	{
	NG = 64};
	static group g[NG];
	static gs_select_item it[NG];
	gs_options	opt;
	gs_error	err;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	main_thread = pthread_self();
	for (int i = 0; i < NG; i++)
		make_group(&g[i], &it[i], 200000, 8);
	memset(&opt, 0, sizeof(opt));
	opt.interrupt = kill_hook;
	CHECK(gs_cpu_select_many(it, NG, 6, &opt, &err) == GS_OK, "signals: status");
	CHECK(sig_seen > 0, "signals: none handled");
	CHECK(sig_elsewhere == 0, "signals: %d handled on a helper thread", (int) sig_elsewhere);
	free_groups(g, NG);
}

int
main(void)
{
	static const unsigned threads[] = {0, 1, 3, 8};

	rng_state = 12345;

	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++)
		test_answers(threads[i]);
	test_cancel();
	test_drain();
	test_invalid();
	test_signals();
	{
		gs_error	err;

		CHECK(gs_cpu_select_many(NULL, 0, 4, NULL, &err) == GS_OK, "no items");
	}
	return unit_summary("test_cpu_many");
}
