/*
 * planner_bulk_scan.h — internal to the bulk scan's planner files, which
 * split one concern three ways: planner_bulk_scan_shape.c (when the scan
 * can take a query level: the checks), planner_bulk_scan.c (its paths and
 * cost) and planner_bulk_scan_plan.c (the chosen path made a plan).  What
 * the rest of the planner calls is in planner.h (gs_bulk_scan_add_paths);
 * nothing outside src/planner/ includes this.
 */
#ifndef GS_PLANNER_BULK_SCAN_H
#define GS_PLANNER_BULK_SCAN_H

#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

#include "scan/bulk_scan.h"

/*
 * Where the scan finds a row's group (bulk_groups.c): the column with a
 * cached range and its time zones, and which GROUP BY expression has it
 * (by its sortgroupref: the plan's columns are in another order).
 */
typedef struct GsBulkMono
{
	AttrNumber	attno;			/* 0: none */
	int			zones;
	Index		ref;
} GsBulkMono;

/* ---- the shape checks (planner_bulk_scan_shape.c) ---------------------- */

/* why the scan was not planned: one DEBUG1 line; returns false */
extern bool gs_bulk_decline(const char *why);

/* one of the aggregates the scan builds: which, over which column, with
 * which fraction expression (NULL for gpu_median), descending or not */
extern bool gs_bulk_agg_of(Aggref *a, Index relid, GsBulkAggKind *kind, AttrNumber *attno,
						   Expr **fraction, bool *descending);

/* count(*) (FILTER or not), which the scan counts per group */
extern bool gs_bulk_count_star(Aggref *a);

/* an aggregate's FILTER the scan can evaluate per row */
extern bool gs_bulk_filter_ok(Aggref *a, List *groups);

/* a heap table or materialized view (a table alone, or a leaf of a tree) */
extern bool gs_bulk_rel_ok(PlannerInfo *root, RelOptInfo *rel);

/* the rel's quals: no volatile function, no sub-plan */
extern bool gs_bulk_quals_ok(RelOptInfo *rel);

/* the GROUP BY expressions and their clauses (NIL for none); false to decline */
extern bool gs_bulk_group_exprs(PlannerInfo *root, List *group_clause, List **groups,
								List **sgcs);

/* the group expressions over one table: how the scan groups by them
 * (*mono: the one with a cached range, if any); false to decline */
extern bool gs_bulk_group_ok(RelOptInfo *rel, List *exprs, List *sgcs, GsBulkMono *mono);

/* ---- the plan (planner_bulk_scan_plan.c) -------------------------------- */

/* the path's PlanCustomPath: the CustomScan and its private lists */
extern Plan *gs_bulk_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						  List *tlist, List *clauses, List *custom_plans);

#endif							/* GS_PLANNER_BULK_SCAN_H */
