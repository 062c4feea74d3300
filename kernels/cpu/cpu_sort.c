/*
 * cpu_sort.c — the sort path of the exact mode: when the distinct wanted
 * ranks are so many that selection approaches a full sort (issue 18 item 7:
 * 1M fractions over 50M rows took twice the built-in's sort), copy the keys
 * into one array and LSD radix sort it, then read the ranks off.
 *
 * 8-bit digits: a 256-entry histogram stays in L1 and the scatter writes to
 * 256 streams, which a 2-core box's store buffers take; 11-bit digits saved
 * no time here for 8-byte keys (fewer passes, but each scatter misses more).
 * One gather pass copies the keys and counts every digit's histogram at once;
 * a digit that all keys share (one bucket holds n) is skipped, so narrow
 * key ranges (small integers in int8, floats of one sign and exponent range)
 * cost fewer passes.  The interrupt hook is polled between digit passes and
 * every GS_CHUNK keys of the gather.  The input is never written.
 *
 * Memory: two arrays of n keys at the key width.  If they cannot be had the
 * caller falls back to selection (*sorted = 0), which needs far less.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define RS_DIGITS_MAX 8

/*
 * Gather the input into a (width T) counting each digit into h (zeroed);
 * sort a by the digits that differ, ping-ponging with b; return the sorted
 * array (a or b), or NULL when canceled.
 */
#define GS_RADIX_SORT(NAME, T) \
static T * \
NAME(const gs_input *in, T *a, T *b, size_t n, size_t (*h)[256], const gs_options *opt) \
{ \
	enum { ND = sizeof(T) }; \
	size_t		s, i, o = 0; \
	unsigned	d; \
	for (s = 0; s < in->nsegs; s++) \
	{ \
		const T    *src = (const T *) in->segs[s].keys; \
		size_t		m = in->segs[s].n, j0; \
		for (j0 = 0; j0 < m; j0 += GS_CHUNK) \
		{ \
			size_t		j1 = j0 + GS_CHUNK < m ? j0 + GS_CHUNK : m, j; \
			if (poll_interrupt(opt)) \
				return NULL; \
			memcpy(a + o, src + j0, (j1 - j0) * sizeof(T)); \
			for (j = j0; j < j1; j++) \
				for (d = 0; d < ND; d++) \
					h[d][(src[j] >> (8 * d)) & 0xFF]++; \
			o += j1 - j0; \
		} \
	} \
	for (d = 0; d < ND; d++) \
	{ \
		size_t		off[256], sum = 0; \
		unsigned	sh = 8 * d; \
		T		   *t; \
		if (h[d][a[0] >> sh & 0xFF] == n) \
			continue;			/* every key has this digit */ \
		if (poll_interrupt(opt)) \
			return NULL; \
		for (i = 0; i < 256; i++) \
		{ \
			off[i] = sum; \
			sum += h[d][i]; \
		} \
		for (i = 0; i < n; i++) \
			b[off[a[i] >> sh & 0xFF]++] = a[i]; \
		t = a; a = b; b = t; \
	} \
	return a; \
}

GS_RADIX_SORT(radix_sort16, uint16_t)
GS_RADIX_SORT(radix_sort32, uint32_t)
GS_RADIX_SORT(radix_sort64, uint64_t)

gs_status
cpu_sort_ranks(const gs_input *in, size_t n, const uint64_t *ur, size_t nu, uint64_t *uval,
			   const gs_options *opt, gs_error *err, int *sorted)
{
	unsigned	kb = in->key_bytes;
	void	   *a = malloc(n * kb),
			   *b = malloc(n * kb),
			   *r = NULL;
	size_t		i,
				h[RS_DIGITS_MAX][256];

	*sorted = 0;
	if (!a || !b)
	{
		free(a);
		free(b);
		return GS_OK;			/* selection needs far less memory */
	}
	memset(h, 0, sizeof h);
	if (kb == 2)
		r = radix_sort16(in, a, b, n, h, opt);
	else if (kb == 4)
		r = radix_sort32(in, a, b, n, h, opt);
	else
		r = radix_sort64(in, a, b, n, h, opt);
	*sorted = r != NULL;
	for (i = 0; r && i < nu; i++)
		uval[i] = load_key(r, kb, ur[i]);
	free(a);
	free(b);
	return r ? GS_OK : CANCELED(err);
}
