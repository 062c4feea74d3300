/*
 * service.h — the GPU service (issue #16, phase 1): one background worker
 * per server runs the selections of every backend, so only one process
 * ever creates a CUDA context.
 *
 * Shared memory (main segment, sized in _PG_init's shmem_request_hook, all
 * set up by service_shmem.c):
 *
 *   GsSvcControl   the service's state, pid, device, counters, the pool's
 *                  free list (under one LWLock)
 *   GsSvcJob[]     one job slot per backend, indexed by its proc number,
 *                  then GS_SVC_PAGE_SLOTS more per backend for page jobs
 *   GsSvcChunk[]   one descriptor per key-pool chunk
 *   pool           nchunks * chunk_bytes, page aligned (page-locked once by
 *                  the service in CUDA mode)
 *
 * Phase 2: a state headed for the GPU takes whole pool chunks during the
 * scan and writes its keys straight into them (service_scan.c).  Those
 * chunks are HELD: owned by the backend's job slot and its pid, not by a
 * job, and only the backend frees them (its state's memory-context reset
 * callback, its on_shmem_exit cleanup), or the service's reaper once that
 * slot's scan owner (scan_proc, scan_pid) is no longer that process.  A
 * job refers to held chunks in place and never frees them.  Partial states
 * of parallel workers take chunks held for their LEADER's slot and pid,
 * marked leased until a state of the leader adopts them (service_scan.c:
 * leases), so the same release paths cover them, plus a sweep of the
 * unadopted ones at the leader's transaction end.
 *
 * Protocol (service_client.c = backend, service_main.c = service):
 * a job's state word moves FREE -> OPEN (owner took the slot, links its
 * io chunks (ranks, then answers), the chunks it copies the keys of
 * palloc'd chunks into, and its held chunks, in that order) -> SUBMITTED (owner; SetLatch service)
 * -> RUNNING -> WRITING -> DONE | FAILED (service; SetLatch owner) -> FREE
 * (owner, after reading the answer and freeing the chunks).  The owner may
 * move SUBMITTED, RUNNING or WRITING -> ABANDONED (cancel, timeout, exit);
 * the service then frees the chunks and sets FREE.  A service that stops
 * moves a job its own stop interrupted RUNNING -> SUBMITTED, for the next
 * incarnation (whose start frees what is left RUNNING, WRITING or
 * ABANDONED before it is READY).  Every transition the
 * two sides race on is a compare-and-swap, so a stale actor never writes
 * into a slot the other side has moved on.
 *
 * This header is the service's: its layout, its settings, the pool and
 * slot functions every side calls, and the worker's own.  Nothing in it
 * knows a GsState: the backend's functions on states are declared in
 * their own layers (state/service_scan.h: the scan and leases;
 * select/service_client.h: a selection on the service).
 *
 * A job slot's owner never waits for pool chunks while it holds any that
 * another waiter needs: it gives them back and queues, and only the
 * first in line holds chunks while it waits (wait_ticket below,
 * service_pool_queue.c).
 */
#ifndef GS_SERVICE_H
#define GS_SERVICE_H

#include "postgres.h"
#include "base/pg_compat.h"

#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/timestamp.h"

#include "gs_engine.h"
#include "gs_pages.h"

/* gpuselect.service */
typedef enum GsServiceMode
{
	GS_SERVICE_OFF = 0,
	GS_SERVICE_ON,				/* CUDA engine (USE_CUDA=1 builds) */
	GS_SERVICE_CPU_TEST			/* the CPU engine on the shared keys (CI) */
} GsServiceMode;

/* the service's state (GsSvcControl.state) */
typedef enum GsSvcState
{
	GS_SVC_OFF = 0,				/* not registered (setting, build, pool size) */
	GS_SVC_STARTING,			/* registered, not (yet) running or opening */
	GS_SVC_READY,				/* takes jobs */
	GS_SVC_DOWN,				/* exited; the postmaster restarts it */
	GS_SVC_UNAVAILABLE			/* no usable device; exits and retries later */
} GsSvcState;

