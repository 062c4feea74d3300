/*
 * planner_bulk_scan.c — the bulk scan's paths: the bulk scan ("Custom
 * Scan (gpuselect)", scan/bulk_scan.c) offered to the planner in place of
 * the executor's scan and aggregation of a table, and its cost.  Its
 * neighbours: planner_bulk_scan_shape.c says when the scan can take a
 * query level (its header lists the shapes), planner_bulk_scan_plan.c
 * makes the chosen path a plan (its header: what goes in custom_exprs and
 * custom_private); planner_bulk_scan.h is what the three share.
 *
 * The plan.  gpuselect's plain aggregates have combine, serialize and
 * deserialize functions, so PostgreSQL can already finish an aggregation
 * from partial states (Finalize Aggregate).  The bulk scan produces those
 * partial states itself, one row per group, and the planner's own Finalize
 * Aggregate does the rest -- combining, HAVING, the target list, the final
 * functions, a parallel plan's Gather -- exactly as for a Partial
 * Aggregate.  Added from create_upper_paths_hook (planner_groups.c calls
 * this file) as two more paths of the grouped relation, where the
 * planner's costs choose:
 *     Finalize [Hash]Aggregate -> Custom Scan (gpuselect)
 *     Finalize [Hash]Aggregate -> Gather -> Custom Scan (gpuselect), parallel
 * (PostgreSQL does not call the hook for the partially grouped relation,
 * so both are built here.)
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"

#include "base/guc.h"
#include "planner/planner.h"
#include "planner/planner_bulk_scan.h"
#include "scan/bulk_scan.h"

static const CustomPathMethods gs_bulk_path_methods = {
	.CustomName = GS_BULK_SCAN_NAME,
	.PlanCustomPath = gs_bulk_plan,
};

/*
 * The partial grouping target: the group expression (with its sortgroupref)
 * and every aggregate marked as a partial one, as the planner's own
 * make_partial_grouping_target builds it (static there).  NULL when a Var
 * outside an aggregate is not the group expression.
 */
static PathTarget *
gs_bulk_partial_target(PlannerInfo *root, PathTarget *final, Node *having, List *group_clause)
{
	PathTarget *t = create_empty_pathtarget();
	List	   *rest = NIL;
	List	   *items;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, final->exprs)
	{
		Expr	   *e = (Expr *) lfirst(lc);
		Index		ref = get_pathtarget_sortgroupref(final, i);

		if (ref != 0 && get_sortgroupref_clause_noerr(ref, group_clause) != NULL)
			add_column_to_pathtarget(t, e, ref);
		else
			rest = lappend(rest, e);
		i++;
	}
	if (having != NULL)
		rest = lappend(rest, having);
	items = pull_var_clause((Node *) rest, PVC_INCLUDE_AGGREGATES |
							PVC_RECURSE_WINDOWFUNCS | PVC_INCLUDE_PLACEHOLDERS);
	/* a Var outside the aggregates must be a GROUP BY column (HAVING g > 1) */
	foreach(lc, items)
		if (!IsA(lfirst(lc), Aggref) && !list_member(t->exprs, lfirst(lc)))
			return NULL;
	add_new_columns_to_pathtarget(t, items);
	foreach(lc, t->exprs)
	{
		if (IsA(lfirst(lc), Aggref))
		{
			Aggref	   *partial = copyObject((Aggref *) lfirst(lc));

			mark_partial_aggref(partial, AGGSPLIT_INITIAL_SERIAL);
			lfirst(lc) = partial;
		}
	}
	return set_pathtarget_cost_width(root, t);
}


/*
 * The tables a scan of rel reads: rel itself, or the leaves of the
 * partitioned table or inheritance tree it is the parent of (partitions
 * pruned at plan time left out; a parent's own rows are a leaf of it).
 */
static void
gs_bulk_leaves(PlannerInfo *root, RelOptInfo *rel, List **leaves)
{
	ListCell   *lc;

	if (!planner_rt_fetch(rel->relid, root)->inh)
	{
		*leaves = lappend(*leaves, rel);
		return;
	}
	foreach(lc, root->append_rel_list)
	{
		AppendRelInfo *ai = lfirst_node(AppendRelInfo, lc);
		RelOptInfo *child;

		if (ai->parent_relid != rel->relid)
			continue;
		child = root->simple_rel_array[ai->child_relid];
		if (child != NULL && !IS_DUMMY_REL(child))
			gs_bulk_leaves(root, child, leaves);
	}
}

