/*
 * planner_citus.c — an ungrouped percentile query over one Citus distributed
 * table planned as the exchange (aggs/citus_exchange.c; docs/citus.md).
 *
 * After the rewrite (planner.c: typed twins, built-ins replaced), a query
 *
 *   SELECT <expressions of gpuselect aggregates> FROM t [WHERE quals]
 *
 * over one hash-distributed table becomes a query without FROM whose
 * aggregates are calls gs_citus_exchange(t, 'x', 'quals', 'disc', '{p}',
 * NULL::result): x and the quals deparsed to SQL (under settings whose
 * literals read back exactly), the fractions constants.  At run time that
 * function runs the rounds as distributed queries of their own, so the
 * coordinator receives counts and the values near the wanted ranks instead
 * of every value.  The table's oid goes into the plan's relationOids
 * (gs_planner), so that DDL on it invalidates a cached plan as before.
 *
 * Taken only when every one of these holds (else the query keeps the
 * partial aggregates, unchanged):
 *   - gpuselect.citus_exchange is on;
 *   - a plain SELECT: no GROUP BY, HAVING, DISTINCT, ORDER BY, LIMIT,
 *     window functions, sub-selects, CTEs, set operations, row locks or
 *     row-level security; one relation in FROM, hash-distributed
 *     (pg_dist_partition.partmethod 'h'), no TABLESAMPLE, and the WHERE
 *     does not pin its distribution column ("id = 5", "id IN (...)":
 *     Citus then runs the whole query on a shard or a few, and only the
 *     answer travels);
 *   - the target list's columns appear only inside the aggregates, and
 *     every aggregate is gpu_median, a typed twin of gpu_quantile(s) or a
 *     rewrite target (gs_planner_[builtin_]disc/cont[_desc][_typed]) over a
 *     type with a twin, without FILTER, DISTINCT or ORDER BY, whose
 *     fraction is a constant (a custom plan's parameters folded), a scalar
 *     one in [0, 1];
 *   - gpuselect.approximate is off, unless every aggregate is a built-in's
 *     (those are exact anyway): the exchange is always exact;
 *   - the value and the quals are not volatile and read no parameters.
 * Several aggregates run one exchange each.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "nodes/readfuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"
#include "optimizer/tlist.h"

#include "base/guc.h"
#include "aggs/ranks.h"
#include "aggs/citus_exchange.h"
#include "planner/planner.h"

typedef struct GsExchCtx
{
	Oid			relid;
	List	   *dpcontext;		/* deparse context for the relation */
	Oid			func;			/* gs_citus_exchange */
	ParamListInfo bound;
	bool		ok;
	bool		all_builtin;	/* every aggregate a built-in's (exact anyway) */
	int			naggs;
	/* GROUP BY one expression: its rows come from gs_citus_exchange_grouped */
	Node	   *gexpr;			/* the group expression, or NULL (ungrouped) */
	FuncExpr   *gcall;			/* grouped: the one aggregate's exchange call */
	char	   *gagg;			/* grouped: that aggregate as SQL (today's plan) */
} GsExchCtx;

/*
 * Is relid a hash-distributed Citus table (pg_dist_partition, partmethod
 * 'h')?  *distcol: its distribution column (partkey, a Var as
 * nodeToString wrote it), or InvalidAttrNumber.
 */