typedef enum GsJobState
{
	GS_JOB_FREE = 0,
	GS_JOB_OPEN,
	GS_JOB_SUBMITTED,
	GS_JOB_RUNNING,
	GS_JOB_WRITING,
	GS_JOB_DONE,
	GS_JOB_FAILED,
	GS_JOB_ABANDONED
} GsJobState;

/* the service has job state s in hand: submitted, running or being answered */
static inline bool
gs_svc_job_live(uint32 s)
{
	return s == GS_JOB_SUBMITTED || s == GS_JOB_RUNNING || s == GS_JOB_WRITING;
}

/* test hook gpuselect.test_service_fault: what the service does to a job */
#define GS_SVC_FAULT_NONE 0
#define GS_SVC_FAULT_FAIL 1		/* the job fails as a failed launch would */
#define GS_SVC_FAULT_STICKY 2	/* ... and the service exits as on a sticky error */
#define GS_SVC_FAULT_LAUNCH 3	/* CUDA: the engine's own injected launch failure;
								 * cpu_test: as FAIL */
#define GS_SVC_FAULT_OOM 4		/* CUDA: device memory for the keys only, none for
								 * the selection's scratch; cpu_test: as FAIL */

/*
 * One job.  The owner writes the request fields while it holds the slot in
 * OPEN, the service the response fields while it holds it in RUNNING /
 * WRITING; the CAS on `state` orders them.  The io area (ranks, then the
 * answers) and the keys live in one list of pool chunks from `head`: the
 * first io_chunks hold the io area, the next key_chunks the keys, each
 * chunk's count in its descriptor's nkeys.  The job's own chunks come
 * before any held chunk, so freeing a job's list stops at the first held
 * chunk (gs_pool_free_list).
 */
/*
 * Job kinds.  SELECT: the io area holds ranks then answers, the key chunks
 * keys.  PAGES (issue #31, page shipping; service_pages.c): the io area
 * holds page references (gs_pages.h: shared buffers the owner keeps pinned,
 * each with the line pointers it found visible under the buffer's share
 * lock), the key chunks are empty ones the service fills with the column's
 * keys, each chunk's count in its descriptor and the total in out_keys; the
 * owner unpins once the job is DONE, FAILED or freed after ABANDONED.
 */
#define GS_SVC_JOB_SELECT 0
#define GS_SVC_JOB_PAGES 1

typedef struct GsSvcJob
{
	pg_atomic_uint32 state;		/* GsJobState */
	int			kind;			/* GS_SVC_JOB_* */
	PGPROC	   *owner_proc;		/* to SetLatch the owner; its pid tells a live owner */
	int			owner_pid;
	uint64		epoch;			/* the service incarnation it was submitted to */

	/* request */
	uint32		key_bytes;		/* 2, 4 or 8 */
	bool		approx;
	uint32		approx_buckets;
	uint64		seed;
	int			cpu_path;		/* gpuselect.test_cpu_path (cpu_test) */
	int			delay_ms;		/* gpuselect.test_service_delay */
	int			fault;			/* GS_SVC_FAULT_* */
	int			fail_device;	/* gpuselect.test_service_fail_device (-1: none) */
	int			split_keys;		/* gpuselect.test_service_split_keys (0: off) */
	uint64		nkeys;
	int			nranks;
	int			head;			/* first chunk, -1 = none */
	int			nchunks;
	int			io_chunks;
	int			key_chunks;
	TimestampTz submit_time;
	/* PAGES: the io area's bytes of gs_page_refs, how many, and the column;
	 * nkeys is then the tuples listed (the output chunks' room) */
	uint64		ref_bytes;
	uint32		npages;
	gs_page_column column;
	bool		pages_on_cpu;	/* gpuselect.test_ship_pages_cpu */

	/* response */
	int			status;			/* gs_status */
	char		message[192];
	double		queue_ms;
	double		copy_ms;
	double		select_ms;
	uint64		bytes_copied;
	uint64		out_keys;		/* PAGES: keys written into the key chunks */

	/* the backend whose scan holds chunks under this slot (pool lock) */
	PGPROC	   *scan_proc;
	int			scan_pid;

	/*
	 * Leases (service_scan.c): chunks parallel workers took on behalf of
	 * this slot's backend, their leader, that no state of the leader has
	 * adopted yet.  lease_gen (pool lock) goes up at each of the leader's
	 * sweeps (transaction end): a reference of an older generation is
	 * refused.
	 */
	pg_atomic_uint32 nleased;
	uint64		lease_gen;

	/*
	 * The pool's queue (service_pool_queue.c, pool lock): a backend that found
	 * too few free chunks for its job waits here for them; the smallest
	 * ticket is served first, and only it takes chunks (as they come free:
	 * wait_need is how many it still waits for).  0: not waiting.
	 */
	uint64		wait_ticket;
	int			wait_need;
} GsSvcJob;

