/*
 * planner_bulk_scan.c — when the bulk scan ("Custom Scan (gpuselect)",
 * scan/bulk_scan.c) replaces the executor's aggregation of a table, and
 * the plan it makes.
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

#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "base/guc.h"
#include "base/types.h"
#include "planner/planner.h"
#include "scan/bulk_groups.h"
#include "scan/bulk_scan.h"

static Plan *gs_bulk_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						  List *tlist, List *clauses, List *custom_plans);

static const CustomPathMethods gs_bulk_path_methods = {
	.CustomName = GS_BULK_SCAN_NAME,
	.PlanCustomPath = gs_bulk_plan,
};

/* why the scan was not planned: one DEBUG1 line */
static bool
gs_bulk_decline(const char *why)
{
	elog(DEBUG1, "gpuselect: bulk scan not used: %s", why);
	return false;
}

/*
 * One of the aggregates the scan builds: which, over which column, with
 * which fraction expression (NULL for gpu_median).
 */
static bool
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
static bool
gs_bulk_count_star(Aggref *a)
{
	return a->aggfnoid == F_COUNT_ && a->aggstar && a->aggdistinct == NIL &&
		a->aggorder == NIL && a->agglevelsup == 0;
}

static bool gs_bulk_contains_expr(Node *node, void *context);

/*
 * An aggregate's FILTER the scan evaluates per row after the quals, as it
 * evaluates them: by the executor's own expression code over the columns it
 * reads (custom_exprs, planner file header), so with the quals' limits --
 * no volatile function or sub-plan, and no GROUP BY expression other than
 * a bare column inside it (setrefs would make it the output column).
 */
static bool
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

/* a heap table or materialized view, scanned alone */
/* a heap table or materialized view (a table alone, or a leaf of a tree) */
static bool
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

/* ---- GROUP BY expressions that are non-decreasing in one column ------- */

/* a non-NULL constant */
static Const *
gs_bulk_const(Node *n)
{
	return IsA(n, Const) && !((Const *) n)->constisnull ? (Const *) n : NULL;
}

/* a constant > 0 of an integer or numeric type */
static bool
gs_bulk_const_positive(Node *n)
{
	Const	   *c = gs_bulk_const(n);

	if (c == NULL)
		return false;
	switch (c->consttype)
	{
		case INT2OID:
			return DatumGetInt16(c->constvalue) > 0;
		case INT4OID:
			return DatumGetInt32(c->constvalue) > 0;
		case INT8OID:
			return DatumGetInt64(c->constvalue) > 0;
		case NUMERICOID:
			/* NaN compares false; a positive value stays positive in float8 */
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8, c->constvalue)) > 0;
		default:
			return false;
	}
}

/* the text constant 'epoch' (extract's field, any case) */
static bool
gs_bulk_const_epoch(Node *n)
{
	Const	   *c = gs_bulk_const(n);

	return c != NULL && c->consttype == TEXTOID &&
		pg_strcasecmp(TextDatumGetCString(c->constvalue), "epoch") == 0;
}

static bool gs_bulk_monotone(Node *e, Index relid, Var **var, int *zones);

/*
 * The argument of a step that reads the session time zone: the
 * timestamptz column itself.  bulk_groups.c keeps its probes inside the
 * column value's constant-offset interval, which bounds the step's input
 * only when the input is the column (a step below it, such as a date_bin
 * floor, would move the input outside that interval).
 */
static bool
gs_bulk_zone_var(Node *e, Index relid, Var **var)
{
	int			zones = 0;

	while (IsA(e, RelabelType))
		e = (Node *) ((RelabelType *) e)->arg;
	return IsA(e, Var) && ((Var *) e)->vartype == TIMESTAMPTZOID &&
		gs_bulk_monotone(e, relid, var, &zones);
}

/*
 * Is e a non-decreasing function of one column of the relation, made of
 * the shapes dashboards group by?  *var: the column; *zones |=
 * GS_BULK_ZONE_SESSION where a step reads the session time zone (then it
 * is non-decreasing only while the zone's offset stays: bulk_groups.c).
 * Each step is non-decreasing in its one non-constant argument:
 *   date_trunc(const, timestamp | timestamptz)   calendar truncation
 *   date_bin(const, timestamp[tz], const)        floor in UTC
 *   timestamp -> date, date -> timestamp, timestamptz -> date | timestamp
 * A step of the session time zone (date_trunc of a timestamptz, its casts
 * to date and timestamp) must read the timestamptz column directly
 * (gs_bulk_zone_var); the casts the other way (date or timestamp to
 * timestamptz) are not taken: a local time in a spring-forward gap maps
 * past the gap's end, so they are not non-decreasing.
 *   extract(epoch from timestamp[tz])            the instant as a number
 *   floor(numeric), numeric / const > 0, numeric * const > 0 (either
 *   side), integer -> numeric, numeric -> int8 (rounding)
 *   int2 / int4 / int8 divided by a constant > 0 (truncation toward 0)
 * The column is an integer, date, timestamp or timestamptz: a domain of
 * integers, where bulk_groups.c probes.  Every step is strict, so a NULL
 * column gives NULL (no range is needed for it).
 */