static bool
gs_citus_hash_distributed(Oid relid, AttrNumber *distcol)
{
	Oid			dist = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	AttrNumber	att_rel;
	AttrNumber	att_method;
	AttrNumber	att_key;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	*distcol = InvalidAttrNumber;
	if (!OidIsValid(dist))
		return false;
	att_rel = get_attnum(dist, "logicalrelid");
	att_method = get_attnum(dist, "partmethod");
	att_key = get_attnum(dist, "partkey");
	if (att_rel == InvalidAttrNumber || att_method == InvalidAttrNumber)
		return false;
	rel = table_open(dist, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (!found && (tup = systable_getnext(scan)) != NULL)
	{
		bool		n1;
		bool		n2;
		bool		n3 = true;
		Datum		r = heap_getattr(tup, att_rel, RelationGetDescr(rel), &n1);
		Datum		m = heap_getattr(tup, att_method, RelationGetDescr(rel), &n2);
		Datum		k = 0;

		if (att_key != InvalidAttrNumber)
			k = heap_getattr(tup, att_key, RelationGetDescr(rel), &n3);
		found = !n1 && !n2 && DatumGetObjectId(r) == relid && DatumGetChar(m) == 'h';
		if (found && !n3)
		{
			Node	   *key = stringToNode(TextDatumGetCString(k));

			if (key != NULL && IsA(key, Var))
				*distcol = ((Var *) key)->varattno;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* a column of the distribution column, under binary-compatible casts? */
static bool
gs_is_distcol(Node *n, AttrNumber distcol)
{
	while (n != NULL && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	return n != NULL && IsA(n, Var) && ((Var *) n)->varattno == distcol;
}

/*
 * Do the quals pin the distribution column to a value or a list (a
 * top-level "distcol = c" or "distcol IN (...)")?  Then Citus sends the
 * whole query to one shard or a few, and only the answer travels: no
 * exchange.
 */
static bool
gs_quals_pin_distcol(Node *quals, AttrNumber distcol)
{
	List	   *conj;
	ListCell   *lc;

	if (quals == NULL || distcol == InvalidAttrNumber)
		return false;
	conj = make_ands_implicit((Expr *) quals);
	foreach(lc, conj)
	{
		Node	   *c = (Node *) lfirst(lc);
		List	   *args = NIL;
		Oid			opno = InvalidOid;
		char	   *name;

		if (IsA(c, OpExpr))
		{
			opno = ((OpExpr *) c)->opno;
			args = ((OpExpr *) c)->args;
		}
		else if (IsA(c, ScalarArrayOpExpr) && ((ScalarArrayOpExpr *) c)->useOr)
		{
			opno = ((ScalarArrayOpExpr *) c)->opno;
			args = ((ScalarArrayOpExpr *) c)->args;
		}
		if (list_length(args) != 2 || (name = get_opname(opno)) == NULL || strcmp(name, "=") != 0)
			continue;
		if ((gs_is_distcol(linitial(args), distcol) && !contain_var_clause(lsecond(args))) ||
			(gs_is_distcol(lsecond(args), distcol) && !contain_var_clause(linitial(args))))
			return true;
	}
	return false;
}

/* an expression the rounds may compute on the shards: the relation's
 * columns, no parameters, sub-selects or aggregates, nothing volatile */
static bool
gs_exch_bad_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varno != 1 || ((Var *) node)->varlevelsup != 0;
	if (IsA(node, Param) || IsA(node, SubLink) || IsA(node, Aggref) ||
		IsA(node, WindowFunc) || IsA(node, GroupingFunc) || IsA(node, PlaceHolderVar) ||
		IsA(node, Query))
		return true;
	return expression_tree_walker(node, gs_exch_bad_walker, context);
}

static bool
gs_exch_shippable(Node *expr)
{
	return !gs_exch_bad_walker(expr, NULL) && !contain_volatile_functions(expr) &&
		!expression_returns_set(expr);
}

/* the types with typed twins; cont: float8 and interval only */
static bool
gs_exch_type_ok(Oid t, bool cont)
{
	if (cont)
		return t == FLOAT8OID || t == INTERVALOID;
	switch (t)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case NUMERICOID:
		case INTERVALOID:
			return true;
		default:
			return false;
	}
}

/*
 * What an Aggref is for the exchange: cont / desc / builtin from its name
 * (gpu_median; gs_planner_quantile(s)_typed; gs_planner_[builtin_]
 * disc|cont[_desc][_typed]); false for anything else.
 */
static bool
gs_exch_identify(Aggref *a, bool *cont, bool *desc, bool *builtin, bool *median)
{
	char	   *name;
	const char *p;

	*cont = *desc = *builtin = *median = false;
	if (a->aggfnoid < FirstNormalObjectId || (name = get_func_name(a->aggfnoid)) == NULL)
		return false;
	if (strcmp(name, "gpu_median") == 0)
		*cont = *median = true;
	else if (strcmp(name, "gs_planner_quantile_typed") == 0 ||
			 strcmp(name, "gs_planner_quantiles_typed") == 0)
		;
	else if (strncmp(name, "gs_planner_", 11) == 0)
	{
		p = name + 11;
		if (strncmp(p, "builtin_", 8) == 0)
		{
			*builtin = true;
			p += 8;
		}
		if (strncmp(p, "disc", 4) == 0)
			;
		else if (strncmp(p, "cont", 4) == 0)
			*cont = true;
		else
			return false;
		p += 4;
		if (strncmp(p, "_desc", 5) == 0)
		{
			*desc = true;
			p += 5;
		}
		/* the interval overloads of cont have no _typed suffix */
		if (strcmp(p, "_typed") != 0 && !(*cont && *p == '\0'))
			return false;
	}
	else
		return false;
	return gs_planner_is_gpuselect_func(a->aggfnoid);
}

/* the call that replaces Aggref a, or NULL (ctx->ok false) */
static Node *
gs_exch_call(Aggref *a, GsExchCtx *ctx)
{
	bool		cont;
	bool		desc;
	bool		builtin;
	bool		median;
	Node	   *x;
	Const	   *frac;
	Datum		fracs;
	char	   *value;
	List	   *args;

	if (a->agglevelsup != 0 || a->aggfilter != NULL || a->aggdistinct != NIL ||
		a->aggorder != NIL || a->aggkind != AGGKIND_NORMAL || a->aggstar ||
		!gs_exch_identify(a, &cont, &desc, &builtin, &median) ||
		list_length(a->args) != (median ? 1 : 2))
		return NULL;
	x = (Node *) linitial_node(TargetEntry, a->args)->expr;
	if (!gs_exch_type_ok(exprType(x), cont) || !gs_exch_shippable(x))
		return NULL;
	/* grouped: one aggregate, over a type with a key (not numeric, interval) */
	if (ctx->gexpr != NULL &&
		(ctx->naggs > 0 || exprType(x) == NUMERICOID || exprType(x) == INTERVALOID))
		return NULL;
	if (median)
	{
		float8		half = 0.5;
		Datum		d = Float8GetDatum(half);

		fracs = PointerGetDatum(construct_array(&d, 1, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	}
	else
	{
		Node	   *f = gs_fraction_fold((Node *) lsecond_node(TargetEntry, a->args)->expr, ctx->bound);

		f = eval_const_expressions(NULL, f);
		if (!IsA(f, Const) || ((Const *) f)->constisnull)
			return NULL;
		frac = (Const *) f;
		if (frac->consttype == FLOAT8OID)
		{
			Datum		d = frac->constvalue;

			if (!gs_fraction_in_range(DatumGetFloat8(d)))
				return NULL;	/* its ERROR comes from the partial aggregates */
			fracs = PointerGetDatum(construct_array(&d, 1, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		}
		else if (frac->consttype == FLOAT8ARRAYOID)
			fracs = frac->constvalue;
		else
			return NULL;
	}
	ctx->all_builtin &= builtin;
	ctx->naggs++;

	value = deparse_expression(x, ctx->dpcontext, false, true);
	args = list_make4(makeConst(REGCLASSOID, -1, InvalidOid, sizeof(Oid),
								ObjectIdGetDatum(ctx->relid), false, true),
					  makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
								CStringGetTextDatum(value), false, false),
					  NULL,		/* the quals: filled in by the caller */
					  makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
								CStringGetTextDatum(cont ? (desc ? "cont desc" : "cont")
													: (desc ? "disc desc" : "disc")),
								false, false));
	args = lappend(args, makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, fracs, false, false));
	args = lappend(args, makeNullConst(a->aggtype, -1, InvalidOid));
	return (Node *) makeFuncExpr(ctx->func, a->aggtype, args, a->aggcollid, InvalidOid,
								 COERCE_EXPLICIT_CALL);
}

static Node *
gs_exch_mutator(Node *node, GsExchCtx *ctx)
{
	if (node == NULL || !ctx->ok)
		return node;
	/* grouped: the group expression is the function's column 1 */
	if (ctx->gexpr != NULL && equal(node, ctx->gexpr))
		return (Node *) makeVar(1, 1, exprType(node), exprTypmod(node), exprCollation(node), 0);
	if (IsA(node, Aggref))
	{
		Node	   *r = gs_exch_call((Aggref *) node, ctx);

		if (r == NULL)
			ctx->ok = false;
		else if (ctx->gexpr != NULL)
		{
			/* its column 2 */
			ctx->gcall = (FuncExpr *) r;
			ctx->gagg = deparse_expression(node, ctx->dpcontext, false, true);
			r = (Node *) makeVar(1, 2, ((Aggref *) node)->aggtype, -1,
								 ((Aggref *) node)->aggcollid, 0);
		}
		return r ? r : node;
	}
	/* a column outside an aggregate, or anything reading the table itself */
	if (IsA(node, Var) || IsA(node, SubLink) || IsA(node, WindowFunc) ||
		IsA(node, GroupingFunc) || IsA(node, PlaceHolderVar) || IsA(node, Query))
	{
		ctx->ok = false;
		return node;
	}
	return expression_tree_mutator(node, gs_exch_mutator, ctx);
}

/* the quals' text into every exchange call of the target list */
static bool
gs_exch_set_quals(Node *node, Const *quals)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr) && list_length(((FuncExpr *) node)->args) == 6 &&
		lthird(((FuncExpr *) node)->args) == NULL)
		lthird(((FuncExpr *) node)->args) = copyObject(quals);
	return expression_tree_walker(node, gs_exch_set_quals, quals);
}

/*
 * The group expression of a query grouped by one expression the grouped
 * exchange takes, else NULL: of the table's columns, shippable, not the
 * distribution column (Citus runs such a query on the shards whole), of a
 * base or enum type, not an array, with a btree order and no collation (the
 * rounds find a row's group by width_bucket over the sorted groups).
 */
static Node *
gs_exch_group_expr(Query *q, AttrNumber distcol)
{
	TargetEntry *tle;
	Node	   *g;
	Oid			t;

	if (list_length(q->groupClause) != 1 || q->groupingSets != NIL || q->havingQual != NULL)
		return NULL;
	tle = get_sortgroupclause_tle(linitial_node(SortGroupClause, q->groupClause), q->targetList);
	g = gs_flatten_group_exprs(q, (Node *) tle->expr);
	t = exprType(g);
	if (!gs_exch_shippable(g) || !contain_var_clause(g) || gs_is_distcol(g, distcol) ||
		OidIsValid(exprCollation(g)) || type_is_collatable(t) || type_is_array(t) ||
		(get_typtype(t) != TYPTYPE_BASE && get_typtype(t) != TYPTYPE_ENUM) ||
		!OidIsValid(lookup_type_cache(t, TYPECACHE_CMP_PROC)->cmp_proc))
		return NULL;
	return g;
}

/*
 * The query's shape: one hash-distributed table, ungrouped or grouped by
 * one expression (*gexpr; then ORDER BY and LIMIT may stay: they sort the
 * function's rows), nothing else.
 */
static bool
gs_exch_query_ok(Query *q, Node **gexpr)
{
	RangeTblEntry *rte;
	AttrNumber	distcol;
	bool		grouped = q->groupClause != NIL;

	*gexpr = NULL;
	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL || !q->hasAggs ||
		q->hasWindowFuncs || q->hasTargetSRFs || q->hasSubLinks || q->hasDistinctOn ||
		q->hasRecursive || q->hasModifyingCTE || q->hasForUpdate || q->hasRowSecurity ||
		q->cteList != NIL || q->groupingSets != NIL ||
		q->havingQual != NULL || q->windowClause != NIL || q->distinctClause != NIL ||
		(!grouped && (q->sortClause != NIL || q->limitOffset != NULL || q->limitCount != NULL)) ||
		q->setOperations != NULL || q->rowMarks != NIL || GS_QUERY_FROM_LENGTH(q) != 1 ||
		q->jointree == NULL || list_length(q->jointree->fromlist) != 1 ||
		!IsA(linitial(q->jointree->fromlist), RangeTblRef) ||
		linitial_node(RangeTblRef, q->jointree->fromlist)->rtindex != 1)
		return false;
	rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind != RTE_RELATION || rte->tablesample != NULL ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE))
		return false;
	if (q->jointree->quals != NULL && !gs_exch_shippable(q->jointree->quals))
		return false;
	if (!gs_citus_hash_distributed(rte->relid, &distcol) ||
		gs_quals_pin_distcol(q->jointree->quals, distcol))
		return false;
	if (grouped && (*gexpr = gs_exch_group_expr(q, distcol)) == NULL)
		return false;
	return true;
}

