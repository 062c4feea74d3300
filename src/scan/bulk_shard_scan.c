/*
 * bulk_shard_scan.c — the Citus exchange's shard scans: its first counts
 * round and its gather, on the shards one connection reads (issue 34;
 * docs/citus.md, "The rounds by shard scans"):
 *
 *   gs_citus_shard_histogram(shards regclass[], col text, t int8[],
 *                            quals text) -> int8[]
 *       element b + 1 counts the shards' visible rows whose column col is
 *       not NULL and whose key (gs_citus_key's) has exactly b of the sorted
 *       thresholds t at or below it -- what gs_citus_histogram(
 *       gs_citus_bucket(col, t)) answers for the same rows, one element per
 *       bucket (length(t) + 1 of them, trailing zeros kept), summed over
 *       the shards;
 *   gs_citus_shard_keys(shards regclass[], col text, bounds int8[],
 *                       quals text) -> int8[]
 *       the keys of those rows with an odd number of the sorted bounds at
 *       or below them -- the rows of the gather's condition
 *       gs_citus_bucket(col, bounds) % 2 = 1 (the wanted buckets' ranges
 *       lo1, hi1, lo2, hi2, ...), in no order.
 *
 *   gs_citus_shard_group_histogram(shards, col, t, gexpr, quals)
 *   gs_citus_shard_group_keys(shards, col, bounds, gexpr, groups, offsets,
 *                             quals)
 *       the same grouped by gexpr (an integer, date or timestamp expression
 *       of the columns, evaluated in this connection's time zone, as Citus
 *       evaluates a GROUP BY on the workers): per group its
 *       counts of the common thresholds, or the keys inside its own ranges;
 *       and gs_citus_shard_group_spool / _spool_keys, the same with the
 *       counted keys kept in a spool for the gather (scan/shard_spool.c).
 *       Their calls are bulk_shard_groups.c's (its comments say how the
 *       answers are laid out; the coordinator: aggs/citus_shard_groups.c);
 *       their rows are read by this file's page loop.
 *
 * Only the rows that satisfy quals count: the query's WHERE as SQL over the
 * table's columns ('' for none), parsed against each shard (its columns by
 * name), planned as an expression and evaluated on each visible tuple
 * (gs_shard_scan_qual).  One condition only: no sub-select, no system
 * column, no other clause.
 *
 * The coordinator (aggs/citus_shard_round.c) runs them on every worker,
 * a few shards a connection, and adds the arrays up, where that is safe
 * (that file says when).
 *
 * Why here and not in citus_keys.c: they are scans.  The rows are read as
 * the bulk scan reads them (scan/bulk_scan.c's header says why that is a
 * SeqScan's visibility): heapam's page-mode scan under the statement's
 * snapshot, then the page's visible tuples read directly (bulk_fetch.h),
 * with no slot, no executor and no fmgr call per row -- where a round as
 * a distributed query goes through the executor and, for the counts,
 * Citus's worker_partial_agg wrapper, which builds an FmgrInfo and calls
 * the transition function every row.
 *
 * What they refuse (a clean ERROR, so that the coordinator falls back to
 * the distributed query): anything but a heap table, a table row-level
 * security applies to for this user (its rows would not be the policy's),
 * a column this user may not read, a column without a gpuselect key.  The
 * column is found by name on each shard: a shard created after a column
 * was dropped has other attribute numbers than the table's older shards.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/typcache.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "aggs/citus_exchange.h"
#include "base/types.h"
#include "scan/bulk_fetch.h"
#include "scan/bulk_groups.h"
#include "scan/bulk_shard_scan.h"
#include "scan/shard_spool.h"

PG_FUNCTION_INFO_V1(gs_citus_shard_histogram);
PG_FUNCTION_INFO_V1(gs_citus_shard_keys);



/* a key collected (keys mode) */
static void
gs_shard_keep(GsShardScan *h, int64 key)
{
	if (h->nout == h->maxout)
	{
		/* an int8[] holds at most MaxArraySize */
		if (h->maxout >= (int64) MaxArraySize)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("gs_citus_shard_keys: more than %lld keys",
							(long long) h->maxout)));
		h->maxout = Min(2 * h->maxout, (int64) MaxArraySize);
		h->out = (int64 *) repalloc(h->out, sizeof(int64) * h->maxout);
	}
	h->out[h->nout++] = key;
}

