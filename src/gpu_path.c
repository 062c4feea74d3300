/*
 * gpu_path.c — the GPU path of a CUDA build (implements gpu_path.h).
 *
 * Lifecycle.  Nothing here runs in the postmaster or in _PG_init: the CUDA
 * context is created lazily by the first backend call that needs it
 * (gpu_path_ready), once per process, and a parallel worker never creates one
 * (workers only fill partial states; the leader selects after combining).
 * When the context cannot be created, the reason is remembered and the
 * backend stays on the CPU path.
 *
 * Data flow.  Once a group holds gpuselect.gpu_min_rows values, state.c asks
 * here for its further chunks (not for partial states: they are serialized
 * for the leader's combine, never selected on): ordinary malloc'd memory
 * registered as page-locked (cudaHostRegister through the engine).  Measured
 * on the H100 machine: registering costs ~37 us/MB against ~370 us/MB for
 * cudaHostAlloc, and pinned copies run ~55 GB/s against 7-9 GB/s pageable.
 * Released chunks are kept, still registered, in a per-backend pool of up to
 * gpuselect.pinned_pool_size and reused by later queries: otherwise a fresh
 * chunk's pages are faulted in and locked on every query (~30K page faults
 * at 10M float8 rows), and the serial GPU path cost 11-12% more than sum(x)
 * on the H100 machine instead of 5-6%
 * (test/bench/results/e2e-2026-11-23-h100-session5.md).  Each full chunk is
 * copied to its own device buffer asynchronously while the scan goes on; the
 * final call copies the rest, joins everything into one device buffer, and
 * selects.
 * The device buffer stays with the state, so a shareable final function run
 * again on the same state (several aggregates over one ORDER BY) copies
 * nothing.
 *
 * Resources.  Everything a state holds (registered host chunks, device
 * buffers) is released by a reset callback on the state's memory context:
 * on success, on ERROR and on query cancel alike.  No ERROR leaves an
 * engine call: engine calls return a status, and only then does this file
 * raise or fall back.  Interrupts are processed by dispatch.c's hook, in the
 * engine's polls and between the staging copies here: a harmless one is
 * absorbed and the work goes on, an ERROR is caught in the hook and
 * re-thrown once the engine (or the staging loop) has cleaned up.  The
 * blocking waits (gs_cuda_sync) are not polled: each waits for copies of
 * at most a state's chunks already queued, and the hook runs right after.
 */
#include "postgres.h"

#include <stdlib.h>

#include "access/parallel.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "portability/instr_time.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "gs_cuda.h"
#include "arena.h"
#include "dispatch.h"
#include "gpu_path.h"
#include "guc.h"

/* ---------------- backend-wide GPU state ---------------- */

typedef enum GsGpuAvail
{
	GS_GPU_UNTRIED,
	GS_GPU_READY,
	GS_GPU_UNAVAILABLE
} GsGpuAvail;

static GsGpuAvail gpu_avail = GS_GPU_UNTRIED;
static gs_cuda_engine *gpu_engine = NULL;
static int	gpu_owner_pid = 0;
static char gpu_reason[256] = "not initialized yet (the context is created at first GPU use)";
static char gpu_device_name[256] = "";
static double gpu_init_ms = 0;
static uint32 gpu_noticed = 0;	/* bit per gs_status: one NOTICE per backend and reason */
static int64 gpu_pinned_bytes = 0;	/* registered host bytes held by states */

/*
 * The pool of registered chunks no state holds (oldest first).  Chunk sizes
 * are powers of two times the key width, rounded to pages, so a query
 * mostly finds the sizes it needs.  Bounded by gpuselect.pinned_pool_size
 * (trimmed whenever a state returns chunks) and by its slot count.
 */
#define GS_POOL_SLOTS 64
typedef struct GsPooledChunk
{
	void	   *p;
	Size		bytes;
} GsPooledChunk;
static GsPooledChunk gpu_pool[GS_POOL_SLOTS];
static int	gpu_pool_n = 0;
static int64 gpu_pool_bytes = 0;

/*
 * The leader's key arena (arena.c), page-locked once at its first use here
 * and kept so: parallel workers write later queries' keys into memory that
 * is already locked.
 */
static char *arena_locked = NULL;
static Size arena_locked_bytes = 0;
static bool arena_lock_tried = false;

