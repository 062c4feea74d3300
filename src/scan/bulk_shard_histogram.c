/*
 * bulk_shard_histogram.c — the Citus exchange's first counts round on one
 * shard, as the bulk scan reads a table (issue 34; docs/citus.md, "The
 * counts round by shard scans"):
 *
 *   gs_citus_shard_histogram(shard regclass, col text, t int8[]) -> int8[]
 *
 * element b + 1 of the result counts the shard's visible rows whose column
 * col is not NULL and whose key (gs_citus_key's) has exactly b of the
 * sorted thresholds t at or below it -- what gs_citus_histogram(
 * gs_citus_bucket(col, t)) answers for the same rows, one element per
 * bucket (length(t) + 1 of them, trailing zeros kept).  The coordinator
 * (aggs/citus_exchange.c) runs it on every shard through Citus's
 * run_command_on_shards and adds the arrays up, where that is safe (that
 * file says when).
 *
 * Why here and not in citus_keys.c: it is a scan.  The rows are read as the
 * bulk scan reads them (scan/bulk_scan.c's header says why that is a
 * SeqScan's visibility): heapam's page-mode scan under the statement's
 * snapshot, then the page's visible tuples read directly (bulk_fetch.h),
 * with no slot, no executor and no fmgr call per row -- where today's round
 * goes through Citus's worker_partial_agg wrapper, which builds an FmgrInfo
 * and calls the transition function every row (0.4x the round's time,
 * test/bench/results/citus-2026-11-28-vm-shardscan.md).
 *
 * What it refuses (a clean ERROR, so that the coordinator falls back to
 * today's round): anything but a heap table, a table row-level security
 * applies to for this user (its rows would not be the policy's), a column
 * this user may not read, a column without a gpuselect key.  The column is
 * found by name on each shard: a shard created after a column was dropped
 * has other attribute numbers than the table's older shards.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/heapam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "aggs/citus_exchange.h"
#include "base/types.h"
#include "scan/bulk_fetch.h"

PG_FUNCTION_INFO_V1(gs_citus_shard_histogram);

/* what one shard's scan counts into */
typedef struct GsShardHist
{
	const int64 *t;				/* the thresholds, sorted */
	int			nt;
	int64	   *counts;			/* nt + 1 buckets */
	GsTypeKind	kind;
	GsBulkColumn column;
	TupleDesc	desc;
} GsShardHist;

/* one tuple: its column's key into its bucket (gs_citus_bucket's rule) */
static pg_attribute_always_inline void
gs_shard_hist_tuple(GsShardHist *h, HeapTuple tup)
{
	bool		isnull;
	Datum		d = gs_bulk_fetch(&h->column, tup, h->desc, &isnull);
	int64		key;
	int			lo = 0;
	int			hi = h->nt;

	if (isnull)
		return;
	key = (int64) (gs_key_from_datum(h->kind, d) ^ GS_X_SIGN);
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (key < h->t[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	h->counts[lo]++;
}

/*
 * The page heap_getnext has just returned the first visible tuple of, that
 * one included, then the page marked done -- bulk_scan.c's gs_bulk_page:
 * page mode listed the visible tuples under the buffer's share lock, and
 * the pin heap_getnext keeps holds them.
 */
static void
gs_shard_hist_page(GsShardHist *h, HeapScanDesc hs)
{
	Page		page = BufferGetPage(hs->rs_cbuf);
	int			ntuples = (int) hs->rs_ntuples;
	HeapTupleData tup;

	tup.t_tableOid = RelationGetRelid(hs->rs_base.rs_rd);
	ItemPointerSetInvalid(&tup.t_self);
	for (int i = (int) hs->rs_cindex; i < ntuples; i++)
	{
		ItemId		lp = PageGetItemId(page, hs->rs_vistuples[i]);

		if (i + 4 < ntuples)
			gs_bulk_prefetch_tuple(page, hs->rs_vistuples[i + 4]);
		tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
		tup.t_len = ItemIdGetLength(lp);
		gs_shard_hist_tuple(h, &tup);
	}
	/* pg_stat's seq_tup_read, as heap_getnext counts each tuple it returns */
	GS_PGSTAT_COUNT_TUPLES_RETURNED(hs->rs_base.rs_rd, ntuples - (int) hs->rs_cindex - 1);
	hs->rs_cindex = ntuples - 1;
}

/* the shard opened, checked (see the header), and its column found by name */
static Relation
gs_shard_hist_open(Oid relid, const char *col, GsShardHist *h)
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
				 errmsg("gs_citus_shard_histogram: \"%s\" is not a heap table",
						RelationGetRelationName(rel))));
	/* the policies' rows would not be these: today's round applies them */
	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gs_citus_shard_histogram: row-level security applies to \"%s\"",
						RelationGetRelationName(rel))));
	attno = get_attnum(relid, col);
	if (attno == InvalidAttrNumber || attno < 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("gs_citus_shard_histogram: column \"%s\" of \"%s\" does not exist",
						col, RelationGetRelationName(rel))));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck(relid, attno, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for column %s of table %s", col,
						RelationGetRelationName(rel))));
	typid = getBaseType(TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid);
	if (!gs_type_kind_from_oid(typid, &h->kind, &kb, &num) || h->kind == GS_T_DATUM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gs_citus_shard_histogram: type %s has no gpuselect key",
						format_type_be(typid))));
	h->desc = RelationGetDescr(rel);
	gs_bulk_column_init(&h->column, h->desc, attno);
	return rel;
}

/* the thresholds: a one-dimensional int8 array without NULLs, sorted */
static void
gs_shard_hist_thresholds(ArrayType *t, GsShardHist *h)
{
	if (ARR_ELEMTYPE(t) != INT8OID || ARR_NDIM(t) > 1 || ARR_HASNULL(t))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gs_citus_shard_histogram: thresholds must be a one-dimensional int8 array without NULLs")));
	h->t = (const int64 *) ARR_DATA_PTR(t);
	h->nt = ArrayGetNItems(ARR_NDIM(t), ARR_DIMS(t));
	if (h->nt + 1 > GS_X_HIST_MAX_BUCKETS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gs_citus_shard_histogram: more than %d buckets", GS_X_HIST_MAX_BUCKETS)));
	for (int i = 1; i < h->nt; i++)
		if (h->t[i] < h->t[i - 1])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("gs_citus_shard_histogram: thresholds must be sorted")));
}

Datum
gs_citus_shard_histogram(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *col = text_to_cstring(PG_GETARG_TEXT_PP(1));
	GsShardHist h;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	Datum	   *out;

	memset(&h, 0, sizeof(h));
	gs_shard_hist_thresholds(PG_GETARG_ARRAYTYPE_P(2), &h);
	rel = gs_shard_hist_open(relid, col, &h);
	h.counts = (int64 *) palloc0(sizeof(int64) * (h.nt + 1));

	/* the statement's snapshot, as a SeqScan in this query would take it */
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		HeapScanDesc hs = (HeapScanDesc) scan;

		/* without page mode (no MVCC snapshot) heap_getnext goes row by row */
		if (hs->rs_base.rs_flags & SO_ALLOW_PAGEMODE)
			gs_shard_hist_page(&h, hs);
		else
			gs_shard_hist_tuple(&h, tup);
		CHECK_FOR_INTERRUPTS();
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);

	out = (Datum *) palloc(sizeof(Datum) * (h.nt + 1));
	for (int b = 0; b <= h.nt; b++)
		out[b] = Int64GetDatum(h.counts[b]);
	PG_RETURN_ARRAYTYPE_P(construct_array(out, h.nt + 1, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
