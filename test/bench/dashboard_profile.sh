#!/bin/bash
# test/bench/dashboard_profile.sh — where the parallel dashboard query's time
# goes (issue 17): the hourly p50/p90/p99 in the built-in syntax, rewritten,
# beside sum(latency) per hour, on dashboard_bench.sh's table (run that first,
# or this creates it), with CREATE STATISTICS on the hour so both are
# partial aggregates in the workers.
#
# For each query, with GS_PROF_WORKERS workers (forced parallel costs),
# GS_PROF_ROUNDS rounds alternating in one session (default 1):
#   - EXPLAIN (ANALYZE, VERBOSE): each node's time, the workers' own lines;
#     the leader's finalize is the top node's time less the Gather's
#   - gpuselect_status() before and after: partial states in the arena
#   - with perf on the machine, a profile of the leader backend over
#     GS_PROF_REPS runs of the rewritten query (perf report, top symbols);
#     with GS_PROF_SYSTEM=1 also the whole machine's (workers included) for
#     sum and the rewritten query, each with perf stat's page faults
# Output: a short table on stdout, the plans and profiles under GS_PROF_OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORKERS=${GS_PROF_WORKERS:-8}
REPS=${GS_PROF_REPS:-5}
ROUNDS=${GS_PROF_ROUNDS:-1}
OUTD=${GS_PROF_OUT:-${OUT:-/tmp}/dashboard-profile}
mkdir -p "$OUTD"
chmod 777 "$OUTD" 2>/dev/null || true
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)

if [ -z "$("${PSQL[@]}" -c "SELECT to_regclass('dash_bench')")" ]; then
	GS_BENCH_RUNS=1 GS_BENCH_QUERIES="sum_hour" GS_BENCH_HELP=0 GS_BENCH_OUT="$OUTD/setup.md" \
		"$ROOT/test/bench/dashboard_bench.sh" >"$OUTD/setup.log" 2>&1
fi
"${PSQL[@]}" -c "CREATE STATISTICS IF NOT EXISTS dash_bench_hour ON (date_trunc('hour', ts)) FROM dash_bench; ANALYZE dash_bench"

HOUR="date_trunc('hour', ts)"
SUM="SELECT $HOUR, sum(latency) FROM dash_bench GROUP BY 1"
PCT="SELECT $HOUR, percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY latency) FROM dash_bench GROUP BY 1"
SETTINGS="LOAD 'gpuselect'; SET jit = off; SET work_mem = '2GB'; SET max_parallel_workers_per_gather = $WORKERS;
SET max_parallel_workers = $((WORKERS > 8 ? WORKERS : 8)); SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET gpuselect.accelerate_builtins = on;"
STATUS="SELECT string_agg(name || '=' || value, ' ' ORDER BY name) FROM gpuselect_status()
  WHERE name IN ('states_in_arena', 'parallel_arena_bytes', 'states_created');"

# one session: a warm-up (the arena), then each query's plan with timings
{
	echo "$SETTINGS"
	echo "EXPLAIN (ANALYZE, TIMING OFF) $PCT;"
	for r in $(seq "$ROUNDS"); do
		for q in sum pct queue; do
			case $q in
			sum) sql=$SUM ;;
			pct) sql=$PCT; echo "RESET gpuselect.shared_partial_states;" ;;
			queue) sql="$PCT"; echo "SET gpuselect.shared_partial_states = off;" ;;
			esac
			echo "\\echo @@ $q#$r"
			echo "$STATUS"
			echo "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) $sql;"
			echo "$STATUS"
		done
	done
} >"$OUTD/plans.sql"
"${PSQL[@]}" -f "$OUTD/plans.sql" >"$OUTD/plans.out"

