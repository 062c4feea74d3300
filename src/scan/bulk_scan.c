/*
 * bulk_scan.c — "Custom Scan (gpuselect)" at run time: a heap relation read
 * a page at a time straight into the states of gpuselect's plain
 * aggregates (bulk_scan.h says what the node is; planner/
 * planner_bulk_scan.c when it is planned and why it is correct).
 *
 * Reading.  The scan is heapam's own: table_beginscan (or
 * table_beginscan_parallel) with the query's snapshot, in page mode, so the
 * snapshot's visibility, the bulk-read buffer strategy, synchronized scans,
 * the read stream (PostgreSQL 17+), the parallel block allocation and the
 * serializable predicate locks are exactly those of a SeqScan.  What is
 * ours is the step from one tuple to the next.  In page mode heap_getnext
 * checks a whole page under its buffer's share lock -- every tuple at once
 * on a page marked all-visible, each against the snapshot on the others,
 * with the serializable conflict checks -- lists the visible ones in
 * rs_vistuples and returns the first.  This scan reads the rest of that
 * list itself, with the page still pinned (as heapgettup_pagemode does
 * between calls), and then marks the page done (rs_cindex), so the next
 * heap_getnext moves to the next page.  Per row there is no slot, no
 * function call and no copy: the aggregated column is read at its fixed
 * offset where the tuple allows (bulk_fetch.h), through heap_getattr
 * otherwise (NULLs, a column added later: attmissingval), and its key goes into the group's state
 * (gs_append_datum), i.e. into key-pool chunks the GPU service copies to
 * the device while the scan goes on, when the group will run there.  On a
 * page marked all-visible nothing has read the tuples before this loop (page
 * mode lists them from the line pointers), so the loop prefetches a few
 * tuples ahead (gs_bulk_prefetch_start): without it each row waits on memory.
 *
 * The quals are the executor's own ExprState, over a scan tuple holding
 * just the columns they read (planner file: why).  Which group a row is in
 * is bulk_groups.c's (mostly without evaluating the GROUP BY expression).
 * A query with neither reads only the aggregated columns.
 *
 * Output.  One row per group: the group value and, per aggregate, its
 * state as the bytea a Finalize Aggregate deserializes.
 * Serially, the whole state by reference (state_serial.c, "GSL1"): the
 * Finalize Aggregate adopts it, keys and all.  In a parallel plan, each
 * participant's partial state in the usual forms (a shared segment for a
 * large ungrouped one, key-pool chunks leased to the leader, inline).
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/heapam.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#else
#include "commands/explain.h"
#endif
#include "access/parallel.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#if PG_VERSION_NUM >= 170000
#include "storage/read_stream.h"
#endif
#include "utils/array.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "aggs/fn_cache.h"
#include "aggs/ranks.h"
#include "base/guc.h"
#include "base/types.h"
#include "scan/bulk_fetch.h"
#include "scan/bulk_groups.h"
#include "scan/bulk_scan.h"
#include "scan/bulk_ship.h"
#include "select/dispatch.h"
#include "state/state.h"

/* one aggregate of the node */
typedef struct GsBulkAgg
{
	GsBulkAggKind kind;
	AttrNumber	attno;			/* the aggregated column */
	GsBulkColumn column;		/* ... and how to read it */
	Oid			typid;
	GsTypeKind	tkind;
	bool		descending;		/* the rewrite's ORDER BY x DESC */
	int			filter;			/* its FILTER: bs->filters[filter]; -1: none */
	ExprState  *fraction;		/* NULL: gpu_median */
	bool		have_fraction;	/* evaluated, at the first group of a scan */
	bool		fraction_null;
	Datum		fraction_value; /* float8, or an array in the states' memory */
} GsBulkAgg;

/* what EXPLAIN ANALYZE counts, per participant (summed over rescans) */
typedef struct GsBulkCounts
{
	uint64		pages;
	uint64		pages_all_visible;
	uint64		tuples;			/* visible */
	uint64		rows;			/* passed the quals */
	uint64		keys;			/* non-NULL values appended */
	uint64		range_rows;		/* rows whose group came from a cached range */
	uint64		ranges;			/* ... ranges searched */
	uint64		pages_shipped;	/* pages the GPU service extracted (bulk_ship.c) */
} GsBulkCounts;

#define GS_BULK_NCOUNTS (sizeof(GsBulkCounts) / sizeof(uint64))

/*
 * A parallel scan's shared memory: the workers' counts, added up as each
 * finishes its scan (a worker has no EXPLAIN of its own: the leader prints
 * everyone's), then the table AM's block allocation.
 */
typedef struct GsBulkShared
{
	pg_atomic_uint64 counts[GS_BULK_NCOUNTS];
} GsBulkShared;

#define GS_BULK_SHARED_SIZE MAXALIGN(sizeof(GsBulkShared))

