/*
 * datum_spill.c — GS_T_DATUM groups (numeric, text, interval, uuid, ...)
 * larger than gpuselect.work_mem: their values in a temporary file, and
 * selection in passes over it that keep only what can hold the wanted
 * ranks.  The key path's spill (spill.c) buckets keys by their bits; values
 * have no bits to bucket by, so here the buckets come from pivots: values
 * of the group itself, compared with the type's sort support in the state's
 * ordering (operator and collation), the same comparator the in-memory path
 * (datum_select.c) and the built-in's sort use.
 *
 * Writing.  When datum_state.c is about to hold more than the limit (a new
 * chunk, or a worker's chunk copied in by combine), the store spills: every
 * value it holds goes to a BufFile (spill.c's GsTempFile: the state's
 * memory context and resource owner decide its lifetime, as for keys) and
 * the chunks are freed; from then on the store has one write buffer chunk
 * (a quarter of the limit, 8 kB to 1 MB) that is appended to the file when
 * full, as a record: a header (bytes, values) and the chunk's bytes as they
 * are, packed at the type's alignment, so a record read back into a
 * MAXALIGNed buffer is a chunk gs_datum_chunk_values reads.  A value larger
 * than the buffer gets a chunk of its own until the next flush.  A store of
 * numeric keys (datum_numkey.c) turns into values when it spills, and text
 * under "C" is selected by comparison once spilled (prefix keys would need
 * the key spill's passes over a second file: left out, the comparison path
 * is exact for it too).  Every value written also goes through a reservoir
 * sample (fixed seed, at most 1023 values, and at most a quarter of the
 * limit -- 64 kB to 256 kB -- of copies: a sample over its bytes drops a
 * random half), which gives the first level its pivots without a pass.
 * Partial states.  A partial state (a parallel worker's, or the leader's
 * own share; with GROUP BY or without) spills too, into a file of the file
 * set its leader made for the query (shared_fileset.c); serializing it
 * completes the file and sends only its name, and the leader's state
 * deserialized from it reads the file as a spilled store's, so combining it
 * copies it in passes of one record, into a combined state that spills on
 * its own past the limit (as it does for a worker's chunks, before they are
 * copied).  Without a set (past gpuselect.max_shared_memory; a state Citus
 * sends to another server) a partial state stays in memory and travels
 * whole.
 *
 * The selection over the file: datum_spill_select.c.
 */
#include "postgres.h"

#include "common/pg_prng.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "base/guc.h"
#include "state/datum_spill.h"
#include "state/datum_state.h"
#include "state/shared_fileset.h"
#include "state/spill.h"

#define GS_DSPILL_SAMPLE_MAX		1023
#define GS_DSPILL_SAMPLE_MIN_BYTES	((Size) 64 * 1024)
#define GS_DSPILL_SAMPLE_MAX_BYTES	((Size) 256 * 1024)
#define GS_DSPILL_BUFFER_MIN		((Size) 8 * 1024)
#define GS_DSPILL_BUFFER_MAX		((Size) 1024 * 1024)
#define GS_DSPILL_SEED				UINT64CONST(0x7370696c6c)	/* fixed: deterministic pivots */

/* the limit's shares: write buffers, samples */
Size
gs_dspill_buffer_bytes(void)
{
	Size		b = gs_spill_limit_bytes() / 4;

	return Max(Min(b, GS_DSPILL_BUFFER_MAX), GS_DSPILL_BUFFER_MIN);
}

static Size
gs_dspill_sample_bytes(void)
{
	Size		b = gs_spill_limit_bytes() / 4;

	return Min(Max(b, GS_DSPILL_SAMPLE_MIN_BYTES), GS_DSPILL_SAMPLE_MAX_BYTES);
}

/* ---------------- the sample ---------------- */

void
gs_dsample_init(GsDSample *sm, MemoryContext parent)
{
	sm->cxt = AllocSetContextCreate(parent, "gpuselect value sample", ALLOCSET_SMALL_SIZES);
	pg_prng_seed(&sm->rng, GS_DSPILL_SEED);
	sm->cap = GS_DSPILL_SAMPLE_MAX;
	sm->n = 0;
	sm->seen = 0;
	sm->vals = (Datum *) MemoryContextAlloc(sm->cxt, sizeof(Datum) * sm->cap);
	sm->sizes = (Size *) MemoryContextAlloc(sm->cxt, sizeof(Size) * sm->cap);
	sm->bytes = 0;
	sm->maxbytes = gs_dspill_sample_bytes();
}

