/*
 * planner_fraction.c — a fraction argument that does not depend on the row,
 * evaluated once per query instead of once per row.
 *
 * An aggregate's arguments are evaluated for every input row.  The ordered-
 * set forms evaluate their fraction (a direct argument) once per group, in
 * the final function; the plain aggregates the rewrite makes of them
 * (planner.c), and gpu_quantile / gpu_quantiles themselves, carry it as an
 * ordinary argument.  For a literal that costs nothing, but a fraction that
 * is computed -- `(SELECT array_agg(i / 100.0) FROM ...)`, a numeric[]
 * parameter of a generic plan, `current_setting(...)::float8[]` -- ends
 * under a cast (numeric[] -> float8[]) or a function the executor would run
 * per row: 20 s where the built-in takes 0.5 s over 2M rows (issue 32).
 *
 * So the planner hook moves such a fraction into an uncorrelated sub-select
 * of its own, `(SELECT <fraction>)`, which standard_planner makes an
 * InitPlan: computed at the first row that asks for it, once per query (or
 * per rescan, when it reads an outer query level's values), and a PARAM_EXEC
 * fetch per row.  plain_aggs.c's gs_agg_arg_is_stable then skips the per-row
 * comparison of it too.  An InitPlan's value is passed to parallel workers
 * (Gather's initParam), so parallel plans stay as they were.
 *
 * Moved only when it helps and changes nothing:
 *   - not a constant after folding (with a custom plan's parameter values):
 *     standard_planner folds those, and plain_aggs.c validates a constant
 *     fraction even over no rows, which it could not through a Param;
 *   - not a bare Param (already a fetch) nor an uncorrelated sub-select
 *     itself (already an InitPlan).  An outer query's column is moved too:
 *     the planner may pull the outer subquery up and put an expression in
 *     its place, which would then run per row;
 *   - no Var of this query level (a GROUP BY expression: per group, not
 *     per query), no aggregate, window function or placeholder of any level,
 *     no volatile function (the built-in evaluates it per group: it must not
 *     matter how often) and no set-returning function.
 * The value, its errors and its error codes are the expression's own: the
 * same expression is evaluated, once, at the first row; an aggregate over no
 * rows never evaluates it, as it never did per row.
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/params.h"
#include "nodes/pathnodes.h"		/* PlaceHolderVar (primnodes.h from 16) */
#include "optimizer/optimizer.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"

#include "planner/planner.h"

/*
 * A custom plan's parameter values as constants, as eval_const_expressions
 * substitutes them when it has the plan's bound parameters (PARAM_FLAG_CONST
 * only: a generic plan's, or a cursor's re-evaluated ones, stay Params).
 */
static Node *
gs_bind_params_mutator(Node *node, ParamListInfo bound)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN &&
		((Param *) node)->paramid > 0 && ((Param *) node)->paramid <= bound->numParams)
	{
		Param	   *p = (Param *) node;
		ParamExternData workspace;
		ParamExternData *prm;
		int16		typlen;
		bool		typbyval;

		prm = bound->paramFetch != NULL ?
			bound->paramFetch(bound, p->paramid, true, &workspace) :
			&bound->params[p->paramid - 1];
		if (prm == NULL || !OidIsValid(prm->ptype) || prm->ptype != p->paramtype ||
			!(prm->pflags & PARAM_FLAG_CONST))
			return node;
		get_typlenbyval(p->paramtype, &typlen, &typbyval);
		return (Node *) makeConst(p->paramtype, p->paramtypmod, p->paramcollid, typlen,
								  prm->value, prm->isnull, typbyval);
	}
	return expression_tree_mutator(node, gs_bind_params_mutator, bound);
}

/* frac folded as standard_planner will fold it (a copy) */
Node *
gs_fraction_fold(Node *frac, ParamListInfo bound)
{
	Node	   *n = copyObject(frac);

	if (bound != NULL && bound->numParams > 0)
		n = gs_bind_params_mutator(n, bound);
	return eval_const_expressions(NULL, n);
}

