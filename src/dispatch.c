/*
 * dispatch.c — the one place that decides CPU or GPU, runs the engine,
 * raises engine errors, and records the last run for gpuselect_status().
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "gs_engine.h"
#include "arena.h"
#include "dispatch.h"
#include "final_batch.h"
#include "guc.h"
#include "service.h"
#include "shared_state.h"
#include "shm_budget.h"
#include "spill.h"
#include "types.h"

/* per-backend record of the selection runs */
static int64 n_gpu_runs = 0;
static int64 gs_cpu_runs = 0;
static bool gs_have_last = false;
static GsRunInfo gs_last;
static char gs_last_path[256];
static bool gs_last_approx = false;
static int	gs_last_nranks = 0;

/* interrupts the hook processed without stopping a selection, and
 * selections an interrupt's ERROR stopped inside an engine (gpuselect_status) */
static int64 gs_interrupts_absorbed = 0;
static int64 gs_selections_canceled = 0;

void
gs_interrupts_init(GsInterrupts *gi)
{
	gi->mcxt = CurrentMemoryContext;
	gi->error = NULL;
	gi->polls = 0;
	gi->term_polls = 0;
}

/*
 * The engines' interrupt hook (gs_options.interrupt, arg: a GsInterrupts).
 * It processes pending interrupts itself, so that one that turns out
 * harmless (a procsignal barrier, client_connection_check_interval's
 * connection check, a memory-context log request, another session's DROP
 * DATABASE) is absorbed on the spot and the engine goes on: no restart of
 * the selection, and polling stays on however many such interrupts arrive,
 * so a cancel is seen at the engine's next poll.
 *
 * No longjmp crosses an engine frame: the hook is a plain C function of
 * src/, and an ERROR that ProcessInterrupts raises (cancel, statement
 * timeout, a parallel worker's error) lands in the hook's own PG_TRY.  The
 * error is copied into the memory context of the engine's caller and
 * flushed; the hook returns nonzero, the engine frees what it allocated and
 * returns GS_ERR_CANCELED, and the caller re-throws the error unchanged
 * (gs_interrupts_rethrow), with the message, SQLSTATE and error context it
 * had.  Nothing but the engine's own cleanup runs between the catch and the
 * re-throw, so the transaction is aborted exactly as if the ERROR had been
 * raised at a CHECK_FOR_INTERRUPTS() of the executor.
 *
 * FATAL (terminate, lost client connection, idle timeouts) and PANIC do
 * not return from errfinish: proc_exit() runs right here, with the engine's
 * frames suspended below and never resumed, exactly as a FATAL at any
 * CHECK_FOR_INTERRUPTS() deep in the executor.  The exit callbacks abort
 * the transaction, which frees the state's chunks and, through its reset
 * callback, the GPU path's device buffers; the CUDA engine is only ever
 * between two of its API calls when it calls the hook, so it is in a state
 * those callbacks may use.  What the engine allocated for itself (malloc,
 * cudaMalloc scratch) is not freed, but the process is exiting and the OS
 * and the driver reclaim it.
 *
 * Interrupts are processed only when ProcessInterrupts is sure to clear
 * them (INTERRUPTS_CAN_BE_PROCESSED: no holdoff, no critical section, no
 * cancel holdoff); otherwise, as everywhere in PostgreSQL, they wait for
 * the end of the holdoff and the hook returns 0.  So InterruptHoldoffCount,
 * QueryCancelHoldoffCount and CritSectionCount are 0 on entry, which is
 * also what errfinish resets them to before its longjmp: nothing to
 * restore after the catch.
 */
/*
 * Test hook: polls before the Nth find a memory-context log request
 * pending (what pg_log_backend_memory_contexts() makes the signal handler
 * set), the Nth a cancel request (what StatementCancelHandler sets), so a
 * test sees exactly N - 1 harmless interrupts and then a cancel, whatever
 * the machine's speed.
 */
static void
gs_interrupt_test_poll(GsInterrupts *gi)
{
	if (unlikely(gs_guc_test_cancel_at_poll > 0) && ++gi->polls <= gs_guc_test_cancel_at_poll)
	{
		if (gi->polls < gs_guc_test_cancel_at_poll)
			LogMemoryContextPending = true;
		else
			QueryCancelPending = true;
		InterruptPending = true;
	}
	/* gpuselect.test_terminate_at_poll: what die() sets, at the Nth poll */
	if (unlikely(gs_guc_test_terminate_at_poll > 0) && ++gi->term_polls == gs_guc_test_terminate_at_poll)
	{
		ProcDiePending = true;
		InterruptPending = true;
	}
}

