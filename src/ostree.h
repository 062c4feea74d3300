/*
 * ostree.h — an order-statistic multiset of uint64 keys: insert one key,
 * delete one copy of a key, and read the key of rank k (0-based, ascending),
 * each in O(log n) expected.  The moving (window) aggregates keep a frame's
 * values here (moving_aggs.c); the keys are gpuselect's order-preserving
 * keys (kernels/gs_keys.h), so no comparison function is needed.
 *
 * A treap (randomized binary search tree) over the distinct keys, each node
 * holding its key's count and its subtree's total count.  Why this one:
 *   - a Fenwick tree over value ranks needs the value domain up front; a
 *     window's values arrive one by one and any key can come next;
 *   - a counted B+-tree is shallower but several times the code (splits,
 *     merges, borrowing) for the frames of up to ~1e5 rows that dashboards
 *     use, whose treap of 32-byte nodes stays in the L2 cache;
 *   - a treap's insert and delete are a split and a merge along one path,
 *     with no rebalancing cases, and ties cost nothing (a count, not nodes).
 * Nodes live in one array (32-bit indices, 0 = none) that grows by doubling
 * in the caller's memory context; deleted nodes are reused, so memory
 * follows the largest number of distinct keys held at once, not the number
 * ever inserted.  Priorities come from a per-tree xorshift generator with a
 * fixed seed: runs are reproducible.
 */
#ifndef GS_OSTREE_H
#define GS_OSTREE_H

#include "postgres.h"

typedef struct GsOsNode
{
	uint64		key;
	uint32		left;			/* node indices; 0: none */
	uint32		right;
	uint32		count;			/* copies of key */
	uint32		size;			/* keys in this subtree, copies included */
	uint32		prio;			/* heap order: a parent's prio >= its children's */
	uint32		pad;
} GsOsNode;

typedef struct GsOsTree
{
	MemoryContext mcxt;
	GsOsNode   *nodes;			/* nodes[0]: the empty tree (size 0) */
	uint32		cap;			/* allocated nodes, nodes[0] included */
	uint32		used;			/* nodes ever handed out, nodes[0] included */
	uint32		free_list;		/* reusable nodes, linked through .left */
	uint32		root;
	uint32		rng;			/* xorshift32 state */
} GsOsTree;

extern void gs_ostree_init(GsOsTree *t, MemoryContext mcxt, uint32 initial_nodes);
extern void gs_ostree_insert(GsOsTree *t, uint64 key);
/* remove one copy of key; false (and nothing changed) when it is not held */
extern bool gs_ostree_delete(GsOsTree *t, uint64 key);
/* the key of 0-based ascending rank k; k < gs_ostree_count(t) */
extern uint64 gs_ostree_select(const GsOsTree *t, uint64 k);

static inline uint64
gs_ostree_count(const GsOsTree *t)
{
	return t->nodes[t->root].size;
}

#endif							/* GS_OSTREE_H */
