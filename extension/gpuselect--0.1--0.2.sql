/* gpuselect 0.1 -> 0.2: moving-aggregate support for gpu_median,
 * gpu_quantile and gpu_quantiles (rolling percentiles as window functions);
 * gpuselect_status()'s kind column */

\echo Use "ALTER EXTENSION gpuselect UPDATE TO '0.2'" to load this file. \quit

-- Moving-aggregate support (src/aggs/moving_aggs.c): in a window whose frame
-- head moves, PostgreSQL adds the rows entering the frame, removes those
-- leaving it (the inverse functions) and reads the result after each row,
-- instead of aggregating every frame anew: O(log w) per row for a frame of w
-- rows.  Used only by WindowAgg; grouped and plain queries use the functions
-- above.  The inverse answers NULL for types without integer keys (numeric,
-- text, interval, ...), and PostgreSQL then re-aggregates the frame.
CREATE FUNCTION gs_moving_median_trans(internal, anyelement)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_moving_median_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_moving_median_inv(internal, anyelement)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_moving_median_inv'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_moving_median_final(internal, float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'gs_moving_median_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_moving_median_interval_final(internal, interval)
RETURNS interval
AS 'MODULE_PATHNAME', 'gs_moving_median_interval_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_moving_quantile_trans(internal, anyelement, float8)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_moving_quantile_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_moving_quantile_inv(internal, anyelement, float8)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_moving_quantile_inv'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_moving_quantile_final(internal, anyelement, float8)
RETURNS anyelement
AS 'MODULE_PATHNAME', 'gs_moving_quantile_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_moving_quantiles_trans(internal, anyelement, float8[])
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_moving_quantiles_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_moving_quantiles_inv(internal, anyelement, float8[])
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_moving_quantiles_inv'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_moving_quantiles_final(internal, anyelement, float8[])
RETURNS anyarray
AS 'MODULE_PATHNAME', 'gs_moving_quantiles_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

-- The aggregates gain their moving-aggregate functions.  ALTER AGGREGATE
-- cannot set them, and DROP + CREATE AGGREGATE would fail on (or, with
-- CASCADE, drop) every view that uses the aggregates, so the upgrade writes
-- the same pg_aggregate columns CREATE AGGREGATE writes for MSFUNC /
-- MINVFUNC / MSTYPE / MFINALFUNC / MFINALFUNC_EXTRA, and the dependencies
-- it records on those functions.  The extension is untrusted: only a
-- superuser runs this script.  test/t/013_upgrade.pl checks that the
-- result equals a fresh 0.2 install, catalog row for catalog row.
UPDATE pg_catalog.pg_aggregate a
SET aggmtransfn = m.mtrans,
	aggminvtransfn = m.minv,
	aggmfinalfn = m.mfinal,
	aggmtranstype = 'internal'::pg_catalog.regtype,
	aggmfinalextra = true,
	aggmfinalmodify = 'r'
FROM (VALUES
	('gpu_median(float8)'::pg_catalog.regprocedure, 'gs_moving_median_trans(internal, anyelement)'::pg_catalog.regprocedure,
	 'gs_moving_median_inv(internal, anyelement)'::pg_catalog.regprocedure, 'gs_moving_median_final(internal, float8)'::pg_catalog.regprocedure),
	('gpu_median(interval)', 'gs_moving_median_trans(internal, anyelement)',
	 'gs_moving_median_inv(internal, anyelement)', 'gs_moving_median_interval_final(internal, interval)'),
	('gpu_quantile(anyelement, float8)', 'gs_moving_quantile_trans(internal, anyelement, float8)',
	 'gs_moving_quantile_inv(internal, anyelement, float8)', 'gs_moving_quantile_final(internal, anyelement, float8)'),
	('gpu_quantiles(anyelement, float8[])', 'gs_moving_quantiles_trans(internal, anyelement, float8[])',
	 'gs_moving_quantiles_inv(internal, anyelement, float8[])', 'gs_moving_quantiles_final(internal, anyelement, float8[])')
) AS m(agg, mtrans, minv, mfinal)
WHERE a.aggfnoid = m.agg;