typedef struct GsBulkScanState
{
	CustomScanState css;
	int			flags;			/* GS_BULK_PARTIAL, GS_BULK_GROUPED */
	int			naggs;
	GsBulkAgg  *aggs;
	List	   *columns;		/* per output column: GS_BULK_COLUMN_*, or k: aggregate k */

	ExprState  *qual;			/* NULL: none */
	int			nfilters;		/* the aggregates' distinct FILTERs */
	ExprState **filters;
	bool	   *passed;			/* ... the current row passed filter f */
	List	   *qual_attnos;	/* the relation's columns the quals and FILTERs read */
	List	   *qual_columns;	/* ... and where they go in qual_slot */
	TupleTableSlot *qual_slot;	/* scan-tuple shaped: their input; NULL: neither */
	GsBulkGroups *groups;		/* NULL: no GROUP BY (bulk_groups.c) */

	MemoryContext statecxt;		/* groups, states, fractions */
	TableScanDesc scan;
	ParallelTableScanDesc pscan;	/* parallel: the shared block allocation */
	bool		scanned;

	GsBulkGroup *single;		/* no GROUP BY: the one group, once a row came */
	bool		single_done;
	GsBulkShip *ship;			/* page shipping (bulk_ship.c); NULL: off */

	/* EXPLAIN ANALYZE: this process's, and the workers' (parallel) */
	uint64		pages;
	uint64		pages_all_visible;
	uint64		tuples;			/* visible */
	uint64		rows;			/* passed the quals */
	uint64		keys;			/* non-NULL values appended */
	uint64		pages_shipped;
	double		scan_ms;
	double		select_ms0;		/* gs_select_ms_total when the node began */
	GsBulkShared *shared;		/* parallel: NULL serially */
	GsBulkCounts workers;		/* the leader: theirs, taken from shared */
} GsBulkScanState;

static Node *gs_bulk_create_state(CustomScan *cscan);
static void gs_bulk_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *gs_bulk_exec(CustomScanState *node);
static void gs_bulk_end(CustomScanState *node);
static void gs_bulk_rescan(CustomScanState *node);
static Size gs_bulk_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void gs_bulk_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void gs_bulk_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void gs_bulk_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate);
static void gs_bulk_shutdown(CustomScanState *node);
static void gs_bulk_publish_counts(GsBulkScanState *bs);
static void gs_bulk_explain(CustomScanState *node, List *ancestors, ExplainState *es);
static GsBulkGroup *gs_bulk_new_group(void *arg, const Datum *keys, const bool *nulls);

const CustomScanMethods gs_bulk_scan_methods = {
	.CustomName = GS_BULK_SCAN_NAME,
	.CreateCustomScanState = gs_bulk_create_state,
};

static const CustomExecMethods gs_bulk_exec_methods = {
	.CustomName = GS_BULK_SCAN_NAME,
	.BeginCustomScan = gs_bulk_begin,
	.ExecCustomScan = gs_bulk_exec,
	.EndCustomScan = gs_bulk_end,
	.ReScanCustomScan = gs_bulk_rescan,
	.EstimateDSMCustomScan = gs_bulk_estimate_dsm,
	.InitializeDSMCustomScan = gs_bulk_init_dsm,
	.ReInitializeDSMCustomScan = gs_bulk_reinit_dsm,
	.InitializeWorkerCustomScan = gs_bulk_init_worker,
	.ShutdownCustomScan = gs_bulk_shutdown,
	.ExplainCustomScan = gs_bulk_explain,
};

void
gs_bulk_scan_register(void)
{
	RegisterCustomScanMethods(&gs_bulk_scan_methods);
}

static Node *
gs_bulk_create_state(CustomScan *cscan)
{
	GsBulkScanState *bs = (GsBulkScanState *) newNode(sizeof(GsBulkScanState), T_CustomScanState);

	bs->css.methods = &gs_bulk_exec_methods;
	return (Node *) bs;
}

/* ---- setup ---------------------------------------------------------- */

static void
gs_bulk_begin_aggs(GsBulkScanState *bs, List *aggs, List *fractions)
{
	TupleDesc	desc = RelationGetDescr(bs->css.ss.ss_currentRelation);
	ListCell   *la,
			   *lf;
	int			i = 0;

	bs->naggs = list_length(aggs);
	bs->aggs = (GsBulkAgg *) palloc0(sizeof(GsBulkAgg) * bs->naggs);
	forboth(la, aggs, lf, fractions)
	{
		List	   *agg = (List *) lfirst(la);
		GsBulkAgg  *a = &bs->aggs[i++];
		uint8		key_bytes;

		a->kind = (GsBulkAggKind) intVal(linitial(agg));
		a->attno = (AttrNumber) intVal(lsecond(agg));
		a->descending = intVal(lthird(agg)) != 0;
		a->filter = intVal(lfourth(agg));
		gs_bulk_column_init(&a->column, desc, a->attno);
		if (a->attno < 1 || a->attno > desc->natts)
			elog(ERROR, "gpuselect: bulk scan column %d out of range", a->attno);
		a->typid = TupleDescAttr(desc, a->attno - 1)->atttypid;
		if (!gs_type_kind_from_oid(a->typid, &a->tkind, &key_bytes, NULL) || a->tkind == GS_T_DATUM)
			elog(ERROR, "gpuselect: bulk scan over a column of type %u", a->typid);
		if (lfirst(lf) != NULL)
			a->fraction = ExecInitExpr((Expr *) lfirst(lf), &bs->css.ss.ps);
	}
}

/*
 * The quals and the aggregates' FILTERs read a scan tuple shaped like
 * custom_scan_tlist, whose columns past the output ones are Vars of the
 * relation (planner file), as may be an output one (GROUP BY a column):
 * which attribute goes where.  A FILTER is a qual of its own (a NULL is
 * false, as the executor's Agg node takes it).
 */
