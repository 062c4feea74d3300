/*
 * bulk_groups.c — the bulk scan's groups: a hash table from the GROUP BY
 * value to the group's states, and, where the expression allows it, a
 * cached range of the column that decides the group, so that most rows
 * find their group with two comparisons instead of evaluating the
 * expression.
 *
 * The range.  Dashboards group by a floor of a time column: date_trunc,
 * date_bin, a timestamptz cast to date, floor(extract(epoch from ts)/n)*n,
 * an integer id divided by a constant.  Each is a non-decreasing function f
 * of one column (planner_bulk_scan.c accepts exactly a list of such
 * shapes), so the rows of one group have column values in one interval.
 * When a row's value x misses the cached interval, the expression is
 * evaluated for x as the executor would (its own ExprState), and then, to
 * find how far the group reaches, at probe values above x: doubling steps
 * until f changes, then a binary search between the last equal and the
 * first different probe.  Because f is non-decreasing, f(x) = f(y) makes f
 * constant on [x, y]: the interval is exact, computed by PostgreSQL's own
 * functions, with no calendar or time zone arithmetic of ours.  Probes stay
 * within a window of x where none of these functions can fail (valid
 * timestamps and dates, far from their limits), so a probe never raises
 * an error the query itself would not.  A function of the session time
 * zone (date_trunc of a timestamptz, its casts to date and timestamp) is
 * non-decreasing only while the zone's UTC offset stays the same (in a
 * zone whose clocks jumped by a non-multiple of the unit at an unaligned
 * time it need not be across the jump), so its probes stop at the zone's
 * next offset change (pg_next_dst_boundary).  The interval starts at x
 * itself: time-ordered data (the usual heap order) misses once per group.
 *
 * Values.  Without a range (any other expression), the expression is
 * evaluated per row over the heap tuple; the planner then only allows
 * by-value types whose equality is bitwise, so the table compares Datums.
 * With a range, the value may be of any hashable type (numeric for the
 * epoch shapes): looked up once per miss with the type's hash and equality
 * functions.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "pgtime.h"
#include "utils/datum.h"
#include "utils/sortsupport.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "scan/bulk_fetch.h"
#include "scan/bulk_groups.h"

/* groups of one hash value (one group for bitwise types) */
typedef struct GsBulkKeyed
{
	Datum		key;
	GsBulkGroup *group;
	struct GsBulkKeyed *next;
} GsBulkKeyed;

typedef struct GsBulkEntry
{
	uint64		h;				/* the Datum (bitwise types) or its hash */
	char		status;			/* simplehash's */
	GsBulkKeyed *first;
} GsBulkEntry;

/* a 64-bit finalizer (splitmix64's): bucket floors differ in high bits */
static inline uint32
gs_bulk_mix(uint64 k)
{
	k ^= k >> 30;
	k *= UINT64CONST(0xbf58476d1ce4e5b9);
	k ^= k >> 27;
	k *= UINT64CONST(0x94d049bb133111eb);
	k ^= k >> 31;
	return (uint32) k;
}

#define SH_PREFIX gs_bulk_hash
#define SH_ELEMENT_TYPE GsBulkEntry
#define SH_KEY_TYPE uint64
#define SH_KEY h
#define SH_HASH_KEY(tb, k) gs_bulk_mix(k)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

struct GsBulkGroups
{
	MemoryContext mcxt;			/* groups, keys, the hash table */
	ExprState  *expr;
	Oid			typid;			/* the expression's */
	int16		typlen;
	bool		typbyval;
	bool		bitwise;		/* by value, equality is bitwise */
	FmgrInfo	eq;				/* else: the type's equality and hash */
	FmgrInfo	hash;
	Oid			collation;
	TupleTableSlot *heap_slot;	/* the expression over a row */
	TupleTableSlot *probe_slot; /* ... over one column value (ranges) */
	AttrNumber	mono_attno;
	GsBulkColumn mono_column;
	Oid			mono_typid;
	int			zones;
	GsBulkNewGroup new_group;
	void	   *arg;

	gs_bulk_hash_hash *table;
	GsBulkKeyed *null_group;
	GsBulkKeyed *last;			/* the previous row's group (no range) */
	bool		have_range;
	int64		lo;				/* [lo, hi): the column values of cached */
	int64		hi;
	GsBulkKeyed *cached;

