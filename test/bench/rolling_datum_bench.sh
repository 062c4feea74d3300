#!/bin/bash
# test/bench/rolling_datum_bench.sh — rolling percentiles over the comparison
# types (issue 33): gpu_quantile over numeric and text as moving window
# aggregates (state/datum_frame.c) against sum() OVER the same frame
# (PostgreSQL's own moving aggregates: the anchor) and against the same
# aggregate without moving-aggregate support (gsb_dquantile_plain below: what
# these types got before, PostgreSQL re-aggregating every frame).
#
# Before costs O(w) a row: 1M rows at w = 10,000 would take about an hour,
# so it is timed on the first R and R + D rows of the table (every row past
# row w has a full frame) and its full-frame cost per row, (t(R + D) - t(R)) / D,
# is given times 1M (an extrapolation, marked so).  Serially, in one
# session, the queries of a round in turn (alternating); each time is the
# median of GS_BENCH_REPS rounds.  Every query reads its result through
# count() over a sub-select.  Runs against the server of the PG* variables.
# Environment: GS_BENCH_ROWS (1000000), GS_BENCH_W (10000), GS_BENCH_REPS (3),
# GS_BENCH_BEFORE_D (2000), GS_BENCH_OUT (also write the table there).
set -u
ROWS=${GS_BENCH_ROWS:-1000000}
W=${GS_BENCH_W:-10000}
REPS=${GS_BENCH_REPS:-3}
D=${GS_BENCH_BEFORE_D:-2000}
OUT=${GS_BENCH_OUT:-/dev/null}
PSQL="psql -X -q -v ON_ERROR_STOP=1"
R=$((W + 500))

$PSQL <<SQL
CREATE EXTENSION IF NOT EXISTS gpuselect;
SELECT setseed(0.5) \g /dev/null
DROP TABLE IF EXISTS gsb_rd, gsb_rd_r, gsb_rd_rd;
-- numeric of two scales (the values path, not one scale's int64 keys), text of 12 characters
CREATE TABLE gsb_rd AS
SELECT i, round((random() * 1000)::numeric, 2 + i % 2) AS n, substr(md5(i::text), 1, 12) AS t
FROM generate_series(1, $ROWS) i;
CREATE TABLE gsb_rd_r AS SELECT * FROM gsb_rd WHERE i <= $R;
CREATE TABLE gsb_rd_rd AS SELECT * FROM gsb_rd WHERE i <= $R + $D;
VACUUM ANALYZE gsb_rd, gsb_rd_r, gsb_rd_rd;
-- the aggregate as before: no moving-aggregate support
CREATE OR REPLACE AGGREGATE gsb_dquantile_plain(anyelement, float8) (
	SFUNC = gs_quantile_trans, STYPE = internal,
	FINALFUNC = gs_quantile_final, FINALFUNC_EXTRA);
SQL

win="ORDER BY i ROWS BETWEEN $((W - 1)) PRECEDING AND CURRENT ROW"
q() { echo "SELECT count(v) FROM (SELECT $1 OVER ($win) AS v FROM $2) s"; }

# name|query
QUERIES=(
"${ROWS} rows, w=${W}: sum(i)|$(q 'sum(i)' gsb_rd)"
"${ROWS} rows, w=${W}: sum(n) numeric|$(q 'sum(n)' gsb_rd)"
"${ROWS} rows, w=${W}: gpu_quantile(n, 0.95) numeric|$(q 'gpu_quantile(n, 0.95)' gsb_rd)"
"${ROWS} rows, w=${W}: gpu_quantiles(n, {0.5,0.9,0.99}) numeric|$(q "gpu_quantiles(n, '{0.5,0.9,0.99}')" gsb_rd)"
"${ROWS} rows, w=${W}: gpu_quantile(t, 0.95) text \"C\"|$(q 'gpu_quantile(t, 0.95)' gsb_rd)"
"${R} rows, w=${W}: before, numeric|$(q 'gsb_dquantile_plain(n, 0.95)' gsb_rd_r)"
"$((R + D)) rows, w=${W}: before, numeric|$(q 'gsb_dquantile_plain(n, 0.95)' gsb_rd_rd)"
"${R} rows, w=${W}: before, text|$(q 'gsb_dquantile_plain(t, 0.95)' gsb_rd_r)"
"$((R + D)) rows, w=${W}: before, text|$(q 'gsb_dquantile_plain(t, 0.95)' gsb_rd_rd)"
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

med() {
	awk -v q="Q$1" '$0 == q {want = 1; next} want && /^Time:/ {print $2; want = 0}' "$log" |
		sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print "ERR"}'
}
{
	echo "# rolling_datum_bench started $started, commit $commit (the checkout's HEAD at the start; the server runs what was installed)"
	echo "machine: $(uname -n), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	echo "server: $($PSQL -tAc 'SHOW server_version'), reps: $REPS (median), serial, one session, alternating"
	echo
	printf '| %-58s | %10s | %s |\n' query "median ms" "all rounds"
	echo "|---|---:|---|"
	for i in "${!QUERIES[@]}"; do
		all=$(awk -v q="Q$i" '$0 == q {want = 1; next} want && /^Time:/ {print $2; want = 0}' "$log")
		printf '| %-58s | %10s | %s |\n' "${QUERIES[$i]%%|*}" "$(med "$i")" "$(echo $all)"
	done
	echo
	for p in "numeric 5 6" "text 7 8"; do
		set -- $p
		awk -v name="$1" -v a="$(med "$2")" -v b="$(med "$3")" -v d="$D" -v rows="$ROWS" 'BEGIN {
			per = (b - a) / d;
			printf("before, %s: %.3f ms a full-frame row; x %d rows = %.0f s (extrapolated)\n", name, per, rows, per * rows / 1000) }'
	done
} | tee "$OUT"
rm -f "$script" "$log"
