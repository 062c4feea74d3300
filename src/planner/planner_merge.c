/*
 * planner_merge.c — several scalar percentiles of one value in one query
 * level, merged into one array aggregate (planner.c calls it after the
 * rewrite of a level).
 *
 * A dashboard panel asks for p50, p90 and p99 of the same column:
 *     percentile_cont(0.5) WITHIN GROUP (ORDER BY latency),
 *     percentile_cont(0.9) WITHIN GROUP (ORDER BY latency), ...
 * PostgreSQL's built-ins share one sort between them (the ordered-set
 * aggregates' shareable transition state).  Rewritten to plain aggregates
 * (planner.c) each call carries its own fraction as an argument, so each had
 * a state of its own: every key stored, shipped from parallel workers and
 * selected once per percentile.  Merged, the calls become one
 * gs_planner_*(x, '{0.5,0.9,0.99}') and each call its element,
 * (gs_planner_*(x, ...))[i]: one state, one selection of all the ranks.
 *
 * Merged: the rewrite's scalar Aggrefs whose fraction is a valid constant
 * (planner.c has checked it at plan time: a NULL or out-of-range constant
 * is never rewritten), with the same aggregate function (kind, direction,
 * exactness), value expression, FILTER and collations.  The answers are the
 * same: the array forms compute each element as the scalar form does, and a
 * group with no rows gives a NULL array, whose elements are NULL, as the
 * scalar form's NULL (the constant fraction needs no check at run time).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "planner/planner.h"

/* one set of calls that share an aggregate */
typedef struct GsMergeSet
{
	Aggref	   *first;			/* its calls are the first's, but the fraction */
	List	   *members;		/* GsMergeCandidate *, in query order */
	List	   *fractions;		/* float8 *, distinct, in order of appearance */
	Node	   *multi;			/* the array Aggref (NULL: one call, nothing to merge) */
} GsMergeSet;

/* may a and b share one array aggregate? */
static bool
gs_merge_same_call(Aggref *a, Aggref *b)
{
	return a->aggfnoid == b->aggfnoid && a->aggtype == b->aggtype &&
		a->aggcollid == b->aggcollid && a->inputcollid == b->inputcollid &&
		a->agglevelsup == b->agglevelsup && a->aggsplit == b->aggsplit &&
		equal(linitial_node(TargetEntry, a->args)->expr, linitial_node(TargetEntry, b->args)->expr) &&
		equal(a->aggfilter, b->aggfilter);
}

/* the index (0-based) of fraction p in set s, appended when new */
static int
gs_merge_fraction_index(GsMergeSet *s, float8 p)
{
	int			i = 0;
	ListCell   *lc;
	float8	   *copy;

	foreach(lc, s->fractions)
	{
		if (*(float8 *) lfirst(lc) == p)
			return i;
		i++;
	}
	copy = palloc(sizeof(float8));
	*copy = p;
	s->fractions = lappend(s->fractions, copy);
	return i;
}

/* the float8[] form of aggregate fnoid (same name, schema and value type), or InvalidOid */
static Oid
gs_merge_array_form(Oid fnoid)
{
	Oid		   *argtypes;
	int			nargs;
	Oid			want[2];
	char	   *nsp = get_namespace_name(get_func_namespace(fnoid));

	get_func_signature(fnoid, &argtypes, &nargs);
	if (nsp == NULL || nargs != 2 || argtypes[1] != FLOAT8OID)
		return InvalidOid;
	want[0] = argtypes[0];
	want[1] = FLOAT8ARRAYOID;
	return LookupFuncName(list_make2(makeString(nsp), makeString(get_func_name(fnoid))),
						  2, want, true);
}

