#!/usr/bin/env bash
# test/bench/dashboard_bench.sh — the dashboard queries of issue 17 in the
# built-in syntax, with gpuselect.accelerate_builtins off and on, beside
# sum(latency) (the executor's floor) and the plain gpu_quantiles form.
#
# Runs against the server of the environment (PGHOST, PGPORT, PGUSER,
# PGDATABASE; gpuselect installed there).  Everything runs in ONE session
# (the planner hook comes with LOAD 'gpuselect'), the queries alternating
# round by round; a timing is the median of the rounds' EXPLAIN (ANALYZE,
# TIMING OFF) "Execution Time" (no rows sent to the client).  Before timing,
# every rewritten query's answer is compared with the built-in's (md5 of all
# rows), serially and with workers; a mismatch fails the script.
#
# Table dash_bench(ts timestamp, latency float8): GS_BENCH_ROWS rows over 30
# days (720 hours), latency log-normal-ish; created (or re-created when its
# size differs) by the script.
#
# Part 2, planner help: the same rewritten queries with the planner's own
# parallel costs (only max_parallel_workers_per_gather set), without
# statistics on the grouping expressions (gpuselect.estimate_time_buckets
# off, then on) and with CREATE STATISTICS on them: the plan's shape and
# time, and the answers of the percentiles against the built-in's.
# Statistics are dropped again at the end.
#
# Environment (defaults in brackets):
#   GS_BENCH_ROWS      rows                                 [10000000]
#   GS_BENCH_WORKERS   workers of the parallel column       [8]
#   GS_BENCH_RUNS      rounds                               [3]
#   GS_BENCH_DEVICE    gpuselect.device                     [auto]
#   GS_BENCH_WORK_MEM  work_mem (the built-ins sort in memory) [2GB]
#   GS_BENCH_OUT       result file [test/bench/results/dashboard-<date>-<host>.md]
#   GS_BENCH_NOTE      free text for the result file
#   GS_BENCH_HELP=0    skip part 2 (planner help); the timings are written
#                      to GS_BENCH_OUT before part 2 starts either way
#   GS_BENCH_PART1=0   skip part 1 (its answers and timings): part 2 only
#   GS_BENCH_QUERIES   the query names to run (all: sum_hour pct_hour
#                      gpu_quantiles_hour sum_grafana pct_grafana sum_unix
#                      pct_unix sum_metabase pct_metabase); rows of the
#                      others are "-"
#   GS_BENCH_QUEUE=1   one more row, "pct_hour queue": pct_hour rewritten with
#                      gpuselect.shared_partial_states = off, so partial
#                      states pass through the tuple queue, not the arena
#   GS_BENCH_NOBATCH=1 one more row per pct_* query, "nobatch": rewritten
#                      with gpuselect.finalize_threads = 0 (one group at a
#                      time in the leader, as before src/aggs/final_batch.c)
#   GS_BENCH_SERIAL=0  no serial column (answers and rounds with workers
#                      only): the serial built-ins are most of a round
#   GS_BENCH_STATS=1   the main table with CREATE STATISTICS on the four
#                      grouping expressions (what the README tells a
#                      dashboard's owner to do), so the floors and the
#                      rewritten queries are partial hash aggregates in the
#                      workers; implies GS_BENCH_HELP=0
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROWS=${GS_BENCH_ROWS:-10000000}
WORKERS=${GS_BENCH_WORKERS:-8}
RUNS=${GS_BENCH_RUNS:-3}
DEVICE=${GS_BENCH_DEVICE:-auto}
WORK_MEM=${GS_BENCH_WORK_MEM:-2GB}
HOST=$(hostname -s)
OUT=${GS_BENCH_OUT:-$ROOT/test/bench/results/dashboard-$(date -u +%Y%m%d-%H%M)-$HOST.md}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gs-dash.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
# the columns: serial (0) and WORKERS, or WORKERS alone with GS_BENCH_SERIAL=0
COLUMNS="0 $WORKERS"
[ "${GS_BENCH_SERIAL:-1}" = 0 ] && COLUMNS=$WORKERS
# the rounds' raw output, kept beside the result file as it is written, so
# that a run cut short (a call's time limit) still leaves its timings
RAW=${OUT%.md}.raw
export PGOPTIONS="-c client_min_messages=warning"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# ---- the table ----
"${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS gpuselect"
have=-1
# (a table of an earlier version of this script, without epoch_s, is made anew)
if [ -n "$("${PSQL[@]}" -c "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('dash_bench') AND attname = 'epoch_s'")" ]; then
	have=$("${PSQL[@]}" -c "SELECT count(*) FROM dash_bench")
