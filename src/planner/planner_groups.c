/*
 * planner_groups.c — the number of groups of a GROUP BY time bucket, for the
 * planner, so that dashboards hash and aggregate partially without
 * CREATE STATISTICS.
 *
 * PostgreSQL estimates the groups of an expression it has no statistics
 * for from the columns inside it: date_trunc('hour', ts) gets ts's number
 * of distinct values, about one group per row.  With that estimate a hash
 * table never fits, partial aggregation saves nothing, and the planner
 * sorts every row (README: "The planner rewrite").  estimate_num_groups
 * has no hook, so this file does what TimescaleDB does for time_bucket: a
 * create_upper_paths_hook at UPPERREL_GROUP_AGG recognises a time bucket of
 * one column in the GROUP BY, estimates its groups from the column's range
 * (its statistics' histogram and MCV ends, narrowed by the query's own
 * range conditions on it) divided by the bucket's width, and offers the
 * paths the planner would have built with that estimate:
 *   - HashAggregate over the input (serial), and
 *   - Finalize HashAggregate > Gather > Partial HashAggregate over the
 *     input's cheapest partial path (when the aggregates can go partial),
 * costed by create_agg_path / create_gather_path with the new estimate; the
 * planner then chooses among them and its own paths as usual.  The partial
 * target is the one the planner already built for its partially grouped
 * rel, so the Aggrefs are its own.
 *
 * Recognised buckets (one timestamp, timestamptz or date column, possibly
 * under casts among those types, constant interval shifts and AT TIME ZONE
 * a constant zone):
 *   date_trunc(unit, col [, zone]), date_bin(width, col, origin),
 *   col::date, and floor(extract(epoch from col) / n) [* n] (Grafana's
 *   $__timeGroup), also under to_timestamp(), casts among the number types
 *   and constant shifts (Metabase's week: date_trunc('week', ts + '1 day')
 *   - '1 day');
 * and of one column of a number type (an epoch in any unit):
 *   floor(col / n) [* n] (Grafana's $__unixEpochGroup) and integer
 *   division col / n [* n]; a numeric or float8 division only under floor.
 * The range and the width are then in the column's own unit.
 *
 * Scope: only a query level whose grouped target or HAVING holds a
 * gpuselect aggregate (ours, or a built-in the rewrite replaced), only
 * plain GROUP BY (no grouping sets), only when this estimate is under half
 * the planner's own, and only with gpuselect.estimate_time_buckets on.  The
 * estimate changes which plan runs, never an answer.
 *
 * The same hook also charges the grouped paths for the selection that our
 * final functions do and PostgreSQL does not cost (gs_charge_paths): in
 * full on a sorted aggregation, the backend's share on a hashed one, whose
 * groups final_batch.c selects at once on helper threads.  It applies to a
 * level whose gpuselect aggregates are all over key types, with
 * gpuselect.finalize_threads > 0, bucket estimate or not (the hashed paths
 * then use the planner's own number of groups).
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "catalog/pg_am.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "datatype/timestamp.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "parser/scansup.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/timestamp.h"

#include "aggs/final_batch.h"
#include "base/guc.h"
#include "planner/planner.h"
#include "base/types.h"

static create_upper_paths_hook_type gs_prev_upper_paths_hook = NULL;

/* a bucket of one column: which column, how wide (seconds, or the unit of
 * a number column) */
typedef struct GsBucket
{
	Var		   *var;
	double		width;
} GsBucket;

/* ---------------------------------------------------------------------
 * Recognising a bucket
 * ------------------------------------------------------------------- */

/* a non-null text constant, lower-cased as date_trunc reads its unit */
static char *
gs_const_unit(Node *n)
{
	Const	   *c;
	text	   *t;

	if (n == NULL || !IsA(n, Const))
		return NULL;
	c = (Const *) n;
	if (c->constisnull || c->consttype != TEXTOID)
		return NULL;
	t = DatumGetTextPP(c->constvalue);
	return downcase_truncate_identifier(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), false);
}

