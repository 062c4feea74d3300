/*
 * ostree.c — the counted B+-tree of ostree.h (why this structure: there).
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "state/ostree.h"

#define FAN GS_OSTREE_FAN

static GsOsNode *
gs_ostree_new(GsOsTree *t, bool leaf)
{
	GsOsNode  *nd = (GsOsNode *) MemoryContextAlloc(t->mcxt, sizeof(GsOsNode));

	nd->n = 0;
	nd->leaf = leaf;
	return nd;
}

void
gs_ostree_init(GsOsTree *t, MemoryContext mcxt)
{
	t->mcxt = mcxt;
	t->count = 0;
	t->cmp = NULL;
	t->cmp_arg = NULL;
	t->root = gs_ostree_new(t, true);
}

void
gs_ostree_set_compare(GsOsTree *t, GsOsCompare cmp, void *arg)
{
	t->cmp = cmp;
	t->cmp_arg = arg;
}

/* a orders before b (integers, or handles by the comparator: a branch the
 * key path always predicts) */
static inline bool
gs_ostree_lt(const GsOsTree *t, uint64 a, uint64 b)
{
	if (likely(t->cmp == NULL))
		return a < b;
	return t->cmp(a, b, t->cmp_arg) < 0;
}

/* the child of an internal node whose range holds key: the last one whose
 * lower bound is <= key (child 0 has none) */