fi
if [ "$have" != "$ROWS" ]; then
	log "creating dash_bench with $ROWS rows"
	"${PSQL[@]}" <<-SQL
		DROP TABLE IF EXISTS dash_bench;
		SELECT setseed(0.17);
		CREATE TABLE dash_bench AS
		SELECT ts, exp(random() * 3 + random() * random() * 4) AS latency,
		       extract(epoch FROM ts)::bigint AS epoch_s
		FROM (SELECT timestamp '2026-01-01' + random() * interval '30 days' AS ts
		      FROM generate_series(1, $ROWS)) g;
		VACUUM ANALYZE dash_bench;
	SQL
fi
"${PSQL[@]}" -c "DROP STATISTICS IF EXISTS dash_bench_hour, dash_bench_5min, dash_bench_day, dash_bench_unix; ANALYZE dash_bench"
create_stats() {
	"${PSQL[@]}" <<-SQL
		CREATE STATISTICS dash_bench_hour ON (date_trunc('hour', ts)) FROM dash_bench;
		CREATE STATISTICS dash_bench_5min ON (floor(extract(epoch from ts) / 300) * 300) FROM dash_bench;
		CREATE STATISTICS dash_bench_day ON (date_trunc('day', ts)) FROM dash_bench;
		CREATE STATISTICS dash_bench_unix ON (floor((epoch_s)/300)*300) FROM dash_bench;
		ANALYZE dash_bench;
	SQL
}
STATS=${GS_BENCH_STATS:-0}
[ "$STATS" = 1 ] && create_stats

# ---- the queries: name|sql (built-in syntax unless named otherwise) ----
A="ARRAY[0.5, 0.9, 0.99]"
HOUR="date_trunc('hour', ts)"
GRAF="floor(extract(epoch from ts) / 300) * 300"
DAY="date_trunc('day', ts)"
UNIX="floor((epoch_s)/300)*300"	# Grafana's \$__unixEpochGroup(epoch_s, 5m)
cat >"$TMP/queries" <<EOF
sum_hour|SELECT $HOUR, sum(latency) FROM dash_bench GROUP BY 1
pct_hour|SELECT $HOUR, percentile_cont($A) WITHIN GROUP (ORDER BY latency) FROM dash_bench GROUP BY 1
gpu_quantiles_hour|SELECT $HOUR, gpu_quantiles(latency, $A) FROM dash_bench GROUP BY 1
sum_grafana|SELECT $GRAF AS time, sum(latency) FROM dash_bench GROUP BY 1 ORDER BY 1
pct_grafana|SELECT $GRAF AS time, percentile_cont(0.95) WITHIN GROUP (ORDER BY latency) FROM dash_bench GROUP BY 1 ORDER BY 1
sum_unix|SELECT $UNIX AS time, sum(latency) FROM dash_bench GROUP BY 1 ORDER BY 1
pct_unix|SELECT $UNIX AS time, percentile_cont(0.95) WITHIN GROUP (ORDER BY latency) FROM dash_bench GROUP BY 1 ORDER BY 1
sum_metabase|SELECT $DAY, sum(latency) FROM dash_bench GROUP BY 1 ORDER BY 1
pct_metabase|SELECT $DAY, percentile_cont(0.5) WITHIN GROUP (ORDER BY latency) FROM dash_bench GROUP BY 1 ORDER BY 1
EOF
if [ -n "${GS_BENCH_QUERIES:-}" ]; then
	awk -F'|' -v keep=" $GS_BENCH_QUERIES " 'index(keep, " " $1 " ")' "$TMP/queries" >"$TMP/q2"
	mv "$TMP/q2" "$TMP/queries"