/* a finite number of one of the number types; false otherwise */
static bool
gs_number_value(Oid typid, Datum d, double *v)
{
	switch (typid)
	{
		case INT2OID:
			*v = DatumGetInt16(d);
			return true;
		case INT4OID:
			*v = DatumGetInt32(d);
			return true;
		case INT8OID:
			*v = (double) DatumGetInt64(d);
			return true;
		case FLOAT4OID:
			*v = DatumGetFloat4(d);
			break;
		case FLOAT8OID:
			*v = DatumGetFloat8(d);
			break;
		case NUMERICOID:
			/* NaN and the infinities come back as such: not finite */
			*v = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d));
			break;
		default:
			return false;
	}
	return isfinite(*v);
}

/* a positive constant of a number type; 0 otherwise */
static double
gs_const_positive(Node *n)
{
	Const	   *c;
	double		v;

	if (n == NULL || !IsA(n, Const) || ((Const *) n)->constisnull)
		return 0;
	c = (Const *) n;
	return gs_number_value(c->consttype, c->constvalue, &v) && v > 0 ? v : 0;
}

/* seconds in one date_trunc unit (a month and longer: their mean length) */
static double
gs_unit_seconds(const char *unit)
{
	int			val;

	if (unit == NULL || DecodeUnits(0, (char *) unit, &val) != UNITS)
		return 0;
	switch (val)
	{
		case DTK_MICROSEC:
			return 1e-6;
		case DTK_MILLISEC:
			return 1e-3;
		case DTK_SECOND:
			return 1;
		case DTK_MINUTE:
			return SECS_PER_MINUTE;
		case DTK_HOUR:
			return SECS_PER_HOUR;
		case DTK_DAY:
			return SECS_PER_DAY;
		case DTK_WEEK:
			return 7.0 * SECS_PER_DAY;
		case DTK_MONTH:
			return SECS_PER_YEAR / MONTHS_PER_YEAR;
		case DTK_QUARTER:
			return SECS_PER_YEAR / 4;
		case DTK_YEAR:
			return SECS_PER_YEAR;
		case DTK_DECADE:
			return 10.0 * SECS_PER_YEAR;
		case DTK_CENTURY:
			return 100.0 * SECS_PER_YEAR;
		case DTK_MILLENNIUM:
			return 1000.0 * SECS_PER_YEAR;
		default:
			return 0;
	}
}

static bool
gs_is_time_type(Oid typid)
{
	return typid == TIMESTAMPOID || typid == TIMESTAMPTZOID || typid == DATEOID;
}

static bool
gs_is_number_type(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID ||
		typid == FLOAT4OID || typid == FLOAT8OID || typid == NUMERICOID;
}

/*
 * The function of n when n is a node of kind tag (T_FuncExpr or T_OpExpr)
 * calling it with nargs arguments, which *args is set to; InvalidOid
 * otherwise.
 */
static Oid
gs_call(Node *n, NodeTag tag, int nargs, List **args)
{
	if (n == NULL || nodeTag(n) != tag)
		return InvalidOid;
	if (tag == T_FuncExpr && list_length(((FuncExpr *) n)->args) == nargs)
	{
		*args = ((FuncExpr *) n)->args;
		return ((FuncExpr *) n)->funcid;
	}
	if (tag == T_OpExpr && list_length(((OpExpr *) n)->args) == nargs)
	{
		*args = ((OpExpr *) n)->args;
		return ((OpExpr *) n)->opfuncid;
	}
	return InvalidOid;
}

/*
 * The argument under n when n is a RelabelType or a call of one of funcs
 * with one argument; NULL otherwise.
 */
static Node *
gs_unwrap(Node *n, const Oid *funcs, int nfuncs)
{
	List	   *args;
	Oid			fn;

	if (n != NULL && IsA(n, RelabelType))
		return (Node *) ((RelabelType *) n)->arg;
	fn = gs_call(n, T_FuncExpr, 1, &args);
	for (int i = 0; OidIsValid(fn) && i < nfuncs; i++)
		if (fn == funcs[i])
			return linitial(args);
	return NULL;
}

