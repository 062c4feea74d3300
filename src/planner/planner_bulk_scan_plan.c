/*
 * planner_bulk_scan_plan.c — the bulk scan's plan: the CustomPath the
 * planner chose (planner_bulk_scan.c) made a CustomScan (PlanCustomPath),
 * with its custom_scan_tlist, custom_exprs and custom_private in the
 * layout scan/bulk_scan.h describes for the executor side.  Apart from
 * the paths because it runs once, for the chosen path only, and because
 * what goes where is setrefs.c's business (below), not the shape checks'
 * (planner_bulk_scan_shape.c).
 *
 * Expressions.  The quals and fractions go in custom_exprs, where setrefs.c
 * fixes them like any plan expression (parameters, function OIDs, plan
 * dependencies): it makes their Vars point into custom_scan_tlist, so the
 * Vars they read are added there as junk columns after the output ones,
 * and the scan fills just those for the quals (and an output column that
 * is a bare Var: GROUP BY a column).  A qual (or FILTER) must therefore not
 * contain a group expression that is not a bare Var, which setrefs would
 * turn into a reference to the output column.  The group expressions
 * themselves stay in custom_private (setrefs would turn them into that
 * reference too): they may hold no parameter, so nothing in them needs
 * fixing, and their Vars read the heap tuple whatever their varno.  They
 * go there in the order of their output columns; the path names the one
 * with the range and the sort keys by sortgroupref, which gs_bulk_plan
 * turns into positions in that list.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"

#include "planner/planner_bulk_scan.h"
#include "scan/bulk_scan.h"

/* custom_scan_tlist: the output columns, then the Vars the quals and FILTERs read */
static List *
gs_bulk_scan_tlist(List *tlist, List *quals, List *filters)
{
	List	   *scan_tlist = copyObject(tlist);
	List	   *vars = pull_var_clause((Node *) list_make2(quals, filters), 0);
	ListCell   *lc;

	foreach(lc, vars)
	{
		Var		   *var = (Var *) lfirst(lc);
		ListCell   *lt;
		bool		have = false;

		foreach(lt, scan_tlist)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, lt);

			if (tle->resjunk && equal(tle->expr, var))
				have = true;
		}
		if (!have)
			scan_tlist = lappend(scan_tlist,
								 makeTargetEntry((Expr *) copyObject(var),
												 list_length(scan_tlist) + 1, NULL, true));
	}
	return scan_tlist;
}

/*
 * An aggregate's FILTER as an index into *filters, the distinct ones (equal
 * FILTERs are evaluated once per row): -1 for none.
 */
static int
gs_bulk_filter_index(List **filters, Aggref *a)
{
	ListCell   *lc;
	int			i = 0;

	if (a->aggfilter == NULL)
		return -1;
	foreach(lc, *filters)
	{
		if (equal(lfirst(lc), a->aggfilter))
			return i;
		i++;
	}
	*filters = lappend(*filters, copyObject(a->aggfilter));
	return i;
}

/* the group column (output order) of a GROUP BY clause's sortgroupref */
static int
gs_bulk_group_column(List *refs, int ref)
{
	ListCell   *lc;

	foreach(lc, refs)
		if (lfirst_int(lc) == ref)
			return foreach_current_index(lc);
	elog(ERROR, "gpuselect: bulk scan GROUP BY reference %d not in its columns", ref);
	return -1;
}

/* custom_private's mono: the path's, its sortgroupref made a group column */
static List *
gs_bulk_plan_mono(List *path_mono, List *refs)
{
	int			attno = intVal(linitial(path_mono));

	return list_make3(makeInteger(attno), makeInteger(intVal(lsecond(path_mono))),
					  makeInteger(attno > 0 ? gs_bulk_group_column(refs, intVal(lthird(path_mono))) : -1));
}

