/*
 * gpuselect.c — module entry point.  _PG_init defines the GUCs and, when
 * gpuselect is in shared_preload_libraries, requests the GPU service's
 * shared memory and registers its worker (service_shmem.c).  Nothing here
 * touches CUDA (only the GPU service creates CUDA contexts, at its own
 * start; never the postmaster, never a backend).  It also installs the executor
 * hook that hands the leader's key arena to parallel workers (arena.c),
 * which creates nothing at load time, and the planner hook that plans
 * ordered-set percentiles as plain aggregates (planner.c).
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "base/guc.h"
#include "planner/planner.h"
#include "scan/bulk_scan.h"
#include "service/service.h"
#include "state/arena.h"
#include "state/shm_budget.h"

GS_PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	gs_guc_define();
	gs_guc_note_load(process_shared_preload_libraries_in_progress);
	gs_service_define_gucs();
	/* the GPU service: shared memory and its worker exist only when preloaded */
	if (process_shared_preload_libraries_in_progress)
	{
		gs_service_preload_init();
		gs_shm_budget_preload_init();	/* the budget's counter (shm_budget.c) */
	}
	MarkGUCPrefixReserved("gpuselect");
	gs_arena_install_hook();
	gs_planner_install_hook();
	gs_planner_groups_install_hook();
	gs_bulk_scan_register();
}