/*
 * The time value under n when n moves every value by the same constant:
 * "+ interval" / "- interval" with a constant interval, AT TIME ZONE with a
 * constant zone (Metabase writes its week start and report time zone so;
 * a daylight-saving shift is an hour, nothing next to a range of buckets).
 * NULL otherwise.
 */
static Node *
gs_unshift(Node *n)
{
	List	   *args;

	switch (gs_call(n, T_OpExpr, 2, &args))
	{
		case F_TIMESTAMP_PL_INTERVAL:
		case F_TIMESTAMP_MI_INTERVAL:
		case F_TIMESTAMPTZ_PL_INTERVAL:
		case F_TIMESTAMPTZ_MI_INTERVAL:
		case F_DATE_PL_INTERVAL:
		case F_DATE_MI_INTERVAL:
			return IsA(lsecond(args), Const) ? linitial(args) : NULL;
	}
	switch (gs_call(n, T_FuncExpr, 2, &args))
	{
		case F_TIMEZONE_TEXT_TIMESTAMP:
		case F_TIMEZONE_TEXT_TIMESTAMPTZ:
		case F_TIMEZONE_INTERVAL_TIMESTAMP:
		case F_TIMEZONE_INTERVAL_TIMESTAMPTZ:
			return IsA(linitial(args), Const) ? lsecond(args) : NULL;
	}
	return NULL;
}

/*
 * The column under a time expression: a Var of a time type, possibly under
 * casts among the time types (which move a value by at most a day, nothing
 * next to a range of buckets) and constant shifts (gs_unshift).
 */
static Var *
gs_time_var(Node *n)
{
	static const Oid casts[] = {F_TIMESTAMP_TIMESTAMPTZ, F_TIMESTAMPTZ_TIMESTAMP,
	F_TIMESTAMP_DATE, F_TIMESTAMPTZ_DATE};
	Node	   *arg;

	while ((arg = gs_unwrap(n, casts, lengthof(casts))) != NULL ||
		   (arg = gs_unshift(n)) != NULL)
		n = arg;
	if (n == NULL || !IsA(n, Var) || ((Var *) n)->varlevelsup != 0 ||
		!gs_is_time_type(((Var *) n)->vartype))
		return NULL;
	return (Var *) n;
}

/*
 * Drop what maps buckets one to one: casts among the number types,
 * to_timestamp, "* n", shifts.  *scale is multiplied by each n dropped:
 * outside a bucket (floor(x / n) * n) it does not matter, inside one
 * (floor(x * 1000 / n)) it divides the bucket's width.
 */
static Node *
gs_strip_one_to_one(Node *n, double *scale)
{
	static const Oid maps[] = {F_NUMERIC_FLOAT8, F_FLOAT8_NUMERIC, F_TO_TIMESTAMP_FLOAT8,
		F_FLOAT8_INT2, F_FLOAT8_INT4, F_FLOAT8_INT8, F_FLOAT8_FLOAT4,
	F_NUMERIC_INT2, F_NUMERIC_INT4, F_NUMERIC_INT8};
	Node	   *arg;
	List	   *args;
	Oid			fn;
	double		k;

	for (;;)
	{
		if ((arg = gs_unwrap(n, maps, lengthof(maps))) != NULL ||
			(arg = gs_unshift(n)) != NULL)
			n = arg;
		else if (((fn = gs_call(n, T_OpExpr, 2, &args)) == F_NUMERIC_MUL || fn == F_FLOAT8MUL ||
				  fn == F_INT8MUL || fn == F_INT84MUL || fn == F_INT4MUL || fn == F_INT48MUL) &&
				 (k = gs_const_positive(lsecond(args))) > 0)
		{
			n = linitial(args);
			*scale *= k;
		}
		else
			return n;
	}
}

/*
 * A column of a number type (an epoch in seconds, milliseconds, ...), under
 * casts among the number types: Grafana's $__unixEpochGroup buckets one.
 */
