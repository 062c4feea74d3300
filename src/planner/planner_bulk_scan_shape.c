/*
 * planner_bulk_scan_shape.c — the bulk scan's shape checks: whether a
 * query level's aggregates, table, quals, FILTERs and GROUP BY are ones
 * the bulk scan ("Custom Scan (gpuselect)", scan/bulk_scan.c) can build.
 * Each is a yes/no question about the planner's own structures and builds
 * nothing; planner_bulk_scan.c asks them while it makes the paths, and
 * planner_bulk_scan_plan.c asks gs_bulk_agg_of again to fill the plan.
 * They are apart from both so that "when does it run" reads in one place
 * (docs/bulk-scan.md, "When it runs", is the user's version of this).
 *
 * When.  Every aggregate of the query level is gpuselect's gpu_median,
 * gpu_quantile or gpu_quantiles, or one of the rewrite's gs_planner_*
 * (planner_aggs.c: the built-ins and ordered-set forms it replaced), or
 * count(*) beside them, without DISTINCT or ORDER BY, over a
 * column of one of the eight key types of a heap table or materialized
 * view scanned alone (no join, no TABLESAMPLE) or every leaf of a
 * partitioned table or inheritance tree (an Append of one scan per leaf),
 * its fraction free of the row, its FILTER (if any) of the quals' kind
 * (gs_bulk_filter_ok).  GROUP BY is absent or expressions of that
 * table's columns: at most one a non-decreasing function of one column
 * (date_trunc, date_bin, epoch floors, integer division: gs_bulk_monotone's
 * list), which gets the cached range, the others evaluated per row -- of a
 * type that compares bitwise (integers, date, timestamp[tz], bool, oid)
 * under its default equality, or any other whose GROUP BY equality has a
 * hash function (text under any collation, numeric, ...: gs_bulk_group_ok).
 * The quals
 * are free of volatile functions and sub-plans.  Anything else keeps the
 * executor's plan, and a DEBUG1 line
 * says why (gpuselect.bulk_scan turns the scan off altogether).
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "base/types.h"
#include "planner/planner.h"
#include "planner/planner_bulk_scan.h"
#include "scan/bulk_groups.h"
#include "scan/bulk_scan.h"

/* why the scan was not planned: one DEBUG1 line */
bool
gs_bulk_decline(const char *why)
{
	elog(DEBUG1, "gpuselect: bulk scan not used: %s", why);
	return false;
}

/*
 * One of the aggregates the scan builds: which, over which column, with
 * which fraction expression (NULL for gpu_median).
 */
bool
gs_bulk_agg_of(Aggref *a, Index relid, GsBulkAggKind *kind, AttrNumber *attno, Expr **fraction,
			   bool *descending)
{
	const char *name;
	size_t		len;
	Var		   *var;
	GsTypeKind	tkind;
	uint8		key_bytes;
	int			nargs;

	if (!gs_planner_is_gpuselect_func(a->aggfnoid) || a->aggkind != AGGKIND_NORMAL ||
		a->aggstar || a->aggdistinct != NIL || a->aggorder != NIL || a->agglevelsup != 0)
		return false;
	name = get_func_name(a->aggfnoid);
	if (name == NULL)
		return false;
	len = strlen(name);
	*descending = len > 5 && strcmp(name + len - 5, "_desc") == 0;
	/*
	 * The rewrite's targets by their exact names: gs_planner_[builtin_]
	 * (disc|cont)[_desc] (planner_aggs.c); not Citus's typed twins or
	 * gathered forms (planner.c), whose transitions differ.
	 */
	if (strncmp(name, "gs_planner_", 11) == 0)
	{
		const char *k = name + 11;

		if (strncmp(k, "builtin_", 8) == 0)
			k += 8;
		if (strcmp(k, "disc") != 0 && strcmp(k, "cont") != 0 &&
			strcmp(k, "disc_desc") != 0 && strcmp(k, "cont_desc") != 0)
			return false;
		*kind = list_length(a->aggargtypes) == 2 && lsecond_oid(a->aggargtypes) == FLOAT8ARRAYOID ?
			GS_BULK_PLANNER_MULTI : GS_BULK_PLANNER, nargs = 2;
	}
	else if (strcmp(name, "gpu_median") == 0)
		*kind = GS_BULK_MEDIAN, nargs = 1;
	else if (strcmp(name, "gpu_quantile") == 0)
		*kind = GS_BULK_QUANTILE, nargs = 2;
	else if (strcmp(name, "gpu_quantiles") == 0)
		*kind = GS_BULK_QUANTILES, nargs = 2;
	else
		return false;
	if (list_length(a->args) != nargs)
		return false;
	var = (Var *) linitial_node(TargetEntry, a->args)->expr;
	if (!IsA(var, Var) || var->varno != relid || var->varattno < 1 || var->varlevelsup != 0 ||
		!gs_type_kind_from_oid(var->vartype, &tkind, &key_bytes, NULL) || tkind == GS_T_DATUM)
		return false;
	*attno = var->varattno;
	*fraction = NULL;
	if (nargs == 2)
	{
		Expr	   *f = lsecond_node(TargetEntry, a->args)->expr;

		if (contain_var_clause((Node *) f) || contain_volatile_functions((Node *) f) ||
			contain_subplans((Node *) f))
			return false;
		*fraction = f;
	}
	return true;
}

/* count(*) (FILTER or not), which the scan counts per group beside the others */
bool
gs_bulk_count_star(Aggref *a)
{
	return a->aggfnoid == F_COUNT_ && a->aggstar && a->aggdistinct == NIL &&
		a->aggorder == NIL && a->agglevelsup == 0;
}

static bool gs_bulk_contains_expr(Node *node, void *context);