fi
wanted() { grep -q "^$1|" "$TMP/queries"; }
# the timed cases: label|query name|accelerate_builtins (pct_* twice: off and on)
cases() {
	local name q
	while IFS='|' read -r name q; do
		case $name in
		pct_*) echo "$name off|$name|off"; echo "$name on|$name|on"
			if [ "$name" = pct_hour ] && [ "${GS_BENCH_QUEUE:-0}" = 1 ]; then echo "$name queue|$name|queue"; fi
			if [ "${GS_BENCH_NOBATCH:-0}" = 1 ]; then echo "$name nobatch|$name|nobatch"; fi ;;
		*) echo "$name|$name|off" ;;
		esac
	done <"$TMP/queries"
}
query() { awk -F'|' -v n="$1" '$1 == n { sub(/^[^|]*\|/, ""); print }' "$TMP/queries"; }

settings() {	# <workers> <accelerate: on, off, queue (on, without the arena) or nobatch (on, gpuselect.finalize_threads = 0)> [forced]
	echo "SET work_mem = '$WORK_MEM'; SET jit = off; SET gpuselect.device = '$DEVICE';"
	if [ "$2" = queue ]; then
		echo "SET gpuselect.accelerate_builtins = on; SET gpuselect.shared_partial_states = off; RESET gpuselect.finalize_threads;"
	elif [ "$2" = nobatch ]; then
		echo "SET gpuselect.accelerate_builtins = on; RESET gpuselect.shared_partial_states; SET gpuselect.finalize_threads = 0;"
	else
		echo "SET gpuselect.accelerate_builtins = $2; RESET gpuselect.shared_partial_states; RESET gpuselect.finalize_threads;"
	fi
	echo "SET max_parallel_workers_per_gather = $1;"
	echo "SET max_parallel_workers = $(($1 > 8 ? $1 : 8));"
	if [ "$1" -gt 0 ] && [ "${3:-forced}" = forced ]; then
		echo "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
	else
		echo "RESET parallel_setup_cost; RESET parallel_tuple_cost; RESET min_parallel_table_scan_size;"
	fi
}