static Var *
gs_number_var(Node *n, double *scale)
{
	n = gs_strip_one_to_one(n, scale);
	if (n == NULL || !IsA(n, Var) || ((Var *) n)->varlevelsup != 0 ||
		!gs_is_number_type(((Var *) n)->vartype))
		return NULL;
	return (Var *) n;
}

/* extract(epoch from col) / date_part('epoch', col): the column */
static Var *
gs_epoch_var(Node *n, double *scale)
{
	List	   *args;
	char	   *unit;

	switch (gs_call(gs_strip_one_to_one(n, scale), T_FuncExpr, 2, &args))
	{
		case F_EXTRACT_TEXT_TIMESTAMP:
		case F_EXTRACT_TEXT_TIMESTAMPTZ:
		case F_EXTRACT_TEXT_DATE:
		case F_DATE_PART_TEXT_TIMESTAMP:
		case F_DATE_PART_TEXT_TIMESTAMPTZ:
			unit = gs_const_unit(linitial(args));
			if (unit == NULL || strcmp(unit, "epoch") != 0)
				return NULL;
			return gs_time_var(lsecond(args));
		default:
			return NULL;
	}
}

/*
 * x / n for a positive constant n, x an epoch of a time column or a number
 * column, times scale (what the caller stripped around a numeric or float8
 * division): width n / scale, and / the factors inside x.  Only integer
 * division is a bucket by itself; numeric and float8 division are one under
 * floor() (integer_only false).
 */
static bool
gs_div_bucket(Node *n, double scale, bool integer_only, GsBucket *b)
{
	List	   *args;
	double		inner;

	switch (gs_call(n, T_OpExpr, 2, &args))
	{
		case F_NUMERIC_DIV:
		case F_FLOAT8DIV:
			if (integer_only)
				return false;
			break;
		case F_INT8DIV:
		case F_INT84DIV:
		case F_INT4DIV:
		case F_INT48DIV:
		case F_INT2DIV:
			scale = 1;			/* already whole buckets: a factor after it maps one to one */
			break;
		default:
			return false;
	}
	inner = scale;
	b->var = gs_epoch_var(linitial(args), &inner);
	if (b->var == NULL)
	{
		inner = scale;
		b->var = gs_number_var(linitial(args), &inner);
	}
	b->width = gs_const_positive(lsecond(args)) / inner;
	return b->width > 0 && b->var != NULL;
}

/* floor(x / n), floor(x / n * k): gs_div_bucket */
static bool
gs_floor_bucket(FuncExpr *f, GsBucket *b)
{
	double		scale = 1;
	Node	   *arg;

	if (f->funcid != F_FLOOR_NUMERIC && f->funcid != F_FLOOR_FLOAT8)
		return false;
	arg = gs_strip_one_to_one(linitial(f->args), &scale);
	return gs_div_bucket(arg, scale, false, b);
}

/* Is expr a recognised time bucket?  Fills *b. */
static bool
gs_bucket_of(Node *expr, GsBucket *b)
{
	FuncExpr   *f;
	double		outside = 1;	/* factors around a bucket: one to one */

	memset(b, 0, sizeof(*b));
	expr = gs_strip_one_to_one(expr, &outside);
	if (expr != NULL && IsA(expr, OpExpr))
		return gs_div_bucket(expr, 1, true, b);	/* epoch / 300 in integers */
	if (expr == NULL || !IsA(expr, FuncExpr))
		return false;
	f = (FuncExpr *) expr;
	switch (f->funcid)
	{
		case F_DATE_TRUNC_TEXT_TIMESTAMP:
		case F_DATE_TRUNC_TEXT_TIMESTAMPTZ:
		case F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT:
			b->width = gs_unit_seconds(gs_const_unit(linitial(f->args)));
			b->var = gs_time_var(lsecond(f->args));
			break;
		case F_DATE_BIN_INTERVAL_TIMESTAMP_TIMESTAMP:
		case F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ:
			{
				Node	   *w = linitial(f->args);

				if (IsA(w, Const) && !((Const *) w)->constisnull)
				{
					Interval   *iv = DatumGetIntervalP(((Const *) w)->constvalue);

					if (iv->month == 0)
						b->width = ((double) iv->day * USECS_PER_DAY + iv->time) / USECS_PER_SEC;
				}
				b->var = gs_time_var(lsecond(f->args));
				break;
			}
		case F_DATE_TIMESTAMP:
		case F_DATE_TIMESTAMPTZ:
			b->width = SECS_PER_DAY;
			b->var = gs_time_var(linitial(f->args));
			break;
		default:
			if (list_length(f->args) == 1)
				return gs_floor_bucket(f, b);
			return false;
	}
	return b->width > 0 && b->var != NULL;
}

