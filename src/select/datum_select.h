/*
 * datum_select.h — comparison-based multiselect over an array of values,
 * with a type's sort support (abbreviated keys where the type offers them).
 */
#ifndef GS_DATUM_SELECT_H
#define GS_DATUM_SELECT_H

#include "postgres.h"
#include "utils/sortsupport.h"

#include "state/datum_state.h"

/*
 * Reorder items[0..n) so that items[r] holds the value of rank r (0-based, in
 * ssup's order) for every r of ranks[0..nranks), which must be sorted
 * ascending without repeats.  abbrev: keys are abbreviated (ssup->comparator
 * compares them, ssup->abbrev_full_comparator breaks their ties).
 */
extern void gs_multiselect(GsDatumItem *items, int64 n, const int64 *ranks, int nranks,
						   SortSupport ssup, bool abbrev);

/*
 * Abbreviated keys for items[0..n) (key from val), aborted as tuplesort
 * aborts them; returns whether keys are abbreviated (else key = val and
 * ssup compares values).
 */
extern bool gs_datum_abbreviate(GsDatumItem *items, int64 n, SortSupport ssup);

/*
 * gs_datum_select for a store spilled to its file (datum_spill_select.c):
 * out[i] palloc'd in CurrentMemoryContext
 */
extern void gs_datum_spill_select(GsState *st, const int64 *ranks, int nranks, Datum *out);

#endif							/* GS_DATUM_SELECT_H */