static void
gs_bulk_begin_quals(GsBulkScanState *bs, List *quals, List *filters, EState *estate)
{
	CustomScan *cs = (CustomScan *) bs->css.ss.ps.plan;
	ListCell   *lc;
	int			col = 0;

	if (quals == NIL && filters == NIL)
		return;
	if (quals != NIL)
		bs->qual = ExecInitQual(quals, &bs->css.ss.ps);
	bs->nfilters = list_length(filters);
	if (bs->nfilters > 0)
	{
		bs->filters = (ExprState **) palloc(sizeof(ExprState *) * bs->nfilters);
		bs->passed = (bool *) palloc0(sizeof(bool) * bs->nfilters);
	}
	foreach(lc, filters)
		bs->filters[foreach_current_index(lc)] =
			ExecInitQual(list_make1(lfirst(lc)), &bs->css.ss.ps);
	foreach(lc, cs->custom_scan_tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (IsA(tle->expr, Var))
		{
			bs->qual_attnos = lappend_int(bs->qual_attnos, ((Var *) tle->expr)->varattno);
			bs->qual_columns = lappend_int(bs->qual_columns, col);
		}
		col++;
	}
	bs->qual_slot = ExecInitExtraTupleSlot(estate,
										   bs->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor,
										   &TTSOpsVirtual);
}

static void
gs_bulk_begin(CustomScanState *node, EState *estate, int eflags)
{
	GsBulkScanState *bs = (GsBulkScanState *) node;
	CustomScan *cs = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cs->custom_private;
	List	   *group = (List *) list_nth(priv, GS_BULK_PRIV_GROUP);

	bs->flags = intVal(list_nth(priv, GS_BULK_PRIV_FLAGS));
	bs->columns = (List *) list_nth(priv, GS_BULK_PRIV_COLUMNS);
	/* custom_exprs: the quals, one fraction expression per aggregate, the FILTERs */
	gs_bulk_begin_aggs(bs, (List *) list_nth(priv, GS_BULK_PRIV_AGGS),
					   (List *) lsecond(cs->custom_exprs));
	gs_bulk_begin_quals(bs, (List *) linitial(cs->custom_exprs),
						(List *) lthird(cs->custom_exprs), estate);
	bs->select_ms0 = gs_select_ms_total;
	bs->statecxt = AllocSetContextCreate(CurrentMemoryContext, "gpuselect bulk scan",
										 ALLOCSET_DEFAULT_SIZES);
	/* page shipping: one aggregate, no quals or FILTER, no GROUP BY, in the
	 * leader and each worker alike (each its own page slots); not where
	 * this session keeps off the GPU (the service extracts on its device),
	 * nor for a temporary table (local buffers: the service cannot see them) */
	if (gs_guc_bulk_scan_ship_pages && gs_guc_device != GS_DEVICE_CPU &&
		bs->naggs == 1 && bs->qual_slot == NULL && group == NIL &&
		!RelationUsesLocalBuffers(node->ss.ss_currentRelation))
		bs->ship = gs_bulk_ship_create(CurrentMemoryContext,
									   RelationGetDescr(node->ss.ss_currentRelation),
									   bs->aggs[0].attno, bs->aggs[0].tkind);
	if (group != NIL)
	{
		List	   *mono = (List *) list_nth(priv, GS_BULK_PRIV_MONO);

		bs->groups = gs_bulk_groups_create(bs->statecxt, estate, group,
										   (List *) list_nth(priv, GS_BULK_PRIV_EQOPS),
										   intVal(lthird(mono)),
										   (AttrNumber) intVal(linitial(mono)),
										   intVal(lsecond(mono)),
										   RelationGetDescr(node->ss.ss_currentRelation),
										   gs_bulk_new_group, bs);
	}
}

/* ---- groups and states ---------------------------------------------- */

/* a fraction argument, evaluated once per scan (it cannot read the row) */
static void
gs_bulk_fraction(GsBulkScanState *bs, GsBulkAgg *a)
{
	ExprContext *econtext = bs->css.ss.ps.ps_ExprContext;
	MemoryContext old;
	Datum		d;

	d = ExecEvalExprSwitchContext(a->fraction, econtext, &a->fraction_null);
	old = MemoryContextSwitchTo(bs->statecxt);
	if (a->fraction_null)
		a->fraction_value = (Datum) 0;
	else if (a->kind == GS_BULK_QUANTILES || a->kind == GS_BULK_PLANNER_MULTI)
		a->fraction_value = PointerGetDatum(DatumGetArrayTypePCopy(d));
	else
		a->fraction_value = d;	/* float8: by value */
	MemoryContextSwitchTo(old);
	a->have_fraction = true;
}

/*
 * A group's state for one aggregate, as the aggregate's transition function
 * makes it at the group's first row (plain_aggs.c: gs_plain_start and the
 * fraction taken from the first row, gpu_quantile's validated there;
 * planner_aggs.c: gs_planner_start, the fraction carried unchecked).
 */
static GsState *
gs_bulk_new_state(GsBulkScanState *bs, GsBulkAgg *a)
{
	GsState    *st = gs_state_create(bs->statecxt, a->typid);

	st->descending = a->descending;
	st->fraction_stable = true;	/* evaluated once for the scan */
	st->partial = (bs->flags & GS_BULK_PARTIAL) != 0;
	/* as a Partial Aggregate's (plain_aggs.c): an ungrouped one leases
	 * key-pool chunks from 256 kB on, grouped ones from a chunk's worth */
	st->arena_ok = st->partial && (bs->flags & GS_BULK_GROUPED) == 0;
	st->lease_ok = st->partial;
	if (a->kind == GS_BULK_MEDIAN)
		return st;
	if (!a->have_fraction)
		gs_bulk_fraction(bs, a);
	st->have_fraction = true;
	st->fraction_null = a->fraction_null;
	if (a->fraction_null)
		return st;
	if (a->kind == GS_BULK_QUANTILE || a->kind == GS_BULK_PLANNER)
	{
		st->fraction = DatumGetFloat8(a->fraction_value);
		if (a->kind == GS_BULK_QUANTILE)
			gs_check_fraction(st->fraction);
	}
	else
	{
		ArrayType  *arr = DatumGetArrayTypeP(a->fraction_value);

		st->fractions = (ArrayType *) MemoryContextAlloc(st->mcxt, VARSIZE(arr));
		memcpy(st->fractions, arr, VARSIZE(arr));
	}
	return st;
}