/* ---------------------------------------------------------------------
 * The column's range
 * ------------------------------------------------------------------- */

/*
 * A bucketed column's value on the scale of its bucket width: a time in
 * seconds, a number as itself.  False for infinities, NaN, other types.
 */
static bool
gs_scale_value(Oid typid, Datum d, double *secs)
{
	if (gs_is_number_type(typid))
		return gs_number_value(typid, d, secs);
	if (typid == TIMESTAMPOID || typid == TIMESTAMPTZOID)
	{
		Timestamp	t = DatumGetTimestamp(d);

		if (TIMESTAMP_NOT_FINITE(t))
			return false;
		*secs = (double) t / USECS_PER_SEC;
		return true;
	}
	if (typid == DATEOID)
	{
		DateADT		v = DatumGetDateADT(d);

		if (DATE_NOT_FINITE(v))
			return false;
		*secs = (double) v * SECS_PER_DAY;
		return true;
	}
	return false;
}

/* widen [*lo, *hi] by the values of one statistics slot */
static void
gs_widen_by_slot(HeapTuple stats, int kind, Oid typid, double *lo, double *hi)
{
	AttStatsSlot sslot;

	if (!get_attstatsslot(&sslot, stats, kind, InvalidOid, ATTSTATSSLOT_VALUES))
		return;
	for (int i = 0; i < sslot.nvalues; i++)
	{
		double		s;

		if (gs_scale_value(typid, sslot.values[i], &s))
		{
			*lo = Min(*lo, s);
			*hi = Max(*hi, s);
		}
	}
	free_attstatsslot(&sslot);
}

/*
 * Narrow [*lo, *hi] by the rel's own "col < const" conditions (BETWEEN
 * included), as a dashboard's time filter writes them.  Only constants:
 * a generic plan's parameters leave the statistics' range.
 */
static void
gs_narrow_by_quals(PlannerInfo *root, Var *var, double *lo, double *hi)
{
	RelOptInfo *rel;
	Oid			opclass = GetDefaultOpClass(var->vartype, BTREE_AM_OID);
	Oid			opfamily;
	ListCell   *lc;

	if (!OidIsValid(opclass) || var->varno < 1 || var->varno >= root->simple_rel_array_size)
		return;
	rel = root->simple_rel_array[var->varno];
	if (rel == NULL || rel->reloptkind != RELOPT_BASEREL)
		return;
	opfamily = get_opclass_family(opclass);
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		OpExpr	   *op = (OpExpr *) ri->clause;
		Node	   *l,
				   *r;
		Const	   *c;
		int			strategy;
		double		s;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		l = strip_implicit_coercions(linitial(op->args));
		r = strip_implicit_coercions(lsecond(op->args));
		strategy = get_op_opfamily_strategy(op->opno, opfamily);
		if (equal(l, var) && IsA(r, Const))
			c = (Const *) r;
		else if (equal(r, var) && IsA(l, Const))
		{
			/* const op col: read it as col op' const */
			c = (Const *) l;
			if (strategy != 0)
				strategy = BTMaxStrategyNumber + 1 - strategy;	/* < to >, <= to >= */
		}
		else
			continue;
		if (c->constisnull || !gs_scale_value(c->consttype, c->constvalue, &s))
			continue;
		if (strategy == BTLessStrategyNumber || strategy == BTLessEqualStrategyNumber)
			*hi = Min(*hi, s);
		else if (strategy == BTGreaterStrategyNumber || strategy == BTGreaterEqualStrategyNumber)
			*lo = Max(*lo, s);
		else if (strategy == BTEqualStrategyNumber)
			*lo = *hi = s;
	}
}

