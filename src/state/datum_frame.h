/*
 * datum_frame.h — a moving window aggregate's frame of comparison-type
 * values (numeric, text, interval, uuid, ...: GS_T_DATUM, no order-preserving
 * integer key): add a row's value, remove the oldest, read the value of a
 * rank, each in O(log w) comparisons for a frame of w values.
 *
 * PostgreSQL's WindowAgg adds rows at the frame's end and removes them at
 * its head, in the order it added them (nodeWindowAgg.c: rows from
 * aggregatedbase up to aggregatedupto are in the state, the inverse
 * transition takes aggregatedbase).  So each value gets an arrival number
 * (its handle), the handles held are always [oldest, next), and a ring of
 * Datums indexed by handle holds them.  The order statistics are
 * state/ostree.c's counted B+-tree over handles, ordered by the type's sort
 * support (ordering operator and collation: the same comparator the
 * built-ins' sort and select/datum_select.c use), then by arrival.  Each
 * value's abbreviated key (numeric, text, uuid, ...) is made once as it
 * enters, so most of the tree's comparisons compare two integers, and only
 * their ties call the type's full comparator, as in tuplesort.
 *
 * Equal values of other bytes (numeric 1.0 / 1.00, interval '1 day' /
 * '24 hours', strings equal under a nondeterministic collation) are thus
 * ordered by arrival: the value of a rank is the one a stable sort of the
 * frame in window order puts there.  PostgreSQL's own sort (sort_template.h)
 * is stable on the inputs it insertion-sorts (fewer than 7 values) or finds
 * already in order, so there the built-in over the frame's rows in window
 * order returns the same bytes; on others its pick among equal values is an
 * accident of its quicksort (equal under "=" either way).  Removing checks
 * that the oldest value has the bytes of the row leaving.
 *
 * The values are copies (varlena detoasted, 4-byte header) in a generation
 * context of their own, freed as they leave; generation blocks go back once
 * all their values left, which first-in first-out removal makes the rule.
 * So memory follows the frame, not the partition.
 */
#ifndef GS_DATUM_FRAME_H
#define GS_DATUM_FRAME_H

#include "postgres.h"
#include "utils/sortsupport.h"

#include "state/ostree.h"
#include "state/state.h"

/* one value of the frame: a handle's ring slot */
typedef struct GsDFrameSlot
{
	Datum		val;			/* the value (a copy in the values context unless by value) */
	Datum		key;			/* its abbreviated key (ssup's), or val */
} GsDFrameSlot;

typedef struct GsDatumFrame
{
	MemoryContext mcxt;			/* the frame, its ring and tree nodes */
	MemoryContext values;		/* value copies (by-reference types) */
	int16		typlen;
	bool		typbyval;
	SortSupportData ssup;		/* the ordering (abbreviated keys where the type has them) */
	bool		abbrev;			/* keys are abbreviated: ties of keys compare the values */
	GsDFrameSlot *ring;			/* the value of handle h: ring[h & mask] */
	uint64		mask;			/* ring size - 1 (a power of two) */
	uint64		oldest;			/* handles held: [oldest, next) */
	uint64		next;
	GsOsTree	tree;			/* handles by value, then arrival */
} GsDatumFrame;

extern GsDatumFrame *gs_dframe_create(MemoryContext mcxt, Oid typid, Oid sortop, Oid collation);
/* a non-NULL value enters the frame (copied) */
extern void gs_dframe_add(GsDatumFrame *f, Datum d);
/* a non-NULL value leaves: the oldest held, which must have d's bytes */
extern void gs_dframe_remove_oldest(GsDatumFrame *f, Datum d);
/* an append-phase state's values (a GS_T_DATUM GsState, not spilled), in arrival order */
extern void gs_dframe_add_state(GsDatumFrame *f, const GsState *st);
/* the value of 0-based ascending rank k < count: points into the frame */
extern Datum gs_dframe_at(const GsDatumFrame *f, uint64 k);

static inline uint64
gs_dframe_count(const GsDatumFrame *f)
{
	return f->next - f->oldest;
}

#endif							/* GS_DATUM_FRAME_H */