static GsBulkGroup *
gs_bulk_new_group(void *arg, const Datum *keys, const bool *nulls)
{
	GsBulkScanState *bs = (GsBulkScanState *) arg;
	GsBulkGroup *group = (GsBulkGroup *) MemoryContextAlloc(bs->statecxt,
															offsetof(GsBulkGroup, states) +
															sizeof(GsState *) * bs->naggs);

	group->rows = 0;
	group->extra = NULL;
	group->filtered = bs->nfilters == 0 ? NULL :
		(int64 *) MemoryContextAllocZero(bs->statecxt, sizeof(int64) * bs->nfilters);
	for (int i = 0; i < bs->naggs; i++)
		group->states[i] = gs_bulk_new_state(bs, &bs->aggs[i]);
	return group;
}

/* the group the current row belongs to */
static pg_attribute_always_inline GsBulkGroup *
gs_bulk_group_of(GsBulkScanState *bs, HeapTuple tup, ExprContext *econtext)
{
	if (bs->groups != NULL)
		return gs_bulk_groups_of(bs->groups, tup, econtext);
	if (bs->single == NULL)
		bs->single = gs_bulk_new_group(bs, NULL, NULL);
	return bs->single;
}

/* ---- the scan ------------------------------------------------------- */

/* the columns the quals and FILTERs read, into qual_slot */
static void
gs_bulk_qual_input(GsBulkScanState *bs, HeapTuple tup, TupleDesc desc, ExprContext *econtext)
{
	TupleTableSlot *slot = bs->qual_slot;
	ListCell   *la,
			   *lc;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	forboth(la, bs->qual_attnos, lc, bs->qual_columns)
	{
		int			col = lfirst_int(lc);

		slot->tts_values[col] = heap_getattr(tup, lfirst_int(la), desc, &slot->tts_isnull[col]);
	}
	ExecStoreVirtualTuple(slot);
	econtext->ecxt_scantuple = slot;
}

/* one visible tuple: the hot loop's body, inlined into the page loop */
static pg_attribute_always_inline void
gs_bulk_row(GsBulkScanState *bs, HeapTuple tup, TupleDesc desc, ExprContext *econtext)
{
	GsBulkGroup *group;

	if (bs->qual_slot != NULL)
	{
		gs_bulk_qual_input(bs, tup, desc, econtext);
		if (bs->qual != NULL && !ExecQual(bs->qual, econtext))
			return;
	}
	bs->rows++;
	group = gs_bulk_group_of(bs, tup, econtext);
	group->rows++;
	if (bs->nfilters > 0)
	{
		/* (the group's lookup may have pointed the context at its own slot) */
		econtext->ecxt_scantuple = bs->qual_slot;
		for (int f = 0; f < bs->nfilters; f++)
		{
			bs->passed[f] = ExecQual(bs->filters[f], econtext);
			group->filtered[f] += bs->passed[f] ? 1 : 0;
		}
	}
	for (int i = 0; i < bs->naggs; i++)
	{
		bool		isnull;
		Datum		d;

		if (bs->aggs[i].filter >= 0 && !bs->passed[bs->aggs[i].filter])
			continue;
		d = gs_bulk_fetch(&bs->aggs[i].column, tup, desc, &isnull);
		if (!isnull)
		{
			gs_append_datum(group->states[i], bs->aggs[i].tkind, d);
			bs->keys++;
		}
	}
}

/*
 * Prefetch (gs_bulk_prefetch_tuple): the page loops hint the tuple
 * gpuselect.test_bulk_prefetch places ahead of the one they read, so that
 * its load overlaps the work on those before it, and at the page's start
 * the first that many at once.  Returns where the loop stops hinting (the
 * last tuples have none ahead); with the setting 0, at once (no hint).
 */
static pg_attribute_always_inline int
gs_bulk_prefetch_start(HeapScanDesc hs, Page page, int first, int ntuples, int prefetch)
{
	if (prefetch <= 0)
		return first;
	for (int i = first; i < Min(first + prefetch, ntuples); i++)
		gs_bulk_prefetch_tuple(page, hs->rs_vistuples[i]);
	return ntuples - prefetch;
}

/*
 * The loop of the commonest query, one aggregate with neither quals nor
 * GROUP BY: per kind of key, so that the conversion and the append are
 * inlined and the kind's switch is out of the loop.  The tuple's t_self is
 * not set: nothing here reads it (gs_bulk_fetch and heap_getattr read the
 * header and the data only).
 */
#define GS_BULK_SINGLE_LOOP(APPEND, KEY) \
	for (int i = first; i < ntuples; i++) \
	{ \
		ItemId		lp = PageGetItemId(page, hs->rs_vistuples[i]); \
		bool		isnull; \
		Datum		d; \
		\
		if (i < prefetch_end) \
			gs_bulk_prefetch_tuple(page, hs->rs_vistuples[i + prefetch]); \
		tup.t_data = (HeapTupleHeader) PageGetItem(page, lp); \
		tup.t_len = ItemIdGetLength(lp); \
		d = gs_bulk_fetch(&a->column, &tup, desc, &isnull); \
		if (!isnull) \
		{ \
			APPEND(st, KEY); \
			keys++; \
		} \
	}

