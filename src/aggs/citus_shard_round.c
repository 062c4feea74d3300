/*
 * citus_shard_round.c — the Citus exchange's first counts round as one scan
 * per shard (issue 34; docs/citus.md, "The counts round by shard scans"):
 *
 *   SELECT shardid, success, result FROM run_command_on_shards(t,
 *     'SELECT gs_citus_shard_histogram(%L::regclass, ''x'', ''{T}'')')
 *
 * every shard counts its rows per bucket in a C page loop
 * (scan/bulk_shard_histogram.c: no executor, no slot, no fmgr call and no
 * Citus wrapper per row) and sends one array back as text; the arrays are
 * added up here.  Today's round (gs_x_count_round: gs_citus_histogram
 * through Citus's worker_partial_agg) took 2.5x sum(x) at 10M rows; the
 * shard scans 0.4x of that
 * (test/bench/results/citus-2026-11-28-vm-shardscan.md).
 *
 * But run_command_on_shards runs outside this statement's transaction: it
 * opens a new connection per shard (Citus's master_run_on_worker), each
 * with a transaction and a snapshot of its own.  So it is used only where
 * that changes nothing (gs_x_shard_unsafe says why not, and the report line
 * shows it):
 *
 * - This transaction has not written to the table.  A write the other
 *   connections cannot see would be counted wrong (a DELETE's rows still
 *   counted), and a lock above ACCESS SHARE that this transaction holds on
 *   the shards (TRUNCATE, ALTER, LOCK) would make them wait on it for ever
 *   -- a self-deadlock no deadlock detector sees (it spans connections that
 *   no distributed transaction id ties together).  Every write to a
 *   distributed table through this node (INSERT, UPDATE, DELETE, COPY,
 *   MERGE, TRUNCATE, DDL, LOCK, SELECT FOR UPDATE) takes a lock above
 *   ACCESS SHARE on the table here, held to the transaction's end (parse
 *   analysis opens a DML target with ROW EXCLUSIVE whatever Citus then runs;
 *   a partition's DML through its parent locks the parent): so a lock above
 *   ACCESS SHARE on it or a parent (CheckRelationLockedByMe) means "maybe
 *   wrote".  Its writes themselves are on the workers, where this node's WAL
 *   position (XactLastRecEnd) and transaction id say nothing; the
 *   transaction id does say that this node wrote -- shards it holds itself
 *   (Citus's local execution), or a trigger's writes -- so any transaction
 *   id keeps today's round too.  A trigger on the workers that writes this
 *   table's shards leaves no trace here: citus.enable_unsafe_triggers on
 *   (Citus refuses such triggers otherwise) keeps today's round.
 * - READ COMMITTED.  There every round is a statement with new snapshots on
 *   the workers already, and the rounds' checks (citus_exchange.c: the
 *   counts must add up, the gather must find what they counted) cover a
 *   write between them; the shard scans' snapshots are one more such
 *   statement.  Under REPEATABLE READ or SERIALIZABLE the transaction's
 *   connections keep one snapshot on each worker for all its statements,
 *   and new connections would see later commits: today's round.
 * - The rows are the table's for every user: no row-level security on it
 *   (the shard function refuses it as well), a heap table (not columnar),
 *   the value a plain column (found by name on each shard), no WHERE, the
 *   first level (a later one's candidates are SQL conditions), a type with
 *   a key (not numeric or interval).
 *
 * A shard scan that fails (a worker with an older gpuselect, a shard
 * without its placement) makes this round today's, not an ERROR; a failing
 * connection is Citus's ERROR as in any round.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "base/guc.h"
#include "aggs/citus_exchange.h"

/* the table (or a parent of it) is locked above ACCESS SHARE by this transaction */
static bool
gs_x_locked_for_write(Relation rel)
{
	List	   *ancestors;
	ListCell   *lc;

	if (CheckRelationLockedByMe(rel, RowShareLock, true))
		return true;
	if (!rel->rd_rel->relispartition)
		return false;
	ancestors = get_partition_ancestors(RelationGetRelid(rel));
	foreach(lc, ancestors)
	{
		Relation	parent = table_open(lfirst_oid(lc), AccessShareLock);
		bool		locked = CheckRelationLockedByMe(parent, RowShareLock, true);

		table_close(parent, NoLock);
		if (locked)
			return true;
	}
	return false;
}

/* the column x->value names (it is quote_identifier's form of one), or NULL */
static char *
gs_x_plain_column(GsXchg *x, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(quote_identifier(NameStr(att->attname)), x->value) == 0)
			return pstrdup(NameStr(att->attname));
	}
	return NULL;
}

/* run_command_on_shards(regclass, text, bool) is there (Citus 8 on) */
static bool
gs_x_have_fan_out(void)
{
	Oid			args[3] = {REGCLASSOID, TEXTOID, BOOLOID};

	return OidIsValid(LookupFuncName(list_make2(makeString("pg_catalog"),
												makeString("run_command_on_shards")),
									 3, args, true));
}

/*
 * Why the first counts round cannot run as shard scans here (the header
 * says what makes it safe), or NULL, then *col is the column's name.
 */