int
gs_interrupt_hook(void *arg)
{
	GsInterrupts *gi = (GsInterrupts *) arg;

	if (gi->error != NULL)
		return 1;				/* stopped already; the engine is on its way out */
	gs_interrupt_test_poll(gi);
	if (likely(!InterruptPending) || !INTERRUPTS_CAN_BE_PROCESSED())
		return 0;

	PG_TRY();
	{
		CHECK_FOR_INTERRUPTS();
	}
	PG_CATCH();
	{
		/* the error data lives in ErrorContext until flushed: copy it out */
		MemoryContextSwitchTo(gi->mcxt);
		gi->error = CopyErrorData();
		FlushErrorState();
	}
	PG_END_TRY();

	if (gi->error != NULL)
	{
		gs_selections_canceled++;
		return 1;
	}
	gs_interrupts_absorbed++;
	return 0;
}

void
gs_interrupts_rethrow(GsInterrupts *gi)
{
	if (gi->error != NULL)
		ReThrowError(gi->error);
}

static const char *
gs_status_name(gs_status s)
{
	switch (s)
	{
		case GS_OK:
			return "ok";
		case GS_ERR_INVALID:
			return "invalid arguments";
		case GS_ERR_NOMEM:
			return "out of memory";
		case GS_ERR_NO_DEVICE:
			return "no usable GPU";
		case GS_ERR_DEVICE_NOMEM:
			return "out of GPU memory";
		case GS_ERR_DEVICE:
			return "GPU failure";
		case GS_ERR_TOO_LARGE:
			return "input too large for the device";
		case GS_ERR_CANCELED:
			return "canceled";
	}
	return "unknown error";
}

void
gs_engine_error(const gs_error *err)
{
	int			code;
	const char *msg = err->message[0] ? err->message : gs_status_name(err->status);

	switch (err->status)
	{
		case GS_ERR_NOMEM:
		case GS_ERR_DEVICE_NOMEM:
			code = ERRCODE_OUT_OF_MEMORY;
			break;
		case GS_ERR_TOO_LARGE:
			code = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
			break;
		case GS_ERR_CANCELED:
			code = ERRCODE_QUERY_CANCELED;
			break;
		case GS_ERR_INVALID:
			code = ERRCODE_INTERNAL_ERROR;
			break;
		default:
			code = ERRCODE_EXTERNAL_ROUTINE_EXCEPTION;
			break;
	}
	ereport(ERROR,
			(errcode(code),
			 errmsg("gpuselect: %s", msg)));
	pg_unreachable();
}

/*
 * A failed engine status, after gs_interrupts_rethrow: GS_ERR_CANCELED
 * without a caught error (the hook only stops an engine with one, so this
 * is not expected) still ends the statement -- after a last
 * CHECK_FOR_INTERRUPTS(), whose own ERROR wins -- and is never retried, so
 * nothing can loop.
 */
void
gs_engine_failed(const gs_error *err)
{
	if (err->status == GS_ERR_CANCELED)
		CHECK_FOR_INTERRUPTS();
	gs_engine_error(err);
}

void
gs_dispatch_gpu_required(int sqlerrcode, const char *reason)
{
	ereport(ERROR,
			(errcode(sqlerrcode),
			 errmsg("gpuselect.device is \"gpu\" but %s", reason),
			 errhint("SET gpuselect.device = 'auto' (GPU when usable, CPU otherwise) or 'cpu'.")));
	pg_unreachable();
}

static double
gs_elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* the CPU engine's options: the interrupt hook on gi, the settings' seed and buckets */
static void
gs_cpu_options(gs_options *opt, GsInterrupts *gi, gs_error *err)
{
	memset(opt, 0, sizeof(*opt));
	gs_interrupts_init(gi);
	opt->interrupt = gs_interrupt_hook;
	opt->interrupt_arg = gi;
	opt->seed = (uint64) gs_guc_seed;
	opt->approx_buckets = (unsigned) gs_guc_approx_buckets;
	memset(err, 0, sizeof(*err));
}