static void
gs_bulk_page_single(GsBulkScanState *bs, HeapScanDesc hs, Page page, TupleDesc desc)
{
	GsBulkAgg  *a = &bs->aggs[0];
	GsState    *st;
	HeapTupleData tup;
	int			first = (int) hs->rs_cindex;
	int			ntuples = (int) hs->rs_ntuples;
	int			prefetch = gs_guc_test_bulk_prefetch;
	int			prefetch_end;
	uint64		keys = 0;

	if (bs->single == NULL)
		bs->single = gs_bulk_new_group(bs, NULL, NULL);
	st = bs->single->states[0];
	tup.t_tableOid = RelationGetRelid(hs->rs_base.rs_rd);
	ItemPointerSetInvalid(&tup.t_self);
	prefetch_end = gs_bulk_prefetch_start(hs, page, first, ntuples, prefetch);
	switch (a->tkind)
	{
		case GS_T_INT2:
			GS_BULK_SINGLE_LOOP(gs_state_append16, gs_key_from_int16(DatumGetInt16(d)));
			break;
		case GS_T_INT4:
		case GS_T_DATE:
			GS_BULK_SINGLE_LOOP(gs_state_append32, gs_key_from_int32(DatumGetInt32(d)));
			break;
		case GS_T_FLOAT4:
			GS_BULK_SINGLE_LOOP(gs_state_append32, gs_key_from_float4(DatumGetFloat4(d)));
			break;
		case GS_T_FLOAT8:
			GS_BULK_SINGLE_LOOP(gs_state_append64, gs_key_from_float8(DatumGetFloat8(d)));
			break;
		default:				/* int8, timestamp, timestamptz */
			GS_BULK_SINGLE_LOOP(gs_state_append64, gs_key_from_int64(DatumGetInt64(d)));
			break;
	}
	bs->single->rows += ntuples - first;
	bs->rows += ntuples - first;
	bs->keys += keys;
}

/* the single group's state, made at the first row */
static GsState *
gs_bulk_single_state(GsBulkScanState *bs)
{
	if (bs->single == NULL)
		bs->single = gs_bulk_new_group(bs, NULL, NULL);
	return bs->single->states[0];
}

/* a full batch shipped (bulk_ship.c), or at the end every batch; the keys
 * of the batches collected meanwhile counted */
static void
gs_bulk_ship_batch(GsBulkScanState *bs, TupleDesc desc, bool end)
{
	GsState    *st = gs_bulk_single_state(bs);
	int64		before = st->nrows;
	Oid			relid = RelationGetRelid(bs->css.ss.ss_currentRelation);

	if (end)
		gs_bulk_ship_finish(bs->ship, st, &bs->aggs[0].column, desc, relid,
							&bs->pages_shipped);
	else
		gs_bulk_ship_flush(bs->ship, st, &bs->aggs[0].column, desc, relid,
						   &bs->pages_shipped);
	bs->keys += (uint64) (st->nrows - before);
}

/* page shipping: the page's visible tuples go to the batch, not their keys */
static void
gs_bulk_page_ship(GsBulkScanState *bs, HeapScanDesc hs, TupleDesc desc)
{
	int			n = (int) hs->rs_ntuples - (int) hs->rs_cindex;

	(void) gs_bulk_single_state(bs);
	bs->single->rows += n;
	bs->rows += n;
	if (gs_bulk_ship_page(bs->ship, hs))
		gs_bulk_ship_batch(bs, desc, false);
}

/*
 * The page heap_getnext has just returned the first visible tuple of, that
 * tuple included, and mark the page done.  Page mode listed its visible
 * tuples under the buffer's share lock; the pin heap_getnext keeps holds
 * them.
 */
static void
gs_bulk_page(GsBulkScanState *bs, HeapScanDesc hs, TupleDesc desc, ExprContext *econtext)
{
	Page		page = BufferGetPage(hs->rs_cbuf);
	HeapTupleData tup;
	int			ntuples = (int) hs->rs_ntuples;

	bs->pages++;
	if (PageIsAllVisible(page))
		bs->pages_all_visible++;
	tup.t_tableOid = RelationGetRelid(hs->rs_base.rs_rd);
	if (bs->ship != NULL)
		gs_bulk_page_ship(bs, hs, desc);
	else if (bs->qual_slot == NULL && bs->groups == NULL && bs->naggs == 1)
		gs_bulk_page_single(bs, hs, page, desc);
	else
	{
		int			prefetch = gs_guc_test_bulk_prefetch;
		int			prefetch_end = gs_bulk_prefetch_start(hs, page, (int) hs->rs_cindex,
														  ntuples, prefetch);

		for (int i = (int) hs->rs_cindex; i < ntuples; i++)
		{
			OffsetNumber off = hs->rs_vistuples[i];
			ItemId		lp = PageGetItemId(page, off);

			if (i < prefetch_end)
				gs_bulk_prefetch_tuple(page, hs->rs_vistuples[i + prefetch]);
			tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tup.t_len = ItemIdGetLength(lp);
			ItemPointerSet(&tup.t_self, hs->rs_cblock, off);
			gs_bulk_row(bs, &tup, desc, econtext);
		}
	}
	bs->tuples += ntuples - (int) hs->rs_cindex;
	/* pg_stat's seq_tup_read, as heap_getnext counts each tuple it returns */
	GS_PGSTAT_COUNT_TUPLES_RETURNED(hs->rs_base.rs_rd, ntuples - (int) hs->rs_cindex - 1);
	hs->rs_cindex = ntuples - 1;
}

