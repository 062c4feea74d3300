#!/bin/bash
# test/gpu/pg_device_run.sh — everything the GPU inside PostgreSQL is checked
# by, in one command on the GPU machine (carry .gpubundle, made here once
# with ../shared/tools/pg-bundle .gpubundle: Debian's PostgreSQL 15; or
# another version's bundle, made with test/gpu/pg-tree.sh VERSION DIR and
# named by GS_PG_BUNDLE=DIR, e.g. GS_PG_BUNDLE=.gpupg18 for PostgreSQL 18).
# Only the GPU service uses the GPU, so every stage after the build runs
# against a server with gpuselect preloaded and the service on:
#   (always) build the CUDA variant with warnings as errors, install it
#   service-on  restart the server with shared_preload_libraries =
#               'gpuselect', gpuselect.service = on (settings in
#               $PGDATA/gpuselect-service.conf) and wait for the service
#   regress     the whole pg_regress suite with every aggregate forced
#               through the service (gpuselect.device = gpu, gpu_min_rows =
#               0), same expected files as CI
#   check       test/gpu/pg_gpu_check.sh: large inputs, approximate, engine
#               faults, cancel, leaks, 16 concurrent sessions
#   tap         the service's TAP tests (test/t/10[0-9]_service_*.pl) with
#               the CUDA engine, each in a cluster of its own (107 needs two
#               GPUs and only checks the start on one)
#   conc        test/bench/concurrency_bench.sh (many sessions)
#   bench       test/bench/e2e_bench.sh through the service (one session:
#               first-call cost and the ratios to sum(x))
#   service-off empty the service's settings file and restart
# Logs go to $OUT (or test/gpu/out).
# Usage: [GS_PG_BUNDLE=DIR] test/gpu/pg_device_run.sh [STAGES]
#   STAGES: default "service-on regress check tap"; "all" is every stage.
#   A warm machine keeps the server between calls, so a long run can be
#   split ("service-on regress check tap", then "conc", then "bench
#   service-off").  GS_BENCH_* / GS_CB_* variables pass through to the
#   benchmarks; GS_KEY_POOL_SIZE sizes the key pool (default 8GB).
set -u -o pipefail
cd "$(dirname "$0")/../.."
OUTD=${OUT:-test/gpu/out}
mkdir -p "$OUTD"
STAGES=${1:-"service-on regress check tap"}
[ "$STAGES" = all ] && STAGES="service-on regress check tap conc bench service-off"
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }

BUNDLE=${GS_PG_BUNDLE:-.gpubundle}
[ -f "$BUNDLE/pg-up" ] || { echo "no $BUNDLE/pg-up: make it here with ../shared/tools/pg-bundle (15) or test/gpu/pg-tree.sh VERSION DIR, and carry it"; exit 1; }
# shellcheck disable=SC1091
# on a warm machine the server of an earlier call may still run: pg-up's
# start then fails, after it has exported the environment
source "$BUNDLE/pg-up" || pg_isready -q || exit 1
echo "PostgreSQL: $(pg_config --version) ($(command -v pg_config), bundle $BUNDLE)"
nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv,noheader | tee "$OUTD/gpu.txt"
summary=()
stage() { summary+=("$(printf '%-34s %s' "$1" "$2")"); }

# the GPUs built for: the Hopper this runs on, unless told (every
# architecture costs minutes of device time; test/gpu/arch_limits.sh
# checks that build)
export CUDA_ARCH=${CUDA_ARCH-90}
if make -j16 USE_CUDA=1 COPT=-Werror >"$OUTD/build.log" 2>&1 && make USE_CUDA=1 install >>"$OUTD/build.log" 2>&1; then
	stage "build+install (CUDA, -Werror)" "ok ($(pg_config --version))"
else
	tail -30 "$OUTD/build.log"; stage "build+install" FAILED; printf '%s\n' "${summary[@]}"; exit 1
fi

