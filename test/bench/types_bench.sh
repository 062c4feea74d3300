#!/bin/bash
# test/bench/types_bench.sh — gpuselect's comparison path (numeric, interval,
# text: datum_select.c) against the built-in percentile_disc/percentile_cont
# and the sum(x)/count(x) floor, serially, in ONE session, the queries of a
# round run in turn (alternating) so that load from other sessions hits all
# of them alike.  Each time is the median of GS_BENCH_REPS rounds.
#
# Runs against the server given by the PG* variables, gpuselect installed.
# Environment: GS_BENCH_ROWS (default 10000000), GS_BENCH_REPS (default 3),
# GS_BENCH_REUSE=1 (keep the tables of an earlier run of the same size),
# GS_BENCH_WORK_MEM (the built-in's work_mem, default 1GB: its in-memory
# sort, its fastest case), GS_BENCH_OUT (also write the table there).
set -u
ROWS=${GS_BENCH_ROWS:-10000000}
REPS=${GS_BENCH_REPS:-3}
WM=${GS_BENCH_WORK_MEM:-1GB}
OUT=${GS_BENCH_OUT:-/dev/null}
PSQL="psql -X -q -v ON_ERROR_STOP=1"

# GS_BENCH_REUSE=1: keep tables of a previous run with the same row count (same seed, same data)
if [ "${GS_BENCH_REUSE:-0}" = 1 ] &&
	[ "$($PSQL -tAc "SELECT count(*) FROM gsb_numeric" 2>/dev/null)" = "$ROWS" ]; then
	:
else
$PSQL <<SQL
CREATE EXTENSION IF NOT EXISTS gpuselect;
SELECT setseed(0.5);
DROP TABLE IF EXISTS gsb_numeric, gsb_interval, gsb_text;
CREATE TABLE gsb_numeric AS SELECT round((random() * 100000)::numeric, 2) AS x FROM generate_series(1, $ROWS);
CREATE TABLE gsb_interval AS SELECT make_interval(days => (random() * 30)::int, secs => random() * 86400) AS x FROM generate_series(1, $ROWS);
CREATE TABLE gsb_text AS SELECT substr(md5(random()::text), 1, 16) AS x FROM generate_series(1, $ROWS);
VACUUM ANALYZE gsb_numeric, gsb_interval, gsb_text;
SQL
fi

# name|query, per type; the floor first
QUERIES=(
"numeric floor sum(x)|SELECT sum(x) FROM gsb_numeric"
"numeric built-in percentile_disc(0.5)|SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM gsb_numeric"
"numeric gpu_percentile_disc(0.5)|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM gsb_numeric"
"numeric gpu_quantile(x, 0.5)|SELECT gpu_quantile(x, 0.5) FROM gsb_numeric"
"numeric built-in p[0.5,0.9,0.99]|SELECT percentile_disc(ARRAY[0.5,0.9,0.99]) WITHIN GROUP (ORDER BY x) FROM gsb_numeric"
"numeric gpu p[0.5,0.9,0.99]|SELECT gpu_percentile_disc(ARRAY[0.5,0.9,0.99]) WITHIN GROUP (ORDER BY x) FROM gsb_numeric"
"interval floor sum(x)|SELECT sum(x) FROM gsb_interval"
"interval built-in percentile_cont(0.5)|SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM gsb_interval"
"interval gpu_percentile_cont(0.5)|SELECT gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM gsb_interval"
"interval built-in percentile_disc(0.5)|SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM gsb_interval"
"interval gpu_percentile_disc(0.5)|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM gsb_interval"
"text floor count(x)|SELECT count(x) FROM gsb_text"
"text built-in percentile_disc(0.5) C|SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x COLLATE \"C\") FROM gsb_text"
"text gpu_percentile_disc(0.5) C|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x COLLATE \"C\") FROM gsb_text"
)
if [ -n "${GS_BENCH_ICU:-en-US-x-icu}" ] && $PSQL -tAc "SELECT 1 FROM pg_collation WHERE collname = '${GS_BENCH_ICU:-en-US-x-icu}'" | grep -q 1; then
	C=${GS_BENCH_ICU:-en-US-x-icu}
	QUERIES+=("text built-in percentile_disc(0.5) $C|SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x COLLATE \"$C\") FROM gsb_text"
	          "text gpu_percentile_disc(0.5) $C|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x COLLATE \"$C\") FROM gsb_text")
fi

commit=$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
script=$(mktemp)
{
	echo "SET max_parallel_workers_per_gather = 0; SET gpuselect.device = 'cpu'; SET work_mem = '$WM';"
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
	echo "# types_bench started $started, commit $commit (the checkout's HEAD at the start; the server runs what was installed)"
	echo "machine: $(uname -n), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	echo "server: $($PSQL -tAc 'SHOW server_version'), rows: $ROWS, reps: $REPS (median), serial, one session, alternating; built-in work_mem = $WM"
	echo
	printf '| %-44s | %10s |\n' query "median ms"
	echo "|---|---:|"
	for i in "${!QUERIES[@]}"; do
		med=$(awk -v q="Q$i" '$0 == q {want = 1; next} want && /^Time:/ {print $2; want = 0}' "$log" |
			sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print "ERR"}')
		printf '| %-44s | %10s |\n' "${QUERIES[$i]%%|*}" "$med"
	done
} | tee "$OUT"
rm -f "$script" "$log"