/*
 * Page shipping's own page loop (bulk_ship.c, gs_bulk_ship_take_page): the
 * blocks in the order heap_getnext takes them -- serially from the scan's
 * start block round (synchronized scans), in parallel as the table AM's
 * shared block allocation hands them out -- each read (through a read
 * stream where the server has them, else with the scan's bulk-read
 * strategy), checked and listed in the batch.  Pages without a visible
 * tuple count nowhere, as there.
 */
typedef struct GsShipBlocks
{
	HeapScanDesc hs;
	BlockNumber nblocks;
	BlockNumber done;
} GsShipBlocks;

static BlockNumber
gs_ship_next_block(GsShipBlocks *b)
{
	HeapScanDesc hs = b->hs;
	ParallelBlockTableScanDesc pb = (ParallelBlockTableScanDesc) hs->rs_base.rs_parallel;

	if (pb != NULL)
		return table_block_parallelscan_nextpage(hs->rs_base.rs_rd, hs->rs_parallelworkerdata, pb);
	if (b->done >= b->nblocks)
		return InvalidBlockNumber;
	return (hs->rs_startblock + b->done++) % b->nblocks;
}

#if PG_VERSION_NUM >= 170000
static BlockNumber
gs_ship_stream_block(ReadStream *stream, void *arg, void *per_buffer)
{
	return gs_ship_next_block((GsShipBlocks *) arg);
}
#endif

static void
gs_bulk_ship_loop(GsBulkScanState *bs, TupleDesc desc)
{
	HeapScanDesc hs = (HeapScanDesc) bs->scan;
	Relation	rel = hs->rs_base.rs_rd;
	ParallelBlockTableScanDesc pb = (ParallelBlockTableScanDesc) hs->rs_base.rs_parallel;
	GsShipBlocks blocks;

#if PG_VERSION_NUM >= 170000
	ReadStream *stream;
#endif

	blocks.hs = hs;
	blocks.nblocks = pb != NULL ? pb->phs_nblocks : hs->rs_nblocks;
	blocks.done = 0;
	(void) gs_bulk_single_state(bs);
	if (pb != NULL)
		table_block_parallelscan_startblock_init(rel, hs->rs_parallelworkerdata, pb);
#if PG_VERSION_NUM >= 170000
	stream = read_stream_begin_relation(READ_STREAM_SEQUENTIAL, hs->rs_strategy, rel,
										MAIN_FORKNUM, gs_ship_stream_block, &blocks, 0);
#endif
	for (;;)
	{
		Buffer		buf;
		int			n;
		bool		av;
		bool		full;

#if PG_VERSION_NUM >= 170000
		buf = read_stream_next_buffer(stream, NULL);
		if (!BufferIsValid(buf))
			break;
#else
		BlockNumber blk = gs_ship_next_block(&blocks);

		if (blk == InvalidBlockNumber)
			break;
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, hs->rs_strategy);
#endif
		full = gs_bulk_ship_take_page(bs->ship, rel, buf, hs->rs_base.rs_snapshot, &n, &av);
		if (n > 0)
		{
			bs->pages++;
			if (av)
				bs->pages_all_visible++;
			bs->tuples += n;
			bs->rows += n;
			bs->single->rows += n;
			GS_PGSTAT_COUNT_TUPLES_RETURNED(rel, n);
		}
		if (full)
			gs_bulk_ship_batch(bs, desc, false);
		CHECK_FOR_INTERRUPTS();
	}
#if PG_VERSION_NUM >= 170000
	read_stream_end(stream);
#endif
}