INSERT INTO pg_catalog.pg_depend (classid, objid, objsubid, refclassid, refobjid, refobjsubid, deptype)
SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, a.aggfnoid, 0,
	   'pg_catalog.pg_proc'::pg_catalog.regclass, f.fn, 0, 'n'
FROM pg_catalog.pg_aggregate a,
	 LATERAL (VALUES (a.aggmtransfn), (a.aggminvtransfn), (a.aggmfinalfn)) AS f(fn)
WHERE a.aggfnoid IN ('gpu_median(float8)'::pg_catalog.regprocedure, 'gpu_median(interval)'::pg_catalog.regprocedure,
					 'gpu_quantile(anyelement, float8)'::pg_catalog.regprocedure,
					 'gpu_quantiles(anyelement, float8[])'::pg_catalog.regprocedure)
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
				  WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = a.aggfnoid
					AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.refobjid = f.fn);

-- ---------------------------------------------------------------------
-- Typed twins for Citus (src/planner/planner.c, docs/citus.md).  Citus runs
-- an aggregate with a combine function on every shard through its own
-- worker_partial_agg and combines the states on the coordinator through
-- coord_combine_agg; both refuse an aggregate whose declared argument or
-- result types are polymorphic ("could not confirm type correctness").
-- On a query that reads a Citus table the planner hook therefore swaps
-- gpu_quantile(s) and its own planner targets for these twins: the same
-- transition, combine, serialize and final functions (the final functions
-- below only declare a concrete result type), declared for one type each.
-- A type without a twin gets the *_gather forms of gpu_quantile(s), which
-- have no combine function: Citus then sends the rows, and the coordinator
-- aggregates them.  Nobody is meant to call them by hand.
-- ---------------------------------------------------------------------

DO $twins$
DECLARE
	t text;
	variant text;
	kind text;
	cont_kind text;
BEGIN
	FOREACH t IN ARRAY ARRAY['int2', 'int4', 'int8', 'float4', 'float8', 'date',
							 'timestamp', 'timestamptz', 'numeric', 'interval'] LOOP
		EXECUTE format($f$
			CREATE FUNCTION gs_quantile_final(internal, %1$s, float8) RETURNS %1$s
			AS 'MODULE_PATHNAME', 'gs_quantile_final'
			LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE$f$, t);
		EXECUTE format($f$
			CREATE FUNCTION gs_quantiles_final(internal, %1$s, float8[]) RETURNS %1$s[]
			AS 'MODULE_PATHNAME', 'gs_quantiles_final'
			LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE$f$, t);
		EXECUTE format($f$
			CREATE FUNCTION gs_planner_disc_final(internal, %1$s, float8) RETURNS %1$s
			AS 'MODULE_PATHNAME', 'gs_planner_disc_final'
			LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE$f$, t);
		EXECUTE format($f$
			CREATE FUNCTION gs_planner_disc_multi_final(internal, %1$s, float8[]) RETURNS %1$s[]
			AS 'MODULE_PATHNAME', 'gs_planner_disc_multi_final'
			LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE$f$, t);
		EXECUTE format($f$
			CREATE AGGREGATE gs_planner_quantile_typed(%1$s, float8) (
				SFUNC = gs_quantile_trans, STYPE = internal,
				FINALFUNC = gs_quantile_final, FINALFUNC_EXTRA,
				COMBINEFUNC = gs_combine, SERIALFUNC = gs_serialize,
				DESERIALFUNC = gs_deserialize, PARALLEL = SAFE)$f$, t);
		EXECUTE format($f$
			CREATE AGGREGATE gs_planner_quantiles_typed(%1$s, float8[]) (
				SFUNC = gs_quantiles_trans, STYPE = internal,
				FINALFUNC = gs_quantiles_final, FINALFUNC_EXTRA,
				COMBINEFUNC = gs_combine, SERIALFUNC = gs_serialize,
				DESERIALFUNC = gs_deserialize, PARALLEL = SAFE)$f$, t);
		-- percentile_cont interpolates float8 (and interval: the concrete
		-- gs_planner_*cont*(interval, ...) above serve as they are)
		FOREACH variant IN ARRAY ARRAY['', 'builtin_'] LOOP
			FOREACH kind IN ARRAY CASE WHEN t = 'float8'
					THEN ARRAY['disc', 'disc_desc', 'cont', 'cont_desc']
					ELSE ARRAY['disc', 'disc_desc'] END LOOP
				cont_kind := split_part(kind, '_', 1);
				EXECUTE format($f$
					CREATE AGGREGATE %I(%s, float8) (
						SFUNC = %I, STYPE = internal,
						FINALFUNC = %I, FINALFUNC_EXTRA,
						COMBINEFUNC = gs_combine, SERIALFUNC = gs_serialize,
						DESERIALFUNC = gs_deserialize, PARALLEL = SAFE)$f$,
					'gs_planner_' || variant || kind || '_typed', t,
					'gs_planner_trans' || CASE WHEN kind LIKE '%_desc' THEN '_desc' ELSE '' END,
					'gs_planner_' || cont_kind || '_final');
				EXECUTE format($f$
					CREATE AGGREGATE %I(%s, float8[]) (
						SFUNC = %I, STYPE = internal,
						FINALFUNC = %I, FINALFUNC_EXTRA,
						COMBINEFUNC = gs_combine, SERIALFUNC = gs_serialize,
						DESERIALFUNC = gs_deserialize, PARALLEL = SAFE)$f$,
					'gs_planner_' || variant || kind || '_typed', t,
					'gs_planner_trans_multi' || CASE WHEN kind LIKE '%_desc' THEN '_desc' ELSE '' END,
					'gs_planner_' || cont_kind || '_multi_final');
			END LOOP;
		END LOOP;
	END LOOP;
