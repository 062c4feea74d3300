/*
 * gpuselect.c — module entry point.  _PG_init only defines the GUCs: nothing
 * here touches CUDA (a CUDA context must be created lazily in the backend
 * that uses it, never in the postmaster).  It also installs the executor
 * hook that hands the leader's key arena to parallel workers (arena.c),
 * which creates nothing at load time, and the planner hook that plans
 * ordered-set percentiles as plain aggregates (planner.c).
 */
#include "postgres.h"
#include "pg_compat.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "arena.h"
#include "gpu_path.h"
#include "guc.h"
#include "planner.h"

GS_PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	gs_guc_define();
	gpu_path_define_gucs();
	MarkGUCPrefixReserved("gpuselect");
	gs_arena_install_hook();
	gs_planner_install_hook();
}