/*
 * Grouped: FROM gs_citus_exchange_grouped(<the aggregate's exchange call's
 * arguments>, 'grp', NULL::grp_type, 'the aggregate') AS x(g, r); the target
 * list already reads g and r (gs_exch_mutator).  The aggregate's SQL is
 * today's plan, which the exchange runs instead where the groups are small.
 */
static bool
gs_exch_grouped_from(Query *parse, GsExchCtx *ctx, const char *nsp, Const *gtext)
{
	Oid			argtypes[9] = {REGCLASSOID, TEXTOID, TEXTOID, TEXTOID, FLOAT8ARRAYOID, ANYELEMENTOID,
	TEXTOID, ANYCOMPATIBLEOID, TEXTOID};
	Oid			func = LookupFuncName(list_make2(makeString(pstrdup(nsp)),
												 makeString("gs_citus_exchange_grouped")),
									  9, argtypes, true);
	FuncExpr   *fe;
	RangeTblFunction *rtf;
	RangeTblEntry *rte;
	RangeTblRef *rtr;

	if (!OidIsValid(func) || ctx->gcall == NULL)
		return false;
	fe = ctx->gcall;
	fe->funcid = func;
	fe->funcresulttype = RECORDOID;
	fe->funcretset = true;
	fe->funccollid = InvalidOid;
	fe->args = lappend(fe->args, gtext);
	fe->args = lappend(fe->args, makeNullConst(exprType(ctx->gexpr), exprTypmod(ctx->gexpr), InvalidOid));
	fe->args = lappend(fe->args, makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
										   CStringGetTextDatum(ctx->gagg), false, false));

	rtf = makeNode(RangeTblFunction);
	rtf->funcexpr = (Node *) fe;
	rtf->funccolcount = 2;
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_FUNCTION;
	rte->functions = list_make1(rtf);
	rte->funcordinality = false;
	rte->eref = makeAlias("gs_citus_exchange_grouped", list_make2(makeString("g"), makeString("r")));
	rte->lateral = false;
	rte->inh = false;
	rte->inFromCl = true;
	rtr = makeNode(RangeTblRef);
	rtr->rtindex = 1;

	parse->rtable = list_make1(rte);
	parse->jointree = makeFromExpr(list_make1(rtr), NULL);
	parse->groupClause = NIL;
