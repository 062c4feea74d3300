/*
 * citus_rounds.c — what every round of the Citus exchange goes through
 * (issue 34; docs/citus.md): the statement run through SPI with its rows
 * and bytes counted as Citus counts them (for the report line), its
 * columns checked, and arrays written as SQL literals for the next round's
 * text.  Below the exchange (citus_exchange.c, citus_exchange_grouped.c)
 * and its rounds by shard scans (citus_shard_round.c), which all use it.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "aggs/citus_exchange.h"

/* one round: a read-only distributed query; its rows counted as they come */
SPITupleTable *
gs_x_run(GsXchg *x, const char *sql, bool counts)
{
	int			rc;
	SPITupleTable *tt;
	int64		bytes = 0;

	CHECK_FOR_INTERRUPTS();
	elog(DEBUG2, "gpuselect: Citus exchange round: %s", sql);
	rc = SPI_execute(sql, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "gpuselect: Citus exchange round failed: %s", SPI_result_code_string(rc));
	tt = SPI_tuptable;
	/* as Citus counts them: the binary size of every non-NULL field */
	for (uint64 i = 0; i < SPI_processed; i++)
		for (int a = 1; a <= tt->tupdesc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(tt->tupdesc, a - 1);
			bool		isnull;
			Datum		d = SPI_getbinval(tt->vals[i], tt->tupdesc, a, &isnull);

			if (isnull)
				continue;
			bytes += att->attlen > 0 ? att->attlen : (int64) VARSIZE_ANY_EXHDR(DatumGetPointer(d));
		}
	x->rounds++;
	x->sql_bytes += strlen(sql);
	x->rows += SPI_processed;
	x->bytes += bytes;
	if (counts)
	{
		x->count_rows += SPI_processed;
		x->count_bytes += bytes;
	}
	return tt;
}

/*
 * A round's columns are of the types the rounds ask for, whatever text a
 * hand-made call passed as the value (its SQL runs with the caller's
 * rights, but a value of another type must not be read as k's).
 */
void
gs_x_check_columns(SPITupleTable *tt, int natts, const Oid *types)
{
	if (tt->tupdesc->natts != natts)
		elog(ERROR, "gpuselect: Citus exchange: a round returned %d columns", tt->tupdesc->natts);
	for (int a = 0; a < natts; a++)
		if (TupleDescAttr(tt->tupdesc, a)->atttypid != types[a])
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("gpuselect: Citus exchange: a round returned %s, not %s",
							format_type_be(TupleDescAttr(tt->tupdesc, a)->atttypid),
							format_type_be(types[a]))));
}

/* an array of values of type typ as an SQL literal */
char *
gs_x_typed_array_literal(Oid typ, Datum *v, int n)
{
	int16		len;
	bool		byval;
	char		align;
	ArrayType  *arr;
	Oid			arrtype = get_array_type(typ);
	Oid			outfn;
	bool		varlena;
	char	   *text;

	get_typlenbyvalalign(typ, &len, &byval, &align);
	arr = construct_array(v, n, typ, len, byval, align);
	getTypeOutputInfo(arrtype, &outfn, &varlena);
	text = OidOutputFunctionCall(outfn, PointerGetDatum(arr));
	return psprintf("%s::%s", quote_literal_cstr(text), format_type_be_qualified(arrtype));
}

/* a sorted array of k's values as an SQL literal */
char *
gs_x_array_literal(GsXchg *x, Datum *v, int n)
{
	return gs_x_typed_array_literal(x->ktype, v, n);
}
