#!/bin/bash
# test/gpu/hostile_load.sh — issue 29's goals for the GPU service, on a real
# GPU, against the server pg_device_run.sh started (its settings file
# $PGDATA/gpuselect-service.conf is rewritten and the server restarted):
#  1. pool: GS_HL_CONC (4) concurrent gpuselect.device = gpu queries over
#     GS_HL_ROWS (20M) float8 rows with a GS_HL_POOL (256MB) key pool, each
#     alone first: every one answers (equal to the built-in), none waits
#     for gpuselect.service_timeout, in about the time they take one after
#     another;
#     GS_HL_WORKERS sets each query's max_parallel_workers_per_gather (default:
#     the server's) and GS_HL_WORKER_PROCESSES the server's
#     max_worker_processes and max_parallel_workers (default: as they are):
#     alone a query takes every free worker, at once the first takes them
#     and the others scan alone, so "at once" against "alone" compares the
#     worker budget too unless the workers are 0 or enough for all;
#  2. restart: GS_HL_CLIENTS (100) pgbench clients in gpu mode over 2M rows
#     while the service is sent SIGTERM: no query lost (a wrong answer
#     divides by zero, a failed query is counted).
# Each query runs with gpuselect.debug on: its line shows where its final
# call's time went (unload_ms: its held chunks copied out to queue for the
# pool; take_ms: its job's chunks taken, waiting in the pool's queue, and
# filled, fill_ms of it copying keys; queue_ms: waiting for the device;
# answer_ms: submitted to answered); the rest of its time is the scan.
# Prints a table last.
set -u -o pipefail
cd "$(dirname "$0")/../.."
PSQL="psql -X -q -At -v ON_ERROR_STOP=1"
pool=${GS_HL_POOL:-256MB}
rows=${GS_HL_ROWS:-20000000}
conc=${GS_HL_CONC:-4}
clients=${GS_HL_CLIENTS:-100}
work=$(mktemp -d /tmp/gs-hl.XXXXXX)
chmod 777 "$work"
trap 'rm -rf "$work"' EXIT
status() { $PSQL -c "SELECT value FROM gpuselect_status() WHERE name = '$1'"; }
now_ms() { date +%s%3N; }

printf "shared_preload_libraries = 'gpuselect'\ngpuselect.service = on\ngpuselect.key_pool_size = '%s'\nmax_connections = 320\n" \
	"$pool" >"$PGDATA/gpuselect-service.conf"
[ -n "${GS_HL_WORKER_PROCESSES:-}" ] &&
	printf "max_worker_processes = %s\nmax_parallel_workers = %s\n" "$GS_HL_WORKER_PROCESSES" "$GS_HL_WORKER_PROCESSES" >>"$PGDATA/gpuselect-service.conf"
chmod 1777 /tmp
runuser -u pgrun -- env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" pg_ctl -D "$PGDATA" -l /tmp/pg.log -w restart >/dev/null ||
	{ tail -20 /tmp/pg.log; exit 1; }
for _ in $(seq 60); do [ "$(status service_state 2>/dev/null)" = ready ] && break; sleep 1; done
echo "service: $(status service_state), pool $(status key_pool_bytes) bytes, timeout $($PSQL -c 'SHOW gpuselect.service_timeout'), max_worker_processes $($PSQL -c 'SHOW max_worker_processes'), workers per query ${GS_HL_WORKERS:-$($PSQL -c 'SHOW max_parallel_workers_per_gather')}"

fr="'{0.01,0.5,0.99}'::float8[]"
$PSQL -c "DROP TABLE IF EXISTS gs_hl" -c "CREATE TABLE gs_hl AS SELECT (random() - 0.5) * 1e9 AS x FROM generate_series(1, $rows)" \
	-c "VACUUM ANALYZE gs_hl" || exit 1
