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
 * With one expression every interval found is kept (gs_bulk_range_miss
 * says how rows out of order find theirs), and a sibling table's (a
 * Citus shard's) can be adopted: gs_bulk_groups_adopt_ranges.
 *
 * Values.  Without a range (any other expression), the expression is
 * evaluated per row over the heap tuple.  A by-value type whose equality is
 * bitwise (integers, date, timestamp[tz], bool, oid) compares as Datums.
 * Any other (text, varchar, numeric, ...) compares as the executor's
 * grouping does (execGrouping.c): by the GROUP BY clause's equality
 * operator under the expression's collation, hashed by that operator's hash
 * function under the same collation (execTuplesHashPrepare's), so values
 * the collation calls equal ('a' and 'A' under a case-insensitive ICU
 * collation) hash alike and share a group; under a deterministic collation
 * text's hash is of the bytes.  The functions run in the per-tuple memory
 * (a compressed value is detoasted there).  A group keeps the first value
 * the scan met, detoasted and copied into the groups' memory (the page the
 * row was read from is unpinned later): where equal values differ
 * ('a', 'A'), that is the one a HashAggregate over a SeqScan outputs too,
 * the first row's in heap order (a parallel plan's, or a GroupAggregate
 * over a Sort's, is whichever came first there: the executor's own
 * ambiguity).  With a range, the value may be of any hashable type (numeric
 * for the epoch shapes), compared with the type's default hash and
 * equality functions (the planner allows no other there).
 *
 * Several expressions (GROUP BY a time bucket, a host id).  A group is the
 * tuple of their values, NULL a value of its own in each (the executor's
 * grouping: NULLs are not distinct).  At most one expression has the range
 * (the planner picks it); the others are evaluated per row.  The table is
 * keyed by a hash of the whole tuple; groups of one hash are told apart by
 * comparing every value.  The previous row's group is tried first.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/htup_details.h"
#include "common/int.h"
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
#include "base/types.h"
#include "scan/bulk_groups.h"

/* one group's values and states; groups of one hash value chained */
typedef struct GsBulkKeyed
{
	GsBulkGroup *group;
	struct GsBulkKeyed *next;
	Datum	   *keys;			/* per expression; copies in the groups' memory */
	bool	   *nulls;
} GsBulkKeyed;

typedef struct GsBulkEntry
{
	uint64		h;				/* the values' hash (one bitwise value: itself) */
	char		status;			/* simplehash's */
	GsBulkKeyed *first;
} GsBulkEntry;

/* a 64-bit finalizer (splitmix64's): bucket floors differ in high bits */
static inline uint64
gs_bulk_mix64(uint64 k)
{
	k ^= k >> 30;
	k *= UINT64CONST(0xbf58476d1ce4e5b9);
	k ^= k >> 27;
	k *= UINT64CONST(0x94d049bb133111eb);
	k ^= k >> 31;
	return k;
}

#define SH_PREFIX gs_bulk_hash
#define SH_ELEMENT_TYPE GsBulkEntry
#define SH_KEY_TYPE uint64
#define SH_KEY h
#define SH_HASH_KEY(tb, k) ((uint32) gs_bulk_mix64(k))
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* one GROUP BY expression */
typedef struct GsBulkKeyCol
{
	ExprState  *expr;
	Oid			typid;
	int16		typlen;
	bool		typbyval;
	bool		bitwise;		/* by value, equality is bitwise */
	FmgrInfo	eq;				/* else: the GROUP BY's equality and its hash */
	FmgrInfo	hash;
	Oid			collation;		/* the expression's: theirs */
} GsBulkKeyCol;

struct GsBulkGroups
{
	MemoryContext mcxt;			/* groups, keys, the hash table */
	int			ncols;
	GsBulkKeyCol *cols;
	TupleTableSlot *heap_slot;	/* the expressions over a row */
	TupleTableSlot *probe_slot; /* ... the range's over one column value */
	int			mono_col;		/* the expression with the range; -1: none */
	AttrNumber	mono_attno;
	GsBulkColumn mono_column;
	Oid			mono_typid;
	int			zones;
	GsBulkNewGroup new_group;
	void	   *arg;

