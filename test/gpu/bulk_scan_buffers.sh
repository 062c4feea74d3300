#!/bin/bash
# test/gpu/bulk_scan_buffers.sh — issue 31's 100M-row goals under two
# shared_buffers settings, on the GPU machine in one command (carry
# .gpubundle): for each setting in GS_SB_LIST, restart with the service
# (test/gpu/pg_device_run.sh service-on, GS_SHARED_BUFFERS) and run
# test/bench/bulk_scan_bench.sh (GS_BULK_* pass through; defaults: 100M
# rows, no dashboard, 3 rounds, no executor rows).
#
# Why two: a table larger than a quarter of shared_buffers is scanned
# through a 256 kB ring, so every query copies each page from the kernel's
# page cache (one pread per page on PostgreSQL 15); a table that fits in
# a quarter stays in shared buffers after its first scan.  The bundle's
# 4GB gives the ring for 100M float8 rows (3.5 GB); 25% of the host's
# memory, PostgreSQL's usual advice, keeps them in shared buffers.  Both
# the anchor and gpuselect read the same way within each block.
set -u -o pipefail
cd "$(dirname "$0")/../.."
OUTD=${OUT:-test/gpu/out}
mkdir -p "$OUTD"
export GS_BULK_SIZES=${GS_BULK_SIZES:-100000000} GS_BULK_DASH_ROWS=${GS_BULK_DASH_ROWS:-0}
export GS_BULK_REPS=${GS_BULK_REPS:-3} GS_BULK_EXECUTOR=${GS_BULK_EXECUTOR:-0}
for sb in ${GS_SB_LIST:-4GB 32GB}; do
	GS_SHARED_BUFFERS=$sb test/gpu/pg_device_run.sh service-on >"$OUTD/device-run-$sb.log" 2>&1
	echo "shared_buffers $sb: pg_device_run.sh service-on exit $?; $(grep -m1 'service start' "$OUTD/device-run-$sb.log")"
	# shellcheck disable=SC1091
	source .gpubundle/pg-up >/dev/null 2>&1 || pg_isready -q || exit 1
	GS_BULK_OUT="$OUTD/bulk-scan-$sb.md" test/bench/bulk_scan_bench.sh >/dev/null 2>"$OUTD/bulk-scan-$sb.err"
	echo "bench exit $?"
done
for sb in ${GS_SB_LIST:-4GB 32GB}; do
	echo "=== shared_buffers $sb, $(nproc) cores"
	cat "$OUTD/bulk-scan-$sb.md"
done
