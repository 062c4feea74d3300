/*
 * gs_cuda_test_hooks.cu — the CUDA engine's test hooks: fault injection
 * (gs_cuda_inject_launch_failures, in gs_cuda.h) and the hooks not in
 * gs_cuda.h, declared by the test harnesses that call them
 * (test/gpu/gs_test.cu): the exact driver's paths and thresholds forced,
 * what the last call did, and the layouts an engine plans with.
 */
#include <stdio.h>
#include <cuda_runtime.h>

#include "gs_cuda_internal.h"

/* gs_cuda_test_plan's words on the approximate count at the most buckets */
template <typename K>
static size_t
gs_plan_count(gs_cuda_engine *e, char *buf, size_t len)
{
	const gs_count_launch<K> c = gs_count_kernel<K>(e, true, GS_APPROX_BUCKETS_MAX);

	if (c.fn == NULL)
		return (size_t) snprintf(buf, len, "; approximate %d buckets: none", GS_APPROX_BUCKETS_MAX);
	return (size_t) snprintf(buf, len, "; approximate %d buckets: %d pass%s, %d cells%s", GS_APPROX_BUCKETS_MAX,
							 c.passes, c.passes == 1 ? "" : "es", c.cells_cap,
							 c.gspl ? ", splitters in global memory" : "");
}

/* ------------------------------------------------------------ C API */

extern "C" {

/* test hook (not in gs_cuda.h): multiselect finishing sort, 0 by the cost
 * model, 1 always after the first level, 2 never */
void		gs_cuda_test_sort_finish(gs_cuda_engine *e, int mode);

void
gs_cuda_test_sort_finish(gs_cuda_engine *e, int mode)
{
	if (e)
		e->sort_finish = mode;
}

/* test hook (not in gs_cuda.h): exact mode's path, GS_CPU_PATH_AUTO (the
 * rule, gs_sort_path_policy), _SELECT or _SORT (the whole input sorted) */
void		gs_cuda_test_exact_path(gs_cuda_engine *e, int path);

void
gs_cuda_test_exact_path(gs_cuda_engine *e, int path)
{
	if (e)
		e->exact_path = path;
}

/* test hook (not in gs_cuda.h): did the last exact call sort the whole input? */
int			gs_cuda_test_last_exact_sorted(gs_cuda_engine *e);

int
gs_cuda_test_last_exact_sorted(gs_cuda_engine *e)
{
	return e ? e->last_exact_sorted : 0;
}

/* test hook (not in gs_cuda.h): single-rank finishing-sort threshold in
 * keys (0: never sort; negative: the default) */
void		gs_cuda_test_focus_sort(gs_cuda_engine *e, long long below);

void
gs_cuda_test_focus_sort(gs_cuda_engine *e, long long below)
{
	if (e)
		e->focus_sort = below < 0 ? -1 : below;
}

/* test hook (not in gs_cuda.h): single-rank splitter distance in sigmas
 * (<= 0: the default) */
void		gs_cuda_test_focus_z(gs_cuda_engine *e, double z);

void
gs_cuda_test_focus_z(gs_cuda_engine *e, double z)
{
	if (e)
		e->focus_z = z > 0 ? z : gs_host_policy::focus_z;
}

/* test hook (not in gs_cuda.h): the layouts e plans with under its limits,
 * one line (test/gpu/gs_test.cu prints it: arch_limits.sh's logs say which
 * paths each run took) */
void		gs_cuda_test_plan(gs_cuda_engine *e, char *buf, size_t len);

void
gs_cuda_test_plan(gs_cuda_engine *e, char *buf, size_t len)
{
	size_t		o = 0;

	if (!e || !buf || len == 0)
		return;
	buf[0] = '\0';
	for (int i = 0; i < 2 && o < len; i++)
	{
		const int	kb = i ? 8 : 4;
		const int	lay = e->sample_layout[i];
		const int	bits = lay == GS_SAMPLE_SMALL ? gs_sample_small_policy::radix_bits : gs_sample_policy::radix_bits;

		if (lay == GS_SAMPLE_NONE)
			o += (size_t) snprintf(buf + o, len - o, "%s%d-byte exact: none", i ? "; " : "", kb);
		else
			o += (size_t) snprintf(buf + o, len - o,
								   "%s%d-byte exact: sample %d keys, %d-bit digits, up to %d buckets, wide sample %s",
								   i ? "; " : "", kb, gs_exact_sample_keys(e, (unsigned) kb), bits, e->mopen_max[i],
								   e->wide_ok[i] ? "yes" : "no");
		if (o < len)
			o += kb == 4 ? gs_plan_count<uint32_t>(e, buf + o, len - o) : gs_plan_count<uint64_t>(e, buf + o, len - o);
	}
	if (o < len)
		snprintf(buf + o, len - o, "; 4-byte approximate sample merged from %d runs", e->approx_runs_max);
}

/* test hook (not in gs_cuda.h): key bits the last finishing sort sorted on */
int			gs_cuda_test_last_sort_bits(gs_cuda_engine *e);

int
gs_cuda_test_last_sort_bits(gs_cuda_engine *e)
{
	return e ? e->last_sort_bits : 0;
}

void
gs_cuda_inject_launch_failures(gs_cuda_engine *e, int count)
{
	if (e)
		e->inject = count > 0 ? count : 0;
}

}								/* extern "C" */
