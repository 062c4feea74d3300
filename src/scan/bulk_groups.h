/*
 * bulk_groups.h — the bulk scan's groups (scan/bulk_groups.c): which group a
 * row belongs to, without evaluating the GROUP BY expression per row where
 * that can be avoided exactly.
 */
#ifndef GS_BULK_GROUPS_H
#define GS_BULK_GROUPS_H

#include "postgres.h"
#include "access/htup.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"

#include "state/state.h"

/* the expression reads the session time zone (planner_bulk_scan.c) */
#define GS_BULK_ZONE_SESSION	0x01

typedef struct GsBulkGroups GsBulkGroups;

/* a by-value type whose equality is bitwise (the group table compares
 * Datums; the planner takes such a type's GROUP BY expression under its
 * default equality; any other type's by its clause's operator and hash) */
extern bool gs_bulk_type_bitwise(Oid typid);

/* one group: its rows (count(*)), those passing each aggregate FILTER
 * (count(*) FILTER), and a state per gpuselect aggregate */
typedef struct GsBulkGroup
{
	int64		rows;
	int64	   *filtered;		/* one per distinct FILTER; NULL: none */
	void	   *extra;			/* the caller's (the Citus shard scans' group) */
	GsState    *states[FLEXIBLE_ARRAY_MEMBER];
} GsBulkGroup;

/* a new group (bulk_scan.c), in the groups' memory, for its values keys
 * (nulls: which are NULL), copied there */
typedef GsBulkGroup *(*GsBulkNewGroup) (void *arg, const Datum *keys, const bool *nulls);

/*
 * exprs: the GROUP BY expressions, over the relation's columns (no parent
 * plan state: they read the heap tuple); eqops: an Integer List, each one's
 * GROUP BY equality operator (Oid; a type that is not bitwise compares by
 * it and its hash function).  mono_attno: 0, or the one column
 * expression mono_col is a non-decreasing function of (planner file: which
 * expressions), with zones the time zones it depends on.
 */
extern GsBulkGroups *gs_bulk_groups_create(MemoryContext mcxt, EState *estate, List *exprs,
										   List *eqops, int mono_col, AttrNumber mono_attno, int zones,
										   TupleDesc reldesc, GsBulkNewGroup new_group, void *arg);
/* the row's group (created at its first row) */
extern GsBulkGroup *gs_bulk_groups_of(GsBulkGroups *g, HeapTuple tup, ExprContext *econtext);
/* the groups, one per call after the scan, with their values: false at the end */
extern bool gs_bulk_groups_next(GsBulkGroups *g, GsBulkGroup **group, const Datum **keys,
								const bool **nulls);
/* emit them in order of nkeys sort keys: expression cols[i] by sortops[i]
 * under collations[i], NULLs first or not (after the scan) */
extern void gs_bulk_groups_sort(GsBulkGroups *g, int nkeys, const int *cols, const Oid *sortops,
								const Oid *collations, const bool *nulls_first);
/* e, over range table entry relid, is one of the shapes that have a cached
 * range (a non-decreasing function of one column, not the column itself):
 * then *attno is the column and *zones its time zones (bulk_group_range.c) */
extern bool gs_bulk_range_column(Node *e, Index relid, AttrNumber *attno, int *zones);

/* the ranges from found (the same expression over a sibling table) made g's */
extern void gs_bulk_groups_adopt_ranges(GsBulkGroups *g, const GsBulkGroups *from);
/* forget every group (a rescan; the memory is the caller's to reset) */
extern void gs_bulk_groups_forget(GsBulkGroups *g);
/* rows whose group came from the cached range, and ranges searched (EXPLAIN) */
extern void gs_bulk_groups_counts(GsBulkGroups *g, uint64 *cached_rows, uint64 *ranges);

#endif							/* GS_BULK_GROUPS_H */