	gs_bulk_hash_hash *table;
	Datum	   *row_keys;		/* the current row's values */
	bool	   *row_nulls;
	GsBulkKeyed *last;			/* the previous row's group */
	bool		have_range;
	int64		lo;				/* [lo, hi): the column values where mono_col's */
	int64		hi;				/* expression is range_key */
	Datum		range_key;
	bool		range_key_copied;	/* a copy of ours (several expressions, by reference) */
	GsBulkKeyed *cached;		/* one expression: range_key's group */
	struct GsBulkRange *known;	/* one expression: the ranges found, sorted by lo */
	int			cur;			/* ... the cached one's place, -1: none */
	int			nknown;
	int			maxknown;

	bool		iter_started;
	gs_bulk_hash_iterator iter;
	GsBulkKeyed *iter_chain;
	GsBulkKeyed **sorted;		/* gs_bulk_groups_sort's order, NULL: the table's */
	int			nsorted;
	int			next_sorted;
	int			nsortkeys;		/* ... by these expressions */
	int		   *sort_cols;
	SortSupport sort_keys;

	uint64		cached_rows;
	uint64		ranges;
};

/* a range found (one expression): [lo, hi) of the column is keyed's group */
typedef struct GsBulkRange
{
	int64		lo;
	int64		hi;
	bool		exact;			/* lo is where f's run begins (f(lo - 1) differs) */
	GsBulkKeyed *keyed;
} GsBulkRange;

#define GS_BULK_MAX_KNOWN	65536	/* ranges remembered, at most */

/* a by-value type whose equality is bitwise: groups compare as Datums */
bool
gs_bulk_type_bitwise(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID || typid == DATEOID ||
		typid == TIMESTAMPOID || typid == TIMESTAMPTZOID || typid == BOOLOID || typid == OIDOID;
}

/*
 * One GROUP BY expression: eqop is its clause's equality operator (the
 * planner allows a bitwise type only under its default one, where Datums
 * compare)
 */
static void
gs_bulk_key_col_init(GsBulkKeyCol *c, Expr *expr, Oid eqop)
{
	RegProcedure lhash,
				rhash;

	/* no parent: compiled for any slot, not for the node's scan tuple */
	c->expr = ExecInitExpr(expr, NULL);
	c->typid = exprType((Node *) expr);
	c->collation = exprCollation((Node *) expr);
	get_typlenbyval(c->typid, &c->typlen, &c->typbyval);
	c->bitwise = gs_bulk_type_bitwise(c->typid);
	if (!c->bitwise)
	{
		/* as execTuplesHashPrepare: the operator's function and left hash */
		if (!get_op_hash_functions(eqop, &lhash, &rhash))
			elog(ERROR, "gpuselect: bulk scan GROUP BY operator %u is not hashable", eqop);
		fmgr_info(get_opcode(eqop), &c->eq);
		fmgr_info(lhash, &c->hash);
	}
}

