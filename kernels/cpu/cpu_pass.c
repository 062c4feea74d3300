/*
 * cpu_pass.c — the CPU engine's pass driver: every pass over the input runs
 * here, segment by segment in chunks of GS_CHUNK keys, calling the kernel
 * instantiated for the input's key width (GS_KERNELS, cpu_internal.h) on
 * each chunk.  opt->interrupt is polled after every full chunk and at the
 * end of the pass, so a long selection can be canceled between chunks.
 * Also the exact mode's pass 0, the input's min/max.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cpu_internal.h"

gs_status
cpu_run_pass(const gs_input *in, const kernset *ks, void *arg,
			 const gs_options *opt, gs_error *err)
{
	kern_fn		k = in->key_bytes == 2 ? ks->k16 : in->key_bytes == 4 ? ks->k32 : ks->k64;
	size_t		s;

	for (s = 0; s < in->nsegs; s++)
	{
		const char *p = (const char *) in->segs[s].keys;
		size_t		left = in->segs[s].n;

		while (left > 0)
		{
			size_t		c = left < GS_CHUNK ? left : GS_CHUNK;

			k(p, c, arg);
			if (ks->after_chunk)
				ks->after_chunk(arg, c);
			p += c * in->key_bytes;
			left -= c;
			if (c == GS_CHUNK && poll_interrupt(opt))
				return CANCELED(err);
		}
	}
	if (poll_interrupt(opt))
		return CANCELED(err);
	return GS_OK;
}

/* ---- min/max (pass 0 of the exact mode) ---- */

typedef struct mm_arg
{
	uint64_t	mn,
				mx;
} mm_arg;

GS_KERNELS(mm, mm_arg,
		   uint64_t mn = a->mn; uint64_t mx = a->mx;,
		   mn = k < mn ? k : mn; mx = k > mx ? k : mx;,
		   a->mn = mn; a->mx = mx;)

static const kernset mm_kernels = {mm_16, mm_32, mm_64, NULL};

gs_status
cpu_minmax_pass(const gs_input *in, uint64_t *mn, uint64_t *mx,
				const gs_options *opt, gs_error *err)
{
	mm_arg		mm;
	gs_status	st;

	mm.mn = UINT64_MAX;
	mm.mx = 0;
	st = cpu_run_pass(in, &mm_kernels, &mm, opt, err);
	*mn = mm.mn;
	*mx = mm.mx;
	return st;
}
