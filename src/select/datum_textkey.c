/*
 * datum_textkey.c — selection of text / varchar under the "C" collation
 * (memcmp order) by 8-byte prefix keys and the CPU key engine.
 *
 * Under "C" (and POSIX, or a database whose default collation is C), text
 * compares as memcmp of the bytes, the shorter string first on a tie; the
 * first 8 bytes read as a big-endian integer (zero-padded) are therefore an
 * order-preserving key: a < b implies key(a) <= key(b).  So the value at
 * rank r has the key K at rank r among the keys, and it is the value at rank
 * r - lo among the m values whose key is K (lo: the number of keys below K).
 *
 *   1. one walk of the store builds the keys (8 bytes per value, where the
 *      general path builds 16-byte items and hashes every value for the
 *      abbreviation's cardinality estimate);
 *   2. the CPU key engine selects the keys at the wanted ranks (radix
 *      multiselect, no comparator calls);
 *   3. one pass over the keys counts those below each selected K and notes
 *      the positions of those equal to it; the values there are found in
 *      their chunks and selected among themselves with text's own sort
 *      support comparator (gs_multiselect): exact whatever the prefix
 *      holds, including values longer than 8 bytes that share it.
 *
 * Many values sharing a prefix make step 3 a comparison multiselect over
 * them, as the general path would do anyway.  The store is not modified.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "access/htup_details.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "select/datum_select.h"
#include "state/datum_state.h"
#include "select/dispatch.h"

/*
 * Is a locale name one that libc sorts in byte order?  The names
 * PostgreSQL's own lc_collate_is_c() accepts.
 */
static bool
gs_locale_name_is_c(HeapTuple tup, int cacheid, AttrNumber attno)
{
	bool		isnull;
	Datum		d = SysCacheGetAttr(cacheid, tup, attno, &isnull);
	char	   *name;
	bool		is_c;

	if (isnull)
		return false;
	name = TextDatumGetCString(d);
	is_c = strcmp(name, "C") == 0 || strcmp(name, "POSIX") == 0;
	pfree(name);
	return is_c;
}

/*
 * Does a collation sort in byte (memcmp) order?  Answered from the catalogs,
 * not from pg_locale.h, whose PostgreSQL 15-18 forms differ and which pulls
 * in ICU's headers wherever the server was built with ICU: "C" and "POSIX",
 * a libc collation named so, or the default collation of a database whose
 * provider is libc with LC_COLLATE "C"/"POSIX".  Anything else (ICU, the
 * builtin provider of 17+) answers false: the comparison path, slower but
 * exact for every collation.
 */
static bool
gs_collation_sorts_bytewise(Oid collid)
{
	HeapTuple	tup;
	bool		is_c = false;

	if (collid == C_COLLATION_OID)
		return true;
	if (collid == DEFAULT_COLLATION_OID)
	{
		tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
		if (!HeapTupleIsValid(tup))
			return false;
		if (((Form_pg_database) GETSTRUCT(tup))->datlocprovider == COLLPROVIDER_LIBC)
			is_c = gs_locale_name_is_c(tup, DATABASEOID, Anum_pg_database_datcollate);
		ReleaseSysCache(tup);
		return is_c;
	}
	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collid));
	if (!HeapTupleIsValid(tup))
		return false;
	if (((Form_pg_collation) GETSTRUCT(tup))->collprovider == COLLPROVIDER_LIBC)
		is_c = gs_locale_name_is_c(tup, COLLOID, Anum_pg_collation_collcollate);
	ReleaseSysCache(tup);
	return is_c;
}

/*
 * Is the store's ordering memcmp order?  text (and varchar, which sorts
 * with text's operators) by its default "<" or ">" under a collation that is
 * C.  Other deterministic collations are not memcmp order.
 */