/* the tuple satisfies the quals (there are some) */
static bool
gs_shard_scan_passes(GsShardScan *h, HeapTuple tup)
{
	bool		pass;

	ExecStoreHeapTuple(tup, h->slot, false);
	h->econtext->ecxt_scantuple = h->slot;
	pass = ExecQual(h->qual, h->econtext);
	ResetExprContext(h->econtext);
	return pass;
}

/* one tuple: its column's key into its bucket, or kept */
static pg_attribute_always_inline void
gs_shard_scan_tuple(GsShardScan *h, HeapTuple tup)
{
	bool		isnull;
	Datum		d = gs_bulk_fetch(&h->column, tup, h->desc, &isnull);
	int64		key;
	int			b;

	if (isnull)
		return;
	if (h->qual != NULL && !gs_shard_scan_passes(h, tup))
		return;
	key = (int64) (gs_key_from_datum(h->kind, d) ^ GS_X_SIGN);
	b = gs_shard_bucket(h->t, h->nt, key);
	if (!h->keys)
		h->counts[b]++;
	else if (b & 1)
		gs_shard_keep(h, key);
}

/* a key kept for a group (group keys mode) */
void
gs_shard_group_keep(GsShardScan *h, GsShardGroup *g, int64 key)
{
	if (g->nkeys == g->maxkeys)
	{
		if (g->maxkeys >= (int64) MaxArraySize)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("gs_citus_shard_group_keys: more than %lld keys in a group",
							(long long) g->maxkeys)));
		g->maxkeys = Min(Max(64, 2 * g->maxkeys), (int64) MaxArraySize);
		g->keys = g->keys == NULL ? (int64 *) MemoryContextAlloc(h->cxt, sizeof(int64) * g->maxkeys) :
			(int64 *) repalloc(g->keys, sizeof(int64) * g->maxkeys);
	}
	g->keys[g->nkeys++] = key;
}

/*
 * The group of a tuple that passed the quals, found as the bulk scan finds
 * it (bulk_groups.c: most rows by the time column's cached ranges, with a
 * few comparisons).  A row makes its group present even where its value
 * is NULL (the built-in's GROUP BY has a row for it, with a NULL answer).
 */
static pg_attribute_always_inline GsShardGroup *
gs_shard_group_of(GsShardScan *h, HeapTuple tup)
{
	GsShardGroup *g = (GsShardGroup *) gs_bulk_groups_of(h->groups, tup, h->econtext)->extra;

	/* (only a row whose group was evaluated allocated anything) */
	if (!h->econtext->ecxt_per_tuple_memory->isReset)
		ResetExprContext(h->econtext);
	return g;
}

/* counts: one tuple's key into its group's bucket of the common thresholds */
static void
gs_shard_group_count_tuple(GsShardScan *h, HeapTuple tup)
{
	GsShardGroup *g;
	bool		isnull;
	Datum		d;
	int64		key;

	if (h->qual != NULL && !gs_shard_scan_passes(h, tup))
		return;
	g = gs_shard_group_of(h, tup);
	d = gs_bulk_fetch(&h->column, tup, h->desc, &isnull);
	if (isnull)
		return;
	key = (int64) (gs_key_from_datum(h->kind, d) ^ GS_X_SIGN);
	g->counts[gs_shard_bucket(h->t, h->nt, key)]++;
	if (h->spool != NULL)
		gs_spool_put(h->spool, g->index, key);
}

/*
 * keys: one tuple's key kept where it is inside one of its group's own
 * ranges.  The key is tested against the union of every group's ranges
 * first, so that most rows (outside every range) cost no group lookup and
 * no qual; so the rows of a group the coordinator does not know are
 * counted (h->unknown) only inside that union.
 */
static void
gs_shard_group_keys_tuple(GsShardScan *h, HeapTuple tup)
{
	bool		isnull;
	Datum		d = gs_bulk_fetch(&h->column, tup, h->desc, &isnull);
	int64		key;

	if (isnull)
		return;
	key = (int64) (gs_key_from_datum(h->kind, d) ^ GS_X_SIGN);
	if (!(gs_shard_bucket(h->ubounds, h->nubounds, key) & 1))
		return;
	if (h->qual != NULL && !gs_shard_scan_passes(h, tup))
		return;
	gs_shard_group_take(h, gs_shard_group_of(h, tup), key);
}