/* anything of this query level in it, or anything that is not an expression of values? */
static bool
gs_row_dependent_walker(Node *node, int *depth)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varlevelsup == (Index) *depth;
	/* of this level or an outer one (a sub-select's own are fine) */
	if (IsA(node, Aggref))
		return ((Aggref *) node)->agglevelsup >= (Index) *depth;
	if (IsA(node, GroupingFunc))
		return ((GroupingFunc *) node)->agglevelsup >= (Index) *depth;
	if (IsA(node, PlaceHolderVar))
		return ((PlaceHolderVar *) node)->phlevelsup >= (Index) *depth;
	if ((IsA(node, WindowFunc) && *depth == 0) || IsA(node, CurrentOfExpr))
		return true;
	if (IsA(node, Query))
	{
		bool		found;

		(*depth)++;
		found = query_tree_walker((Query *) node, gs_row_dependent_walker, depth, 0);
		(*depth)--;
		return found;
	}
	return expression_tree_walker(node, gs_row_dependent_walker, depth);
}

/*
 * Can frac be computed once for the whole scan of this query level
 * (an InitPlan), whatever the row?  Constants qualify too.
 */
bool
gs_fraction_once_per_query(Node *frac)
{
	int			depth = 0;

	return !gs_row_dependent_walker(frac, &depth) &&
		!contain_volatile_functions(frac) && !expression_returns_set(frac);
}

/* is frac already a fetch per row: a Param, or a sub-select the planner makes an InitPlan? */
static bool
gs_fraction_is_fetch(Node *frac)
{
	while (IsA(frac, RelabelType))
		frac = (Node *) ((RelabelType *) frac)->arg;
	if (IsA(frac, Param))
		return true;
	return IsA(frac, SubLink) &&
		(((SubLink *) frac)->subLinkType == EXPR_SUBLINK ||
		 ((SubLink *) frac)->subLinkType == ARRAY_SUBLINK);
}

/*
 * The fraction as an aggregate argument of query level q: `(SELECT frac)`
 * when that evaluates it once instead of per row (the header's rules), else
 * NULL (the caller keeps frac).  bound: the planning call's parameters.
 */
Node *
gs_fraction_hoist(Query *q, Node *frac, ParamListInfo bound)
{
	Query	   *sub;
	SubLink    *link;
	Node	   *expr;

	if (gs_fraction_is_fetch(frac) || !gs_fraction_once_per_query(frac) ||
		IsA(gs_fraction_fold(frac, bound), Const))
		return NULL;

	/* one level deeper: outer references (and nested sub-selects') shift by one */
	expr = copyObject(frac);
	IncrementVarSublevelsUp(expr, 1, 0);

	sub = makeNode(Query);
	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	sub->jointree = makeFromExpr(NIL, NULL);
	sub->targetList = list_make1(makeTargetEntry((Expr *) expr, 1, pstrdup("fraction"), false));
	sub->hasSubLinks = checkExprHasSubLink(expr);

	link = makeNode(SubLink);
	link->subLinkType = EXPR_SUBLINK;
	link->subLinkId = 0;
	link->testexpr = NULL;
	link->operName = NIL;
	link->subselect = (Node *) sub;
	link->location = exprLocation(frac);

	q->hasSubLinks = true;
	return (Node *) link;
}

/*
 * A fraction that stays an argument evaluated per row (it depends on the
 * group): is that cheap next to the sort the built-in does per row?  A
 * scalar expression is; an array built or cast per row (hundreds of
 * nanoseconds to microseconds) is not, unless it is read as it is (a column,
 * a constant, a parameter or a sub-select's value).
 */
bool
gs_fraction_cheap_per_row(Node *frac)
{
	while (IsA(frac, RelabelType))
		frac = (Node *) ((RelabelType *) frac)->arg;
	if (!type_is_array(exprType(frac)))
		return true;
	return IsA(frac, Var) || IsA(frac, Const) || gs_fraction_is_fetch(frac);
}