/*
 * An aggregate's FILTER the scan evaluates per row after the quals, as it
 * evaluates them: by the executor's own expression code over the columns it
 * reads (custom_exprs: planner_bulk_scan_plan.c's header), so with the quals' limits --
 * no volatile function or sub-plan, and no GROUP BY expression other than
 * a bare column inside it (setrefs would make it the output column).
 */
bool
gs_bulk_filter_ok(Aggref *a, List *groups)
{
	ListCell   *lc;

	if (a->aggfilter == NULL)
		return true;
	if (contain_volatile_functions((Node *) a->aggfilter) || contain_subplans((Node *) a->aggfilter))
		return gs_bulk_decline("a FILTER with a volatile function or sub-plan");
	foreach(lc, groups)
		if (!IsA(lfirst(lc), Var) && gs_bulk_contains_expr((Node *) a->aggfilter, lfirst(lc)))
			return gs_bulk_decline("a FILTER computes the GROUP BY expression");
	return true;
}


/* a heap table or materialized view (a table alone, or a leaf of a tree) */
bool
gs_bulk_rel_ok(PlannerInfo *root, RelOptInfo *rel)
{
	RangeTblEntry *rte;
	Relation	r;
	bool		heap;

	if ((rel->reloptkind != RELOPT_BASEREL && rel->reloptkind != RELOPT_OTHER_MEMBER_REL) ||
		rel->rtekind != RTE_RELATION)
		return gs_bulk_decline("not a scan of one table");
	rte = planner_rt_fetch(rel->relid, root);
	if (rte->inh || rte->tablesample != NULL ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW))
		return gs_bulk_decline("a sample, or not a table");
	r = table_open(rte->relid, NoLock);
	heap = r->rd_rel->relam == HEAP_TABLE_AM_OID;
	table_close(r, NoLock);
	return heap ? true : gs_bulk_decline("not a heap table");
}

static bool
gs_bulk_has_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, gs_bulk_has_param, context);
}

static bool
gs_bulk_contains_expr(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (equal(node, context))
		return true;
	return expression_tree_walker(node, gs_bulk_contains_expr, context);
}

/*
 * The GROUP BY expressions (of the parent, for a tree), in its order, and
 * their clauses: NIL for none; false to decline.
 */
bool
gs_bulk_group_exprs(PlannerInfo *root, List *group_clause, List **groups, List **sgcs)
{
	ListCell   *lc;

	*groups = NIL;
	*sgcs = group_clause;
	foreach(lc, group_clause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Node	   *group = get_sortgroupclause_expr(sgc, root->parse->targetList);

		if (!contain_var_clause(group) || contain_volatile_functions(group) ||
			contain_subplans(group) || expression_returns_set(group) ||
			gs_bulk_has_param(group, NULL))
			return gs_bulk_decline("GROUP BY expression not computable per row alone");
		*groups = lappend(*groups, group);
	}
	return true;
}

/*
 * The group expressions over one table (translated to its columns): the
 * first that is non-decreasing in one column gets the cached range (its
 * values looked up with the type's default hash and equality); the scan
 * evaluates the others per row.  Those of a type whose equality is bitwise
 * (integers, date, ...) compare as Datums, so only under the type's default
 * equality; any other (text, varchar, numeric, a nondeterministic
 * collation) compares by its GROUP BY clause's equality operator under the
 * expression's collation and hashes by that operator's hash function, as
 * the executor's HashAggregate does, so only where it has one
 * (bulk_groups.c).  False to decline.
 */
bool
gs_bulk_group_ok(RelOptInfo *rel, List *exprs, List *sgcs, GsBulkMono *mono)
{
	ListCell   *le,
			   *ls,
			   *lc;

	memset(mono, 0, sizeof(*mono));
	forboth(le, exprs, ls, sgcs)
	{
		Node	   *expr = (Node *) lfirst(le);
		SortGroupClause *sgc = lfirst_node(SortGroupClause, ls);
		Oid			typid = exprType(expr);
		TypeCacheEntry *tc;
		AttrNumber	attno;
		int			zones = 0;
		RegProcedure lhash,
					rhash;

		if (mono->attno == 0 && gs_bulk_range_column(expr, rel->relid, &attno, &zones))
		{
			mono->attno = attno;
			mono->zones = zones;
			mono->ref = sgc->tleSortGroupRef;
		}
		if (mono->ref == sgc->tleSortGroupRef || gs_bulk_type_bitwise(typid))
		{
			/* bitwise Datums, or the range's probes: the type's default equality */
			tc = lookup_type_cache(typid, TYPECACHE_EQ_OPR | TYPECACHE_HASH_PROC);
			if (sgc->eqop != tc->eq_opr || !sgc->hashable || !OidIsValid(tc->hash_proc))
				return gs_bulk_decline("GROUP BY with another equality");
		}
		else if (!sgc->hashable || !get_op_hash_functions(sgc->eqop, &lhash, &rhash))
		{
			/* text, numeric, ...: the clause's equality and its hash function */
			return gs_bulk_decline("GROUP BY an equality without hash support");
		}
		foreach(lc, rel->baserestrictinfo)
			if (!IsA(expr, Var) && gs_bulk_contains_expr((Node *) lfirst_node(RestrictInfo, lc)->clause, expr))
				return gs_bulk_decline("a qual computes the GROUP BY expression");
	}
	return true;
}

/* the quals: evaluated per row by the executor's expression code (plan file's header) */
bool
gs_bulk_quals_ok(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		Node	   *clause = (Node *) lfirst_node(RestrictInfo, lc)->clause;

		if (contain_volatile_functions(clause) || contain_subplans(clause))
			return gs_bulk_decline("a volatile or sub-plan qual");
	}
	return true;
}
