/*
 * datum_select.c — selection for GS_T_DATUM states: a multiselect in the
 * style of introselect.  Each step partitions the range around a pivot into
 * < = > (three ways, so that runs of equal values end the search at once)
 * and goes on only into the parts that hold wanted ranks; never a sort of
 * everything.  The pivot is the median of a sample drawn with a fixed-seed
 * generator (pg_prng), so results and timings do not depend on luck; past a
 * depth of 2 log2(n) steps a range is sorted instead (qsort_arg), which
 * bounds the worst case at O(n log n).
 *
 * Comparisons go through the type's sort support (the same comparator the
 * built-ins' tuplesort uses) with abbreviated keys where the type offers
 * them: most comparisons are then one integer compare, and only ties of
 * abbreviated keys call the full comparator.
 */
#include "postgres.h"

#include "common/pg_prng.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "select/datum_select.h"

#define GS_SELECT_SMALL		16		/* ranges this short are insertion-sorted */
#define GS_SELECT_SEED		UINT64CONST(0x6770757365) /* fixed: deterministic pivots */

typedef struct GsSelectCtx
{
	SortSupport ssup;
	bool		abbrev;
	pg_prng_state rng;
} GsSelectCtx;

static inline int
gs_item_cmp(const GsDatumItem *a, const GsDatumItem *b, GsSelectCtx *cx)
{
	int			c = ApplySortComparator(a->key, false, b->key, false, cx->ssup);

	if (c == 0 && cx->abbrev)
		c = ApplySortAbbrevFullComparator(a->val, false, b->val, false, cx->ssup);
	return c;
}

static int
gs_item_qsort_cmp(const void *a, const void *b, void *arg)
{
	return gs_item_cmp((const GsDatumItem *) a, (const GsDatumItem *) b, (GsSelectCtx *) arg);
}

static void
gs_insertion_sort(GsDatumItem *a, int64 n, GsSelectCtx *cx)
{
	for (int64 i = 1; i < n; i++)
	{
		GsDatumItem x = a[i];
		int64		j = i;

		while (j > 0 && gs_item_cmp(&a[j - 1], &x, cx) > 0)
		{
			a[j] = a[j - 1];
			j--;
		}
		a[j] = x;
	}
}

/* the median of a sample of a[lo..hi): 3 items for short ranges, up to 63 for long ones */
static GsDatumItem
gs_choose_pivot(GsDatumItem *a, int64 lo, int64 hi, GsSelectCtx *cx)
{
	GsDatumItem sample[63];
	int64		len = hi - lo;
	int			s = len < 1024 ? 3 : len < 65536 ? 15 : len < 4194304 ? 31 : 63;

	for (int i = 0; i < s; i++)
		sample[i] = a[lo + (int64) pg_prng_uint64_range(&cx->rng, 0, (uint64) len - 1)];
	gs_insertion_sort(sample, s, cx);
	return sample[s / 2];
}

/*
 * a[lo..hi) around pivot p: a[lo..*lt) < p, a[*lt..*gt) = p, a[*gt..hi) > p
 * (Dijkstra's three-way partition: one comparison per item).
 */
static void
gs_partition3(GsDatumItem *a, int64 lo, int64 hi, const GsDatumItem *p, GsSelectCtx *cx,
			  int64 *lt_out, int64 *gt_out)
{
	int64		lt = lo,
				i = lo,
				gt = hi;
	uint32		steps = 0;

	while (i < gt)
	{
		int			c = gs_item_cmp(&a[i], p, cx);
		GsDatumItem t;

		if (c < 0)
		{
			t = a[lt];
			a[lt++] = a[i];
			a[i++] = t;
		}
		else if (c > 0)
		{
			t = a[--gt];
			a[gt] = a[i];
			a[i] = t;
		}
		else
			i++;
		if ((++steps & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	*lt_out = lt;
	*gt_out = gt;
}

/* ranks[0..nranks) sorted, all within [lo, hi) */
static void
gs_select_range(GsDatumItem *a, int64 lo, int64 hi, const int64 *ranks, int nranks,
				int depth, GsSelectCtx *cx)
{
	check_stack_depth();
	while (nranks > 0)
	{
		GsDatumItem pivot;
		int64		lt,
					gt;
		int			nleft = 0,
					nmid = 0;

		CHECK_FOR_INTERRUPTS();
		if (hi - lo <= GS_SELECT_SMALL)
		{
			gs_insertion_sort(a + lo, hi - lo, cx);
			return;
		}
		if (depth-- <= 0)
		{
			/* unlucky pivots: bound the work by sorting this range */
			qsort_arg(a + lo, hi - lo, sizeof(GsDatumItem), gs_item_qsort_cmp, cx);
			return;
		}
		pivot = gs_choose_pivot(a, lo, hi, cx);
		gs_partition3(a, lo, hi, &pivot, cx, &lt, &gt);

		while (nleft < nranks && ranks[nleft] < lt)
			nleft++;
		while (nleft + nmid < nranks && ranks[nleft + nmid] < gt)
			nmid++;
		/* ranks in [lt, gt) are final: every item there equals the pivot */
		if (nleft > 0)
			gs_select_range(a, lo, lt, ranks, nleft, depth, cx);
		ranks += nleft + nmid;
		nranks -= nleft + nmid;
		lo = gt;
	}
}

void
gs_multiselect(GsDatumItem *items, int64 n, const int64 *ranks, int nranks,
			   SortSupport ssup, bool abbrev)
{
	GsSelectCtx cx;
	int			depth = 0;

	if (n <= 0 || nranks <= 0)
		return;
	cx.ssup = ssup;
	cx.abbrev = abbrev;
	pg_prng_seed(&cx.rng, GS_SELECT_SEED);
	for (int64 m = n; m > 1; m >>= 1)
		depth += 2;
	gs_select_range(items, 0, n, ranks, nranks, depth + 4, &cx);
}

/*
 * Abbreviated keys for all items, as tuplesort does it: the type's
 * abbrev_abort callback is asked at 10, 20, 40, ... items whether the keys
 * seen so far are distinct enough to pay; if not, the full comparator is
 * used for everything.  Returns whether keys are abbreviated.
 */
bool
gs_datum_abbreviate(GsDatumItem *items, int64 n, SortSupport ssup)
{
	int64		next_check = 10;

	if (ssup->abbrev_converter == NULL)
	{
		for (int64 i = 0; i < n; i++)
			items[i].key = items[i].val;
		return false;
	}
	for (int64 i = 0; i < n; i++)
	{
		items[i].key = ssup->abbrev_converter(items[i].val, ssup);
		if (i + 1 >= next_check)
		{
			next_check *= 2;
			if (ssup->abbrev_abort(i + 1, ssup))
			{
				ssup->comparator = ssup->abbrev_full_comparator;
				ssup->abbrev_converter = NULL;
				ssup->abbrev_full_comparator = NULL;
				for (int64 j = 0; j < n; j++)
					items[j].key = items[j].val;
				return false;
			}
		}
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return true;
}