# ---- answers: every rewritten query against the built-in, serial and parallel ----
{
	echo "LOAD 'gpuselect';"
	for w in $COLUMNS; do
		for name in pct_hour pct_grafana pct_unix pct_metabase; do
			wanted "$name" || continue
			q=$(query "$name")
			for acc in off on; do
				settings "$w" "$acc"
				echo "\\echo @@ $name|$w|$acc"
				echo "SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM ($q) r;"
			done
		done
		# gpu_quantiles is percentile_disc: checked against the built-in percentile_disc
		wanted gpu_quantiles_hour || continue
		settings "$w" off
		echo "\\echo @@ gpu_quantiles_hour|$w|gpu"
		echo "SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM ($(query gpu_quantiles_hour)) r;"
		echo "\\echo @@ gpu_quantiles_hour|$w|builtin"
		echo "SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM (SELECT $HOUR, percentile_disc($A) WITHIN GROUP (ORDER BY latency) FROM dash_bench GROUP BY 1) r;"
	done
} >"$TMP/answers.sql"
PART1=${GS_BENCH_PART1:-1}
[ "$PART1" = 0 ] && echo "LOAD 'gpuselect';" >"$TMP/answers.sql"
log "checking answers"
"${PSQL[@]}" -f "$TMP/answers.sql" >"$TMP/answers.out"
ANSWERS=$(awk '/^@@ / { key = $2; next } { split(key, k, "|"); v[k[1] "|" k[2]] = v[k[1] "|" k[2]] " " $1 }
	END { for (x in v) { n = split(v[x], a, " "); same = (n == 2 && a[1] == a[2]); print x "|" (same ? "equal" : "DIFFERENT") } }' \
	"$TMP/answers.out" | sort)
echo "$ANSWERS" | grep -q DIFFERENT && { echo "answers differ:"; echo "$ANSWERS"; exit 1; }

# ---- timings: rounds, every case serial and parallel, alternating ----
{
	echo "LOAD 'gpuselect';"
	# untimed: the session's first parallel GROUP BY of partial states asks
	# for the key arena (src/state/arena.c), which the rounds then have from the first
	if [ "$PART1" != 0 ] && wanted pct_hour; then
		settings "$WORKERS" on
		echo "\\echo @@ warm-up|$WORKERS"
		echo "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $(query pct_hour);"
	fi
	[ "$PART1" = 0 ] || for r in $(seq 1 "$RUNS"); do
		for w in $COLUMNS; do
			cases | while IFS='|' read -r label name acc; do
				settings "$w" "$acc"
				echo "\\echo @@ $label|$w"
				echo "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $(query "$name");"
			done
		done
	done
} >"$TMP/timings.sql"
log "timing: $RUNS rounds"
"${PSQL[@]}" -f "$TMP/timings.sql" | tee "$RAW" >"$TMP/timings.out"
# label|workers -> median ms
awk '/^@@ / { sub(/^@@ /, ""); key = $0; next }
	/Execution Time:/ { print key "|" $3 }' "$TMP/timings.out" |
	sort -t'|' -k1,1 -k2,2n -k3,3g |
	awk -F'|' '{ k = $1 "|" $2; v[k] = v[k] " " $3; n[k]++ }
		END { for (k in v) { split(substr(v[k], 2), a, " "); print k "|" a[int((n[k] + 1) / 2)] } }' |
	sort >"$TMP/medians"
ms() { awk -F'|' -v l="$1" -v w="$2" '$1 == l && $2 == w { print $3 }' "$TMP/medians"; }
plan_of() {	# <workers> <accelerate> <forced|costs> <query name> [estimate] -> the plan's node lines, one line
	{ settings "$1" "$2" "${3:-forced}"; echo "LOAD 'gpuselect'; SET gpuselect.estimate_time_buckets = ${5:-on}; EXPLAIN (COSTS OFF) $(query "$4");"; } |
		"${PSQL[@]}" | grep -E 'Aggregate|Gather|Sort$|Seq Scan' | sed 's/^ *//; s/ *->  */ /; s/ on dash_bench//' |
		paste -sd'>' - | sed 's/>/ > /g'
}

# ---- the result file ----
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2fx", a / b }'; }
row() {	# <label> <floor label>
	local s p
	s=$(ms "$1" 0)
	p=$(ms "$1" "$WORKERS")
	printf '| %s | %s | %s | %s | %s |\n' "$1" "$s" "$p" "$(ratio "$s" "$(ms "$2" 0)")" "$(ratio "$p" "$(ms "$2" "$WORKERS")")"
}
{
	echo "# Dashboard benchmark (issue 17): built-in syntax, gpuselect.accelerate_builtins off / on"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (+ local changes)')"
	echo "- machine: $HOST, $(nproc) CPUs ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1))$(command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | head -1 | sed 's/^/, /' || true)"
	echo "- server: $("${PSQL[@]}" -c "SELECT version()" | cut -d, -f1)"
	echo "- rows: $ROWS; rounds: $RUNS (median); gpuselect.device = $DEVICE; work_mem = $WORK_MEM; jit off"
	echo "- parallel column: max_parallel_workers_per_gather = $WORKERS with parallel_setup_cost = parallel_tuple_cost = min_parallel_table_scan_size = 0"
	echo "- statistics on the grouping expressions: $([ "$STATS" = 1 ] && echo "yes (CREATE STATISTICS on each, then ANALYZE)" || echo "none")"
	[ -n "${GS_BENCH_NOTE:-}" ] && echo "- note: $GS_BENCH_NOTE"
	echo
	if [ "$PART1" != 0 ]; then
		echo "Execution Time (ms), EXPLAIN (ANALYZE, TIMING OFF); \"x floor\": against sum(latency) of the same grouping and column."
		echo
		echo "| query | serial | $WORKERS workers | serial x floor | $WORKERS workers x floor |"
		echo "|---|---|---|---|---|"
		row sum_hour sum_hour
		row "pct_hour off" sum_hour
		row "pct_hour on" sum_hour
		if [ "${GS_BENCH_NOBATCH:-0}" = 1 ]; then row "pct_hour nobatch" sum_hour; fi
		if [ "${GS_BENCH_QUEUE:-0}" = 1 ]; then row "pct_hour queue" sum_hour; fi
		row gpu_quantiles_hour sum_hour
		row sum_grafana sum_grafana
		row "pct_grafana off" sum_grafana
		row "pct_grafana on" sum_grafana
		if [ "${GS_BENCH_NOBATCH:-0}" = 1 ]; then row "pct_grafana nobatch" sum_grafana; fi
		row sum_unix sum_unix
		row "pct_unix off" sum_unix
		row "pct_unix on" sum_unix
		if [ "${GS_BENCH_NOBATCH:-0}" = 1 ]; then row "pct_unix nobatch" sum_unix; fi
		row sum_metabase sum_metabase
		row "pct_metabase off" sum_metabase
		row "pct_metabase on" sum_metabase
		if [ "${GS_BENCH_NOBATCH:-0}" = 1 ]; then row "pct_metabase nobatch" sum_metabase; fi
		echo
		echo "Queries: pct_hour = \`$(query pct_hour)\`; pct_grafana = \`$(query pct_grafana)\`; pct_unix = \`$(query pct_unix)\`; pct_metabase = \`$(query pct_metabase)\`; gpu_quantiles_hour = \`$(query gpu_quantiles_hour)\`."
		echo
		echo "Plans ($WORKERS workers, forced parallel costs): sum_hour: $(plan_of "$WORKERS" off forced sum_hour); pct_hour on: $(plan_of "$WORKERS" on forced pct_hour); pct_hour nobatch: $(plan_of "$WORKERS" nobatch forced pct_hour); pct_hour off: $(plan_of "$WORKERS" off forced pct_hour); pct_metabase on: $(plan_of "$WORKERS" on forced pct_metabase)."
		echo
		echo "Answers (md5 of all rows; accelerate_builtins off vs on, gpu_quantiles vs percentile_disc), per workers:"
		echo "$ANSWERS" | sed 's/^/- /'
	else
		echo "Part 1 (forced parallel costs, answers and timings) skipped: GS_BENCH_PART1=0."
	fi
} >"$OUT"
log "wrote the timings to $OUT"

if [ "${GS_BENCH_HELP:-1}" = 0 ] || [ "$STATS" = 1 ]; then
	[ "$STATS" = 1 ] && "${PSQL[@]}" -c "DROP STATISTICS dash_bench_hour, dash_bench_5min, dash_bench_day, dash_bench_unix; ANALYZE dash_bench"
	cat "$OUT"
	exit 0
fi
# ---- part 2: planner help (the planner's own parallel costs) ----
md5_of() {	# <accelerate> <estimate> <query name>: md5 of all rows, planner's costs
	{ settings "$WORKERS" "$1" costs; echo "LOAD 'gpuselect'; SET gpuselect.estimate_time_buckets = $2;"
	  echo "SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM ($(query "$3")) r;"; } | "${PSQL[@]}"
}
help_run() {	# <tag> <estimate_time_buckets>: plan and median time of the rewritten queries and their floors
	local name q t same
	for name in sum_hour pct_hour pct_grafana pct_unix sum_metabase pct_metabase; do
		wanted "$name" || continue
		q=$(query "$name")
		{
			echo "LOAD 'gpuselect'; SET gpuselect.estimate_time_buckets = $2;"
			for r in $(seq 1 "$RUNS"); do
				settings "$WORKERS" on costs
				echo "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $q;"
			done
		} | "${PSQL[@]}" | awk '/Execution Time:/ { print $3 }' | sort -g >"$TMP/h"
		t=$(awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' "$TMP/h")
		same=-
		case $name in pct_*)
			# the built-in's answer once per query (it is the slow one)
			[ -s "$TMP/ref.$name" ] || md5_of off off "$name" >"$TMP/ref.$name"
			[ "$(md5_of on "$2" "$name")" = "$(cat "$TMP/ref.$name")" ] && same=equal || same=DIFFERENT ;;
		esac
		# each row to stderr as well: a run cut short still shows what it measured
		echo "| $name | $1 | $2 | $(plan_of "$WORKERS" on costs "$name" "$2") | $t | $same |" | tee /dev/stderr
	done
}
log "planner help: without statistics, estimate_time_buckets off"
HELP=$(help_run "none" off)
log "planner help: without statistics, estimate_time_buckets on"
HELP="$HELP
$(help_run "none" on)"
log "planner help: with CREATE STATISTICS"
create_stats
HELP="$HELP
$(help_run "CREATE STATISTICS" on)"
"${PSQL[@]}" -c "DROP STATISTICS dash_bench_hour, dash_bench_5min, dash_bench_day, dash_bench_unix; ANALYZE dash_bench"

{
	echo
	echo "## Planner help: the planner's own parallel costs (max_parallel_workers_per_gather = $WORKERS), accelerate_builtins on"
	echo
	echo "| query | statistics on the grouping expression | gpuselect.estimate_time_buckets | plan | ms (median of $RUNS) | answer vs built-in (rewrite and estimate off) |"
	echo "|---|---|---|---|---|---|"
	echo "$HELP"
} >>"$OUT"
log "wrote $OUT"
cat "$OUT"