/* one tuple, whatever the call asks */
static pg_attribute_always_inline void
gs_shard_scan_row(GsShardScan *h, HeapTuple tup)
{
	if (h->gexpr != NULL && h->keys)
		gs_shard_group_keys_tuple(h, tup);
	else if (h->gexpr != NULL)
		gs_shard_group_count_tuple(h, tup);
	else
		gs_shard_scan_tuple(h, tup);
}

/*
 * The page heap_getnext has just returned the first visible tuple of, that
 * one included, then the page marked done -- bulk_scan.c's gs_bulk_page:
 * page mode listed the visible tuples under the buffer's share lock, and
 * the pin heap_getnext keeps holds them.
 */
static void
gs_shard_scan_page(GsShardScan *h, HeapScanDesc hs)
{
	Page		page = BufferGetPage(hs->rs_cbuf);
	int			ntuples = (int) hs->rs_ntuples;
	HeapTupleData tup;

	tup.t_tableOid = RelationGetRelid(hs->rs_base.rs_rd);
	for (int i = (int) hs->rs_cindex; i < ntuples; i++)
	{
		ItemId		lp = PageGetItemId(page, hs->rs_vistuples[i]);

		ItemPointerSet(&tup.t_self, BufferGetBlockNumber(hs->rs_cbuf), hs->rs_vistuples[i]);

		if (i + 4 < ntuples)
			gs_bulk_prefetch_tuple(page, hs->rs_vistuples[i + 4]);
		tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
		tup.t_len = ItemIdGetLength(lp);
		gs_shard_scan_row(h, &tup);
	}
	/* pg_stat's seq_tup_read, as heap_getnext counts each tuple it returns */
	GS_PGSTAT_COUNT_TUPLES_RETURNED(hs->rs_base.rs_rd, ntuples - (int) hs->rs_cindex - 1);
	hs->rs_cindex = ntuples - 1;
}

/*
 * This user may read column attno of rel (the table, or the column).
 */
static void
gs_shard_scan_check_column(Relation rel, AttrNumber attno)
{
	if (pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck(RelationGetRelid(rel), attno, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for column %s of table %s",
						NameStr(TupleDescAttr(RelationGetDescr(rel), attno - 1)->attname),
						RelationGetRelationName(rel))));
}

/* a shard opened, checked (see the header), and its column found by name */
static Relation
gs_shard_scan_open(Oid relid, const char *col, GsShardScan *h, const char *fn)
{
	Relation	rel;
	AttrNumber	attno;
	Oid			typid;
	uint8		kb;
	bool		num;

	rel = table_open(relid, AccessShareLock);
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_tableam != GetHeapamTableAmRoutine())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: \"%s\" is not a heap table", fn, RelationGetRelationName(rel))));
	/* the policies' rows would not be these: the distributed query applies them */
	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: row-level security applies to \"%s\"", fn,
						RelationGetRelationName(rel))));
	attno = get_attnum(relid, col);
	if (attno == InvalidAttrNumber || attno < 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("%s: column \"%s\" of \"%s\" does not exist",
						fn, col, RelationGetRelationName(rel))));
	gs_shard_scan_check_column(rel, attno);
	typid = getBaseType(TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid);
	if (!gs_type_kind_from_oid(typid, &h->kind, &kb, &num) || h->kind == GS_T_DATUM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: type %s has no gpuselect key", fn, format_type_be(typid))));
	h->desc = RelationGetDescr(rel);
	gs_bulk_column_init(&h->column, h->desc, attno);
	return rel;
}

/* the thresholds: a one-dimensional int8 array without NULLs, sorted
 * (the group keys': sorted within each group's slice, checked there) */
void
gs_shard_scan_thresholds(ArrayType *t, GsShardScan *h, const char *fn)
{
	bool		slices = h->keys && h->gpoints != NULL;

	if (ARR_ELEMTYPE(t) != INT8OID || ARR_NDIM(t) > 1 || ARR_HASNULL(t))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: thresholds must be a one-dimensional int8 array without NULLs", fn)));
	h->t = (const int64 *) ARR_DATA_PTR(t);
	h->nt = ArrayGetNItems(ARR_NDIM(t), ARR_DIMS(t));
	if (h->nt + 1 > GS_X_HIST_MAX_BUCKETS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: more than %d buckets", fn, GS_X_HIST_MAX_BUCKETS)));
	for (int i = 1; i < h->nt && !slices; i++)
		if (h->t[i] < h->t[i - 1])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: thresholds must be sorted", fn)));
}

/*
 * An error while the quals (or the GROUP BY expression) are parsed points
 * into their statement, not the caller's (as SPI reports an error in the
 * statement it runs).
 */
typedef struct GsShardParse
{
	const char *sql;
	const char *what;			/* "WHERE", "GROUP BY" */
} GsShardParse;

static void
gs_shard_scan_parse_error(void *arg)
{
	GsShardParse *p = (GsShardParse *) arg;
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery(p->sql);
	}
	errcontext("the %s of a Citus exchange's shard scan", p->what);
}

