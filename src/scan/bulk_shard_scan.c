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
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "aggs/citus_exchange.h"
#include "base/types.h"
#include "scan/bulk_fetch.h"

PG_FUNCTION_INFO_V1(gs_citus_shard_histogram);
PG_FUNCTION_INFO_V1(gs_citus_shard_keys);

/* what the shards' scans count or collect into */
typedef struct GsShardScan
{
	const int64 *t;				/* the thresholds (or bounds), sorted */
	int			nt;
	bool		keys;			/* collect the keys of odd buckets, else count */
	int64	   *counts;			/* nt + 1 buckets */
	int64	   *out;			/* keys: the collected ones */
	int64		nout;
	int64		maxout;
	GsTypeKind	kind;
	GsBulkColumn column;
	TupleDesc	desc;
	const char *quals;			/* the WHERE, SQL, or "" */
	ExprState  *qual;			/* ... on the shard being read, or NULL */
	ExprContext *econtext;
	TupleTableSlot *slot;
} GsShardScan;

/*
 * How many of the sorted t[0 .. nt) are at most key: gs_citus_bucket's
 * rule.  Without branches on the data (the base moves by a conditional
 * add): a bucket search on random keys mispredicted about half its steps.
 */
static pg_attribute_always_inline int
gs_shard_bucket(const int64 *t, int nt, int64 key)
{
	const int64 *base = t;
	int			len = nt;

	if (len == 0)
		return 0;
	while (len > 1)
	{
		int			half = len / 2;

		base = base[half] <= key ? base + half : base;
		len -= half;
	}
	return (int) (base - t) + (*base <= key);
}

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
	if (h->qual != NULL)
	{
		bool		pass;

		ExecStoreHeapTuple(tup, h->slot, false);
		h->econtext->ecxt_scantuple = h->slot;
		pass = ExecQual(h->qual, h->econtext);
		ResetExprContext(h->econtext);
		if (!pass)
			return;
	}
	key = (int64) (gs_key_from_datum(h->kind, d) ^ GS_X_SIGN);
	b = gs_shard_bucket(h->t, h->nt, key);
	if (!h->keys)
		h->counts[b]++;
	else if (b & 1)
		gs_shard_keep(h, key);
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
		gs_shard_scan_tuple(h, &tup);
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

/* the thresholds: a one-dimensional int8 array without NULLs, sorted */
static void
gs_shard_scan_thresholds(ArrayType *t, GsShardScan *h, const char *fn)
{
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
	for (int i = 1; i < h->nt; i++)
		if (h->t[i] < h->t[i - 1])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: thresholds must be sorted", fn)));
}

/*
 * An error while the quals are parsed points into their statement, not the
 * caller's (as SPI reports an error in the statement it runs).
 */
static void
gs_shard_scan_qual_error(void *arg)
{
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery((const char *) arg);
	}
	errcontext("the WHERE of a Citus exchange's shard scan");
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
	char	   *sql;
	List	   *raw;
	Query	   *q;
	Bitmapset  *attrs = NULL;
	int			a = -1;
	Expr	   *expr;
	ErrorContextCallback errcb;

	if (quals[0] == '\0')
		return NULL;
	sql = psprintf("SELECT FROM ONLY %s WHERE %s",
				   quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											  RelationGetRelationName(rel)), quals);
	errcb.callback = gs_shard_scan_qual_error;
	errcb.arg = sql;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: quals must be one condition", fn)));
	q = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql, NULL, 0, NULL);
	error_context_stack = errcb.previous;
	if (q->commandType != CMD_SELECT || q->hasSubLinks || q->hasAggs || q->hasWindowFuncs ||
		q->hasTargetSRFs || q->hasRecursive || q->hasModifyingCTE || q->cteList != NIL ||
		list_length(q->rtable) != 1 || q->jointree->quals == NULL || q->groupClause != NIL ||
		q->havingQual != NULL || q->sortClause != NIL || q->distinctClause != NIL ||
		q->limitCount != NULL || q->limitOffset != NULL || q->rowMarks != NIL ||
		q->setOperations != NULL || q->targetList != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: quals must be one condition on the table's columns", fn)));
	pull_varattnos(q->jointree->quals, 1, &attrs);
	while ((a = bms_next_member(attrs, a)) >= 0)
	{
		AttrNumber	attno = a + FirstLowInvalidHeapAttributeNumber;

		if (attno <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s: quals may not use system columns or whole rows", fn)));
		gs_shard_scan_check_column(rel, attno);
	}
	expr = expression_planner((Expr *) q->jointree->quals);
	return ExecPrepareQual(make_ands_implicit(expr), estate);
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
	if (h->qual != NULL)
	{
		h->econtext = CreateExprContext(estate);
		h->slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
	}
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);

	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		HeapScanDesc hs = (HeapScanDesc) scan;

		/* without page mode (no MVCC snapshot) heap_getnext goes row by row */
		if (hs->rs_base.rs_flags & SO_ALLOW_PAGEMODE)
			gs_shard_scan_page(h, hs);
		else
			gs_shard_scan_tuple(h, tup);
		CHECK_FOR_INTERRUPTS();
	}
	table_endscan(scan);
	if (h->slot != NULL)
		ExecDropSingleTupleTableSlot(h->slot);
	h->slot = NULL;
	h->qual = NULL;
	FreeExecutorState(estate);
	table_close(rel, AccessShareLock);
}

/* every shard of the regclass[] argument 0 read into h (its thresholds set) */
static void
gs_shard_scan_all(FunctionCallInfo fcinfo, GsShardScan *h, const char *fn)
{
	ArrayType  *shards = PG_GETARG_ARRAYTYPE_P(0);
	char	   *col = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Datum	   *rels;
	bool	   *nulls;
	int			nrels;

	h->quals = text_to_cstring(PG_GETARG_TEXT_PP(3));

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
static ArrayType *
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
	gs_shard_scan_all(fcinfo, &h, "gs_citus_shard_histogram");
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
	gs_shard_scan_all(fcinfo, &h, "gs_citus_shard_keys");
	PG_RETURN_ARRAYTYPE_P(gs_shard_int8_array(h.out, h.nout));
}