#if PG_VERSION_NUM >= 180000
	parse->hasGroupRTE = false;		/* (its entry went with the old range table) */
#endif
	return true;
}

/*
 * Replace parse (in place: the caller's copy) by the exchange when it
 * qualifies; the relation's oid, or InvalidOid when the query stays.
 */
Oid
gs_citus_exchange_plan(Query *parse, ParamListInfo bound, Oid ext_nsp)
{
	GsExchCtx	ctx;
	Oid			argtypes[6] = {REGCLASSOID, TEXTOID, TEXTOID, TEXTOID, FLOAT8ARRAYOID, ANYELEMENTOID};
	char	   *nsp;
	List	   *tlist = NIL;
	ListCell   *lc;
	int			guc_nest;
	Const	   *quals;
	Const	   *gtext = NULL;
	char	   *relname;
	Node	   *gexpr;

	if (!gs_guc_citus_exchange || !gs_exch_query_ok(parse, &gexpr))
		return InvalidOid;
	nsp = get_namespace_name(ext_nsp);
	if (nsp == NULL)
		return InvalidOid;
	memset(&ctx, 0, sizeof(ctx));
	ctx.relid = linitial_node(RangeTblEntry, parse->rtable)->relid;
	ctx.func = LookupFuncName(list_make2(makeString(nsp), makeString("gs_citus_exchange")),
							  6, argtypes, true);
	relname = get_rel_name(ctx.relid);
	if (!OidIsValid(ctx.func) || relname == NULL)
		return InvalidOid;
	ctx.dpcontext = deparse_context_for(relname, ctx.relid);
	ctx.bound = bound;
	ctx.ok = true;
	ctx.all_builtin = true;
	ctx.gexpr = gexpr;

	/* deparsed constants must read back exactly */
	guc_nest = gs_x_exact_literals();
	foreach(lc, parse->targetList)
	{
		TargetEntry *tle = flatCopyTargetEntry(lfirst_node(TargetEntry, lc));

		/* (18: the group's Vars of the RTE_GROUP entry as the expression they stand for) */
		tle->expr = (Expr *) gs_exch_mutator(gs_flatten_group_exprs(parse, (Node *) tle->expr), &ctx);
		tlist = lappend(tlist, tle);
	}
	quals = makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
					  CStringGetTextDatum(parse->jointree->quals == NULL ? "" :
										  deparse_expression(parse->jointree->quals,
															 ctx.dpcontext, false, true)),
					  false, false);
	if (gexpr != NULL)
		gtext = makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
						  CStringGetTextDatum(deparse_expression(gexpr, ctx.dpcontext, false, true)),
						  false, false);
	AtEOXact_GUC(true, guc_nest);

	if (!ctx.ok || ctx.naggs == 0 || (gs_guc_approximate && !ctx.all_builtin))
		return InvalidOid;
	if (gexpr != NULL)
	{
		(void) gs_exch_set_quals((Node *) ctx.gcall, quals);
		if (!gs_exch_grouped_from(parse, &ctx, nsp, gtext))
			return InvalidOid;
	}
	else
	{
		(void) gs_exch_set_quals((Node *) tlist, quals);
		/* a query without FROM: one row, the exchange's answers */
		parse->rtable = NIL;
		parse->jointree = makeFromExpr(NIL, NULL);
	}
	parse->targetList = tlist;
#if PG_VERSION_NUM >= 160000
	parse->rteperminfos = NIL;
#endif
	parse->hasAggs = false;
	ereport(DEBUG1,
			(errmsg("gpuselect: Citus exchange: %d aggregate(s) over \"%s\" run as gs_citus_exchange (gpuselect.citus_exchange)",
					ctx.naggs, relname)));
	return ctx.relid;
}
