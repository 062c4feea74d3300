/*
 * test_int8_text.c -- src/aggs/int8_text.h, the Citus exchange's reader of
 * an int8[]'s text: every array printed as array_out prints one ("{", the
 * numbers in %lld separated by commas, "}") reads back as itself, edge
 * values included; every text array_out would not print (spaces, NULL,
 * quotes, a number int8 cannot hold, a stray comma, too few or too many
 * elements for the count) is refused, for array_in to read or reject.
 * Fixed seed and a fresh seed (printed).  Ends with
 * "test_int8_text: N passed, M failed".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aggs/int8_text.h"
#include "unit.h"

/* v[0 .. n) as array_out prints an int8[] */
static char *
print_array(const int64_t *v, int n)
{
	char	   *s = malloc(2 + (size_t) n * 21 + 1);
	size_t		len = 0;

	s[len++] = '{';
	for (int i = 0; i < n; i++)
		len += (size_t) sprintf(s + len, "%s%" PRId64, i ? "," : "", v[i]);
	s[len++] = '}';
	s[len] = '\0';
	return s;
}

/* a value of every size: small counts mostly, keys of 19 digits, the ends */
static int64_t
random_value(void)
{
	switch (rnd() % 6)
	{
		case 0:
			return (int64_t) (rnd() % 100);
		case 1:
			return -(int64_t) (rnd() % 1000);
		case 2:
			return rnd() % 2 ? INT64_MAX - (int64_t) (rnd() % 3) : INT64_MIN + (int64_t) (rnd() % 3);
		default:
			return (int64_t) rnd();
	}
}

static void
round_trips(int rounds)
{
	for (int r = 0; r < rounds; r++)
	{
		int			n = (int) (rnd() % 50);
		int64_t    *v = malloc(sizeof(int64_t) * (size_t) (n + 1));
		int64_t    *got = malloc(sizeof(int64_t) * (size_t) (n + 1));
		char	   *s;
		bool		ok;

		for (int i = 0; i < n; i++)
			v[i] = random_value();
		s = print_array(v, n);
		CHECK(gs_int8_text_count(s) == n, "count of %s: %" PRId64 ", not %d", s, gs_int8_text_count(s), n);
		ok = gs_int8_text_parse(s, got, n);
		CHECK(ok, "refused %s", s);
		for (int i = 0; ok && i < n; i++)
			CHECK(got[i] == v[i], "%s: element %d read as %" PRId64, s, i, got[i]);
		free(s);
		free(v);
		free(got);
	}
}

/* texts array_out does not print: refused whatever n the caller counted */
static void
refusals(void)
{
	static const char *bad[] = {
		"", "{", "}", "{,}", "{1,}", "{,1}", "{1,,2}", "{ 1}", "{1 }", "{1} ", "{+1}", "{--1}", "{-}",
		"{NULL}", "{1,NULL}", "{\"1\"}", "[1:1]={1}", "{{1}}", "{1}{2}", "{1;2}", "{1,2}x", "{0x10}",
		"{9223372036854775808}", "{-9223372036854775809}", "{12345678901234567890}",
		"{00000000000000000001}", "{1.5}", "{1e3}",
	};
	int64_t		out[8];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		int64_t		n = gs_int8_text_count(bad[i]);

		unit_context = bad[i];
		CHECK(!gs_int8_text_parse(bad[i], out, n < 0 || n > 8 ? 8 : n), "accepted with its own count");
		for (int64_t m = 0; m <= 3; m++)
			if (m != n)
				CHECK(!gs_int8_text_parse(bad[i], out, m) || strcmp(bad[i], "{}") == 0,
					  "accepted with count %" PRId64, m);
	}
	unit_context = "";
	/* the right text with a wrong count */
	CHECK(!gs_int8_text_parse("{1,2,3}", out, 2), "3 elements read as 2");
	CHECK(!gs_int8_text_parse("{1,2,3}", out, 4), "3 elements read as 4");
	CHECK(!gs_int8_text_parse("{}", out, 1), "{} read as 1 element");
	CHECK(gs_int8_text_count("{}") == 0 && gs_int8_text_parse("{}", out, 0), "{} is empty");
	CHECK(gs_int8_text_count("x") == -1, "no brace: not counted");
	/* the ends themselves */
	CHECK(gs_int8_text_parse("{-9223372036854775808,9223372036854775807,0,-0}", out, 4) &&
		  out[0] == INT64_MIN && out[1] == INT64_MAX && out[2] == 0 && out[3] == 0, "the ends");
}

int
main(void)
{
	uint64_t	seed = (uint64_t) time(NULL);

	rng_state = 42;
	round_trips(20000);
	refusals();
	printf("fresh seed %" PRIu64 "\n", seed);
	rng_state = seed;
	round_trips(20000);
	printf("test_int8_text: %ld passed, %ld failed\n", n_pass, n_fail);
	return n_fail > 0;
}
