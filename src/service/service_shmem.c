/*
 * service_shmem.c — the GPU service's settings, its shared memory (control
 * struct, job slots, key pool) sized and set up, its registration as a
 * background worker and the service's gpuselect_status() fields.  The
 * pool's chunks are taken and freed in service_pool*.c.
 *
 * Everything here runs in the postmaster (at preload) or reads shared
 * memory; no CUDA (service.h describes the layout and protocol).
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include <limits.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "service/service.h"

GsSvcControl *gs_svc_ctl = NULL;
GsSvcJob   *gs_svc_jobs = NULL;
GsSvcChunk *gs_svc_chunks = NULL;
char	   *gs_svc_pool = NULL;

int			gs_guc_service = GS_SERVICE_ON;
int			gs_guc_key_pool_size = 256;
int			gs_guc_key_pool_chunk_size = 4096;
int			gs_guc_service_prefetch_size = 1024;
bool		gs_guc_test_service_prefetch = true;
bool		gs_guc_test_ship_pages_cpu = false;
int			gs_guc_service_timeout = 30000;
int			gs_guc_test_service_delay = 0;
int			gs_guc_test_service_fault = GS_SVC_FAULT_NONE;

/* set in the postmaster at preload, inherited by every child it forks */
static bool gs_svc_preloaded = false;
static bool gs_svc_registered = false;
static const char *gs_svc_off_reason = "gpuselect is not in shared_preload_libraries";

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

#define GS_SVC_PAGE 4096

static const struct config_enum_entry gs_service_options[] = {
	{"off", GS_SERVICE_OFF, false},
	{"on", GS_SERVICE_ON, false},
	{"cpu_test", GS_SERVICE_CPU_TEST, false},
	{NULL, 0, false}
};

static const struct config_enum_entry gs_service_fault_options[] = {
	{"none", GS_SVC_FAULT_NONE, false},
	{"fail", GS_SVC_FAULT_FAIL, false},
	{"sticky", GS_SVC_FAULT_STICKY, false},
	{"launch", GS_SVC_FAULT_LAUNCH, false},
	{"oom", GS_SVC_FAULT_OOM, false},
	{NULL, 0, false}
};

const char *
gs_svc_state_name(uint32 state)
{
	switch ((GsSvcState) state)
	{
		case GS_SVC_OFF:
			return "off";
		case GS_SVC_STARTING:
			return "starting";
		case GS_SVC_READY:
			return "ready";
		case GS_SVC_DOWN:
			return "down";
		case GS_SVC_UNAVAILABLE:
			return "unavailable";
	}
	return "?";
}