# the table: top node, Gather (Merge), and the leader's share of it
# (workers' aggregation done: the Partial HashAggregate's first row out;
# their scan: the Parallel Seq Scan's end; both averages over the processes)
echo "| query | total ms | top node ms | Gather ms | leader after Gather ms | workers' aggregation done ms | workers' scan ms | arena states |"
echo "|---|---|---|---|---|---|---|---|"
awk '
	/^@@ / { q = $2; n = 0; next }
	/states_in_arena=/ { split($0, a, " "); for (i in a) if (a[i] ~ /^states_in_arena=/) { split(a[i], b, "="); st[q, ++n] = b[2] } next }
	/actual time=/ && !(q in top) { match($0, /actual time=[0-9.]+\.\.[0-9.]+/); s = substr($0, RSTART, RLENGTH); sub(/.*\.\./, "", s); top[q] = s }
	/Gather/ && /actual time=/ && !(q in gat) { match($0, /actual time=[0-9.]+\.\.[0-9.]+/); s = substr($0, RSTART, RLENGTH); sub(/.*\.\./, "", s); gat[q] = s }
	/Partial HashAggregate/ && /actual time=/ && !(q in agg) { match($0, /actual time=[0-9]+\.[0-9]+/); agg[q] = substr($0, RSTART + 12, RLENGTH - 12) }
	/Parallel Seq Scan/ && /actual time=/ && !(q in scan) { match($0, /actual time=[0-9.]+\.\.[0-9.]+/); s = substr($0, RSTART, RLENGTH); sub(/.*\.\./, "", s); scan[q] = s }
	/Execution Time:/ { tot[q] = $3 }
	END { for (q in tot) if (q != "") printf "| %s | %s | %s | %s | %.1f | %s | %s | %d |\n", q, tot[q], top[q], gat[q], top[q] - gat[q], agg[q], scan[q], st[q, 2] - st[q, 1] }
' "$OUTD/plans.out" | sort -t'#' -k2,2n -k1,1

# a profile of the leader, if perf is here
if command -v perf >/dev/null 2>&1; then
	{
		echo "$SETTINGS"
		echo "SELECT pg_backend_pid() AS pid \\gset"
		echo "\\setenv GS_PROF_PID :pid"
		echo "EXPLAIN (ANALYZE, TIMING OFF) $PCT;"
		echo "\\! perf record -F 4999 -g -p \$GS_PROF_PID -o $OUTD/leader.perf >/dev/null 2>&1 & echo \$! > $OUTD/perf.pid; sleep 1"
		for _ in $(seq "$REPS"); do echo "EXPLAIN (ANALYZE, TIMING OFF) $PCT;"; done
		echo "\\! kill -INT \$(cat $OUTD/perf.pid); sleep 2"
	} >"$OUTD/perf.sql"
	"${PSQL[@]}" -f "$OUTD/perf.sql" >"$OUTD/perf.out" 2>&1 || true
	perf report -i "$OUTD/leader.perf" --no-children --sort symbol --stdio 2>/dev/null |
		grep -v '^#' | grep '%' | head -40 >"$OUTD/leader-top.txt" || true
	echo
	echo "leader, top symbols over $REPS runs (self):"
	head -25 "$OUTD/leader-top.txt"
	# the whole machine (workers included), each query on its own: where
	# the rewritten query's time goes that sum's does not
	if [ "${GS_PROF_SYSTEM:-0}" = 1 ]; then
		for q in sum pct; do
			case $q in sum) sql=$SUM ;; pct) sql=$PCT ;; esac
			{
				echo "$SETTINGS"
				echo "EXPLAIN (ANALYZE, TIMING OFF) $sql;"
				for _ in $(seq "$REPS"); do echo "EXPLAIN (ANALYZE, TIMING OFF) $sql;"; done
			} >"$OUTD/system-$q.sql"
			perf stat -a -e page-faults,context-switches -o "$OUTD/system-$q.stat" \
				"${PSQL[@]}" -f "$OUTD/system-$q.sql" >/dev/null 2>&1 || true
			perf record -a -F 1999 -o "$OUTD/system-$q.perf" \
				"${PSQL[@]}" -f "$OUTD/system-$q.sql" >/dev/null 2>&1 || true
			perf report -i "$OUTD/system-$q.perf" --comm postgres --no-children --sort dso,symbol --stdio 2>/dev/null |
				grep -v '^#' | grep '%' | head -40 >"$OUTD/system-$q-top.txt" || true
			echo
			echo "whole machine, $q, $((REPS + 1)) runs:"
			grep -E 'page-faults|context-switches|elapsed' "$OUTD/system-$q.stat" || true
			head -25 "$OUTD/system-$q-top.txt"
		done
	fi
else
	echo "(no perf on this machine: no profile)"
fi
