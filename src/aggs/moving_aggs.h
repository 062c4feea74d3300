/*
 * moving_aggs.h — what the moving window aggregates (moving_aggs.c) show
 * gpuselect_status(): the most values, and the most memory of its window
 * context (MemoryContextMemAllocated, children included), one moving state
 * held at a final call in this backend.  Both follow the frame, not the
 * partition: the regression suite `moving` checks it.
 */
#ifndef GS_MOVING_AGGS_H
#define GS_MOVING_AGGS_H

#include "postgres.h"

extern int64 gs_moving_peak_values;
extern int64 gs_moving_peak_bytes;

#endif							/* GS_MOVING_AGGS_H */