	bool		iter_started;
	bool		null_done;
	gs_bulk_hash_iterator iter;
	GsBulkKeyed *iter_chain;
	GsBulkKeyed **sorted;		/* gs_bulk_groups_sort's order, NULL: the table's */
	int			nsorted;
	int			next_sorted;
	bool		null_first;		/* ... and where the NULL group goes in it */

	uint64		cached_rows;
	uint64		ranges;
};

/* a by-value type whose equality is bitwise: groups compare as Datums */
bool
gs_bulk_type_bitwise(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID || typid == DATEOID ||
		typid == TIMESTAMPOID || typid == TIMESTAMPTZOID || typid == BOOLOID || typid == OIDOID;
}

GsBulkGroups *
gs_bulk_groups_create(MemoryContext mcxt, EState *estate, Expr *expr, AttrNumber mono_attno,
					  int zones, TupleDesc reldesc, GsBulkNewGroup new_group, void *arg)
{
	GsBulkGroups *g = (GsBulkGroups *) palloc0(sizeof(GsBulkGroups));

	g->mcxt = mcxt;
	/* no parent: compiled for any slot, not for the node's scan tuple */
	g->expr = ExecInitExpr(expr, NULL);
	g->typid = exprType((Node *) expr);
	g->collation = exprCollation((Node *) expr);
	get_typlenbyval(g->typid, &g->typlen, &g->typbyval);
	g->bitwise = gs_bulk_type_bitwise(g->typid);
	if (!g->bitwise)
	{
		TypeCacheEntry *tc = lookup_type_cache(g->typid, TYPECACHE_EQ_OPR_FINFO |
											   TYPECACHE_HASH_PROC_FINFO);

		if (!OidIsValid(tc->eq_opr_finfo.fn_oid) || !OidIsValid(tc->hash_proc_finfo.fn_oid))
			elog(ERROR, "gpuselect: bulk scan GROUP BY type %u is not hashable", g->typid);
		fmgr_info_copy(&g->eq, &tc->eq_opr_finfo, CurrentMemoryContext);
		fmgr_info_copy(&g->hash, &tc->hash_proc_finfo, CurrentMemoryContext);
	}
	g->heap_slot = ExecInitExtraTupleSlot(estate, reldesc, &TTSOpsHeapTuple);
	g->mono_attno = mono_attno;
	g->zones = zones;
	if (mono_attno > 0)
	{
		g->mono_typid = TupleDescAttr(reldesc, mono_attno - 1)->atttypid;
		gs_bulk_column_init(&g->mono_column, reldesc, mono_attno);
		g->probe_slot = ExecInitExtraTupleSlot(estate, reldesc, &TTSOpsVirtual);
	}
	g->new_group = new_group;
	g->arg = arg;
	return g;
}

void
gs_bulk_groups_forget(GsBulkGroups *g)
{
	g->table = NULL;
	g->null_group = NULL;
	g->last = NULL;
	g->have_range = false;
	g->cached = NULL;
	g->iter_started = false;
	g->null_done = false;
	g->iter_chain = NULL;
	g->sorted = NULL;
	g->nsorted = 0;
	g->next_sorted = 0;
}

void
gs_bulk_groups_counts(GsBulkGroups *g, uint64 *cached_rows, uint64 *ranges)
{
	*cached_rows = g->cached_rows;
	*ranges = g->ranges;
}

/* ---- the table ------------------------------------------------------ */

static bool
gs_bulk_key_equal(GsBulkGroups *g, Datum a, Datum b)
{
	if (g->bitwise)
		return a == b;
	return DatumGetBool(FunctionCall2Coll(&g->eq, g->collation, a, b));
}

/* a new group; its value copied unless NULL */
static GsBulkKeyed *
gs_bulk_new_keyed(GsBulkGroups *g, Datum key, bool isnull)
{
	GsBulkKeyed *k = (GsBulkKeyed *) MemoryContextAllocZero(g->mcxt, sizeof(GsBulkKeyed));
	MemoryContext old = MemoryContextSwitchTo(g->mcxt);

	k->key = isnull ? (Datum) 0 : datumCopy(key, g->typbyval, g->typlen);
	MemoryContextSwitchTo(old);
	k->group = g->new_group(g->arg);
	return k;
}

