#!/bin/bash
# test/gpu/ship_device_run.sh — page shipping (issue 31) on the GPU machine
# in one call (carry .gpubundle and, to save the harness's build,
# test/gpu/build from test/gpu/prebuild.sh):
#   1. the engine harness's small checks (GS_TINY): page extraction from
#      device pages and from mapped host pages against the CPU's
#   2. pg_device_run.sh $GS_SHIP_STAGES ("service-on tap"; add regress for
#      the pg_regress suite through the service) with TAP 111 (the shipped
#      scan against the executor under concurrent writers, the CUDA engine
#      extracting; GS_TAP_SERVICE names others), GS_WORKER_PROCESSES (8)
#      workers' room
#   3. ship_pages_timing.sh (GS_SHIP_ROWS rows; its table last)
# Logs under $OUT.
set -u
cd "$(dirname "$0")/../.."
OUTD=${OUT:-test/gpu/out}
mkdir -p "$OUTD"
B=${GS_PREBUILT:-test/gpu/build}
[ -x "$B/gs_test.bin" ] || test/gpu/prebuild.sh "$B" >"$OUTD/prebuild.log" 2>&1
GS_TINY=1 timeout 240 "$B/gs_test.bin" check small >"$OUTD/check-small.log" 2>&1
echo "harness check small (rc $?, built from $(cat "$B/built-from" 2>/dev/null)):" \
	"$(grep -E '^page extraction|^[0-9]+ passed' "$OUTD/check-small.log" | tr '\n' ' ')"
grep -E "FAIL" "$OUTD/check-small.log" | head -5
GS_WORKER_PROCESSES=${GS_WORKER_PROCESSES:-8} GS_TAP_SERVICE=${GS_TAP_SERVICE:-test/t/111_service_ship_pages.pl} \
	test/gpu/pg_device_run.sh "${GS_SHIP_STAGES:-service-on tap}" 2>&1 | tail -8
# shellcheck disable=SC1091
source .gpubundle/pg-up >/dev/null 2>&1 || true
test/gpu/ship_pages_timing.sh 2>&1 | tee "$OUTD/ship-timing.txt"
