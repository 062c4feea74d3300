/*
 * planner.c — ordered-set percentiles planned as plain aggregates.
 *
 * PostgreSQL never hashes and never aggregates partially an ordered-set
 * aggregate: a GROUP BY with percentile_cont(...) WITHIN GROUP (ORDER BY x)
 * sorts every input row.  When the fraction is the same for every row of a
 * group, the call equals a plain aggregate that carries the fraction as an
 * ordinary argument, and gpuselect's plain aggregates hash, combine and
 * serialize.  A planner_hook rewrites a copy of the Query before
 * standard_planner sees it, so the planner itself costs and chooses
 * HashAggregate and Partial Aggregate for the new Aggrefs (docs/planner-rewrite.md
 * says why this hook and not plan post-processing).
 *
 * gpu_quantile(s)'s fraction argument, which PostgreSQL evaluates per row
 * too, becomes an InitPlan the same way wherever it does not depend on the
 * row (gs_hoist_quantile_fraction).
 *
 * Rewritten (at every query level: subqueries, CTEs, sublinks, views as
 * expanded by the rewriter -- their stored definitions are untouched):
 *   - gpu_percentile_disc / gpu_percentile_cont, always;
 *   - the built-in percentile_disc (any type) / percentile_cont (float8 and
 *     interval), scalar and float8[] forms, when
 *     gpuselect.accelerate_builtins is on;
 * and only when all of these hold (anything else stays as it was):
 *   - the value type and ORDER BY operator pass gs_type_plan_rewritable
 *     (types.c: a type gpuselect aggregates, its default ASC or DESC order);
 *     the comparison types (numeric, text, interval, ...) are ordered under
 *     the sort expression's collation, which becomes the new Aggref's
 *     inputcollid;
 *   - one ORDER BY expression, no DISTINCT, the Aggref belongs to this level;
 *   - the fraction is fixed per group (gs_fraction_fixed_per_group);
 *   - its per-row cost is small: one that does not depend on the row is
 *     computed once, as an InitPlan (planner_fraction.c); one that does (a
 *     GROUP BY expression) is evaluated per row, so an array built per row
 *     keeps the built-in, whose sort costs less (gs_fraction_cheap_per_row);
 *   - a scalar fraction is a valid constant after folding, or else the
 *     Aggref is a whole target-list entry of a query without HAVING (the
 *     no-rows check, below).
 *
 * The no-rows check.  percentile_disc(p) / percentile_cont(p) validate p in
 * their final function, which runs even for a group with no rows (a FILTER
 * that matches nothing, no GROUP BY over an empty table, an empty grouping
 * set).  The plain aggregate sees its fraction only with a row.  A constant
 * is validated here, at plan time; any other fraction is wrapped:
 * gs_planner_check_fraction(agg, p) validates p above the aggregate, which is
 * legal because p depends only on grouping expressions and constants.  A
 * whole target-list entry is computed for every group the Agg node emits,
 * as the built-in's final function is; inside a CASE, or with a HAVING that
 * may drop the group, it might not be, so those calls are not rewritten.
 * The float8[] forms return NULL for no rows before they look at the array,
 * so they never need the wrapper.
 *
 * On a query that reads a Citus table, the targets and gpu_quantile(s)
 * become typed twins, which Citus can run on its shards (gs_twin_plain and
 * the comment above it; docs/citus.md); an ungrouped one over one
 * distributed table then becomes the exchange (planner_citus.c).
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "base/guc.h"
#include "planner/planner.h"
#include "base/types.h"

static planner_hook_type gs_prev_planner_hook = NULL;

/* per planning call: the extension, looked up once and only when needed */
typedef struct GsRewriteCtx
{
	bool		looked_up;
	Oid			ext_oid;		/* InvalidOid: not installed in this database */
	Oid			ext_nsp;
	Query	   *query;			/* the query level being rewritten */
	bool		citus;			/* the query reads a Citus table: typed twins */
	bool		plain_looked_up;
	Oid			quantile_oid;	/* gpu_quantile(anyelement, float8) */
	Oid			quantiles_oid;	/* gpu_quantiles(anyelement, float8[]) */
	ParamListInfo bound;		/* the planning call's parameters (a custom plan's) */
	List	   *merge;			/* this level's GsMergeCandidates (planner_merge.c) */
} GsRewriteCtx;

