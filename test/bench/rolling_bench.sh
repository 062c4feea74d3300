#!/bin/bash
# test/bench/rolling_bench.sh — rolling percentiles (issue 33): gpu_quantile,
# gpu_quantiles and gpu_median as moving window aggregates (moving_aggs.c)
# against sum(i) OVER the same frame (PostgreSQL's own moving aggregate: the
# floor), and the frame-restart cases (EXCLUDE, frames that jump) against
# the aggregates as they were before (the same plain functions without the
# moving-aggregate options: gsb_*_plain below, PostgreSQL re-aggregates every
# frame).  Serially, in ONE session, the queries of a round in turn
# (alternating), so that load from other sessions hits all of them alike;
# each time is the median of GS_BENCH_REPS rounds.  Every query reads its
# window's result through count() over a sub-select, so no output is transferred.
#
# Runs against the server given by the PG* variables, gpuselect installed
# (e.g. a cluster of test/lib/pgenv.sh's gs_cluster_start).
# Environment: GS_BENCH_ROWS (default 1000000), GS_BENCH_SMALL_ROWS (the
# re-aggregating cases, default 200000), GS_BENCH_REPS (default 3),
# GS_BENCH_OUT (also write the table there).
set -u
ROWS=${GS_BENCH_ROWS:-1000000}
SMALL=${GS_BENCH_SMALL_ROWS:-200000}
REPS=${GS_BENCH_REPS:-3}
OUT=${GS_BENCH_OUT:-/dev/null}
PSQL="psql -X -q -v ON_ERROR_STOP=1"

$PSQL <<SQL
CREATE EXTENSION IF NOT EXISTS gpuselect;
SELECT setseed(0.5) \g /dev/null
DROP TABLE IF EXISTS gsb_roll, gsb_roll_small;
CREATE TABLE gsb_roll AS SELECT i, random() * 1000 AS x FROM generate_series(1, $ROWS) i;
CREATE TABLE gsb_roll_small AS SELECT * FROM gsb_roll WHERE i <= $SMALL;
VACUUM ANALYZE gsb_roll, gsb_roll_small;
-- the aggregates as before issue 33: no moving-aggregate support
CREATE OR REPLACE AGGREGATE gsb_quantile_plain(anyelement, float8) (
	SFUNC = gs_quantile_trans, STYPE = internal,
	FINALFUNC = gs_quantile_final, FINALFUNC_EXTRA);
CREATE OR REPLACE AGGREGATE gsb_quantiles_plain(anyelement, float8[]) (
	SFUNC = gs_quantiles_trans, STYPE = internal,
	FINALFUNC = gs_quantiles_final, FINALFUNC_EXTRA);
SQL

w() { echo "ORDER BY i ROWS BETWEEN $(($1 - 1)) PRECEDING AND CURRENT ROW"; }
ex="ORDER BY i ROWS BETWEEN 50 PRECEDING AND 50 FOLLOWING EXCLUDE CURRENT ROW"
jump="ORDER BY i / 100 GROUPS BETWEEN CURRENT ROW AND CURRENT ROW"
q() { echo "SELECT count(v) FROM (SELECT $1 OVER ($2) AS v FROM $3) s"; }

# name|query; the floor first in each block
QUERIES=(
"${ROWS} rows, w=10000: sum(i)|$(q 'sum(i)' "$(w 10000)" gsb_roll)"
"${ROWS} rows, w=10000: gpu_quantile(x, 0.95)|$(q 'gpu_quantile(x, 0.95)' "$(w 10000)" gsb_roll)"
"${ROWS} rows, w=10000: gpu_quantiles(x, {0.5,0.9,0.99})|$(q "gpu_quantiles(x, '{0.5,0.9,0.99}')" "$(w 10000)" gsb_roll)"
"${ROWS} rows, w=10000: gpu_median(x)|$(q 'gpu_median(x)' "$(w 10000)" gsb_roll)"
"${ROWS} rows, w=1000: sum(i)|$(q 'sum(i)' "$(w 1000)" gsb_roll)"
"${ROWS} rows, w=1000: gpu_quantile(x, 0.95)|$(q 'gpu_quantile(x, 0.95)' "$(w 1000)" gsb_roll)"
"${SMALL} rows, w=100: sum(i)|$(q 'sum(i)' "$(w 100)" gsb_roll_small)"
"${SMALL} rows, w=100: gpu_quantile(x, 0.95)|$(q 'gpu_quantile(x, 0.95)' "$(w 100)" gsb_roll_small)"
"${SMALL} rows, w=100: before (re-aggregating)|$(q 'gsb_quantile_plain(x, 0.95)' "$(w 100)" gsb_roll_small)"
"${SMALL} rows, w=1000: gpu_quantile(x, 0.95)|$(q 'gpu_quantile(x, 0.95)' "$(w 1000)" gsb_roll_small)"
"${SMALL} rows, EXCLUDE CURRENT ROW (w=101): gpu_quantile|$(q 'gpu_quantile(x, 0.95)' "$ex" gsb_roll_small)"
"${SMALL} rows, EXCLUDE CURRENT ROW (w=101): before|$(q 'gsb_quantile_plain(x, 0.95)' "$ex" gsb_roll_small)"
"${SMALL} rows, EXCLUDE, gpu_quantiles(3)|$(q "gpu_quantiles(x, '{0.5,0.9,0.99}')" "$ex" gsb_roll_small)"
"${SMALL} rows, EXCLUDE, before: quantiles(3)|$(q "gsb_quantiles_plain(x, '{0.5,0.9,0.99}')" "$ex" gsb_roll_small)"
"${SMALL} rows, jumping frames (GROUPS of 100): gpu_quantile|$(q 'gpu_quantile(x, 0.95)' "$jump" gsb_roll_small)"
"${SMALL} rows, jumping frames (GROUPS of 100): before|$(q 'gsb_quantile_plain(x, 0.95)' "$jump" gsb_roll_small)"
)

commit=$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
script=$(mktemp)
{
	echo "SET max_parallel_workers_per_gather = 0; SET gpuselect.device = 'cpu';"
	echo '\timing on'
	for ((r = 0; r < REPS; r++)); do
		for i in "${!QUERIES[@]}"; do
			echo "\\echo Q$i"
			echo "${QUERIES[$i]#*|};"
		done
	done
} >"$script"
log=$(mktemp)
$PSQL -f "$script" >"$log" 2>&1 || { cat "$log"; exit 1; }

{
	echo "# rolling_bench started $started, commit $commit (the checkout's HEAD at the start; the server runs what was installed)"
	echo "machine: $(uname -n), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	echo "server: $($PSQL -tAc 'SHOW server_version'), reps: $REPS (median), serial, one session, alternating"
	echo
	printf '| %-58s | %10s | %s |\n' query "median ms" "all rounds"
	echo "|---|---:|---|"
	for i in "${!QUERIES[@]}"; do
		all=$(awk -v q="Q$i" '$0 == q {want = 1; next} want && /^Time:/ {print $2; want = 0}' "$log")
		med=$(echo "$all" | sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print "ERR"}')
		printf '| %-58s | %10s | %s |\n' "${QUERIES[$i]%%|*}" "$med" "$(echo $all)"
	done
} | tee "$OUT"
rm -f "$script" "$log"
