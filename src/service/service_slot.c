/*
 * service_slot.c — a backend's job slot in the GPU service's shared memory
 * (service.h): which slot is this backend's, waking the service, giving
 * up the slot's job, and the exit callback that gives it up (and frees
 * the pool chunks the backend's scans still hold) however the backend
 * ends.  The backend's side of a selection (service_client.c) and of its
 * scan (service_scan.c) both use the slot, so it lives with the service's
 * shared memory rather than with either of them; nothing here raises an
 * ERROR.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"

#include "service/service.h"

static bool gs_svc_exit_registered = false;

/* this process's job slot: its proc number (17+; 0-based) or backend id
 * (15/16, 1-based: pg_compat.h maps the name), hence MaxBackends + 1 slots */
int
gs_svc_my_slot(void)
{
	int			idx = (int) MyProcNumber;

	if (idx < 0 || idx >= gs_svc_ctl->nbackend_slots)
		return -1;
	return idx;
}

int
gs_svc_page_slot(int k)
{
	int			me = gs_svc_my_slot();
	int			idx;

	if (me < 0 || k < 0 || k >= GS_SVC_PAGE_SLOTS)
		return -1;
	idx = gs_svc_ctl->nbackend_slots + me * GS_SVC_PAGE_SLOTS + k;
	return idx < gs_svc_ctl->njobs ? idx : -1;
}

void
gs_svc_wake_service(void)
{
	PGPROC	   *svc = gs_svc_ctl->svc_proc;

	if (svc != NULL)
		SetLatch(&svc->procLatch);
}

/*
 * Give up job j: whatever state it is in, afterwards this backend no
 * longer touches it.  Jobs the service may be reading become ABANDONED
 * (the service frees them); the others are freed here.  Never ERRORs.
 */
void
gs_svc_abandon(int j)
{
	GsSvcJob   *job = &gs_svc_jobs[j];

	if (job->owner_pid != MyProcPid)
		return;
	for (int tries = 0; tries < 1000; tries++)
	{
		uint32		s = pg_atomic_read_u32(&job->state);

		switch ((GsJobState) s)
		{
			case GS_JOB_FREE:
			case GS_JOB_ABANDONED:
				return;
			case GS_JOB_OPEN:
			case GS_JOB_DONE:
			case GS_JOB_FAILED:
				/* the service does not touch these: free them here */
				gs_pool_free_list(job->head, j);
				job->head = -1;
				pg_atomic_write_u32(&job->state, GS_JOB_FREE);
				return;
			case GS_JOB_SUBMITTED:
			case GS_JOB_RUNNING:
			case GS_JOB_WRITING:
				if (pg_atomic_compare_exchange_u32(&job->state, &s, GS_JOB_ABANDONED))
				{
					gs_svc_wake_service();
					return;
				}
				break;			/* the service moved it: look again */
		}
	}
}

/* exit (FATAL, terminate, normal): our place in the pool's queue, the job
 * and the page jobs, then every chunk our scans still hold (states' reset callbacks normally
 * freed them already) */
static void
gs_svc_client_exit(int code, Datum arg)
{
	int			j = gs_svc_my_slot();

	(void) code;
	(void) arg;
	if (j < 0)
		return;
	gs_pool_queue_leave(j);
	gs_svc_abandon(j);
	for (int k = 0; k < GS_SVC_PAGE_SLOTS; k++)
		if (gs_svc_page_slot(k) >= 0)
			gs_svc_abandon(gs_svc_page_slot(k));
	gs_pool_free_all_held(j, MyProcPid);
}

void
gs_svc_register_exit(void)
{
	if (!gs_svc_exit_registered)
	{
		on_shmem_exit(gs_svc_client_exit, (Datum) 0);
		gs_svc_exit_registered = true;
	}
}
