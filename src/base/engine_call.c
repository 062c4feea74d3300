/*
 * engine_call.c — running the CPU engine (kernels/) in a backend: the
 * interrupt hook every engine call gets, engine errors turned into
 * ereport, and the calls themselves (one input, or a batch of many on
 * helper threads).  Which engine a group goes to is dispatch.c's
 * business; this file is what every caller of an engine shares, the
 * dispatcher and the spilled groups' selection (state/spill.c) alike.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "gs_engine.h"
#include "base/engine_call.h"
#include "base/guc.h"

/* interrupts the hook processed without stopping a selection, and
 * selections an interrupt's ERROR stopped inside an engine (gpuselect_status) */
int64		gs_interrupts_absorbed = 0;
int64		gs_selections_canceled = 0;

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
void
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

void
gs_dispatch_cpu_exact(const gs_input *in, const uint64 *ranks, int nranks, uint64 *out_keys)
{
	if (nranks > 0)
		gs_run_cpu(in, ranks, nranks, out_keys, NULL);
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