/*
 * The scan's cost: the pages a SeqScan reads, a quarter of a SeqScan's
 * per-tuple CPU (no slot, no projection), the quals, and a tenth of an
 * operator per key (an append, no function call); in a parallel plan the
 * CPU part is shared as cost_seqscan shares it.
 */
static void
gs_bulk_cost(RelOptInfo *rel, CustomPath *cp, int naggs, double groups, int workers)
{
	Cost		cpu = rel->tuples * (0.25 * cpu_tuple_cost + rel->baserestrictcost.per_tuple) +
		rel->rows * naggs * 0.1 * cpu_operator_cost;

	if (workers > 0)
	{
		double		divisor = workers;

		if (parallel_leader_participation && 1.0 - 0.3 * workers > 0)
			divisor += 1.0 - 0.3 * workers;
		cpu /= divisor;
	}
	cp->path.rows = groups;
	cp->path.startup_cost = rel->baserestrictcost.startup + seq_page_cost * rel->pages + cpu;
	cp->path.total_cost = cp->path.startup_cost + groups * cpu_tuple_cost;
}

/* the groups' order: what a scan promises when its pathkeys are set */
typedef struct GsBulkOrder
{
	List	   *pathkeys;		/* NIL: none */
	List	   *order;			/* per GROUP BY expression: sortgroupref, sortop,
								 * collation, nulls_first (gs_bulk_plan makes
								 * custom_private's, bulk_scan.h) */
} GsBulkOrder;

static CustomPath *
gs_bulk_path(RelOptInfo *rel, PathTarget *target, int naggs, double groups, int workers,
			 bool grouped, const GsBulkMono *mono, const GsBulkOrder *order)
{
	CustomPath *cp = makeNode(CustomPath);

	cp->path.pathtype = T_CustomScan;
	cp->path.parent = rel;
	cp->path.pathtarget = target;
	cp->path.param_info = NULL;
	cp->path.parallel_aware = workers > 0;
	/* serially, states travel by reference: never in a worker */
	cp->path.parallel_safe = workers > 0;
	cp->path.parallel_workers = workers;
	cp->path.pathkeys = order->pathkeys;
	cp->flags = 0;
	cp->custom_private = list_make3(makeInteger((workers > 0 ? GS_BULK_PARTIAL : 0) |
												(grouped ? GS_BULK_GROUPED : 0)),
									list_make3(makeInteger(mono->attno), makeInteger(mono->zones),
											   makeInteger((int) mono->ref)),
									order->order);
	cp->methods = &gs_bulk_path_methods;
	gs_bulk_cost(rel, cp, naggs, groups, workers);
	return cp;
}

/*
 * The Finalize Aggregate over the scan (serial) or the Gather of its
 * partial states: hashed, or sorted over groups in order (in->pathkeys,
 * gs_bulk_sorted_final says when).
 */
static void
gs_bulk_add_final(PlannerInfo *root, RelOptInfo *grouped_rel, Path *in, GroupPathExtraData *extra,
				  List *group_clause, double groups, bool charge,
				  void (*add) (RelOptInfo *, Path *, double, bool), double input_rows)
{
	AggClauseCosts costs;
	AggStrategy strategy = group_clause == NIL ? AGG_PLAIN :
		in->pathkeys != NIL ? AGG_SORTED : AGG_HASHED;

	memset(&costs, 0, sizeof(costs));
	get_agg_clause_costs(root, AGGSPLIT_FINAL_DESERIAL, &costs);
	/* serially the states stay in the scan's memory, not the hash table's */
	if (!IsA(in, GatherPath))
		costs.transitionSpace = 0;
	add(grouped_rel, (Path *)
		create_agg_path(root, grouped_rel, in, grouped_rel->reltarget,
						strategy, AGGSPLIT_FINAL_DESERIAL,
						group_clause, (List *) extra->havingQual, &costs, groups),
		input_rows, charge);
}

/* an expression of the top table, for one of its leaves */
static Node *
gs_bulk_for_leaf(PlannerInfo *root, Node *node, RelOptInfo *leaf, RelOptInfo *top)
{
	return leaf == top ? node : GS_ADJUST_APPENDREL_MULTILEVEL(root, node, leaf, top);
}

