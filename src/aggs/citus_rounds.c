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
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "aggs/citus_exchange.h"
#include "aggs/int8_text.h"

/* one round: a read-only distributed query; its rows counted as they come */
SPITupleTable *
gs_x_run(GsXchg *x, const char *sql, bool counts)
{
	int			rc;
	SPITupleTable *tt;
	int64		bytes = 0;
	instr_time	start;
	instr_time	took;

	CHECK_FOR_INTERRUPTS();
	elog(DEBUG2, "gpuselect: Citus exchange round: %s", sql);
	INSTR_TIME_SET_CURRENT(start);
	rc = SPI_execute(sql, true, 0);
	INSTR_TIME_SET_CURRENT(took);
	INSTR_TIME_SUBTRACT(took, start);
	if (x->round_ms.data == NULL)
		initStringInfo(&x->round_ms);
	appendStringInfo(&x->round_ms, "%s%.0f", x->round_ms.len > 0 ? ", " : "",
					 INSTR_TIME_GET_MILLISEC(took));
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
 * A Citus setting for the current GUC nest level (the caller's
 * AtEOXact_GUC undoes it), where this Citus has it; DEBUG1 where the value
 * is refused
 */
void
gs_x_set_citus_option(const char *name, const char *value)
{
	if (GetConfigOption(name, true, false) != NULL)
		(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, DEBUG1, false);
}

/*
 * A sample by pages (TABLESAMPLE SYSTEM, 16 times its keys' rows over every
 * shard: at most 16 x 16384): gs_x_run on one connection a worker
 * (citus.force_max_query_parallelization off and
 * max_adaptive_executor_pool_size 1 for it).  A shard's task is a few
 * pages, less than a new backend costs; with the exchange's setting
 * (gs_x_setup: one connection a shard, so that its later distributed rounds
 * do not keep to the few the first one opened) the sample per hour opened
 * 32, ~45 ms of a 550-650 ms query on the 2-core machine.  The setting is
 * restored here: a distributed round after it opens one a shard again.
 */
SPITupleTable *
gs_x_run_sample(GsXchg *x, const char *sql)
{
	int			nest = NewGUCNestLevel();
	SPITupleTable *tt;

	gs_x_set_citus_option("citus.force_max_query_parallelization", "off");
	gs_x_set_citus_option("citus.max_adaptive_executor_pool_size", "1");
	tt = gs_x_run(x, sql, false);
	AtEOXact_GUC(true, nest);
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

/*
 * A shard scan's answer, the text of an int8[], as an int8[]: by
 * aggs/int8_text.h where it is array_out's shape (always, from the shard
 * functions), else by array_in (its errors).
 */
ArrayType *
gs_x_int8_array_in(const char *text)
{
	int64		n = gs_int8_text_count(text);
	Oid			infn;
	Oid			ioparam;

	if (n == 0 && gs_int8_text_parse(text, NULL, 0))
		return construct_empty_array(INT8OID);
	if (n > 0 && n <= (int64) MaxArraySize)
	{
		Size		size = ARR_OVERHEAD_NONULLS(1) + sizeof(int64) * n;
		ArrayType  *arr = (ArrayType *) palloc(size);

		SET_VARSIZE(arr, size);
		arr->ndim = 1;
		arr->dataoffset = 0;
		arr->elemtype = INT8OID;
		ARR_DIMS(arr)[0] = (int) n;
		ARR_LBOUND(arr)[0] = 1;
		if (gs_int8_text_parse(text, (int64_t *) ARR_DATA_PTR(arr), n))
			return arr;
		pfree(arr);
	}
	getTypeInputInfo(INT8ARRAYOID, &infn, &ioparam);
	return DatumGetArrayTypeP(OidInputFunctionCall(infn, (char *) text, ioparam, -1));
}
