/*
 * scan/shard_spool.h -- a worker's keys kept between the two shard calls
 * of one grouped Citus exchange (issue 34; docs/citus.md, "The spool"):
 * the counts call writes every key it counts, with its group, to a
 * temporary file; the gather call, in another backend (every
 * master_run_on_worker call is a new connection), reads the file instead
 * of scanning the shards again, and deletes it.
 *
 * A spool is named by the exchange's random id and a hash of its tag (the
 * column, the group expression, the WHERE and the shards: what decides
 * which keys it holds), and read only by the role and database that wrote
 * it, for the same tag.  Anything else -- no file, another tag, a write
 * that failed -- is "no spool": the gather then scans the shards, as
 * without one.  So a spool only ever saves a scan; the answer never
 * depends on it.
 */
#ifndef GS_SHARD_SPOOL_H
#define GS_SHARD_SPOOL_H

#include "postgres.h"

#include "storage/fd.h"

#define GS_SPOOL_BLOCK		8192	/* rows a block */

typedef struct GsSpoolWriter
{
	File		file;
	char	   *path;
	int64		id;
	const char *tag;
	off_t		off;			/* the next block's */
	int64		nblocks;
	int64		rows;
	int64		limit;			/* its bytes at most (the limits' room) */
	bool		failed;			/* a write failed: the file is gone, puts are dropped */
	char	   *block;			/* int64 n, then n keys (int64), then n groups (int32) */
	int64	   *keys;
	int32	   *groups;
	int			n;
} GsSpoolWriter;

typedef struct GsSpoolReader
{
	File		file;
	char	   *path;
	off_t		off;
	int64		nblocks;		/* left to read */
	char	   *block;
} GsSpoolReader;

extern char *gs_spool_tag(const char *col, const char *gexpr, const char *quals,
						  const Datum *shards, int nshards);
extern GsSpoolWriter *gs_spool_create(int64 id, const char *tag);
extern void gs_spool_flush(GsSpoolWriter *w);
extern bool gs_spool_finish(GsSpoolWriter *w, const int64 *groups, int64 ngroups);
extern void gs_spool_discard(GsSpoolWriter *w);
extern GsSpoolReader *gs_spool_open(int64 id, const char *tag, int64 **groups, int64 *ngroups);
extern int	gs_spool_read(GsSpoolReader *r, const int64 **keys, const int32 **groups);
extern void gs_spool_close(GsSpoolReader *r);
extern bool gs_spool_drop(int64 id, const char *tag);

/* one counted key of group (its place in the call's list of groups) */
static inline void
gs_spool_put(GsSpoolWriter *w, int32 group, int64 key)
{
	w->keys[w->n] = key;
	w->groups[w->n] = group;
	if (++w->n == GS_SPOOL_BLOCK)
		gs_spool_flush(w);
}

#endif							/* GS_SHARD_SPOOL_H */
