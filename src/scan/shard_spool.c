/*
 * shard_spool.c -- the grouped Citus exchange's spool on a worker
 * (scan/shard_spool.h says what it is for; docs/citus.md, "The spool").
 *
 * Why a file, and this one: the counts call and the gather are two
 * master_run_on_worker calls, each a new backend that exits when it
 * answers, so nothing in memory outlives the first.  PostgreSQL's temporary
 * files of one backend (BufFileCreateTemp) are deleted when it closes
 * them; its file sets (fileset.c) are named by the creator's pid, which the
 * next backend with that pid reuses and may delete.  So the spool is a
 * file of fd.c's "temporary file" kind (PathNameCreateTemporaryFile: counted
 * against temp_file_limit, closed at transaction end, not deleted) in the
 * default tablespace's pgsql_tmp, named base/pgsql_tmp/pgsql_tmpgpuselect_spool.*:
 * the prefix makes the server remove it at every start, and pg_ls_tmpdir()
 * show it.  (Not a directory of our own: it would outlive every spool.)
 *
 * Who deletes it: the gather that reads it (on its success or its ERROR),
 * or the coordinator's drop call where no gather comes (every rank found
 * in the counts).  A spool whose coordinator failed between the two calls
 * (a cancel, an ERROR, a lost connection) is deleted by the next spool
 * created on that server once it is GS_SPOOL_STALE_SECS old, or at a
 * restart.  A gather that finds its spool swept scans the shards.
 *
 * The file: a header (GsSpoolHeader, then the tag) in the first
 * GS_SPOOL_DATA_ALIGN bytes, written last (complete = 1); blocks of
 * GS_SPOOL_BLOCK rows, each int64 n, the keys, the groups (int32: the
 * counts call's group list); then the group list, (isnull, point) pairs.
 * 12 bytes a row: 10M rows over two workers put 60 MB on each.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <time.h>

#include "common/file_utils.h"	/* PG_TEMP_FILES_DIR (storage/fd.h before 17) */
#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "base/guc.h"
#include "scan/shard_spool.h"

#define GS_SPOOL_MAGIC		0x50534753	/* "GSSP" */
#define GS_SPOOL_VERSION	1
#define GS_SPOOL_DATA_ALIGN	8192	/* the header's room, at least */
#define GS_SPOOL_BLOCK_BYTES ((Size) (sizeof(int64) + GS_SPOOL_BLOCK * (sizeof(int64) + sizeof(int32))))
#define GS_SPOOL_STALE_SECS	300		/* a spool older: its coordinator gave up */

typedef struct GsSpoolHeader
{
	uint32		magic;
	uint32		version;
	Oid			role;
	Oid			db;
	int64		id;
	int64		taglen;
	int64		data_off;
	int64		nblocks;
	int64		rows;
	int64		groups_off;
	int64		ngroups;
	int64		complete;
} GsSpoolHeader;

/*
 * The spools are files of the default tablespace's temporary directory,
 * named with the prefix the server removes at start and pg_ls_tmpdir()
 * lists: base/pgsql_tmp/pgsql_tmpgpuselect_spool.<id>.<hash of the tag>
 */
#define GS_SPOOL_DIR	"base/" PG_TEMP_FILES_DIR
#define GS_SPOOL_PREFIX	PG_TEMP_FILE_PREFIX "gpuselect_spool."

static char *
gs_spool_path(int64 id, const char *tag)
{
	return psprintf("%s/%s%016llx.%08x", GS_SPOOL_DIR, GS_SPOOL_PREFIX, (unsigned long long) id,
					hash_bytes((const unsigned char *) tag, (int) strlen(tag)));
}

/*
 * What decides a spool's keys, as text: the column, the group expression,
 * the WHERE, the shards (their oids, in the call's order).
 */
char *
gs_spool_tag(const char *col, const char *gexpr, const char *quals, const Datum *shards, int nshards)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfo(&s, "%zu:%s|%zu:%s|%zu:%s|", strlen(col), col, strlen(gexpr), gexpr,
					 strlen(quals), quals);
	for (int i = 0; i < nshards; i++)
		appendStringInfo(&s, "%u,", DatumGetObjectId(shards[i]));
	return s.data;
}

/*
 * The spools their coordinators left behind (GS_SPOOL_STALE_SECS old)
 * deleted; the bytes of the others
 */
static int64
gs_spool_sweep(void)
{
	const char *dir = GS_SPOOL_DIR;
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;
	time_t		now = time(NULL);
	int64		bytes = 0;

	if (d == NULL)
		return 0;
	while ((de = ReadDirExtended(d, dir, LOG)) != NULL)
	{
		char	   *path;
		struct stat st;

		if (strncmp(de->d_name, GS_SPOOL_PREFIX, strlen(GS_SPOOL_PREFIX)) != 0)
			continue;
		path = psprintf("%s/%s", dir, de->d_name);
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		{
			if (st.st_mtime < now - GS_SPOOL_STALE_SECS)
				PathNameDeleteTemporaryFile(path, false);
			else
				bytes += (int64) st.st_size;
		}
		pfree(path);
	}
	FreeDir(d);
	return bytes;
}

