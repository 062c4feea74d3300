/*
 * unit.h — what the unit tests share: pass/fail counters, CHECK, a seeded
 * splitmix64 generator and the summary line that test/run-all.sh and CI
 * add up ("NAME: N passed, M failed").  Each test is one program that
 * includes this once, so everything here is static.
 */
#ifndef GS_UNIT_H
#define GS_UNIT_H

#include <stdint.h>
#include <stdio.h>

static long n_pass,
			n_fail;

/* the generator's state: a test seeds it (fixed, or printed when fresh) */
static uint64_t rng_state;

/* printed in brackets before a failure's message: the case under way */
static const char *unit_context = "";

/* count a check; print the first 100 failures with file, line and message */
#define CHECK(cond, ...) do { \
	if (cond) n_pass++; \
	else { n_fail++; if (n_fail <= 100) { \
		printf("FAIL %s:%d ", __FILE__, __LINE__); \
		if (unit_context[0]) printf("[%s] ", unit_context); \
		printf(__VA_ARGS__); printf("\n"); } } } while (0)

/* splitmix64 */
static inline uint64_t
rnd(void)
{
	uint64_t	z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* the summary line; the program's exit status */
static inline int
unit_summary(const char *name)
{
	printf("%s: %ld passed, %ld failed\n", name, n_pass, n_fail);
	return n_fail != 0;
}

#endif							/* GS_UNIT_H */
