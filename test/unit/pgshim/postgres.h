/*
 * pgshim/postgres.h — just enough of PostgreSQL for the unit test of a
 * src/ file that only allocates (src/ostree.c): its types, and memory
 * contexts as malloc with a count of live allocations (test_ostree.c
 * checks that memory follows the keys held).
 */
#ifndef GS_PGSHIM_POSTGRES_H
#define GS_PGSHIM_POSTGRES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint32_t uint32;
typedef uint64_t uint64;
typedef int64_t int64;
typedef size_t Size;
typedef void *MemoryContext;

#define likely(x)	__builtin_expect((x) != 0, 1)
#define unlikely(x)	__builtin_expect((x) != 0, 0)

extern long shim_live_allocs;

static inline void *
MemoryContextAlloc(MemoryContext cxt, Size n)
{
	void	   *p = malloc(n);

	(void) cxt;
	if (p == NULL)
		abort();
	shim_live_allocs++;
	return p;
}

static inline void
pfree(void *p)
{
	shim_live_allocs--;
	free(p);
}

#endif