bool
gs_textkey_eligible(const GsState *st, bool *descending)
{
	const GsDatumStore *s = st->datums;
	TypeCacheEntry *tce;

	if (s->typlen != -1 || !OidIsValid(s->collation) ||
		(getBaseType(st->typid) != TEXTOID && getBaseType(st->typid) != VARCHAROID))
		return false;
	tce = lookup_type_cache(TEXTOID, TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
	if (s->sortop == tce->lt_opr)
		*descending = false;
	else if (s->sortop == tce->gt_opr)
		*descending = true;
	else
		return false;
	return gs_collation_sorts_bytewise(s->collation);
}

/* the order-preserving prefix key of a stored text value (4-byte header, never toasted) */
static inline uint64
gs_text_prefix_key(const char *p)
{
	Size		len = VARSIZE(p) - VARHDRSZ;
	uint64		k = 0;

	memcpy(&k, VARDATA(p), Min(len, sizeof(uint64)));
	return pg_hton64(k);
}

/* one selected key: how many keys are below it, and the values equal to it */
typedef struct GsTextCand
{
	uint64		key;
	int64		lo;				/* keys below key */
	int64		m;				/* keys equal to key */
	int64		filled;			/* items filled so far */
	GsDatumItem *items;			/* their values (store order, then selected in place) */
	int			nlocal;			/* wanted ranks among them */
	int64	   *local;
} GsTextCand;

static int
gs_uint64_cmp(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a,
				y = *(const uint64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

static int
gs_int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a,
				y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* index of key in sorted, distinct ks[0..nk), or -1; *below: how many are below it */
static inline int
gs_key_find(const uint64 *ks, int nk, uint64 key, int *below)
{
	int			lo = 0,
				hi = nk;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (ks[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	*below = lo;
	return (lo < nk && ks[lo] == key) ? lo : -1;
}

/* positions of the keys equal to a selected one, in store order, and which one */
typedef struct GsTextHits
{
	int64	   *pos;
	int		   *own;			/* index into the distinct selected keys */
	int64		n;
	int64		cap;
} GsTextHits;

/* 1. the keys, in store order; chunk_first[c]: chunk c's first position */
static uint64 *
gs_textkey_build(const GsDatumStore *s, int64 n, int64 *chunk_first)
{
	uint64	   *keys = (uint64 *) MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * Max(n, 1));
	int64		filled = 0;

	gs_chunk_advise_huge(keys, sizeof(uint64) * Max(n, 1));

	for (int c = 0; c < s->nchunks; c++)
	{
		const GsDatumChunk *ch = &s->chunks[c];
		Size		off = 0;

		chunk_first[c] = filled;
		while (off < ch->used)
		{
			const char *p;

			off = INTALIGN(off);	/* text's alignment: datum_state.c's gs_datum_align */
			p = ch->data + off;
			if (off + VARHDRSZ > ch->used || VARATT_IS_EXTENDED(p) ||
				VARSIZE(p) > ch->used - off || filled >= n)
				elog(ERROR, "gpuselect: corrupt value store");
			keys[filled++] = gs_text_prefix_key(p);
			off += VARSIZE(p);
			if ((filled & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
		}
	}
	chunk_first[s->nchunks] = filled;
	if (filled != n)
		elog(ERROR, "gpuselect: corrupt value store");
	return keys;
}

static void
gs_textkey_hit(GsTextHits *h, int64 i, int j)
{
	if (h->n == h->cap)
	{
		h->cap = h->cap == 0 ? 64 : h->cap * 2;
		h->pos = h->pos == NULL ?
			(int64 *) MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * h->cap) :
			(int64 *) repalloc_huge(h->pos, sizeof(int64) * h->cap);
		h->own = h->own == NULL ?
			(int *) MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int) * h->cap) :
			(int *) repalloc_huge(h->own, sizeof(int) * h->cap);
	}
	h->pos[h->n] = i;
	h->own[h->n++] = j;
}

/*
 * 3. per distinct selected key ks[j]: how many keys are below it
 * (cand[j].lo), how many equal it (cand[j].m) and where those are (hits)
 */
static void
gs_textkey_scan(const uint64 *keys, int64 n, const uint64 *ks, int nk,
				GsTextCand *cand, GsTextHits *hits)
{
	int64	   *below = (int64 *) palloc0(sizeof(int64) * (nk + 1));

	for (int64 start = 0; start < n; start += 65536)
	{
		int64		end = Min(n, start + 65536);

		CHECK_FOR_INTERRUPTS();
		for (int64 i = start; i < end; i++)
		{
			int			b;
			int			j;

			if (nk == 1)
			{
				/* one selected key (one fraction): no search, no branch to mispredict */
				below[0] += keys[i] < ks[0];
				if (likely(keys[i] != ks[0]))
					continue;
				j = 0;
			}
			else if ((j = gs_key_find(ks, nk, keys[i], &b)) < 0)
			{
				below[b]++;		/* a key between ks[b-1] and ks[b] */
				continue;
			}
			gs_textkey_hit(hits, i, j);
			cand[j].m++;
		}
	}
	for (int64 j = 0, acc = 0; j < nk; j++)
	{
		acc += below[j];
		cand[j].lo = acc;
		acc += cand[j].m;
	}
	pfree(below);
}

/* their values: one walk of the chunks that hold them (positions only increase) */
static void
gs_textkey_fetch(const GsDatumStore *s, const int64 *chunk_first, const GsTextHits *hits,
				 GsTextCand *cand, int nk)
{
	int			c = 0;
	Size		off = 0;
	int64		at = 0;

	for (int j = 0; j < nk; j++)
		cand[j].items = (GsDatumItem *) MemoryContextAllocHuge(CurrentMemoryContext,
															   sizeof(GsDatumItem) * cand[j].m);
	for (int64 q = 0; q < hits->n; q++)
	{
		int64		want = hits->pos[q];
		const char *p;
		GsTextCand *cj = &cand[hits->own[q]];

		if (want >= chunk_first[c + 1])
		{
			while (want >= chunk_first[c + 1])
				c++;
			off = 0;
			at = chunk_first[c];
		}
		for (;;)
		{
			off = INTALIGN(off);
			p = s->chunks[c].data + off;
			if (at == want)
				break;
			off += VARSIZE(p);
			if ((++at & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		cj->items[cj->filled].val = cj->items[cj->filled].key = PointerGetDatum(p);
		cj->filled++;
	}
}

/*
 * 4. the wanted (ascending) ranks kranks[] among each selected key's values,
 * by text's comparator under the store's (C) collation; out[i] points into
 * the store
 */
static void
gs_textkey_resolve(const GsDatumStore *s, GsTextCand *cand, const uint64 *ks, int nk,
				   const uint64 *sel, const uint64 *kranks, int nranks, Datum *out)
{
	SortSupportData ssup;

	for (int i = 0; i < nranks; i++)
	{
		int			b;

		cand[gs_key_find(ks, nk, sel[i], &b)].nlocal++;
	}
	for (int j = 0; j < nk; j++)
	{
		cand[j].local = (int64 *) palloc(sizeof(int64) * cand[j].nlocal);
		cand[j].nlocal = 0;
	}
	for (int i = 0; i < nranks; i++)
	{
		int			b;
		GsTextCand *cj = &cand[gs_key_find(ks, nk, sel[i], &b)];
		int64		r = (int64) kranks[i] - cj->lo;

		if (r < 0 || r >= cj->m)
			elog(ERROR, "gpuselect: prefix key selection out of step");
		cj->local[cj->nlocal++] = r;
	}

	memset(&ssup, 0, sizeof(ssup));
	ssup.ssup_cxt = CurrentMemoryContext;
	ssup.ssup_collation = s->collation;
	ssup.abbreviate = false;
	PrepareSortSupportFromOrderingOp(lookup_type_cache(TEXTOID, TYPECACHE_LT_OPR)->lt_opr, &ssup);
	for (int j = 0; j < nk; j++)
	{
		GsTextCand *cj = &cand[j];
		int			u = 0;

		qsort(cj->local, cj->nlocal, sizeof(int64), gs_int64_cmp);
		for (int i = 0; i < cj->nlocal; i++)
			if (u == 0 || cj->local[u - 1] != cj->local[i])
				cj->local[u++] = cj->local[i];
		if (cj->m > 1)
			gs_multiselect(cj->items, cj->m, cj->local, u, &ssup, false);
	}
	for (int i = 0; i < nranks; i++)
	{
		int			b;
		int			j = gs_key_find(ks, nk, sel[i], &b);

		out[i] = cand[j].items[(int64) kranks[i] - cand[j].lo].val;
	}
}

void
gs_textkey_select(GsState *st, bool descending, const int64 *ranks, int nranks, Datum *out)
{
	GsDatumStore *s = st->datums;
	int64		n = st->nrows;
	int64	   *chunk_first = (int64 *) palloc(sizeof(int64) * (s->nchunks + 1));
	uint64	   *kranks = (uint64 *) palloc(sizeof(uint64) * nranks);
	uint64	   *sel = (uint64 *) palloc(sizeof(uint64) * nranks);
	uint64	   *ks = (uint64 *) palloc(sizeof(uint64) * nranks);
	uint64	   *keys;
	GsTextCand *cand;
	GsTextHits	hits = {0};
	int			nk = 0;
	gs_segment	seg;
	gs_input	in;

	keys = gs_textkey_build(s, n, chunk_first);

	/* 2. the keys at the wanted ranks (ascending: DESC counts from the top) */
	for (int i = 0; i < nranks; i++)
	{
		if (ranks[i] < 0 || ranks[i] >= n)
			elog(ERROR, "gpuselect: rank " INT64_FORMAT " out of range", ranks[i]);
		kranks[i] = (uint64) (descending ? n - 1 - ranks[i] : ranks[i]);
	}
	seg.keys = keys;
	seg.n = (size_t) n;
	in.segs = &seg;
	in.nsegs = 1;
	in.key_bytes = sizeof(uint64);
	gs_dispatch_cpu_exact(&in, kranks, nranks, sel);

	/* the distinct selected keys, ascending */
	memcpy(ks, sel, sizeof(uint64) * nranks);
	qsort(ks, nranks, sizeof(uint64), gs_uint64_cmp);
	for (int i = 0; i < nranks; i++)
		if (nk == 0 || ks[nk - 1] != ks[i])
			ks[nk++] = ks[i];
	cand = (GsTextCand *) palloc0(sizeof(GsTextCand) * nk);
	for (int j = 0; j < nk; j++)
		cand[j].key = ks[j];

	gs_textkey_scan(keys, n, ks, nk, cand, &hits);
	pfree(keys);
	gs_textkey_fetch(s, chunk_first, &hits, cand, nk);
	if (hits.pos)
	{
		pfree(hits.pos);
		pfree(hits.own);
	}
	gs_textkey_resolve(s, cand, ks, nk, sel, kranks, nranks, out);

	/* out[] points into the store, not into the items */
	for (int j = 0; j < nk; j++)
	{
		pfree(cand[j].items);
		pfree(cand[j].local);
	}
	pfree(cand);
	pfree(ks);
	pfree(sel);
	pfree(kranks);
	pfree(chunk_first);
}