/*
 * Groups of one bucket: the column's range over the width, at most its
 * number of distinct values.  0 when the column has no statistics.
 */
static double
gs_bucket_groups(PlannerInfo *root, const GsBucket *b)
{
	VariableStatData vardata;
	double		lo = INFINITY;
	double		hi = -INFINITY;
	double		ndistinct = 0;
	bool		isdefault = true;
	double		groups;

	examine_variable(root, (Node *) b->var, 0, &vardata);
	if (HeapTupleIsValid(vardata.statsTuple))
	{
		gs_widen_by_slot(vardata.statsTuple, STATISTIC_KIND_HISTOGRAM, b->var->vartype, &lo, &hi);
		gs_widen_by_slot(vardata.statsTuple, STATISTIC_KIND_MCV, b->var->vartype, &lo, &hi);
		ndistinct = get_variable_numdistinct(&vardata, &isdefault);
	}
	ReleaseVariableStats(vardata);
	if (lo > hi)
		return 0;				/* no statistics (or no finite values) */
	gs_narrow_by_quals(root, b->var, &lo, &hi);
	groups = (hi >= lo) ? floor((hi - lo) / b->width) + 1 : 1;
	if (!isdefault && ndistinct > 0)
		groups = Min(groups, ndistinct);
	return groups;
}

/*
 * The query's groups with the buckets estimated here and the other
 * grouping expressions by PostgreSQL; 0 when no bucket is recognised.
 */
static double
gs_estimate_groups(PlannerInfo *root, List *group_clause, double input_rows)
{
	List	   *others = NIL;
	double		groups = 1;
	bool		found = false;
	ListCell   *lc;

	foreach(lc, group_clause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Node	   *expr = get_sortgroupclause_expr(sgc, root->processed_tlist);
		GsBucket	b;
		double		g;

		if (gs_bucket_of(expr, &b) && (g = gs_bucket_groups(root, &b)) > 0)
		{
			groups *= g;
			found = true;
		}
		else
			others = lappend(others, expr);
	}
	if (!found)
		return 0;
	if (others != NIL)
		groups *= estimate_num_groups(root, others, input_rows, NULL, NULL);
	return clamp_row_est(Min(groups, input_rows));
}

/* ---------------------------------------------------------------------
 * The paths
 * ------------------------------------------------------------------- */

/* the gpuselect aggregates of the grouped target and HAVING */
typedef struct GsAggsSeen
{
	bool		any;			/* a gpuselect aggregate */
	bool		values;			/* one over a comparison type (GS_T_DATUM):
								 * no batch selects those (final_batch.c) */
} GsAggsSeen;

static bool
gs_gpuselect_aggs_walker(Node *node, void *context)
{
	GsAggsSeen *seen = (GsAggsSeen *) context;

	if (node == NULL)
		return false;
	if (IsA(node, Aggref) && gs_planner_is_gpuselect_func(((Aggref *) node)->aggfnoid))
	{
		Aggref	   *a = (Aggref *) node;
		GsTypeKind	kind = GS_T_DATUM;
		uint8		key_bytes;

		seen->any = true;
		if (a->aggargtypes == NIL ||
			!gs_type_kind_from_oid(linitial_oid(a->aggargtypes), &kind, &key_bytes, NULL) ||
			kind == GS_T_DATUM)
			seen->values = true;
		return false;
	}
	return expression_tree_walker(node, gs_gpuselect_aggs_walker, context);
}

/* the fewest groups any grouped path expects, before HAVING (AggPaths) */
static double
gs_planner_num_groups(RelOptInfo *grouped_rel, double input_rows)
{
	double		groups = input_rows;
	ListCell   *lc;

	foreach(lc, grouped_rel->pathlist)
	{
		Path	   *p = (Path *) lfirst(lc);

		groups = Min(groups, IsA(p, AggPath) ? ((AggPath *) p)->numGroups : p->rows);
	}
	return groups;
}