/*
 * The scan of one table (a leaf of top, or top itself): NULL when the scan
 * cannot take it.  workers > 0: the parallel-aware one.
 */
static Path *
gs_bulk_leaf_path(PlannerInfo *root, RelOptInfo *leaf, RelOptInfo *top, PathTarget *top_target,
				  List *top_groups, List *sgcs, double groups, int workers,
				  const GsBulkOrder *order)
{
	PathTarget *target = copy_pathtarget(top_target);
	List	   *group = (List *) gs_bulk_for_leaf(root, (Node *) top_groups, leaf, top);
	GsBulkMono	mono = {0, 0, 0};
	int			naggs = 0;
	ListCell   *lc;

	if (!gs_bulk_rel_ok(root, leaf) || !gs_bulk_quals_ok(leaf) ||
		(group != NIL && !gs_bulk_group_ok(leaf, group, sgcs, &mono)))
		return NULL;
	target->exprs = (List *) gs_bulk_for_leaf(root, (Node *) top_target->exprs, leaf, top);
	foreach(lc, target->exprs)
	{
		GsBulkAggKind kind;
		AttrNumber	attno;
		Expr	   *fraction;
		bool		desc;

		if (!IsA(lfirst(lc), Aggref))
			continue;
		if (!gs_bulk_filter_ok((Aggref *) lfirst(lc), group))
			return NULL;
		if (gs_bulk_count_star((Aggref *) lfirst(lc)))
			continue;
		if (!gs_bulk_agg_of((Aggref *) lfirst(lc), leaf->relid, &kind, &attno, &fraction, &desc))
		{
			gs_bulk_decline("an aggregate the scan does not build");
			return NULL;
		}
		naggs++;
	}
	if (naggs == 0)
		return NULL;
	return (Path *) gs_bulk_path(leaf, target, naggs, groups, workers, group != NIL, &mono, order);
}

/*
 * The GROUP BY's order, every expression by its clause's sortop, collation
 * and NULLs first or last, as the planner's group pathkeys say: only where
 * there is a pathkey per expression (none was redundant, e.g. equal to a
 * constant in WHERE), so that the k-th pathkey is the k-th clause's order.
 * Otherwise none (hashed).
 */
static void
gs_bulk_order(PlannerInfo *root, List *group, List *sgcs, GsBulkOrder *order)
{
	List	   *pathkeys = GS_GROUPBY_PATHKEYS(root);
	ListCell   *le,
			   *ls;

	if (pathkeys == NIL || list_length(pathkeys) != list_length(sgcs))
		return;
	forboth(le, group, ls, sgcs)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, ls);

		if (!OidIsValid(sgc->sortop))
		{
			order->order = NIL;
			return;
		}
		order->order = lappend(order->order,
							   list_make4(makeInteger((int) sgc->tleSortGroupRef),
										  makeInteger((int) sgc->sortop),
										  makeInteger((int) exprCollation((Node *) lfirst(le))),
										  makeInteger(sgc->nulls_first ? 1 : 0)));
	}
	order->pathkeys = pathkeys;
}

/*
 * The scans of every leaf, under an Append for a tree (the leaves' partial
 * states of one group meet in the Finalize Aggregate, which combines
 * them): NULL when the scan cannot take one of them.
 */
static Path *
gs_bulk_scans(PlannerInfo *root, RelOptInfo *top, RelOptInfo *grouped_rel, PathTarget *target,
			  List *group, List *sgcs, double groups, int workers, bool ordered)
{
	List	   *leaves = NIL;
	List	   *paths = NIL;
	AppendPath *append;
	ListCell   *lc;
	bool		tree = planner_rt_fetch(top->relid, root)->inh;
	GsBulkOrder order = {NIL, NIL};

	gs_bulk_leaves(root, top, &leaves);
	if (leaves == NIL)
		return NULL;
	/* one table's groups come out in the GROUP BY's order (an Append's do not) */
	if (ordered && group != NIL && !tree)
		gs_bulk_order(root, group, sgcs, &order);
	foreach(lc, leaves)
	{
		Path	   *p = gs_bulk_leaf_path(root, (RelOptInfo *) lfirst(lc), top, target, group, sgcs,
										  groups, workers, &order);

		if (p == NULL)
			return NULL;
		paths = lappend(paths, p);
	}
	if (!tree)
		return (Path *) linitial(paths);
	if (workers > 0)
		append = create_append_path(root, grouped_rel, NIL, paths, NIL, NULL, workers, true, -1);
	else
		append = create_append_path(root, grouped_rel, paths, NIL, NIL, NULL, 0, false, -1);
	/* it outputs the partial states, not the grouped relation's row */
	append->path.pathtarget = target;
	return (Path *) append;
}

