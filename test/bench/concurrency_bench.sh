#!/bin/bash
# test/bench/concurrency_bench.sh — many sessions at once (a dashboard's
# load, issue #16): pgbench clients each running gpu_quantiles over a float8
# table, device = cpu against the GPU service, every answer checked.
#
# Runs against the server the PG* variables name, with gpuselect installed
# and, for the service rows, in shared_preload_libraries with
# gpuselect.service = on (or cpu_test), e.g. on the GPU machine:
#   source .gpubundle/pg-up; make USE_CUDA=1 install
#   printf "shared_preload_libraries = 'gpuselect'\ngpuselect.key_pool_size = '8GB'\nmax_connections = 320\n" >>$PGDATA/postgresql.conf
#   (not ALTER SYSTEM: before PostgreSQL 17 it refuses gpuselect.key_pool_size
#   until the library is preloaded)
#   runuser -u pgrun -- env LD_LIBRARY_PATH=$LD_LIBRARY_PATH pg_ctl -D $PGDATA -l /tmp/pg.log -w restart
#   test/bench/concurrency_bench.sh
# Without the service (not preloaded / off) the "service" rows are skipped.
#
# Per (rows, mode, clients): pgbench -c C -j C -t TX runs one query per
# transaction; the query divides by zero when its answer differs from the
# built-in percentile_disc computed once beforehand, so a wrong answer is a
# failed transaction.  Reported: wall seconds, queries per second (pgbench's
# tps without connection time), mean and p95 latency (from pgbench's
# per-transaction log), failed transactions, and the GPU's peak memory in use
# (nvidia-smi, sampled every 0.2 s) when there is one, each GPU's mean
# utilization over the run (nvidia-smi's utilization.gpu: the share of the
# time a kernel ran), and the GPU service's busiest thread's CPU time as a
# share of the wall time (main thread or a device's lane: which one the
# service itself is bound by; from /proc, when the bench can read it).
#   GS_CB_ROWS     table sizes      (default "2000000 10000000")
#   GS_CB_CLIENTS  client counts    (default "1 16 64 150")
#   GS_CB_TX       queries a client (default 3)
#   GS_CB_MODES    any of "cpu service auto" (default "cpu service"):
#                  service is device = gpu (every group through the service:
#                  a full key pool is waited for); auto is the default
#                  setting (a group the pool cannot take falls back to the
#                  backend's CPU at once, counted in service_fallen_back)
#   GS_CB_WORKERS  max_parallel_workers_per_gather of every client, both
#                  modes (default: the server's; 0: serial sessions, whose
#                  keys the service reads in place from the key pool)
#   GS_CB_NFR      fractions per query (default 3)
#   GS_CB_GROUPS   G > 0: each query is GROUP BY g over G groups of the table
#                  (rows / G each: every group is a job of its own on the
#                  service), every group's answer checked (default 0: one
#                  group, the whole table)
#   GS_CB_OUT      also write the table here (default: stdout only)
set -u -o pipefail
ROWS=${GS_CB_ROWS:-"2000000 10000000"}
CLIENTS=${GS_CB_CLIENTS:-"1 16 64 150"}
TX=${GS_CB_TX:-3}
MODES=${GS_CB_MODES:-"cpu service"}
OUT=${GS_CB_OUT:-/dev/null}
PSQL="psql -X -q -At -v ON_ERROR_STOP=1"
# GS_CB_NFR: the number of fractions (default 3: 0.01, 0.5, 0.99; N > 3:
# N evenly spaced from 0 to 1)
if [ "${GS_CB_NFR:-3}" -gt 3 ]; then
	FR="'{$(awk -v n="$GS_CB_NFR" 'BEGIN { for (i = 0; i < n; i++) printf "%s%.6f", (i ? "," : ""), i / (n - 1) }')}'::float8[]"
else
	FR="'{0.01,0.5,0.99}'::float8[]"
fi
WORK=$(mktemp -d /tmp/gs-cbench.XXXXXX)
chmod 777 "$WORK"
trap 'rm -rf "$WORK"' EXIT