/* the group of a value, created at its first row */
static GsBulkKeyed *
gs_bulk_find(GsBulkGroups *g, Datum key, bool isnull)
{
	GsBulkEntry *e;
	GsBulkKeyed *k;
	uint64		h;
	bool		found;

	if (isnull)
	{
		if (g->null_group == NULL)
			g->null_group = gs_bulk_new_keyed(g, (Datum) 0, true);
		return g->null_group;
	}
	if (g->table == NULL)
		g->table = gs_bulk_hash_create(g->mcxt, 256, NULL);
	h = g->bitwise ? (uint64) key :
		(uint64) DatumGetUInt32(FunctionCall1Coll(&g->hash, g->collation, key));
	e = gs_bulk_hash_insert(g->table, h, &found);
	if (!found)
		e->first = NULL;
	for (k = e->first; k != NULL; k = k->next)
		if (gs_bulk_key_equal(g, k->key, key))
			return k;
	k = gs_bulk_new_keyed(g, key, false);
	k->next = e->first;
	e->first = k;
	return k;
}

/* ---- ranges ---------------------------------------------------------- */

/* the column value as a point of its (integer) domain */
static int64
gs_bulk_point(Oid typid, Datum d)
{
	switch (typid)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
		case DATEOID:
			return DatumGetInt32(d);
		default:				/* int8, timestamp, timestamptz */
			return DatumGetInt64(d);
	}
}

static Datum
gs_bulk_point_datum(Oid typid, int64 x)
{
	switch (typid)
	{
		case INT2OID:
			return Int16GetDatum((int16) x);
		case INT4OID:
		case DATEOID:
			return Int32GetDatum((int32) x);
		default:
			return Int64GetDatum(x);
	}
}

/*
 * The probes' window above x, [x, *limit): where the column's values are
 * valid and far from every limit of the functions the planner accepts
 * (timestamps and dates 400 days inside their valid range), so that no
 * probe can fail where x did not.  False: x is too close to a limit.
 */
static bool
gs_bulk_window(Oid typid, int64 x, int64 *limit)
{
	const int64 day = USECS_PER_DAY;

	switch (typid)
	{
		case INT2OID:
			*limit = (int64) PG_INT16_MAX + 1;
			return true;
		case INT4OID:
			*limit = (int64) PG_INT32_MAX + 1;
			return true;
		case INT8OID:
			*limit = x < PG_INT64_MAX - ((int64) 1 << 62) ? x + ((int64) 1 << 62) : PG_INT64_MAX;
			return true;
		case DATEOID:
			if (x < DATETIME_MIN_JULIAN - POSTGRES_EPOCH_JDATE + 400 ||
				x >= TIMESTAMP_END_JULIAN - POSTGRES_EPOCH_JDATE - 800)
				return false;
			*limit = Min(x + 400, TIMESTAMP_END_JULIAN - POSTGRES_EPOCH_JDATE - 400);
			return true;
		default:				/* timestamp, timestamptz */
			if (x < MIN_TIMESTAMP + 400 * day || x >= END_TIMESTAMP - 800 * day)
				return false;
			*limit = Min(x + 400 * day, END_TIMESTAMP - 400 * day);
			return true;
	}
}

/*
 * With the session time zone: stop the probes at its next UTC offset
 * change after x (a timestamptz, microseconds since 2000).  False when the
 * zone cannot say.
 */
static bool
gs_bulk_zone_window(int64 x, int64 *limit)
{
	pg_time_t	sec = (pg_time_t) (x >= 0 ? x / USECS_PER_SEC : -((-x + USECS_PER_SEC - 1) / USECS_PER_SEC)) +
		(pg_time_t) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY;
	pg_time_t	boundary;
	long		before_off,
				after_off;
	int			before_dst,
				after_dst;
	int			r;

	r = pg_next_dst_boundary(&sec, &before_off, &before_dst, &boundary, &after_off, &after_dst,
							 session_timezone);
	if (r < 0)
		return false;
	if (r == 1)
	{
		int64		b = ((int64) boundary - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY) *
			USECS_PER_SEC;

		if (b <= x)
			return false;
		*limit = Min(*limit, b);
	}
	return true;
}

