/*
 * service_cuda.c — the GPU service's CUDA device backend (CUDA builds only;
 * service_cuda_none.c otherwise).  Plain C over kernels/cuda/gs_cuda.h: no
 * PostgreSQL header, no ereport, so no longjmp ever crosses a CUDA frame.
 *
 * One engine per device, opened when the service starts (the whole key
 * pool is page-locked once then, through the first device); a job's keys are copied from their pool
 * chunks into one device buffer (asynchronous copies on the engine's copy
 * stream, one sync), 2-byte keys are widened to 4 on the device (the
 * engine selects on 4- and 8-byte keys), the engine selects, and the
 * buffers are freed.  Keys of pool chunks that were prefetched (copied
 * while the scan went on: service_prefetch.c) are copied from that device
 * copy instead, device to device.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs_cuda.h"
#include "service/service_cuda.h"

struct gs_svc_cuda_dev
{
	gs_cuda_engine *engine;
	void	   *pool_locked;	/* the pool, when this device's engine locked it */
	uint64_t	device_peak;	/* the engine's device bytes, highest seen in a job */
	bool		oom_armed;		/* gs_svc_cuda_arm_fault(OOM) for the next job */
	size_t		total_bytes;	/* the device's memory (at open) */
	void	   *pages_locked;	/* shared buffers, when this device's engine mapped them */
	uint64_t	pages_dev_base; /* their device address here (0: not yet looked up) */
};

/*
 * Shared buffers, page-locked and mapped for every device once, by the
 * first lane that extracts shipped pages (not at the service's start: a
 * server that never ships pages should not pin its whole buffer pool).
 * Lanes race for it, hence the lock; a failure is remembered, and the
 * lanes then extract on the CPU.
 */
static pthread_mutex_t pages_lock = PTHREAD_MUTEX_INITIALIZER;
static int	pages_state = 0;	/* 0: not tried, 1: mapped, -1: failed */
static char pages_why[128];

/* 4 kB pages: the range registered, rounded out to whole pages */
#define GS_SVC_HOST_PAGE ((uintptr_t) 4096)

static bool
map_shared_buffers(gs_svc_cuda_dev *d, void *base, size_t bytes, gs_error *err)
{
	uintptr_t	lo = (uintptr_t) base & ~(GS_SVC_HOST_PAGE - 1);
	uintptr_t	hi = ((uintptr_t) base + bytes + GS_SVC_HOST_PAGE - 1) & ~(GS_SVC_HOST_PAGE - 1);
	uint64_t	dlo = 0;
	gs_status	s = GS_OK;

	pthread_mutex_lock(&pages_lock);
	if (pages_state == 0)
	{
		s = gs_cuda_host_register_mapped(d->engine, (void *) lo, hi - lo, err);
		pages_state = s == GS_OK ? 1 : -1;
		if (s == GS_OK)
			d->pages_locked = (void *) lo;
		else
			snprintf(pages_why, sizeof(pages_why), "%s", err->message);
	}
	pthread_mutex_unlock(&pages_lock);
	if (pages_state != 1)
	{
		err->status = GS_ERR_NO_DEVICE;
		snprintf(err->message, sizeof(err->message),
				 "shared buffers could not be mapped for the device: %s", pages_why);
		return false;
	}
	if (gs_cuda_host_device_address(d->engine, (void *) lo, &dlo, err) != GS_OK)
		return false;
	d->pages_dev_base = dlo + ((uintptr_t) base - lo);
	return true;
}

