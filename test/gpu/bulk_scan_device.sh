#!/bin/bash
# test/gpu/bulk_scan_device.sh — the bulk scan on the GPU machine, in one
# command (carry .gpubundle): build, start the server with the GPU service
# (test/gpu/pg_device_run.sh's stages, STAGES), then
# test/bench/bulk_scan_bench.sh (GS_BULK_* pass through).  Logs and the
# table under $OUT.  A warm machine keeps server and tables between calls:
#   test/gpu/bulk_scan_device.sh "service-on regress"        build, suites, 10M
#   GS_BULK_SIZES=100000000 GS_BULK_DASH_ROWS=0 test/gpu/bulk_scan_device.sh service-on
set -u -o pipefail
cd "$(dirname "$0")/../.."
OUTD=${OUT:-test/gpu/out}
mkdir -p "$OUTD"
STAGES=${1:-"service-on regress"}
test/gpu/pg_device_run.sh "$STAGES" >"$OUTD/device-run.log" 2>&1
echo "pg_device_run.sh $STAGES: exit $?"
tail -15 "$OUTD/device-run.log"
# shellcheck disable=SC1091
source .gpubundle/pg-up >/dev/null 2>&1 || pg_isready -q || exit 1
echo "bulk_scan_bench.sh sizes ${GS_BULK_SIZES:-default} dashboard ${GS_BULK_DASH_ROWS:-default}, $(nproc) cores"
GS_BULK_OUT="$OUTD/bulk-scan-bench.md" test/bench/bulk_scan_bench.sh 2>"$OUTD/bulk-scan-bench.err"
echo "bench exit $?"
tail -5 "$OUTD/bulk-scan-bench.err"
# where the time goes: the scan's own time against the whole query's
for n in ${GS_BULK_SIZES:-10000000 100000000}; do
	for dev in gpu cpu; do
		for w in 0 8; do
			psql -X -q -At -c "LOAD 'gpuselect'" -c "SET gpuselect.device = $dev" -c "SET gpuselect.gpu_min_rows = 0" \
				-c "SET max_parallel_workers_per_gather = $w" -c "SELECT gpu_median(x) FROM bulk_f8_$n" \
				-c "EXPLAIN (ANALYZE, COSTS OFF) SELECT gpu_quantiles(x, '{0.5,0.9,0.99}') FROM bulk_f8_$n" 2>&1 |
				grep -E "Scan Time|Execution Time" | tr -s ' ' | paste -sd' ' | sed "s/^/$n rows, $dev, $w workers (leader's scan):/"
		done
	done
done
