#!/bin/bash
# test/bench/bulk_scan_bench.sh — the bulk scan (Custom Scan (gpuselect))
# against its anchors, issue 31's goals, in alternating runs in one session.
#
# Runs against the server of the PG* variables, with gpuselect installed (on
# the GPU machine: preloaded with the service on, test/gpu/pg_device_run.sh
# "service-on", then this script; without the service the "gpu" rows are
# ERR).  For each size in GS_BULK_SIZES (float8 table, all-visible):
#   sum(x)                                    the executor's floor
#   gpu_quantiles(x, 101 fractions)           bulk scan, GPU service | CPU engine
#   the same with gpuselect.bulk_scan = off   today's plan (executor)
# serially and with GS_BULK_WORKERS workers; and the dashboard table
# (GS_BULK_DASH_ROWS latencies, timestamptz over 30 days, 720 hours, with
# CREATE STATISTICS on the hour so sum gets its best plan):
#   sum(latency) per hour; p50/p90/p99 per hour in the built-in syntax with
#   accelerate_builtins, bulk on and off; Grafana's $__timeGroup shape.
# GS_BULK_SERIES_ROWS adds Grafana's multi-series panel (per hour and host)
# and a FILTER, with an integer host and with a text one ('host-07', the
# panel's commonest shape: $__timeGroup(ts, '1h') AS time, host,
# percentile_cont(0.9) ... ORDER BY 1), over GS_BULK_SERIES_SPAN (default
# 30 days: 720 hours); GS_BULK_SERIES_SHAPES="int text" picks them.  GS_BULK_EXECUTOR=0 leaves the executor plan's rows out.  After each size, a
# line says where sum(x)'s pages came from (shared buffers or the ring).
# GS_BULK_AB_PREFAULT=1 adds a block per size: the GPU rows with
# gpuselect.prefault_pool_chunks on and off.  GS_BULK_AB_PREFETCH=1 adds
# one: serial sum(x), then the bulk scan (GPU service and CPU engine) with
# gpuselect.test_bulk_prefetch at its default and 0 (the page loop's
# prefetch off; GS_BULK_PREFETCH_LIST="0 8 32" to try other distances).
# Every query of one block runs in turn, GS_BULK_REPS rounds, in one session
# (the GPU machine's speed differs between sessions, not within one); the
# table shows each query's median and its ratio to the block's anchor.
# Prints one table; also to $GS_BULK_OUT when set.
set -u
SIZES=${GS_BULK_SIZES-"10000000 100000000"}
DASH_ROWS=${GS_BULK_DASH_ROWS:-10000000}
WORKERS=${GS_BULK_WORKERS:-8}
REPS=${GS_BULK_REPS:-5}
OUTF=${GS_BULK_OUT:-/dev/null}
PSQL="psql -X -q -v ON_ERROR_STOP=1"
F101="'{$(seq -s, 0 100 | sed 's/\([0-9]*\)/\1e-2/g')}'::float8[]"
rows=()