static inline int
gs_ostree_route(const GsOsTree *t, const GsOsNode *nd, uint64 key)
{
	int			lo = 1,
				hi = nd->n;		/* first i >= 1 with keys[i] > key, minus one */

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (!gs_ostree_lt(t, key, nd->keys[mid]))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* first leaf position with keys[i] >= key */
static inline int
gs_ostree_leaf_pos(const GsOsTree *t, const GsOsNode *nd, uint64 key)
{
	int			lo = 0,
				hi = nd->n;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (gs_ostree_lt(t, nd->keys[mid], key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64
gs_ostree_total(const GsOsNode *nd)
{
	uint64		s = 0;

	for (int i = 0; i < nd->n; i++)
		s += nd->cnt[i];
	return s;
}

/* make room at position i of nd (n < FAN) */
static inline void
gs_ostree_open(GsOsNode *nd, int i)
{
	int			m = nd->n - i;

	memmove(&nd->keys[i + 1], &nd->keys[i], sizeof(uint64) * m);
	memmove(&nd->cnt[i + 1], &nd->cnt[i], sizeof(uint64) * m);
	if (!nd->leaf)
		memmove(&nd->child[i + 1], &nd->child[i], sizeof(GsOsNode *) * m);
	nd->n++;
}

static inline void
gs_ostree_close(GsOsNode *nd, int i)
{
	int			m = nd->n - i - 1;

	memmove(&nd->keys[i], &nd->keys[i + 1], sizeof(uint64) * m);
	memmove(&nd->cnt[i], &nd->cnt[i + 1], sizeof(uint64) * m);
	if (!nd->leaf)
		memmove(&nd->child[i], &nd->child[i + 1], sizeof(GsOsNode *) * m);
	nd->n--;
}

/* split the full child i of p (p not full): its upper half becomes child i + 1 */
static void
gs_ostree_split_child(GsOsTree *t, GsOsNode *p, int i)
{
	GsOsNode  *a = p->child[i];
	GsOsNode  *b = gs_ostree_new(t, a->leaf);
	int			half = a->n / 2;

	b->n = a->n - half;
	memcpy(b->keys, &a->keys[half], sizeof(uint64) * b->n);
	memcpy(b->cnt, &a->cnt[half], sizeof(uint64) * b->n);
	if (!a->leaf)
		memcpy(b->child, &a->child[half], sizeof(GsOsNode *) * b->n);
	a->n = half;
	gs_ostree_open(p, i + 1);
	p->keys[i + 1] = b->keys[0];	/* internal b: its first child's bound */
	p->child[i + 1] = b;
	p->cnt[i] = gs_ostree_total(a);
	p->cnt[i + 1] = gs_ostree_total(b);
}

void
gs_ostree_insert(GsOsTree *t, uint64 key)
{
	GsOsNode  *nd;

	/* split full nodes on the way down: a split never has to go back up */
	if (t->root->n == FAN)
	{
		GsOsNode  *r = gs_ostree_new(t, false);

		r->n = 1;
		r->child[0] = t->root;
		r->cnt[0] = t->count;
		r->keys[0] = 0;
		t->root = r;
		gs_ostree_split_child(t, r, 0);
	}
	nd = t->root;
	while (!nd->leaf)
	{
		int			i = gs_ostree_route(t, nd, key);

		if (nd->child[i]->n == FAN)
		{
			gs_ostree_split_child(t, nd, i);
			if (!gs_ostree_lt(t, key, nd->keys[i + 1]))
				i++;
		}
		nd->cnt[i]++;
		nd = nd->child[i];
	}
	{
		int			i = gs_ostree_leaf_pos(t, nd, key);

		if (i < nd->n && nd->keys[i] == key)
			nd->cnt[i]++;
		else
		{
			gs_ostree_open(nd, i);
			nd->keys[i] = key;
			nd->cnt[i] = 1;
		}
	}
	t->count++;
}

/*
 * Child i of p lost entries: an empty child goes; a small one joins a
 * neighbour when both fit in half a node, so nodes stay at least a quarter
 * full on average and memory follows the keys held.
 */
static void
gs_ostree_shrink(GsOsNode *p, int i)
{
	GsOsNode  *a,
			   *b;
	int			j;

	if (p->child[i]->n == 0)
	{
		pfree(p->child[i]);
		gs_ostree_close(p, i);
		return;
	}
	if (p->child[i]->n >= FAN / 4 || p->n < 2)
		return;
	j = i + 1 < p->n ? i : i - 1;	/* merge children j and j + 1 */
	a = p->child[j];
	b = p->child[j + 1];
	if (a->n + b->n > FAN / 2)
		return;
	if (!b->leaf)
		b->keys[0] = p->keys[j + 1];
	memcpy(&a->keys[a->n], b->keys, sizeof(uint64) * b->n);
	memcpy(&a->cnt[a->n], b->cnt, sizeof(uint64) * b->n);
	if (!b->leaf)
		memcpy(&a->child[a->n], b->child, sizeof(GsOsNode *) * b->n);
	a->n += b->n;
	p->cnt[j] += p->cnt[j + 1];
	pfree(b);
	gs_ostree_close(p, j + 1);
}

/* the smallest key under nd (not empty) */
static uint64
gs_ostree_first(const GsOsNode *nd)
{
	while (!nd->leaf)
		nd = nd->child[0];
	return nd->keys[0];
}

/* remove one copy of key under nd; false (nothing changed) when not held */
static bool
gs_ostree_delete_below(const GsOsTree *t, GsOsNode *nd, uint64 key)
{
	int			i;

	if (nd->leaf)
	{
		i = gs_ostree_leaf_pos(t, nd, key);
		if (i == nd->n || nd->keys[i] != key)
			return false;
		if (--nd->cnt[i] == 0)
			gs_ostree_close(nd, i);
		return true;
	}
	i = gs_ostree_route(t, nd, key);
	if (!gs_ostree_delete_below(t, nd->child[i], key))
		return false;
	nd->cnt[i]--;
	/* a handle gone from the tree must not stay a bound: the child's new first key */
	if (t->cmp != NULL && i > 0 && nd->keys[i] == key && nd->cnt[i] > 0)
		nd->keys[i] = gs_ostree_first(nd->child[i]);
	gs_ostree_shrink(nd, i);
	return true;
}

bool
gs_ostree_delete(GsOsTree *t, uint64 key)
{
	if (!gs_ostree_delete_below(t, t->root, key))
		return false;
	t->count--;
	/* a root with one child hands over to it */
	while (!t->root->leaf && t->root->n == 1)
	{
		GsOsNode  *r = t->root;

		t->root = r->child[0];
		pfree(r);
	}
	return true;
}

/* ranks by counts: subtract each child's count until k falls inside one */
uint64
gs_ostree_select(const GsOsTree *t, uint64 k)
{
	const GsOsNode *nd = t->root;

	for (;;)
	{
		int			i = 0;

		while (k >= nd->cnt[i])
			k -= nd->cnt[i++];
		if (nd->leaf)
			return nd->keys[i];
		nd = nd->child[i];
	}
}