static bool
gs_bulk_monotone(Node *e, Index relid, Var **var, int *zones)
{
	List	   *args;
	Oid			fn;

	if (IsA(e, Var))
	{
		Var		   *v = (Var *) e;

		if (v->varno != relid || v->varattno < 1 || v->varlevelsup != 0 ||
			(v->vartype != INT2OID && v->vartype != INT4OID && v->vartype != INT8OID &&
			 v->vartype != DATEOID && v->vartype != TIMESTAMPOID && v->vartype != TIMESTAMPTZOID))
			return false;
		*var = v;
		return true;
	}
	if (IsA(e, RelabelType))
		return gs_bulk_monotone((Node *) ((RelabelType *) e)->arg, relid, var, zones);
	if (IsA(e, FuncExpr))
	{
		fn = ((FuncExpr *) e)->funcid;
		args = ((FuncExpr *) e)->args;
	}
	else if (IsA(e, OpExpr))
	{
		fn = get_opcode(((OpExpr *) e)->opno);
		args = ((OpExpr *) e)->args;
	}
	else
		return false;

	switch (fn)
	{
		case F_DATE_TRUNC_TEXT_TIMESTAMPTZ:
			*zones |= GS_BULK_ZONE_SESSION;
			return list_length(args) == 2 && gs_bulk_const(linitial(args)) != NULL &&
				gs_bulk_zone_var(lsecond(args), relid, var);
		case F_DATE_TRUNC_TEXT_TIMESTAMP:
			return list_length(args) == 2 && gs_bulk_const(linitial(args)) != NULL &&
				gs_bulk_monotone(lsecond(args), relid, var, zones);
		case F_DATE_BIN_INTERVAL_TIMESTAMP_TIMESTAMP:
		case F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ:
			return list_length(args) == 3 && gs_bulk_const(linitial(args)) != NULL &&
				gs_bulk_const(lthird(args)) != NULL &&
				gs_bulk_monotone(lsecond(args), relid, var, zones);
		case F_DATE_TIMESTAMPTZ:	/* timestamptz -> date */
		case F_TIMESTAMP_TIMESTAMPTZ:	/* timestamptz -> timestamp */
			*zones |= GS_BULK_ZONE_SESSION;
			return list_length(args) == 1 && gs_bulk_zone_var(linitial(args), relid, var);
		case F_DATE_TIMESTAMP:	/* timestamp -> date */
		case F_TIMESTAMP_DATE:	/* date -> timestamp */
		case F_FLOOR_NUMERIC:
		case F_INT2_NUMERIC:
		case F_INT4_NUMERIC:
		case F_INT8_NUMERIC:
		case F_NUMERIC_INT8:
			return list_length(args) == 1 && gs_bulk_monotone(linitial(args), relid, var, zones);
		case F_EXTRACT_TEXT_TIMESTAMP:
		case F_EXTRACT_TEXT_TIMESTAMPTZ:
			return list_length(args) == 2 && gs_bulk_const_epoch(linitial(args)) &&
				gs_bulk_monotone(lsecond(args), relid, var, zones);
		case F_NUMERIC_DIV:
		case F_INT2DIV:
		case F_INT4DIV:
		case F_INT8DIV:
			return list_length(args) == 2 && gs_bulk_const_positive(lsecond(args)) &&
				gs_bulk_monotone(linitial(args), relid, var, zones);
		case F_NUMERIC_MUL:
			if (list_length(args) != 2)
				return false;
			if (gs_bulk_const_positive(lsecond(args)))
				return gs_bulk_monotone(linitial(args), relid, var, zones);
			return gs_bulk_const_positive(linitial(args)) &&
				gs_bulk_monotone(lsecond(args), relid, var, zones);
		default:
			return false;
	}
}

/*
 * The GROUP BY expressions (of the parent, for a tree), in its order, and
 * their clauses: NIL for none; false to decline.
 */
static bool
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
static bool
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
		Var		   *var = NULL;
		int			zones = 0;
		RegProcedure lhash,
					rhash;

		if (mono->attno == 0 && !IsA(expr, Var) && gs_bulk_monotone(expr, rel->relid, &var, &zones))
		{
			mono->attno = var->varattno;
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

static bool
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

/* ---- the plan ------------------------------------------------------- */

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

static Plan *
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