END
$twins$;

-- any other type: no combine function, so Citus gathers the rows
CREATE AGGREGATE gs_planner_quantile_gather(anyelement, float8) (
	SFUNC = gs_quantile_trans,
	STYPE = internal,
	FINALFUNC = gs_quantile_final,
	FINALFUNC_EXTRA,
	PARALLEL = SAFE
);

CREATE AGGREGATE gs_planner_quantiles_gather(anyelement, float8[]) (
	SFUNC = gs_quantiles_trans,
	STYPE = internal,
	FINALFUNC = gs_quantiles_final,
	FINALFUNC_EXTRA,
	PARALLEL = SAFE
);

-- gpuselect_status() gains a kind column (status.c): the operator's rows
-- set apart from the internal counters.  A new OUT column changes the
-- result type, which CREATE OR REPLACE cannot do.
DROP FUNCTION gpuselect_status();
CREATE FUNCTION gpuselect_status(OUT name text, OUT value text, OUT kind text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpuselect_status'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuselect_status() IS
'gpuselect settings, state, counters and the last selection run of this backend; kind: setting, state, counter, last_run or internal';

-- ---------------------------------------------------------------------
-- The Citus exchange (src/aggs/citus_exchange.c, src/planner/planner_citus.c,
-- docs/citus.md).  On an ungrouped query over one hash-distributed table
-- the planner replaces the percentile aggregates by gs_citus_exchange,
-- which runs rounds of distributed queries through SPI (a count, a sample,
-- counts between splitters, the values near the wanted ranks) so that the
-- coordinator does not receive every value.  gs_citus_key runs on the
-- workers: gpuselect's order-preserving key of a value, as int8.  Nobody is
-- meant to call them by hand (gs_citus_exchange runs its SQL arguments
-- with the caller's privileges, as any query of the caller would).
-- ---------------------------------------------------------------------

CREATE FUNCTION gs_citus_key(anyelement)
RETURNS int8
AS 'MODULE_PATHNAME', 'gs_citus_key'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

-- width_bucket(gs_citus_key(x), t) without width_bucket's per-step fmgr
-- calls: the counts round's bucket of a row
CREATE FUNCTION gs_citus_bucket(anyelement, int8[])
RETURNS int4
AS 'MODULE_PATHNAME', 'gs_citus_bucket'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

-- the counts round's histogram (src/aggs/citus_keys.c): element b + 1 of
-- the result counts the rows whose bucket (gs_citus_bucket's) is b; one
-- array per shard, which Citus adds up through the combine function
CREATE FUNCTION gs_citus_histogram_add(int8[], int4)
RETURNS int8[]
AS 'MODULE_PATHNAME', 'gs_citus_histogram_add'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_citus_histogram_merge(int8[], int8[])
RETURNS int8[]
AS 'MODULE_PATHNAME', 'gs_citus_histogram_merge'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE gs_citus_histogram(int4) (
	SFUNC = gs_citus_histogram_add,
	STYPE = int8[],
	INITCOND = '{}',
	COMBINEFUNC = gs_citus_histogram_merge,
	PARALLEL = SAFE
);

-- the Citus exchange's shard scans (src/scan/bulk_shard_scan.c): a C
-- page loop over some shards of a table, run on the workers by the
-- coordinator where that is safe (docs/citus.md).  The histogram: element
-- b + 1 counts the shards' rows whose column col (found by name on each
-- shard) is in bucket b of the sorted thresholds (gs_citus_bucket's),
-- of those rows that satisfy the last argument (the WHERE as SQL, or '')
CREATE FUNCTION gs_citus_shard_histogram(regclass[], text, int8[], text)
RETURNS int8[]
AS 'MODULE_PATHNAME', 'gs_citus_shard_histogram'
LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;

-- the gather: the keys of those rows inside the ranges of the sorted
-- bounds lo1, hi1, lo2, hi2, ... (gs_citus_bucket(col, bounds) odd)
CREATE FUNCTION gs_citus_shard_keys(regclass[], text, int8[], text)
RETURNS int8[]
AS 'MODULE_PATHNAME', 'gs_citus_shard_keys'
LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;

-- grouped by gexpr (an integer, date or timestamp expression of the
-- columns): per group its counts, as above
CREATE FUNCTION gs_citus_shard_group_histogram(regclass[], text, int8[], text, text)
RETURNS int8[]
AS 'MODULE_PATHNAME', 'gs_citus_shard_group_histogram'
LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;

-- ... and per group (sorted values; the NULL group first) the keys inside
-- its own ranges (bounds sliced by offsets)
CREATE FUNCTION gs_citus_shard_group_keys(regclass[], text, int8[], text, int8[], int8[], text)
RETURNS int8[]
AS 'MODULE_PATHNAME', 'gs_citus_shard_group_keys'
LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;

-- the counts, as gs_citus_shard_group_histogram's, and every counted key
-- kept in a worker-side temporary file (the spool of exchange int8) for ...
CREATE FUNCTION gs_citus_shard_group_spool(regclass[], text, int8[], text, int8, text)
RETURNS int8[]
AS 'MODULE_PATHNAME', 'gs_citus_shard_group_spool'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- ... the gather, which reads it (and deletes it) instead of the shards
-- where it is there: 1 (from the spool) or 0, then gs_citus_shard_group_keys's
CREATE FUNCTION gs_citus_shard_group_spool_keys(regclass[], text, int8[], text, int8[], int8[], int8, text)
RETURNS int8[]
AS 'MODULE_PATHNAME', 'gs_citus_shard_group_spool_keys'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- a spool no gather will read, deleted: {1} where it was there
CREATE FUNCTION gs_citus_shard_spool_drop(regclass[], text, text, int8, text)
RETURNS int8[]
AS 'MODULE_PATHNAME', 'gs_citus_shard_spool_drop'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION gs_citus_exchange(regclass, text, text, text, float8[], anyelement)
RETURNS anyelement
AS 'MODULE_PATHNAME', 'gs_citus_exchange'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

-- GROUP BY one expression: a row per group (the planner reads the query
-- from this function instead of the table); the last argument is the
-- aggregate as SQL, today's plan, run where the groups are small
CREATE FUNCTION gs_citus_exchange_grouped(regclass, text, text, text, float8[], anyelement,
                                          text, anycompatible, text)
RETURNS TABLE (g anycompatible, r anyelement)
AS 'MODULE_PATHNAME', 'gs_citus_exchange_grouped'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE ROWS 100;
