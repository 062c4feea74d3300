/*
 * test_ostree.c — the order-statistic B+-tree (src/ostree.c) against a
 * sorted array, without PostgreSQL (test/unit/pgshim).  Built twice: with
 * its real node size and with nodes of 8 entries (GS_OSTREE_FAN=8), which
 * reaches trees of many levels with few keys, so every split, merge, node
 * removal and root change is crossed.  Random inserts and deletes (keys
 * from wide and from tiny ranges: many copies), sliding windows, deletes of
 * keys not held; after each step the rank reads and the tree's invariants
 * (order, bounds, counts, no empty node below the root) are checked, and
 * emptying the tree leaves one node allocated.  Then keys as handles with a
 * comparator (the comparison types' frames, state/datum_frame.c): values
 * with many ties, ordered by value then arrival, a frame sliding first in
 * first out and random deletes; every internal bound must name a handle
 * still held (a gone handle may name another value later).
 * Ends with "test_ostree: N passed, M failed".
 */
#include <stdio.h>
#include <stdlib.h>

#include "postgres.h"
#include "state/ostree.h"
#include "unit.h"

long		shim_live_allocs;

/* reference: the keys held, sorted */
static uint64 *ref;
static long nref;

static void
ref_insert(uint64 k)
{
	long		i = nref;

	while (i > 0 && ref[i - 1] > k)
	{
		ref[i] = ref[i - 1];
		i--;
	}
	ref[i] = k;
	nref++;
}

static bool
ref_delete(uint64 k)
{
	for (long i = 0; i < nref; i++)
		if (ref[i] == k)
		{
			memmove(&ref[i], &ref[i + 1], sizeof(uint64) * (nref - i - 1));
			nref--;
			return true;
		}
	return false;
}

/* invariants below nd, whose keys lie in [lo, hi); its count */
static uint64
check_node(const GsOsNode *nd, uint64 lo, uint64 hi, bool is_root, int *nodes)
{
	uint64		total = 0;

	(*nodes)++;
	CHECK(nd->n >= 0 && nd->n <= GS_OSTREE_FAN, "node of %d entries", nd->n);
	CHECK(is_root || nd->n > 0, "empty node below the root");
	for (int i = 0; i < nd->n; i++)
	{
		if (nd->leaf)
		{
			CHECK(nd->keys[i] >= lo && nd->keys[i] < hi, "leaf key out of its bounds");
			CHECK(i == 0 || nd->keys[i - 1] < nd->keys[i], "leaf keys not strictly ascending");
			CHECK(nd->cnt[i] > 0, "leaf key without copies");
		}
		else
		{
			uint64		clo = i == 0 ? lo : nd->keys[i];
			uint64		chi = i + 1 < nd->n ? nd->keys[i + 1] : hi;

			CHECK(i == 0 || (nd->keys[i] >= lo && nd->keys[i] <= hi), "bound out of range");
			CHECK(i < 2 || nd->keys[i - 1] <= nd->keys[i], "bounds not ascending");
			CHECK(check_node(nd->child[i], clo, chi, false, nodes) == nd->cnt[i],
				  "child count differs from its keys");
		}
		total += nd->cnt[i];
	}
	return total;
}

static void
check_tree(const GsOsTree *t)
{
	int			nodes = 0;

	CHECK(check_node(t->root, 0, UINT64_MAX, true, &nodes) == gs_ostree_count(t), "root count");
	CHECK(gs_ostree_count(t) == (uint64) nref, "count %lu, reference %ld",
		  (unsigned long) gs_ostree_count(t), nref);
	CHECK(nodes == shim_live_allocs, "%d nodes reachable, %ld allocated", nodes, shim_live_allocs);
	/* memory follows the keys: nodes at least ~a quarter full on average */
	CHECK(nodes <= 2 + (8 * nref) / GS_OSTREE_FAN + 8 * (nref > 0), "%d nodes for %ld keys", nodes, nref);
	for (long i = 0; i < nref; i++)
		if (gs_ostree_select(t, (uint64) i) != ref[i])
		{
			CHECK(false, "rank %ld", i);
			break;
		}
}

static uint64
draw(uint64 range)
{
	return range == 0 ? rnd() : rnd() % range;
}

/* ---- handles ordered by a comparator ---- */

#define NHANDLES 40000
static uint64 hval[NHANDLES];	/* the value a handle names */
static bool hlive[NHANDLES];

static int
handle_cmp(uint64 a, uint64 b, void *arg)
{
	(void) arg;
	if (hval[a] != hval[b])
		return hval[a] < hval[b] ? -1 : 1;
	return a < b ? -1 : a > b ? 1 : 0;
}

static void
href_insert(uint64 h)
{
	long		i = nref;

	while (i > 0 && handle_cmp(ref[i - 1], h, NULL) > 0)
	{
		ref[i] = ref[i - 1];
		i--;
	}
	ref[i] = h;
	nref++;
	hlive[h] = true;
}

static void
href_delete(uint64 h)
{
	for (long i = 0; i < nref; i++)
		if (ref[i] == h)
		{
			memmove(&ref[i], &ref[i + 1], sizeof(uint64) * (nref - i - 1));
			nref--;
			hlive[h] = false;
			return;
		}
}