/* an engine call's end: an interrupt's ERROR first, whatever the engine returned */
static void
gs_cpu_finish(GsInterrupts *gi, gs_status s, gs_error *err)
{
	gs_interrupts_rethrow(gi);
	if (s == GS_OK)
		return;
	err->status = s;
	gs_engine_failed(err);
}

/* run the CPU engine; interrupts are processed by the hook (see above) */
static void
gs_run_cpu(const gs_input *in, const uint64 *ranks, int nranks,
		   uint64 *out_keys, gs_approx_pick *picks)
{
	gs_options	opt;
	gs_error	err;
	gs_status	s;
	GsInterrupts gi;

	gs_cpu_options(&opt, &gi, &err);
	if (picks)
		s = gs_cpu_select_approx(in, ranks, (size_t) nranks, &opt, picks, &err);
	else
	{
		gs_cpu_test_force_path(gs_guc_test_cpu_path);
		s = gs_cpu_select(in, ranks, (size_t) nranks, out_keys, &opt, &err);
	}
	gs_cpu_finish(&gi, s, &err);
}

/* planner_aggs.c: a rewritten built-in is exact whatever gpuselect.approximate says */
bool		gs_dispatch_exact_only = false;

void
gs_dispatch_cpu_exact(const gs_input *in, const uint64 *ranks, int nranks, uint64 *out_keys)
{
	if (nranks > 0)
		gs_run_cpu(in, ranks, nranks, out_keys, NULL);
}

/* do the settings send st to the GPU ('gpu', or 'auto' and a large group)? */
static bool
gs_dispatch_gpu_asked(const GsState *st)
{
	return gs_guc_device == GS_DEVICE_GPU ||
		(gs_guc_device == GS_DEVICE_AUTO && st->nrows >= (int64) gs_guc_gpu_min_rows);
}

/*
 * Would gs_dispatch_select run st exactly on the CPU engine, from memory?
 * Those are the states a batch (final_batch.c) may select ahead of their
 * final calls: not a value type, not spilled, not approximate, not one the
 * GPU path takes, and not under the forced engine path of the test hook
 * (a per-thread setting the batch's helper threads would not see).
 */
bool
gs_dispatch_batchable(const GsState *st)
{
	if (st->kind == GS_T_DATUM || st->spill != NULL || st->nrows <= 0)
		return false;
	if (gs_guc_approximate && !gs_dispatch_exact_only)
		return false;
	if (gs_guc_test_cpu_path != GS_CPU_PATH_AUTO)
		return false;
	/* gs_dispatch_try_gpu would try the service, or raise the 'gpu' ERROR */
	return !(gs_dispatch_gpu_asked(st) && (gs_guc_device == GS_DEVICE_GPU || gs_service_in_use()));
}

/*
 * The hook of a batch on helper threads.  It never processes an interrupt
 * itself: an ERROR or FATAL must not run while a helper lives (a FATAL's
 * exit callbacks unmap memory, the arena's, that a helper may be reading).
 * It only tells the engine what to do: a cancel or a termination stops the
 * groups under way; any other interrupt, which may turn out harmless (a
 * procsignal barrier, a connection check, a memory-context log request),
 * lets them finish and starts no more (GS_INTERRUPT_DRAIN).  The interrupt
 * is processed once the engine has joined every helper.
 */
static int
gs_batch_interrupt_hook(void *arg)
{
	gs_interrupt_test_poll((GsInterrupts *) arg);
	if (likely(!InterruptPending) || !INTERRUPTS_CAN_BE_PROCESSED())
		return 0;
	return (QueryCancelPending || ProcDiePending) ? 1 : GS_INTERRUPT_DRAIN;
}

/* an interrupt a batch stopped for, with no helper alive */
static void
gs_batch_process_interrupt(void)
{
	PG_TRY();
	{
		CHECK_FOR_INTERRUPTS();
	}
	PG_CATCH();
	{
		gs_selections_canceled++;
		PG_RE_THROW();
	}
	PG_END_TRY();
	gs_interrupts_absorbed++;
}

/*
 * Many groups at once on the CPU engine and nthreads helper threads.  An
 * interrupt stops the engine (gs_batch_interrupt_hook) and is processed
 * here: an ERROR or FATAL leaves from here as from any
 * CHECK_FOR_INTERRUPTS(); after a harmless one the groups not done yet go
 * again.
 */