static void
gs_dsample_drop(GsDSample *sm, const GsDatumStore *s, int slot)
{
	if (!s->typbyval)
	{
		pfree(DatumGetPointer(sm->vals[slot]));
		sm->bytes -= MAXALIGN(sm->sizes[slot]);
	}
}

/* a random half of a uniform sample is a uniform sample (partial Fisher-Yates) */
static void
gs_dsample_halve(GsDSample *sm, const GsDatumStore *s)
{
	int			keep = sm->cap / 2;

	for (int i = 0; i < keep && i < sm->n; i++)
	{
		int			j = i + (int) pg_prng_uint64_range(&sm->rng, 0, (uint64) (sm->n - 1 - i));
		Datum		v = sm->vals[i];
		Size		z = sm->sizes[i];

		sm->vals[i] = sm->vals[j];
		sm->sizes[i] = sm->sizes[j];
		sm->vals[j] = v;
		sm->sizes[j] = z;
	}
	for (int i = keep; i < sm->n; i++)
		gs_dsample_drop(sm, s, i);
	sm->n = Min(sm->n, keep);
	sm->cap = keep;
}

/* algorithm R: the i-th value replaces a random slot with probability cap / i */
void
gs_dsample_add(GsDSample *sm, const GsDatumStore *s, Datum val, Size size)
{
	int			slot;

	sm->seen++;
	if (sm->n < sm->cap)
		slot = sm->n++;
	else
	{
		uint64		j = pg_prng_uint64_range(&sm->rng, 0, (uint64) sm->seen - 1);

		if (j >= (uint64) sm->cap)
			return;
		slot = (int) j;
		gs_dsample_drop(sm, s, slot);
	}
	if (s->typbyval)
		sm->vals[slot] = val;
	else
	{
		char	   *copy = MemoryContextAlloc(sm->cxt, size);

		memcpy(copy, DatumGetPointer(val), size);
		sm->vals[slot] = PointerGetDatum(copy);
		sm->bytes += MAXALIGN(size);
	}
	sm->sizes[slot] = size;
	while (sm->bytes > sm->maxbytes && sm->cap > 2)
		gs_dsample_halve(sm, s);
}

/* ---------------- files of records ---------------- */

void
gs_dfile_open(GsDFile *f, MemoryContext mcxt)
{
	memset(f, 0, sizeof(*f));
	gs_temp_file_open(&f->tf, mcxt);
}

void
gs_dfile_open_shared(GsDFile *f, MemoryContext mcxt, GsFileSetRef *ref)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	BufFile    *file = gs_shared_fileset_create_file(ref);

	MemoryContextSwitchTo(old);
	memset(f, 0, sizeof(*f));
	gs_temp_file_adopt(&f->tf, mcxt, file);
}

void
gs_dfile_write(GsDFile *f, const char *data, Size used, int64 nvals)
{
	GsDRecord	h;

	if (nvals == 0)
		return;
	h.used = used;
	h.nvals = (uint64) nvals;
	/* a final call may have read the file since the last write */
	gs_temp_file_seek(&f->tf, f->end_fileno, f->end_off);
	BufFileWrite(f->tf.file, (void *) &h, sizeof(h));
	BufFileWrite(f->tf.file, (void *) data, used);
	BufFileTell(f->tf.file, &f->end_fileno, &f->end_off);
	f->nrecords++;
	f->nvals += nvals;
}

void
gs_dfile_rewind(GsDFile *f)
{
	gs_temp_file_seek(&f->tf, 0, 0);
}

GsDRecord
gs_dfile_read(GsDFile *f, char **buf, Size *cap, MemoryContext mcxt)
{
	GsDRecord	h;

	gs_temp_file_read(&f->tf, &h, sizeof(h));
	if (h.used > MaxAllocHugeSize || h.nvals == 0 || h.nvals > h.used)
		elog(ERROR, "gpuselect: corrupt value spill file");
	if (h.used > *cap)
	{
		if (*buf)
			pfree(*buf);
		*cap = MAXALIGN(h.used);
		*buf = MemoryContextAllocHuge(mcxt, *cap);
	}
	gs_temp_file_read(&f->tf, *buf, h.used);
	return h;
}