/* test hooks (CUDA builds only; see gpu_path_define_gucs) */
static int	gs_guc_test_device_memory_cap_mb = 0;
static int	gs_guc_test_fail_launches = 0;

/* ---------------- per-state GPU data ---------------- */

typedef struct GsDevChunk
{
	void	   *d;				/* device copy of chunk i, or NULL */
	uint64		n;				/* keys copied */
} GsDevChunk;

typedef struct GpuPathState
{
	GsState    *st;
	MemoryContextCallback cb;

	/* registered host chunks, to unregister and free */
	void	  **pinned;
	Size	   *pinned_bytes;
	int			npinned;
	int			maxpinned;

	/* device copies of full chunks made during the scan, by chunk number */
	GsDevChunk *dev;
	int			maxdev;

	/* the whole input, contiguous on the device (kept for a re-run) */
	void	   *d_all;
	uint64		d_all_n;
	unsigned	d_all_key_bytes;

	int64		bytes_copied;
} GpuPathState;

static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

void
gpu_path_define_gucs(void)
{
	DefineCustomIntVariable("gpuselect.test_device_memory_cap_mb",
							"Test hook: fail GPU allocations beyond this many MB (0: no cap).",
							"For fault-injection tests of the fallback to the CPU path.",
							&gs_guc_test_device_memory_cap_mb,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gpuselect.test_fail_launches",
							"Test hook: make the next N GPU selections fail as if a kernel launch had failed.",
							"For fault-injection tests of the fallback to the CPU path.",
							&gs_guc_test_fail_launches,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
}

/*
 * Is the GPU usable in this process?  Creates the context on first call
 * (never in a parallel worker, never in the postmaster).
 */
static bool
gpu_path_ready(void)
{
	gs_error	err;
	instr_time	start;
	size_t		free_b = 0,
				total_b = 0;

	/* workers fill partial states only; the postmaster never runs queries,
	 * but a CUDA context must never exist there (children would inherit it) */
	if (IsParallelWorker() || (IsPostmasterEnvironment && !IsUnderPostmaster))
		return false;
	if (gpu_avail == GS_GPU_READY)
		return gpu_owner_pid == MyProcPid;	/* a context is not valid across fork */
	if (gpu_avail == GS_GPU_UNAVAILABLE)
		return false;

	memset(&err, 0, sizeof(err));
	INSTR_TIME_SET_CURRENT(start);
	if (gs_cuda_open(0, &gpu_engine, &err) != GS_OK)
	{
		gpu_engine = NULL;
		gpu_avail = GS_GPU_UNAVAILABLE;
		snprintf(gpu_reason, sizeof(gpu_reason), "%s",
				 err.message[0] ? err.message : "the CUDA context could not be created");
		return false;
	}
	gpu_init_ms = elapsed_ms(start);
	gpu_owner_pid = MyProcPid;
	gpu_avail = GS_GPU_READY;
	if (gs_cuda_device_info(gpu_engine, gpu_device_name, sizeof(gpu_device_name),
						   &free_b, &total_b, &err) != GS_OK)
		strlcpy(gpu_device_name, "unknown", sizeof(gpu_device_name));
	snprintf(gpu_reason, sizeof(gpu_reason), "ready");
	elog(DEBUG1, "gpuselect: CUDA context on %s created in %.1f ms", gpu_device_name, gpu_init_ms);
	return true;
}

/* unregister and free the oldest pooled chunks until the pool fits in limit */
static void
gpu_path_pool_trim(int64 limit)
{
	int			drop = 0;

	while (drop < gpu_pool_n && gpu_pool_bytes > limit)
	{
		gs_cuda_host_unregister(gpu_engine, gpu_pool[drop].p);
		free(gpu_pool[drop].p);
		gpu_pool_bytes -= (int64) gpu_pool[drop].bytes;
		drop++;
	}
	if (drop > 0)
	{
		memmove(gpu_pool, gpu_pool + drop, sizeof(GsPooledChunk) * (gpu_pool_n - drop));
		gpu_pool_n -= drop;
	}
}

/* a registered chunk no state holds any more: into the pool (the caller
 * trims it to its limit); when every slot is taken, the oldest goes first */
static void
gpu_path_pool_put(void *p, Size bytes)
{
	if (gpu_pool_n == GS_POOL_SLOTS)
		gpu_path_pool_trim(gpu_pool_bytes - (int64) gpu_pool[0].bytes);
	gpu_pool[gpu_pool_n].p = p;
	gpu_pool[gpu_pool_n].bytes = bytes;
	gpu_pool_n++;
	gpu_pool_bytes += (int64) bytes;
}

/* a pooled chunk of exactly this size (the newest), or NULL */
static void *
gpu_path_pool_take(Size bytes)
{
	for (int i = gpu_pool_n - 1; i >= 0; i--)
		if (gpu_pool[i].bytes == bytes)
		{
			void	   *p = gpu_pool[i].p;

			memmove(gpu_pool + i, gpu_pool + i + 1, sizeof(GsPooledChunk) * (gpu_pool_n - i - 1));
			gpu_pool_n--;
			gpu_pool_bytes -= (int64) bytes;
			return p;
		}
	return NULL;
}

/* Release everything a state holds on the GPU side (reset callback). */
static void
gpu_path_state_release(void *arg)
{
	GpuPathState *g = (GpuPathState *) arg;
	gs_error	err;

	if (gpu_engine == NULL)
		return;
	/* chunks may still be in flight to the device: finish before freeing */
	(void) gs_cuda_sync(gpu_engine, &err);
	for (int i = 0; i < g->maxdev; i++)
		if (g->dev[i].d)
		{
			gs_cuda_free(gpu_engine, g->dev[i].d);
			g->dev[i].d = NULL;
		}
	if (g->d_all)
	{
		gs_cuda_free(gpu_engine, g->d_all);
		g->d_all = NULL;
	}
	for (int i = 0; i < g->npinned; i++)
	{
		gpu_path_pool_put(g->pinned[i], g->pinned_bytes[i]);
		gpu_pinned_bytes -= (int64) g->pinned_bytes[i];
	}
	g->npinned = 0;
	gpu_path_pool_trim((int64) gs_guc_pinned_pool_size * 1024 * 1024);
	g->st->gpu = NULL;
}

static GpuPathState *
gpu_path_state_get(GsState *st)
{
	GpuPathState *g = st->gpu;

	if (g == NULL)
	{
		g = (GpuPathState *) MemoryContextAllocZero(st->mcxt, sizeof(GpuPathState));
		g->st = st;
		g->cb.func = gpu_path_state_release;
		g->cb.arg = g;
		MemoryContextRegisterResetCallback(st->mcxt, &g->cb);
		st->gpu = g;
	}
	return g;
}

void *
gpu_path_chunk_alloc(GsState *st, Size bytes)
{
	GpuPathState *g;
	gs_error	err;
	void	   *p;
	Size		rounded = TYPEALIGN(4096, bytes);

	if (!gpu_path_ready())
		return NULL;
	g = gpu_path_state_get(st);
	if (g->npinned == g->maxpinned)
	{
		int			newmax = g->maxpinned ? g->maxpinned * 2 : 16;

		g->pinned = g->pinned
			? (void **) repalloc(g->pinned, newmax * sizeof(void *))
			: (void **) MemoryContextAlloc(st->mcxt, newmax * sizeof(void *));
		g->pinned_bytes = g->pinned_bytes
			? (Size *) repalloc(g->pinned_bytes, newmax * sizeof(Size))
			: (Size *) MemoryContextAlloc(st->mcxt, newmax * sizeof(Size));
		g->maxpinned = newmax;
	}
	p = gpu_path_pool_take(rounded);
	if (p == NULL)
	{
		if (posix_memalign(&p, 4096, rounded) != 0)
			return NULL;
		memset(&err, 0, sizeof(err));
		if (gs_cuda_host_register(gpu_engine, p, rounded, &err) != GS_OK)
		{
			free(p);
			elog(DEBUG1, "gpuselect: could not page-lock a %zu-byte chunk: %s", rounded, err.message);
			return NULL;
		}
	}
	g->pinned[g->npinned] = p;
	g->pinned_bytes[g->npinned++] = rounded;
	gpu_pinned_bytes += (int64) rounded;
	return p;
}

/* Start copying a full page-locked chunk to the device while the scan goes on. */
void
gpu_path_chunk_filled(GsState *st, int chunkno)
{
	GpuPathState *g = st->gpu;
	GsChunk    *c = &st->chunks[chunkno];
	Size		bytes = (Size) c->n * st->key_bytes;
	gs_error	err;
	void	   *d = NULL;

	if (g == NULL || !c->pinned || gpu_avail != GS_GPU_READY || c->n == 0)
		return;
	if (chunkno >= g->maxdev)
	{
		int			newmax = Max(chunkno + 1, g->maxdev * 2);

		g->dev = g->dev
			? (GsDevChunk *) repalloc(g->dev, newmax * sizeof(GsDevChunk))
			: (GsDevChunk *) MemoryContextAlloc(st->mcxt, newmax * sizeof(GsDevChunk));
		memset(g->dev + g->maxdev, 0, (newmax - g->maxdev) * sizeof(GsDevChunk));
		g->maxdev = newmax;
	}
	memset(&err, 0, sizeof(err));
	gs_cuda_set_memory_cap(gpu_engine, (size_t) gs_guc_test_device_memory_cap_mb << 20);
	if (gs_cuda_alloc(gpu_engine, bytes, &d, &err) != GS_OK)
		return;					/* the final call copies this chunk itself */
	if (gs_cuda_copy_to_device_async(gpu_engine, d, c->data, bytes, &err) != GS_OK)
	{
		gs_cuda_free(gpu_engine, d);
		return;
	}
	g->dev[chunkno].d = d;
	g->dev[chunkno].n = c->n;
	g->bytes_copied += (int64) bytes;
}

/*
 * Give up on the GPU for this call: ERROR in device = gpu, otherwise one
 * NOTICE per backend and reason, and the caller runs the CPU path.
 */
static GpuPathOutcome
gpu_path_fallback(GsRunInfo *info, gs_status status, const char *why)
{
	if (gs_guc_device == GS_DEVICE_GPU)
		gs_dispatch_gpu_required(status == GS_ERR_DEVICE_NOMEM ? ERRCODE_OUT_OF_MEMORY
							  : ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
							  why);
	if ((gpu_noticed & (1u << status)) == 0)
	{
		gpu_noticed |= 1u << status;
		ereport(NOTICE,
				(errmsg("gpuselect: using the CPU path: %s", why),
				 errdetail("This notice is shown once per session and reason; gpuselect_status() shows the GPU state.")));
	}
	info->path = psprintf("cpu (fallback: %s)", why);
	return GPU_PATH_NOT_USED;
}

/* Free the joined device buffer (after a failure, or when the state grew). */
static void
gpu_path_drop_all(GpuPathState *g)
{
	if (g->d_all)
	{
		gs_cuda_free(gpu_engine, g->d_all);
		g->d_all = NULL;
		g->d_all_n = 0;
	}
}

static void
gpu_path_arena_unlock(int code, Datum arg)
{
	/* before the arena's segment is unmapped at backend exit */
	if (arena_locked && gpu_engine)
		gs_cuda_host_unregister(gpu_engine, arena_locked);
	arena_locked = NULL;
}

/* is this arena chunk in page-locked memory?  Locks the arena the first time. */
static bool
gpu_path_arena_chunk_locked(const GsChunk *c, Size bytes)
{
	if (!arena_lock_tried)
	{
		char	   *base;
		Size		size;
		gs_error	err;

		arena_lock_tried = true;
		memset(&err, 0, sizeof(err));
		if (gs_arena_region(&base, &size))
		{
			if (gs_cuda_host_register(gpu_engine, base, size, &err) == GS_OK)
			{
				arena_locked = base;
				arena_locked_bytes = size;
				before_shmem_exit(gpu_path_arena_unlock, (Datum) 0);
			}
			else
				elog(DEBUG1, "gpuselect: could not page-lock the key arena: %s", err.message);
		}
	}
	return arena_locked != NULL && c->data >= arena_locked &&
		c->data + bytes <= arena_locked + arena_locked_bytes;
}

/*
 * Put the state's keys, contiguous, on the device: join the chunks copied
 * during the scan and copy the rest.  2-byte keys are widened to 4 bytes.
 *
 * gi: dispatch.c's interrupt hook is polled before each chunk's copy (a
 * copy from pageable memory returns only once the chunk has been staged),
 * so a cancel waits for about one chunk; on an ERROR the loop stops with
 * GS_ERR_CANCELED and cleans up (waits for queued copies, unregisters)
 * before the caller re-throws it.
 */
static gs_status
gpu_path_stage(GpuPathState *g, GsInterrupts *gi, gs_error *err)
{
	GsState    *st = g->st;
	unsigned	kb = st->key_bytes;
	uint64		n = (uint64) st->nrows;
	char	   *d_raw = NULL;
	uint64		off = 0;
	gs_status	s;
	void	  **registered;
	int			nregistered = 0;

	if (g->d_all && g->d_all_n == n)
		return GS_OK;
	gpu_path_drop_all(g);

	s = gs_cuda_alloc(gpu_engine, (size_t) n * kb, (void **) &d_raw, err);
	if (s != GS_OK)
		return s;
	registered = (void **) palloc(sizeof(void *) * Max(st->nchunks, 1));

	/* wait for the scan-time copies, then join and copy the rest */
	s = gs_cuda_sync(gpu_engine, err);
	for (int i = 0; s == GS_OK && i < st->nchunks; i++)
	{
		GsChunk    *c = &st->chunks[i];
		Size		bytes = (Size) c->n * kb;

		if (c->n == 0)
			continue;
		if (gs_interrupt_hook(gi))
		{
			s = GS_ERR_CANCELED;
			snprintf(err->message, sizeof(err->message), "staging canceled by interrupt");
			break;
		}
		if (i < g->maxdev && g->dev[i].d && g->dev[i].n == c->n)
			s = gs_cuda_copy_device(gpu_engine, d_raw + off * kb, g->dev[i].d, bytes, err);
		else
		{
			/* large pageable chunks (combined or deserialized states) are
			 * page-locked for the copy: several times faster than pageable */
			if (!c->pinned && bytes >= ((Size) 1 << 20) &&
				!(c->arena && gpu_path_arena_chunk_locked(c, bytes)) &&
				gs_cuda_host_register(gpu_engine, c->data, bytes, err) == GS_OK)
				registered[nregistered++] = c->data;
			s = gs_cuda_copy_to_device_async(gpu_engine, d_raw + off * kb, c->data, bytes, err);
			g->bytes_copied += (int64) bytes;
		}
		off += c->n;
	}
	if (s == GS_OK)
		s = gs_cuda_sync(gpu_engine, err);
	else
	{
		gs_error	ignore;

		(void) gs_cuda_sync(gpu_engine, &ignore);
	}
	for (int i = 0; i < nregistered; i++)
		gs_cuda_host_unregister(gpu_engine, registered[i]);
	pfree(registered);

	/* the per-chunk device copies are joined: free them */
	for (int i = 0; i < g->maxdev; i++)
		if (g->dev[i].d)
		{
			gs_cuda_free(gpu_engine, g->dev[i].d);
			g->dev[i].d = NULL;
		}

	if (s == GS_OK && kb == 2)
	{
		void	   *d_wide = NULL;

		s = gs_cuda_alloc(gpu_engine, (size_t) n * 4, &d_wide, err);
		if (s == GS_OK)
			s = gs_cuda_widen16(gpu_engine, d_raw, d_wide, (size_t) n, err);
		if (s == GS_OK)
			s = gs_cuda_sync(gpu_engine, err);
		gs_cuda_free(gpu_engine, d_raw);
		d_raw = (char *) d_wide;
		kb = 4;
	}
	if (s != GS_OK)
	{
		if (d_raw)
			gs_cuda_free(gpu_engine, d_raw);
		return s;
	}
	Assert(off == n);
	g->d_all = d_raw;
	g->d_all_n = n;
	g->d_all_key_bytes = kb;
	return GS_OK;
}

GpuPathOutcome
gpu_path_select(GsState *st, const gs_input *in,
			  const uint64 *ranks, int nranks,
			  uint64 *out_keys, gs_approx_pick *picks,
			  GsRunInfo *info)
{
	GpuPathState *g;
	gs_error	err;
	gs_status	s;
	gs_options	opt;
	instr_time	start;
	GsInterrupts gi;

	if (!gpu_path_ready())
		return gpu_path_fallback(info, GS_ERR_NO_DEVICE, gpu_reason);

	memset(&err, 0, sizeof(err));
	gs_cuda_set_memory_cap(gpu_engine, (size_t) gs_guc_test_device_memory_cap_mb << 20);
	if (gs_guc_test_fail_launches > 0)
	{
		gs_cuda_inject_launch_failures(gpu_engine, gs_guc_test_fail_launches);
		gs_guc_test_fail_launches = 0;
	}

	g = gpu_path_state_get(st);
	gs_interrupts_init(&gi);
	INSTR_TIME_SET_CURRENT(start);
	s = gpu_path_stage(g, &gi, &err);
	info->copy_ms = elapsed_ms(start);
	info->bytes_copied = g->bytes_copied;
	/* an interrupt's ERROR ends the statement: no fallback to the CPU */
	gs_interrupts_rethrow(&gi);
	if (s == GS_ERR_CANCELED)
	{
		err.status = s;
		gs_engine_failed(&err);
	}
	if (s != GS_OK)
		return gpu_path_fallback(info, s, err.message[0] ? err.message : "staging the input failed");

	/*
	 * One engine call: the hook absorbs harmless interrupts while the engine
	 * goes on, so nothing is restarted and polling is never turned off.
	 */
	memset(&opt, 0, sizeof(opt));
	opt.interrupt = gs_interrupt_hook;
	opt.interrupt_arg = &gi;
	opt.seed = (uint64) gs_guc_seed;
	opt.approx_buckets = (unsigned) gs_guc_approx_buckets;
	memset(&err, 0, sizeof(err));
	INSTR_TIME_SET_CURRENT(start);
	if (picks)
		s = gs_cuda_select_approx(gpu_engine, g->d_all, (size_t) g->d_all_n, g->d_all_key_bytes,
								 ranks, (size_t) nranks, &opt, picks, &err);
	else
		s = gs_cuda_select(gpu_engine, g->d_all, (size_t) g->d_all_n, g->d_all_key_bytes,
						  ranks, (size_t) nranks, out_keys, &opt, &err);
	info->select_ms = elapsed_ms(start);
	/* the joined device buffer stays with the state (its reset callback frees it) */
	gs_interrupts_rethrow(&gi);
	if (s == GS_ERR_CANCELED)
	{
		err.status = s;
		gs_engine_failed(&err);
	}
	if (s != GS_OK)
	{
		gs_error	sync_err;

		gpu_path_drop_all(g);
		/* a failure the context cannot recover from: stop using the GPU */
		if (s == GS_ERR_DEVICE && gs_cuda_sync(gpu_engine, &sync_err) != GS_OK)
		{
			gpu_avail = GS_GPU_UNAVAILABLE;
			snprintf(gpu_reason, sizeof(gpu_reason), "the CUDA context failed: %s", sync_err.message);
		}
		return gpu_path_fallback(info, s, err.message[0] ? err.message : "the GPU selection failed");
	}

	/* the engine returns keys widened to 64 bits: 2-byte keys went as 4 */
	if (st->key_bytes == 2)
	{
		for (int i = 0; i < nranks; i++)
		{
			if (picks)
				picks[i].key &= 0xFFFF;
			else
				out_keys[i] &= 0xFFFF;
		}
	}
	info->path = "gpu";
	return GPU_PATH_DONE;
}

void
gpu_path_status(void (*emit) (const char *name, const char *value, void *arg), void *arg)
{
	emit("cuda_build", "on", arg);
	emit("gpu_available",
		 gpu_avail == GS_GPU_READY ? "true" :
		 gpu_avail == GS_GPU_UNAVAILABLE ? "false" : "unknown", arg);
	emit("gpu_reason", gpu_reason, arg);
	emit("gpu_device", gpu_device_name[0] ? gpu_device_name : NULL, arg);
	emit("gpu_init_ms", gpu_avail == GS_GPU_READY ? psprintf("%.1f", gpu_init_ms) : NULL, arg);
	if (gpu_avail == GS_GPU_READY && gpu_engine)
	{
		size_t		dev_b = 0,
					host_b = 0;

		gs_cuda_memory_in_use(gpu_engine, &dev_b, &host_b);
		emit("gpu_device_bytes_in_use", psprintf("%zu", dev_b), arg);
		emit("gpu_pinned_bytes_in_use", psprintf(INT64_FORMAT, gpu_pinned_bytes + (int64) host_b), arg);
		emit("gpu_pinned_pool_bytes", psprintf(INT64_FORMAT, gpu_pool_bytes), arg);
		emit("gpu_arena_locked_bytes", psprintf("%zu", (size_t) arena_locked_bytes), arg);
	}
}