/* PostgreSQL's own estimate: the fewest rows any of its grouped paths gives */
static double
gs_planner_groups(RelOptInfo *grouped_rel, double input_rows)
{
	double		rows = input_rows;
	ListCell   *lc;

	foreach(lc, grouped_rel->pathlist)
		rows = Min(rows, ((Path *) lfirst(lc))->rows);
	return rows;
}

/*
 * The selection that gpuselect's final functions do, which PostgreSQL does
 * not charge (a final function costs its procost once per group), added
 * to the grouped paths so that they compare by it: about half a
 * cpu_operator_cost per input row (the CPU engine's passes cost a few ns
 * per key), in full on a sorted aggregation (one group after another in
 * one process), the backend's share 1 / (T + 1) on a hashed one, whose
 * groups a batch selects at once on T helper threads (final_batch.c).
 * Between a Finalize GroupAggregate over Gather Merge and a Finalize
 * HashAggregate over Gather, whose own costs differ by little, that
 * decides.  The pathlist is kept sorted by total cost, as add_path keeps it.
 */
static int
gs_cmp_total_cost(const ListCell *a, const ListCell *b)
{
	Cost		x = ((Path *) lfirst(a))->total_cost;
	Cost		y = ((Path *) lfirst(b))->total_cost;

	return x < y ? -1 : x > y;
}

/* add to a grouped path the selection it runs in its backend */
static void
gs_charge_path(Path *path, double input_rows)
{
	Cost		full = input_rows * cpu_operator_cost * 0.5;
	Cost		c;

	if (!IsA(path, AggPath))
		return;
	c = ((const AggPath *) path)->aggstrategy == AGG_HASHED ?
		full / (gs_final_batch_threads() + 1) : full;
	path->startup_cost += c;
	path->total_cost += c;
}

static void
gs_charge_paths(RelOptInfo *grouped_rel, double input_rows)
{
	ListCell   *lc;

	foreach(lc, grouped_rel->pathlist)
		gs_charge_path((Path *) lfirst(lc), input_rows);
	list_sort(grouped_rel->pathlist, gs_cmp_total_cost);
}

/* one of ours: charged like the planner's before add_path compares it */
static void
gs_add_charged_path(RelOptInfo *grouped_rel, Path *path, double input_rows, bool charge)
{
	if (charge)
		gs_charge_path(path, input_rows);
	add_path(grouped_rel, path);
}

static void
gs_add_serial_hash_path(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *grouped_rel,
						List *group_clause, List *having, double groups, bool charge)
{
	AggClauseCosts costs;
	Path	   *in = input_rel->cheapest_total_path;

	memset(&costs, 0, sizeof(costs));
	get_agg_clause_costs(root, AGGSPLIT_SIMPLE, &costs);
	gs_add_charged_path(grouped_rel, (Path *)
						create_agg_path(root, grouped_rel, in,
										grouped_rel->reltarget, AGG_HASHED, AGGSPLIT_SIMPLE,
										group_clause, having, &costs, groups),
						in->rows, charge);
}

static void
gs_add_partial_hash_path(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *grouped_rel,
						 GroupPathExtraData *extra, List *group_clause, double groups,
						 bool charge)
{
	/* the planner built this rel (and its partial target) before this hook */
	RelOptInfo *partial_rel = fetch_upper_rel(root, UPPERREL_PARTIAL_GROUP_AGG, grouped_rel->relids);
	Path	   *scan = linitial(input_rel->partial_pathlist);
	double		worker_groups = Min(groups, scan->rows);
	double		gathered;
	Path	   *path;

	path = (Path *) create_agg_path(root, partial_rel, scan, partial_rel->reltarget,
									AGG_HASHED, AGGSPLIT_INITIAL_SERIAL, group_clause, NIL,
									&extra->agg_partial_costs, worker_groups);
	gathered = worker_groups * Max(scan->parallel_workers, 1);
	path = (Path *) create_gather_path(root, partial_rel, path, partial_rel->reltarget,
									   NULL, &gathered);
	gs_add_charged_path(grouped_rel, (Path *)
						create_agg_path(root, grouped_rel, path, grouped_rel->reltarget,
										AGG_HASHED, AGGSPLIT_FINAL_DESERIAL, group_clause,
										(List *) extra->havingQual, &extra->agg_final_costs,
										groups),
						input_rel->cheapest_total_path->rows, charge);
}