static void
check_bounds(const GsOsNode *nd)
{
	if (nd->leaf)
		return;
	for (int i = 0; i < nd->n; i++)
	{
		CHECK(i == 0 || hlive[nd->keys[i]], "bound names a gone handle");
		check_bounds(nd->child[i]);
	}
}

static void
check_handles(const GsOsTree *t)
{
	CHECK(gs_ostree_count(t) == (uint64) nref, "handle count");
	check_bounds(t->root);
	for (long i = 0; i < nref; i++)
		if (gs_ostree_select(t, (uint64) i) != ref[i])
		{
			CHECK(false, "handle rank %ld", i);
			break;
		}
}

static void
test_handles(uint64 range)
{
	GsOsTree	t;
	uint64		next = 0,
				oldest = 0;
	char		ctx[64];

	snprintf(ctx, sizeof(ctx), "fan %d, handles, range %lu", GS_OSTREE_FAN, (unsigned long) range);
	unit_context = ctx;
	nref = 0;
	memset(hlive, 0, sizeof(hlive));
	gs_ostree_init(&t, NULL);
	gs_ostree_set_compare(&t, handle_cmp, NULL);
	/* a frame of up to 700 sliding first in first out, sometimes a random delete */
	while (next < NHANDLES)
	{
		hval[next] = draw(range);
		gs_ostree_insert(&t, next);
		href_insert(next);
		next++;
		while (nref > 700 || (nref > 0 && rnd() % 3 == 0))
		{
			while (!hlive[oldest])
				oldest++;
			CHECK(gs_ostree_delete(&t, oldest), "delete of the oldest handle");
			href_delete(oldest);
		}
		if (nref > 5 && rnd() % 50 == 0)
		{
			uint64		h = ref[rnd() % nref];

			CHECK(gs_ostree_delete(&t, h), "delete of a held handle");
			href_delete(h);
		}
		if (next % 211 == 0)
			check_handles(&t);
	}
	while (nref > 0)
	{
		uint64		h = ref[rnd() % nref];

		CHECK(gs_ostree_delete(&t, h), "delete while emptying");
		href_delete(h);
		if (nref % 37 == 0)
			check_handles(&t);
	}
	CHECK(shim_live_allocs == 1, "%ld nodes left in an empty tree", shim_live_allocs);
	pfree(t.root);
}

int
main(void)
{
	const uint64 ranges[] = {0, 1000000, 50, 3};

	ref = malloc(sizeof(uint64) * 20000);
	rng_state = 20261127;
	for (int r = 0; r < 4; r++)
	{
		GsOsTree	t;
		char		ctx[64];

		snprintf(ctx, sizeof(ctx), "fan %d, range %lu", GS_OSTREE_FAN, (unsigned long) ranges[r]);
		unit_context = ctx;
		nref = 0;
		gs_ostree_init(&t, NULL);
		/* grow to ~3000 keys with deletes mixed in, then shrink to empty */
		for (int step = 0; step < 9000; step++)
		{
			bool		grow = step < 6000 ? rnd() % 4 != 0 : rnd() % 4 == 0;
			uint64		k = draw(ranges[r]);

			if (grow || nref == 0)
			{
				gs_ostree_insert(&t, k);
				ref_insert(k);
			}
			else if (rnd() % 8 == 0)
				CHECK(gs_ostree_delete(&t, k) == ref_delete(k), "delete of a drawn key");
			else
			{
				uint64		held = ref[rnd() % nref];

				CHECK(gs_ostree_delete(&t, held), "delete of a held key");
				ref_delete(held);
			}
			if (step % 97 == 0 || step > 8900)
				check_tree(&t);
		}
		while (nref > 0)
		{
			uint64		held = ref[rnd() % nref];

			CHECK(gs_ostree_delete(&t, held), "delete while emptying");
			ref_delete(held);
		}
		check_tree(&t);
		CHECK(shim_live_allocs == 1, "%ld nodes left in an empty tree", shim_live_allocs);
		CHECK(!gs_ostree_delete(&t, 7), "delete from an empty tree");

		/* a sliding window of 500, keys trending upward (a rolling frame) */
		for (long i = 0; i < 6000; i++)
		{
			uint64		k = (uint64) i / 2 + draw(ranges[r] == 0 ? 0 : 200);

			if (nref == 500)
			{
				uint64		gone = ref[rnd() % nref];

				CHECK(gs_ostree_delete(&t, gone), "window delete");
				ref_delete(gone);
			}
			gs_ostree_insert(&t, k);
			ref_insert(k);
			if (i % 101 == 0)
				check_tree(&t);
		}
		check_tree(&t);
		while (nref > 0)
		{
			gs_ostree_delete(&t, ref[nref - 1]);
			nref--;
		}
		pfree(t.root);
		CHECK(shim_live_allocs == 0, "%ld allocations left", shim_live_allocs);
	}
	test_handles(0);
	test_handles(5);
	test_handles(300);
	return unit_summary(GS_OSTREE_FAN == 8 ? "test_ostree (fan 8)" : "test_ostree");
}
