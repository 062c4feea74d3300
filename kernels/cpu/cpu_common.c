/*
 * cpu_common.c — helpers both entry points of the CPU engine share
 * (gs_cpu_select in cpu_exact.c, gs_cpu_select_approx in cpu_approx.c):
 * error reporting, the argument checks, the key sample drawn by global
 * position (the approximate mode's draw, which the CUDA engine repeats; the
 * exact mode brackets its first level with one), and the introsort that
 * finishes small slices and sorts the samples.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* ---- errors ---- */

gs_status
cpu_set_err(gs_error *err, gs_status st, const char *msg)
{
	if (err)
	{
		err->status = st;
		snprintf(err->message, sizeof err->message, "%s", msg);
	}
	return st;
}

/* the arguments of either entry point; *n_out = the number of keys */
gs_status
cpu_check_input(const gs_input *in, size_t nranks, const uint64_t *ranks, const void *out,
				gs_error *err, size_t *n_out)
{
	size_t		s;
	size_t		n;

	if (!in || (in->nsegs > 0 && !in->segs))
		return cpu_set_err(err, GS_ERR_INVALID, "invalid input: no segment list");
	if (in->key_bytes != 2 && in->key_bytes != 4 && in->key_bytes != 8)
		return cpu_set_err(err, GS_ERR_INVALID, "invalid key width (must be 2, 4 or 8 bytes)");
	for (s = 0; s < in->nsegs; s++)
		if (in->segs[s].n > 0 && !in->segs[s].keys)
			return cpu_set_err(err, GS_ERR_INVALID, "invalid input: segment without keys");
	if (nranks > 0 && (!ranks || !out))
		return cpu_set_err(err, GS_ERR_INVALID, "invalid arguments: NULL ranks or output");
	n = gs_input_count(in);
	for (s = 0; s < nranks; s++)
		if (ranks[s] >= n)
		{
			char		msg[128];

			snprintf(msg, sizeof msg, "rank %llu out of range for %llu keys",
					 (unsigned long long) ranks[s], (unsigned long long) n);
			return cpu_set_err(err, GS_ERR_INVALID, msg);
		}
	*n_out = n;
	return GS_OK;
}

/* ---- the key sample ---- */

/* out[i] = key at global position splitmix64(seed + i) % n, i < ns */
int
cpu_sample_keys(const gs_input *in, uint64_t n, size_t ns, uint64_t seed, uint64_t *out)
{
	uint64_t   *segstart = malloc((in->nsegs + 1) * sizeof(uint64_t));
	size_t		i,
				s;

	if (!segstart)
		return 0;
	segstart[0] = 0;
	for (s = 0; s < in->nsegs; s++)
		segstart[s + 1] = segstart[s] + in->segs[s].n;
	for (i = 0; i < ns; i++)
	{
		uint64_t	p = gs_splitmix64(seed + (uint64_t) i) % n;
		size_t		lo = 0,
					hi = in->nsegs;

		/* last segment with segstart[seg] <= p; it is not empty */
		while (hi - lo > 1)
		{
			size_t		mid = (lo + hi) / 2;

			if (segstart[mid] <= p)
				lo = mid;
			else
				hi = mid;
		}
		out[i] = load_key(in->segs[lo].keys, in->key_bytes, (size_t) (p - segstart[lo]));
	}
	free(segstart);
	return 1;
}

/* ---- introsort on uint64 (small scratch slices, the samples) ---- */

static void
insertion_sort_u64(uint64_t *a, size_t n)
{
	size_t		i;

	for (i = 1; i < n; i++)
	{
		uint64_t	v = a[i];
		size_t		j = i;

		while (j > 0 && a[j - 1] > v)
		{
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

static void
sift_down_u64(uint64_t *a, size_t start, size_t n)
{
	size_t		root = start;

	for (;;)
	{
		size_t		child = 2 * root + 1;
		uint64_t	t;

		if (child >= n)
			break;
		if (child + 1 < n && a[child] < a[child + 1])
			child++;
		if (a[root] >= a[child])
			break;
		t = a[root];
		a[root] = a[child];
		a[child] = t;
		root = child;
	}
}

static void
heap_sort_u64(uint64_t *a, size_t n)
{
	size_t		i;

	if (n < 2)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down_u64(a, i, n);
	for (i = n - 1; i > 0; i--)
	{
		uint64_t	t = a[0];

		a[0] = a[i];
		a[i] = t;
		sift_down_u64(a, 0, i);
	}
}

static void
intro_sort_u64(uint64_t *a, size_t n, unsigned depth)
{
	while (n > 24)
	{
		uint64_t	x,
					y,
					z,
					p;
		size_t		i,
					j;

		if (depth == 0)
		{
			heap_sort_u64(a, n);
			return;
		}
		depth--;
		x = a[0];
		y = a[n / 2];
		z = a[n - 1];
		p = (x < y) ? ((y < z) ? y : (x < z ? z : x)) : ((x < z) ? x : (y < z ? z : y));
		/* Hoare partition */
		i = 0;
		j = n - 1;
		for (;;)
		{
			uint64_t	t;

			while (a[i] < p)
				i++;
			while (a[j] > p)
				j--;
			if (i >= j)
				break;
			t = a[i];
			a[i] = a[j];
			a[j] = t;
			i++;
			j--;
		}
		/* [0, j] <= p <= [j+1, n) */
		if (j + 1 < n - j - 1)
		{
			intro_sort_u64(a, j + 1, depth);
			a += j + 1;
			n -= j + 1;
		}
		else
		{
			intro_sort_u64(a + j + 1, n - j - 1, depth);
			n = j + 1;
		}
	}
	insertion_sort_u64(a, n);
}

void
cpu_sort_u64(uint64_t *a, size_t n)
{
	if (n > 1)
		intro_sort_u64(a, n, 2 * (floor_log2(n) + 1));
}