/*
 * The next value of a packed chunk after *off (false at its end); the
 * lengths are checked against the chunk, so a damaged file is an ERROR.
 */
static inline bool
gs_dspill_next_value(const GsDatumStore *s, const char *data, Size used, Size *off,
					 Datum *val, Size *size)
{
	Size		o = *off;
	const char *p;

	if (o >= used)
		return false;
	o = gs_datum_align(s, o);
	if (o >= used)
		elog(ERROR, "gpuselect: corrupt value store");
	p = data + o;
	if (s->typbyval)
	{
		*size = sizeof(Datum);
		if (*size > used - o)
			elog(ERROR, "gpuselect: corrupt value store");
		memcpy(val, p, sizeof(Datum));
	}
	else
	{
		if (s->typlen > 0)
			*size = s->typlen;
		else if (s->typlen == -1)
		{
			if (VARHDRSZ > used - o || VARATT_IS_EXTENDED(p))
				elog(ERROR, "gpuselect: corrupt value store");
			*size = VARSIZE(p);
		}
		else
			*size = strnlen(p, used - o) + 1;
		if (*size > used - o)
			elog(ERROR, "gpuselect: corrupt value store");
		*val = PointerGetDatum(p);
	}
	*off = o + *size;
	return true;
}

/* ---------------- a spilled store (datum_state.c's side) ---------------- */

bool
gs_datum_spill_wanted(const GsState *st, Size more_bytes)
{
	const GsDatumStore *s = st->datums;
	Size		held = more_bytes;

	/* a moving frame's store never (in_memory) */
	if (s->spill != NULL || s->in_memory)
		return false;
	for (int i = 0; i < s->nchunks; i++)
		held += s->chunks[i].cap;
	if (held <= gs_spill_limit_bytes())
		return false;

	/*
	 * A partial state only into its leader's file set, and only one that
	 * stays on this server (lease_ok: not one Citus sends elsewhere)
	 */
	return !st->partial || (st->lease_ok && gs_shared_fileset_available());
}

/* one packed chunk of values to the store's file, each into the sample */
static void
gs_dspill_write_chunk(const GsDatumStore *s, const char *data, Size used)
{
	GsDatumSpill *sp = s->spill;
	Size		off = 0;
	Datum		v;
	Size		size;
	int64		n = 0;

	while (gs_dspill_next_value(s, data, used, &off, &v, &size))
	{
		gs_dsample_add(&sp->sample, s, v, size);
		n++;
	}
	gs_dfile_write(&sp->file, data, used, n);
}

void
gs_datum_spill_add_chunk(GsState *st, const char *data, Size used)
{
	Assert(st->datums->spill != NULL);
	CHECK_FOR_INTERRUPTS();
	gs_dspill_write_chunk(st->datums, data, used);
}

void
gs_datum_spill_start(GsState *st)
{
	GsDatumStore *s = st->datums;
	GsDatumChunk *old = s->chunks;
	int			nold = s->nchunks;
	bool		keys = s->keymode == GS_DK_NUMERIC;
	GsDatumSpill *sp;

	Assert(s->spill == NULL);
	sp = (GsDatumSpill *) MemoryContextAllocZero(st->mcxt, sizeof(GsDatumSpill));
	if (st->partial)
	{
		/* the leader's set outlives the state: the query's memory holds both */
		sp->shared = true;
		gs_dfile_open_shared(&sp->file, st->mcxt, &sp->ref);
	}
	else
		gs_dfile_open(&sp->file, st->mcxt);
	gs_dsample_init(&sp->sample, st->mcxt);
	s->spill = sp;
	gs_states_spilled++;

	/* values from now on, in one write buffer chunk */
	s->keymode = GS_DK_VALUES;
	s->chunks = NULL;
	s->nchunks = s->maxchunks = 0;
	s->grow = 0;
	gs_datum_new_chunk(st, gs_dspill_buffer_bytes());

	if (keys)
	{
		int64		nrows = st->nrows;

		/* numeric keys: rebuilt as values through the write buffer (counts the rows again) */
		st->nrows = 0;
		gs_datum_append_keys_as_values(st, old, nold, s->dscale, s->keyshort);
		if (st->nrows != nrows)
			elog(ERROR, "gpuselect: numeric keys lost in a spill");
	}
	else
	{
		for (int i = 0; i < nold; i++)
		{
			CHECK_FOR_INTERRUPTS();
			gs_dspill_write_chunk(s, old[i].data, old[i].used);
		}
	}
	for (int i = 0; i < nold; i++)
		pfree(old[i].data);
	if (old)
		pfree(old);
}

