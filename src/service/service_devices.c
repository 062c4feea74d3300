/*
 * service_devices.c — the GPU service's devices: the settings that say which
 * to open (gpuselect.service_devices; cpu_test: gpuselect.service_test_devices
 * simulated ones), the shared device table gpuselect_status() shows, the
 * choice of a device for each job, and taking a failed device out of
 * rotation.  The table lives in the control struct (service.h); only the
 * service's main thread writes it.
 *
 * Choice: a device runs one job at a time and holds at most one more, its
 * next (gpuselect.service_lane_depth, default 2: the lane starts it the
 * moment the first ends, service_lanes.c), and a job is given a device
 * only when one has room, so the service's shortest-first order (with
 * aging) holds across all devices up to that one next job.  An idle device
 * is always taken before one that is running a job, so a job never waits
 * behind another while a different device is idle.  Among equals the next
 * one after the last chosen is taken (round robin), so requests spread
 * over every device even when they come one at a time.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include <limits.h>

#include "utils/builtins.h"
#include "utils/guc.h"

#include "service/service.h"

static char *gs_guc_service_devices = NULL;
static int	gs_guc_service_test_devices = 1;
int			gs_guc_service_lane_depth = 2;
int			gs_guc_test_service_fail_device = -1;
int			gs_guc_test_service_split_keys = 0;

static int	last_pick = -1;		/* the service's round robin */
static bool held[GS_SVC_MAX_DEVICES];	/* lent to a split job (the main thread's) */

/*
 * "all", or a comma-separated list of device numbers (at most
 * GS_SVC_MAX_DEVICES, each once).  n = -1 for "all".
 */
static bool
gs_parse_devices(const char *value, int *ordinals, int *n)
{
	const char *p = value;

	*n = 0;
	while (*p == ' ')
		p++;
	if (pg_strcasecmp(p, "all") == 0)
	{
		*n = -1;
		return true;
	}
	while (*p)
	{
		char	   *end;
		long		v;

		while (*p == ' ')
			p++;
		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno != 0 || v < 0 || v > 1023 || *n >= GS_SVC_MAX_DEVICES)
			return false;
		for (int i = 0; i < *n; i++)
			if (ordinals[i] == (int) v)
				return false;
		ordinals[(*n)++] = (int) v;
		p = end;
		while (*p == ' ')
			p++;
		if (*p == ',')
			p++;
		else if (*p != '\0')
			return false;
	}
	return *n > 0;
}

static bool
gs_check_service_devices(char **newval, void **extra, GucSource source)
{
	int			ordinals[GS_SVC_MAX_DEVICES];
	int			n;

	(void) extra;
	(void) source;
	if (*newval == NULL || !gs_parse_devices(*newval, ordinals, &n))
	{
		GUC_check_errdetail("Use \"all\" or a comma-separated list of at most %d distinct device numbers.",
							GS_SVC_MAX_DEVICES);
		return false;
	}
	return true;
}

