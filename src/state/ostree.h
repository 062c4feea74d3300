/*
 * ostree.h — an order-statistic multiset of uint64 keys: insert one key,
 * delete one copy of a key, and read the key of rank k (0-based, ascending),
 * each in O(log n).  The moving (window) aggregates keep a frame's values
 * here (moving_aggs.c); the keys are gpuselect's order-preserving keys
 * (kernels/gs_keys.h), so no comparison function is needed.
 *
 * A counted B+-tree: leaves hold distinct keys in order with their number
 * of copies (ties cost a count, not entries); an internal node holds, per
 * child, a lower bound of its keys and the number of keys below it, so a
 * rank is found by subtracting counts on the way down.  Why this one, measured
 * on the rolling-p95 goal's operation sequence (1M rows of random float8
 * keys; per row one insert, one delete and one rank read; outside
 * PostgreSQL; 2-core VM shared with other work):
 *
 *     frame w        counted B+-tree   treap (randomized BST)   sorted blocks of 512
 *     1,000          378-470 ms        645-711 ms               324-461 ms
 *     10,000         584-683 ms        1029-1105 ms             480-687 ms
 *     100,000        1046 ms           3429-4703 ms             1001-1031 ms
 *
 * The treap (32-byte nodes, one per distinct key) walks a pointer per level
 * and misses the cache once the frame outgrows L2; the B+-tree reads a few
 * 2 kB nodes, each by binary search, and is O(log w), which the sorted
 * blocks (a list of sorted arrays, a split when one fills: O(w / 512) per
 * rank) are not.  A Fenwick tree over value ranks would need the value
 * domain up front; a window's values arrive one by one.
 *
 * Nodes split on the way down when full (an insert never goes back up); a
 * delete frees a node that becomes empty and merges a node below a quarter
 * full with its neighbour when both fit in half a node, so memory follows
 * the keys held (the frame), not the number ever inserted.
 *
 * Comparison types (numeric, text, interval, ...) have no order-preserving
 * key; for them (state/datum_frame.c) a key is a handle -- the row's arrival
 * number in the frame -- and a comparator orders handles by the values they
 * name, then by arrival.  All keys are then distinct, and a handle that
 * left the frame may name another value later, so a delete also replaces
 * the deleted handle wherever it is an internal node's bound (the bound of
 * child i is always on the path to it, so only that path is touched).
 */
#ifndef GS_OSTREE_H
#define GS_OSTREE_H

#include "postgres.h"

/* entries per node: 8 + 84 * 24 bytes fill a 2 kB allocation (the unit
 * test builds it with tiny nodes to reach deep trees with few keys) */
#ifndef GS_OSTREE_FAN
#define GS_OSTREE_FAN	84
#endif

typedef struct GsOsNode
{
	int			n;				/* entries in use */
	bool		leaf;
	/* leaf: distinct keys, ascending; internal: keys[i] <= every key under
	 * child i, for i > 0 (keys[0] is not used) */
	uint64		keys[GS_OSTREE_FAN];
	/* leaf: copies of keys[i]; internal: keys (copies) under child i */
	uint64		cnt[GS_OSTREE_FAN];
	struct GsOsNode *child[GS_OSTREE_FAN];	/* internal only */
} GsOsNode;

/* <0, 0, >0 as key a orders before, with or after key b */
typedef int (*GsOsCompare) (uint64 a, uint64 b, void *arg);

typedef struct GsOsTree
{
	MemoryContext mcxt;			/* where the nodes live */
	GsOsNode   *root;			/* a leaf while the tree is small */
	uint64		count;			/* keys held, copies included */
	GsOsCompare cmp;			/* NULL: keys compare as integers */
	void	   *cmp_arg;
} GsOsTree;

extern void gs_ostree_init(GsOsTree *t, MemoryContext mcxt);
/* keys are handles ordered by cmp (gs_ostree_init first); cmp(a, b) == 0 only for a == b */
extern void gs_ostree_set_compare(GsOsTree *t, GsOsCompare cmp, void *arg);
extern void gs_ostree_insert(GsOsTree *t, uint64 key);
/* remove one copy of key; false (and nothing changed) when it is not held */
extern bool gs_ostree_delete(GsOsTree *t, uint64 key);
/* the key of 0-based ascending rank k; k < gs_ostree_count(t) */
extern uint64 gs_ostree_select(const GsOsTree *t, uint64 k);

static inline uint64
gs_ostree_count(const GsOsTree *t)
{
	return t->count;
}

#endif							/* GS_OSTREE_H */