/*
 * A parallel plan's Finalize Aggregate: sorted, over a Gather Merge of
 * groups the scans emit in order, when the groups' deserialized partial
 * states would not fit hash_mem.  A hashed one holds every group's states
 * at once and past hash_mem spills them to disk and reads them again (a
 * dashboard's 720 hours of keys: twice the time); a sorted one holds one
 * group's at a time.  Where they fit, hashed: its groups are selected all
 * at once on helper threads (final_batch.c).  Serially the states reach the
 * Finalize Aggregate by reference, outside its memory: always hashed.
 * The estimate: a key of 8 bytes per row and aggregate.
 */
static bool
gs_bulk_sorted_final(RelOptInfo *input_rel, PathTarget *target)
{
	double		states = 0;
	ListCell   *lc;

	foreach(lc, target->exprs)
		if (IsA(lfirst(lc), Aggref) && !gs_bulk_count_star((Aggref *) lfirst(lc)))
			states += 1;
	return input_rel->rows * states * 8.0 > (double) get_hash_memory_limit();
}

void
gs_bulk_scan_add_paths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *grouped_rel,
					   GroupPathExtraData *extra, double groups, bool charge,
					   void (*add) (RelOptInfo *, Path *, double, bool))
{
	List	   *group_clause = GS_PROCESSED_GROUP_CLAUSE(root);
	PathTarget *target;
	List	   *group;
	List	   *sgcs;
	Path	   *scan;

	if (!gs_guc_bulk_scan || root->parse->groupingSets != NIL || root->parse->hasTargetSRFs ||
		IS_OTHER_REL(grouped_rel) || extra->patype != PARTITIONWISE_AGGREGATE_NONE ||
		(extra->flags & GROUPING_CAN_PARTIAL_AGG) == 0 || input_rel->cheapest_total_path == NULL)
		return;
	if (input_rel->reloptkind != RELOPT_BASEREL || input_rel->rtekind != RTE_RELATION)
	{
		gs_bulk_decline("not a scan of one table");
		return;
	}
	if (!gs_bulk_group_exprs(root, group_clause, &group, &sgcs))
		return;
	target = gs_bulk_partial_target(root, grouped_rel->reltarget, extra->havingQual, group_clause);
	if (target == NULL)
	{
		gs_bulk_decline("a column outside the aggregates and GROUP BY");
		return;
	}
	if (group == NIL)
		groups = 1;

	scan = gs_bulk_scans(root, input_rel, grouped_rel, target, group, sgcs, groups, 0, false);
	if (scan == NULL)
		return;
	gs_bulk_add_final(root, grouped_rel, scan, extra, group_clause, groups, charge, add,
					  input_rel->rows);
	if (grouped_rel->consider_parallel && input_rel->consider_parallel &&
		input_rel->partial_pathlist != NIL)
	{
		int			workers = ((Path *) linitial(input_rel->partial_pathlist))->parallel_workers;
		double		gathered;

		if (workers < 1)
			return;
		scan = gs_bulk_scans(root, input_rel, grouped_rel, target, group, sgcs, groups, workers,
							 gs_bulk_sorted_final(input_rel, target));
		if (scan == NULL)
			return;
		gathered = groups * (workers + (parallel_leader_participation ? 1 : 0));
		gs_bulk_add_final(root, grouped_rel, scan->pathkeys != NIL ?
						  (Path *) create_gather_merge_path(root, grouped_rel, scan, target,
															scan->pathkeys, NULL, &gathered) :
						  (Path *) create_gather_path(root, grouped_rel, scan, target, NULL, &gathered),
						  extra, group_clause, groups, charge, add, input_rel->rows);
	}
}
