/*
 * bulk_shard_groups.c -- the grouped shard scans' calls (issue 34;
 * docs/citus.md, "Grouped by shard scans" and "The spool"): the counts of
 * every group's common buckets, with or without a spool, and the keys
 * inside every group's own ranges, from the spool or by a scan.  The page
 * loop that finds each row's group, and the ungrouped calls, are
 * bulk_shard_scan.c's; the coordinator's side is aggs/citus_shard_groups.c.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "aggs/citus_exchange.h"
#include "scan/bulk_shard_scan.h"
#include "scan/shard_spool.h"

PG_FUNCTION_INFO_V1(gs_citus_shard_group_histogram);
PG_FUNCTION_INFO_V1(gs_citus_shard_group_keys);
PG_FUNCTION_INFO_V1(gs_citus_shard_group_spool);
PG_FUNCTION_INFO_V1(gs_citus_shard_group_spool_keys);
PG_FUNCTION_INFO_V1(gs_citus_shard_spool_drop);

/* a grouped call's set up: the group expression (argument 3) */
static void
gs_shard_scan_grouped(FunctionCallInfo fcinfo, GsShardScan *h)
{
	HASHCTL		ctl;

	h->cxt = CurrentMemoryContext;
	h->gexpr = text_to_cstring(PG_GETARG_TEXT_PP(3));
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(GsShardGroupKey);
	ctl.entrysize = sizeof(GsShardGroup);
	ctl.hcxt = CurrentMemoryContext;
	h->ghash = hash_create("gpuselect shard groups", 256, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* the counts calls' answer: G, then per group isnull, point, counts */
static ArrayType *
gs_shard_group_counts_answer(GsShardScan *h)
{
	int64	   *out = (int64 *) palloc(sizeof(int64) * (1 + (int64) h->ng * (h->nt + 3)));
	int64		n = 1;

	out[0] = h->ng;
	for (int i = 0; i < h->ng; i++)
	{
		GsShardGroup *g = h->glist[i];

		out[n++] = g->key.isnull;
		out[n++] = g->key.point;
		memcpy(out + n, g->counts, sizeof(int64) * (h->nt + 1));
		n += h->nt + 1;
	}
	return gs_shard_int8_array(out, n);
}

/*
 * gs_citus_shard_group_histogram(shards regclass[], col text, t int8[],
 *                                gexpr text, quals text)
 *   -> int8[]: the number of groups G, then per group (in no order) its
 *      NULL flag (1: the NULL group), its value (gs_int_point's int8,
 *      0 for NULL), and its length(t) + 1 counts, as gs_citus_shard_histogram's
 *      -- the shards' rows that satisfy quals, grouped by gexpr.
 */
Datum
gs_citus_shard_group_histogram(PG_FUNCTION_ARGS)
{
	const char *fn = "gs_citus_shard_group_histogram";
	GsShardScan h;

	memset(&h, 0, sizeof(h));
	gs_shard_scan_thresholds(PG_GETARG_ARRAYTYPE_P(2), &h, fn);
	gs_shard_scan_grouped(fcinfo, &h);
	gs_shard_scan_all(fcinfo, &h, 4, fn);
	PG_RETURN_ARRAYTYPE_P(gs_shard_group_counts_answer(&h));
}

/*
 * a spool's tag (shard_spool.h) from the arguments: the shards (0), col
 * (1), gexpr (gexpr_arg), the quals (quals_arg); NULL where the shards are
 * not a regclass[] (the scan raises that ERROR)
 */
static char *
gs_shard_spool_tag(FunctionCallInfo fcinfo, int gexpr_arg, int quals_arg)
{
	ArrayType  *shards = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *rels;
	bool	   *nulls;
	int			nrels;

	if (ARR_ELEMTYPE(shards) != REGCLASSOID || ARR_NDIM(shards) > 1)
		return NULL;
	deconstruct_array(shards, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT, &rels, &nulls, &nrels);
	return gs_spool_tag(text_to_cstring(PG_GETARG_TEXT_PP(1)), text_to_cstring(PG_GETARG_TEXT_PP(gexpr_arg)),
						text_to_cstring(PG_GETARG_TEXT_PP(quals_arg)), rels, nrels);
}

/*
 * gs_citus_shard_group_spool(shards regclass[], col text, t int8[],
 *                            gexpr text, spool int8, quals text)
 *   -> int8[]: gs_citus_shard_group_histogram's answer; and every key it
 *      counted kept, with its group, in the spool of exchange spool
 *      (shard_spool.c) for gs_citus_shard_group_spool_keys -- where it
 *      could write one: else that call scans the shards.
 */
Datum
gs_citus_shard_group_spool(PG_FUNCTION_ARGS)
{
	const char *fn = "gs_citus_shard_group_spool";
	int64		id = PG_GETARG_INT64(4);
	char	   *tag = gs_shard_spool_tag(fcinfo, 3, 5);
	GsShardScan h;

	memset(&h, 0, sizeof(h));
	gs_shard_scan_thresholds(PG_GETARG_ARRAYTYPE_P(2), &h, fn);
	gs_shard_scan_grouped(fcinfo, &h);
	if (id != 0 && tag != NULL)
		h.spool = gs_spool_create(id, tag);
	PG_TRY();
	{
		gs_shard_scan_all(fcinfo, &h, 5, fn);
	}
	PG_CATCH();
	{
		if (h.spool != NULL)
			gs_spool_discard(h.spool);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (h.spool != NULL)
	{
		int64	   *groups = (int64 *) palloc(sizeof(int64) * 2 * Max(h.ng, 1));

		for (int i = 0; i < h.ng; i++)
		{
			groups[2 * i] = h.glist[i]->key.isnull;
			groups[2 * i + 1] = h.glist[i]->key.point;
		}
		gs_spool_finish(h.spool, groups, h.ng);
	}
	PG_RETURN_ARRAYTYPE_P(gs_shard_group_counts_answer(&h));
}

/*
 * gs_citus_shard_spool_drop(shards regclass[], col text, gexpr text,
 *                           spool int8, quals text)
 *   -> int8[]: {1} where exchange spool's spool of these arguments was
 *      there (and is deleted now), else {0}
 */
Datum
gs_citus_shard_spool_drop(PG_FUNCTION_ARGS)
{
	char	   *tag = gs_shard_spool_tag(fcinfo, 2, 4);
	int64		dropped;

	if (tag == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gs_citus_shard_spool_drop: shards must be a one-dimensional regclass array")));
	dropped = gs_spool_drop(PG_GETARG_INT64(3), tag) ? 1 : 0;
	PG_RETURN_ARRAYTYPE_P(gs_shard_int8_array(&dropped, 1));
}

/* a range [lo, hi) of keys; hi_inf: [lo, +infinity) */
typedef struct GsShardRange
{
	int64		lo;
	int64		hi;
	bool		hi_inf;
} GsShardRange;

static int
gs_shard_range_cmp(const void *a, const void *b)
{
	int64		x = ((const GsShardRange *) a)->lo;
	int64		y = ((const GsShardRange *) b)->lo;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* the union of every slot's ranges, as bounds (gs_shard_bucket's rule) */
static void
gs_shard_union_bounds(GsShardScan *h, int nslots)
{
	GsShardRange *r = (GsShardRange *) palloc(sizeof(GsShardRange) * (h->nt / 2 + nslots + 1));
	int			n = 0;
	int			m = 0;

	for (int j = 0; j < nslots; j++)
		for (int64 i = h->goff[j]; i < h->goff[j + 1]; i += 2)
		{
			r[n].lo = h->t[i];
			r[n].hi_inf = i + 1 >= h->goff[j + 1];
			r[n].hi = r[n].hi_inf ? 0 : h->t[i + 1];
			if (r[n].hi_inf || r[n].hi > r[n].lo)
				n++;
		}
	qsort(r, n, sizeof(GsShardRange), gs_shard_range_cmp);
	h->ubounds = (int64 *) palloc(sizeof(int64) * (2 * n + 1));
	for (int i = 0; i < n; i++)
	{
		/* overlapping or touching the last one: extend it */
		if (m > 0 && !r[m - 1].hi_inf && r[i].lo <= r[m - 1].hi)
		{
			r[m - 1].hi_inf |= r[i].hi_inf;
			if (!r[i].hi_inf && r[i].hi > r[m - 1].hi)
				r[m - 1].hi = r[i].hi;
		}
		else if (m == 0 || !r[m - 1].hi_inf)
			r[m++] = r[i];
	}
	h->nubounds = 0;
	for (int i = 0; i < m; i++)
	{
		h->ubounds[h->nubounds++] = r[i].lo;
		if (!r[i].hi_inf)
			h->ubounds[h->nubounds++] = r[i].hi;
	}
}

/*
 * The gather's arguments (bounds 2, groups 4, offsets 5) checked and set
 * in h; the slots' count (the coordinator's groups + 1)
 */
static int
gs_shard_group_keys_setup(FunctionCallInfo fcinfo, GsShardScan *h, const char *fn)
{
	ArrayType  *groups = PG_GETARG_ARRAYTYPE_P(4);
	ArrayType  *offsets = PG_GETARG_ARRAYTYPE_P(5);
	int			nslots;

	h->keys = true;
	if (ARR_ELEMTYPE(groups) != INT8OID || ARR_NDIM(groups) > 1 || ARR_HASNULL(groups) ||
		ARR_ELEMTYPE(offsets) != INT8OID || ARR_NDIM(offsets) > 1 || ARR_HASNULL(offsets))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: groups and offsets must be one-dimensional int8 arrays without NULLs", fn)));
	h->gpoints = (const int64 *) ARR_DATA_PTR(groups);
	h->ngpoints = ArrayGetNItems(ARR_NDIM(groups), ARR_DIMS(groups));
	h->goff = (const int64 *) ARR_DATA_PTR(offsets);
	if (h->ngpoints + 2 > GS_X_HIST_MAX_BUCKETS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: more than %d groups", fn, GS_X_HIST_MAX_BUCKETS)));
	nslots = h->ngpoints + 1;
	gs_shard_scan_thresholds(PG_GETARG_ARRAYTYPE_P(2), h, fn);
	if (ArrayGetNItems(ARR_NDIM(offsets), ARR_DIMS(offsets)) != nslots + 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: offsets must have length(groups) + 2 elements", fn)));
	for (int j = 0; j < nslots; j++)
		if (h->goff[j] < 0 || h->goff[j + 1] < h->goff[j] || h->goff[j + 1] > h->nt)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: offsets must be non-decreasing within the bounds", fn)));
	for (int j = 0; j < nslots; j++)
		for (int64 i = h->goff[j] + 1; i < h->goff[j + 1]; i++)
			if (h->t[i] < h->t[i - 1])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s: each group's bounds must be sorted", fn)));
	for (int j = 1; j < h->ngpoints; j++)
		if (h->gpoints[j] <= h->gpoints[j - 1])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: groups must be sorted and distinct", fn)));
	gs_shard_union_bounds(h, nslots);
	gs_shard_scan_grouped(fcinfo, h);
	return nslots;
}

/*
 * The gather's answer: head[0 .. nhead), the rows of a group not among the
 * coordinator's, then per slot the number of its keys and those keys
 */
static ArrayType *
gs_shard_group_keys_answer(GsShardScan *h, int nslots, const int64 *head, int nhead, const char *fn)
{
	int64		total = nhead + 1 + nslots;
	int64	   *out;
	int64		n = 0;

	for (int i = 0; i < h->ng; i++)
		if (h->glist[i]->slot >= 0)
			total += h->glist[i]->nkeys;
	if (total > (int64) MaxArraySize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: more than %d keys", fn, (int) MaxArraySize)));
	out = (int64 *) palloc(sizeof(int64) * total);
	for (int i = 0; i < nhead; i++)
		out[n++] = head[i];
	out[n++] = h->unknown;
	for (int j = 0; j < nslots; j++)
	{
		GsShardGroup *g = NULL;
		GsShardGroupKey key;

		memset(&key, 0, sizeof(key));
		key.isnull = j == 0;
		key.point = j == 0 ? 0 : h->gpoints[j - 1];
		g = (GsShardGroup *) hash_search(h->ghash, &key, HASH_FIND, NULL);
		out[n++] = g == NULL ? 0 : g->nkeys;
		if (g != NULL && g->nkeys > 0)
		{
			memcpy(out + n, g->keys, sizeof(int64) * g->nkeys);
			n += g->nkeys;
		}
	}
	return gs_shard_int8_array(out, n);
}

/*
 * gs_citus_shard_group_keys(shards regclass[], col text, bounds int8[],
 *                           gexpr text, groups int8[], offsets int8[],
 *                           quals text)
 *   -> int8[]: the rows of a group not among groups (the coordinator's,
 *      sorted values; a concurrent write), then per slot j = 0 (the NULL
 *      group), 1 .. length(groups) (groups[j]): the number of its keys,
 *      then those keys (in no order) -- the keys inside its ranges, bounds
 *      offsets[j] .. offsets[j + 1] - 1 (gs_citus_shard_keys's rule).
 */
Datum
gs_citus_shard_group_keys(PG_FUNCTION_ARGS)
{
	const char *fn = "gs_citus_shard_group_keys";
	GsShardScan h;
	int			nslots;

	memset(&h, 0, sizeof(h));
	nslots = gs_shard_group_keys_setup(fcinfo, &h, fn);
	gs_shard_scan_all(fcinfo, &h, 6, fn);
	PG_RETURN_ARRAYTYPE_P(gs_shard_group_keys_answer(&h, nslots, NULL, 0, fn));
}

/*
 * The gather from exchange id's spool, where there is one for tag: every
 * spooled row as gs_shard_group_keys_tuple takes a scanned one, but by its
 * group's own ranges straight away (a spooled row names its group: the
 * union of every group's ranges, a scan's filter before the group lookup,
 * would cost a search of thousands of bounds a row for nothing), and by
 * the union only for a group the coordinator has not (counted as unknown
 * there, as a scan counts it); the spool deleted, on an ERROR as well.
 * False where there is none (nothing done).
 */
static bool
gs_shard_group_keys_spooled(GsShardScan *h, int64 id, const char *tag)
{
	int64	   *gl;
	int64		ngl;
	GsSpoolReader *r = gs_spool_open(id, tag, &gl, &ngl);

	if (r == NULL)
		return false;
	PG_TRY();
	{
		GsShardGroup **map = (GsShardGroup **) palloc(sizeof(GsShardGroup *) * Max(ngl, 1));
		const int64 *keys;
		const int32 *groups;
		int			n;

		for (int64 i = 0; i < ngl; i++)
			map[i] = gs_shard_group_find(h, gl[2 * i] != 0, gl[2 * i + 1]);
		while ((n = gs_spool_read(r, &keys, &groups)) > 0)
		{
			for (int i = 0; i < n; i++)
			{
				int64		key = keys[i];
				GsShardGroup *g;

				if (groups[i] < 0 || groups[i] >= ngl)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("a spool row names group %d of %lld", groups[i], (long long) ngl)));
				g = map[groups[i]];
				if (g->slot >= 0 || (gs_shard_bucket(h->ubounds, h->nubounds, key) & 1))
					gs_shard_group_take(h, g, key);
			}
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		gs_spool_close(r);
		PG_RE_THROW();
	}
	PG_END_TRY();
	gs_spool_close(r);
	return true;
}

/*
 * gs_citus_shard_group_spool_keys(shards regclass[], col text,
 *                                 bounds int8[], gexpr text, groups int8[],
 *                                 offsets int8[], spool int8, quals text)
 *   -> int8[]: 1 where the keys came from exchange spool's spool (the
 *      counts call's rows: its snapshot), 0 where there was none (the
 *      shards scanned now); then gs_citus_shard_group_keys's answer.
 */
Datum
gs_citus_shard_group_spool_keys(PG_FUNCTION_ARGS)
{
	const char *fn = "gs_citus_shard_group_spool_keys";
	char	   *tag = gs_shard_spool_tag(fcinfo, 3, 7);
	int64		spooled = 0;
	GsShardScan h;
	int			nslots;

	memset(&h, 0, sizeof(h));
	nslots = gs_shard_group_keys_setup(fcinfo, &h, fn);
	if (tag != NULL && PG_GETARG_INT64(6) != 0 && gs_shard_group_keys_spooled(&h, PG_GETARG_INT64(6), tag))
		spooled = 1;
	else
		gs_shard_scan_all(fcinfo, &h, 7, fn);
	PG_RETURN_ARRAYTYPE_P(gs_shard_group_keys_answer(&h, nslots, &spooled, 1, fn));
}
