/*
 * citus_exchange.h -- what the two halves of the Citus exchange share
 * (aggs/citus_exchange.c: the levels and the ungrouped query;
 * aggs/citus_exchange_grouped.c: every group in each round, or
 * aggs/citus_shard_groups.c: grouped by shard scans; they run their rounds
 * through aggs/citus_rounds.c) and the planner that writes their
 * calls (planner/planner_citus.c: the literal settings) and citus_keys.c
 * (GS_X_SIGN); aggs/citus_shard_round.c (the first counts round and the
 * gather by shard scans) and the scans it runs on the shards
 * (scan/bulk_shard_scan.c, scan/bulk_shard_groups.c: GS_X_SIGN,
 * GS_X_HIST_MAX_BUCKETS).  Nothing else
 * includes it.
 */
#ifndef GS_CITUS_EXCHANGE_H
#define GS_CITUS_EXCHANGE_H

#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/array.h"

#include "aggs/ranks.h"
#include "base/types.h"

#define GS_X_SAMPLE			2048	/* keys sampled per level, at least */
#define GS_X_SAMPLE_MAX		16384	/* and at most (n / GS_X_SAMPLE_PER) */
#define GS_X_SAMPLE_PER		600
#define GS_X_SPREAD			16	/* a sample's pages: this many times its rate */
#define GS_X_ROWS_PER_PAGE	145	/* rows a page, for the first estimate (half the most) */
#define GS_X_RANK_SPLITTERS	64	/* splitters per wanted rank and level */
#define GS_X_MAX_LEVELS		8	/* then the candidates are gathered */

#define GS_X_HIST_MAX_BUCKETS (1 << 20)	/* gs_citus_histogram's buckets, at most (8 MB) */

#define GS_X_SIGN			UINT64CONST(0x8000000000000000)

typedef struct GsXchg
{
	char	   *rel;			/* the table, schema-qualified and quoted */
	char	   *kexpr;			/* the sort key k of a row */
	char	   *where;			/* quals AND x IS NOT NULL */
	char	   *value;			/* x, SQL */
	char	   *nsp;			/* the extension's schema (its functions in the rounds) */
	char	   *quals;			/* the quals, SQL, or "" */
	Oid			relid;
	bool		sample_pages;	/* a plain table: samples by TABLESAMPLE SYSTEM */
	StringInfoData cand;		/* " AND width_bucket(k, S) = ANY(W)" per level */
	/* k's type */
	bool		keyed;			/* k is gs_citus_key(x), int8 */
	Oid			ktype;
	int16		klen;
	bool		kbyval;
	char		kalign;
	FmgrInfo   *cmp;			/* k's btree comparison (not keyed) */
	/* what came back, for the report line */
	int			rounds;
	int			levels;
	int64		rows;
	int64		bytes;
	int64		count_rows;		/* of it: the counts rounds' rows (combined) */
	int64		count_bytes;
	int64		count_direct_bytes;	/* of it: what came from each shard as it was (shard scans) */
	int64		sql_bytes;		/* the rounds' query text (Citus: once per shard) */
	int64		shards;
	StringInfoData round_ms;	/* each round's time, ms, for the report: "12, 85, ..." */
	int			shard_rounds;	/* counts rounds by shard scans (citus_shard_round.c) */
	int			shard_gathers;	/* gathers by shard scans */
	int			spool_conns;	/* ... of a grouped one: its connections */
	int			spool_reads;	/* ... of them, those that read their spool */
	const char *shard_why;		/* ... why not, where the first was not */
	char	   *shard_col;		/* the column's name, where the counts were by shard scans */
	Datum	   *gather_bounds;	/* the first level's wanted ranges (gs_x_ranges_cond) */
	int			gather_nbounds;
	double		table_rows_est;	/* the table's rows, by its pages (<= 0: unknown) */
	double		values_est;		/* the values the WHERE keeps, by the sample or a count */
	bool		all;			/* every value gathered */
	const char *why_all;
} GsXchg;

/*
 * One level's buckets, in k's order, each either the keys equal to one
 * value or those strictly between two (or below the first, above the
 * last).  Keys (int8) have successors: thresholds v, v + 1 for a
 * splitter v the sample holds more than once make width_bucket's bucket
 * [v, v + 1) an equality bucket.
 * numeric and interval have none: bucket 2b - (k = S[b]) over
 * width_bucket's b, so k equal to a splitter gets the odd bucket below
 * the open interval above it.
 */
typedef struct GsXBuckets
{
	int			nb;				/* buckets 0 .. nb - 1 */
	char	   *expr;			/* a row's bucket, SQL */
	Datum	   *t;				/* keyed: the thresholds; else the splitters */
	int			nt;
} GsXBuckets;

