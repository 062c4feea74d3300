/*
 * status.c — gpuselect_status(): one row per setting, counter and the last
 * selection run, read from every layer (the settings, the GPU service, the
 * states and their storage, the dispatcher, the finalize batch), so it
 * sits at the top of src/ beside _PG_init, above all of them.
 *
 * Each row has a kind, so that an operator reads what is meant for them
 * (WHERE kind <> 'internal'):
 *   setting   a setting in force in this session
 *   state     what is the case now: the build, the GPU and its service,
 *             memory in use
 *   counter   counts an operator acts on: runs, spills, the service's
 *             fallbacks and failures
 *   last_run  this backend's last selection (the last_* rows)
 *   internal  counters of the implementation, read by the tests and by
 *             whoever works on gpuselect
 * The kind is looked up here by name (gs_row_kind), the layers that emit
 * rows (the service's among them) need not know it; a row not listed is a
 * state.  Booleans are spelled on / off, as SHOW spells settings.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "aggs/final_batch.h"
#include "aggs/moving_aggs.h"
#include "base/engine_call.h"
#include "base/guc.h"
#include "select/dispatch.h"
#include "service/service.h"
#include "state/arena.h"
#include "state/shared_fileset.h"
#include "state/shared_state.h"
#include "state/shm_budget.h"
#include "state/spill.h"
#include "state/state.h"

typedef struct GsEmitArg
{
	Tuplestorestate *ts;
	TupleDesc	td;
} GsEmitArg;

/* the rows that are not states, by kind (the header says what each means) */
typedef struct GsRowKind
{
	const char *name;
	const char *kind;
} GsRowKind;

static const GsRowKind gs_row_kinds[] = {
	{"accelerate_builtins", "setting"},
	{"device", "setting"},
	{"gpu_min_rows", "setting"},
	{"approximate", "setting"},
	{"approx_buckets", "setting"},
	{"seed", "setting"},
	{"debug", "setting"},
	{"work_mem_bytes", "setting"},
	{"max_shared_memory_bytes", "setting"},
	{"service", "setting"},
	{"service_prefetch_limit_bytes", "setting"},

	{"gpu_runs", "counter"},
	{"cpu_runs", "counter"},
	{"states_spilled", "counter"},
	{"selections_canceled", "counter"},
	{"shared_memory_refused", "counter"},
	{"service_starts", "counter"},
	{"service_served", "counter"},
	{"service_failed", "counter"},
	{"service_requeued", "counter"},
	{"service_fallen_back", "counter"},
	{"service_canceled", "counter"},
	{"service_timed_out", "counter"},
	{"service_pool_exhausted", "counter"},
	{"service_pool_waits", "counter"},
	{"service_pool_filled_waiting", "counter"},
	{"service_restart_waits", "counter"},

	{"states_created", "internal"},
	{"states_taken_over", "internal"},
	{"states_shared", "internal"},
	{"states_in_arena", "internal"},
	{"fraction_full_compares", "internal"},
	{"final_batches", "internal"},
	{"final_batch_groups", "internal"},
	{"final_batch_threads", "internal"},
	{"interrupts_absorbed", "internal"},
	{"parallel_arena_bytes", "internal"},
	{"parallel_arena_used_bytes", "internal"},
	{"parallel_arena_last_bytes", "internal"},
	{"parallel_arena_last_used_bytes", "internal"},
	{"shared_memory_budget", "internal"},
	{"key_pool_scan_bytes", "internal"},
	{"key_pool_scan_short", "internal"},
	{"key_pool_leases_swept", "internal"},
	{"service_keys_in_place", "internal"},
	{"service_keys_copied", "internal"},
	{"states_shared_files", "internal"},
	{"partial_state_max_bytes", "internal"},
	{"moving_peak_values", "internal"},
	{"moving_peak_bytes", "internal"},
	{"service_worker_keys_in_place", "internal"},
	{"service_prefetch_bytes", "internal"},
	{"service_prefetch_used_bytes", "internal"},
	{"service_prefetch_resident_bytes", "internal"},
};

static const char *
gs_row_kind(const char *name)
{
	if (strncmp(name, "last_", 5) == 0)
		return "last_run";
	for (int i = 0; i < lengthof(gs_row_kinds); i++)
		if (strcmp(name, gs_row_kinds[i].name) == 0)
			return gs_row_kinds[i].kind;
	return "state";
}

static void
gs_emit(const char *name, const char *value, void *arg)
{
	GsEmitArg  *ea = (GsEmitArg *) arg;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = CStringGetTextDatum(name);
	if (value)
		values[1] = CStringGetTextDatum(value);
	else
	{
		values[1] = (Datum) 0;
		nulls[1] = true;
	}
	/* 0.1's function has no kind column: a library of 0.2 before ALTER
	 * EXTENSION UPDATE fills the two it has (heap_form_tuple reads natts) */
	values[2] = CStringGetTextDatum(gs_row_kind(name));
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

	/* what an operator asks first: which build, loaded how, rewriting or not */
	gs_emit("version", GS_EXTVERSION, &ea);
	gs_emit("library_loaded_by", gs_loaded_by, &ea);
	gs_emit("accelerate_builtins", gs_guc_accelerate_builtins ? "on" : "off", &ea);
	gs_emit("device", gs_device_name(gs_guc_device), &ea);
	gs_emit("gpu_min_rows", psprintf("%d", gs_guc_gpu_min_rows), &ea);
	gs_emit("approximate", gs_guc_approximate ? "on" : "off", &ea);
	gs_emit("approx_buckets", psprintf("%d", gs_guc_approx_buckets), &ea);
	gs_emit("seed", psprintf("%d", gs_guc_seed), &ea);
	gs_emit("debug", gs_guc_debug ? "on" : "off", &ea);

	gs_service_status(gs_emit, &ea);

	gs_emit("gpu_runs", psprintf(INT64_FORMAT, gs_gpu_runs), &ea);
	gs_emit("cpu_runs", psprintf(INT64_FORMAT, gs_cpu_runs), &ea);
	gs_emit("states_created", psprintf(INT64_FORMAT, gs_states_created), &ea);
	gs_emit("states_spilled", psprintf(INT64_FORMAT, gs_states_spilled), &ea);
	gs_emit("work_mem_bytes", psprintf(UINT64_FORMAT, (uint64) gs_spill_limit_bytes()), &ea);
	gs_emit("states_taken_over", psprintf(INT64_FORMAT, gs_states_taken_over), &ea);
	gs_emit("states_shared", psprintf(INT64_FORMAT, gs_states_shared), &ea);
	gs_emit("states_shared_files", psprintf(INT64_FORMAT, gs_states_shared_files), &ea);
	gs_emit("partial_state_max_bytes", psprintf(INT64_FORMAT, gs_partial_state_max_bytes), &ea);
	gs_emit("states_in_arena", psprintf(INT64_FORMAT, gs_states_in_arena), &ea);
	gs_emit("fraction_full_compares", psprintf(INT64_FORMAT, gs_fraction_full_compares), &ea);
	gs_emit("final_batches", psprintf(INT64_FORMAT, gs_final_batches), &ea);
	gs_emit("final_batch_groups", psprintf(INT64_FORMAT, gs_final_batch_groups), &ea);
	gs_emit("final_batch_threads", psprintf(INT64_FORMAT, gs_final_batch_last_threads), &ea);
	gs_emit("moving_peak_values", psprintf(INT64_FORMAT, gs_moving_peak_values), &ea);
	gs_emit("moving_peak_bytes", psprintf(INT64_FORMAT, gs_moving_peak_bytes), &ea);
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