/* set s's array Aggref, or NULL when it cannot be built */
static Node *
gs_merge_array_aggref(GsMergeSet *s)
{
	Oid			fnoid = gs_merge_array_form(s->first->aggfnoid);
	Oid			rettype = get_array_type(s->first->aggtype);
	int			n = list_length(s->fractions);
	Datum	   *elems;
	ArrayType  *arr;
	Aggref	   *m;
	int			i = 0;
	ListCell   *lc;

	if (!OidIsValid(fnoid) || !OidIsValid(rettype))
		return NULL;
	elems = palloc(sizeof(Datum) * n);
	foreach(lc, s->fractions)
		elems[i++] = Float8GetDatum(*(float8 *) lfirst(lc));
	arr = construct_array(elems, n, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);

	m = copyObject(s->first);
	m->aggfnoid = fnoid;
	m->aggtype = rettype;
	m->aggargtypes = list_make2_oid(linitial_oid(m->aggargtypes), FLOAT8ARRAYOID);
	lsecond_node(TargetEntry, m->args)->expr =
		(Expr *) makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(arr), false, false);
	return (Node *) m;
}

/* element i (0-based) of set s's array */
static Node *
gs_merge_element(GsMergeSet *s, int i)
{
	SubscriptingRef *r = makeNode(SubscriptingRef);

	r->refcontainertype = exprType(s->multi);
	r->refelemtype = s->first->aggtype;
	r->refrestype = s->first->aggtype;
	r->reftypmod = -1;
	r->refcollid = s->first->aggcollid;
	r->refupperindexpr = list_make1(makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
											  Int32GetDatum(i + 1), false, true));
	r->reflowerindexpr = NIL;
	r->refexpr = (Expr *) copyObject(s->multi);
	r->refassgnexpr = NULL;
	return (Node *) r;
}

typedef struct GsMergeMap
{
	List	   *from;			/* Aggref * of the tree (by address) */
	List	   *to;				/* ... their replacements */
} GsMergeMap;

static Node *
gs_merge_mutator(Node *node, GsMergeMap *map)
{
	ListCell   *lf,
			   *lt;

	if (node == NULL || IsA(node, Query))
		return node;
	if (IsA(node, Aggref))
	{
		forboth(lf, map->from, lt, map->to)
		{
			if (lfirst(lf) == (void *) node)
				return (Node *) lfirst(lt);
		}
		return node;			/* (an Aggref's arguments hold no Aggref of this level) */
	}
	return expression_tree_mutator(node, gs_merge_mutator, map);
}

void
gs_merge_percentiles(Query *q, List *candidates)
{
	List	   *sets = NIL;
	GsMergeMap	map = {NIL, NIL};
	ListCell   *lc;

	foreach(lc, candidates)
	{
		GsMergeCandidate *c = (GsMergeCandidate *) lfirst(lc);
		GsMergeSet *set = NULL;
		ListCell   *ls;

		foreach(ls, sets)
		{
			if (gs_merge_same_call(((GsMergeSet *) lfirst(ls))->first, c->aggref))
				set = (GsMergeSet *) lfirst(ls);
		}
		if (set == NULL)
		{
			set = palloc0(sizeof(GsMergeSet));
			set->first = c->aggref;
			sets = lappend(sets, set);
		}
		set->members = lappend(set->members, c);
		(void) gs_merge_fraction_index(set, c->fraction);
	}
	foreach(lc, sets)
	{
		GsMergeSet *set = (GsMergeSet *) lfirst(lc);
		ListCell   *lm;

		if (list_length(set->members) < 2 || (set->multi = gs_merge_array_aggref(set)) == NULL)
			continue;
		foreach(lm, set->members)
		{
			GsMergeCandidate *c = (GsMergeCandidate *) lfirst(lm);

			map.from = lappend(map.from, c->aggref);
			map.to = lappend(map.to, gs_merge_element(set, gs_merge_fraction_index(set, c->fraction)));
		}
	}
	if (map.from == NIL)
		return;
	q->targetList = (List *) gs_merge_mutator((Node *) q->targetList, &map);
	q->havingQual = gs_merge_mutator(q->havingQual, &map);
}