/* f(x): the expression for a row whose column is x */
static Datum
gs_bulk_eval_at(GsBulkGroups *g, int64 x, ExprContext *econtext, bool *isnull)
{
	TupleTableSlot *slot = g->probe_slot;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	slot->tts_values[g->mono_attno - 1] = gs_bulk_point_datum(g->mono_typid, x);
	slot->tts_isnull[g->mono_attno - 1] = false;
	ExecStoreVirtualTuple(slot);
	econtext->ecxt_scantuple = slot;
	return ExecEvalExprSwitchContext(g->expr, econtext, isnull);
}

static bool
gs_bulk_same_at(GsBulkGroups *g, int64 x, Datum b, ExprContext *econtext)
{
	bool		isnull;
	Datum		d = gs_bulk_eval_at(g, x, econtext, &isnull);

	return !isnull && gs_bulk_key_equal(g, d, b);
}

/*
 * The end of f's run of value b from x: the least y in (x, limit] with
 * f(y) != b, limit if none (f non-decreasing: doubling, then bisection).
 */
static int64
gs_bulk_run_end(GsBulkGroups *g, int64 x, int64 limit, Datum b, ExprContext *econtext)
{
	int64		good = x;
	int64		bad = limit;
	uint64		step = 1;

	while (good < limit - 1)
	{
		int64		probe = (uint64) (limit - 1 - good) > step ? good + (int64) step : limit - 1;

		if (!gs_bulk_same_at(g, probe, b, econtext))
		{
			bad = probe;
			break;
		}
		good = probe;
		step <<= 1;
	}
	while (bad - good > 1)
	{
		int64		mid = good + (bad - good) / 2;

		if (gs_bulk_same_at(g, mid, b, econtext))
			good = mid;
		else
			bad = mid;
	}
	return good + 1;
}

/* a row whose column value x missed the cached range */
static GsBulkKeyed *
gs_bulk_range_miss(GsBulkGroups *g, int64 x, ExprContext *econtext)
{
	bool		isnull;
	Datum		b = gs_bulk_eval_at(g, x, econtext, &isnull);
	GsBulkKeyed *k = gs_bulk_find(g, b, isnull);
	int64		limit;

	if (isnull || !gs_bulk_window(g->mono_typid, x, &limit) ||
		((g->zones & GS_BULK_ZONE_SESSION) && !gs_bulk_zone_window(x, &limit)))
		return k;				/* this row only */
	g->hi = gs_bulk_run_end(g, x, limit, k->key, econtext);
	g->lo = x;
	g->cached = k;
	g->have_range = true;
	g->ranges++;
	return k;
}

GsBulkGroup *
gs_bulk_groups_of(GsBulkGroups *g, HeapTuple tup, ExprContext *econtext)
{
	TupleDesc	desc = g->heap_slot->tts_tupleDescriptor;
	bool		isnull;
	Datum		d;

	if (g->mono_attno > 0)
	{
		d = gs_bulk_fetch(&g->mono_column, tup, desc, &isnull);
		if (!isnull)
		{
			int64		x = gs_bulk_point(g->mono_typid, d);

			if (g->have_range && x >= g->lo && x < g->hi)
			{
				g->cached_rows++;
				return g->cached->group;
			}
			return gs_bulk_range_miss(g, x, econtext)->group;
		}
	}
	ExecStoreHeapTuple(tup, g->heap_slot, false);
	econtext->ecxt_scantuple = g->heap_slot;
	d = ExecEvalExprSwitchContext(g->expr, econtext, &isnull);
	if (isnull)
		return gs_bulk_find(g, d, true)->group;
	if (g->last != NULL && gs_bulk_key_equal(g, g->last->key, d))
		return g->last->group;
	g->last = gs_bulk_find(g, d, false);	/* never the NULL group */
	return g->last->group;
}

/* ---- output ---------------------------------------------------------- */

static int
gs_bulk_keyed_cmp(const void *a, const void *b, void *arg)
{
	return ApplySortComparator((*(GsBulkKeyed *const *) a)->key, false,
							   (*(GsBulkKeyed *const *) b)->key, false, (SortSupport) arg);
}

/*
 * Emit the groups in the order of sortop (an ordering operator of the
 * value's type) under collation, NULL first or last: the order the
 * planner's pathkeys promise above the scan (planner_bulk_scan.c), so
 * that a Gather Merge and a sorted Finalize Aggregate can take them.
 */