/* sample the engine's device memory while a job holds its buffers */
static void
note_device_peak(gs_svc_cuda_dev *d)
{
	size_t		dev = 0,
				host = 0;

	gs_cuda_memory_in_use(d->engine, &dev, &host);
	if (dev > d->device_peak)
		d->device_peak = dev;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

gs_status
gs_svc_cuda_device_count(int *count, gs_error *err)
{
	return gs_cuda_device_count(count, err);
}

gs_status
gs_svc_cuda_open(int ordinal, void *pool, size_t pool_bytes, gs_svc_cuda_dev **out,
				 char *name, size_t namelen, gs_error *err)
{
	gs_status	s;
	size_t		free_b = 0,
				total_b = 0;
	gs_error	reg_err;
	gs_svc_cuda_dev *d;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
	{
		err->status = GS_ERR_NOMEM;
		snprintf(err->message, sizeof(err->message), "out of host memory");
		return GS_ERR_NOMEM;
	}
	/*
	 * gs_cuda_open makes the device current in this thread: the info call
	 * uses it.  GS_DEVICE_LIMITS in the server's environment (a test
	 * setting: sm_75, sm_80, sm_86, sm_89) plans with a smaller card's
	 * limits (kernels/cuda/gs_cuda.h, docs/building.md).
	 */
	s = gs_cuda_open_limited(ordinal, getenv("GS_DEVICE_LIMITS"), &d->engine, err);
	if (s == GS_OK)
		s = gs_cuda_device_info(d->engine, name, namelen, &free_b, &total_b, err);
	d->total_bytes = total_b;
	if (s != GS_OK)
	{
		if (d->engine)
			gs_cuda_close(d->engine);
		free(d);
		return s;
	}
	*out = d;
	/* an unlocked pool still works (staged copies), only slower: say so */
	memset(&reg_err, 0, sizeof(reg_err));
	if (pool != NULL && pool_bytes > 0 &&
		gs_cuda_host_register(d->engine, pool, pool_bytes, &reg_err) == GS_OK)
		d->pool_locked = pool;
	else if (pool != NULL && pool_bytes > 0)
	{
		size_t		len = strlen(name);

		if (len < namelen)
			snprintf(name + len, namelen - len, " (key pool not page-locked: %s)", reg_err.message);
	}
	return GS_OK;
}

void
gs_svc_cuda_arm_fault(gs_svc_cuda_dev *d, gs_svc_cuda_fault kind)
{
	if (d == NULL || d->engine == NULL)
		return;
	if (kind == GS_SVC_CUDA_FAULT_LAUNCH)
		gs_cuda_inject_launch_failures(d->engine, 1);
	else if (kind == GS_SVC_CUDA_FAULT_OOM)
		d->oom_armed = true;	/* the cap needs the job's size: set in the select */
}

/* an armed OOM: room for what the engine holds and the job's keys, nothing more */
static void
apply_oom_cap(gs_svc_cuda_dev *d, size_t key_bytes_total)
{
	size_t		dev = 0,
				host = 0;

	gs_cuda_memory_in_use(d->engine, &dev, &host);
	gs_cuda_set_memory_cap(d->engine, dev + key_bytes_total);
}

static void
disarm_faults(gs_svc_cuda_dev *d)
{
	gs_cuda_inject_launch_failures(d->engine, 0);
	if (d->oom_armed)
		gs_cuda_set_memory_cap(d->engine, 0);
	d->oom_armed = false;
}

static void
widen_mask(unsigned key_bytes, size_t nranks, uint64_t *out_keys, gs_approx_pick *picks)
{
	/* the engine returns keys widened to 64 bits: 2-byte keys went as 4 */
	if (key_bytes != 2)
		return;
	for (size_t i = 0; i < nranks; i++)
	{
		if (picks)
			picks[i].key &= 0xFFFF;
		else
			out_keys[i] &= 0xFFFF;
	}
}

gs_status
gs_svc_cuda_bind(gs_svc_cuda_dev *dev, gs_error *err)
{
	if (dev == NULL)
	{
		err->status = GS_ERR_NO_DEVICE;
		snprintf(err->message, sizeof(err->message), "the CUDA engine is not open");
		return GS_ERR_NO_DEVICE;
	}
	return gs_cuda_make_current(dev->engine, err);
}

gs_status
gs_svc_cuda_prefetch(gs_svc_cuda_dev *dev, const void *host, size_t bytes, void **d_copy,
					 gs_error *err)
{
	gs_status	s;

	*d_copy = NULL;
	if (dev == NULL)
	{
		err->status = GS_ERR_NO_DEVICE;
		snprintf(err->message, sizeof(err->message), "the CUDA engine is not open");
		return GS_ERR_NO_DEVICE;
	}
	s = gs_cuda_alloc(dev->engine, bytes, d_copy, err);
	if (s == GS_OK)
		s = gs_cuda_copy_to_device_async(dev->engine, *d_copy, host, bytes, err);
	if (s == GS_OK)
		s = gs_cuda_sync(dev->engine, err);
	if (s != GS_OK && *d_copy != NULL)
	{
		gs_cuda_free(dev->engine, *d_copy);
		*d_copy = NULL;
	}
	return s;
}

void
gs_svc_cuda_unfetch(gs_svc_cuda_dev *dev, void *d_copy)
{
	if (dev != NULL && d_copy != NULL)
		gs_cuda_free(dev->engine, d_copy);
}

gs_status
gs_svc_cuda_select(gs_svc_cuda_dev *dev, const gs_input *in, const void *const *seg_dev,
				   const uint64_t *ranks, size_t nranks, uint64_t *out_keys,
				   gs_approx_pick *picks, const gs_options *opt, double *copy_ms,
				   uint64_t *bytes_copied, bool *sticky, gs_error *err)
{
	gs_cuda_engine *svc_engine = dev ? dev->engine : NULL;
	size_t		n = gs_input_count(in);
	unsigned	kb = in->key_bytes;
	char	   *d_raw = NULL;
	void	   *d_keys = NULL;
	unsigned	sel_kb = kb == 2 ? 4 : kb;
	size_t		off = 0,
				host_bytes = 0;
	double		t0 = now_ms();
	gs_status	s;

	*sticky = false;
	*copy_ms = 0;
	*bytes_copied = 0;
	if (svc_engine == NULL)
	{
		err->status = GS_ERR_NO_DEVICE;
		snprintf(err->message, sizeof(err->message), "the CUDA engine is not open");
		return GS_ERR_NO_DEVICE;
	}

	if (dev->oom_armed)
		apply_oom_cap(dev, n * kb);
	/* the job's buffers from the stream-ordered pool: no cudaMalloc/cudaFree a job */
	s = gs_cuda_alloc_async(svc_engine, n * kb, (void **) &d_raw, err);
	for (size_t i = 0; s == GS_OK && i < in->nsegs; i++)
	{
		size_t		bytes = in->segs[i].n * kb;

		if (seg_dev != NULL && seg_dev[i] != NULL)
			s = gs_cuda_copy_device_async(svc_engine, d_raw + off, seg_dev[i], bytes, err);
		else
		{
			s = gs_cuda_copy_to_device_async(svc_engine, d_raw + off, in->segs[i].keys, bytes, err);
			host_bytes += bytes;
		}
		off += bytes;
	}
	if (s == GS_OK)
		s = gs_cuda_sync(svc_engine, err);
	d_keys = d_raw;
	if (s == GS_OK && kb == 2)
	{
		void	   *d_wide = NULL;

		s = gs_cuda_alloc_async(svc_engine, n * 4, &d_wide, err);
		if (s == GS_OK)
			s = gs_cuda_widen16(svc_engine, d_raw, d_wide, n, err);
		if (s == GS_OK)
			s = gs_cuda_sync(svc_engine, err);
		gs_cuda_free_async(svc_engine, d_raw);
		d_raw = NULL;
		d_keys = d_wide;
	}
	*copy_ms = now_ms() - t0;
	*bytes_copied = host_bytes;

	if (s == GS_OK)
	{
		note_device_peak(dev);
		if (picks)
			s = gs_cuda_select_approx(svc_engine, d_keys, n, sel_kb, ranks, nranks, opt, picks, err);
		else
			s = gs_cuda_select(svc_engine, d_keys, n, sel_kb, ranks, nranks, out_keys, opt, err);
	}
	if (d_keys)
		gs_cuda_free_async(svc_engine, d_keys);
	disarm_faults(dev);

	if (s == GS_OK)
		widen_mask(kb, nranks, out_keys, picks);
	else if (s == GS_ERR_DEVICE)
	{
		gs_error	sync_err;

		/* a failure the context cannot recover from: the device goes out of rotation */
		memset(&sync_err, 0, sizeof(sync_err));
		if (gs_cuda_sync(svc_engine, &sync_err) != GS_OK)
			*sticky = true;
	}
	err->status = s;
	return s;
}

bool
gs_svc_cuda_fits(gs_svc_cuda_dev *dev, size_t nkeys, unsigned key_bytes, size_t nranks)
{
	unsigned	sel_kb = key_bytes == 2 ? 4 : key_bytes;
	size_t		need,
				free_b = 0,
				total_b = 0;
	gs_error	err;

	if (dev == NULL)
		return true;
	need = nkeys * key_bytes + (key_bytes == 2 ? nkeys * sel_kb : 0) +
		gs_cuda_scratch_bytes(dev->engine, nkeys, sel_kb, nranks);
	if (need <= dev->total_bytes / 2)
		return true;
	memset(&err, 0, sizeof(err));
	if (gs_cuda_device_info(dev->engine, NULL, 0, &free_b, &total_b, &err) != GS_OK)
		return true;			/* let the allocation decide */
	return need <= free_b;
}

gs_status
gs_svc_cuda_select_split(gs_svc_cuda_dev *const *devs, int ndevs, const gs_input *in,
						 const uint64_t *ranks, size_t nranks, uint64_t *out_keys, size_t budget,
						 const gs_options *opt, double *copy_ms, uint64_t *bytes_copied, bool *sticky,
						 gs_error *err)
{
	gs_cuda_engine *eng[16];
	gs_split_stats st;
	double		t0 = now_ms();
	gs_status	s;

	*sticky = false;
	*copy_ms = 0;
	*bytes_copied = 0;
	if (ndevs < 1 || ndevs > 16 || devs[0] == NULL)
	{
		err->status = GS_ERR_NO_DEVICE;
		snprintf(err->message, sizeof(err->message), "the CUDA engine is not open");
		return GS_ERR_NO_DEVICE;
	}
	for (int i = 0; i < ndevs; i++)
		eng[i] = devs[i]->engine;
	memset(&st, 0, sizeof(st));
	s = gs_cuda_select_split(eng, ndevs, in, ranks, nranks, out_keys, budget, opt, &st, err);
	/* the copies are the passes: the whole call is copy time in the job's row */
	*copy_ms = now_ms() - t0;
	*bytes_copied = st.bytes_read;
	note_device_peak(devs[0]);
	if (s == GS_OK)
	{
		if (in->key_bytes == 2)
			for (size_t i = 0; i < nranks; i++)
				out_keys[i] &= 0xFFFF;
	}
	else if (s == GS_ERR_DEVICE)
	{
		gs_error	sync_err;

		memset(&sync_err, 0, sizeof(sync_err));
		if (gs_cuda_make_current(devs[0]->engine, &sync_err) != GS_OK ||
			gs_cuda_sync(devs[0]->engine, &sync_err) != GS_OK)
			*sticky = true;
	}
	{
		gs_error	cur_err;

		/* the lane's own device current again for its next job */
		(void) gs_cuda_make_current(devs[0]->engine, &cur_err);
	}
	err->status = s;
	return s;
}

void
gs_svc_cuda_memory(gs_svc_cuda_dev *dev, uint64_t *engine_bytes, uint64_t *engine_peak,
				   uint64_t *device_used, uint64_t *device_total)
{
	size_t		free_b = 0,
				total_b = 0,
				dev_b = 0,
				host_b = 0;
	gs_error	err;

	*engine_bytes = *engine_peak = *device_used = *device_total = 0;
	if (dev == NULL)
		return;
	gs_cuda_memory_in_use(dev->engine, &dev_b, &host_b);
	*engine_bytes = dev_b;
	*engine_peak = dev->device_peak;
	memset(&err, 0, sizeof(err));
	if (gs_cuda_device_info(dev->engine, NULL, 0, &free_b, &total_b, &err) == GS_OK)
	{
		*device_used = total_b - free_b;
		*device_total = total_b;
	}
}

gs_status
gs_svc_cuda_extract_pages(gs_svc_cuda_dev *dev, void *base, size_t base_bytes,
						  const uint64_t *page_off, size_t npages, size_t page_bytes,
						  const uint32_t *items, size_t n, const gs_page_column *col,
						  void *const *segs, const size_t *seg_keys, size_t nsegs,
						  size_t *out_n, bool *sticky, gs_error *err)
{
	uint64_t   *addrs;
	gs_status	s;

	*sticky = false;
	*out_n = 0;
	if (dev == NULL)
	{
		err->status = GS_ERR_NO_DEVICE;
		snprintf(err->message, sizeof(err->message), "the CUDA engine is not open");
		return GS_ERR_NO_DEVICE;
	}
	if (dev->pages_dev_base == 0 && !map_shared_buffers(dev, base, base_bytes, err))
		return GS_ERR_NO_DEVICE;
	if ((addrs = malloc(sizeof(uint64_t) * (npages ? npages : 1))) == NULL)
	{
		err->status = GS_ERR_NOMEM;
		snprintf(err->message, sizeof(err->message), "out of host memory");
		return GS_ERR_NOMEM;
	}
	for (size_t i = 0; i < npages; i++)
		addrs[i] = dev->pages_dev_base + page_off[i];
	s = gs_cuda_extract_mapped_pages(dev->engine, addrs, npages, page_bytes, items, n, col,
									 segs, seg_keys, nsegs, out_n, err);
	free(addrs);
	if (s == GS_ERR_DEVICE)
	{
		gs_error	sync_err;

		memset(&sync_err, 0, sizeof(sync_err));
		if (gs_cuda_sync(dev->engine, &sync_err) != GS_OK)
			*sticky = true;
	}
	return s;
}

void
gs_svc_cuda_close(gs_svc_cuda_dev *dev)
{
	if (dev == NULL)
		return;
	if (dev->pages_locked)
		gs_cuda_host_unregister(dev->engine, dev->pages_locked);
	if (dev->pool_locked)
		gs_cuda_host_unregister(dev->engine, dev->pool_locked);
	gs_cuda_close(dev->engine);
	free(dev);
}