/* "SELECT <target> FROM ONLY shard <tail>" parsed and analyzed, one statement */
static Query *
gs_shard_scan_analyze(Relation rel, const char *target, const char *tail, const char *what,
					  const char *fn)
{
	GsShardParse p;
	ErrorContextCallback errcb;
	List	   *raw;
	Query	   *q;

	p.sql = psprintf("SELECT %s%sFROM ONLY %s%s%s", target, target[0] ? " " : "",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)), tail[0] ? " " : "", tail);
	p.what = what;
	errcb.callback = gs_shard_scan_parse_error;
	errcb.arg = &p;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	raw = raw_parser(p.sql, RAW_PARSE_DEFAULT);
	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: %s must be one %s", fn, strcmp(what, "WHERE") == 0 ? "quals" : "the group",
						strcmp(what, "WHERE") == 0 ? "condition" : "expression")));
	q = parse_analyze_fixedparams(linitial_node(RawStmt, raw), p.sql, NULL, 0, NULL);
	error_context_stack = errcb.previous;
	return q;
}

/* a plain query over the one shard: no sub-select, aggregate, clause ... */
static bool
gs_shard_scan_plain(const Query *q)
{
	return q->commandType == CMD_SELECT && !q->hasSubLinks && !q->hasAggs && !q->hasWindowFuncs &&
		!q->hasTargetSRFs && !q->hasRecursive && !q->hasModifyingCTE && q->cteList == NIL &&
		list_length(q->rtable) == 1 && q->groupClause == NIL && q->havingQual == NULL &&
		q->sortClause == NIL && q->distinctClause == NIL && q->limitCount == NULL &&
		q->limitOffset == NULL && q->rowMarks == NIL && q->setOperations == NULL;
}

/* the columns of n are plain ones of rel that this user may read */
static void
gs_shard_scan_check_vars(Relation rel, Node *n, const char *what, const char *fn)
{
	Bitmapset  *attrs = NULL;
	int			a = -1;

	pull_varattnos(n, 1, &attrs);
	while ((a = bms_next_member(attrs, a)) >= 0)
	{
		AttrNumber	attno = a + FirstLowInvalidHeapAttributeNumber;

		if (attno <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s: %s may not use system columns or whole rows", fn,
							strcmp(what, "WHERE") == 0 ? "quals" : "the group")));
		gs_shard_scan_check_column(rel, attno);
	}
}

/*
 * The quals (SQL over the table's columns) as a qual on this shard's
 * tuples, or NULL for "": parsed as "SELECT FROM ONLY shard WHERE quals"
 * (the shard's columns by name), then planned as an expression, as a
 * SeqScan's qual would be.  Anything but one condition on plain columns the
 * user may read is refused.
 */