/* what an ordered-set Aggref is, as far as the rewrite cares */
typedef struct GsCandidate
{
	bool		cont;			/* percentile_cont (else percentile_disc) */
	bool		multi;			/* float8[] fraction */
	bool		builtin;		/* PostgreSQL's, not gpu_percentile_* */
	bool		interval;		/* percentile_cont over interval (returns interval) */
} GsCandidate;

/* pg_extension's row for gpuselect (get_extension_schema is static before 16) */
static void
gs_lookup_extension(GsRewriteCtx *ctx)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	if (ctx->looked_up)
		return;
	ctx->looked_up = true;
	ctx->ext_oid = InvalidOid;
	ctx->ext_nsp = InvalidOid;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("gpuselect"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Form_pg_extension ext = (Form_pg_extension) GETSTRUCT(tup);

		ctx->ext_oid = ext->oid;
		ctx->ext_nsp = ext->extnamespace;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

/* a function of the gpuselect extension installed in this database? */
bool
gs_planner_is_gpuselect_func(Oid funcid)
{
	GsRewriteCtx ctx;

	if (funcid < FirstNormalObjectId)
		return false;
	memset(&ctx, 0, sizeof(ctx));
	gs_lookup_extension(&ctx);
	return OidIsValid(ctx.ext_oid) &&
		getExtensionOfObject(ProcedureRelationId, funcid) == ctx.ext_oid;
}

/* Is oid one of the percentiles the rewrite knows?  Fills *c. */
static bool
gs_identify(Aggref *a, GsRewriteCtx *ctx, GsCandidate *c)
{
	memset(c, 0, sizeof(*c));
	switch (a->aggfnoid)
	{
		case F_PERCENTILE_DISC_FLOAT8_ANYELEMENT:
			break;
		case F_PERCENTILE_DISC__FLOAT8_ANYELEMENT:
			c->multi = true;
			break;
		case F_PERCENTILE_CONT_FLOAT8_FLOAT8:
			c->cont = true;
			break;
		case F_PERCENTILE_CONT__FLOAT8_FLOAT8:
			c->cont = c->multi = true;
			break;
		case F_PERCENTILE_CONT_FLOAT8_INTERVAL:
			c->cont = c->interval = true;
			break;
		case F_PERCENTILE_CONT__FLOAT8_INTERVAL:
			c->cont = c->multi = c->interval = true;
			break;
		default:
			{
				char	   *name;
				Oid		   *argtypes;
				int			nargs;

				if (a->aggfnoid < FirstNormalObjectId)
					return false;
				name = get_func_name(a->aggfnoid);
				if (name == NULL)
					return false;
				if (strcmp(name, "gpu_percentile_cont") == 0)
					c->cont = true;
				else if (strcmp(name, "gpu_percentile_disc") != 0)
					return false;
				get_func_signature(a->aggfnoid, &argtypes, &nargs);
				/* disc: ORDER BY anyelement; cont: ORDER BY float8 or
				 * interval (which types may go: gs_type_plan_rewritable) */
				if (nargs != 2 ||
					(argtypes[1] != ANYELEMENTOID && argtypes[1] != FLOAT8OID && argtypes[1] != INTERVALOID) ||
					(argtypes[0] != FLOAT8OID && argtypes[0] != FLOAT8ARRAYOID))
					return false;
				c->multi = argtypes[0] == FLOAT8ARRAYOID;
				c->interval = c->cont && argtypes[1] == INTERVALOID;
				gs_lookup_extension(ctx);
				/* ours only: not a look-alike in some other schema */
				return OidIsValid(ctx->ext_oid) &&
					getExtensionOfObject(ProcedureRelationId, a->aggfnoid) == ctx->ext_oid;
			}
	}
	if (!gs_guc_accelerate_builtins)
		return false;
	c->builtin = true;
	gs_lookup_extension(ctx);
	return OidIsValid(ctx->ext_oid);
}

/*
 * Does "equal" in the default btree opclass of typid (under collid) mean
 * "identical"?  Then an expression of a grouping expression has one value
 * for the whole group, whichever of its rows computes it.  float8 (-0 = +0),
 * numeric (1.0 = 1.00) and nondeterministic collations say no.
 */
static bool
gs_equality_is_identity(Oid typid, Oid collid)
{
	Oid			opclass = GetDefaultOpClass(typid, BTREE_AM_OID);
	Oid			opcintype;
	Oid			proc;

	if (!OidIsValid(opclass))
		return false;
	opcintype = get_opclass_input_type(opclass);
	proc = get_opfamily_proc(get_opclass_family(opclass), opcintype, opcintype,
							 BTEQUALIMAGE_PROC);
	if (!OidIsValid(proc))
		return false;
	return DatumGetBool(OidFunctionCall1Coll(proc, collid, ObjectIdGetDatum(opcintype)));
}

typedef struct GsFractionCheck
{
	Query	   *query;
	bool		ok;
} GsFractionCheck;

static bool
gs_fraction_walker(Node *node, GsFractionCheck *fc)
{
	Query	   *q = fc->query;

	if (node == NULL)
		return false;
	/* a grouping expression (not under GROUPING SETS: there it reads NULL in sets without it) */
	if (q->groupingSets == NIL && !IsA(node, Const) && !IsA(node, Param))
	{
		ListCell   *lc;

		foreach(lc, q->groupClause)
		{
			Node	   *gexpr = get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc),
														 q->targetList);

			if (equal(node, gexpr))
			{
				if (gs_equality_is_identity(exprType(gexpr), exprCollation(gexpr)))
					return false;	/* fixed per group; do not look inside */
				fc->ok = false;
				return true;
			}
		}
	}
	if (IsA(node, Var))
	{
		/* an outer query's column is fixed while this level runs */
		if (((Var *) node)->varlevelsup == 0)
		{
			fc->ok = false;
			return true;
		}
		return false;
	}
	/* an uncorrelated sub-select: one value for the whole query (an InitPlan) */
	if (IsA(node, SubLink) &&
		(((SubLink *) node)->subLinkType == EXPR_SUBLINK ||
		 ((SubLink *) node)->subLinkType == ARRAY_SUBLINK) &&
		gs_fraction_once_per_query(node))
		return false;
	if (IsA(node, Aggref) || IsA(node, GroupingFunc) || IsA(node, WindowFunc) ||
		IsA(node, SubLink) || IsA(node, PlaceHolderVar) || IsA(node, Query))
	{
		fc->ok = false;
		return true;
	}
	return expression_tree_walker(node, gs_fraction_walker, fc);
}

