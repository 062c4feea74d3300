/*
 * bulk_scan.h — the bulk scan: one plan node, "Custom Scan (gpuselect)",
 * that reads a heap relation's pages itself and builds the groups' states
 * of gpuselect's plain aggregates directly, with no executor slot and no
 * transition call per row.  The planner (planner/planner_bulk_scan.c)
 * puts it under a Finalize Aggregate, in place of a Partial or plain
 * Aggregate over a SeqScan; this folder runs it (scan/bulk_scan.c).
 *
 * The plan's custom_private is a List, in this order (GS_BULK_PRIV_*):
 *   flags      Integer: GS_BULK_PARTIAL (parallel: serialized partial
 *              states), GS_BULK_GROUPED (a GROUP BY)
 *   aggs       a List per aggregate: Integer kind (GsBulkAggKind), Integer
 *              attno of the aggregated column, Integer 1 for ORDER BY x
 *              DESC (the rewrite's gs_planner_*_desc), Integer f: its
 *              FILTER is custom_exprs' filter f (-1: none)
 *   group      the GROUP BY expressions in the order of their output
 *              columns (NIL: none): not seen by setrefs.c (the planner
 *              file says why), so they hold no parameter and their
 *              operators have their function OIDs set
 *   mono       a List: Integer attno of the one column that group
 *              expression is a non-decreasing function of (0: none), Integer
 *              zones (GS_BULK_ZONE_*, bulk_groups.h), Integer which group
 *              expression (index into group; -1: none): see bulk_groups.c
 *   columns    an integer List, per output column of custom_scan_tlist:
 *              GS_BULK_COLUMN_GROUP the group expression, GS_BULK_COLUMN_COUNT
 *              count(*), GS_BULK_COLUMN_FILTERED_COUNT(f) count(*) FILTER
 *              (filter f), k >= 0 aggregate k's state
 *   order      NIL (groups in any order), or a List per sort key, in the
 *              GROUP BY's order, of four: Integer group expression (index
 *              into group), Integer sortop, Integer collation (Oids),
 *              Integer nulls_first -- the order the path's pathkeys promise
 *              (Gather Merge and a sorted Finalize Aggregate above;
 *              planner file: why)
 *   eqops      a List per group expression (in group's order) of Integer:
 *              its GROUP BY clause's equality operator (Oid), which the
 *              groups compare by (with its hash functions) where the type
 *              is not bitwise, as the executor's grouping does
 * custom_exprs is a List of three: the quals (implicit AND, in the planner's
 * order), one fraction expression per aggregate (NULL for gpu_median), and
 * the aggregates' distinct FILTER expressions (each evaluated once per row
 * that passed the quals, for every aggregate that has it).
 */
#ifndef GS_BULK_SCAN_H
#define GS_BULK_SCAN_H

#include "postgres.h"
#include "nodes/extensible.h"

#define GS_BULK_SCAN_NAME	"gpuselect"

#define GS_BULK_COLUMN_GROUP	(-1)
#define GS_BULK_COLUMN_COUNT	(-2)
#define GS_BULK_COLUMN_FILTERED_COUNT(f)	(-3 - (f))
#define GS_BULK_COLUMN_FILTER_OF(role)	(-3 - (role))

#define GS_BULK_PARTIAL		0x01
#define GS_BULK_GROUPED		0x02

enum
{
	GS_BULK_PRIV_FLAGS = 0,
	GS_BULK_PRIV_AGGS,
	GS_BULK_PRIV_GROUP,
	GS_BULK_PRIV_MONO,
	GS_BULK_PRIV_COLUMNS,
	GS_BULK_PRIV_ORDER,
	GS_BULK_PRIV_EQOPS,
	GS_BULK_PRIV_COUNT
};

typedef enum GsBulkAggKind
{
	GS_BULK_MEDIAN = 0,			/* gpu_median(x) */
	GS_BULK_QUANTILE,			/* gpu_quantile(x, p) */
	GS_BULK_QUANTILES,			/* gpu_quantiles(x, p[]) */
	GS_BULK_PLANNER,			/* gs_planner_*(x, p): the rewrite's (planner.c) */
	GS_BULK_PLANNER_MULTI		/* gs_planner_*(x, p[]) */
} GsBulkAggKind;

extern const CustomScanMethods gs_bulk_scan_methods;

/* _PG_init: let parallel workers find the node's methods by name */
extern void gs_bulk_scan_register(void);

#endif							/* GS_BULK_SCAN_H */