typedef struct GsSvcChunk
{
	int			next;			/* next chunk of the same list (-1: end) */
	int			job;			/* owning job slot, -1 when free */
	bool		held;			/* held by a scan (see above), not by a job */
	bool		leased;			/* held, taken by a partial state for its
								 * leader, not adopted by a leader's state yet */
	int			holder_pid;		/* held: the backend that holds it */
	uint32		nkeys;			/* key chunk of a submitted job: its keys */
	uint64		lease_gen;		/* leased: the slot's lease_gen when taken */

	/*
	 * Prefetch (service_prefetch.c).  gen goes up whenever the chunk is
	 * taken for a scan and whenever it goes back to the free list; a scan
	 * that filled a held chunk, and will never write it again, sets sealed
	 * to the gen it holds the chunk under.  So sealed == gen means "these
	 * keys are final for as long as the chunk stays held": the service may
	 * copy them to a device while the scan goes on, and a job may read that
	 * copy instead of the chunk when its gen still matches.
	 */
	pg_atomic_uint32 gen;
	pg_atomic_uint32 sealed;
} GsSvcChunk;

/*
 * The service's devices (service_devices.c): one entry per device it
 * opened (CUDA) or simulates (cpu_test, gpuselect.service_test_devices),
 * each run by a lane thread (service_lanes.c).  Written by the service's
 * main thread only, reset at each service start; gpuselect_status() reads
 * them.  A device whose job hit a sticky error is FAILED for the rest of
 * this incarnation: no more jobs go to it.
 */
#define GS_SVC_MAX_DEVICES 16

typedef enum GsSvcDeviceState
{
	GS_DEV_UNUSED = 0,
	GS_DEV_OK,
	GS_DEV_FAILED
} GsSvcDeviceState;

typedef struct GsSvcDevice
{
	pg_atomic_uint32 state;		/* GsSvcDeviceState */
	pg_atomic_uint32 running;	/* jobs on its lane now: running and next (0..depth) */
	pg_atomic_uint64 running_keys;
	pg_atomic_uint64 served;
	pg_atomic_uint64 failed;
	pg_atomic_uint64 engine_bytes;	/* as GsSvcControl.device_* below, per device */
	pg_atomic_uint64 engine_peak;
	pg_atomic_uint64 used_bytes;
	pg_atomic_uint64 total_bytes;
	pg_atomic_uint64 lane_job_us;	/* its lane's time in jobs since the start */
	pg_atomic_uint64 lane_sample_us;	/* ... in memory samples (cudaMemGetInfo) */
	/* under GsSvcControl.lock */
	int			ordinal;		/* CUDA device number (cpu_test: the index) */
	char		name[96];
	char		reason[192];	/* why it failed */
} GsSvcDevice;

