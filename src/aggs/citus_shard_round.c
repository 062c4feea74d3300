/*
 * citus_shard_round.c — the Citus exchange's first counts round and its
 * gather as scans of the shards (issue 34; docs/citus.md, "The rounds by
 * shard scans"):
 *
 *   SELECT success, result FROM master_run_on_worker(nodes, ports,
 *     '{"SELECT gs_citus_shard_histogram(ARRAY[shard, ...]::regclass[],
 *        ''x'', ''{T}'')", ...}', true)
 *
 * every worker reads its shards, a few a connection
 * (gpuselect.citus_exchange_scans_per_node), in a C page loop
 * (scan/bulk_shard_scan.c: no executor, no slot, no fmgr call and no
 * Citus wrapper per row) and sends one array back as text: the counts per
 * bucket, added up here, or the gather's keys (gs_citus_shard_keys), the
 * rows of the wanted buckets' ranges.  As distributed queries the counts
 * round (through Citus's worker_partial_agg) took 2.3x sum(x) at 10M rows
 * and the gather (a filtered scan) 1.4x; as shard scans 0.65x and 0.55x.
 * Opening a connection per shard (run_command_on_shards) cost 50-85 ms at
 * 32 shards on the 2-core machine, two connections 17 ms
 * (test/bench/results/citus-2026-11-28-vm-gather.md).
 *
 * But master_run_on_worker runs outside this statement's transaction: it
 * opens new connections (Citus's FORCE_NEW_CONNECTION), each with a
 * transaction and a snapshot of its own.  So it is used only where that
 * changes nothing (gs_x_shard_unsafe says why not, and the report line
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
 *   id keeps the distributed queries too.  A trigger on the workers that
 *   writes this table's shards leaves no trace here:
 *   citus.enable_unsafe_triggers on (Citus refuses such triggers otherwise)
 *   keeps them.
 * - READ COMMITTED.  There every round is a statement with new snapshots on
 *   the workers already, and the rounds' checks (citus_exchange.c: the
 *   counts must add up, the gather must find what they counted) cover a
 *   write between them; the shard scans' snapshots are one more such
 *   statement.  Under REPEATABLE READ or SERIALIZABLE the transaction's
 *   connections keep one snapshot on each worker for all its statements,
 *   and new connections would see later commits: the distributed queries.
 * - The rows are the table's for every user: no row-level security on it
 *   (the shard function refuses it as well), a heap table (not columnar),
 *   the value a plain column (found by name on each shard; the WHERE's
 *   columns too: the shard functions parse it against each shard), the
 *   first level (a later one's candidates are SQL conditions; the gather by
 *   shard scans follows only a first level counted by them), a type with a
 *   key (not numeric or interval).
 * - A WHERE that keeps at least GS_X_SHARD_WHERE_MIN of the rows, by the
 *   sample's estimate against the pages'.  The shard scans evaluate it on
 *   every row, as a distributed round does, and save the per-row cost of
 *   the rows it keeps, but pay two rounds of new connections: at 10M rows
 *   a WHERE keeping 97% of them took 0.62x the distributed rounds' time,
 *   one keeping 3% 1.18x (test/bench/results/citus-2026-11-28-vm-gather.md).
 *
 * A round by shard scans that fails (a worker with an older gpuselect or
 * stopped, a shard without an active placement) runs as the distributed
 * query instead, not an ERROR; that one then answers or raises Citus's
 * ERROR as any round.
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

#define GS_X_SHARD_WHERE_MIN	0.2	/* a WHERE keeping this share of the rows: shard scans */

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

/* pg_catalog.name(args) is there (a function of the Citus installed) */
static bool
gs_x_have_catalog_func(const char *name, int nargs, const Oid *args)
{
	return OidIsValid(LookupFuncName(list_make2(makeString("pg_catalog"), makeString(pstrdup(name))),
									 nargs, args, true));
}