/*
 * A new spool for exchange id and tag, in CurrentMemoryContext; NULL where
 * the file cannot be made, or gpuselect.citus_exchange_spool_limit leaves
 * no room (the caller counts without one).  Its bytes are capped by what
 * that limit leaves now and by temp_file_limit.
 */
GsSpoolWriter *
gs_spool_create(int64 id, const char *tag)
{
	GsSpoolWriter *w;
	File		f;
	char	   *path = gs_spool_path(id, tag);
	int64		room;

	if (gs_guc_citus_exchange_spool_limit <= 0)
		return NULL;
	room = (int64) gs_guc_citus_exchange_spool_limit * 1024 - gs_spool_sweep();
	if (temp_file_limit >= 0)
		room = Min(room, (int64) temp_file_limit * 1024);
	if (room < (int64) (GS_SPOOL_DATA_ALIGN + GS_SPOOL_BLOCK_BYTES))
	{
		elog(DEBUG1, "gpuselect: no spool: gpuselect.citus_exchange_spool_limit or temp_file_limit leaves %lld bytes",
			 (long long) room);
		return NULL;
	}
	if (MakePGDirectory(GS_SPOOL_DIR) < 0 && errno != EEXIST)
	{
		elog(DEBUG1, "gpuselect: could not create the directory \"%s\": %m", GS_SPOOL_DIR);
		return NULL;
	}
	f = PathNameCreateTemporaryFile(path, false);
	if (f < 0)
	{
		elog(DEBUG1, "gpuselect: could not create the spool \"%s\": %m", path);
		return NULL;
	}
	w = (GsSpoolWriter *) palloc0(sizeof(GsSpoolWriter));
	w->file = f;
	w->path = path;
	w->id = id;
	w->tag = pstrdup(tag);
	w->off = TYPEALIGN(GS_SPOOL_DATA_ALIGN, sizeof(GsSpoolHeader) + strlen(tag));
	w->limit = room;
	w->block = (char *) palloc(GS_SPOOL_BLOCK_BYTES);
	w->keys = (int64 *) (w->block + sizeof(int64));
	w->groups = (int32 *) (w->block + sizeof(int64) + GS_SPOOL_BLOCK * sizeof(int64));
	return w;
}

/* the file closed and deleted; later puts are dropped */
static void
gs_spool_fail(GsSpoolWriter *w, const char *why)
{
	if (w->failed)
		return;
	elog(DEBUG1, "gpuselect: the spool \"%s\" given up: %s", w->path, why);
	FileClose(w->file);
	PathNameDeleteTemporaryFile(w->path, false);
	w->failed = true;
}

/* a write of n bytes at off, or the spool given up (a full disk, temp_file_limit) */
static void
gs_spool_write(GsSpoolWriter *w, const char *buf, Size n, off_t off)
{
	int			done;

	if (w->failed)
		return;
	/* (FileWrite raises an ERROR past temp_file_limit: give up before it) */
	if ((int64) (off + n) > w->limit)
	{
		gs_spool_fail(w, "gpuselect.citus_exchange_spool_limit or temp_file_limit");
		return;
	}
	errno = 0;
	done = FileWrite(w->file, (char *) buf, (int) n, off, WAIT_EVENT_BUFFILE_WRITE);
	if (done != (int) n)
		gs_spool_fail(w, done < 0 ? strerror(errno) : "a short write");
}

/* the block's rows written (full or not: every block has the same size) */
void
gs_spool_flush(GsSpoolWriter *w)
{
	if (w->n == 0)
		return;
	*(int64 *) w->block = w->n;
	gs_spool_write(w, w->block, GS_SPOOL_BLOCK_BYTES, w->off);
	w->off += GS_SPOOL_BLOCK_BYTES;
	w->nblocks++;
	w->rows += w->n;
	w->n = 0;
}

/*
 * The spool completed: the call's groups ((isnull, point) pairs, in the
 * order the rows' group numbers name them), then the header, and closed.
 * False where it was given up (no file is left).
 */