/*
 * Is the fraction the same for every row of a group?  Constants, parameters,
 * outer-level columns, stable functions, uncorrelated sub-selects, and
 * expressions of this level's grouping expressions (gs_equality_is_identity)
 * are; volatile functions, set-returning functions, correlated sub-selects,
 * aggregates and other columns are not.
 */
static bool
gs_fraction_fixed_per_group(Query *q, Node *frac)
{
	GsFractionCheck fc;

	if (contain_volatile_functions(frac) || expression_returns_set(frac))
		return false;
	fc.query = q;
	fc.ok = true;
	(void) gs_fraction_walker(frac, &fc);
	return fc.ok;
}

/* a function of the extension's schema by name and argument types, or InvalidOid */
static Oid
gs_extension_func(GsRewriteCtx *ctx, const char *name, Oid arg0, Oid arg1)
{
	Oid			argtypes[2];
	char	   *nsp = get_namespace_name(ctx->ext_nsp);

	if (nsp == NULL)
		return InvalidOid;
	argtypes[0] = arg0;
	argtypes[1] = arg1;
	return LookupFuncName(list_make2(makeString(nsp), makeString(pstrdup(name))),
						  2, argtypes, true);
}

/*
 * Citus.  On a query that reads a distributed or reference table, Citus
 * runs an aggregate with a combine function through its own
 * worker_partial_agg / coord_combine_agg, which refuse polymorphic argument
 * and result types (types.c says how our functions then run).  So on such a
 * query the rewrite targets, and gpu_quantile(s) themselves, become their
 * typed twins (the extension script's "Typed twins for Citus"): the same
 * aggregate declared for the value's type.  A type without a twin keeps the
 * ordered-set form, which Citus answers by sending the rows to the
 * coordinator, or for gpu_quantile(s) takes their *_gather forms, which have
 * no combine function and so are gathered the same way.  The twins are
 * looked up by name and exact argument types, as Citus deparses them for
 * the workers.
 */