/* master_run_on_worker(text[], int[], text[], bool) is there (Citus 7 on) */
static bool
gs_x_have_fan_out(void)
{
	Oid			args[4] = {TEXTARRAYOID, INT4ARRAYOID, TEXTARRAYOID, BOOLOID};

	return gs_x_have_catalog_func("master_run_on_worker", 4, args);
}

/*
 * Why the first counts round cannot run as shard scans here (the header
 * says what makes it safe), or NULL, then *col is the column's name.
 */
const char *
gs_x_shard_unsafe(GsXchg *x, char **col)
{
	const char *unsafe_triggers = GetConfigOption("citus.enable_unsafe_triggers", true, false);
	Relation	rel;
	const char *why = NULL;

	if (!gs_guc_citus_exchange_shard_scans)
		return "gpuselect.citus_exchange_shard_scans is off";
	if (x->quals[0] != '\0' && !(x->table_rows_est > 0 && x->values_est >= GS_X_SHARD_WHERE_MIN * x->table_rows_est))
		return "a WHERE that keeps under a fifth of the rows (by the sample)";
	if (!x->keyed)
		return "a value without a key";
	if (x->cand.len > 0)
		return "a later level";
	if (IsolationUsesXactSnapshot())
		return "isolation above READ COMMITTED";
	if (unsafe_triggers != NULL && strcmp(unsafe_triggers, "on") == 0)
		return "citus.enable_unsafe_triggers is on";
	if (!gs_x_have_fan_out())
		return "no master_run_on_worker";

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

/*
 * shard_name(regclass, int8, bool) is there (Citus 13.1 on): with false it
 * qualifies a shard of public too, which the workers' connections then find
 * whatever their search_path; the older shard_name(regclass, int8) leaves
 * public's unqualified, as run_command_on_shards does.
 */
static bool
gs_x_have_shard_name_qualified(void)
{
	Oid			args[3] = {REGCLASSOID, INT8OID, BOOLOID};

	return gs_x_have_catalog_func("shard_name", 3, args);
}

/*
 * The commands of a round by shard scans: SELECT fn(ARRAY[shards],
 * 'col', 'arg') on every worker, its active shards (one placement each)
 * split over at most gpuselect.citus_exchange_scans_per_node connections
 * (0: one a shard), as one master_run_on_worker call of *ncmds commands;
 * NULL where some shard has no active placement (x->shard_why says so).
 */
static char *
gs_x_fan_out_sql(GsXchg *x, const char *fn, const char *col, const char *arg, int *ncmds)
{
	SPITupleTable *tt;
	uint64		n;
	Datum	   *nodes;
	Datum	   *ports;
	Datum	   *cmds;
	int			ncmd = 0;
	int			per = gs_guc_citus_exchange_scans_per_node;
	Oid			types[3] = {TEXTOID, INT4OID, TEXTOID};

	/* the coordinator's catalog, not a round: not counted as one */
	if (SPI_execute(psprintf("SELECT p.nodename, p.nodeport, pg_catalog.shard_name(s.logicalrelid, s.shardid%s)"
							  " FROM pg_catalog.pg_dist_shard s CROSS JOIN LATERAL"
							  " (SELECT nodename, nodeport FROM pg_catalog.pg_dist_shard_placement p"
							  "  WHERE p.shardid = s.shardid AND p.shardstate = 1 ORDER BY p.placementid LIMIT 1) p"
							  " WHERE s.logicalrelid = %u ORDER BY 1, 2, s.shardid",
							 gs_x_have_shard_name_qualified() ? ", false" : "", x->relid),
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "gpuselect: Citus exchange: could not read the shards' placements");
	tt = SPI_tuptable;
	gs_x_check_columns(tt, 3, types);
	n = SPI_processed;
	if ((int64) n != x->shards)
	{
		x->shard_why = psprintf("%lld of %lld shards have an active placement", (long long) n,
								(long long) x->shards);
		return NULL;
	}
	nodes = (Datum *) palloc(sizeof(Datum) * Max(n, 1));
	ports = (Datum *) palloc(sizeof(Datum) * Max(n, 1));
	cmds = (Datum *) palloc(sizeof(Datum) * Max(n, 1));
	for (uint64 first = 0; first < n;)
	{
		char	   *node = SPI_getvalue(tt->vals[first], tt->tupdesc, 1);
		char	   *port = SPI_getvalue(tt->vals[first], tt->tupdesc, 2);
		uint64		end = first;
		int			conns;

		while (end < n && strcmp(SPI_getvalue(tt->vals[end], tt->tupdesc, 1), node) == 0 &&
			   strcmp(SPI_getvalue(tt->vals[end], tt->tupdesc, 2), port) == 0)
			end++;
		/* the node's shards end - first, dealt out over its connections */
		conns = per == 0 ? (int) (end - first) : (int) Min((uint64) per, end - first);
		for (int c = 0; c < conns; c++)
		{
			StringInfoData cmd;
			bool		firstname = true;

			initStringInfo(&cmd);
			appendStringInfo(&cmd, "SELECT %s.%s(ARRAY[", quote_identifier(x->nsp), fn);
			for (uint64 r = first + c; r < end; r += conns)
			{
				appendStringInfo(&cmd, "%s%s", firstname ? "" : ", ",
								 quote_literal_cstr(SPI_getvalue(tt->vals[r], tt->tupdesc, 3)));
				firstname = false;
			}
			appendStringInfo(&cmd, "]::pg_catalog.regclass[], %s, %s, %s)", quote_literal_cstr(col), arg,
							 quote_literal_cstr(x->quals));
			nodes[ncmd] = CStringGetTextDatum(node);
			ports[ncmd] = Int32GetDatum(pg_strtoint32(port));
			cmds[ncmd] = CStringGetTextDatum(cmd.data);
			ncmd++;
		}
		first = end;
	}
	SPI_freetuptable(tt);
	*ncmds = ncmd;
	return psprintf("SELECT success, result FROM pg_catalog.master_run_on_worker(%s, %s, %s, true)",
					gs_x_typed_array_literal(TEXTOID, nodes, ncmd),
					gs_x_typed_array_literal(INT4OID, ports, ncmd),
					gs_x_typed_array_literal(TEXTOID, cmds, ncmd));
}

/*
 * A round by shard scans: fn run on every shard (gs_x_fan_out_sql), each
 * connection's answer (an int8[] as text) parsed; NULL where one failed or
 * is not an int8[] (x->shard_why says why), else *nres of them.
 */
ArrayType **
gs_x_fan_out(GsXchg *x, const char *fn, const char *col, const char *arg, bool counts, int *nres)
{
	int			ncmds = 0;
	char	   *sql = gs_x_fan_out_sql(x, fn, col, arg, &ncmds);
	int64		before = x->bytes;
	SPITupleTable *tt;
	ArrayType **res;
	Oid			types[2] = {BOOLOID, TEXTOID};

	if (sql == NULL)
		return NULL;
	tt = gs_x_run(x, sql, counts);
	if (counts)
		x->count_direct_bytes += x->bytes - before;
	/* the query text a shard's connection got, not this statement's (all of them) */
	x->sql_bytes += (int64) (strlen(sql) / Max(x->shards, 1)) - (int64) strlen(sql);
	gs_x_check_columns(tt, 2, types);
	res = (ArrayType **) palloc(sizeof(ArrayType *) * Max(SPI_processed, 1));
	*nres = (int) SPI_processed;
	if ((int64) SPI_processed != ncmds)
		x->shard_why = psprintf("%d of %d connections answered", *nres, ncmds);
	for (uint64 r = 0; r < SPI_processed && x->shard_why == NULL; r++)
	{
		bool		isnull;
		bool		ok = DatumGetBool(SPI_getbinval(tt->vals[r], tt->tupdesc, 1, &isnull)) && !isnull;
		char	   *text = SPI_getvalue(tt->vals[r], tt->tupdesc, 2);

		if (!ok || text == NULL)
		{
			x->shard_why = psprintf("a shard scan failed: %s", text ? text : "no result");
			break;
		}
		res[r] = gs_x_int8_array_in(text);
		if (ARR_ELEMTYPE(res[r]) != INT8OID || ARR_NDIM(res[r]) > 1 || ARR_HASNULL(res[r]))
			x->shard_why = "a shard scan's answer is not an int8 array";
	}
	SPI_freetuptable(tt);
	if (x->shard_why != NULL)
	{
		elog(DEBUG1, "gpuselect: Citus exchange: a round by shard scans did not answer (%s): the distributed query instead",
			 x->shard_why);
		return NULL;
	}
	return res;
}

/*
 * The first level's counts per bucket of bk (keyed: nb = nt + 1) by shard
 * scans, palloc'd; NULL where they cannot be used (x->shard_why says why):
 * the caller runs the distributed query.
 */
int64 *
gs_x_shard_count_round(GsXchg *x, const GsXBuckets *bk)
{
	char	   *col = NULL;
	ArrayType **res;
	int			nres;
	int64	   *cnt;

	x->shard_why = gs_x_shard_unsafe(x, &col);
	if (x->shard_why != NULL)
		return NULL;
	res = gs_x_fan_out(x, "gs_citus_shard_histogram", col,
					   gs_x_array_literal(x, bk->t, bk->nt), true, &nres);
	if (res == NULL)
		return NULL;
	cnt = (int64 *) palloc0(sizeof(int64) * bk->nb);
	for (int r = 0; r < nres; r++)
	{
		const int64 *c = (const int64 *) ARR_DATA_PTR(res[r]);

		if (ARR_NDIM(res[r]) != 1 || ARR_DIMS(res[r])[0] != bk->nb)
		{
			x->shard_why = "a shard scan's counts are not the buckets'";
			return NULL;
		}
		for (int b = 0; b < bk->nb; b++)
			if (c[b] < 0 || pg_add_s64_overflow(cnt[b], c[b], &cnt[b]))
			{
				x->shard_why = "a shard scan's counts are not the buckets'";
				return NULL;
			}
	}
	x->shard_col = col;
	x->shard_rounds++;
	return cnt;
}

/*
 * The first level's gather by shard scans, where its counts came from them:
 * the keys inside the ranges of bounds[0 .. nbounds) (gs_x_ranges_cond's),
 * in no order, *m of them; NULL where a shard scan failed (the caller
 * gathers by a distributed query; its checks then compare either with the
 * counts).
 */
Datum *
gs_x_shard_gather(GsXchg *x, const Datum *bounds, int nbounds, int64 *m)
{
	ArrayType **res;
	int			nres;
	int64		total = 0;
	Datum	   *v;

	if (x->shard_col == NULL)
		return NULL;
	res = gs_x_fan_out(x, "gs_citus_shard_keys", x->shard_col,
					   gs_x_array_literal(x, (Datum *) bounds, nbounds), false, &nres);
	if (res == NULL)
		return NULL;
	for (int r = 0; r < nres; r++)
		total += ARR_NDIM(res[r]) == 0 ? 0 : ARR_DIMS(res[r])[0];
	v = (Datum *) palloc(sizeof(Datum) * Max(total, 1));
	*m = 0;
	for (int r = 0; r < nres; r++)
	{
		int			k = ARR_NDIM(res[r]) == 0 ? 0 : ARR_DIMS(res[r])[0];
		const int64 *c = (const int64 *) ARR_DATA_PTR(res[r]);

		for (int i = 0; i < k; i++)
			v[(*m)++] = Int64GetDatum(c[i]);
	}
	x->shard_gathers++;
	return v;
}
