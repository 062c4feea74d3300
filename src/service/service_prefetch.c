/*
 * service_prefetch.c — the GPU service copies a scan's keys to the device
 * while the scan goes on (issue #16), so that a job copies only what was
 * not sealed yet.  The service's main thread decides here; the lanes copy.
 *
 * A backend that fills a held key-pool chunk and moves on to its next one
 * (or a leader that adopts a worker's leased chunk) SEALS it: the chunk's
 * `sealed` becomes its `gen` (service.h, GsSvcChunk), and the service's
 * latch is set.  On its next round the main thread walks the chunk table:
 *   - a sealed chunk with no copy yet, while the copies fit in the budget
 *     (gs_prefetch_limit): ordered copied, in that generation,
 *     to the device its backend's jobs prefer (gs_prefetch_device);
 *   - a copy whose chunk is in another generation now (freed, retaken):
 *     ordered dropped.
 * A lane runs the orders between jobs (service_lanes.c) and keeps the table
 * of its copies; a job reads the copy of a segment instead of the pool
 * when the copy's generation is the one the job's chunk has (the job's
 * chunks stay held by its waiting owner, so that generation cannot move
 * while the job runs).  A copy of an older generation is never read, so a
 * chunk freed and rewritten while it was being copied costs a wasted copy,
 * never a wrong answer.
 *
 * Device memory: the copies stay within the budget, whatever the number
 * of sessions; they go when their chunks go (the end of the query, which
 * frees the state's chunks and sets the latch), or when the service exits.
 * Without a wake-up (a lost latch) the walk still runs once a second while
 * copies exist.
 */
#include "postgres.h"
#include "base/pg_compat.h"

#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "service/service.h"
#include "service/service_lanes.h"

static uint32 *pf_gen = NULL;	/* per chunk: the generation ordered copied, 0: none */
static int8 *pf_lane = NULL;	/* ... to which device */
static uint64 pf_ordered = 0;	/* bytes of copies ordered and not dropped */
static TimestampTz pf_last_walk = 0;

/*
 * The budget: gpuselect.service_prefetch_size (-1: the key pool's size),
 * never more than the pool nor a quarter of the smallest usable device's
 * memory, so that copies never crowd out a large job's own buffers.  The
 * default, 1 GB, keeps the service's device memory flat under load: more
 * sessions scanning at once than fit in it copy the rest at their jobs.
 */
static uint64
gs_prefetch_limit(void)
{
	GsSvcControl *c = gs_svc_ctl;
	uint64		limit = gs_service_prefetch_bytes();

	for (int k = 0; k < c->ndevices; k++)
	{
		uint64		total = pg_atomic_read_u64(&c->devices[k].total_bytes);

		if (gs_svc_device_ok(k) && total > 0)
			limit = Min(limit, total / 4);
	}
	return limit;
}

void
gs_prefetch_start(void)
{
	int			n = gs_svc_ctl->nchunks;

	pf_gen = MemoryContextAllocZero(TopMemoryContext, sizeof(uint32) * Max(n, 1));
	pf_lane = MemoryContextAllocZero(TopMemoryContext, sizeof(int8) * Max(n, 1));
	pf_ordered = 0;
	pg_atomic_write_u64(&gs_svc_ctl->prefetch_resident, 0);
	pg_atomic_write_u64(&gs_svc_ctl->prefetch_limit, gs_prefetch_limit());
}

/*
 * The device the jobs of job slot `slot` prefer, and so the one its
 * chunks are copied to: the slots spread over the usable devices.
 */
int
gs_prefetch_device(int slot)
{
	int			nok = gs_svc_devices_ok();
	int			want;

	if (nok <= 0 || slot < 0)
		return -1;
	want = slot % nok;
	for (int k = 0; k < gs_svc_ctl->ndevices; k++)
		if (gs_svc_device_ok(k) && want-- == 0)
			return k;
	return -1;
}

static void
gs_prefetch_drop(int idx)
{
	gs_lanes_unfetch(pf_lane[idx], idx);
	pf_gen[idx] = 0;
	pf_ordered -= gs_svc_ctl->chunk_bytes;
}

/* one walk of the chunk table: drop stale copies, order new ones */
static void
gs_prefetch_walk(uint64 limit)
{
	GsSvcControl *c = gs_svc_ctl;
	Size		cb = c->chunk_bytes;

	for (int idx = 0; idx < c->nchunks; idx++)
	{
		GsSvcChunk *k = &gs_svc_chunks[idx];
		uint32		gen = pg_atomic_read_u32(&k->gen);
		uint32		sealed;
		int			d;

		if (pf_gen[idx] != 0 &&
			(pf_gen[idx] != gen || limit == 0 || !gs_svc_device_ok(pf_lane[idx])))
			gs_prefetch_drop(idx);
		if (pf_gen[idx] != 0 || pf_ordered + cb > limit)
			continue;
		sealed = pg_atomic_read_u32(&k->sealed);
		if (sealed != gen)
			continue;
		/* the keys the backend wrote before it sealed: the lane reads them */
		pg_read_barrier();
		d = gs_prefetch_device(k->job);
		if (d < 0)
			continue;
		gs_lanes_prefetch(d, idx, gen, gs_svc_pool + (Size) idx * cb, cb);
		pf_gen[idx] = gen;
		pf_lane[idx] = (int8) d;
		pf_ordered += cb;
	}
}

/* each round of the service's loop */
void
gs_prefetch_round(void)
{
	GsSvcControl *c = gs_svc_ctl;
	uint64		limit = gs_prefetch_limit();
	bool		pending = pg_atomic_exchange_u32(&c->prefetch_pending, 0) != 0;
	TimestampTz now;

	if (pf_gen == NULL)
		return;
	now = GetCurrentTimestamp();
	if (pending || (pf_ordered > 0 &&
					TimestampDifferenceExceeds(pf_last_walk, now, 1000)))
	{
		gs_prefetch_walk(limit);
		pf_last_walk = now;
	}
	pg_atomic_write_u64(&c->prefetch_limit, limit);
	pg_atomic_write_u64(&c->prefetch_resident, pf_ordered);
	pg_atomic_write_u64(&c->prefetch_bytes, gs_lanes_prefetched_bytes());
}