typedef struct GsSvcControl
{
	pg_atomic_uint32 state;		/* GsSvcState */
	pg_atomic_uint64 epoch;		/* + 1 at each service start */
	pg_atomic_uint64 heartbeat; /* TimestampTz of the service's last loop round */
	pg_atomic_uint64 served;
	pg_atomic_uint64 failed;
	pg_atomic_uint64 requeued;	/* jobs re-run after their device failed */
	pg_atomic_uint64 fallen_back;
	pg_atomic_uint64 split_jobs;	/* exact jobs streamed through the devices */
	pg_atomic_uint64 pages_on_device;	/* shipped pages a device extracted */
	pg_atomic_uint64 pages_on_cpu;	/* ... a lane's thread extracted */
	pg_atomic_uint64 canceled;
	pg_atomic_uint64 timed_out;
	pg_atomic_uint64 pool_exhausted;
	pg_atomic_uint64 pool_waits;	/* requests that queued for pool chunks */
	pg_atomic_uint64 pool_filled_waiting;	/* job chunks the first in line filled
											 * before it had them all */
	pg_atomic_uint64 restart_waits; /* requests a service restart caught, retried */
	pg_atomic_uint64 bytes_in_use;	/* job and held chunks */
	pg_atomic_uint64 scan_bytes;	/* held chunks */
	pg_atomic_uint64 scan_short;	/* pool chunks a scan wanted and did not get */
	pg_atomic_uint64 scan_keys_in_place;	/* keys jobs read where the scan wrote them */
	pg_atomic_uint64 scan_keys_copied;	/* keys copied into job chunks at the final call */
	pg_atomic_uint64 worker_keys_in_place;	/* ... of them written by partial states (leases) */
	pg_atomic_uint64 leases_swept;	/* leased chunks no state adopted, freed at xact end */
	pg_atomic_uint32 prefetch_pending;	/* a chunk was sealed, or a sealed one freed */
	pg_atomic_uint64 prefetch_bytes;	/* bytes copied to devices while scans went on */
	pg_atomic_uint64 prefetch_used_bytes;	/* ... that jobs read there instead of the pool */
	pg_atomic_uint64 prefetch_resident;	/* bytes of such copies on the devices now */
	pg_atomic_uint64 prefetch_limit;	/* the budget the service applies (0: none yet) */
	pg_atomic_uint64 device_bytes;	/* the service's device memory (engine's count) */
	pg_atomic_uint64 device_peak;	/* ... its highest during a job */
	pg_atomic_uint64 device_used;	/* the device's memory in use (all processes) */
	pg_atomic_uint64 device_total;

	LWLock	   *lock;			/* the free list; the fields below it */
	int			svc_pid;
	PGPROC	   *svc_proc;
	TimestampTz up_since;
	int			starts;
	char		device[128];
	char		reason[256];

	int			njobs;			/* nbackend_slots * (1 + GS_SVC_PAGE_SLOTS) */
	int			nbackend_slots; /* a backend's main slot is its proc number */
	int			nchunks;
	Size		chunk_bytes;
	int			free_head;
	int			nfree;
	uint64		next_ticket;	/* the pool's queue (GsSvcJob.wait_ticket) */
	int			nwaiting;		/* job slots in it now */

	int			ndevices;		/* entries of devices[] in use (this incarnation) */
	GsSvcDevice devices[GS_SVC_MAX_DEVICES];
} GsSvcControl;

/* set up by service_shmem.c's startup hook (inherited by every child) */
extern GsSvcControl *gs_svc_ctl;
extern GsSvcJob *gs_svc_jobs;
extern GsSvcChunk *gs_svc_chunks;
extern char *gs_svc_pool;

/* settings (service_shmem.c) */
extern int	gs_guc_service;		/* GsServiceMode */
extern int	gs_guc_key_pool_size;	/* MB */
extern int	gs_guc_key_pool_chunk_size; /* kB */
extern int	gs_guc_service_timeout; /* ms */
extern int	gs_guc_test_service_delay;	/* ms */
extern int	gs_guc_test_service_fault;
extern int	gs_guc_service_prefetch_size;	/* MB (1 GB); -1: the key pool's size; 0: off */
extern bool gs_guc_test_service_prefetch;
extern bool gs_guc_test_ship_pages_cpu;	/* shipped pages extracted on the CPU */	/* off: this session seals nothing */