static const char *
gs_x_shard_unsafe(GsXchg *x, char **col)
{
	const char *unsafe_triggers = GetConfigOption("citus.enable_unsafe_triggers", true, false);
	Relation	rel;
	const char *why = NULL;

	if (!gs_guc_citus_exchange_shard_scans)
		return "gpuselect.citus_exchange_shard_scans is off";
	if (!x->keyed)
		return "a value without a key";
	if (x->quals[0] != '\0')
		return "a WHERE";
	if (x->cand.len > 0)
		return "a later level";
	if (IsolationUsesXactSnapshot())
		return "isolation above READ COMMITTED";
	if (unsafe_triggers != NULL && strcmp(unsafe_triggers, "on") == 0)
		return "citus.enable_unsafe_triggers is on";
	if (!gs_x_have_fan_out())
		return "no run_command_on_shards";

	/* locked already (the rounds before read it): a no-op */
	rel = table_open(x->relid, AccessShareLock);
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		why = "not a heap table";
	else if (rel->rd_rel->relrowsecurity)
		why = "row-level security is enabled on the table";
	else if (gs_x_locked_for_write(rel))
		why = "this transaction holds a lock above ACCESS SHARE on the table (it may have written to it)";
	else if (OidIsValid(GetTopTransactionIdIfAny()))
		why = "this transaction wrote on this node";
	else if ((*col = gs_x_plain_column(x, rel)) == NULL)
		why = "the value is not a column";
	table_close(rel, NoLock);
	return why;
}

/* s with every % doubled: a literal part of run_command_on_shards' format string */
static char *
gs_x_format_escape(const char *s)
{
	StringInfoData b;

	initStringInfo(&b);
	for (; *s; s++)
	{
		if (*s == '%')
			appendStringInfoChar(&b, '%');
		appendStringInfoChar(&b, *s);
	}
	return b.data;
}

/*
 * One shard's answer (run_command_on_shards' result text) added into cnt[0
 * .. nb); false where it is not an array of nb counts.
 */
static bool
gs_x_add_shard_counts(const char *text, int64 *cnt, int nb)
{
	Oid			infn;
	Oid			ioparam;
	ArrayType  *a;
	const int64 *c;

	getTypeInputInfo(INT8ARRAYOID, &infn, &ioparam);
	a = DatumGetArrayTypeP(OidInputFunctionCall(infn, (char *) text, ioparam, -1));
	if (ARR_ELEMTYPE(a) != INT8OID || ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_DIMS(a)[0] != nb)
		return false;
	c = (const int64 *) ARR_DATA_PTR(a);
	for (int b = 0; b < nb; b++)
		if (c[b] < 0 || pg_add_s64_overflow(cnt[b], c[b], &cnt[b]))
			return false;
	return true;
}

/*
 * The first level's counts per bucket of bk (keyed: nb = nt + 1) by shard
 * scans, palloc'd; NULL where they cannot be used (x->shard_why says why):
 * the caller runs today's round.
 */
int64 *
gs_x_shard_count_round(GsXchg *x, const GsXBuckets *bk)
{
	char	   *col = NULL;
	char	   *cmd;
	char	   *sql;
	SPITupleTable *tt;
	int64	   *cnt;
	int64		before = x->bytes;
	Oid			types[3] = {INT8OID, BOOLOID, TEXTOID};

	x->shard_why = gs_x_shard_unsafe(x, &col);
	if (x->shard_why != NULL)
		return NULL;
	cmd = psprintf("SELECT %s.gs_citus_shard_histogram(%%L::pg_catalog.regclass, %s, %s)",
				   gs_x_format_escape(quote_identifier(x->nsp)),
				   gs_x_format_escape(quote_literal_cstr(col)),
				   gs_x_format_escape(gs_x_array_literal(x, bk->t, bk->nt)));
	sql = psprintf("SELECT shardid, success, result FROM pg_catalog.run_command_on_shards(%u::pg_catalog.regclass, %s)",
				   x->relid, quote_literal_cstr(cmd));
	tt = gs_x_run(x, sql, true);
	x->count_direct_bytes += x->bytes - before;
	gs_x_check_columns(tt, 3, types);
	cnt = (int64 *) palloc0(sizeof(int64) * bk->nb);
	if ((int64) SPI_processed != x->shards)
		x->shard_why = psprintf("%lld of %lld shards answered", (long long) SPI_processed,
								(long long) x->shards);
	for (uint64 r = 0; r < SPI_processed && x->shard_why == NULL; r++)
	{
		bool		isnull;
		bool		ok = DatumGetBool(SPI_getbinval(tt->vals[r], tt->tupdesc, 2, &isnull)) && !isnull;
		char	   *text = SPI_getvalue(tt->vals[r], tt->tupdesc, 3);

		if (!ok || text == NULL)
			x->shard_why = psprintf("a shard scan failed: %s", text ? text : "no result");
		else if (!gs_x_add_shard_counts(text, cnt, bk->nb))
			x->shard_why = "a shard scan's counts are not the buckets'";
	}
	SPI_freetuptable(tt);
	if (x->shard_why != NULL)
	{
		elog(DEBUG1, "gpuselect: Citus exchange: the counts round by shard scans did not answer (%s): the distributed query instead",
			 x->shard_why);
		return NULL;
	}
	x->shard_rounds++;
	return cnt;
}