GsBulkGroups *
gs_bulk_groups_create(MemoryContext mcxt, EState *estate, List *exprs, List *eqops,
					  int mono_col, AttrNumber mono_attno, int zones, TupleDesc reldesc,
					  GsBulkNewGroup new_group, void *arg)
{
	GsBulkGroups *g = (GsBulkGroups *) palloc0(sizeof(GsBulkGroups));
	ListCell   *le,
			   *lo;

	g->mcxt = mcxt;
	g->ncols = list_length(exprs);
	if (list_length(eqops) != g->ncols)
		elog(ERROR, "gpuselect: bulk scan GROUP BY of %d expressions and %d operators",
			 g->ncols, list_length(eqops));
	g->cols = (GsBulkKeyCol *) palloc0(sizeof(GsBulkKeyCol) * g->ncols);
	forboth(le, exprs, lo, eqops)
		gs_bulk_key_col_init(&g->cols[foreach_current_index(le)], (Expr *) lfirst(le),
							 (Oid) intVal(lfirst(lo)));
	g->row_keys = (Datum *) palloc0(sizeof(Datum) * g->ncols);
	g->row_nulls = (bool *) palloc0(sizeof(bool) * g->ncols);
	g->heap_slot = ExecInitExtraTupleSlot(estate, reldesc, &TTSOpsHeapTuple);
	g->cur = -1;
	g->mono_col = mono_attno > 0 ? mono_col : -1;
	g->mono_attno = mono_attno;
	g->zones = zones;
	if (mono_attno > 0)
	{
		if (mono_col < 0 || mono_col >= g->ncols)
			elog(ERROR, "gpuselect: bulk scan range expression %d out of range", mono_col);
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
	g->last = NULL;
	g->nknown = 0;
	g->cur = -1;
	g->maxknown = 0;
	g->known = NULL;			/* (gone with the groups' memory) */
	g->have_range = false;
	g->range_key_copied = false;	/* (gone with the groups' memory) */
	g->cached = NULL;
	g->iter_started = false;
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
gs_bulk_key_equal(const GsBulkKeyCol *c, Datum a, Datum b)
{
	if (c->bitwise)
		return a == b;
	return DatumGetBool(FunctionCall2Coll((FmgrInfo *) &c->eq, c->collation, a, b));
}

/* are a group's values the row's?  (NULL equals NULL, as in grouping) */
static bool
gs_bulk_keyed_is(GsBulkGroups *g, const GsBulkKeyed *k, const Datum *keys, const bool *nulls)
{
	for (int i = 0; i < g->ncols; i++)
	{
		if (k->nulls[i] != nulls[i])
			return false;
		if (!nulls[i] && !gs_bulk_key_equal(&g->cols[i], k->keys[i], keys[i]))
			return false;
	}
	return true;
}

/* the values' hash: one bitwise value is itself (no two groups share it) */
static uint64
gs_bulk_keys_hash(GsBulkGroups *g, const Datum *keys, const bool *nulls)
{
	uint64		h = 0;

	for (int i = 0; i < g->ncols; i++)
	{
		const GsBulkKeyCol *c = &g->cols[i];
		uint64		v = nulls[i] ? UINT64CONST(0x9e3779b97f4a7c15) :
			c->bitwise ? (uint64) keys[i] :
			(uint64) DatumGetUInt32(FunctionCall1Coll((FmgrInfo *) &c->hash, c->collation, keys[i]));

		if (g->ncols == 1)
			return v;
		h = gs_bulk_mix64(h ^ v) + i;
	}
	return h;
}

/*
 * A new group; its values copied into the groups' memory, a varlena
 * detoasted first (a value read from the row may point into its page, or
 * be compressed or a TOAST pointer; a short header is kept)
 */
static GsBulkKeyed *
gs_bulk_new_keyed(GsBulkGroups *g, const Datum *keys, const bool *nulls)
{
	GsBulkKeyed *k = (GsBulkKeyed *) MemoryContextAllocZero(g->mcxt, sizeof(GsBulkKeyed));
	MemoryContext old = CurrentMemoryContext;

	k->keys = (Datum *) MemoryContextAlloc(g->mcxt, sizeof(Datum) * g->ncols);
	k->nulls = (bool *) MemoryContextAlloc(g->mcxt, sizeof(bool) * g->ncols);
	for (int i = 0; i < g->ncols; i++)
	{
		const GsBulkKeyCol *c = &g->cols[i];
		Datum		v = keys[i];

		k->nulls[i] = nulls[i];
		if (nulls[i])
		{
			k->keys[i] = (Datum) 0;
			continue;
		}
		if (c->typlen == -1 && VARATT_IS_EXTENDED(DatumGetPointer(v)))
			v = PointerGetDatum(pg_detoast_datum_packed((struct varlena *) DatumGetPointer(v)));
		MemoryContextSwitchTo(g->mcxt);
		k->keys[i] = datumCopy(v, c->typbyval, c->typlen);
		MemoryContextSwitchTo(old);
	}
	/* (the caller may be in the per-tuple memory: the states live with the groups) */
	MemoryContextSwitchTo(g->mcxt);
	k->group = g->new_group(g->arg, k->keys, k->nulls);
	MemoryContextSwitchTo(old);
	return k;
}

/* the group of these values, created at its first row */
static GsBulkKeyed *
gs_bulk_find(GsBulkGroups *g, const Datum *keys, const bool *nulls)
{
	GsBulkEntry *e;
	GsBulkKeyed *k;
	bool		found;

	if (g->table == NULL)
		g->table = gs_bulk_hash_create(g->mcxt, 256, NULL);
	e = gs_bulk_hash_insert(g->table, gs_bulk_keys_hash(g, keys, nulls), &found);
	if (!found)
		e->first = NULL;
	for (k = e->first; k != NULL; k = k->next)
		if (gs_bulk_keyed_is(g, k, keys, nulls))
			return k;
	k = gs_bulk_new_keyed(g, keys, nulls);
	k->next = e->first;
	e->first = k;
	return k;
}

/* ---- ranges ---------------------------------------------------------- */

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

/* f(x): the range's expression for a row whose column is x */
static Datum
gs_bulk_eval_at(GsBulkGroups *g, int64 x, ExprContext *econtext, bool *isnull)
{
	TupleTableSlot *slot = g->probe_slot;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	slot->tts_values[g->mono_attno - 1] = gs_int_point_datum(g->mono_typid, x);
	slot->tts_isnull[g->mono_attno - 1] = false;
	ExecStoreVirtualTuple(slot);
	econtext->ecxt_scantuple = slot;
	return ExecEvalExprSwitchContext(g->cols[g->mono_col].expr, econtext, isnull);
}

static bool
gs_bulk_same_at(GsBulkGroups *g, int64 x, Datum b, ExprContext *econtext)
{
	bool		isnull;
	Datum		d = gs_bulk_eval_at(g, x, econtext, &isnull);

	return !isnull && gs_bulk_key_equal(&g->cols[g->mono_col], d, b);
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

/*
 * the last known range with lo <= x, or -1.  Without branches on the data
 * (the base moves by a conditional add, as gs_shard_bucket's): a Citus
 * shard's rows skip an hour or two as often as not, and a branching
 * search over 720 ranges mispredicted half its steps.
 */
static int
gs_bulk_known_at(const GsBulkGroups *g, int64 x)
{
	const GsBulkRange *base = g->known;
	int			len = g->nknown;

	if (len == 0 || base[0].lo > x)
		return -1;
	while (len > 1)
	{
		int			half = len / 2;

		base = base[half].lo <= x ? base + half : base;
		len -= half;
	}
	return (int) (base - g->known);
}

/* known range i made the cached one */
static void
gs_bulk_use_known(GsBulkGroups *g, int i)
{
	g->cur = i;
	g->cached = g->known[i].keyed;
	g->range_key = g->cached->keys[0];
	g->lo = g->known[i].lo;
	g->hi = g->known[i].hi;
	g->have_range = true;
}

/* [lo, hi) of keyed's group remembered at place i (before the range there) */
static void
gs_bulk_know(GsBulkGroups *g, int i, int64 lo, int64 hi, bool exact, GsBulkKeyed *keyed)
{
	if (g->nknown == g->maxknown)
	{
		if (g->maxknown >= GS_BULK_MAX_KNOWN)
			return;
		g->maxknown = Max(64, 2 * g->maxknown);
		g->known = g->known == NULL ?
			(GsBulkRange *) MemoryContextAlloc(g->mcxt, sizeof(GsBulkRange) * g->maxknown) :
			(GsBulkRange *) repalloc(g->known, sizeof(GsBulkRange) * g->maxknown);
	}
	memmove(&g->known[i + 1], &g->known[i], sizeof(GsBulkRange) * (g->nknown - i));
	g->known[i].lo = lo;
	g->known[i].hi = hi;
	g->known[i].exact = exact;
	g->known[i].keyed = keyed;
	g->nknown++;
	g->cur = i;
}

/*
 * A new range for x, from the known range p just below it, in a few
 * evaluations instead of a search: where f(p->hi) is already x's value
 * (inside p->hi's window), f is constant on [p->hi, x] and x's run begins
 * at p->hi (f(p->hi - 1) is p's value, another); and where p is a whole
 * run (exact), runs are often as wide as it (an hour, a day, a bucket of
 * a date_bin or a division): f(lo + width - 1) the same and f(lo + width)
 * not, inside x's window, end x's run there.  g->lo set to the run's
 * beginning where found; g->hi to its end where found, else left < 0.
 */
static void
gs_bulk_range_after(GsBulkGroups *g, const GsBulkRange *p, int64 x, int64 limit,
					ExprContext *econtext)
{
	int64		plimit;
	int64		e;

	if (!gs_bulk_window(g->mono_typid, p->hi, &plimit) ||
		((g->zones & GS_BULK_ZONE_SESSION) && !gs_bulk_zone_window(p->hi, &plimit)) ||
		x >= plimit || !gs_bulk_same_at(g, p->hi, g->range_key, econtext))
		return;
	g->lo = p->hi;
	if (!p->exact || pg_add_s64_overflow(g->lo, p->hi - p->lo, &e) || e - 1 < x || e > limit)
		return;
	if (gs_bulk_same_at(g, e - 1, g->range_key, econtext) &&
		(e == limit || !gs_bulk_same_at(g, e, g->range_key, econtext)))
		g->hi = e;
}

/*
 * A row whose column value x missed the cached range: the range's
 * expression's value for it into row_keys[mono_col], and the range of x
 * that has that value cached (not for a NULL, or near a limit: this row
 * only).  One expression: its group cached with it, and the ranges found
 * remembered, so that rows not in the column's order (a Citus shard's
 * rows, hashed on another column, take a new hour every other row) find
 * theirs again by a binary search, and a group met again below where its
 * range began grows that range down with one evaluation: f(x) equal to
 * f(lo) of the range above x, inside x's window, makes f constant on
 * [x, lo].
 */
static void
gs_bulk_range_miss(GsBulkGroups *g, int64 x, ExprContext *econtext)
{
	int			m = g->mono_col;
	const GsBulkKeyCol *c = &g->cols[m];
	bool		isnull;
	Datum		b = gs_bulk_eval_at(g, x, econtext, &isnull);
	int64		limit;
	int			next = 0;
	MemoryContext old;

	g->row_keys[m] = b;
	g->row_nulls[m] = isnull;
	if (isnull || !gs_bulk_window(g->mono_typid, x, &limit) ||
		((g->zones & GS_BULK_ZONE_SESSION) && !gs_bulk_zone_window(x, &limit)))
		return;
	if (g->ncols == 1)
	{
		next = gs_bulk_known_at(g, x) + 1;
		if (next < g->nknown && g->known[next].lo < limit &&
			gs_bulk_key_equal(c, g->known[next].keyed->keys[0], b))
		{
			g->known[next].lo = x;
			gs_bulk_use_known(g, next);
			g->ranges++;
			return;
		}
		g->cached = gs_bulk_find(g, g->row_keys, g->row_nulls);
		g->range_key = g->cached->keys[0];
	}
	else
	{
		/* the range's own copy (a group's is made when it is created) */
		if (g->range_key_copied)
			pfree(DatumGetPointer(g->range_key));
		old = MemoryContextSwitchTo(g->mcxt);
		g->range_key = datumCopy(b, c->typbyval, c->typlen);
		MemoryContextSwitchTo(old);
		g->range_key_copied = !c->typbyval;
	}
	/* (the run ends below the next known range: f changes at its lo or before) */
	if (g->ncols == 1 && next < g->nknown)
		limit = Min(limit, g->known[next].lo);
	g->lo = x;
	g->hi = -1;
	if (g->ncols == 1 && next > 0)
		gs_bulk_range_after(g, &g->known[next - 1], x, limit, econtext);
	if (g->hi < 0)
		g->hi = gs_bulk_run_end(g, x, limit, g->range_key, econtext);
	g->have_range = true;
	g->ranges++;
	if (g->ncols == 1)
		gs_bulk_know(g, next, g->lo, g->hi, g->lo < x, g->cached);
}

/*
 * The ranges another groups found with the same expression (one
 * expression each; the same function of a column of the same type, over
 * another table's attribute numbers: a Citus shard's sibling) made this
 * one's, with their groups (new_group for each), so that they need not be
 * searched again.
 */
void
gs_bulk_groups_adopt_ranges(GsBulkGroups *g, const GsBulkGroups *from)
{
	if (g->ncols != 1 || from->ncols != 1 || g->mono_col < 0 || from->mono_col < 0 ||
		g->mono_typid != from->mono_typid || g->cols[0].typid != from->cols[0].typid ||
		g->nknown > 0)
		return;
	for (int i = 0; i < from->nknown; i++)
	{
		bool		isnull = false;
		MemoryContext old = MemoryContextSwitchTo(g->mcxt);
		GsBulkKeyed *k = gs_bulk_find(g, &from->known[i].keyed->keys[0], &isnull);

		MemoryContextSwitchTo(old);
		gs_bulk_know(g, g->nknown, from->known[i].lo, from->known[i].hi, from->known[i].exact, k);
	}
}

/* where the range's expression's value for a row came from */
typedef enum GsBulkRangeKey
{
	GS_BULK_RANGE_NONE,			/* the column is NULL: evaluate it with the others */
	GS_BULK_RANGE_MISS,			/* evaluated at the column value (a new range) */
	GS_BULK_RANGE_HIT			/* the cached range's */
} GsBulkRangeKey;

/* the range's expression for the row, into row_keys[mono_col] */
static GsBulkRangeKey
gs_bulk_range_key(GsBulkGroups *g, HeapTuple tup, ExprContext *econtext)
{
	bool		isnull;
	Datum		d = gs_bulk_fetch(&g->mono_column, tup, g->heap_slot->tts_tupleDescriptor, &isnull);
	int64		x;

	if (isnull)
		return GS_BULK_RANGE_NONE;
	x = gs_int_point(g->mono_typid, d);
	if (g->have_range && x >= g->lo && x < g->hi)
	{
		g->cached_rows++;
		g->row_keys[g->mono_col] = g->range_key;
		g->row_nulls[g->mono_col] = false;
		return GS_BULK_RANGE_HIT;
	}
	if (g->nknown > 0)
	{
		/* the next range first: a shard's rows mostly go up in time */
		int			i = g->cur + 1 < g->nknown && g->known[g->cur + 1].lo <= x &&
			(g->cur + 2 >= g->nknown || x < g->known[g->cur + 2].lo) ? g->cur + 1 :
			gs_bulk_known_at(g, x);

		if (i >= 0 && x < g->known[i].hi)
		{
			gs_bulk_use_known(g, i);
			g->cached_rows++;
			g->row_keys[g->mono_col] = g->range_key;
			g->row_nulls[g->mono_col] = false;
			return GS_BULK_RANGE_HIT;
		}
	}
	gs_bulk_range_miss(g, x, econtext);
	return GS_BULK_RANGE_MISS;
}

GsBulkGroup *
gs_bulk_groups_of(GsBulkGroups *g, HeapTuple tup, ExprContext *econtext)
{
	GsBulkRangeKey from = GS_BULK_RANGE_NONE;
	bool		stored = false;
	MemoryContext old;

	if (g->mono_col >= 0)
	{
		from = gs_bulk_range_key(g, tup, econtext);
		/* the one expression, in the cached range: its group, two comparisons */
		if (from == GS_BULK_RANGE_HIT && g->ncols == 1)
			return g->cached->group;
	}
	for (int i = 0; i < g->ncols; i++)
	{
		if (i == g->mono_col && from != GS_BULK_RANGE_NONE)
			continue;
		if (!stored)
		{
			ExecStoreHeapTuple(tup, g->heap_slot, false);
			econtext->ecxt_scantuple = g->heap_slot;
			stored = true;
		}
		g->row_keys[i] = ExecEvalExprSwitchContext(g->cols[i].expr, econtext, &g->row_nulls[i]);
	}
	/* (the hash and equality functions may allocate: the per-tuple memory) */
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	if (g->last == NULL || !gs_bulk_keyed_is(g, g->last, g->row_keys, g->row_nulls))
		g->last = gs_bulk_find(g, g->row_keys, g->row_nulls);
	MemoryContextSwitchTo(old);
	return g->last->group;
}

/* ---- output ---------------------------------------------------------- */

static int
gs_bulk_keyed_cmp(const void *a, const void *b, void *arg)
{
	GsBulkGroups *g = (GsBulkGroups *) arg;
	const GsBulkKeyed *ka = *(GsBulkKeyed *const *) a;
	const GsBulkKeyed *kb = *(GsBulkKeyed *const *) b;

	for (int i = 0; i < g->nsortkeys; i++)
	{
		int			c = g->sort_cols[i];
		int			r = ApplySortComparator(ka->keys[c], ka->nulls[c], kb->keys[c], kb->nulls[c],
											&g->sort_keys[i]);

		if (r != 0)
			return r;
	}
	return 0;
}

/*
 * Emit the groups in the order of the sort keys: expression cols[i] by
 * sortops[i] (an ordering operator of its type) under collations[i], NULL
 * first or last -- the GROUP BY's order, which the planner's pathkeys
 * promise above the scan (planner_bulk_scan.c), so that a Gather Merge and
 * a sorted Finalize Aggregate can take them.
 */
void
gs_bulk_groups_sort(GsBulkGroups *g, int nkeys, const int *cols, const Oid *sortops,
					const Oid *collations, const bool *nulls_first)
{
	MemoryContext old = MemoryContextSwitchTo(g->mcxt);
	GsBulkKeyed *k;
	GsBulkEntry *e;
	gs_bulk_hash_iterator it;
	int			n = 0;

	g->nsortkeys = nkeys;
	g->sort_cols = (int *) palloc(sizeof(int) * nkeys);
	g->sort_keys = (SortSupport) palloc0(sizeof(SortSupportData) * nkeys);
	for (int i = 0; i < nkeys; i++)
	{
		if (cols[i] < 0 || cols[i] >= g->ncols)
			elog(ERROR, "gpuselect: bulk scan sort key %d out of range", cols[i]);
		g->sort_cols[i] = cols[i];
		g->sort_keys[i].ssup_cxt = CurrentMemoryContext;
		g->sort_keys[i].ssup_collation = collations[i];
		g->sort_keys[i].ssup_nulls_first = nulls_first[i];
		PrepareSortSupportFromOrderingOp(sortops[i], &g->sort_keys[i]);
	}
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
	qsort_arg(g->sorted, g->nsorted, sizeof(GsBulkKeyed *), gs_bulk_keyed_cmp, g);
	g->next_sorted = 0;
	MemoryContextSwitchTo(old);
}

bool
gs_bulk_groups_next(GsBulkGroups *g, GsBulkGroup **group, const Datum **keys, const bool **nulls)
{
	GsBulkKeyed *k;

	if (g->sorted != NULL)
	{
		if (g->next_sorted >= g->nsorted)
			return false;
		k = g->sorted[g->next_sorted++];
	}
	else
	{
		if (g->table == NULL)
			return false;
		if (!g->iter_started)
		{
			gs_bulk_hash_start_iterate(g->table, &g->iter);
			g->iter_started = true;
		}
		while (g->iter_chain == NULL)
		{
			GsBulkEntry *e = gs_bulk_hash_iterate(g->table, &g->iter);

			if (e == NULL)
				return false;
			g->iter_chain = e->first;
		}
		k = g->iter_chain;
		g->iter_chain = k->next;
	}
	*group = k->group;
	*keys = k->keys;
	*nulls = k->nulls;
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