void
gs_bulk_groups_sort(GsBulkGroups *g, Oid sortop, Oid collation, bool nulls_first)
{
	SortSupportData ssup;
	MemoryContext old = MemoryContextSwitchTo(g->mcxt);
	GsBulkKeyed *k;
	GsBulkEntry *e;
	gs_bulk_hash_iterator it;
	int			n = 0;

	memset(&ssup, 0, sizeof(ssup));
	ssup.ssup_cxt = CurrentMemoryContext;
	ssup.ssup_collation = collation;
	ssup.ssup_nulls_first = nulls_first;
	PrepareSortSupportFromOrderingOp(sortop, &ssup);
	g->null_first = nulls_first;
	if (g->table != NULL)
	{
		gs_bulk_hash_start_iterate(g->table, &it);
		while ((e = gs_bulk_hash_iterate(g->table, &it)) != NULL)
			for (k = e->first; k != NULL; k = k->next)
				n++;
	}
	g->sorted = palloc(sizeof(GsBulkKeyed *) * Max(n, 1));
	g->nsorted = 0;
	if (g->table != NULL)
	{
		gs_bulk_hash_start_iterate(g->table, &it);
		while ((e = gs_bulk_hash_iterate(g->table, &it)) != NULL)
			for (k = e->first; k != NULL; k = k->next)
				g->sorted[g->nsorted++] = k;
	}
	qsort_arg(g->sorted, g->nsorted, sizeof(GsBulkKeyed *), gs_bulk_keyed_cmp, &ssup);
	g->next_sorted = 0;
	MemoryContextSwitchTo(old);
}

/* the next group of gs_bulk_groups_sort's order */
static bool
gs_bulk_groups_next_sorted(GsBulkGroups *g, GsBulkGroup **group, Datum *key, bool *isnull)
{
	bool		null_now = g->null_group != NULL && !g->null_done &&
		(g->null_first || g->next_sorted >= g->nsorted);

	if (null_now)
	{
		g->null_done = true;
		*group = g->null_group->group;
		*key = (Datum) 0;
		*isnull = true;
		return true;
	}
	if (g->next_sorted >= g->nsorted)
		return false;
	*group = g->sorted[g->next_sorted]->group;
	*key = g->sorted[g->next_sorted]->key;
	*isnull = false;
	g->next_sorted++;
	return true;
}

bool
gs_bulk_groups_next(GsBulkGroups *g, GsBulkGroup **group, Datum *key, bool *isnull)
{
	GsBulkEntry *e;

	if (g->sorted != NULL)
		return gs_bulk_groups_next_sorted(g, group, key, isnull);
	if (g->null_group != NULL && !g->null_done)
	{
		g->null_done = true;
		*group = g->null_group->group;
		*key = (Datum) 0;
		*isnull = true;
		return true;
	}
	if (g->table == NULL)
		return false;
	if (!g->iter_started)
	{
		gs_bulk_hash_start_iterate(g->table, &g->iter);
		g->iter_started = true;
	}
	while (g->iter_chain == NULL)
	{
		e = gs_bulk_hash_iterate(g->table, &g->iter);
		if (e == NULL)
			return false;
		g->iter_chain = e->first;
	}
	*group = g->iter_chain->group;
	*key = g->iter_chain->key;
	*isnull = false;
	g->iter_chain = g->iter_chain->next;
	return true;
}

/* ---- columns (bulk_fetch.h) ------------------------------------------ */

/*
 * The column's offset in a tuple without NULLs: every column before it
 * fixed-width (dropped ones too: an old tuple still holds their bytes, a
 * new one has them NULL and takes heap_getattr), each at its alignment,
 * as heap_getattr's own cached offsets are computed.
 */
void
gs_bulk_column_init(GsBulkColumn *c, TupleDesc desc, AttrNumber attno)
{
	int			off = 0;

	c->attno = attno;
	c->byval = TupleDescAttr(desc, attno - 1)->attbyval;
	c->len = TupleDescAttr(desc, attno - 1)->attlen;
	c->offset = -1;
	for (int j = 0; j < attno; j++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, j);

		if (att->attlen <= 0)
			return;
		off = att_align_nominal(off, att->attalign);
		if (j == attno - 1)
			c->offset = off;
		off += att->attlen;
	}
}