static bool
gs_relids_walker(Node *node, List **relids)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, gs_relids_walker, relids,
								 QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
			*relids = list_append_unique_oid(*relids, rte->relid);
		return false;
	}
	return expression_tree_walker(node, gs_relids_walker, relids);
}

/* does the query read a table in Citus's pg_dist_partition (distributed,
 * reference or Citus-local)?  Shards, which the workers' queries read, are not */
static bool
gs_reads_citus_table(Query *parse)
{
	Oid			dist = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	List	   *relids = NIL;
	AttrNumber	att;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	if (!OidIsValid(dist))
		return false;
	(void) gs_relids_walker((Node *) parse, &relids);
	att = get_attnum(dist, "logicalrelid");
	if (relids == NIL || att == InvalidAttrNumber)
		return false;
	/* one row per Citus table: a scan, no index needed */
	rel = table_open(dist, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (!found && (tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, att, RelationGetDescr(rel), &isnull);

		found = !isnull && list_member_oid(relids, DatumGetObjectId(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

static Oid gs_extension_func(GsRewriteCtx *ctx, const char *name, Oid arg0, Oid arg1);

/* gpu_quantile(s) on a Citus query: its typed twin, else its _gather form */
static Node *
gs_twin_plain(Aggref *a, GsRewriteCtx *ctx)
{
	bool		multi;
	Node	   *x;
	Node	   *frac;
	Oid			target;

	if (a->agglevelsup != 0 || list_length(a->args) != 2 || a->aggorder != NIL ||
		a->aggdistinct != NIL || a->aggfnoid < FirstNormalObjectId)
		return NULL;
	gs_lookup_extension(ctx);
	if (!OidIsValid(ctx->ext_oid))
		return NULL;
	if (!ctx->plain_looked_up)
	{
		ctx->plain_looked_up = true;
		ctx->quantile_oid = gs_extension_func(ctx, "gpu_quantile", ANYELEMENTOID, FLOAT8OID);
		ctx->quantiles_oid = gs_extension_func(ctx, "gpu_quantiles", ANYELEMENTOID, FLOAT8ARRAYOID);
	}
	if (a->aggfnoid == ctx->quantile_oid)
		multi = false;
	else if (a->aggfnoid == ctx->quantiles_oid)
		multi = true;
	else
		return NULL;
	x = (Node *) linitial_node(TargetEntry, a->args)->expr;
	frac = eval_const_expressions(NULL, (Node *) copyObject(lsecond_node(TargetEntry, a->args)->expr));
	target = gs_extension_func(ctx, multi ? "gs_planner_quantiles_typed" : "gs_planner_quantile_typed",
							   exprType(x), multi ? FLOAT8ARRAYOID : FLOAT8OID);
	/*
	 * an invalid constant fraction: gathered, so that the final function
	 * still sees it when no row does (gs_check_constant_fraction)
	 */
	if (!multi && IsA(frac, Const) && !((Const *) frac)->constisnull &&
		!(DatumGetFloat8(((Const *) frac)->constvalue) >= 0.0 &&
		  DatumGetFloat8(((Const *) frac)->constvalue) <= 1.0))
		target = InvalidOid;
	if (!OidIsValid(target))
		target = gs_extension_func(ctx, multi ? "gs_planner_quantiles_gather" : "gs_planner_quantile_gather",
								   ANYELEMENTOID, multi ? FLOAT8ARRAYOID : FLOAT8OID);
	if (!OidIsValid(target))
		return NULL;
	a = copyObject(a);
	a->aggfnoid = target;
	return (Node *) a;
}

/*
 * The rewritten form of ordered-set Aggref a, or NULL to keep it.
 * whole_entry: a is the whole expression of a target-list entry.
 */
static Node *
gs_rewrite_aggref(Aggref *a, GsRewriteCtx *ctx, bool whole_entry)
{
	GsCandidate c;
	Node	   *x;
	Node	   *frac;
	bool		desc;
	bool		guard = false;
	Oid			collid;
	char		target[64];
	Oid			target_oid;
	Aggref	   *na;
	Node	   *frac_arg;
	float8		p = 0;
	bool		constant = false;

	if (a->aggkind == AGGKIND_NORMAL && ctx->citus)
		return gs_twin_plain(a, ctx);
	if (a->aggkind != AGGKIND_ORDERED_SET || a->agglevelsup != 0 ||
		list_length(a->aggdirectargs) != 1 || list_length(a->args) != 1 ||
		list_length(a->aggorder) != 1 || a->aggdistinct != NIL ||
		a->aggstar || a->aggvariadic)
		return NULL;
	if (!gs_identify(a, ctx, &c))
		return NULL;

	x = (Node *) linitial_node(TargetEntry, a->args)->expr;
	/* the sort expression's collation, as orderedsetaggs.c takes it */
	collid = exprCollation(x);
	if (!gs_type_plan_rewritable(exprType(x), collid,
								 linitial_node(SortGroupClause, a->aggorder)->sortop,
								 c.cont, &desc))
		return NULL;

	frac = (Node *) linitial(a->aggdirectargs);
	if (!gs_fraction_fixed_per_group(ctx->query, frac))
		return NULL;
	if (!c.multi)
	{
		/* a custom plan's parameters are constants too */
		Node	   *folded = gs_fraction_fold(frac, ctx->bound);

		if (IsA(folded, Const))
		{
			Const	   *k = (Const *) folded;

			/* a NULL or invalid constant: leave its NULL / ERROR to the built-in */
			if (k->constisnull)
				return NULL;
			p = DatumGetFloat8(k->constvalue);
			if (!(p >= 0.0 && p <= 1.0))
				return NULL;
			constant = true;
		}
		else
		{
			if (!whole_entry || ctx->query->havingQual != NULL)
				return NULL;
			guard = true;
		}
	}

	/* a Citus query: the typed twin (interval's cont overloads are typed) */
	snprintf(target, sizeof(target), "gs_planner_%s%s%s%s",
			 c.builtin ? "builtin_" : "", c.cont ? "cont" : "disc", desc ? "_desc" : "",
			 ctx->citus && !c.interval ? "_typed" : "");
	/* cont over interval has overloads of its own (they return interval) */
	target_oid = gs_extension_func(ctx, target, c.interval ? INTERVALOID :
								   ctx->citus ? exprType(x) : ANYELEMENTOID,
								   c.multi ? FLOAT8ARRAYOID : FLOAT8OID);
	if (!OidIsValid(target_oid))
		return NULL;

	/*
	 * The fraction becomes an argument, evaluated per input row: computed
	 * once instead where it does not depend on the row (planner_fraction.c);
	 * where it does (a GROUP BY expression), only if that costs little next
	 * to the built-in's sort, else the built-in stays.
	 */
	frac_arg = gs_fraction_hoist(ctx->query, frac, ctx->bound);
	if (frac_arg == NULL)
	{
		if (!gs_fraction_once_per_query(frac) && !gs_fraction_cheap_per_row(frac))
			return NULL;
		/* evaluated per input row: below the grouping step (pg_compat.h) */
		frac_arg = gs_flatten_group_exprs(ctx->query, copyObject(frac));
	}

	/* the same call as a plain aggregate: args (x, fraction), no ORDER BY */
	na = copyObject(a);
	na->aggfnoid = target_oid;
	na->aggkind = AGGKIND_NORMAL;
	na->aggdirectargs = NIL;
	na->aggorder = NIL;
	na->aggtranstype = InvalidOid;
	na->aggargtypes = list_make2_oid(exprType(x), exprType(frac));
	/*
	 * The comparison types are ordered under the input collation
	 * (PG_GET_COLLATION in the transition function): the sort expression's,
	 * whatever the parser merged into the ordered-set Aggref's.
	 */
	na->inputcollid = collid;
	na->args = list_make2(makeTargetEntry((Expr *) copyObject(x), 1, NULL, false),
						  makeTargetEntry((Expr *) frac_arg, 2, NULL, false));
	if (!guard)
	{
		/* several such calls of one value share an array aggregate */
		if (constant && !ctx->citus)
		{
			GsMergeCandidate *m = palloc(sizeof(GsMergeCandidate));

			m->aggref = na;
			m->fraction = p;
			ctx->merge = lappend(ctx->merge, m);
		}
		return (Node *) na;
	}

	target_oid = gs_extension_func(ctx, "gs_planner_check_fraction", ANYELEMENTOID, FLOAT8OID);
	if (!OidIsValid(target_oid))
		return NULL;
	return (Node *) makeFuncExpr(target_oid, a->aggtype,
								 list_make2(na, copyObject(frac)),
								 a->aggcollid, a->aggcollid, COERCE_EXPLICIT_CALL);
}

/* gpu_quantile(anyelement, float8) or gpu_quantiles(anyelement, float8[]) of the extension? */
static bool
gs_is_quantile_func(Oid funcid, GsRewriteCtx *ctx)
{
	char	   *name;
	Oid		   *argtypes;
	int			nargs;

	if (funcid < FirstNormalObjectId)
		return false;
	name = get_func_name(funcid);
	if (name == NULL ||
		(strcmp(name, "gpu_quantile") != 0 && strcmp(name, "gpu_quantiles") != 0))
		return false;
	get_func_signature(funcid, &argtypes, &nargs);
	if (nargs != 2 || argtypes[0] != ANYELEMENTOID ||
		(argtypes[1] != FLOAT8OID && argtypes[1] != FLOAT8ARRAYOID))
		return false;
	gs_lookup_extension(ctx);
	return OidIsValid(ctx->ext_oid) &&
		getExtensionOfObject(ProcedureRelationId, funcid) == ctx->ext_oid;
}

/*
 * gpu_quantile(s)(x, p), as an aggregate or a window function: p computed
 * once instead of per row where it does not depend on the row
 * (planner_fraction.c).  Returns node, or a copy with the new p.
 */
static Node *
gs_hoist_quantile_fraction(Node *node, GsRewriteCtx *ctx)
{
	if (IsA(node, Aggref))
	{
		Aggref	   *a = (Aggref *) node;
		TargetEntry *tle;
		Node	   *p;

		if (a->aggkind != AGGKIND_NORMAL || a->agglevelsup != 0 ||
			list_length(a->args) != 2 || !gs_is_quantile_func(a->aggfnoid, ctx))
			return node;
		tle = lsecond_node(TargetEntry, a->args);
		if ((p = gs_fraction_hoist(ctx->query, (Node *) tle->expr, ctx->bound)) == NULL)
			return node;
		a = (Aggref *) copyObject(a);
		lsecond_node(TargetEntry, a->args)->expr = (Expr *) p;
		return (Node *) a;
	}
	if (IsA(node, WindowFunc))
	{
		WindowFunc *w = (WindowFunc *) node;
		Node	   *p;

		if (list_length(w->args) != 2 || !gs_is_quantile_func(w->winfnoid, ctx))
			return node;
		if ((p = gs_fraction_hoist(ctx->query, lsecond(w->args), ctx->bound)) == NULL)
			return node;
		w = (WindowFunc *) copyObject(w);
		lsecond(w->args) = p;
		return (Node *) w;
	}
	return node;
}

/* this level's Aggrefs; a sublink's Query is another level (gs_rewrite_walker) */
static Node *
gs_level_mutator(Node *node, GsRewriteCtx *ctx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
		return node;
	if (IsA(node, Aggref) && ((Aggref *) node)->aggkind == AGGKIND_ORDERED_SET)
	{
		Node	   *r = gs_rewrite_aggref((Aggref *) node, ctx, false);

		return r ? r : node;
	}
	/* (an Aggref's arguments hold no aggregate of this level) */
	if (IsA(node, Aggref))
	{
		/* inside an expression too: gpu_quantile(s) on Citus, its twin */
		Node	   *r = ((Aggref *) node)->aggkind == AGGKIND_NORMAL && ctx->citus ?
			gs_twin_plain((Aggref *) node, ctx) : NULL;

		return r ? r : gs_hoist_quantile_fraction(node, ctx);
	}
	node = expression_tree_mutator(node, gs_level_mutator, ctx);
	return IsA(node, WindowFunc) ? gs_hoist_quantile_fraction(node, ctx) : node;
}

static void
gs_rewrite_level(Query *q, GsRewriteCtx *ctx)
{
	ListCell   *lc;

	ctx->merge = NIL;
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *r = NULL;

		if (IsA(tle->expr, Aggref))
			r = gs_rewrite_aggref((Aggref *) tle->expr, ctx, true);
		tle->expr = r ? (Expr *) r : (Expr *) gs_level_mutator((Node *) tle->expr, ctx);
	}
	q->havingQual = gs_level_mutator(q->havingQual, ctx);
	if (list_length(ctx->merge) > 1)
		gs_merge_percentiles(q, ctx->merge);
	ctx->merge = NIL;
}

/* every query level, in place (the caller has copied the tree) */
static bool
gs_rewrite_walker(Node *node, GsRewriteCtx *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;
		Query	   *outer = ctx->query;

		ctx->query = q;
		if (q->hasAggs || q->hasWindowFuncs)
			gs_rewrite_level(q, ctx);
		(void) query_tree_walker(q, gs_rewrite_walker, ctx, 0);
		ctx->query = outer;
		return false;
	}
	return expression_tree_walker(node, gs_rewrite_walker, ctx);
}

/* any ordered-set Aggref the rewrite might take?  (cheap: no catalog access) */
static bool
gs_candidate_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, gs_candidate_walker, context, 0);
	if (IsA(node, Aggref))
	{
		Aggref	   *a = (Aggref *) node;

		/* a plain aggregate of an extension: gpu_quantile(s) on Citus;
		 * gpu_median there (one argument): the Citus exchange */
		if (a->aggkind == AGGKIND_NORMAL && a->aggfnoid >= FirstNormalObjectId &&
			(list_length(a->args) == 2 ||
			 (list_length(a->args) == 1 && gs_guc_citus_exchange)))
			return true;
		if (a->aggkind == AGGKIND_ORDERED_SET &&
			(a->aggfnoid >= FirstNormalObjectId ||
			 (gs_guc_accelerate_builtins &&
			  (a->aggfnoid == F_PERCENTILE_DISC_FLOAT8_ANYELEMENT ||
			   a->aggfnoid == F_PERCENTILE_DISC__FLOAT8_ANYELEMENT ||
			   a->aggfnoid == F_PERCENTILE_CONT_FLOAT8_FLOAT8 ||
			   a->aggfnoid == F_PERCENTILE_CONT__FLOAT8_FLOAT8 ||
			   a->aggfnoid == F_PERCENTILE_CONT_FLOAT8_INTERVAL ||
			   a->aggfnoid == F_PERCENTILE_CONT__FLOAT8_INTERVAL))))
			return true;
		/* maybe gpu_quantile(s) with a fraction to compute once */
		if (a->aggkind == AGGKIND_NORMAL && a->aggfnoid >= FirstNormalObjectId &&
			list_length(a->args) == 2 &&
			!IsA(lsecond_node(TargetEntry, a->args)->expr, Const))
			return true;
	}
	if (IsA(node, WindowFunc))
	{
		WindowFunc *w = (WindowFunc *) node;

		if (w->winfnoid >= FirstNormalObjectId && list_length(w->args) == 2 &&
			!IsA(lsecond(w->args), Const))
			return true;
	}
	return expression_tree_walker(node, gs_candidate_walker, context);
}

static PlannedStmt *
gs_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	Oid			exchange_relid = InvalidOid;
	PlannedStmt *result;

	if (parse->commandType != CMD_UTILITY && gs_candidate_walker((Node *) parse, NULL))
	{
		GsRewriteCtx ctx;

		memset(&ctx, 0, sizeof(ctx));
		ctx.bound = boundParams;
		/* the caller's tree stays as parsed (a cached plan may re-plan it) */
		parse = copyObject(parse);
		ctx.citus = gs_reads_citus_table(parse);
		(void) gs_rewrite_walker((Node *) parse, &ctx);
		/* an ungrouped query over one distributed table: the exchange */
		if (ctx.citus && gs_guc_citus_exchange)
		{
			gs_lookup_extension(&ctx);
			if (OidIsValid(ctx.ext_oid))
				exchange_relid = gs_citus_exchange_plan(parse, boundParams, ctx.ext_nsp);
		}
	}
	if (gs_prev_planner_hook)
		result = gs_prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	else
		result = standard_planner(parse, query_string, cursorOptions, boundParams);
	/* the table the exchange reads is no longer in the plan: DDL on it
	 * must still invalidate the plan */
	if (OidIsValid(exchange_relid))
		result->relationOids = lappend_oid(result->relationOids, exchange_relid);
	return result;
}

void
gs_planner_install_hook(void)
{
	gs_prev_planner_hook = planner_hook;
	planner_hook = gs_planner;
}