static ExprState *
gs_shard_scan_qual(Relation rel, const char *quals, EState *estate, const char *fn)
{
	Query	   *q;
	Expr	   *expr;

	if (quals[0] == '\0')
		return NULL;
	q = gs_shard_scan_analyze(rel, "", psprintf("WHERE %s", quals), "WHERE", fn);
	if (!gs_shard_scan_plain(q) || q->jointree->quals == NULL || q->targetList != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: quals must be one condition on the table's columns", fn)));
	gs_shard_scan_check_vars(rel, q->jointree->quals, "WHERE", fn);
	expr = expression_planner((Expr *) q->jointree->quals);
	return ExecPrepareQual(make_ands_implicit(expr), estate);
}

/*
 * The GROUP BY expression on this shard, planned: parsed as
 * "SELECT (gexpr) FROM ONLY shard", one expression of the shard's columns
 * the user may read, of an integer, date or timestamp type, with no
 * volatile function (it is evaluated once a row, or not at all where the
 * cached range answers).
 */
static Expr *
gs_shard_scan_group_expr(Relation rel, const char *gexpr, const char *fn, Oid *typid)
{
	Query	   *q = gs_shard_scan_analyze(rel, psprintf("(%s)", gexpr), "", "GROUP BY", fn);
	Expr	   *expr;

	if (!gs_shard_scan_plain(q) || q->jointree->quals != NULL || list_length(q->targetList) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: the group must be one expression of the table's columns", fn)));
	expr = linitial_node(TargetEntry, q->targetList)->expr;
	gs_shard_scan_check_vars(rel, (Node *) expr, "GROUP BY", fn);
	if (contain_volatile_functions((Node *) expr))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: the group may not be volatile", fn)));
	*typid = exprType((Node *) expr);
	if (!gs_int_point_type(*typid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: a group of type %s", fn, format_type_be(*typid))));
	return expression_planner(expr);
}

/* the call's group of these values (created: its counts, or its ranges) */
GsShardGroup *
gs_shard_group_find(GsShardScan *h, bool isnull, int64 point)
{
	GsShardGroupKey key;
	GsShardGroup *g;
	bool		found;

	memset(&key, 0, sizeof(key));
	key.isnull = isnull;
	key.point = isnull ? 0 : point;
	g = (GsShardGroup *) hash_search(h->ghash, &key, HASH_ENTER, &found);
	if (found)
		return g;
	g->slot = 0;
	g->counts = NULL;
	g->keys = NULL;
	g->nkeys = g->maxkeys = 0;
	g->bounds = NULL;
	g->nbounds = 0;
	if (!h->keys)
	{
		if ((int64) (h->ng + 1) * (h->nt + 1) > GS_X_HIST_MAX_BUCKETS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("gs_citus_shard_group_histogram: more than %d counts",
							GS_X_HIST_MAX_BUCKETS)));
		g->counts = (int64 *) MemoryContextAllocZero(h->cxt, sizeof(int64) * (h->nt + 1));
	}
	else if (!isnull)
	{
		/* its slot: 1 + its place among the coordinator's groups, or none */
		int			lo = 0,
					hi = h->ngpoints;

		while (lo < hi)
		{
			int			mid = lo + (hi - lo) / 2;

			if (h->gpoints[mid] < point)
				lo = mid + 1;
			else
				hi = mid;
		}
		g->slot = lo < h->ngpoints && h->gpoints[lo] == point ? lo + 1 : -1;
	}
	if (h->keys && g->slot >= 0)
	{
		g->bounds = h->t + h->goff[g->slot];
		g->nbounds = (int) (h->goff[g->slot + 1] - h->goff[g->slot]);
	}
	if (h->ng == h->maxg)
	{
		h->maxg = Max(64, 2 * h->maxg);
		h->glist = h->glist == NULL ?
			(GsShardGroup **) MemoryContextAlloc(h->cxt, sizeof(GsShardGroup *) * h->maxg) :
			(GsShardGroup **) repalloc(h->glist, sizeof(GsShardGroup *) * h->maxg);
	}
	g->index = h->ng;
	h->glist[h->ng++] = g;
	return g;
}

/* bulk_groups.c's new group on a shard: the call's group of its value */
static GsBulkGroup *
gs_shard_new_group(void *arg, const Datum *keys, const bool *nulls)
{
	GsShardScan *h = (GsShardScan *) arg;
	GsBulkGroup *bg = (GsBulkGroup *) palloc0(offsetof(GsBulkGroup, states));

	bg->extra = gs_shard_group_find(h, nulls[0], nulls[0] ? 0 : gs_int_point(h->gtype, keys[0]));
	return bg;
}

/* the shard's groups: its GROUP BY expression, with a cached range where it has one */
static void
gs_shard_scan_groups(GsShardScan *h, Relation rel, EState *estate, const char *fn)
{
	Oid			typid;
	Expr	   *expr = gs_shard_scan_group_expr(rel, h->gexpr, fn, &typid);
	AttrNumber	attno = 0;
	int			zones = 0;

	if (OidIsValid(h->gtype) && typid != h->gtype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: the group is of type %s on one shard and %s on another", fn,
						format_type_be(h->gtype), format_type_be(typid))));
	h->gtype = typid;
	if (!gs_bulk_range_column((Node *) expr, 1, &attno, &zones))
		attno = 0;
	h->groups = gs_bulk_groups_create(CurrentMemoryContext, estate, list_make1(expr),
									  list_make1(makeInteger((int) lookup_type_cache(typid, TYPECACHE_EQ_OPR)->eq_opr)),
									  0, attno, zones, RelationGetDescr(rel), gs_shard_new_group, h);
	/* the shards before found the same ranges (one expression, the same column type) */
	if (h->prev_groups != NULL)
		gs_bulk_groups_adopt_ranges(h->groups, h->prev_groups);
}

/* one shard read into h under the statement's snapshot, as a SeqScan would take it */
static void
gs_shard_scan_one(GsShardScan *h, Oid relid, const char *col, const char *fn)
{
	Relation	rel = gs_shard_scan_open(relid, col, h, fn);
	EState	   *estate = CreateExecutorState();
	TableScanDesc scan;
	HeapTuple	tup;

	h->qual = gs_shard_scan_qual(rel, h->quals, estate, fn);
	if (h->qual != NULL || h->gexpr != NULL)
		h->econtext = CreateExprContext(estate);
	if (h->qual != NULL)
		h->slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
	if (h->gexpr != NULL)
		gs_shard_scan_groups(h, rel, estate, fn);
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);

	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		HeapScanDesc hs = (HeapScanDesc) scan;

		/* without page mode (no MVCC snapshot) heap_getnext goes row by row */
		if (hs->rs_base.rs_flags & SO_ALLOW_PAGEMODE)
			gs_shard_scan_page(h, hs);
		else
			gs_shard_scan_row(h, tup);
		CHECK_FOR_INTERRUPTS();
	}
	table_endscan(scan);
	if (h->slot != NULL)
		ExecDropSingleTupleTableSlot(h->slot);
	h->slot = NULL;
	h->qual = NULL;
	h->prev_groups = h->groups; /* (in the call's memory: its ranges for the next shard) */
	h->groups = NULL;
	h->econtext = NULL;
	/* the groups' slots (they pin the shard's tuple descriptor) */
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	table_close(rel, AccessShareLock);
}