# block NAME ANCHOR_LABEL then lines "LABEL|SETTINGS|QUERY" on stdin:
# alternate them REPS times in one session, print median and ratio
block() {
	local name=$1 anchor=$2
	local labels=() settings=() queries=() line
	while IFS='|' read -r l s q; do
		[ -z "$l" ] && continue
		labels+=("$l"); settings+=("$s"); queries+=("$q")
	done
	local n=${#labels[@]} script out
	script=$(mktemp)
	{
		echo "LOAD 'gpuselect';"
		echo "\\o /dev/null"
		for ((r = 0; r <= REPS; r++)); do
			for ((i = 0; i < n; i++)); do
				echo "RESET ALL; SET jit = off; ${settings[$i]}"
				echo "\\echo @@ $r $i"
				echo "\\timing on"
				echo "${queries[$i]};"
				echo "\\timing off"
			done
		done
	} >"$script"
	# one line "r i ms" per run; a failed run has no time (ERR)
	out=$(psql -X -q -f "$script" 2>&1 | awk '/^@@ / {r = $2; i = $3; next}
		/^Time: / {print r, i, $2}')
	rm -f "$script"
	local med=() i
	for ((i = 0; i < n; i++)); do
		# round 0 warms up (first selection, pages into cache)
		med+=("$(echo "$out" | awk -v i=$i '$1 >= 1 && $2 == i {print $3}' | sort -n |
			awk -v reps=$REPS '{v[NR] = $1} END {print (NR < reps ? "ERR" : v[int((NR + 1) / 2)])}')")
	done
	local base=""
	for ((i = 0; i < n; i++)); do [ "${labels[$i]}" = "$anchor" ] && base=${med[$i]}; done
	rows+=("== $name (median of $REPS, ms; ratio to $anchor)")
	for ((i = 0; i < n; i++)); do
		local ratio="-"
		if [ -n "$base" ] && [[ ${med[$i]} =~ ^[0-9.]+$ ]]; then
			ratio=$(awk -v a="${med[$i]}" -v b="$base" 'BEGIN {printf "%.2fx", a / b}')
		fi
		rows+=("$(printf '  %-50s %10s %8s' "${labels[$i]}" "${med[$i]}" "$ratio")")
	done
	# each block as it ends (a run cut short still leaves the blocks done)
	printf '%s\n' "${rows[@]: -$((n + 1))}" >>"$OUTF"
}

# make_table NAME STATEMENT...: create and fill NAME once (a warm machine
# keeps it between calls), then freeze it: every page all-visible
make_table() {
	local name=$1 args=() st
	shift
	$PSQL -Atc "SELECT 1 FROM pg_class WHERE relname = '$name'" | grep -q 1 && return 0
	echo "creating $name" >&2
	for st in "$@"; do args+=(-c "$st"); done
	$PSQL "${args[@]}" -c "VACUUM (FREEZE, ANALYZE) $name" || exit 1
}
P3="percentile_cont(0.5) WITHIN GROUP (ORDER BY latency), percentile_cont(0.9) WITHIN GROUP (ORDER BY latency), percentile_cont(0.99) WITHIN GROUP (ORDER BY latency)"

# GS_BULK_EXECUTOR=0 leaves out today's plan (the executor's) rows
executor_rows() {
	[ "${GS_BULK_EXECUTOR:-1}" = 0 ] && return
	echo "executor plan, GPU service|$1 $gpu SET gpuselect.bulk_scan = off;|SELECT gpu_quantiles(x, $F101) FROM $2"
	echo "executor plan, CPU engine|$1 $cpu SET gpuselect.bulk_scan = off;|SELECT gpu_quantiles(x, $F101) FROM $2"
}

# GS_BULK_AB_PREFETCH's rows with the page loop's prefetch at other distances
prefetch_rows() {
	local d
	for d in ${GS_BULK_PREFETCH_LIST:-0}; do
		echo "bulk scan, GPU service, prefetch $d|$serial $gpu SET gpuselect.test_bulk_prefetch = $d;|SELECT gpu_quantiles(x, $F101) FROM $t"
		echo "bulk scan, CPU engine, prefetch $d|$serial $cpu SET gpuselect.test_bulk_prefetch = $d;|SELECT gpu_quantiles(x, $F101) FROM $t"
	done
}
serial="SET max_parallel_workers_per_gather = 0;"
par="SET max_parallel_workers_per_gather = $WORKERS; SET max_parallel_workers = $WORKERS; SET min_parallel_table_scan_size = 0; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
gpu="SET gpuselect.device = gpu; SET gpuselect.gpu_min_rows = 0;"
cpu="SET gpuselect.device = cpu;"

for n in $SIZES; do
	t=bulk_f8_$n
	make_table "$t" "CREATE TABLE $t (x float8) WITH (autovacuum_enabled = off)" \
		"INSERT INTO $t SELECT random() * 1e6 FROM generate_series(1, $n)"
	for mode in serial parallel; do
		if [ $mode = serial ]; then s=$serial; else s=$par; fi
		block "$n rows, $mode" "sum(x)" <<EOF
sum(x)|$s|SELECT sum(x) FROM $t
bulk scan, GPU service|$s $gpu|SELECT gpu_quantiles(x, $F101) FROM $t
bulk scan, CPU engine|$s $cpu|SELECT gpu_quantiles(x, $F101) FROM $t
$(executor_rows "$s" "$t")
EOF
	done
	# where the pages came from: shared buffers (hit) or the kernel's page
	# cache through the scan's ring (read); a table past a quarter of
	# shared_buffers is read through a 256 kB ring and never stays there
	rows+=("  pages of $t, serial sum(x): $($PSQL -Atc "SET max_parallel_workers_per_gather = 0" \
		-c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT sum(x) FROM $t" | grep -m1 'Buffers:' | tr -s ' '),\
 shared_buffers $($PSQL -Atc 'SHOW shared_buffers'), table $($PSQL -Atc "SELECT pg_size_pretty(pg_relation_size('$t'))")")
	printf '%s\n' "${rows[-1]}" >>"$OUTF"
	if [ "${GS_BULK_AB_PREFAULT:-0}" = 1 ]; then
		block "$n rows, key-pool prefault A/B" "serial, prefault on" <<EOF
serial, prefault on|$serial $gpu|SELECT gpu_quantiles(x, $F101) FROM $t
serial, prefault off|$serial $gpu SET gpuselect.prefault_pool_chunks = off;|SELECT gpu_quantiles(x, $F101) FROM $t
$WORKERS workers, prefault on|$par $gpu|SELECT gpu_quantiles(x, $F101) FROM $t
$WORKERS workers, prefault off|$par $gpu SET gpuselect.prefault_pool_chunks = off;|SELECT gpu_quantiles(x, $F101) FROM $t
EOF
	fi
	if [ "${GS_BULK_AB_PREFETCH:-0}" = 1 ]; then
		block "$n rows, serial, bulk scan prefetch A/B" "sum(x)" <<EOF
sum(x)|$serial|SELECT sum(x) FROM $t
bulk scan, GPU service, prefetch default|$serial $gpu|SELECT gpu_quantiles(x, $F101) FROM $t
bulk scan, CPU engine, prefetch default|$serial $cpu|SELECT gpu_quantiles(x, $F101) FROM $t
$(prefetch_rows)
EOF
	fi
done

if [ "$DASH_ROWS" -gt 0 ]; then
	d=bulk_dash_$DASH_ROWS
	make_table "$d" "CREATE TABLE $d (ts timestamptz, latency float8) WITH (autovacuum_enabled = off)" \
		"INSERT INTO $d SELECT '2026-01-01'::timestamptz + i * (interval '30 days' / $DASH_ROWS), exp(random() * 5) FROM generate_series(1, $DASH_ROWS) i" \
		"CREATE STATISTICS ${d}_hour ON (date_trunc('hour', ts)) FROM $d"
	for mode in serial parallel; do
		if [ $mode = serial ]; then s=$serial; else s=$par; fi
		block "dashboard $DASH_ROWS rows, 720 hours, $mode" "sum per hour" <<EOF
sum per hour|$s|SELECT date_trunc('hour', ts), sum(latency) FROM $d GROUP BY 1
p50/p90/p99 per hour, bulk scan, GPU|$s $gpu SET gpuselect.accelerate_builtins = on;|SELECT date_trunc('hour', ts), $P3 FROM $d GROUP BY 1
p50/p90/p99 per hour, bulk scan, CPU|$s $cpu SET gpuselect.accelerate_builtins = on;|SELECT date_trunc('hour', ts), $P3 FROM $d GROUP BY 1
p50/p90/p99 per hour, bulk, CPU, work_mem 1GB (hashed finalize)|$s $cpu SET gpuselect.accelerate_builtins = on; SET work_mem = '1GB';|SELECT date_trunc('hour', ts), $P3 FROM $d GROUP BY 1
p50/p90/p99 per hour, executor plan, CPU|$s $cpu SET gpuselect.accelerate_builtins = on; SET gpuselect.bulk_scan = off;|SELECT date_trunc('hour', ts), $P3 FROM $d GROUP BY 1
Grafana timeGroup sum|$s|SELECT floor(extract(epoch from ts) / 3600) * 3600 AS time, sum(latency) FROM $d GROUP BY 1
Grafana timeGroup p50/p90/p99, bulk, CPU|$s $cpu SET gpuselect.accelerate_builtins = on;|SELECT floor(extract(epoch from ts) / 3600) * 3600 AS time, $P3 FROM $d GROUP BY 1
EOF
	done
	block "dashboard built-in (no gpuselect), serial" "sum per hour" <<EOF
sum per hour|$serial|SELECT date_trunc('hour', ts), sum(latency) FROM $d GROUP BY 1
built-in p50/p90/p99 per hour|$serial|SELECT date_trunc('hour', ts), $P3 FROM $d GROUP BY 1
EOF
fi

# Grafana's multi-series panel: per hour and host (GROUP BY two
# expressions), and a FILTER beside the plain percentiles
SERIES_ROWS=${GS_BULK_SERIES_ROWS:-0}
SERIES_SPAN=${GS_BULK_SERIES_SPAN:-30 days}
SERIES_SHAPES=${GS_BULK_SERIES_SHAPES:-int text}
if [ "$SERIES_ROWS" -gt 0 ] && [[ " $SERIES_SHAPES " == *" int "* ]]; then
	m=bulk_series_$SERIES_ROWS
	make_table "$m" "CREATE TABLE $m (ts timestamptz, host int4, latency float8) WITH (autovacuum_enabled = off)" \
		"INSERT INTO $m SELECT '2026-01-01'::timestamptz + i * (interval '30 days' / $SERIES_ROWS), i % 20, exp(random() * 5) FROM generate_series(1, $SERIES_ROWS) i" \
		"CREATE STATISTICS ${m}_hour ON (date_trunc('hour', ts)), host FROM $m"
	PF="percentile_cont(0.99) WITHIN GROUP (ORDER BY latency), percentile_cont(0.99) WITHIN GROUP (ORDER BY latency) FILTER (WHERE latency > 10)"
	for mode in serial parallel; do
		if [ $mode = serial ]; then s=$serial; else s=$par; fi
		block "multi-series $SERIES_ROWS rows, 720 hours x 20 hosts, $mode" "sum per hour, host" <<EOF
sum per hour, host|$s|SELECT date_trunc('hour', ts), host, sum(latency) FROM $m GROUP BY 1, 2
p50/p90/p99 per hour, host, bulk scan, CPU|$s $cpu SET gpuselect.accelerate_builtins = on;|SELECT date_trunc('hour', ts), host, $P3 FROM $m GROUP BY 1, 2
p50/p90/p99 per hour, host, executor plan, CPU|$s $cpu SET gpuselect.accelerate_builtins = on; SET gpuselect.bulk_scan = off;|SELECT date_trunc('hour', ts), host, $P3 FROM $m GROUP BY 1, 2
p50/p90/p99 per hour, host, built-in|$s|SELECT date_trunc('hour', ts), host, $P3 FROM $m GROUP BY 1, 2
p99 and p99 FILTER per hour, bulk scan, CPU|$s $cpu SET gpuselect.accelerate_builtins = on;|SELECT date_trunc('hour', ts), $PF FROM $m GROUP BY 1
p99 and p99 FILTER per hour, executor plan, CPU|$s $cpu SET gpuselect.accelerate_builtins = on; SET gpuselect.bulk_scan = off;|SELECT date_trunc('hour', ts), $PF FROM $m GROUP BY 1
EOF
	done
fi

# the same panel with a text host, as Grafana writes it ($__timeGroup)
if [ "$SERIES_ROWS" -gt 0 ] && [[ " $SERIES_SHAPES " == *" text "* ]]; then
	m=bulk_series_text_${SERIES_ROWS}_$(echo -n "$SERIES_SPAN" | tr -c 'a-z0-9' _)
	make_table "$m" "CREATE TABLE $m (ts timestamptz, host text, latency float8) WITH (autovacuum_enabled = off)" \
		"INSERT INTO $m SELECT '2026-01-01'::timestamptz + i * (interval '$SERIES_SPAN' / $SERIES_ROWS), 'host-' || lpad((i % 20)::text, 2, '0'), exp(random() * 5) FROM generate_series(1, $SERIES_ROWS) i" \
		"CREATE STATISTICS ${m}_hour ON (floor(extract(epoch from ts) / 3600) * 3600), host FROM $m"
	TG="floor(extract(epoch from ts) / 3600) * 3600 AS time, host"
	P90="percentile_cont(0.9) WITHIN GROUP (ORDER BY latency)"
	for mode in serial parallel; do
		if [ $mode = serial ]; then s=$serial; else s=$par; fi
		block "multi-series, text host: $SERIES_ROWS rows, $SERIES_SPAN x 20 hosts, $mode" "sum per time, host" <<EOF
sum per time, host|$s|SELECT $TG, sum(latency) FROM $m GROUP BY 1, 2 ORDER BY 1
p90 per time, host, bulk scan, CPU|$s $cpu SET gpuselect.accelerate_builtins = on;|SELECT $TG, $P90 FROM $m GROUP BY 1, 2 ORDER BY 1
p90 per time, host, bulk_scan off, CPU|$s $cpu SET gpuselect.accelerate_builtins = on; SET gpuselect.bulk_scan = off;|SELECT $TG, $P90 FROM $m GROUP BY 1, 2 ORDER BY 1
p90 per time, host, built-in|$s SET gpuselect.accelerate_builtins = off;|SELECT $TG, $P90 FROM $m GROUP BY 1, 2 ORDER BY 1
EOF
	done
fi

printf '%s\n' "${rows[@]}"