void
gs_dispatch_cpu_many(gs_select_item *items, int nitems, int nthreads)
{
	gs_options	opt;
	gs_error	err;
	gs_status	s;
	GsInterrupts gi;
	gs_select_item *left = (gs_select_item *) palloc(sizeof(gs_select_item) * nitems);
	int		   *back = (int *) palloc(sizeof(int) * nitems);
	int			nleft = nitems;

	gs_cpu_options(&opt, &gi, &err);
	opt.interrupt = gs_batch_interrupt_hook;
	for (int i = 0; i < nitems; i++)
	{
		left[i] = items[i];
		back[i] = i;
	}
	for (;;)
	{
		int			k = 0;

		s = gs_cpu_select_many(left, (size_t) nleft, (unsigned) nthreads, &opt, &err);
		for (int i = 0; i < nleft; i++)
			items[back[i]].status = left[i].status;
		if (s != GS_ERR_CANCELED || !InterruptPending)
			break;
		gs_batch_process_interrupt();
		for (int i = 0; i < nleft; i++)
			if (left[i].status != GS_OK)
			{
				left[k] = left[i];
				back[k++] = back[i];
			}
		nleft = k;
		if (nleft == 0)
		{
			s = GS_OK;
			break;
		}
	}
	pfree(left);
	pfree(back);
	if (s != GS_OK)
	{
		err.status = s;
		gs_engine_failed(&err);
	}
}

/* the keys a batch selected for exactly these ranks, if any (final_batch.c) */
static bool
gs_dispatch_take_memo(const GsState *st, const uint64 *ranks, int nranks, uint64 *out_keys)
{
	if (st->memo_nranks != nranks ||
		memcmp(st->memo_ranks, ranks, sizeof(uint64) * nranks) != 0)
		return false;
	memcpy(out_keys, st->memo_keys, sizeof(uint64) * nranks);
	return true;
}

/*
 * A spilled group (spill.c): exact selection in passes over its temporary
 * file, on the CPU whatever gpuselect.device says in auto mode (the GPU
 * path holds a group's keys in device memory whole), an ERROR in gpu mode.
 * Approximate mode gets the exact answer (rank bound 0): the passes cost
 * the same either way.
 */
static void
gs_dispatch_spilled(GsState *st, const uint64 *ranks, int nranks,
					uint64 *out_keys, GsRunInfo *info)
{
	instr_time	start;
	int			passes = 0;
	static char path[64];

	if (gs_guc_device == GS_DEVICE_GPU)
		gs_dispatch_gpu_required(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
								 "the group's keys spilled to disk (gpuselect.work_mem)");
	INSTR_TIME_SET_CURRENT(start);
	gs_spill_select(st, ranks, nranks, out_keys, &passes);
	info->select_ms = gs_elapsed_ms(start);
	snprintf(path, sizeof(path), "cpu (spilled, %d passes)", passes);
	info->path = path;
	gs_cpu_runs++;
}

/*
 * The GPU, when the settings send this group there.  Only the server's GPU
 * service uses the GPU: a backend never creates a CUDA context.  Without the
 * service (not preloaded, or gpuselect.service = off) auto stays on the CPU
 * and gpuselect_status() says why; gpu is an ERROR, as is any failure the
 * service reports in gpu mode.
 */
static GsGpuOutcome
gs_dispatch_try_gpu(GsState *st, const gs_input *in, const uint64 *ranks, int nranks,
					uint64 *out_keys, gs_approx_pick *picks, GsRunInfo *info)
{
	GsGpuOutcome outcome = GS_GPU_NOT_USED;

	if (!gs_dispatch_gpu_asked(st))
		return GS_GPU_NOT_USED;

	if (gs_service_in_use())
		outcome = gs_service_select(st, in, ranks, nranks, out_keys, picks, info);
	else if (gs_guc_device == GS_DEVICE_GPU)
	{
		if (!gs_service_cuda_built())
			gs_dispatch_gpu_required(ERRCODE_FEATURE_NOT_SUPPORTED,
									 "this build has no CUDA support");
		gs_dispatch_gpu_required(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
								 gs_service_off_reason());
	}
	if (outcome != GS_GPU_DONE && gs_guc_device == GS_DEVICE_GPU)
		gs_dispatch_gpu_required(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
								 "the GPU service did not run the selection");
	return outcome;
}