/* every shard of the regclass[] argument 0 read into h (its thresholds set), the quals argument quals_arg */
void
gs_shard_scan_all(FunctionCallInfo fcinfo, GsShardScan *h, int quals_arg, const char *fn)
{
	ArrayType  *shards = PG_GETARG_ARRAYTYPE_P(0);
	char	   *col = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Datum	   *rels;
	bool	   *nulls;
	int			nrels;

	h->quals = text_to_cstring(PG_GETARG_TEXT_PP(quals_arg));

	if (ARR_ELEMTYPE(shards) != REGCLASSOID || ARR_NDIM(shards) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: shards must be a one-dimensional regclass array", fn)));
	deconstruct_array(shards, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT, &rels, &nulls, &nrels);
	for (int i = 0; i < nrels; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: a shard is NULL", fn)));
		gs_shard_scan_one(h, DatumGetObjectId(rels[i]), col, fn);
	}
}

/* an int8[] of v[0 .. n) */
ArrayType *
gs_shard_int8_array(const int64 *v, int64 n)
{
	Datum	   *out = (Datum *) palloc(sizeof(Datum) * Max(n, 1));

	for (int64 i = 0; i < n; i++)
		out[i] = Int64GetDatum(v[i]);
	return construct_array(out, (int) n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

Datum
gs_citus_shard_histogram(PG_FUNCTION_ARGS)
{
	GsShardScan h;

	memset(&h, 0, sizeof(h));
	gs_shard_scan_thresholds(PG_GETARG_ARRAYTYPE_P(2), &h, "gs_citus_shard_histogram");
	h.counts = (int64 *) palloc0(sizeof(int64) * (h.nt + 1));
	gs_shard_scan_all(fcinfo, &h, 3, "gs_citus_shard_histogram");
	PG_RETURN_ARRAYTYPE_P(gs_shard_int8_array(h.counts, h.nt + 1));
}

Datum
gs_citus_shard_keys(PG_FUNCTION_ARGS)
{
	GsShardScan h;

	memset(&h, 0, sizeof(h));
	h.keys = true;
	gs_shard_scan_thresholds(PG_GETARG_ARRAYTYPE_P(2), &h, "gs_citus_shard_keys");
	h.maxout = 1024;
	h.out = (int64 *) palloc(sizeof(int64) * h.maxout);
	gs_shard_scan_all(fcinfo, &h, 3, "gs_citus_shard_keys");
	PG_RETURN_ARRAYTYPE_P(gs_shard_int8_array(h.out, h.nout));
}
