/*
 * aggs/int8_text.h -- the text of an int8[] as array_out writes it
 * ("{1,-2,3}", "{}"), read by hand: the Citus exchange's shard scans answer
 * in that text (master_run_on_worker gives text), about a million numbers
 * a query at 720 groups, and array_in's general reader (quotes, escapes,
 * dimensions, a copy of every element) took a third of the coordinator's
 * time.  Anything else is left to array_in (aggs/citus_rounds.c), which
 * reads it or raises its error.  Plain C, no PostgreSQL in it: its unit
 * test is test/unit/test_int8_text.c.
 */
#ifndef GS_INT8_TEXT_H
#define GS_INT8_TEXT_H

#include <stdbool.h>
#include <stdint.h>

/* the elements of text where it is array_out's shape at all ("{" ... "}"), else -1 */
static inline int64_t
gs_int8_text_count(const char *text)
{
	int64_t		n = 1;

	if (text[0] != '{')
		return -1;
	if (text[1] == '}' && text[2] == '\0')
		return 0;
	for (const char *c = text + 1; *c; c++)
		n += *c == ',';
	return n;
}

/*
 * text's n elements into out[0 .. n): true where every one is array_out's
 * (an optional '-', 1 to 19 digits, within int8) and there are n of them,
 * followed by the closing brace and nothing else
 */
static inline bool
gs_int8_text_parse(const char *text, int64_t *out, int64_t n)
{
	const char *p = text + 1;
	int64_t		k = 0;

	if (text[0] != '{')
		return false;
	if (n == 0)
		return text[1] == '}' && text[2] == '\0';
	for (;;)
	{
		bool		neg = *p == '-';
		uint64_t	v = 0;
		int			digits = 0;

		p += neg;
		/* (19 digits fit a uint64; a longer run wraps, and is refused) */
		for (; *p >= '0' && *p <= '9'; p++, digits++)
			v = v * 10 + (uint64_t) (*p - '0');
		if (digits == 0 || digits > 19 || k >= n ||
			v > (neg ? (uint64_t) INT64_MAX + 1 : (uint64_t) INT64_MAX))
			return false;
		out[k++] = !neg ? (int64_t) v : v == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) v;
		if (*p == '}')
			return p[1] == '\0' && k == n;
		if (*p++ != ',')
			return false;
	}
}

#endif							/* GS_INT8_TEXT_H */