/* what is asked: the SQL function's arguments, checked */
typedef struct GsXSpec
{
	bool		cont;
	bool		desc;
	bool		multi;
	Datum	   *fr;
	bool	   *frnull;
	int			np;
	ArrayType  *param;			/* multi: the fraction array as given */
	Oid			rettype;
	GsTypeInfo	t;				/* the value's type */
} GsXSpec;

/* the grouped exchange's groups (citus_exchange_grouped.c; by shard scans:
 * citus_shard_groups.c) */
typedef struct GsXGroup
{
	Datum		g;
	bool		gnull;
	bool		present;		/* a row of the answer (the NULL group may be absent) */
	int64		n;				/* its non-NULL values */
	bool		level;			/* sampled, counted, then gathered */
	bool		whole_later;	/* sampled nothing: gathered whole in the gather round */
	int			nr;
	int64	   *ranks;
	GsContRows *cr;
	int64	   *pos;			/* the ranks' positions among what is gathered */
	bool	   *done;
	Datum	   *vals;
	Datum	   *keys;			/* what came for it (the sample, or gathered) */
	int64		nkeys;
	int64		capkeys;
	int64		expect;			/* keys the gather round brings */
	GsXBuckets	bk;
	int			toff;			/* its thresholds' offset in the flat array */
	int			boff;			/* its bucket 0's flat number */
} GsXGroup;

typedef struct GsXGrouping
{
	char	   *gexpr;			/* the group expression, SQL */
	Oid			gtype;
	int16		glen;
	bool		gbyval;
	FmgrInfo   *gcmp;
	int			ng;				/* non-NULL groups: gs[1 .. ng]; gs[0] the NULL group */
	GsXGroup   *gs;
	char	   *idx;			/* a row's gi + 1, SQL */
} GsXGrouping;

/* citus_rounds.c */
extern SPITupleTable *gs_x_run(GsXchg *x, const char *sql, bool counts);
extern SPITupleTable *gs_x_run_sample(GsXchg *x, const char *sql);
extern void gs_x_set_citus_option(const char *name, const char *value);
extern void gs_x_check_columns(SPITupleTable *tt, int natts, const Oid *types);
extern char *gs_x_typed_array_literal(Oid typ, Datum *v, int n);
extern char *gs_x_array_literal(GsXchg *x, Datum *v, int n);
extern ArrayType *gs_x_int8_array_in(const char *text);

/* citus_exchange.c */
extern int	gs_x_cmp(const void *a, const void *b, void *arg);
extern int gs_x_bucket_of(const int64 *below, const int64 *cnt, int nb, int64 r);
extern Datum *gs_x_splitters(GsXchg *x, Datum *s, int64 m, int64 total, const int64 *cr,
							 const bool *done, int nr, int per_rank, int *ns);
extern int gs_x_spec_ranks(const GsXSpec *sp, int64 n, int64 *ranks, GsContRows *cr);
extern bool gs_x_estimate(GsXchg *x, double *rows, double *max_rows);
extern void gs_x_gather_pause(void);
extern void gs_x_setup(FunctionCallInfo fcinfo, const GsXSpec *sp, GsXchg *x, int *guc_nest);
extern Datum gs_x_result(const GsXchg *x, const GsXSpec *sp, const GsContRows *cr, Datum *vals);
extern void gs_x_parse_spec(FunctionCallInfo fcinfo, GsXSpec *sp, Oid rettype);
extern void gs_x_check_value_type(const char *rel, const char *value, Oid want);
extern void gs_x_buckets(GsXchg *x, Datum *sp, int ns, const Datum *s, int64 m, GsXBuckets *bk);
extern bool gs_x_bucket_equal(GsXchg *x, const GsXBuckets *bk, int b, Datum *v);
extern int	gs_x_exact_literals(void);
extern char *gs_x_counts_detail(const GsXchg *x);
extern int64 *gs_x_count_round(GsXchg *x, const char *bexpr, const char *from_where, int nb,
							   double rows);

/* citus_shard_round.c */
extern const char *gs_x_shard_unsafe(GsXchg *x, char **col);
extern ArrayType **gs_x_fan_out(GsXchg *x, const char *fn, const char *col, const char *arg,
								bool counts, int *nres);
extern int64 *gs_x_shard_count_round(GsXchg *x, const GsXBuckets *bk);
extern Datum *gs_x_shard_gather(GsXchg *x, const Datum *bounds, int nbounds, int64 *m);

/* citus_shard_groups.c */
extern bool gs_xg_by_shard_scans(GsXchg *x, GsXGrouping *gr, const GsXSpec *sp, int64 *total);
#endif							/* GS_CITUS_EXCHANGE_H */
