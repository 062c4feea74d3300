/*
 * ostree.c — the order-statistic treap of ostree.h (why a treap: there).
 *
 * Insert: walk down from the root while the nodes on the path have a higher
 * priority than the new node, counting the key in each; if the key is found
 * on the way, its count goes up and that is all.  Otherwise the subtree met
 * there is split around the key (a search below it may still find the key:
 * then only counts change) and becomes the new node's children.
 * Delete: the path to the key loses one from each size; a key whose count
 * drops to zero is replaced by the merge of its two subtrees.
 * Recursion depth is the treap's depth: O(log n) expected, ~2.5 log2 n at
 * the 99.99th percentile for the sizes a frame has.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "ostree.h"

#define N(t, i)		((t)->nodes[(i)])

void
gs_ostree_init(GsOsTree *t, MemoryContext mcxt, uint32 initial_nodes)
{
	t->mcxt = mcxt;
	t->cap = Max(initial_nodes, 16) + 1;
	t->nodes = (GsOsNode *) MemoryContextAllocHuge(mcxt, sizeof(GsOsNode) * t->cap);
	memset(&t->nodes[0], 0, sizeof(GsOsNode));
	t->used = 1;
	t->free_list = 0;
	t->root = 0;
	t->rng = 0x9E3779B9u;
}

static uint32
gs_ostree_new_node(GsOsTree *t, uint64 key)
{
	uint32		i;
	uint32		x;

	if (t->free_list != 0)
	{
		i = t->free_list;
		t->free_list = N(t, i).left;
	}
	else
	{
		if (t->used == t->cap)
		{
			uint64		newcap = (uint64) t->cap * 2;

			/* indices are 32-bit and sizes count in uint32 (ostree.h) */
			if (newcap > PG_UINT32_MAX / 2)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("gpuselect: a window frame holds too many distinct values")));
			t->nodes = (GsOsNode *) repalloc_huge(t->nodes, sizeof(GsOsNode) * newcap);
			t->cap = (uint32) newcap;
		}
		i = t->used++;
	}
	x = t->rng;					/* xorshift32 */
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	t->rng = x;
	N(t, i).key = key;
	N(t, i).left = N(t, i).right = 0;
	N(t, i).count = N(t, i).size = 1;
	N(t, i).prio = x;
	return i;
}

static inline void
gs_ostree_fix(GsOsTree *t, uint32 i)
{
	N(t, i).size = N(t, N(t, i).left).size + N(t, N(t, i).right).size + N(t, i).count;
}

/* is key in the subtree at i?  (no change) */
static bool
gs_ostree_holds(const GsOsTree *t, uint32 i, uint64 key)
{
	while (i != 0)
	{
		if (key == N(t, i).key)
			return true;
		i = key < N(t, i).key ? N(t, i).left : N(t, i).right;
	}
	return false;
}

/* one more copy of a key the subtree at i holds: counts along its path */
static void
gs_ostree_count_up(GsOsTree *t, uint32 i, uint64 key)
{
	for (;;)
	{
		N(t, i).size++;
		if (key == N(t, i).key)
		{
			N(t, i).count++;
			return;
		}
		i = key < N(t, i).key ? N(t, i).left : N(t, i).right;
	}
}

/* split the subtree at i (which does not hold key) into keys < key, > key */
static void
gs_ostree_split(GsOsTree *t, uint32 i, uint64 key, uint32 *lo, uint32 *hi)
{
	if (i == 0)
	{
		*lo = *hi = 0;
		return;
	}
	if (N(t, i).key < key)
	{
		uint32		r;

		gs_ostree_split(t, N(t, i).right, key, &r, hi);
		N(t, i).right = r;
		*lo = i;
	}
	else
	{
		uint32		l;

		gs_ostree_split(t, N(t, i).left, key, lo, &l);
		N(t, i).left = l;
		*hi = i;
	}
	gs_ostree_fix(t, i);
}

void
gs_ostree_insert(GsOsTree *t, uint64 key)
{
	uint32		nw;
	uint32		prio;
	uint32		lo,
				hi;
	uint32	   *link = &t->root;

	if (unlikely(gs_ostree_count(t) >= PG_UINT32_MAX - 1))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuselect: a window frame holds too many values")));
	if (gs_ostree_holds(t, t->root, key))
	{
		gs_ostree_count_up(t, t->root, key);
		return;
	}
	/* a new node: allocating may move the array, so before taking links */
	nw = gs_ostree_new_node(t, key);
	prio = N(t, nw).prio;
	link = &t->root;
	while (*link != 0 && N(t, *link).prio >= prio)
	{
		uint32		i = *link;

		N(t, i).size++;
		link = key < N(t, i).key ? &N(t, i).left : &N(t, i).right;
	}
	gs_ostree_split(t, *link, key, &lo, &hi);
	N(t, nw).left = lo;
	N(t, nw).right = hi;
	gs_ostree_fix(t, nw);
	*link = nw;
}

/* the two subtrees a (all keys smaller) and b joined */
static uint32
gs_ostree_merge(GsOsTree *t, uint32 a, uint32 b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	if (N(t, a).prio >= N(t, b).prio)
	{
		N(t, a).right = gs_ostree_merge(t, N(t, a).right, b);
		gs_ostree_fix(t, a);
		return a;
	}
	N(t, b).left = gs_ostree_merge(t, a, N(t, b).left);
	gs_ostree_fix(t, b);
	return b;
}

bool
gs_ostree_delete(GsOsTree *t, uint64 key)
{
	uint32	   *link = &t->root;

	if (!gs_ostree_holds(t, t->root, key))
		return false;
	for (;;)
	{
		uint32		i = *link;

		N(t, i).size--;
		if (key != N(t, i).key)
		{
			link = key < N(t, i).key ? &N(t, i).left : &N(t, i).right;
			continue;
		}
		if (--N(t, i).count == 0)
		{
			*link = gs_ostree_merge(t, N(t, i).left, N(t, i).right);
			N(t, i).left = t->free_list;
			t->free_list = i;
		}
		return true;
	}
}

uint64
gs_ostree_select(const GsOsTree *t, uint64 k)
{
	uint32		i = t->root;

	Assert(k < gs_ostree_count(t));
	for (;;)
	{
		uint32		l = N(t, i).left;
		uint64		ls = N(t, l).size;

		if (k < ls)
			i = l;
		else if (k < ls + N(t, i).count)
			return N(t, i).key;
		else
		{
			k -= ls + N(t, i).count;
			i = N(t, i).right;
		}
	}
}
