#!/bin/bash
# test/gpu/two_gpu_scale.sh — the load benchmark with the GPU service on one
# device and on every device (issue 35), on the server pg_device_run.sh
# started (its settings file $PGDATA/gpuselect-service.conf is rewritten and
# the server restarted for each).  Each configuration runs
# test/bench/concurrency_bench.sh with the GS_CB_* settings of the caller.
#   GS_SCALE_DEVICES  the gpuselect.service_devices values (default "0 all")
#   GS_SCALE_OUT      where the tables go (default $OUT or test/gpu/out)
set -u -o pipefail
cd "$(dirname "$0")/../.."
outd=${GS_SCALE_OUT:-${OUT:-test/gpu/out}}
mkdir -p "$outd"
conf=$PGDATA/gpuselect-service.conf
for devs in ${GS_SCALE_DEVICES:-0 all}; do
	printf "shared_preload_libraries = 'gpuselect'\ngpuselect.service = on\ngpuselect.key_pool_size = '%s'\nmax_connections = 320\ngpuselect.service_devices = '%s'\n" \
		"${GS_KEY_POOL_SIZE:-8GB}" "$devs" >"$conf"
	chmod 1777 /tmp
	runuser -u pgrun -- env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" pg_ctl -D "$PGDATA" -l /tmp/pg.log -w restart >/dev/null ||
		{ tail -20 /tmp/pg.log; exit 1; }
	for _ in $(seq 60); do
		st=$(psql -X -At -c "SELECT value FROM gpuselect_status() WHERE name = 'service_state'" 2>/dev/null)
		[ "$st" = ready ] && break
		sleep 1
	done
	n=$(psql -X -At -c "SELECT value FROM gpuselect_status() WHERE name = 'service_devices_ok'")
	echo "== service_devices = '$devs': $st, $n device(s) in rotation"
	GS_CB_MODES=${GS_CB_MODES:-service} GS_CB_OUT="$outd/scale-devices-$devs.md" test/bench/concurrency_bench.sh \
		>"$outd/scale-devices-$devs.log" 2>&1
	grep -E '^\|' "$outd/scale-devices-$devs.md"
	psql -X -At -c "SELECT name || ' = ' || value FROM gpuselect_status() WHERE name ~ '^device_[0-9]+_served$'"
done