/* _PG_init (gpuselect.c): settings always; the rest only when preloading */
extern void gs_service_define_gucs(void);
extern void gs_service_preload_init(void);

/* true in every process of a server that runs the service (backends route
 * GPU-bound groups to it; they never create a CUDA context themselves) */
extern bool gs_service_in_use(void);

/* pool (service_pool*.c): all-or-nothing allocation of n chunks for job
 * slot `job`; -1 when the pool has fewer free or a backend waits in the
 * pool's queue (first come, first served).  Freeing checks every index
 * and owner and never raises an ERROR. */
extern int	gs_pool_alloc(int n, int job);
/* the pool's queue: join it for n chunks (the caller holds no chunk);
 * once first in line, take what is free of them, appended after *tail
 * (the job's head when none yet), *left: how many it still waits for
 * (0: it has them all and left the queue), returns the first taken
 * (-1: none now); leave it
 * (taken, timeout, cancel, exit: never raises an ERROR).  _join_first:
 * join only if nobody waits (then the caller may keep the chunks it holds:
 * it is first in line, and nobody behind it holds any); false: not joined */
extern void gs_pool_queue_join(int job, int n);
extern bool gs_pool_queue_join_first(int job, int n);
extern int	gs_pool_queue_take(int job, int *tail, int *left);
extern void gs_pool_queue_leave(int job);
/* chunks went back to the free list outside the functions here (the
 * reaper's orphan scan): wake the first in the queue (pool lock held) */
extern void gs_pool_wake_queue(void);
extern void gs_pool_free_list(int head, int job);
/* pool memory this backend is about to write mapped in one call
 * (gpuselect.prefault_pool_chunks); returns mem */
extern char *gs_pool_prefault(char *mem, Size bytes);
/* one held chunk for this backend's scan under job slot `job` (its
 * scan owner becomes this process); -1 when the pool is down to its
 * reserve.  Freeing checks index, slot and pid and never raises an ERROR. */
extern int	gs_pool_take_held(int job);
extern void gs_pool_free_held(const int *idx, int n, int job);
/* every chunk held by (job, pid): exit cleanup */
extern void gs_pool_free_all_held(int job, int pid);
/* append held chunks idx[0..n) (with their key counts) after chunk `tail`
 * of job j's list; false when one is not held by this process */
extern bool gs_pool_link_held(int tail, const int *idx, const uint32 *nkeys, int n, int job);
/* the reaper: held chunks whose slot's scan owner is gone (service) */
extern int	gs_pool_reap_held(void);

/* copy len bytes at byte offset off of a job's chunk list to/from buf;
 * false when the list is shorter or an index/owner check fails */
extern bool gs_pool_copy(int head, int job, Size off, void *buf, Size len, bool to_pool);
/* the chunk's memory after the index and owner checks, else NULL */
extern char *gs_pool_chunk(int idx, int job);

/* bytes of a job's io area per rank: the rank, then the answer */
#define GS_SVC_IO_BYTES_PER_RANK (sizeof(uint64) + sizeof(gs_approx_pick))

/*
 * Leases (service_scan.c has the rules): chunk for a partial state of this
 * backend or of its parallel workers, held for the leader (job slot `job`,
 * whose scan owner must be `leader` with its current pid); -1 when the
 * leader has not declared itself or the pool is down to its reserve.
 */
extern int	gs_pool_take_lease(int job, PGPROC *leader, uint64 *gen);
/* leader: the chunk of a deserialized reference, after checking it is
 * leased to this process under `job` in generation gen; NULL if not */
extern char *gs_pool_lease_chunk(int idx, int job, uint64 gen);
/* leader: a leased chunk becomes an ordinary held chunk (a state's) */
extern bool gs_pool_adopt_lease(int idx, int job, uint64 gen);
/* leader, at transaction end: free this process's leased chunks under
 * `job`, a new lease generation; the number freed */
extern int	gs_pool_free_leases(int job);
/* leader: this process is job's scan owner (workers may lease for it) */
extern void gs_pool_declare_scan_owner(int job);