/* heap_getnext's pages (or rows, without page mode: no MVCC snapshot) */
static void
gs_bulk_scan_heap(GsBulkScanState *bs, TupleDesc desc, ExprContext *econtext)
{
	HeapTuple	tup;

	while ((tup = heap_getnext(bs->scan, ForwardScanDirection)) != NULL)
	{
		HeapScanDesc hs = (HeapScanDesc) bs->scan;

		if (hs->rs_base.rs_flags & SO_ALLOW_PAGEMODE)
			gs_bulk_page(bs, hs, desc, econtext);
		else
		{
			bs->tuples++;
			gs_bulk_row(bs, tup, desc, econtext);
		}
		ResetExprContext(econtext);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
gs_bulk_scan_run(GsBulkScanState *bs)
{
	Relation	rel = bs->css.ss.ss_currentRelation;
	TupleDesc	desc = RelationGetDescr(rel);
	instr_time	start,
				elapsed;

	INSTR_TIME_SET_CURRENT(start);
	if (bs->scan == NULL)
		bs->scan = bs->pscan != NULL ?
			table_beginscan_parallel(rel, bs->pscan) :
			table_beginscan(rel, bs->css.ss.ps.state->es_snapshot, 0, NULL);
	if (bs->ship != NULL && gs_bulk_ship_own_pages(rel, bs->scan->rs_snapshot))
		gs_bulk_ship_loop(bs, desc);
	else
		gs_bulk_scan_heap(bs, desc, bs->css.ss.ps.ps_ExprContext);
	if (bs->ship != NULL)
		gs_bulk_ship_batch(bs, desc, true);
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	bs->scan_ms += INSTR_TIME_GET_MILLISEC(elapsed);
}

/* this process's counts */
static void
gs_bulk_own_counts(GsBulkScanState *bs, GsBulkCounts *c)
{
	c->pages = bs->pages;
	c->pages_all_visible = bs->pages_all_visible;
	c->tuples = bs->tuples;
	c->rows = bs->rows;
	c->keys = bs->keys;
	c->pages_shipped = bs->pages_shipped;
	c->range_rows = 0;
	c->ranges = 0;
	if (bs->groups != NULL)
		gs_bulk_groups_counts(bs->groups, &c->range_rows, &c->ranges);
}

/* a worker, its scan done: its counts into the shared sums */
static void
gs_bulk_publish_counts(GsBulkScanState *bs)
{
	GsBulkCounts c;
	uint64	   *v = (uint64 *) &c;

	gs_bulk_own_counts(bs, &c);
	for (int i = 0; i < GS_BULK_NCOUNTS; i++)
		pg_atomic_fetch_add_u64(&bs->shared->counts[i], (int64) v[i]);
}

/* the leader: the workers' sums so far, moved into bs->workers */
static void
gs_bulk_collect_counts(GsBulkScanState *bs)
{
	uint64	   *w = (uint64 *) &bs->workers;

	if (bs->shared == NULL || IsParallelWorker())
		return;
	for (int i = 0; i < GS_BULK_NCOUNTS; i++)
		w[i] += pg_atomic_exchange_u64(&bs->shared->counts[i], 0);
}

/* ---- output --------------------------------------------------------- */

static Datum
gs_bulk_state_datum(GsBulkScanState *bs, GsState *st)
{
	if (bs->flags & GS_BULK_PARTIAL)
		return PointerGetDatum(gs_state_serialize(st, (bs->flags & GS_BULK_GROUPED) == 0));
	return PointerGetDatum(gs_state_serialize_local(st));
}

/* the next group to emit: its states, values and NULL-ness; false at the end */
static bool
gs_bulk_next_group(GsBulkScanState *bs, GsBulkGroup **group, const Datum **keys,
				   const bool **nulls)
{
	if (bs->groups != NULL)
		return gs_bulk_groups_next(bs->groups, group, keys, nulls);
	*keys = NULL;
	*nulls = NULL;
	if (bs->single == NULL || bs->single_done)
		return false;
	bs->single_done = true;
	*group = bs->single;
	return true;
}

/* custom_private's order (bulk_scan.h): the groups sorted by it */
static void
gs_bulk_sort_groups(GsBulkScanState *bs, List *order)
{
	int			n = list_length(order);
	int		   *cols = palloc(sizeof(int) * n);
	Oid		   *sortops = palloc(sizeof(Oid) * n);
	Oid		   *collations = palloc(sizeof(Oid) * n);
	bool	   *nulls_first = palloc(sizeof(bool) * n);
	ListCell   *lc;

	foreach(lc, order)
	{
		List	   *k = (List *) lfirst(lc);
		int			i = foreach_current_index(lc);

		cols[i] = intVal(linitial(k));
		sortops[i] = (Oid) intVal(lsecond(k));
		collations[i] = (Oid) intVal(lthird(k));
		nulls_first[i] = intVal(lfourth(k)) != 0;
	}
	gs_bulk_groups_sort(bs->groups, n, cols, sortops, collations, nulls_first);
}

static TupleTableSlot *
gs_bulk_next(ScanState *ss)
{
	GsBulkScanState *bs = (GsBulkScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	MemoryContext old;
	GsBulkGroup *group;
	const Datum *keys;
	const bool *nulls;
	ListCell   *lc;
	int			col = 0;
	int			key = 0;

	if (!bs->scanned)
	{
		List	   *order = (List *) list_nth(((CustomScan *) ss->ps.plan)->custom_private,
											  GS_BULK_PRIV_ORDER);

		gs_bulk_scan_run(bs);
		if (bs->shared != NULL && IsParallelWorker())
			gs_bulk_publish_counts(bs);
		if (order != NIL && bs->groups != NULL)
			gs_bulk_sort_groups(bs, order);
		bs->scanned = true;
	}
	ExecClearTuple(slot);
	if (!gs_bulk_next_group(bs, &group, &keys, &nulls))
		return slot;
	/* serialized states live until the next row (ExecScan resets this) */
	old = MemoryContextSwitchTo(ss->ps.ps_ExprContext->ecxt_per_tuple_memory);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	foreach(lc, bs->columns)
	{
		int			role = lfirst_int(lc);

		if (role == GS_BULK_COLUMN_GROUP)
		{
			/* the k-th group column is the k-th GROUP BY expression (planner file) */
			slot->tts_values[col] = keys[key];
			slot->tts_isnull[col] = nulls[key];
			key++;
		}
		else
		{
			slot->tts_values[col] =
				role == GS_BULK_COLUMN_COUNT ? Int64GetDatum(group->rows) :
				role < GS_BULK_COLUMN_COUNT ?
				Int64GetDatum(group->filtered[GS_BULK_COLUMN_FILTER_OF(role)]) :
				gs_bulk_state_datum(bs, group->states[role]);
			slot->tts_isnull[col] = false;
		}
		col++;
	}
	MemoryContextSwitchTo(old);
	return ExecStoreVirtualTuple(slot);
}

static bool
gs_bulk_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
gs_bulk_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, gs_bulk_next, gs_bulk_recheck);
}

/* ---- end, rescan ---------------------------------------------------- */

/* forget the groups (their states' pool chunks go with the memory) */
static void
gs_bulk_reset_groups(GsBulkScanState *bs)
{
	MemoryContextReset(bs->statecxt);
	if (bs->groups != NULL)
		gs_bulk_groups_forget(bs->groups);
	bs->single = NULL;
	bs->single_done = false;
	bs->scanned = false;
	for (int i = 0; i < bs->naggs; i++)
		bs->aggs[i].have_fraction = false;	/* a parameter may have changed */
}

static void
gs_bulk_end(CustomScanState *node)
{
	GsBulkScanState *bs = (GsBulkScanState *) node;

	if (bs->ship != NULL)
		gs_bulk_ship_discard(bs->ship);
	if (bs->scan != NULL)
		table_endscan(bs->scan);
	bs->scan = NULL;
	MemoryContextDelete(bs->statecxt);
	bs->statecxt = NULL;
}

static void
gs_bulk_rescan(CustomScanState *node)
{
	GsBulkScanState *bs = (GsBulkScanState *) node;

	gs_bulk_reset_groups(bs);
	if (bs->ship != NULL)
		gs_bulk_ship_discard(bs->ship);
	if (bs->scan != NULL)
		table_rescan(bs->scan, NULL);
}

/* ---- parallel: the table AM's shared block allocation ---------------- */

static Size
gs_bulk_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return GS_BULK_SHARED_SIZE +
		table_parallelscan_estimate(node->ss.ss_currentRelation, node->ss.ps.state->es_snapshot);
}

