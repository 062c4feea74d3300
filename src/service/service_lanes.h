/*
 * service_lanes.h — the GPU service's lanes: one thread per device that
 * runs the engine on jobs the service's main thread prepared (service_main.c
 * does everything PostgreSQL; see docs/design-gpu-service.md, section 7).
 *
 * Plain C and pthreads: a lane thread never calls a PostgreSQL function (no
 * palloc, elog, latch, interrupt processing) and runs with every signal
 * blocked, so PostgreSQL's handlers run only on the main thread.  The main
 * thread hands a lane a job (gs_lanes_submit) while it runs at most one
 * other (gpuselect.service_lane_depth), a lane puts the
 * finished job on one done list and writes a byte into a pipe whose read
 * end the main thread waits on next to its latch (gs_lanes_wake_fd), so a
 * finished job wakes it without polling.
 */
#ifndef GS_SERVICE_LANES_H
#define GS_SERVICE_LANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs_engine.h"
#include "gs_pages.h"
#include "service/service_cuda.h"

#define GS_LANES_MAX 16

/*
 * A PAGES job as a lane sees it (issue #31; service_pages.c prepares it):
 * the keys of the listed tuples of pinned shared-buffer pages.  CUDA lanes
 * have the device read the pages where they are (gs_svc_cuda_extract_pages)
 * unless on_cpu; CPU lanes, and CUDA lanes whose device cannot map shared
 * buffers, extract on the lane's thread (gs_page_extract_cpu).
 */
typedef struct gs_lane_pages
{
	size_t		npages;			/* 0: the job is a selection */
	void	   *base;			/* shared buffers */
	size_t		base_bytes;
	size_t		page_bytes;
	const uint64_t *page_off;	/* each page's offset in base */
	const char *refs;			/* the gs_page_refs, packed, as the owner sent them */
	size_t		ref_bytes;
	const uint32_t *items;		/* GS_PAGE_ITEM per listed tuple, nitems */
	size_t		nitems;
	gs_page_column column;
	bool		on_cpu;			/* test hook: not on the device */
	void	  **segs;			/* out: the job's key chunks, in order, */
	size_t	   *seg_keys;		/* ... each with room for this many keys */
	size_t		nsegs;			/* (nitems in all, at least) */
	size_t		nkeys;			/* out: the keys written, in order */
	bool		on_device;		/* out: the device extracted them */
} gs_lane_pages;

/* one job as a lane sees it; the main thread owns the memory throughout */
typedef struct gs_lane_work
{
	/* set by the main thread before gs_lanes_submit, read-only for the lane */
	int			tag;			/* the main thread's (its job slot) */
	gs_input	in;				/* keys in pool chunks */
	const uint64_t *ranks;
	size_t		nranks;
	bool		approx;			/* answer: gs_approx_pick[nranks], else uint64_t[nranks] */
	void	   *answer;
	gs_options	opt;			/* opt.interrupt must be thread-safe (reads atomics only) */
	int			cpu_path;		/* cpu lanes: gs_cpu_test_force_path for this job */
	int			delay_ms;		/* test hook: wait this long first (interruptibly) */
	gs_status	inject;			/* test hook: fail with this status instead (GS_OK: run) */
	bool		inject_sticky;	/* ... as a failure that leaves the device unusable */
	gs_svc_cuda_fault engine_fault; /* test hook: CUDA lanes arm the engine's own
								 * fault for this job; CPU lanes fail it as inject */
	const int  *seg_chunk;		/* in.segs[i]'s key-pool chunk, -1: not one that
								 * may have a prefetched copy (NULL: none has) */
	const uint32_t *seg_gen;	/* ... its generation (GsSvcChunk.gen) now */
	bool		split;			/* exact: stream the keys through the devices
								 * (gs_svc_cuda_select_split) even where they fit */
	size_t		split_budget;	/* its bytes a device (0: the engine's default) */
	int			split_lanes[GS_LANES_MAX];	/* other lanes whose devices it uses, */
	int			nsplit_lanes;	/* held for it (gs_lanes_hold) */
	gs_lane_pages pages;		/* a PAGES job (pages.npages > 0) */

	/* set by the lane before it hands the work back */
	int			lane;
	gs_status	status;
	gs_error	err;			/* inject: the main thread puts the message here */
	bool		sticky;			/* the device is unusable (CUDA: a sticky error) */
	double		copy_ms;
	double		run_ms;			/* the lane's time on this job */
	uint64_t	bytes_copied;
	uint64_t	prefetch_used_bytes;	/* keys read from prefetched copies */
	bool		split_used;		/* it streamed through the devices (split) */

	struct gs_lane_work *next;	/* the lanes' lists */
} gs_lane_work;

/*
 * Start n lanes (n <= GS_LANES_MAX), lane i on devs[i] (CUDA; NULL entries:
 * the CPU engine), each with room for prefetched copies of nchunks pool
 * chunks.  A CUDA lane first makes its device current; ok[i] says
 * whether that worked (else why in why[i], and the lane takes no work).
 * Returns the number of threads started (all or, on a thread creation
 * failure, fewer: the rest are marked not ok).
 */
int			gs_lanes_start(int n, gs_svc_cuda_dev **devs, int nchunks, bool *ok, char (*why)[128]);
int			gs_lanes_wake_fd(void);
/* give a lane a job; the main thread does so only while the lane has no
 * next job waiting (service_devices.c keeps the count: running < depth) */
void		gs_lanes_submit(int lane, gs_lane_work *w);
/* the finished jobs (a list through next; NULL: none); drains the pipe */
gs_lane_work *gs_lanes_collect(void);
/*
 * Prefetch (service_prefetch.c decides what): copy `bytes` at host, the
 * sealed pool chunk `chunk` in generation gen, to the lane's device (cpu
 * lanes: to malloc'd memory), or drop the lane's copy of it.  Queued; a
 * lane runs them in order, between jobs (a job goes first).  A job reads
 * a copy instead of its segment when the generations match.
 */
void		gs_lanes_prefetch(int lane, int chunk, uint32_t gen, const void *host, size_t bytes);
void		gs_lanes_unfetch(int lane, int chunk);
/* bytes all lanes copied ahead so far */
uint64_t	gs_lanes_prefetched_bytes(void);

/* the engines' interrupt hooks return true once this is set */
/*
 * Lending a lane's device to another lane's split job: once held, the lane
 * thread finishes what it is doing, parks (wakes the main thread) and
 * touches its engine no more -- no jobs, no prefetch orders -- until
 * released, so that the split job's lane may use that engine alone.
 */
void		gs_lanes_hold(int lane, bool on);
bool		gs_lanes_parked(int lane);

bool		gs_lanes_stopping(void);
/* ask every lane to stop and wait up to timeout_ms for them all; returns
 * the number still running then (their work must not be freed) */
int			gs_lanes_stop(int timeout_ms);
bool		gs_lanes_ended(int lane);
/*
 * What a lane last sampled of its device's memory (CUDA; the gs_svc_cuda_memory
 * order: engine bytes, engine peak, device used, device total; sampled after
 * a job when no next one waits, at least every 100 ms while jobs run back to
 * back, else once a second), and its time in jobs and in those samples since
 * it started (ms).
 */
void		gs_lanes_readings(int lane, uint64_t mem[4], double *job_ms, double *sample_ms);

#endif							/* GS_SERVICE_LANES_H */
