/* gpuselect 0.2: exact percentiles, medians and quantiles by selection */

\echo Use "CREATE EXTENSION gpuselect" to load this file. \quit

-- ---------------------------------------------------------------------
-- Ordered-set aggregates: drop-in replacements for percentile_disc and
-- percentile_cont.  One transition function for all four, so PostgreSQL
-- shares one state between e.g. gpu_percentile_disc(0.5) and
-- gpu_percentile_cont(0.5) over the same x in the same query; the final
-- functions never modify the state (FINALFUNC_MODIFY = SHAREABLE).
-- ---------------------------------------------------------------------

CREATE FUNCTION gs_os_trans(internal, anyelement)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_os_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_pct_disc_final(internal, float8, anyelement)
RETURNS anyelement
AS 'MODULE_PATHNAME', 'gs_pct_disc_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_pct_disc_multi_final(internal, float8[], anyelement)
RETURNS anyarray
AS 'MODULE_PATHNAME', 'gs_pct_disc_multi_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_pct_cont_final(internal, float8, float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'gs_pct_cont_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_pct_cont_multi_final(internal, float8[], float8)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'gs_pct_cont_multi_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_pct_cont_interval_final(internal, float8, interval)
RETURNS interval
AS 'MODULE_PATHNAME', 'gs_pct_cont_interval_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_pct_cont_interval_multi_final(internal, float8[], interval)
RETURNS interval[]
AS 'MODULE_PATHNAME', 'gs_pct_cont_interval_multi_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE gpu_percentile_disc(float8 ORDER BY anyelement) (
	SFUNC = gs_os_trans,
	STYPE = internal,
	FINALFUNC = gs_pct_disc_final,
	FINALFUNC_EXTRA,
	FINALFUNC_MODIFY = SHAREABLE
);

CREATE AGGREGATE gpu_percentile_disc(float8[] ORDER BY anyelement) (
	SFUNC = gs_os_trans,
	STYPE = internal,
	FINALFUNC = gs_pct_disc_multi_final,
	FINALFUNC_EXTRA,
	FINALFUNC_MODIFY = SHAREABLE
);

-- percentile_cont: float8 and interval, as the built-in, so that the same
-- implicit casts apply (numeric and the integer types through float8) and a
-- type it does not take is the same "does not exist" error.
CREATE AGGREGATE gpu_percentile_cont(float8 ORDER BY float8) (
	SFUNC = gs_os_trans,
	STYPE = internal,
	FINALFUNC = gs_pct_cont_final,
	FINALFUNC_EXTRA,
	FINALFUNC_MODIFY = SHAREABLE
);

CREATE AGGREGATE gpu_percentile_cont(float8[] ORDER BY float8) (
	SFUNC = gs_os_trans,
	STYPE = internal,
	FINALFUNC = gs_pct_cont_multi_final,
	FINALFUNC_EXTRA,
	FINALFUNC_MODIFY = SHAREABLE
);

CREATE AGGREGATE gpu_percentile_cont(float8 ORDER BY interval) (
	SFUNC = gs_os_trans,
	STYPE = internal,
	FINALFUNC = gs_pct_cont_interval_final,
	FINALFUNC_EXTRA,
	FINALFUNC_MODIFY = SHAREABLE
);

CREATE AGGREGATE gpu_percentile_cont(float8[] ORDER BY interval) (
	SFUNC = gs_os_trans,
	STYPE = internal,
	FINALFUNC = gs_pct_cont_interval_multi_final,
	FINALFUNC_EXTRA,
	FINALFUNC_MODIFY = SHAREABLE
);

COMMENT ON AGGREGATE gpu_percentile_disc(float8 ORDER BY anyelement) IS
'percentile_disc by selection: first value whose position in the ordering equals or exceeds the fraction';
COMMENT ON AGGREGATE gpu_percentile_disc(float8[] ORDER BY anyelement) IS
'percentile_disc(float8[]) by selection: one result per fraction, same shape as the fraction array';
COMMENT ON AGGREGATE gpu_percentile_cont(float8 ORDER BY float8) IS
'percentile_cont by selection over double precision (and what casts to it implicitly: integers, real, numeric)';
COMMENT ON AGGREGATE gpu_percentile_cont(float8[] ORDER BY float8) IS
'percentile_cont(float8[]) by selection over double precision, same shape as the fraction array';
COMMENT ON AGGREGATE gpu_percentile_cont(float8 ORDER BY interval) IS
'percentile_cont by selection over interval, interpolated as the built-in does';
COMMENT ON AGGREGATE gpu_percentile_cont(float8[] ORDER BY interval) IS
'percentile_cont(float8[]) by selection over interval, same shape as the fraction array';

-- ---------------------------------------------------------------------
-- Plain aggregates: parallel safe (combine / serialize / deserialize).
-- ---------------------------------------------------------------------