want=$($PSQL -c "SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_hl")
wk=""
[ -n "${GS_HL_WORKERS:-}" ] && wk="SET max_parallel_workers_per_gather = $GS_HL_WORKERS;"
q="$wk SET gpuselect.device = 'gpu'; SET gpuselect.debug = on; SELECT (gpu_quantiles(x, $fr)::text = '$want')::text || ' ' || (SELECT value FROM gpuselect_status() WHERE name = 'last_path') FROM gs_hl;"
exh0=$(status service_pool_exhausted); to0=$(status service_timed_out)
fw0=$(status service_pool_filled_waiting)
# the debug NOTICE's phases, and the answer's check and path
phases() { sed -n 's/.*\(unload_ms=.*answer_ms=[0-9.]*\).*/\1/p' <<<"$1"; }
answer() { grep -o '^\(true\|false\) .*' <<<"$1" | head -1; }

# 1a. each alone
alone_sum=0
for i in $(seq "$conc"); do
	t0=$(now_ms); out=$($PSQL -c "$q" 2>&1); t1=$(now_ms)
	echo "alone $i: $((t1 - t0)) ms: $(answer "$out") $(phases "$out")"
	alone_sum=$((alone_sum + t1 - t0))
done
# 1b. all at once
t0=$(now_ms)
for i in $(seq "$conc"); do
	( s=$(now_ms); o=$($PSQL -c "$q" 2>&1); echo "$(( $(now_ms) - s )) $(answer "$o") $(phases "$o")" >"$work/c$i" ) &
done
wait
t1=$(now_ms)
ok=0; slowest=0
for i in $(seq "$conc"); do
	read -r ms rest <"$work/c$i"
	echo "concurrent $i: $ms ms: $rest"
	case $rest in "true service"*) ok=$((ok + 1)) ;; esac
	[ "$ms" -gt "$slowest" ] && slowest=$ms
done
exh1=$(status service_pool_exhausted); to1=$(status service_timed_out)
fw1=$(status service_pool_filled_waiting)

# 2. a service restart under load
$PSQL -c "DROP TABLE IF EXISTS gs_hl2" -c "CREATE TABLE gs_hl2 AS SELECT (random() - 0.5) * 1e9 AS x FROM generate_series(1, 2000000)" \
	-c "VACUUM ANALYZE gs_hl2" || exit 1
want2=$($PSQL -c "SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_hl2")
echo "SELECT 1 / (gpu_quantiles(x, $fr)::text = '$want2')::int FROM gs_hl2;" >"$work/q2.sql"
tx=12
pid0=$(status service_pid)
PGOPTIONS="-c gpuselect.device=gpu" pgbench -n -c "$clients" -j 16 -t "$tx" -f "$work/q2.sql" >"$work/pgbench.out" 2>&1 &
bench=$!
sleep "${GS_HL_AFTER:-3}"
kill -TERM "$pid0"
wait $bench
done_tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench.out")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench.out")
failed=$(( ${failed:-0} + clients * tx - ${done_tx:-0} ))
grep -iE 'error|abort' "$work/pgbench.out" | sort | uniq -c | sort -rn | head -5
for _ in $(seq 30); do [ "$(status service_state)" = ready ] && break; sleep 1; done
pid1=$(status service_pid)
grep -E 'gpuselect GPU service' /tmp/pg.log | tail -4

echo
echo "| check | result |"
echo "|---|---|"
echo "| $conc x ${rows}-row gpu queries, ${pool} pool: answered right through the service | $ok of $conc |"
echo "| each alone (sum) / all at once (wall) / slowest | ${alone_sum} ms / $((t1 - t0)) ms / ${slowest} ms |"
echo "| pool exhausted / timed out during them | $((exh1 - exh0)) / $((to1 - to0)) |"
echo "| job chunks filled while waiting in the pool's queue | $((${fw1:-0} - ${fw0:-0})) |"
echo "| $clients gpu clients x $tx over 2M rows, SIGTERM to the service | $failed of $((clients * tx)) failed; service pid $pid0 -> $pid1 |"