void
gs_svc_devices_define_gucs(bool preload)
{
	if (!preload)
	{
		DefineCustomIntVariable("gpuselect.test_service_fail_device",
								"Test hook: this session's GPU service jobs go to this device while it is in "
								"rotation, and fail there as on a sticky device error.",
								"The device is taken out of the service's rotation; -1: no injection.",
								&gs_guc_test_service_fail_device,
								-1, -1, GS_SVC_MAX_DEVICES - 1,
								PGC_SUSET, GUC_NOT_IN_SAMPLE,
								NULL, NULL, NULL);
		DefineCustomIntVariable("gpuselect.test_service_split_keys",
								"Test hook: this session's exact GPU service jobs of more keys than this run "
								"as split jobs, as a group larger than a device would.",
								"They stream through every device in rotation, the others held for them, "
								"with 8 MB a device so that the narrowing takes several levels; 0: off.",
								&gs_guc_test_service_split_keys,
								0, 0, INT_MAX,
								PGC_SUSET, GUC_NOT_IN_SAMPLE,
								NULL, NULL, NULL);
		return;
	}
	DefineCustomStringVariable("gpuselect.service_devices",
							   "The CUDA devices the GPU service opens: all, or a list such as 0,1.",
							   "One context and one lane thread per device; CUDA_VISIBLE_DEVICES in the "
							   "server's environment applies first.",
							   &gs_guc_service_devices,
							   "all",
							   PGC_POSTMASTER, 0,
							   gs_check_service_devices, NULL, NULL);
	DefineCustomIntVariable("gpuselect.service_lane_depth",
							"Jobs each device of the GPU service holds: the one it runs and, at 2, the next.",
							"At 2 a device starts its next job the moment one ends, without waiting for the "
							"service's main thread; 1 hands each device one job at a time.",
							&gs_guc_service_lane_depth,
							2, 1, GS_SVC_MAX_LANE_DEPTH,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gpuselect.service_test_devices",
							"Devices the GPU service simulates in cpu_test mode.",
							"Each one a lane thread running the CPU engine, so tests exercise several devices.",
							&gs_guc_service_test_devices,
							1, 1, GS_SVC_MAX_DEVICES,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
}

void
gs_svc_devices_shmem_init(GsSvcControl *c)
{
	c->ndevices = 0;
	for (int k = 0; k < GS_SVC_MAX_DEVICES; k++)
	{
		GsSvcDevice *d = &c->devices[k];

		pg_atomic_init_u32(&d->state, GS_DEV_UNUSED);
		pg_atomic_init_u32(&d->running, 0);
		pg_atomic_init_u64(&d->running_keys, 0);
		pg_atomic_init_u64(&d->served, 0);
		pg_atomic_init_u64(&d->failed, 0);
		pg_atomic_init_u64(&d->engine_bytes, 0);
		pg_atomic_init_u64(&d->engine_peak, 0);
		pg_atomic_init_u64(&d->used_bytes, 0);
		pg_atomic_init_u64(&d->total_bytes, 0);
		pg_atomic_init_u64(&d->lane_job_us, 0);
		pg_atomic_init_u64(&d->lane_sample_us, 0);
		d->ordinal = -1;
		d->name[0] = '\0';
		d->reason[0] = '\0';
	}
}

/* ---------------- the service's side (main thread) ---------------- */

/*
 * The devices to open: cpu_test: 0 .. service_test_devices - 1; on: the
 * list, or every device CUDA sees (count from the caller: `max` holds it
 * on entry for "all").  Returns how many, or 0 with why set.
 */
int
gs_svc_devices_wanted(int mode, int *ordinals, int max, char *why, Size whylen)
{
	int			n;

	if (mode == GS_SERVICE_CPU_TEST)
	{
		n = Min(gs_guc_service_test_devices, max);
		for (int i = 0; i < n; i++)
			ordinals[i] = i;
		return n;
	}
	if (!gs_parse_devices(gs_guc_service_devices ? gs_guc_service_devices : "all", ordinals, &n))
	{
		snprintf(why, whylen, "gpuselect.service_devices is malformed");
		return 0;
	}
	if (n < 0)
	{
		n = Min(max, GS_SVC_MAX_DEVICES);
		for (int i = 0; i < n; i++)
			ordinals[i] = i;
	}
	return n;
}

/* device k's entry at service start: counters from 0 */
void
gs_svc_device_set(int k, int ordinal, const char *name, bool ok, const char *reason)
{
	GsSvcControl *c = gs_svc_ctl;
	GsSvcDevice *d = &c->devices[k];

	Assert(k >= 0 && k < GS_SVC_MAX_DEVICES);
	pg_atomic_write_u32(&d->running, 0);
	pg_atomic_write_u64(&d->running_keys, 0);
	pg_atomic_write_u64(&d->served, 0);
	pg_atomic_write_u64(&d->failed, 0);
	pg_atomic_write_u64(&d->engine_bytes, 0);
	pg_atomic_write_u64(&d->engine_peak, 0);
	pg_atomic_write_u64(&d->used_bytes, 0);
	pg_atomic_write_u64(&d->total_bytes, 0);
	pg_atomic_write_u64(&d->lane_job_us, 0);
	pg_atomic_write_u64(&d->lane_sample_us, 0);
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	d->ordinal = ordinal;
	strlcpy(d->name, name ? name : "", sizeof(d->name));
	strlcpy(d->reason, reason ? reason : "", sizeof(d->reason));
	if (k >= c->ndevices)
		c->ndevices = k + 1;
	LWLockRelease(c->lock);
	pg_atomic_write_u32(&d->state, ok ? GS_DEV_OK : GS_DEV_FAILED);
}

/* k is in rotation */
bool
gs_svc_device_ok(int k)
{
	return k >= 0 && k < gs_svc_ctl->ndevices &&
		pg_atomic_read_u32(&gs_svc_ctl->devices[k].state) == GS_DEV_OK;
}

/* k is in rotation and runs nothing */
bool
gs_svc_device_idle(int k)
{
	return gs_svc_device_ok(k) && !held[k] && pg_atomic_read_u32(&gs_svc_ctl->devices[k].running) == 0;
}

/* k is in rotation and can take a job now (it holds fewer than the depth) */
bool
gs_svc_device_free(int k)
{
	return gs_svc_device_ok(k) && !held[k] &&
		pg_atomic_read_u32(&gs_svc_ctl->devices[k].running) < (uint32) gs_guc_service_lane_depth;
}

/*
 * k lent to a split job running on another device (service_main.c): it
 * takes no job meanwhile, and shows one running in the status.
 */
void
gs_svc_device_hold(int k, bool on)
{
	if (k < 0 || k >= GS_SVC_MAX_DEVICES || held[k] == on)
		return;
	held[k] = on;
	if (on)
		pg_atomic_fetch_add_u32(&gs_svc_ctl->devices[k].running, 1);
	else
		pg_atomic_fetch_sub_u32(&gs_svc_ctl->devices[k].running, 1);
}

/* the next device after the last one chosen that passes `test`, or -1 */
static int
gs_svc_device_round_robin(bool (*test) (int))
{
	int			n = gs_svc_ctl->ndevices;

	for (int i = 1; i <= n; i++)
	{
		int			k = (last_pick + i) % n;

		if (k >= 0 && test(k))
		{
			last_pick = k;
			return k;
		}
	}
	return -1;
}

/*
 * A device for the next job: `pinned` (a test hook's device) when it is in
 * rotation -- then only it, once it has room -- else `preferred` (the one
 * with the job's prefetched copies, -1: none) if idle, else any idle one,
 * else `preferred` if it has room, else any with room.  -1: none has room.
 */
int
gs_svc_device_pick(int pinned, int preferred)
{
	int			k;

	if (gs_svc_device_ok(pinned))
		return gs_svc_device_free(pinned) ? pinned : -1;
	if (gs_svc_device_idle(preferred))
		return preferred;
	if ((k = gs_svc_device_round_robin(gs_svc_device_idle)) >= 0)
		return k;
	if (gs_svc_device_free(preferred))
		return preferred;
	return gs_svc_device_round_robin(gs_svc_device_free);
}

void
gs_svc_device_start(int k, uint64 nkeys)
{
	GsSvcDevice *d = &gs_svc_ctl->devices[k];

	pg_atomic_fetch_add_u64(&d->running_keys, nkeys);
	pg_atomic_fetch_add_u32(&d->running, 1);
}

/* outcome: 1 served, 0 failed, -1 dropped (its owner abandoned it) */
void
gs_svc_device_end(int k, uint64 nkeys, int outcome)
{
	GsSvcDevice *d = &gs_svc_ctl->devices[k];

	if (outcome >= 0)
		pg_atomic_fetch_add_u64(outcome > 0 ? &d->served : &d->failed, 1);
	pg_atomic_fetch_sub_u64(&d->running_keys, nkeys);
	pg_atomic_fetch_sub_u32(&d->running, 1);
}

/* out of rotation for the rest of this incarnation */
void
gs_svc_device_fail(int k, const char *reason)
{
	GsSvcControl *c = gs_svc_ctl;
	GsSvcDevice *d = &c->devices[k];

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	strlcpy(d->reason, reason, sizeof(d->reason));
	LWLockRelease(c->lock);
	pg_atomic_write_u32(&d->state, GS_DEV_FAILED);
}

int
gs_svc_devices_ok(void)
{
	int			n = 0;

	for (int k = 0; k < gs_svc_ctl->ndevices; k++)
		if (gs_svc_device_ok(k))
			n++;
	return n;
}

/* ---------------- gpuselect_status() ---------------- */

#define EMIT_U64(name, v) emit(name, psprintf(UINT64_FORMAT, (uint64) (v)), arg)

/*
 * device_<k>_* rows, k = the service's index (device_<k>_ordinal is the
 * CUDA number): state ok/failed and why, what runs on it, what it served
 * and failed since the service started, its memory (CUDA), and its lane's
 * time in jobs and in memory samples (against the wall time: how busy).
 */
void
gs_svc_devices_status(void (*emit) (const char *name, const char *value, void *arg), void *arg)
{
	GsSvcControl *c = gs_svc_ctl;
	int			n;
	int			nok = 0;
	int			ordinal[GS_SVC_MAX_DEVICES];
	char		name[GS_SVC_MAX_DEVICES][96];
	char		reason[GS_SVC_MAX_DEVICES][192];

	LWLockAcquire(c->lock, LW_SHARED);
	n = Min(c->ndevices, GS_SVC_MAX_DEVICES);
	for (int k = 0; k < n; k++)
	{
		ordinal[k] = c->devices[k].ordinal;
		strlcpy(name[k], c->devices[k].name, sizeof(name[k]));
		strlcpy(reason[k], c->devices[k].reason, sizeof(reason[k]));
	}
	LWLockRelease(c->lock);

	for (int k = 0; k < n; k++)
		if (pg_atomic_read_u32(&c->devices[k].state) == GS_DEV_OK)
			nok++;
	emit("service_devices", psprintf("%d", n), arg);
	emit("service_devices_ok", psprintf("%d", nok), arg);
	for (int k = 0; k < n; k++)
	{
		GsSvcDevice *d = &c->devices[k];
		uint32		st = pg_atomic_read_u32(&d->state);

#define DEV_ROW(field) psprintf("device_%d_%s", k, field)
		emit(DEV_ROW("ordinal"), psprintf("%d", ordinal[k]), arg);
		emit(DEV_ROW("name"), name[k][0] ? pstrdup(name[k]) : NULL, arg);
		emit(DEV_ROW("state"), st == GS_DEV_OK ? "ok" : st == GS_DEV_FAILED ? "failed" : "unused", arg);
		emit(DEV_ROW("reason"), reason[k][0] ? pstrdup(reason[k]) : NULL, arg);
		EMIT_U64(DEV_ROW("running"), pg_atomic_read_u32(&d->running));
		EMIT_U64(DEV_ROW("running_keys"), pg_atomic_read_u64(&d->running_keys));
		EMIT_U64(DEV_ROW("served"), pg_atomic_read_u64(&d->served));
		EMIT_U64(DEV_ROW("failed"), pg_atomic_read_u64(&d->failed));
		EMIT_U64(DEV_ROW("device_bytes"), pg_atomic_read_u64(&d->engine_bytes));
		EMIT_U64(DEV_ROW("device_peak_bytes"), pg_atomic_read_u64(&d->engine_peak));
		EMIT_U64(DEV_ROW("device_used_bytes"), pg_atomic_read_u64(&d->used_bytes));
		EMIT_U64(DEV_ROW("device_total_bytes"), pg_atomic_read_u64(&d->total_bytes));
		EMIT_U64(DEV_ROW("lane_job_ms"), pg_atomic_read_u64(&d->lane_job_us) / 1000);
		EMIT_U64(DEV_ROW("lane_sample_ms"), pg_atomic_read_u64(&d->lane_sample_us) / 1000);
#undef DEV_ROW
	}
}