CREATE FUNCTION gs_median_trans(internal, anyelement)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_median_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_median_final(internal, float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'gs_median_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_median_interval_final(internal, interval)
RETURNS interval
AS 'MODULE_PATHNAME', 'gs_median_interval_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_quantile_trans(internal, anyelement, float8)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_quantile_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_quantile_final(internal, anyelement, float8)
RETURNS anyelement
AS 'MODULE_PATHNAME', 'gs_quantile_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_quantiles_trans(internal, anyelement, float8[])
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_quantiles_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_quantiles_final(internal, anyelement, float8[])
RETURNS anyarray
AS 'MODULE_PATHNAME', 'gs_quantiles_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_combine'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gs_serialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_deserialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

-- Moving-aggregate support (src/moving_aggs.c): in a window whose frame
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

-- gpu_median: float8 and interval, as percentile_cont(0.5)
CREATE AGGREGATE gpu_median(float8) (
	SFUNC = gs_median_trans,
	STYPE = internal,
	FINALFUNC = gs_median_final,
	FINALFUNC_EXTRA,
	COMBINEFUNC = gs_combine,
	SERIALFUNC = gs_serialize,
	DESERIALFUNC = gs_deserialize,
	PARALLEL = SAFE,
	MSFUNC = gs_moving_median_trans,
	MINVFUNC = gs_moving_median_inv,
	MSTYPE = internal,
	MFINALFUNC = gs_moving_median_final,
	MFINALFUNC_EXTRA
);

CREATE AGGREGATE gpu_median(interval) (
	SFUNC = gs_median_trans,
	STYPE = internal,
	FINALFUNC = gs_median_interval_final,
	FINALFUNC_EXTRA,
	COMBINEFUNC = gs_combine,
	SERIALFUNC = gs_serialize,
	DESERIALFUNC = gs_deserialize,
	PARALLEL = SAFE,
	MSFUNC = gs_moving_median_trans,
	MINVFUNC = gs_moving_median_inv,
	MSTYPE = internal,
	MFINALFUNC = gs_moving_median_interval_final,
	MFINALFUNC_EXTRA
);

CREATE AGGREGATE gpu_quantile(anyelement, float8) (
	SFUNC = gs_quantile_trans,
	STYPE = internal,
	FINALFUNC = gs_quantile_final,
	FINALFUNC_EXTRA,
	COMBINEFUNC = gs_combine,
	SERIALFUNC = gs_serialize,
	DESERIALFUNC = gs_deserialize,
	PARALLEL = SAFE,
	MSFUNC = gs_moving_quantile_trans,
	MINVFUNC = gs_moving_quantile_inv,
	MSTYPE = internal,
	MFINALFUNC = gs_moving_quantile_final,
	MFINALFUNC_EXTRA
);

CREATE AGGREGATE gpu_quantiles(anyelement, float8[]) (
	SFUNC = gs_quantiles_trans,
	STYPE = internal,
	FINALFUNC = gs_quantiles_final,
	FINALFUNC_EXTRA,
	COMBINEFUNC = gs_combine,
	SERIALFUNC = gs_serialize,
	DESERIALFUNC = gs_deserialize,
	PARALLEL = SAFE,
	MSFUNC = gs_moving_quantiles_trans,
	MINVFUNC = gs_moving_quantiles_inv,
	MSTYPE = internal,
	MFINALFUNC = gs_moving_quantiles_final,
	MFINALFUNC_EXTRA
);

COMMENT ON AGGREGATE gpu_median(float8) IS
'percentile_cont(0.5) WITHIN GROUP (ORDER BY x) by selection (x: double precision or what casts to it implicitly)';
COMMENT ON AGGREGATE gpu_median(interval) IS
'percentile_cont(0.5) WITHIN GROUP (ORDER BY x) by selection over interval';
COMMENT ON AGGREGATE gpu_quantile(anyelement, float8) IS
'percentile_disc(p) WITHIN GROUP (ORDER BY x) by selection; p must be the same in every row of a group';
COMMENT ON AGGREGATE gpu_quantiles(anyelement, float8[]) IS
'percentile_disc(p[]) WITHIN GROUP (ORDER BY x) by selection; p[] must be the same in every row of a group';

-- ---------------------------------------------------------------------
-- Status: settings, GPU availability, run counters, the last run.
-- ---------------------------------------------------------------------

CREATE FUNCTION gpuselect_status(OUT name text, OUT value text, OUT kind text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpuselect_status'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuselect_status() IS
'gpuselect settings, state, counters and the last selection run of this backend; kind: setting, state, counter, last_run or internal';

-- ---------------------------------------------------------------------
-- Planner targets (src/planner/planner.c, src/planner/planner_aggs.c).  The planner hook
-- replaces gpu_percentile_disc/cont(p) WITHIN GROUP (ORDER BY x [DESC])
-- -- and, with gpuselect.accelerate_builtins, the built-in percentile_disc
-- and percentile_cont -- by these plain aggregates when the fraction is the
-- same for the whole group, so that GROUP BY can hash and workers can
-- aggregate partially.  Not meant to be called by hand.  The name says what
-- they stand for: "_desc" ORDER BY x DESC; "builtin_" a built-in call,
-- always exact (gpuselect.approximate is ignored).
-- ---------------------------------------------------------------------

CREATE FUNCTION gs_planner_trans(internal, anyelement, float8)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_planner_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_planner_trans_multi(internal, anyelement, float8[])
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_planner_trans_multi'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

-- DESC has transition functions of its own: PostgreSQL shares a transition
-- state between aggregates with the same transition function and arguments
CREATE FUNCTION gs_planner_trans_desc(internal, anyelement, float8)
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_planner_trans_desc'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_planner_trans_multi_desc(internal, anyelement, float8[])
RETURNS internal
AS 'MODULE_PATHNAME', 'gs_planner_trans_multi_desc'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_planner_disc_final(internal, anyelement, float8)
RETURNS anyelement
AS 'MODULE_PATHNAME', 'gs_planner_disc_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_planner_disc_multi_final(internal, anyelement, float8[])
RETURNS anyarray
AS 'MODULE_PATHNAME', 'gs_planner_disc_multi_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_planner_cont_final(internal, anyelement, float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'gs_planner_cont_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_planner_cont_multi_final(internal, anyelement, float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'gs_planner_cont_multi_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

-- percentile_cont over interval returns interval: overloads of their own
CREATE FUNCTION gs_planner_cont_interval_final(internal, interval, float8)
RETURNS interval
AS 'MODULE_PATHNAME', 'gs_planner_cont_interval_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION gs_planner_cont_interval_multi_final(internal, interval, float8[])
RETURNS interval[]
AS 'MODULE_PATHNAME', 'gs_planner_cont_interval_multi_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

-- the ordered-set final functions' fraction check, above a rewritten
-- aggregate whose fraction is not a constant (a group with no rows)
CREATE FUNCTION gs_planner_check_fraction(anyelement, float8)
RETURNS anyelement
AS 'MODULE_PATHNAME', 'gs_planner_check_fraction'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

DO $planner$
DECLARE
	variant text;
	kind text;
BEGIN
	FOREACH variant IN ARRAY ARRAY['', 'builtin_'] LOOP
		FOREACH kind IN ARRAY ARRAY['disc', 'disc_desc', 'cont', 'cont_desc'] LOOP
			EXECUTE format($f$
				CREATE AGGREGATE %I(anyelement, float8) (
					SFUNC = %I, STYPE = internal,
					FINALFUNC = %I, FINALFUNC_EXTRA,
					COMBINEFUNC = gs_combine, SERIALFUNC = gs_serialize,
					DESERIALFUNC = gs_deserialize, PARALLEL = SAFE)$f$,
				'gs_planner_' || variant || kind,
				'gs_planner_trans' || CASE WHEN kind LIKE '%_desc' THEN '_desc' ELSE '' END,
				'gs_planner_' || split_part(kind, '_', 1) || '_final');
			EXECUTE format($f$
				CREATE AGGREGATE %I(anyelement, float8[]) (
					SFUNC = %I, STYPE = internal,
					FINALFUNC = %I, FINALFUNC_EXTRA,
					COMBINEFUNC = gs_combine, SERIALFUNC = gs_serialize,
					DESERIALFUNC = gs_deserialize, PARALLEL = SAFE)$f$,
				'gs_planner_' || variant || kind,
				'gs_planner_trans_multi' || CASE WHEN kind LIKE '%_desc' THEN '_desc' ELSE '' END,
				'gs_planner_' || split_part(kind, '_', 1) || '_multi_final');
		END LOOP;
		FOREACH kind IN ARRAY ARRAY['cont', 'cont_desc'] LOOP
			EXECUTE format($f$
				CREATE AGGREGATE %I(interval, float8) (
					SFUNC = %I, STYPE = internal,
					FINALFUNC = gs_planner_cont_interval_final, FINALFUNC_EXTRA,
					COMBINEFUNC = gs_combine, SERIALFUNC = gs_serialize,
					DESERIALFUNC = gs_deserialize, PARALLEL = SAFE)$f$,
				'gs_planner_' || variant || kind,
				'gs_planner_trans' || CASE WHEN kind LIKE '%_desc' THEN '_desc' ELSE '' END);
			EXECUTE format($f$
				CREATE AGGREGATE %I(interval, float8[]) (
					SFUNC = %I, STYPE = internal,
					FINALFUNC = gs_planner_cont_interval_multi_final, FINALFUNC_EXTRA,
					COMBINEFUNC = gs_combine, SERIALFUNC = gs_serialize,
					DESERIALFUNC = gs_deserialize, PARALLEL = SAFE)$f$,
				'gs_planner_' || variant || kind,
				'gs_planner_trans_multi' || CASE WHEN kind LIKE '%_desc' THEN '_desc' ELSE '' END);
		END LOOP;
	END LOOP;
END
$planner$;

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
