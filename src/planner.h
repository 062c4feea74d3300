/*
 * planner.h — the planner rewrite: ordered-set percentiles planned as
 * gpuselect's plain (hashable, parallel) aggregates.  planner.c says what is
 * rewritten and why it is equivalent; planner_aggs.c holds the aggregates
 * the rewrite targets (gs_planner_* in the extension script).
 */
#ifndef GS_PLANNER_H
#define GS_PLANNER_H

/* chain gpuselect's planner_hook in front of any previous one (_PG_init) */
extern void gs_planner_install_hook(void);

/* the flags a target aggregate's name encodes (planner_aggs.c) */
#define GS_PLANNER_DESC		0x01	/* ORDER BY x DESC */
#define GS_PLANNER_EXACT	0x02	/* a built-in's: exact whatever gpuselect.approximate says */

#endif							/* GS_PLANNER_H */