/* prefetch: held chunk idx is full and will not be written again while
 * held (see GsSvcChunk); wakes the service.  Never raises an ERROR. */
extern void gs_pool_seal(int idx);
/* the prefetch budget in bytes (0: off) */
extern uint64 gs_service_prefetch_bytes(void);

/* prefetch, the service's main thread (service_prefetch.c) */
extern void gs_prefetch_start(void);
extern void gs_prefetch_round(void);
extern int	gs_prefetch_device(int slot);

/* a PAGES job on the main thread (service_pages.c): checked and described
 * for a lane (its gs_lane_work, service_lanes.h), then the lane's keys into
 * the job's chunks */
struct gs_lane_work;
extern bool gs_svc_pages_prepare(int j, GsSvcJob *job, struct gs_lane_work *w, gs_error *err);
extern bool gs_svc_pages_store(int j, GsSvcJob *job, const struct gs_lane_work *w,
							   gs_error *err);

/* the service's main (service_main.c), named in the worker's registration */
extern PGDLLEXPORT void gs_service_main(Datum arg);

/* this backend's slot, and its exit cleanup (registered once);
 * service_slot.c */
extern int	gs_svc_my_slot(void);
/*
 * Page shipping keeps up to GS_SVC_PAGE_SLOTS PAGES jobs of one scan in
 * flight (bulk_ship.c), each in a slot of its own after the backends' main
 * slots: backend b's k-th is nbackend_slots + b * GS_SVC_PAGE_SLOTS + k.
 * -1: this process has none.
 */
#define GS_SVC_PAGE_SLOTS 2
extern int	gs_svc_page_slot(int k);
extern void gs_svc_register_exit(void);
/* wake the service's main thread; give up job slot j (never ERRORs) */
extern void gs_svc_wake_service(void);
extern void gs_svc_abandon(int j);

/* how the module was built (GS_HAVE_CUDA), and, when gs_service_in_use()
 * is false, "there is no GPU service: <why>" (palloc'd; service_shmem.c) */
extern bool gs_service_cuda_built(void);
extern const char *gs_service_off_reason(void);

/* gpuselect_status() fields, cuda_build and gpu_available among them
 * (service_shmem.c) */
extern void gs_service_status(void (*emit) (const char *name, const char *value, void *arg),
							  void *arg);

extern const char *gs_svc_state_name(uint32 state);

/* the devices (service_devices.c) */
extern int	gs_guc_test_service_fail_device;
extern int	gs_guc_test_service_split_keys;
/* the test hook's split jobs: 8 MB a device, so the narrowing takes levels */
#define GS_SVC_TEST_SPLIT_BUDGET ((size_t) 8 << 20)
#define GS_SVC_MAX_LANE_DEPTH 2	/* jobs a device may hold: running and next */
extern int	gs_guc_service_lane_depth;	/* 1 .. GS_SVC_MAX_LANE_DEPTH */
extern void gs_svc_devices_define_gucs(bool preload);
extern void gs_svc_devices_shmem_init(GsSvcControl *c);
extern void gs_svc_devices_status(void (*emit) (const char *name, const char *value, void *arg),
								  void *arg);
/* the service's side: which devices to open (CUDA ordinals; cpu_test: 0..n-1) */
extern int	gs_svc_devices_wanted(int mode, int *ordinals, int max, char *why, Size whylen);
extern void gs_svc_device_set(int k, int ordinal, const char *name, bool ok, const char *reason);
extern int	gs_svc_device_pick(int pinned, int preferred);
extern bool gs_svc_device_ok(int k);
extern bool gs_svc_device_idle(int k);
extern bool gs_svc_device_free(int k);
extern void gs_svc_device_start(int k, uint64 nkeys);
extern void gs_svc_device_hold(int k, bool on);
extern void gs_svc_device_end(int k, uint64 nkeys, int outcome);
extern void gs_svc_device_fail(int k, const char *reason);
extern int	gs_svc_devices_ok(void);

#endif							/* GS_SERVICE_H */