bool
gs_spool_finish(GsSpoolWriter *w, const int64 *groups, int64 ngroups)
{
	Size		taglen = strlen(w->tag);
	Size		hlen = sizeof(GsSpoolHeader) + taglen;
	char	   *head = (char *) palloc0(hlen);
	GsSpoolHeader *hdr = (GsSpoolHeader *) head;

	gs_spool_flush(w);
	gs_spool_write(w, (const char *) groups, sizeof(int64) * 2 * ngroups, w->off);
	hdr->magic = GS_SPOOL_MAGIC;
	hdr->version = GS_SPOOL_VERSION;
	hdr->role = GetUserId();
	hdr->db = MyDatabaseId;
	hdr->id = w->id;
	hdr->taglen = (int64) taglen;
	hdr->data_off = TYPEALIGN(GS_SPOOL_DATA_ALIGN, hlen);
	hdr->nblocks = w->nblocks;
	hdr->rows = w->rows;
	hdr->groups_off = w->off;
	hdr->ngroups = ngroups;
	hdr->complete = 1;
	memcpy(head + sizeof(GsSpoolHeader), w->tag, taglen);
	gs_spool_write(w, head, hlen, 0);
	pfree(head);
	if (w->failed)
		return false;
	FileClose(w->file);
	return true;
}

/* the spool given up (the counts call failed): its file deleted */
void
gs_spool_discard(GsSpoolWriter *w)
{
	gs_spool_fail(w, "discarded");
}

/* a read of n bytes at off, all of them */
static bool
gs_spool_read_at(File f, char *buf, Size n, off_t off)
{
	return FileRead(f, buf, (int) n, off, WAIT_EVENT_BUFFILE_READ) == (int) n;
}

/*
 * Exchange id's spool for tag, opened where this role and database wrote
 * it completely: its groups in *groups ((isnull, point) pairs, *ngroups of
 * them); NULL where there is none such.
 */
GsSpoolReader *
gs_spool_open(int64 id, const char *tag, int64 **groups, int64 *ngroups)
{
	char	   *path = gs_spool_path(id, tag);
	File		f = PathNameOpenTemporaryFile(path, O_RDONLY);
	GsSpoolHeader hdr;
	Size		taglen = strlen(tag);
	char	   *ftag = (char *) palloc(taglen + 1);
	GsSpoolReader *r;

	if (f < 0)
		return NULL;
	if (!gs_spool_read_at(f, (char *) &hdr, sizeof(hdr), 0) ||
		hdr.magic != GS_SPOOL_MAGIC || hdr.version != GS_SPOOL_VERSION || hdr.complete != 1 ||
		hdr.role != GetUserId() || hdr.db != MyDatabaseId || hdr.id != id ||
		hdr.taglen != (int64) taglen ||
		!gs_spool_read_at(f, ftag, taglen, sizeof(hdr)) || memcmp(ftag, tag, taglen) != 0 ||
		hdr.ngroups < 0 || hdr.ngroups > (int64) (MaxAllocSize / (2 * sizeof(int64))) || hdr.nblocks < 0)
	{
		FileClose(f);
		elog(DEBUG1, "gpuselect: the spool \"%s\" is not this gather's", path);
		return NULL;
	}
	*ngroups = hdr.ngroups;
	*groups = (int64 *) palloc(sizeof(int64) * 2 * Max(hdr.ngroups, 1));
	if (!gs_spool_read_at(f, (char *) *groups, sizeof(int64) * 2 * hdr.ngroups, hdr.groups_off))
	{
		FileClose(f);
		return NULL;
	}
	r = (GsSpoolReader *) palloc0(sizeof(GsSpoolReader));
	r->file = f;
	r->path = path;
	r->off = hdr.data_off;
	r->nblocks = hdr.nblocks;
	r->block = (char *) palloc(GS_SPOOL_BLOCK_BYTES);
	return r;
}

/*
 * The next block's rows: *keys and *groups point at them (until the next
 * call); 0 at the end.  A block that cannot be read is an ERROR (the
 * caller deletes the spool on it).
 */
int
gs_spool_read(GsSpoolReader *r, const int64 **keys, const int32 **groups)
{
	int64		n;

	if (r->nblocks == 0)
		return 0;
	if (!gs_spool_read_at(r->file, r->block, GS_SPOOL_BLOCK_BYTES, r->off))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read the spool \"%s\": %m", r->path)));
	n = *(const int64 *) r->block;
	if (n < 1 || n > GS_SPOOL_BLOCK)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the spool \"%s\" has a block of %lld rows", r->path, (long long) n)));
	r->off += GS_SPOOL_BLOCK_BYTES;
	r->nblocks--;
	*keys = (const int64 *) (r->block + sizeof(int64));
	*groups = (const int32 *) (r->block + sizeof(int64) + GS_SPOOL_BLOCK * sizeof(int64));
	return (int) n;
}

/* the spool read: closed and deleted (also after an ERROR while reading) */
void
gs_spool_close(GsSpoolReader *r)
{
	FileClose(r->file);
	PathNameDeleteTemporaryFile(r->path, false);
}

/* exchange id's spool for tag deleted, where this role wrote it; true where there was one */
bool
gs_spool_drop(int64 id, const char *tag)
{
	int64	   *groups;
	int64		ngroups;
	GsSpoolReader *r = gs_spool_open(id, tag, &groups, &ngroups);

	if (r == NULL)
		return false;
	gs_spool_close(r);
	return true;
}
