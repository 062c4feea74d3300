/*
 * service_order.h — which submitted job the GPU service runs next: the
 * rule alone, in plain C (no PostgreSQL), so that the unit tests check it
 * (test/unit/test_service_order.c).  service_main.c's gs_svc_next_job
 * applies it to the job slots.
 *
 * Shortest job first, by size class, with aging:
 *   - a job's size counts half for every GS_SVC_AGING_MS it has waited, so
 *     a stream of small groups (a dashboard's panels) cannot starve a
 *     large one: a job of n keys waits behind smaller ones at most
 *     GS_SVC_AGING_MS * log2(n / their size) (1.7 s for 100M keys behind
 *     1k-key jobs), while a small job still overtakes a large one that has
 *     only just arrived;
 *   - sizes are compared by their power of two (the class), and within a
 *     class the job submitted first runs first.  Comparing exact sizes
 *     made jobs of equal size run in the order of their slots (the
 *     backends' proc numbers): on the H200 host, 64 sessions of 100k-row
 *     groups had 6% of their queries wait the whole 100 ms until aging
 *     halved them (test/gpu/service_tail.sh; issue 35's results).  Jobs
 *     within 2x of each other cost about the same, so arrival order
 *     among them is fair and loses nothing.
 */
#ifndef GS_SERVICE_ORDER_H
#define GS_SERVICE_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#define GS_SVC_AGING_MS 100

/* a job's size after waiting waited_ms: halved per GS_SVC_AGING_MS */
static inline uint64_t
gs_svc_aged_keys(uint64_t nkeys, int64_t waited_ms)
{
	int64_t		halvings = waited_ms <= 0 ? 0 : waited_ms / GS_SVC_AGING_MS;

	return halvings >= 64 ? 0 : nkeys >> halvings;
}

/* the size class: 0 for no keys, else 1 + floor(log2(keys)) */
static inline int
gs_svc_size_class(uint64_t keys)
{
	return keys == 0 ? 0 : 64 - __builtin_clzll(keys);
}

/*
 * Does job a (aged size, submitted at a_submit: any monotonic clock, e.g.
 * TimestampTz) run before job b?  Smaller class first, then the earlier
 * submission; equal in both: no (the caller keeps the one it has).
 */
static inline bool
gs_svc_runs_before(uint64_t a_aged, int64_t a_submit, uint64_t b_aged, int64_t b_submit)
{
	int			ca = gs_svc_size_class(a_aged),
				cb = gs_svc_size_class(b_aged);

	if (ca != cb)
		return ca < cb;
	return a_submit < b_submit;
}

#endif							/* GS_SERVICE_ORDER_H */
