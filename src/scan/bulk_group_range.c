/*
 * bulk_group_range.c — which GROUP BY expressions have a cached range in
 * the bulk scan's groups (bulk_groups.c's header says what the range is):
 * the non-decreasing functions of one column that dashboards group by.
 * The planner asks it of a query's GROUP BY (planner_bulk_scan_shape.c),
 * the Citus shard scans of the expression they plan on each shard
 * (bulk_shard_scan.c).
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "scan/bulk_groups.h"

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


bool
gs_bulk_range_column(Node *e, Index relid, AttrNumber *attno, int *zones)
{
	Var		   *var = NULL;

	*zones = 0;
	if (IsA(e, Var) || !gs_bulk_monotone(e, relid, &var, zones))
		return false;
	*attno = var->varattno;
	return true;
}