/* approximate picks -> out_keys; returns the largest rank error */
static int64
gs_dispatch_take_picks(const gs_approx_pick *picks, const uint64 *ranks, int nranks,
					   uint64 *out_keys)
{
	int64		bound = 0;

	for (int i = 0; i < nranks; i++)
	{
		uint64		r = ranks[i];
		uint64		err = 0;

		out_keys[i] = picks[i].key;
		if (r < picks[i].rank_lo)
			err = picks[i].rank_lo - r;
		else if (r > picks[i].rank_hi)
			err = r - picks[i].rank_hi;
		if ((int64) err > bound)
			bound = (int64) err;
	}
	return bound;
}

void
gs_dispatch_select(GsState *st, const uint64 *ranks, int nranks, uint64 *out_keys)
{
	gs_input	in;
	GsRunInfo	info;
	gs_approx_pick *picks = NULL;
	bool		approx = gs_guc_approximate && !gs_dispatch_exact_only;
	int64		n = st->nrows;

	if (nranks <= 0)
		return;
	Assert(n > 0);

	memset(&info, 0, sizeof(info));
	info.n = n;
	memset(&in, 0, sizeof(in));
	if (st->spill != NULL)
	{
		gs_dispatch_spilled(st, ranks, nranks, out_keys, &info);
		approx = false;			/* exact: rank bound 0 */
	}
	else if (!approx && gs_dispatch_take_memo(st, ranks, nranks, out_keys))
	{
		info.path = "cpu (batch)";
		gs_cpu_runs++;
	}
	else
	{
		gs_state_input(st, &in);
		if (approx)
			picks = (gs_approx_pick *) palloc(sizeof(gs_approx_pick) * nranks);

		if (gs_dispatch_try_gpu(st, &in, ranks, nranks, out_keys, picks, &info) == GS_GPU_DONE)
		{
			n_gpu_runs++;
			if (info.path == NULL)
				info.path = "service";
		}
		else
		{
			instr_time	start;

			/* keep a fallback reason the service may have left in info.path */
			if (info.path == NULL)
				info.path = "cpu";
			info.bytes_copied = 0;
			info.copy_ms = 0;
			INSTR_TIME_SET_CURRENT(start);
			gs_run_cpu(&in, ranks, nranks, out_keys, picks);
			info.select_ms = gs_elapsed_ms(start);
			gs_cpu_runs++;
		}
	}

	info.rank_bound = 0;
	if (approx)
	{
		info.rank_bound = gs_dispatch_take_picks(picks, ranks, nranks, out_keys);
		pfree(picks);
	}

	gs_have_last = true;
	gs_last = info;
	strlcpy(gs_last_path, info.path, sizeof(gs_last_path));
	gs_last.path = gs_last_path;
	gs_last_approx = approx;
	gs_last_nranks = nranks;
	if (in.segs != NULL)
		pfree((void *) in.segs);

	/* one line per final call: a NOTICE with gpuselect.debug, else DEBUG1 */
	if (gs_guc_debug || message_level_is_interesting(DEBUG1))
		ereport(gs_guc_debug ? NOTICE : DEBUG1,
				(errmsg("gpuselect: path=%s n=" INT64_FORMAT " ranks=%d bytes_copied=" INT64_FORMAT " copy_ms=%.3f select_ms=%.3f%s",
						gs_last_path, n, nranks, info.bytes_copied, info.copy_ms, info.select_ms,
						approx ? psprintf(" approximate rank_bound=" INT64_FORMAT, info.rank_bound) : "")));
}

/* ---------------- gpuselect_status() ---------------- */

typedef struct GsEmitArg
{
	Tuplestorestate *ts;
	TupleDesc	td;
} GsEmitArg;

static void
gs_emit(const char *name, const char *value, void *arg)
{
	GsEmitArg  *ea = (GsEmitArg *) arg;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = CStringGetTextDatum(name);
	if (value)
		values[1] = CStringGetTextDatum(value);
	else
	{
		values[1] = (Datum) 0;
		nulls[1] = true;
	}
	tuplestore_putvalues(ea->ts, ea->td, values, nulls);
}

PG_FUNCTION_INFO_V1(gpuselect_status);

