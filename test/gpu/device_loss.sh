#!/bin/bash
# test/gpu/device_loss.sh — a GPU lost while many sessions run (issue 35),
# on a machine with two or more GPUs and the service on every one of them.
#
# pgbench clients (default 150) run gpu_quantiles in gpuselect.device = gpu
# (no CPU fallback: a job that cannot run on a GPU is an ERROR) and divide by
# zero on a wrong answer; after a few seconds one more session fails device
# 1 through the fault hook (gpuselect.test_service_fail_device: the device's
# lane reports a sticky error, as a lost GPU does).  Reported: transactions
# failed (expected 0), the failing session's own answer and path, and the
# status rows that say which device left and why.
# Runs against the server the PG* variables name (pg_device_run.sh's).
#   GS_DL_CLIENTS (150)  GS_DL_TX (queries a client, 8)  GS_DL_ROWS (2000000)
set -u -o pipefail
clients=${GS_DL_CLIENTS:-150}
tx=${GS_DL_TX:-8}
rows=${GS_DL_ROWS:-2000000}
PSQL="psql -X -q -At -v ON_ERROR_STOP=1"
work=$(mktemp -d /tmp/gs-dl.XXXXXX)
chmod 777 "$work"
trap 'rm -rf "$work"' EXIT
st() { $PSQL -c "SELECT name || ' = ' || coalesce(value, '') FROM gpuselect_status() WHERE name ~ '^(service_(devices|devices_ok|served|failed|requeued|fallen_back|pid|state)|device_[0-9]+_(state|reason|served|failed))$' ORDER BY name"; }

ndev=$($PSQL -c "SELECT value FROM gpuselect_status() WHERE name = 'service_devices_ok'")
echo "devices in rotation: $ndev"
[ "${ndev:-0}" -ge 2 ] || { echo "needs two devices in rotation"; exit 1; }
$PSQL -c "DROP TABLE IF EXISTS gs_dl" -c "CREATE TABLE gs_dl AS SELECT (random() - 0.5) * 1e9 AS x FROM generate_series(1, $rows)" \
	-c "VACUUM ANALYZE gs_dl" || exit 1
fr="'{0.01,0.5,0.99}'::float8[]"
want=$($PSQL -c "SELECT (percentile_disc($fr) WITHIN GROUP (ORDER BY x))::text FROM gs_dl")
echo "SELECT 1 / (gpu_quantiles(x, $fr)::text = '$want')::int FROM gs_dl;" >"$work/q.sql"
pid0=$($PSQL -c "SELECT value FROM gpuselect_status() WHERE name = 'service_pid'")
echo "--- before"; st | tee "$work/before.txt"

PGOPTIONS="-c gpuselect.device=gpu" pgbench -n -c "$clients" -j 16 -t "$tx" -f "$work/q.sql" >"$work/pgbench.out" 2>&1 &
bench=$!
sleep "${GS_DL_AFTER:-4}"
echo "--- failing device 1 while the clients run"
$PSQL -c "SET gpuselect.device = 'gpu'" -c "SET gpuselect.test_service_fail_device = 1" \
	-c "SELECT 'failing session answer equal: ' || (gpu_quantiles(x, $fr)::text = '$want') FROM gs_dl" \
	-c "SELECT 'failing session path: ' || value FROM gpuselect_status() WHERE name = 'last_path'" 2>&1
wait $bench
rc=$?
done_tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench.out")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench.out")
failed=$(( ${failed:-0} + clients * tx - ${done_tx:-0} ))
echo "--- after"; st | tee "$work/after.txt"
grep -E '^tps|aborted|ERROR' "$work/pgbench.out" | head -5
pid1=$($PSQL -c "SELECT value FROM gpuselect_status() WHERE name = 'service_pid'")
echo
echo "| clients | queries | failed | pgbench rc | service restarted | device_1 |"
echo "|---|---|---|---|---|---|"
echo "| $clients | $((clients * tx)) | $failed | $rc | $([ "$pid0" = "$pid1" ] && echo no || echo yes) | $(grep -E '^device_1_(state|reason)' "$work/after.txt" | sed 's/^device_1_//' | tr '\n' ' ') |"