/* custom_private's order: the path's, sortgrouprefs made group columns */
static List *
gs_bulk_plan_order(List *path_order, List *refs)
{
	List	   *order = NIL;
	ListCell   *lc;

	foreach(lc, path_order)
	{
		List	   *k = (List *) lfirst(lc);

		order = lappend(order, list_make4(makeInteger(gs_bulk_group_column(refs, intVal(linitial(k)))),
										  makeInteger(intVal(lsecond(k))),
										  makeInteger(intVal(lthird(k))),
										  makeInteger(intVal(lfourth(k)))));
	}
	return order;
}

/*
 * custom_private's eqops: each group column's GROUP BY equality operator,
 * by which the scan's groups compare where the type is not bitwise (the
 * executor's grouping compares by it, under the expression's collation)
 */
static List *
gs_bulk_plan_eqops(PlannerInfo *root, List *refs)
{
	List	   *eqops = NIL;
	ListCell   *lc;

	foreach(lc, refs)
	{
		SortGroupClause *sgc = get_sortgroupref_clause_noerr((Index) lfirst_int(lc),
															 GS_PROCESSED_GROUP_CLAUSE(root));

		if (sgc == NULL || !OidIsValid(sgc->eqop))
			elog(ERROR, "gpuselect: bulk scan GROUP BY reference %d without its clause", lfirst_int(lc));
		eqops = lappend(eqops, makeInteger((int) sgc->eqop));
	}
	return eqops;
}

Plan *
gs_bulk_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			 List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cs = makeNode(CustomScan);
	List	   *quals = extract_actual_clauses(clauses, false);
	List	   *aggs = NIL;
	List	   *fractions = NIL;
	List	   *filters = NIL;
	List	   *columns = NIL;
	List	   *group = NIL;
	List	   *refs = NIL;
	int			flags = intVal(linitial(best_path->custom_private));
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		GsBulkAggKind kind;
		AttrNumber	attno;
		Expr	   *fraction;
		bool		desc;

		if (IsA(tle->expr, Aggref) && gs_bulk_count_star((Aggref *) tle->expr))
			columns = lappend_int(columns, ((Aggref *) tle->expr)->aggfilter == NULL ?
								  GS_BULK_COLUMN_COUNT :
								  GS_BULK_COLUMN_FILTERED_COUNT(gs_bulk_filter_index(&filters, (Aggref *) tle->expr)));
		else if (IsA(tle->expr, Aggref))
		{
			if (!gs_bulk_agg_of((Aggref *) tle->expr, rel->relid, &kind, &attno, &fraction, &desc))
				elog(ERROR, "gpuselect: bulk scan planned over an aggregate it does not build");
			columns = lappend_int(columns, list_length(aggs));
			aggs = lappend(aggs, list_make4(makeInteger(kind), makeInteger(attno),
											makeInteger(desc ? 1 : 0),
											makeInteger(gs_bulk_filter_index(&filters, (Aggref *) tle->expr))));
			fractions = lappend(fractions, copyObject(fraction));
		}
		else
		{
			Node	   *g = (Node *) copyObject(tle->expr);

			/* the group expressions in the output columns' order */
			columns = lappend_int(columns, GS_BULK_COLUMN_GROUP);
			fix_opfuncids(g);
			group = lappend(group, g);
			refs = lappend_int(refs, (int) tle->ressortgroupref);
		}
	}
	cs->scan.plan.targetlist = tlist;
	cs->scan.plan.qual = NIL;
	cs->scan.scanrelid = rel->relid;
	cs->flags = best_path->flags;
	cs->custom_plans = NIL;
	cs->custom_scan_tlist = gs_bulk_scan_tlist(tlist, quals, filters);
	cs->custom_exprs = list_make3(quals, fractions, filters);
	cs->custom_private = list_make5(makeInteger(flags), aggs, group,
								   gs_bulk_plan_mono(lsecond(best_path->custom_private), refs),
								   columns);
	cs->custom_private = lappend(cs->custom_private,
								 gs_bulk_plan_order(lthird(best_path->custom_private), refs));
	cs->custom_private = lappend(cs->custom_private, gs_bulk_plan_eqops(root, refs));
	cs->custom_relids = NULL;
	cs->methods = &gs_bulk_scan_methods;
	return &cs->scan.plan;
}
