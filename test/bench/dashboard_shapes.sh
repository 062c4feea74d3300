#!/usr/bin/env bash
# test/bench/dashboard_shapes.sh — what the planner makes of the SQL that
# Grafana and Metabase send for a percentile / median panel, over the
# comparison types (numeric, interval), with gpuselect.accelerate_builtins
# off and on, without and with CREATE STATISTICS on the grouping expression.
#
#   Grafana's $__timeGroup(ts, 5m) expands to floor(extract(epoch from ts)/300)*300
#   (grafana/grafana pkg/tsdb/grafana-postgresql-datasource/macros.go);
#   Metabase's "Median" is [:percentile arg 0.5] (driver/postgres.clj), which
#   its SQL layer writes as PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x).
#
# Runs against the server of the environment (PGHOST, PGPORT, PGUSER,
# PGDATABASE; gpuselect installed).  Per query and setting: the top node's
# group estimate, the plan's aggregation nodes, the median of
# GS_BENCH_RUNS EXPLAIN (ANALYZE, TIMING OFF) "Execution Time"s, and whether
# the answer (md5 of all rows) equals the built-in's with the setting off.
#
# Environment: GS_BENCH_ROWS [500000], GS_BENCH_WORKERS [2], GS_BENCH_RUNS [3]
set -euo pipefail

ROWS=${GS_BENCH_ROWS:-500000}
WORKERS=${GS_BENCH_WORKERS:-2}
RUNS=${GS_BENCH_RUNS:-3}
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
export PGOPTIONS="-c client_min_messages=warning"
SET="LOAD 'gpuselect'; SET gpuselect.device = 'cpu'; SET jit = off; SET work_mem = '256MB';
SET max_parallel_workers_per_gather = $WORKERS;"

"${PSQL[@]}" <<SQL
CREATE EXTENSION IF NOT EXISTS gpuselect;
DROP TABLE IF EXISTS dash_shapes;
SELECT setseed(0.3);
CREATE TABLE dash_shapes AS
SELECT timestamptz '2026-01-01 00:00+00' + random() * interval '7 days' AS ts,
       round((exp(random() * 6))::numeric, 2) AS price,
       make_interval(secs => round((exp(random() * 8))::numeric, 3)) AS dur
FROM generate_series(1, $ROWS);
VACUUM ANALYZE dash_shapes;
SQL

NAMES=(sum_grafana grafana_p95_price grafana_p95_dur metabase_median_day disc_price_hour)
declare -A Q=(
	[sum_grafana]="SELECT floor(extract(epoch from ts)/300)*300 AS time, sum(price) FROM dash_shapes GROUP BY 1 ORDER BY 1"
	[grafana_p95_price]="SELECT floor(extract(epoch from ts)/300)*300 AS time, percentile_cont(0.95) WITHIN GROUP (ORDER BY price) FROM dash_shapes GROUP BY 1 ORDER BY 1"
	[grafana_p95_dur]="SELECT floor(extract(epoch from ts)/300)*300 AS time, percentile_cont(0.95) WITHIN GROUP (ORDER BY dur) FROM dash_shapes GROUP BY 1 ORDER BY 1"
	[metabase_median_day]="SELECT date_trunc('day', ts) AS ts, percentile_cont(0.5) WITHIN GROUP (ORDER BY price) FROM dash_shapes GROUP BY 1 ORDER BY 1"
	[disc_price_hour]="SELECT date_trunc('hour', ts), percentile_disc(0.5) WITHIN GROUP (ORDER BY price) FROM dash_shapes GROUP BY 1 ORDER BY 1"
)

one() {	# <accelerate> <sql...>: psql with the settings
	local acc=$1; shift
	"${PSQL[@]}" -c "$SET SET gpuselect.accelerate_builtins = $acc;" "$@"
}

run() {	# <statistics label>
	local name acc q est plan ts med ref ans
	for name in "${NAMES[@]}"; do
		q=${Q[$name]}
		ref=$(one off -c "SELECT md5(string_agg(r::text, ',')) FROM ($q) r")
		for acc in off on; do
			est=$(one "$acc" -c "EXPLAIN $q" | head -1 | grep -oE 'rows=[0-9]+')
			plan=$(one "$acc" -c "EXPLAIN (COSTS OFF) $q" |
				sed -nE 's/^ *(-> +)?((Finalize |Partial )?(HashAggregate|GroupAggregate|Gather Merge|Gather|Sort|Aggregate))$/\2/p' |
				paste -sd '>' | sed 's/>/ > /g')
			ans=$(one "$acc" -c "SELECT md5(string_agg(r::text, ',')) FROM ($q) r")
			ts=""
			for _ in $(seq "$RUNS"); do
				ts="$ts $(one "$acc" -c "EXPLAIN (ANALYZE, TIMING OFF) $q" | sed -n 's/^Execution Time: \(.*\) ms$/\1/p')"
			done
			med=$(echo $ts | tr ' ' '\n' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
			echo "| $1 | $name | $acc | $est | $plan | $med | $([ "$ans" = "$ref" ] && echo equal || echo DIFFERENT) |"
		done
	done
}

echo "- date: $(date -u '+%Y-%m-%d %H:%M') UTC; server: $("${PSQL[@]}" -c 'SELECT version()')"
echo "- rows: $ROWS; workers: $WORKERS; rounds: $RUNS; gpuselect.device = cpu; work_mem 256MB; jit off"
echo "- groups: $("${PSQL[@]}" -c "SELECT format('5 min %s, hour %s, day %s', count(DISTINCT floor(extract(epoch from ts)/300)*300), count(DISTINCT date_trunc('hour', ts)), count(DISTINCT date_trunc('day', ts))) FROM dash_shapes")"
echo
echo "| statistics | query | accelerate_builtins | top node's estimate | aggregation nodes | ms (median) | answer vs built-in |"
echo "|---|---|---|---|---|---|---|"
run none
"${PSQL[@]}" -c "CREATE STATISTICS dash_shapes_5min ON (floor(extract(epoch from ts)/300)*300) FROM dash_shapes;
CREATE STATISTICS dash_shapes_hour ON (date_trunc('hour', ts)) FROM dash_shapes;
CREATE STATISTICS dash_shapes_day ON (date_trunc('day', ts)) FROM dash_shapes; ANALYZE dash_shapes"
run "CREATE STATISTICS"
"${PSQL[@]}" -c "DROP TABLE dash_shapes"