/*
 * Hashed paths costed with the time-bucket estimate; true when the grouped
 * paths were charged their selection (gs_charge_paths).
 */
static bool
gs_time_bucket_paths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
					 GroupPathExtraData *extra)
{
	Query	   *parse = root->parse;
	List	   *group_clause;
	double		input_rows;
	double		groups;
	GsAggsSeen	seen;
	bool		batch;

	if (parse->groupingSets != NIL || IS_OTHER_REL(output_rel) ||
		extra->patype != PARTITIONWISE_AGGREGATE_NONE ||
		(extra->flags & GROUPING_CAN_USE_HASH) == 0 ||
		input_rel->cheapest_total_path == NULL)
		return false;
	group_clause = GS_PROCESSED_GROUP_CLAUSE(root);
	if (group_clause == NIL)
		return false;

	memset(&seen, 0, sizeof(seen));
	gs_gpuselect_aggs_walker((Node *) output_rel->reltarget->exprs, &seen);
	gs_gpuselect_aggs_walker(extra->havingQual, &seen);
	if (!seen.any)
		return false;
	batch = gs_final_batch_threads() > 0 && !seen.values;

	/*
	 * The groups: this file's estimate where it is under half the
	 * planner's; else, with a batch to gain (final_batch.c), the planner's
	 * own, for the same hashed paths, which the selection charge below
	 * may then favour.
	 */
	input_rows = input_rel->cheapest_total_path->rows;
	groups = gs_guc_estimate_time_buckets ? gs_estimate_groups(root, group_clause, input_rows) : 0;
	if (groups <= 0 || groups * 2 > gs_planner_groups(output_rel, input_rows))
	{
		if (!batch)
			return false;
		groups = gs_planner_groups(output_rel, input_rows);
	}

	/* the planner's paths first, then ours, each charged as it is added */
	if (batch)
		gs_charge_paths(output_rel, input_rows);
	gs_add_serial_hash_path(root, input_rel, output_rel, group_clause,
							(List *) extra->havingQual, groups, batch);
	if ((extra->flags & GROUPING_CAN_PARTIAL_AGG) != 0 && extra->partial_costs_set &&
		output_rel->consider_parallel && input_rel->partial_pathlist != NIL)
		gs_add_partial_hash_path(root, input_rel, output_rel, extra, group_clause, groups,
								 batch);
	return batch;
}

static void
gs_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
			   RelOptInfo *output_rel, void *extra_arg)
{
	GroupPathExtraData *extra = (GroupPathExtraData *) extra_arg;
	bool		charged;
	double		groups = 1;

	if (gs_prev_upper_paths_hook)
		gs_prev_upper_paths_hook(root, stage, input_rel, output_rel, extra_arg);
	if (stage != UPPERREL_GROUP_AGG || extra == NULL)
		return;
	charged = gs_time_bucket_paths(root, input_rel, output_rel, extra);
	/* the bulk scan's paths (planner_bulk_scan.c), with the groups estimated so far */
	if (GS_PROCESSED_GROUP_CLAUSE(root) != NIL && input_rel->cheapest_total_path != NULL)
		groups = gs_planner_num_groups(output_rel, input_rel->cheapest_total_path->rows);
	gs_bulk_scan_add_paths(root, input_rel, output_rel, extra, groups, charged,
						   gs_add_charged_path);
}

void
gs_planner_groups_install_hook(void)
{
	gs_prev_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = gs_upper_paths;
}