/* settings every session sees, preloaded or not */
void
gs_service_define_gucs(void)
{
	DefineCustomIntVariable("gpuselect.service_timeout",
							"Longest wait for the GPU service's answer to one selection.",
							"Past it the request is abandoned: gpuselect.device = auto selects on the CPU, "
							"gpu raises an ERROR.",
							&gs_guc_service_timeout,
							30000, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.test_service_delay",
							"Test hook: the GPU service waits this long before it runs a job of this session.",
							"Lets tests cancel, time out, terminate or kill while a request waits.",
							&gs_guc_test_service_delay,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("gpuselect.test_service_fault",
							 "Test hook: the GPU service fails this session's jobs (fail) and also exits as on a sticky device error (sticky).",
							 "launch and oom make the CUDA engine itself fail (a failed launch; device memory for the keys but not the selection); under cpu_test they act as fail.",
							 &gs_guc_test_service_fault,
							 GS_SVC_FAULT_NONE,
							 gs_service_fault_options,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuselect.test_service_prefetch",
							 "Test hook: off: this session's scans seal no key-pool chunk, so the GPU service copies none of them ahead.",
							 "For benchmarks that compare prefetch on and off in one session.",
							 &gs_guc_test_service_prefetch,
							 true,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuselect.test_ship_pages_cpu",
							 "Test hook: the GPU service extracts this session's shipped pages on its CPU, not on a device.",
							 "For benchmarks that compare the two ways of extracting shipped pages in one session.",
							 &gs_guc_test_ship_pages_cpu,
							 false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	gs_svc_devices_define_gucs(false);
}

static Size
gs_svc_shmem_size(int *njobs, int *nchunks, Size *chunk_bytes)
{
	Size		size;

	/* ProcNumber 0-based (17+), BackendId 1-based (15/16): MaxBackends + 1
	 * main slots, then each one's page slots (service.h) */
	*njobs = (MaxBackends + 1) * (1 + GS_SVC_PAGE_SLOTS);
	*chunk_bytes = (Size) gs_guc_key_pool_chunk_size * 1024;
	*nchunks = (int) (((Size) gs_guc_key_pool_size << 20) / *chunk_bytes);

	size = MAXALIGN(sizeof(GsSvcControl));
	size = add_size(size, MAXALIGN(mul_size(*njobs, sizeof(GsSvcJob))));
	size = add_size(size, MAXALIGN(mul_size(*nchunks, sizeof(GsSvcChunk))));
	size = add_size(size, mul_size(*nchunks, *chunk_bytes));
	size = add_size(size, GS_SVC_PAGE);	/* page alignment of the pool */
	return size;
}

static void
gs_svc_shmem_request(void)
{
	int			njobs,
				nchunks;
	Size		chunk_bytes;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(gs_svc_shmem_size(&njobs, &nchunks, &chunk_bytes));
	RequestNamedLWLockTranche("gpuselect_service", 1);
}

/*
 * Runs in the postmaster at start and after every crash restart (shared
 * memory is new then: found is false), and never in a child.
 */
static void
gs_svc_shmem_startup(void)
{
	int			njobs,
				nchunks;
	Size		chunk_bytes,
				size;
	bool		found;
	char	   *p;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	size = gs_svc_shmem_size(&njobs, &nchunks, &chunk_bytes);
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	p = ShmemInitStruct("gpuselect service", size, &found);
	gs_svc_ctl = (GsSvcControl *) p;
	p += MAXALIGN(sizeof(GsSvcControl));
	gs_svc_jobs = (GsSvcJob *) p;
	p += MAXALIGN(mul_size(njobs, sizeof(GsSvcJob)));
	gs_svc_chunks = (GsSvcChunk *) p;
	p += MAXALIGN(mul_size(nchunks, sizeof(GsSvcChunk)));
	gs_svc_pool = (char *) TYPEALIGN(GS_SVC_PAGE, p);

	if (!found)
	{
		GsSvcControl *c = gs_svc_ctl;

		memset(c, 0, sizeof(*c));
		pg_atomic_init_u32(&c->state, gs_svc_registered ? GS_SVC_STARTING : GS_SVC_OFF);
		pg_atomic_init_u64(&c->epoch, 0);
		pg_atomic_init_u64(&c->heartbeat, 0);
		pg_atomic_init_u64(&c->served, 0);
		pg_atomic_init_u64(&c->failed, 0);
		pg_atomic_init_u64(&c->requeued, 0);
		pg_atomic_init_u64(&c->fallen_back, 0);
		pg_atomic_init_u64(&c->split_jobs, 0);
		pg_atomic_init_u64(&c->pages_on_device, 0);
		pg_atomic_init_u64(&c->pages_on_cpu, 0);
		pg_atomic_init_u64(&c->canceled, 0);
		pg_atomic_init_u64(&c->timed_out, 0);
		pg_atomic_init_u64(&c->pool_exhausted, 0);
		pg_atomic_init_u64(&c->pool_waits, 0);
		pg_atomic_init_u64(&c->pool_filled_waiting, 0);
		pg_atomic_init_u64(&c->restart_waits, 0);
		pg_atomic_init_u64(&c->bytes_in_use, 0);
		pg_atomic_init_u64(&c->scan_bytes, 0);
		pg_atomic_init_u64(&c->scan_short, 0);
		pg_atomic_init_u64(&c->scan_keys_in_place, 0);
		pg_atomic_init_u64(&c->scan_keys_copied, 0);
		pg_atomic_init_u64(&c->worker_keys_in_place, 0);
		pg_atomic_init_u64(&c->leases_swept, 0);
		pg_atomic_init_u32(&c->prefetch_pending, 0);
		pg_atomic_init_u64(&c->prefetch_bytes, 0);
		pg_atomic_init_u64(&c->prefetch_used_bytes, 0);
		pg_atomic_init_u64(&c->prefetch_resident, 0);
		pg_atomic_init_u64(&c->prefetch_limit, 0);
		pg_atomic_init_u64(&c->device_bytes, 0);
		pg_atomic_init_u64(&c->device_peak, 0);
		pg_atomic_init_u64(&c->device_used, 0);
		pg_atomic_init_u64(&c->device_total, 0);
		c->lock = &(GetNamedLWLockTranche("gpuselect_service"))->lock;
		strlcpy(c->reason, gs_svc_registered ? "" : gs_svc_off_reason, sizeof(c->reason));
		c->njobs = njobs;
		c->nbackend_slots = MaxBackends + 1;
		c->nchunks = nchunks;
		c->chunk_bytes = chunk_bytes;
		for (int i = 0; i < njobs; i++)
		{
			memset(&gs_svc_jobs[i], 0, sizeof(GsSvcJob));
			pg_atomic_init_u32(&gs_svc_jobs[i].state, GS_JOB_FREE);
			pg_atomic_init_u32(&gs_svc_jobs[i].nleased, 0);
			gs_svc_jobs[i].head = -1;
		}
		for (int i = 0; i < nchunks; i++)
		{
			memset(&gs_svc_chunks[i], 0, sizeof(GsSvcChunk));
			gs_svc_chunks[i].next = i + 1 < nchunks ? i + 1 : -1;
			gs_svc_chunks[i].job = -1;
			pg_atomic_init_u32(&gs_svc_chunks[i].gen, 1);
			pg_atomic_init_u32(&gs_svc_chunks[i].sealed, 0);
		}
		c->free_head = nchunks > 0 ? 0 : -1;
		c->nfree = nchunks;
		gs_svc_devices_shmem_init(c);
	}
	LWLockRelease(AddinShmemInitLock);
}

static void
gs_svc_register_worker(void)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS;
	bgw.bgw_start_time = BgWorkerStart_PostmasterStart;
	/* exit code 1 (sticky device error, SIGTERM): started again after this */
	bgw.bgw_restart_time = 2;
	strlcpy(bgw.bgw_library_name, "gpuselect", BGW_MAXLEN);
	strlcpy(bgw.bgw_function_name, "gs_service_main", BGW_MAXLEN);
	strlcpy(bgw.bgw_name, "gpuselect GPU service", BGW_MAXLEN);
	strlcpy(bgw.bgw_type, "gpuselect GPU service", BGW_MAXLEN);
	RegisterBackgroundWorker(&bgw);
}

/*
 * _PG_init in the postmaster while shared_preload_libraries loads: the
 * server-wide settings, the shared memory hooks and, unless the service is
 * off, the worker.  No CUDA here: children would inherit the context.
 */
void
gs_service_preload_init(void)
{
	DefineCustomEnumVariable("gpuselect.service",
							 "The server's GPU service: on (CUDA), cpu_test (the CPU engine, for tests) or off.",
							 "on/cpu_test: one background worker runs every backend's GPU selections; off: each "
							 "backend uses the GPU itself, as without shared_preload_libraries.",
							 &gs_guc_service,
							 GS_SERVICE_ON,
							 gs_service_options,
							 PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.key_pool_size",
							"Shared memory for the keys backends hand to the GPU service.",
							"Taken from the main shared memory segment at server start; 0: no pool, no service.",
							&gs_guc_key_pool_size,
							256, 0, INT_MAX / 2,
							PGC_POSTMASTER, GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.key_pool_chunk_size",
							"Size of one chunk of the key pool.",
							"A group takes whole chunks for its keys and one or more for its fractions.",
							&gs_guc_key_pool_chunk_size,
							4096, 64, 1024 * 1024,
							PGC_POSTMASTER, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuselect.service_prefetch_size",
							"Device memory the GPU service may fill with keys of scans still running.",
							"A scan's full key-pool chunks are copied to the device while the scan goes on, "
							"so a job copies only the rest.  At most the key pool's size and a quarter of "
							"the device's memory; -1: that much; 0: no prefetch.",
							&gs_guc_service_prefetch_size,
							1024, -1, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MB,
							NULL, NULL, NULL);

	gs_svc_devices_define_gucs(true);

	gs_svc_preloaded = true;
	if (gs_guc_service == GS_SERVICE_OFF)
		gs_svc_off_reason = "gpuselect.service is off";
	else if (gs_guc_key_pool_size == 0)
		gs_svc_off_reason = "gpuselect.key_pool_size is 0";
	else if (gs_guc_service == GS_SERVICE_ON && !gs_service_cuda_built())
		gs_svc_off_reason = "gpuselect.service is on but this build has no CUDA support "
			"(built with USE_CUDA=0; cpu_test runs the CPU engine in the service)";
	else
		gs_svc_registered = true;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = gs_svc_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = gs_svc_shmem_startup;

	if (gs_svc_registered)
		gs_svc_register_worker();
}

bool
gs_service_in_use(void)
{
	return gs_svc_registered && gs_svc_ctl != NULL;
}

/* the only place that asks how the module was built */
bool
gs_service_cuda_built(void)
{
#ifdef GS_HAVE_CUDA
	return true;
#else
	return false;
#endif
}

const char *
gs_service_off_reason(void)
{
	return psprintf("there is no GPU service: %s", gs_svc_off_reason);
}

/* ---------------- gpuselect_status() ---------------- */

#define EMIT_U64(name, v) emit(name, psprintf(UINT64_FORMAT, (uint64) (v)), arg)

/*
 * gpu_available / gpu_reason of a preloaded module: the GPU is used only
 * when the service runs the CUDA engine and is ready.
 */
static void
gs_svc_gpu_rows(uint32 state, const char *reason,
				void (*emit) (const char *name, const char *value, void *arg), void *arg)
{
	const char *why = NULL;

	if (!gs_svc_registered)
		why = gs_service_off_reason();
	else if (gs_guc_service == GS_SERVICE_CPU_TEST)
		why = "gpuselect.service = cpu_test: the service runs the CPU engine";
	else if (state != GS_SVC_READY)
		why = psprintf("the GPU service is %s%s%s", gs_svc_state_name(state),
					   reason[0] ? ": " : "", reason);
	emit("gpu_available", why == NULL ? "on" : "off", arg);
	emit("gpu_reason", why == NULL ? "ready (the GPU service)" : why, arg);
}

void
gs_service_status(void (*emit) (const char *name, const char *value, void *arg), void *arg)
{
	GsSvcControl *c = gs_svc_ctl;
	uint32		state;
	int			pid,
				starts,
				queue = 0,
				busy = 0,
				waiting;
	TimestampTz up_since,
				beat;
	char		device[128],
				reason[256];

	emit("cuda_build", gs_service_cuda_built() ? "on" : "off", arg);
	if (!gs_svc_preloaded || c == NULL)
	{
		emit("gpu_available", "off", arg);
		emit("gpu_reason", !gs_service_cuda_built() ?
			 "this build has no CUDA support (built with USE_CUDA=0)" :
			 gs_service_off_reason(), arg);
		emit("service", "off", arg);
		emit("service_state", "off", arg);
		emit("service_reason", gs_svc_off_reason, arg);
		return;
	}
	LWLockAcquire(c->lock, LW_SHARED);
	pid = c->svc_pid;
	starts = c->starts;
	up_since = c->up_since;
	strlcpy(device, c->device, sizeof(device));
	strlcpy(reason, c->reason, sizeof(reason));
	waiting = c->nwaiting;
	LWLockRelease(c->lock);
	state = pg_atomic_read_u32(&c->state);
	beat = (TimestampTz) pg_atomic_read_u64(&c->heartbeat);
	for (int i = 0; i < c->njobs; i++)
	{
		uint32		s = pg_atomic_read_u32(&gs_svc_jobs[i].state);

		if (s == GS_JOB_SUBMITTED || s == GS_JOB_RUNNING)
			queue++;
		if (s != GS_JOB_FREE)
			busy++;
	}

	gs_svc_gpu_rows(state, reason, emit, arg);
	emit("service", gs_guc_service == GS_SERVICE_ON ? "on" :
		 gs_guc_service == GS_SERVICE_CPU_TEST ? "cpu_test" : "off", arg);
	emit("service_state", gs_svc_state_name(state), arg);
	emit("service_reason", reason[0] ? reason : NULL, arg);
	emit("service_pid", pid > 0 ? psprintf("%d", pid) : NULL, arg);
	emit("service_up_since", pid > 0 && up_since ? pstrdup(timestamptz_to_str(up_since)) : NULL, arg);
	emit("service_starts", psprintf("%d", starts), arg);
	emit("service_device", device[0] ? device : NULL, arg);
	emit("service_heartbeat_age_ms", pid > 0 && beat ?
		 psprintf(INT64_FORMAT, (int64) ((GetCurrentTimestamp() - beat) / 1000)) : NULL, arg);
	emit("service_queue_length", psprintf("%d", queue), arg);
	emit("service_slots_in_use", psprintf("%d", busy), arg);
	EMIT_U64("service_served", pg_atomic_read_u64(&c->served));
	EMIT_U64("service_failed", pg_atomic_read_u64(&c->failed));
	EMIT_U64("service_requeued", pg_atomic_read_u64(&c->requeued));
	EMIT_U64("service_fallen_back", pg_atomic_read_u64(&c->fallen_back));
	EMIT_U64("service_split_jobs", pg_atomic_read_u64(&c->split_jobs));
	EMIT_U64("service_pages_on_device", pg_atomic_read_u64(&c->pages_on_device));
	EMIT_U64("service_pages_on_cpu", pg_atomic_read_u64(&c->pages_on_cpu));
	EMIT_U64("service_canceled", pg_atomic_read_u64(&c->canceled));
	EMIT_U64("service_timed_out", pg_atomic_read_u64(&c->timed_out));
	EMIT_U64("service_pool_exhausted", pg_atomic_read_u64(&c->pool_exhausted));
	EMIT_U64("service_pool_waits", pg_atomic_read_u64(&c->pool_waits));
	EMIT_U64("service_pool_filled_waiting", pg_atomic_read_u64(&c->pool_filled_waiting));
	emit("key_pool_waiting", psprintf("%d", waiting), arg);
	EMIT_U64("service_restart_waits", pg_atomic_read_u64(&c->restart_waits));
	EMIT_U64("key_pool_bytes", (uint64) c->nchunks * c->chunk_bytes);
	EMIT_U64("key_pool_chunk_bytes", c->chunk_bytes);
	EMIT_U64("key_pool_used_bytes", pg_atomic_read_u64(&c->bytes_in_use));
	EMIT_U64("key_pool_scan_bytes", pg_atomic_read_u64(&c->scan_bytes));
	EMIT_U64("key_pool_scan_short", pg_atomic_read_u64(&c->scan_short));
	EMIT_U64("service_keys_in_place", pg_atomic_read_u64(&c->scan_keys_in_place));
	EMIT_U64("service_keys_copied", pg_atomic_read_u64(&c->scan_keys_copied));
	EMIT_U64("service_worker_keys_in_place", pg_atomic_read_u64(&c->worker_keys_in_place));
	EMIT_U64("key_pool_leases_swept", pg_atomic_read_u64(&c->leases_swept));
	EMIT_U64("service_prefetch_limit_bytes", pid > 0 ? pg_atomic_read_u64(&c->prefetch_limit) :
			 gs_service_prefetch_bytes());
	EMIT_U64("service_prefetch_bytes", pg_atomic_read_u64(&c->prefetch_bytes));
	EMIT_U64("service_prefetch_used_bytes", pg_atomic_read_u64(&c->prefetch_used_bytes));
	EMIT_U64("service_prefetch_resident_bytes", pg_atomic_read_u64(&c->prefetch_resident));
	EMIT_U64("service_device_bytes", pg_atomic_read_u64(&c->device_bytes));
	EMIT_U64("service_device_peak_bytes", pg_atomic_read_u64(&c->device_peak));
	EMIT_U64("service_device_used_bytes", pg_atomic_read_u64(&c->device_used));
	EMIT_U64("service_device_total_bytes", pg_atomic_read_u64(&c->device_total));
	gs_svc_devices_status(emit, arg);
}