command -v pgbench >/dev/null || { echo "no pgbench on PATH"; exit 1; }
$PSQL -c "CREATE EXTENSION IF NOT EXISTS gpuselect" || exit 1
maxc=$($PSQL -c "SHOW max_connections")
svc_state=$($PSQL -c "SELECT value FROM gpuselect_status() WHERE name = 'service_state'")
svc_dev=$($PSQL -c "SELECT value FROM gpuselect_status() WHERE name = 'service_device'")
echo "server: $($PSQL -c 'SELECT version()')"
echo "max_connections=$maxc  service_state=$svc_state  service_device=$svc_dev"

gpu_mem() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; }
has_gpu=0
[ -n "$(gpu_mem)" ] && has_gpu=1
# every GPU's "index, utilization %, MiB in use", one line each
gpu_sample() { nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits 2>/dev/null; }
# the service's threads: "tid name ticks" (utime + stime)
svc_ticks() {
	local pid
	pid=$($PSQL -c "SELECT value FROM gpuselect_status() WHERE name = 'service_pid'" 2>/dev/null)
	[ -n "$pid" ] && [ -d "/proc/$pid/task" ] || return 0
	for t in /proc/"$pid"/task/*; do
		[ -r "$t/stat" ] || continue
		# the fields after the "(comm)" one: utime and stime are its 12th and 13th
		sed -E 's/^([0-9]+) \(.*\) (.*)$/\1 \2/' "$t/stat" |
			awk -v pid="$pid" '{ print $1, ($1 == pid ? "main" : "thread"), $13 + $14 }' 2>/dev/null
	done
}
hz=$(getconf CLK_TCK)

rows_out=()
line() { rows_out+=("$(printf '| %9s | %-7s | %7s | %8s | %9s | %10s | %10s | %6s | %12s | %10s | %12s |' "$@")"); }
line rows mode clients wall_s qps mean_ms p95_ms failed gpu_peak_MiB gpu_util_% svc_thread_%
line --------- ------- ------- -------- --------- ---------- ---------- ------ ------------ ---------- ------------

for n in $ROWS; do
	G=${GS_CB_GROUPS:-0}
	$PSQL -c "DROP TABLE IF EXISTS gs_cb" -c "CREATE TABLE gs_cb AS SELECT random() AS x, i % greatest($G, 1) AS g FROM generate_series(1, $n) i" -c "VACUUM ANALYZE gs_cb" 2>/dev/null || exit 1
	# a wrong answer divides by zero (at run time: the comparison is not a
	# constant): pgbench counts a failed transaction
	if [ "$G" -gt 0 ]; then
		$PSQL -c "DROP TABLE IF EXISTS gs_cb_want" \
			-c "CREATE TABLE gs_cb_want AS SELECT g, (percentile_disc($FR) WITHIN GROUP (ORDER BY x))::text AS want FROM gs_cb GROUP BY g" || exit 1
		cat >"$WORK/q.sql" <<SQL
SELECT 1 / (count(*) = $G)::int FROM (SELECT g, gpu_quantiles(x, $FR)::text AS a FROM gs_cb GROUP BY g) s JOIN gs_cb_want w USING (g) WHERE s.a = w.want;
SQL
	else
		expected=$($PSQL -c "SELECT (percentile_disc($FR) WITHIN GROUP (ORDER BY x))::text FROM gs_cb")
		cat >"$WORK/q.sql" <<SQL
SELECT 1 / (gpu_quantiles(x, $FR)::text = '$expected')::int FROM gs_cb;
SQL
	fi
	for mode in $MODES; do
		case $mode in
		cpu) opts="-c gpuselect.device=cpu" ;;
		service | auto)
			if [ "$svc_state" != ready ]; then
				echo "($mode rows skipped: service_state is '$svc_state')"
				continue
			fi
			# auto with gpu_min_rows 1 sends every group of this table to
			# the service as device = gpu does, but falls back instead of waiting
			if [ $mode = service ]; then opts="-c gpuselect.device=gpu"
			else opts="-c gpuselect.device=auto -c gpuselect.gpu_min_rows=1"; fi ;;
		*) echo "unknown mode $mode"; exit 1 ;;
		esac
		[ -n "${GS_CB_WORKERS:-}" ] && opts="$opts -c max_parallel_workers_per_gather=$GS_CB_WORKERS"
		for c in $CLIENTS; do
			if [ "$c" -ge "$maxc" ]; then
				line "$n" "$mode" "$c" "-" "-" "-" "-" "-" "max_connections=$maxc" "-" "-"
				continue
			fi
			rm -f "$WORK"/pgbench_log.*
			peak=0
			if [ $has_gpu = 1 ]; then
				( while :; do gpu_sample; sleep 0.2; done ) >"$WORK/mem.txt" 2>/dev/null &
				mempid=$!
			fi
			svc_ticks >"$WORK/ticks0.txt"
			t0=$(date +%s.%N)
			PGOPTIONS="$opts" pgbench -n -c "$c" -j "$c" -t "$TX" -f "$WORK/q.sql" \
				-l --log-prefix="$WORK/pgbench_log" >"$WORK/pgbench.out" 2>&1
			rc=$?
			t1=$(date +%s.%N)
			svc_ticks >"$WORK/ticks1.txt"
			util=n/a
			if [ $has_gpu = 1 ]; then
				kill "$mempid" 2>/dev/null; wait "$mempid" 2>/dev/null
				peak=$(awk -F', *' '$1 == 0 { print $3 }' "$WORK/mem.txt" | sort -n | tail -1)
				util=$(awk -F', *' '{ s[$1] += $2; n[$1]++ } END { o = ""; for (i = 0; i in n; i++) o = o (i ? "/" : "") int(s[i] / n[i]); print o }' "$WORK/mem.txt")
			fi
			# the busiest service thread: its CPU ticks over the run, per wall second
			svc=$(awk -v hz="$hz" -v wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" '
				NR == FNR { t0[$1] = $3; next }
				($1 in t0) { d = ($3 - t0[$1]) / hz / wall * 100; if (d > best) { best = d; who = $2 } }
				END { if (who != "") printf "%d (%s)", best, who; else print "-" }' "$WORK/ticks0.txt" "$WORK/ticks1.txt")
			qps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/pgbench.out")
			failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$WORK/pgbench.out")
			done_tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.out")
			# a client that aborted leaves transactions neither done nor failed
			failed=$(( ${failed:-0} + c * TX - ${done_tx:-0} ))
			# latency (µs) is the third field of pgbench's per-transaction log
			read -r mean p95 < <(cat "$WORK"/pgbench_log.* 2>/dev/null | awk '{print $3}' | sort -n |
				awk '{ a[NR] = $1; s += $1 } END { if (NR) { i = int(NR * 0.95 + 0.999); if (i > NR) i = NR;
					printf "%.1f %.1f\n", s / NR / 1000, a[i] / 1000 } else print "- -" }')
			line "$n" "$mode" "$c" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" "${qps:-ERR}" "$mean" "$p95" "$failed" \
				"$([ $has_gpu = 1 ] && echo "$peak" || echo n/a)" "$util" "$svc"
			[ $rc = 0 ] || { echo "pgbench rc=$rc ($n rows, $mode, $c clients):"; grep -iE 'error|abort' "$WORK/pgbench.out" | head -5; }
		done
	done
done
$PSQL -c "DROP TABLE IF EXISTS gs_cb" -c "DROP TABLE IF EXISTS gs_cb_want"

{
	echo "concurrency_bench.sh $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname); $TX queries per client; ${GS_CB_GROUPS:-0} groups (0: one); max_parallel_workers_per_gather ${GS_CB_WORKERS:-as the server}; gpu_quantiles(x, $FR)"
	echo "service: $svc_state ($svc_dev)"
	printf '%s\n' "${rows_out[@]}"
	echo
	$PSQL -c "SELECT name || ' = ' || coalesce(value, '') FROM gpuselect_status() WHERE name LIKE 'service%' OR name LIKE 'key_pool%'"
} | tee "$OUT"
