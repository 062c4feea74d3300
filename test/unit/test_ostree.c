/*
 * test_ostree.c — the order-statistic B+-tree (src/ostree.c) against a
 * sorted array, without PostgreSQL (test/unit/pgshim).  Built twice: with
 * its real node size and with nodes of 8 entries (GS_OSTREE_FAN=8), which
 * reaches trees of many levels with few keys, so every split, merge, node
 * removal and root change is crossed.  Random inserts and deletes (keys
 * from wide and from tiny ranges: many copies), sliding windows, deletes of
 * keys not held; after each step the rank reads and the tree's invariants
 * (order, bounds, counts, no empty node below the root) are checked, and
 * emptying the tree leaves one node allocated.
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
	return unit_summary(GS_OSTREE_FAN == 8 ? "test_ostree (fan 8)" : "test_ostree");
}