# the bundle's pg-up leaves /tmp at 0755 after its start: a restart as
# pgrun could not create the socket's lock file there
pg_restart() {
	chmod 1777 /tmp
	runuser -u pgrun -- env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" pg_ctl -D "$PGDATA" -l /tmp/pg.log -w restart >/dev/null ||
		tail -20 /tmp/pg.log
}
service_status() {
	psql -X -At -c "SELECT name || ' = ' || coalesce(value, '') FROM gpuselect_status() WHERE name LIKE 'service%' OR name LIKE 'key_pool%' OR name LIKE 'device\\_%' OR name LIKE 'gpu\\_%'"
}
tap_line() { # tap_line LOG RC
	echo "$([ "$2" = 0 ] && echo ok || echo FAILED) ($(grep -c '^ok' "$1") ok, $(grep -c '^not ok' "$1") not ok)"
}
if has service-on; then
	# the service's settings are PGC_POSTMASTER and exist only where the
	# library was preloaded, so ALTER SYSTEM refuses them as unrecognized
	# (PostgreSQL 15.20 does; 17 only in a session that loaded gpuselect,
	# which reserves the prefix): they go into a file postgresql.conf includes,
	# which service-off empties again
	grep -q "gpuselect-service.conf" "$PGDATA/postgresql.conf" ||
		echo "include_if_exists = 'gpuselect-service.conf'" >>"$PGDATA/postgresql.conf"
	printf "shared_preload_libraries = 'gpuselect'\ngpuselect.service = on\ngpuselect.key_pool_size = '%s'\nmax_connections = 320\n" \
		"${GS_KEY_POOL_SIZE:-8GB}" >"$PGDATA/gpuselect-service.conf"
	# GS_SHARED_BUFFERS overrides the bundle's 4GB (the file comes later)
	[ -n "${GS_SHARED_BUFFERS:-}" ] && echo "shared_buffers = '$GS_SHARED_BUFFERS'" >>"$PGDATA/gpuselect-service.conf"
	# GS_WORKER_PROCESSES: room for that many parallel workers besides the service
	[ -n "${GS_WORKER_PROCESSES:-}" ] &&
		printf "max_worker_processes = %s\nmax_parallel_workers = %s\n" "$((GS_WORKER_PROCESSES + 2))" \
			"$GS_WORKER_PROCESSES" >>"$PGDATA/gpuselect-service.conf"
	# (postgresql.auto.conf would override it: earlier runs used ALTER SYSTEM)
	psql -X -q -c "ALTER SYSTEM RESET shared_preload_libraries" -c "ALTER SYSTEM RESET max_connections"
	pg_restart
	st=none
	for _ in $(seq 60); do
		st=$(psql -X -At -c "CREATE EXTENSION IF NOT EXISTS gpuselect" \
			-c "SELECT value FROM gpuselect_status() WHERE name = 'service_state'" 2>/dev/null | tail -1)
		[ "$st" = ready ] || [ "$st" = unavailable ] && break
		sleep 1
	done
	service_status | tee "$OUTD/service-status.txt"
	stage "service start" "$st ($(grep 'service_device =' "$OUTD/service-status.txt"))"
fi
if has regress; then
	PGOPTIONS="-c gpuselect.device=gpu -c gpuselect.gpu_min_rows=0" \
		make USE_CUDA=1 installcheck >"$OUTD/regress-service.log" 2>&1
	rc=$?
	grep -E '\.\.\. |^(not )?ok [0-9]+ |tests' "$OUTD/regress-service.log" | tail -12
	[ -f regression.diffs ] && cp regression.diffs "$OUTD/regress-service.diffs" && head -80 regression.diffs
	stage "pg_regress through the service" "$([ $rc = 0 ] && echo ok || echo FAILED) ($(grep -cE '\.\.\. ok|^ok [0-9]+ ' "$OUTD/regress-service.log") ok)"
fi
if has check; then
	test/gpu/pg_gpu_check.sh 2>&1 | tee "$OUTD/pg_gpu_check.log"
	stage "pg_gpu_check.sh" "$(tail -1 "$OUTD/pg_gpu_check.log")"
fi
if has tap; then
	# GS_TAP_SERVICE="test/t/107_service_devices.pl ...": only those
	# shellcheck disable=SC2086
	GS_SERVICE_MODE=on GS_SERVER_USER=pgrun prove -v ${GS_TAP_SERVICE:-test/t/10[0-9]_service_*.pl} >"$OUTD/tap-service-on.log" 2>&1
	rc=$?
	grep -E '^not ok' "$OUTD/tap-service-on.log" | head -20
	stage "TAP 10x service, CUDA engine" "$(tap_line "$OUTD/tap-service-on.log" $rc)"
fi
if has conc; then
	GS_CB_OUT="$OUTD/concurrency-bench.md" test/bench/concurrency_bench.sh >"$OUTD/concurrency-bench.log" 2>&1
	stage "concurrency_bench.sh" "exit $?"
fi
if has bench; then
	GS_BENCH_EXTRAS=0 GS_BENCH_SIZES=${GS_BENCH_SIZES-"10000000 100000000"} GS_BENCH_OUT="$OUTD/e2e-service.md" \
		test/bench/e2e_bench.sh >"$OUTD/e2e-service.log" 2>&1
	stage "e2e_bench.sh through the service" "exit $?"
	service_status >"$OUTD/service-status-after.txt"
fi
if has service-off; then
	: >"$PGDATA/gpuselect-service.conf"
	pg_restart
fi
cp /tmp/pg.log "$OUTD/server.log" 2>/dev/null

echo; echo "===== summary ====="
printf '%s\n' "${summary[@]}"
if has conc; then echo; cat "$OUTD/concurrency-bench.md" 2>/dev/null || tail -20 "$OUTD/concurrency-bench.log"; fi
if has bench; then echo; cat "$OUTD/e2e-service.md" 2>/dev/null || tail -20 "$OUTD/e2e-service.log"; fi