static void
gs_bulk_attach_dsm(GsBulkScanState *bs, void *coordinate)
{
	bs->shared = (GsBulkShared *) coordinate;
	bs->pscan = (ParallelTableScanDesc) ((char *) coordinate + GS_BULK_SHARED_SIZE);
}

static void
gs_bulk_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GsBulkScanState *bs = (GsBulkScanState *) node;

	gs_bulk_attach_dsm(bs, coordinate);
	for (int i = 0; i < GS_BULK_NCOUNTS; i++)
		pg_atomic_init_u64(&bs->shared->counts[i], 0);
	table_parallelscan_initialize(node->ss.ss_currentRelation, bs->pscan,
								  node->ss.ps.state->es_snapshot);
}

static void
gs_bulk_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GsBulkScanState *bs = (GsBulkScanState *) node;

	gs_bulk_collect_counts(bs);
	table_parallelscan_reinitialize(node->ss.ss_currentRelation, bs->pscan);
}

static void
gs_bulk_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	gs_bulk_attach_dsm((GsBulkScanState *) node, coordinate);
}

/*
 * Before the Gather above detaches the shared memory: by now every worker
 * whose rows the Gather read has published its counts (a worker publishes
 * before its first row); one a LIMIT stopped early may be missing.
 */
static void
gs_bulk_shutdown(CustomScanState *node)
{
	gs_bulk_collect_counts((GsBulkScanState *) node);
	((GsBulkScanState *) node)->shared = NULL;
}

/* ---- EXPLAIN -------------------------------------------------------- */

static void
gs_bulk_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GsBulkScanState *bs = (GsBulkScanState *) node;
	CustomScan *cs = (CustomScan *) node->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, &cs->scan.plan, ancestors);
	bool		prefix = GS_EXPLAIN_RTABLE_SIZE(es) > 1 || es->verbose;
	ListCell   *lc;
	int			col = 0;
	List	   *keys = NIL;
	List	   *quals = (List *) linitial(cs->custom_exprs);
	List	   *filters = (List *) lthird(cs->custom_exprs);

	foreach(lc, bs->columns)
	{
		if (lfirst_int(lc) == GS_BULK_COLUMN_GROUP)
		{
			TargetEntry *tle = list_nth_node(TargetEntry, cs->custom_scan_tlist, col);

			keys = lappend(keys, deparse_expression((Node *) tle->expr, context, prefix, false));
		}
		col++;
	}
	if (keys != NIL)
		ExplainPropertyList("Group Key", keys, es);
	if (quals != NIL)
		ExplainPropertyText("Filter",
							deparse_expression((Node *) make_ands_explicit(quals), context, prefix, false),
							es);
	ExplainPropertyInteger("Aggregates", NULL, bs->naggs, es);
	if (filters != NIL)
	{
		List	   *shown = NIL;

		foreach(lc, filters)
			shown = lappend(shown, deparse_expression((Node *) lfirst(lc), context, prefix, false));
		ExplainPropertyList("Aggregate Filters", shown, es);
	}
	if (es->analyze)
	{
		GsBulkCounts c;

		/* every participant's (a Gather's workers too); the time is the leader's */
		gs_bulk_own_counts(bs, &c);
		for (int i = 0; i < GS_BULK_NCOUNTS; i++)
			((uint64 *) &c)[i] += ((uint64 *) &bs->workers)[i];
		ExplainPropertyUInteger("Pages", NULL, c.pages, es);
		ExplainPropertyUInteger("Pages All-Visible", NULL, c.pages_all_visible, es);
		ExplainPropertyUInteger("Tuples Visible", NULL, c.tuples, es);
		ExplainPropertyUInteger("Rows Aggregated", NULL, c.rows, es);
		ExplainPropertyUInteger("Keys", NULL, c.keys, es);
		if (bs->ship != NULL)
			ExplainPropertyUInteger("Pages Shipped", NULL, c.pages_shipped, es);
		if (bs->groups != NULL)
		{
			ExplainPropertyUInteger("Group Ranges", NULL, c.ranges, es);
			ExplainPropertyUInteger("Rows In Ranges", NULL, c.range_rows, es);
		}
		if (es->timing)
		{
			ExplainPropertyFloat("Scan Time", "ms", bs->scan_ms, 3, es);
			/* the finals above this node run in this process: their selections */
			ExplainPropertyFloat("Select Time", "ms", gs_select_ms_total - bs->select_ms0, 3, es);
		}
	}
}