/* the buffer is full (or a value does not fit it): every chunk to the file */
static void
gs_dspill_flush(GsState *st)
{
	GsDatumStore *s = st->datums;

	for (int i = 0; i < s->nchunks; i++)
		gs_dspill_write_chunk(s, s->chunks[i].data, s->chunks[i].used);
	for (int i = 1; i < s->nchunks; i++)
		pfree(s->chunks[i].data);
	s->nchunks = 1;
	s->chunks[0].used = 0;
}

char *
gs_datum_spill_reserve(GsState *st, Size size)
{
	GsDatumStore *s = st->datums;
	GsDatumChunk *c;

	gs_dspill_flush(st);
	c = &s->chunks[0];
	if (size > c->cap)
		c = gs_datum_new_chunk(st, MAXALIGN(size));	/* on its own until the next flush */
	c->used = size;
	return c->data;
}

/*
 * into += from where from spilled: its records read back one at a time.
 * from is a partial state deserialized from a file reference (a worker's,
 * or the leader's own share): its file is the one that state wrote.  into
 * spills on its own once the copies would pass the limit.
 */
void
gs_datum_spill_combine_from(GsState *into, const GsState *from)
{
	const GsDatumStore *fs = from->datums;
	GsDFile    *f = &fs->spill->file;
	char	   *buf = NULL;
	Size		cap = 0;

	if (f->nrecords > 0)
		gs_dfile_rewind(f);
	for (int64 r = 0; r < f->nrecords; r++)
	{
		GsDRecord	h;

		CHECK_FOR_INTERRUPTS();
		h = gs_dfile_read(f, &buf, &cap, CurrentMemoryContext);
		gs_datum_add_values_chunk(into, buf, h.used);
	}
	if (buf)
		pfree(buf);
	for (int i = 0; i < fs->nchunks; i++)
		gs_datum_add_values_chunk(into, fs->chunks[i].data, fs->chunks[i].used);
	into->nrows += from->nrows;

	/* a partial state's file is read once: its disk goes now (shared_fileset.c) */
	if (fs->spill->shared && fs->spill->exported)
	{
		gs_temp_file_close(&fs->spill->file.tf);
		gs_shared_fileset_delete_file(&fs->spill->ref);
		fs->spill->file.nrecords = 0;
	}
}

/* ---------------- partial states in a file set (datum_state.c's serial form) ---------------- */

void
gs_datum_spill_export(GsState *st, GsFileSetRef *ref, int64 *nrecords)
{
	GsDatumSpill *sp = st->datums->spill;

	if (sp == NULL || !sp->shared)
		elog(ERROR, "gpuselect: a state spilled to a private file cannot be serialized");
	if (!sp->exported)
	{
		/* the write buffer (and a value too large for it) go last */
		gs_dspill_flush(st);
		BufFileExportFileSet(sp->file.tf.file);
		gs_temp_file_close(&sp->file.tf);
		sp->exported = true;
	}
	*ref = sp->ref;
	*nrecords = sp->file.nrecords;
}

void
gs_datum_spill_open_shared(GsState *st, const GsFileSetRef *ref, int64 nrecords, int64 nvals)
{
	GsDatumStore *s = st->datums;
	GsDatumSpill *sp;
	MemoryContext old;
	BufFile    *file;

	if (nrecords < 0 || nvals < nrecords)
		elog(ERROR, "gpuselect: serialized state has a bad header");
	sp = (GsDatumSpill *) MemoryContextAllocZero(st->mcxt, sizeof(GsDatumSpill));
	sp->shared = true;
	sp->ref = *ref;
	old = MemoryContextSwitchTo(st->mcxt);
	file = gs_shared_fileset_open_file(ref);
	MemoryContextSwitchTo(old);
	gs_temp_file_adopt(&sp->file.tf, st->mcxt, file);
	sp->file.nrecords = nrecords;
	sp->file.nvals = nvals;
	sp->exported = true;		/* read only */
	gs_dsample_init(&sp->sample, st->mcxt);
	s->keymode = GS_DK_VALUES;
	s->spill = sp;
	st->nrows = nvals;
}
