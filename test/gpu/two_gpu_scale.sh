#!/bin/bash
# test/gpu/two_gpu_scale.sh — the load benchmark with the GPU service on one
# device and on every device (issue 35), on the server pg_device_run.sh
# started (its settings file $PGDATA/gpuselect-service.conf is rewritten and
# the server restarted for each).  Each configuration runs
# test/bench/concurrency_bench.sh with the GS_CB_* settings of the caller.
#   GS_SCALE_DEVICES  the gpuselect.service_devices values (default "0 all")
#   GS_SCALE_DEPTHS   the gpuselect.service_lane_depth values (default "2"):
#                     each device setting runs once per depth, the depths
#                     alternating inside it
#   GS_SCALE_OUT      where the tables go (default $OUT or test/gpu/out)
# After each run: each device's jobs served and its lane's mean time a job
# (in the job; sampling the device's memory).
set -u -o pipefail
cd "$(dirname "$0")/../.."
outd=${GS_SCALE_OUT:-${OUT:-test/gpu/out}}
mkdir -p "$outd"
conf=$PGDATA/gpuselect-service.conf
lane_ms() {
	psql -X -At -F ' ' -c "SELECT name, value FROM gpuselect_status() WHERE name ~ '^device_[0-9]+_(served|lane_job_ms|lane_sample_ms)$' ORDER BY name"
}
for devs in ${GS_SCALE_DEVICES:-0 all}; do
	for depth in ${GS_SCALE_DEPTHS:-2}; do
		printf "shared_preload_libraries = 'gpuselect'\ngpuselect.service = on\ngpuselect.key_pool_size = '%s'\nmax_connections = 320\ngpuselect.service_devices = '%s'\ngpuselect.service_lane_depth = %s\n" \
			"${GS_KEY_POOL_SIZE:-8GB}" "$devs" "$depth" >"$conf"
		chmod 1777 /tmp
		runuser -u pgrun -- env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" pg_ctl -D "$PGDATA" -l /tmp/pg.log -w restart >/dev/null ||
			{ tail -20 /tmp/pg.log; exit 1; }
		for _ in $(seq 60); do
			st=$(psql -X -At -c "SELECT value FROM gpuselect_status() WHERE name = 'service_state'" 2>/dev/null)
			[ "$st" = ready ] && break
			sleep 1
		done
		n=$(psql -X -At -c "SELECT value FROM gpuselect_status() WHERE name = 'service_devices_ok'")
		tag="$devs-d$depth"
		echo "== service_devices = '$devs', service_lane_depth = $depth: $st, $n device(s) in rotation"
		before=$(lane_ms)
		GS_CB_MODES=${GS_CB_MODES:-service} GS_CB_OUT="$outd/scale-devices-$tag.md" test/bench/concurrency_bench.sh \
			>"$outd/scale-devices-$tag.log" 2>&1
		grep -E '^\|' "$outd/scale-devices-$tag.md"
		after=$(lane_ms)
		# per device: jobs served over the run, its lane's mean time a job (in
		# the job; sampling the device's memory)
		join <(echo "$before") <(echo "$after") | awk '
			{ d[$1] = $3 - $2 }
			END {
				for (k = 0; k < 16; k++) {
					s = "device_" k "_served"; if (!(s in d)) continue
					n = d[s] > 0 ? d[s] : 1
					printf "device %d: served %d; its lane a job: %.1f us in the job, %.2f us sampling memory\n", k, d[s],
						1000 * d["device_" k "_lane_job_ms"] / n, 1000 * d["device_" k "_lane_sample_ms"] / n
				}
			}'
	done
done
