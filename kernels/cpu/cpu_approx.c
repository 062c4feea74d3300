/*
 * cpu_approx.c — approximate multiselect, gs_cpu_select_approx: one level of
 * SampleSelect.
 *
 *   B = approx_buckets (default 1024), n = number of keys,
 *   sample size  s = min(GS_APPROX_OVERSAMPLE * B, n)  (32 * B),
 *   sample i (0 <= i < s) is the key at global position
 *                    gs_splitmix64(seed + i) % n
 *   (global position = index into the concatenation of the segments;
 *   gs_splitmix64 is the contract's, gs_engine.h; the draw: cpu_common.c),
 *   the sample is sorted and the splitters are the sample keys at positions
 *   floor(j * s / B) for j = 1 .. B-1, deduplicated.
 *
 * One pass over the input (cpu_count.c) counts for every distinct splitter v
 * the keys < v and == v, and finds the input's min and max with their
 * counts.  Each candidate (min, splitters, max) then has an exact rank range
 * [less, less + equal - 1]; a wanted rank gets the candidate whose range is
 * nearest (distance 0 inside it; ties go to the lower key).  The CUDA engine
 * uses the same sample, so both give the same answers for a seed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

typedef struct cand
{
	uint64_t	key,
				lo,
				hi;
} cand;

/*
 * The sample of min(32B, n) keys, sorted, and its distinct splitters at
 * positions floor(i * nsamp / B), i = 1 .. B-1: *splp (malloc'd, B slots),
 * *nsp of them.
 */
static gs_status
approx_splitters(const gs_input *in, size_t n, unsigned B, uint64_t seed,
				 uint64_t **splp, size_t *nsp, gs_error *err)
{
	size_t		nsamp,
				ns,
				i;
	uint64_t   *samp,
			   *spl;

	/* sample: position splitmix64(seed + i) % n, i < s = min(32B, n) */
	nsamp = (size_t) GS_APPROX_OVERSAMPLE * B;
	if (nsamp > n)
		nsamp = n;
	samp = malloc(nsamp * sizeof(uint64_t));
	spl = malloc(B * sizeof(uint64_t));
	*splp = spl;
	if (!samp || !spl || !cpu_sample_keys(in, n, nsamp, seed, samp))
	{
		free(samp);
		return NOMEM(err);
	}
	cpu_sort_u64(samp, nsamp);
	ns = 0;
	for (i = 1; i < B; i++)
	{
		uint64_t	v = samp[(size_t) (((uint64_t) i * nsamp) / B)];

		if (ns == 0 || spl[ns - 1] != v)
			spl[ns++] = v;
	}
	free(samp);
	*nsp = ns;
	return GS_OK;
}

/*
 * The candidates in key order with their exact rank ranges: the input's
 * min, the splitters other than min and max, the max.  Returns how many.
 */
static size_t
approx_candidates(const ap_arg *aa, const uint64_t *spl, size_t ns, size_t n, cand *cd)
{
	uint64_t	less = 0;
	size_t		i,
				nc = 0;

	cd[nc].key = aa->mn;
	cd[nc].lo = 0;
	cd[nc].hi = aa->cmn - 1;
	nc++;
	for (i = 0; i < ns; i++)
	{
		less += aa->cnt[2 * i];
		if (spl[i] != aa->mn && spl[i] != aa->mx)
		{
			cd[nc].key = spl[i];
			cd[nc].lo = less;
			cd[nc].hi = less + aa->cnt[2 * i + 1] - 1;
			nc++;
		}
		less += aa->cnt[2 * i + 1];
	}
	if (aa->mx != aa->mn)
	{
		cd[nc].key = aa->mx;
		cd[nc].lo = (uint64_t) n - aa->cmx;
		cd[nc].hi = (uint64_t) n - 1;
		nc++;
	}
	return nc;
}

/* the candidate of cd[0..nc) whose rank range is nearest rank r (ties: the lower) */
static void
approx_pick(const cand *cd, size_t nc, uint64_t r, gs_approx_pick *out)
{
	size_t		lo = 0,
				hi = nc,
				best;

	/* first candidate with hi >= r */
	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (cd[mid].hi < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == nc)
		best = nc - 1;
	else if (cd[lo].lo <= r || lo == 0)
		best = lo;
	else
	{
		/* r lies between cd[lo-1].hi and cd[lo].lo: nearer wins, ties lower */
		uint64_t	dl = r - cd[lo - 1].hi;
		uint64_t	dh = cd[lo].lo - r;

		best = dh < dl ? lo : lo - 1;
	}
	out->key = cd[best].key;
	out->rank_lo = cd[best].lo;
	out->rank_hi = cd[best].hi;
}

gs_status
gs_cpu_select_approx(const gs_input *in, const uint64_t *ranks, size_t nranks,
					 const gs_options *opt, gs_approx_pick *out, gs_error *err)
{
	size_t		n,
				i,
				ns = 0,
				nc;
	unsigned	B;
	uint64_t	seed;
	gs_status	st;
	uint64_t   *spl = NULL;
	cand	   *cd = NULL;
	ap_arg		aa;

	memset(&aa, 0, sizeof aa);
	st = cpu_check_input(in, nranks, ranks, out, err, &n);
	if (st != GS_OK)
		return st;
	B = opt && opt->approx_buckets ? opt->approx_buckets : GS_APPROX_BUCKETS_DEFAULT;
	seed = opt ? opt->seed : 0;
	if (B < GS_APPROX_BUCKETS_MIN || B > GS_APPROX_BUCKETS_MAX)
		return cpu_set_err(err, GS_ERR_INVALID, "approx_buckets must be between 2 and 8192");
	cpu_set_err(err, GS_OK, "");
	if (nranks == 0)
		return GS_OK;
	if (poll_interrupt(opt))
		return CANCELED(err);

	st = approx_splitters(in, n, B, seed, &spl, &ns, err);
	if (st != GS_OK)
		goto done;
	if (poll_interrupt(opt))
	{
		st = CANCELED(err);
		goto done;
	}

	st = cpu_count_splitters(in, n, &spl, ns, &aa, opt, err);
	if (st != GS_OK)
		goto done;

	cd = malloc((ns + 2) * sizeof(cand));
	if (!cd)
	{
		st = NOMEM(err);
		goto done;
	}
	nc = approx_candidates(&aa, spl, ns, n, cd);
	for (i = 0; i < nranks; i++)
		approx_pick(cd, nc, ranks[i], &out[i]);
	st = cpu_set_err(err, GS_OK, "");

done:
	free(spl);
	free(aa.cnt);
	free(aa.gap);
	free(aa.tbl);
	free(cd);
	return st;
}