Datum
gpuselect_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GsEmitArg	ea;

	InitMaterializedSRF(fcinfo, 0);
	ea.ts = rsinfo->setResult;
	ea.td = rsinfo->setDesc;

	gs_emit("device", gs_device_name(gs_guc_device), &ea);
	gs_emit("gpu_min_rows", psprintf("%d", gs_guc_gpu_min_rows), &ea);
	gs_emit("approximate", gs_guc_approximate ? "on" : "off", &ea);
	gs_emit("approx_buckets", psprintf("%d", gs_guc_approx_buckets), &ea);
	gs_emit("seed", psprintf("%d", gs_guc_seed), &ea);
	gs_emit("debug", gs_guc_debug ? "on" : "off", &ea);

	gs_service_status(gs_emit, &ea);

	gs_emit("gpu_runs", psprintf(INT64_FORMAT, n_gpu_runs), &ea);
	gs_emit("cpu_runs", psprintf(INT64_FORMAT, gs_cpu_runs), &ea);
	gs_emit("states_created", psprintf(INT64_FORMAT, gs_states_created), &ea);
	gs_emit("states_spilled", psprintf(INT64_FORMAT, gs_states_spilled), &ea);
	gs_emit("work_mem_bytes", psprintf(UINT64_FORMAT, (uint64) gs_spill_limit_bytes()), &ea);
	gs_emit("states_taken_over", psprintf(INT64_FORMAT, gs_states_taken_over), &ea);
	gs_emit("states_shared", psprintf(INT64_FORMAT, gs_states_shared), &ea);
	gs_emit("states_in_arena", psprintf(INT64_FORMAT, gs_states_in_arena), &ea);
	gs_emit("fraction_full_compares", psprintf(INT64_FORMAT, gs_fraction_full_compares), &ea);
	gs_emit("final_batches", psprintf(INT64_FORMAT, gs_final_batches), &ea);
	gs_emit("final_batch_groups", psprintf(INT64_FORMAT, gs_final_batch_groups), &ea);
	gs_emit("interrupts_absorbed", psprintf(INT64_FORMAT, gs_interrupts_absorbed), &ea);
	gs_emit("selections_canceled", psprintf(INT64_FORMAT, gs_selections_canceled), &ea);
	{
		uint64		size,
					used,
					prev_size,
					prev_used,
					in_use,
					limit,
					refused;
		const char *where;

		gs_arena_usage(&size, &used, &prev_size, &prev_used);
		gs_emit("parallel_arena_bytes", psprintf(UINT64_FORMAT, size), &ea);
		gs_emit("parallel_arena_used_bytes", psprintf(UINT64_FORMAT, used), &ea);
		gs_emit("parallel_arena_last_bytes", psprintf(UINT64_FORMAT, prev_size), &ea);
		gs_emit("parallel_arena_last_used_bytes", psprintf(UINT64_FORMAT, prev_used), &ea);
		/* server-wide: every session's arenas and shared states (shm_budget.c) */
		gs_shm_budget_usage(&in_use, &limit, &refused, &where);
		gs_emit("shared_memory_bytes", psprintf(UINT64_FORMAT, in_use), &ea);
		gs_emit("max_shared_memory_bytes", psprintf(UINT64_FORMAT, limit), &ea);
		gs_emit("shared_memory_refused", psprintf(UINT64_FORMAT, refused), &ea);
		gs_emit("shared_memory_budget", where, &ea);
	}
	gs_emit("last_path", gs_have_last ? gs_last.path : NULL, &ea);
	gs_emit("last_n", gs_have_last ? psprintf(INT64_FORMAT, gs_last.n) : NULL, &ea);
	gs_emit("last_ranks", gs_have_last ? psprintf("%d", gs_last_nranks) : NULL, &ea);
	gs_emit("last_approximate", gs_have_last ? (gs_last_approx ? "on" : "off") : NULL, &ea);
	gs_emit("last_bytes_copied", gs_have_last ? psprintf(INT64_FORMAT, gs_last.bytes_copied) : NULL, &ea);
	gs_emit("last_copy_ms", gs_have_last ? psprintf("%.3f", gs_last.copy_ms) : NULL, &ea);
	gs_emit("last_select_ms", gs_have_last ? psprintf("%.3f", gs_last.select_ms) : NULL, &ea);
	gs_emit("last_rank_bound", gs_have_last ? psprintf(INT64_FORMAT, gs_last.rank_bound) : NULL, &ea);

	return (Datum) 0;
}
