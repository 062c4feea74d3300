/*
 * scan/bulk_shard_scan.h -- what the Citus exchange's shard scans share:
 * bulk_shard_scan.c (the page loop, the ungrouped calls) and
 * bulk_shard_groups.c (the grouped calls and their spools).
 */
#ifndef GS_BULK_SHARD_SCAN_H
#define GS_BULK_SHARD_SCAN_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/execnodes.h"
#include "utils/array.h"
#include "utils/hsearch.h"

#include "base/types.h"
#include "scan/bulk_fetch.h"
#include "scan/bulk_groups.h"
#include "scan/shard_spool.h"

/* what the shards' scans count or collect into */
typedef struct GsShardScan
{
	const int64 *t;				/* the thresholds (or bounds), sorted */
	int			nt;
	bool		keys;			/* collect the keys of odd buckets, else count */
	int64	   *counts;			/* nt + 1 buckets */
	int64	   *out;			/* keys: the collected ones */
	int64		nout;
	int64		maxout;
	GsTypeKind	kind;
	GsBulkColumn column;
	TupleDesc	desc;
	const char *quals;			/* the WHERE, SQL, or "" */
	ExprState  *qual;			/* ... on the shard being read, or NULL */
	ExprContext *econtext;
	TupleTableSlot *slot;
	/* grouped (gs_citus_shard_group_*): NULL gexpr for the others */
	const char *gexpr;			/* the GROUP BY expression, SQL */
	Oid			gtype;			/* its type (the first shard's) */
	GsBulkGroups *groups;		/* ... on the shard being read */
	GsBulkGroups *prev_groups;	/* ... on the one before (its ranges: this one's) */
	HTAB	   *ghash;			/* the call's groups, by value */
	struct GsShardGroup **glist;	/* ... in the order met */
	int			ng;
	int			maxg;
	MemoryContext cxt;			/* the call's memory */
	const int64 *gpoints;		/* keys: the coordinator's groups, sorted */
	int			ngpoints;
	const int64 *goff;			/* ... slot j's bounds t[goff[j] .. goff[j + 1]) */
	int64	   *ubounds;		/* ... the union of their ranges, as bounds */
	int			nubounds;
	int64		unknown;		/* ... rows of a group not among them */
	GsSpoolWriter *spool;		/* counts: every counted key kept, or NULL */
} GsShardScan;

/*
 * One group of a grouped shard scan, over every shard of the call.  Slot
 * 0 is the NULL group's, slot j the coordinator's j-th group (keys).
 */
typedef struct GsShardGroupKey
{
	int64		point;			/* its value (gs_int_point), 0 for NULL */
	int64		isnull;
} GsShardGroupKey;

typedef struct GsShardGroup
{
	GsShardGroupKey key;
	int			index;			/* its place in the call's list (the spool's group number) */
	int			slot;			/* keys: -1 where the coordinator has none */
	int64	   *counts;			/* histogram: nt + 1 buckets */
	const int64 *bounds;		/* keys: its wanted ranges */
	int			nbounds;
	int64	   *keys;
	int64		nkeys;
	int64		maxkeys;
} GsShardGroup;

/*
 * How many of the sorted t[0 .. nt) are at most key: gs_citus_bucket's
 * rule.  Without branches on the data (the base moves by a conditional
 * add): a bucket search on random keys mispredicted about half its steps.
 */
static pg_attribute_always_inline int
gs_shard_bucket(const int64 *t, int nt, int64 key)
{
	const int64 *base = t;
	int			len = nt;

	if (len == 0)
		return 0;
	while (len > 1)
	{
		int			half = len / 2;

		base = base[half] <= key ? base + half : base;
		len -= half;
	}
	return (int) (base - t) + (*base <= key);
}

/* keys mode: a key kept for group g */
extern void gs_shard_group_keep(GsShardScan *h, GsShardGroup *g, int64 key);

/*
 * keys mode: a key inside the union of the ranges, of group g (from a scan
 * or a spool): kept where it is inside g's own ranges; counted as unknown
 * where the coordinator has no such group
 */
static inline void
gs_shard_group_take(GsShardScan *h, GsShardGroup *g, int64 key)
{
	if (g->slot < 0)
		h->unknown++;
	else if (gs_shard_bucket(g->bounds, g->nbounds, key) & 1)
		gs_shard_group_keep(h, g, key);
}
/* the call's group of these values (created where new) */
extern GsShardGroup *gs_shard_group_find(GsShardScan *h, bool isnull, int64 point);
/* the thresholds (or bounds) array t checked and set in h */
extern void gs_shard_scan_thresholds(ArrayType *t, GsShardScan *h, const char *fn);
/* every shard of argument 0 read into h, the quals argument quals_arg */
extern void gs_shard_scan_all(FunctionCallInfo fcinfo, GsShardScan *h, int quals_arg, const char *fn);
/* an int8[] of v[0 .. n) */
extern ArrayType *gs_shard_int8_array(const int64 *v, int64 n);

#endif							/* GS_BULK_SHARD_SCAN_H */
