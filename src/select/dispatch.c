/*
 * dispatch.c — the one place that decides CPU or GPU for a group, runs it
 * there (the CPU engine through base/engine_call.c, the GPU service
 * through service_client.c), and records the last run for
 * gpuselect_status().
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"

#include "gs_engine.h"
#include "select/dispatch.h"
#include "base/guc.h"
#include "service/service.h"
#include "select/service_client.h"
#include "state/spill.h"
#include "base/types.h"

/* per-backend record of the selection runs (dispatch.h) */
int64		gs_gpu_runs = 0;
int64		gs_cpu_runs = 0;
bool		gs_have_last = false;
GsRunInfo	gs_last;
double		gs_select_ms_total = 0;

void
gs_dispatch_add_select_ms(double ms)
{
	if (ms > 0)
		gs_select_ms_total += ms;
}
static char gs_last_path[256];
bool		gs_last_approx = false;
int			gs_last_nranks = 0;

void
gs_dispatch_gpu_required(int sqlerrcode, const char *reason)
{
	ereport(ERROR,
			(errcode(sqlerrcode),
			 errmsg("gpuselect.device is \"gpu\" but %s", reason),
			 errhint("SET gpuselect.device = 'auto' (GPU when usable, CPU otherwise) or 'cpu'.")));
	pg_unreachable();
}

double
gs_elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* planner_aggs.c: a rewritten built-in is exact whatever gpuselect.approximate says */
bool		gs_dispatch_exact_only = false;

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
 * service reports in gpu mode.  The service may move the group's keys out of
 * pool chunks into the state's memory before it waits for the pool: in's
 * segments are rebuilt then, and the CPU fallback reads them.
 */
static GsGpuOutcome
gs_dispatch_try_gpu(GsState *st, gs_input *in, const uint64 *ranks, int nranks,
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
	instr_time	entered;

	if (nranks <= 0)
		return;
	Assert(n > 0);
	INSTR_TIME_SET_CURRENT(entered);

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
			gs_gpu_runs++;
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

	if (in.segs != NULL)
		pfree((void *) in.segs);
	info.wall_ms = gs_elapsed_ms(entered);
	gs_dispatch_note_run(&info, nranks, approx);
}

void
gs_dispatch_note_run(const GsRunInfo *info, int nranks, bool approx)
{
	gs_have_last = true;
	gs_dispatch_add_select_ms(info->wall_ms > 0 ? info->wall_ms : info->copy_ms + info->select_ms);
	gs_last = *info;
	strlcpy(gs_last_path, info->path, sizeof(gs_last_path));
	gs_last.path = gs_last_path;
	gs_last_approx = approx;
	gs_last_nranks = nranks;

	/* one line per final call: a NOTICE with gpuselect.debug, else DEBUG1 */
	if (gs_guc_debug || message_level_is_interesting(DEBUG1))
		ereport(gs_guc_debug ? NOTICE : DEBUG1,
				(errmsg("gpuselect: path=%s n=" INT64_FORMAT " ranks=%d bytes_copied=" INT64_FORMAT " copy_ms=%.3f select_ms=%.3f%s%s",
						gs_last_path, info->n, nranks, info->bytes_copied, info->copy_ms, info->select_ms,
						approx ? psprintf(" approximate rank_bound=" INT64_FORMAT, info->rank_bound) : "",
						strcmp(gs_last_path, "service") == 0
						? psprintf(" unload_ms=%.1f take_ms=%.1f fill_ms=%.1f queue_ms=%.1f answer_ms=%.1f",
								   info->svc_unload_ms, info->svc_take_ms, info->svc_fill_ms,
								   info->svc_queue_ms, info->svc_answer_ms) : "")));
}
