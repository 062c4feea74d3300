/*
 * planner.h — the planner rewrite: ordered-set percentiles planned as
 * gpuselect's plain (hashable, parallel) aggregates.  planner.c says what is
 * rewritten and why it is equivalent; planner_aggs.c holds the aggregates
 * the rewrite targets (gs_planner_* in the extension script).
 */
#ifndef GS_PLANNER_H
#define GS_PLANNER_H

#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/pathnodes.h"

/* chain gpuselect's planner_hook in front of any previous one (_PG_init) */
extern void gs_planner_install_hook(void);

/* is funcid a function of the gpuselect extension (planner.c)? */
extern bool gs_planner_is_gpuselect_func(Oid funcid);

/* a fraction computed once per query, not per row (planner_fraction.c) */
extern Node *gs_fraction_fold(Node *frac, ParamListInfo bound);
extern bool gs_fraction_once_per_query(Node *frac);
extern Node *gs_fraction_hoist(Query *q, Node *frac, ParamListInfo bound);
extern bool gs_fraction_cheap_per_row(Node *frac);

/* chain gpuselect's create_upper_paths_hook: group estimates of time
 * buckets (planner_groups.c, _PG_init) */
extern void gs_planner_groups_install_hook(void);

/* planner_merge.c: a rewritten scalar call with a constant fraction */
typedef struct GsMergeCandidate
{
	Aggref	   *aggref;
	float8		fraction;
} GsMergeCandidate;

extern void gs_merge_percentiles(Query *q, List *candidates);

/* the bulk scan's paths for a grouped relation (planner_bulk_scan.c),
 * added by planner_groups.c's hook through add (which charges a path
 * like the others when charge) */
extern void gs_bulk_scan_add_paths(PlannerInfo *root, RelOptInfo *input_rel,
								   RelOptInfo *grouped_rel,
								   GroupPathExtraData *extra, double groups, bool charge,
								   void (*add) (RelOptInfo *, Path *, double, bool));

/*
 * An ungrouped percentile query over one Citus hash-distributed table
 * replaced, in place, by the exchange (planner_citus.c); the table's oid
 * (for the plan's relationOids), or InvalidOid when the query stays.
 */
extern Oid	gs_citus_exchange_plan(Query *parse, ParamListInfo bound, Oid ext_nsp);

/* a target aggregate named gs_planner_builtin_*: exact whatever
 * gpuselect.approximate says (planner_aggs.c) */
#define GS_PLANNER_EXACT	0x01

#endif							/* GS_PLANNER_H */
