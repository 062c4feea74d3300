#!/usr/bin/env bash
# test/bench/sql_bench.sh — SQL benchmark of gpuselect against PostgreSQL's
# built-in percentile_disc/percentile_cont, with sum(x) as the executor floor.
#
# By default builds the extension (CUDA if nvcc is found), installs it into a
# private tree, starts a throw-away cluster, benchmarks, and removes it.
# Every timing is the median of GS_BENCH_RUNS runs of
# EXPLAIN (ANALYZE, TIMING OFF) "Execution Time" (rows are not sent to the
# client).  Answers of the gpuselect queries are compared with the built-ins.
#
# Environment (defaults in brackets):
#   GS_BENCH_ROWS       table sizes, float8 rows        ["1000000 10000000"]
#   GS_BENCH_DEVICE     gpuselect.device                [cpu; auto if nvidia-smi -L finds a GPU]
#   GS_BENCH_WORKERS    max_parallel_workers_per_gather values; 0 = serial
#                       (built-in ordered-set aggregates are never parallel)   ["0"]
#   GS_BENCH_GROUPS     GROUP BY benchmark: groups x rows per group            ["10000 100"]
#   GS_BENCH_RUNS       runs per timing                                        [3]
#   GS_BENCH_WORK_MEM   work_mem (large, so the built-ins sort in memory)      [2GB]
#   GS_BENCH_EXISTING=1 use the server in PGHOST/PGPORT/PGUSER/PGDATABASE
#                       (gpuselect must be installed there)
#   GS_BENCH_OUT        result file [test/bench/results/sql-<date>-<host>.md]
#   GS_BENCH_NOTE       free text added to the result file
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/test/lib/pgenv.sh"

ROWS=${GS_BENCH_ROWS:-"1000000 10000000"}
if [ -z "${GS_BENCH_DEVICE:-}" ]; then
	GS_BENCH_DEVICE=cpu
	command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU && GS_BENCH_DEVICE=auto
fi
DEVICE=$GS_BENCH_DEVICE
WORKERS=${GS_BENCH_WORKERS:-0}
read -r NGROUPS GROUPSIZE <<<"${GS_BENCH_GROUPS:-10000 100}"
RUNS=${GS_BENCH_RUNS:-3}
WORK_MEM=${GS_BENCH_WORK_MEM:-2GB}
HOST=$(hostname -s)
STAMP=$(date -u +%Y%m%d-%H%M)
OUT=${GS_BENCH_OUT:-$ROOT/test/bench/results/sql-$STAMP-$HOST.md}
mkdir -p "$(dirname "$OUT")"

WORK=
cleanup() {
	gs_cluster_stop
	[ -n "$WORK" ] && rm -rf "$WORK"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "${GS_BENCH_EXISTING:-0}" != 1 ]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-bench.XXXXXX")
	chmod 755 "$WORK"
	gs_log "building gpuselect in $WORK"
	gs_copy_tree "$ROOT" "$WORK/build"
	make -C "$WORK/build" -s -j"$(nproc)" >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
	gs_private_install "$WORK/build" "$WORK/install"
	GS_SHARED_BUFFERS=${GS_BENCH_SHARED_BUFFERS:-2GB} gs_cluster_start "$WORK/install" \
		"max_parallel_workers = 16" "max_worker_processes = 24"
	gs_log "throw-away cluster at $PGHOST:$PGPORT"
fi
export PGOPTIONS="-c client_min_messages=warning"
gs_psql -c "CREATE EXTENSION IF NOT EXISTS gpuselect"

F101="'{$(seq -s, 0 100 | awk -F, '{for (i = 1; i <= NF; i++) printf "%s%s", (i > 1 ? "," : ""), $i / 100}')}'::float8[]"

# settings <workers>: SET commands for one run
settings() {
	local w=$1
	echo "SET work_mem = '$WORK_MEM'; SET gpuselect.device = '$DEVICE'; SET jit = off;"
	echo "SET max_parallel_workers_per_gather = $w;"
	if [ "$w" -gt 0 ]; then
		echo "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
	fi
}

# time_ms <workers> <extra settings> <query> -> median execution time (ms)
time_ms() {
	local w=$1 extra=$2 q=$3 i t ts=()
	for ((i = 0; i < RUNS; i++)); do
		t=$(gs_psql -At -c "$(settings "$w") $extra" -c "EXPLAIN (ANALYZE, TIMING OFF) $q" |
			sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p')
		[ -n "$t" ] || { echo "no timing for: $q" >&2; exit 1; }
		ts+=("$t")
	done
	printf '%s\n' "${ts[@]}" | sort -g | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] }'
}

# answer <workers> <extra> <query> -> md5 of the result rows
answer() {
	gs_psql -At -c "$(settings "$1") $2" -c "SELECT md5(string_agg(q::text, '|' ORDER BY q::text)) FROM ($3) q"
}

APPROX_NOTES=
RESULTS=()   # "label|rows|workers|ms|builtin_ms|sum_ms|same"
declare -A T

# bench <key> <label> <rows> <workers> <extra> <query> [<builtin key> <builtin query for the answer>]
bench() {
	local key=$1 label=$2 n=$3 w=$4 extra=$5 q=$6 bkey=${7:-} bq=${8:-}
	local ms same=""
	ms=$(time_ms "$w" "$extra" "$q")
	T[$key]=$ms
	if [ -n "$bkey" ]; then
		if [ "$(answer "$w" "$extra" "$q")" = "$(answer 0 "" "$bq")" ]; then same=yes; else same=NO; fi
	fi
	local bms=""
	[ -n "$bkey" ] && bms=${T[$bkey]:-}
	RESULTS+=("$label|$n|$w|$ms|$bms|${T[sum-$n-$w]:-}|$same")
	gs_log "$(printf '%-48s rows=%-9s workers=%s  %10s ms  %s' "$label" "$n" "$w" "$ms" "$same")"
}

for n in $ROWS; do
	t=bench_$n
	gs_log "creating $t ($n float8 rows)"
	gs_psql -c "DROP TABLE IF EXISTS $t" \
		-c "CREATE TABLE $t AS SELECT (random() * 2e6 - 1e6)::float8 AS x FROM generate_series(1, $n)" \
		-c "VACUUM ANALYZE $t" -c "SELECT count(*) FROM $t" >/dev/null
	gs_psql -c "SELECT pg_prewarm('$t')" >/dev/null 2>&1 || true
	for w in $WORKERS; do
		bench "sum-$n-$w" "sum(x) (executor floor)" "$n" "$w" "" "SELECT sum(x) FROM $t"
		if [ "$w" = 0 ]; then
			bench "pd1-$n" "percentile_disc(0.5)" "$n" 0 "" \
				"SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t"
			bench "pd101-$n" "percentile_disc(101 fractions)" "$n" 0 "" \
				"SELECT percentile_disc($F101) WITHIN GROUP (ORDER BY x) FROM $t"
			bench "pc1-$n" "percentile_cont(0.5)" "$n" 0 "" \
				"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM $t"
			bench "gpd1-$n" "gpu_percentile_disc(0.5)" "$n" 0 "" \
				"SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t" \
				"pd1-$n" "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t"
		fi
		bench "gq101-$n-$w" "gpu_quantiles(x, 101 fractions)" "$n" "$w" "" \
			"SELECT gpu_quantiles(x, $F101) FROM $t" \
			"pd101-$n" "SELECT percentile_disc($F101) WITHIN GROUP (ORDER BY x) FROM $t"
		bench "gmed-$n-$w" "gpu_median(x)" "$n" "$w" "" \
			"SELECT gpu_median(x) FROM $t" \
			"pc1-$n" "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM $t"
		bench "aq101-$n-$w" "gpu_quantiles(x, 101) approximate" "$n" "$w" "SET gpuselect.approximate = on;" \
			"SELECT gpu_quantiles(x, $F101) FROM $t"
		RESULTS[-1]="${RESULTS[-1]%|*|*|*}|${T[pd101-$n]}|${T[sum-$n-$w]}|approx"
	done
	bound=$(gs_psql -At -c "SET gpuselect.approximate = on; SET gpuselect.device = '$DEVICE'; SET max_parallel_workers_per_gather = 0;" \
		-c '\o /dev/null' -c "SELECT gpu_quantiles(x, $F101) FROM $t" -c '\o' \
		-c "SELECT value FROM gpuselect_status() WHERE name = 'last_rank_bound'")
	APPROX_NOTES+="- approximate, $n rows: gpuselect_status() last_rank_bound = $bound (max rank error over the 101 fractions)"$'\n'
	gs_psql -c "DROP TABLE $t"
done

# GROUP BY: NGROUPS groups of GROUPSIZE rows
gn=$((NGROUPS * GROUPSIZE))
gs_log "creating bench_groups ($NGROUPS groups x $GROUPSIZE rows)"
gs_psql -c "DROP TABLE IF EXISTS bench_groups" \
	-c "CREATE TABLE bench_groups AS SELECT g % $NGROUPS AS grp, (random() * 2e6 - 1e6)::float8 AS x FROM generate_series(1, $gn) g" \
	-c "VACUUM ANALYZE bench_groups" >/dev/null
GLABEL="GROUP BY $NGROUPS x $GROUPSIZE:"
bench "gsum" "$GLABEL sum(x)" "$gn" 0 "" "SELECT grp, sum(x) FROM bench_groups GROUP BY grp"
T[sum-$gn-0]=${T[gsum]}
RESULTS[-1]="${RESULTS[-1]%|*|*|*}||${T[gsum]}|"
bench "gpd" "$GLABEL percentile_disc(0.5)" "$gn" 0 "" \
	"SELECT grp, percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM bench_groups GROUP BY grp"
bench "ggpd" "$GLABEL gpu_percentile_disc(0.5)" "$gn" 0 "" \
	"SELECT grp, gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM bench_groups GROUP BY grp" \
	"gpd" "SELECT grp, percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM bench_groups GROUP BY grp"
bench "ggq" "$GLABEL gpu_quantile(x, 0.5)" "$gn" 0 "" \
	"SELECT grp, gpu_quantile(x, 0.5) FROM bench_groups GROUP BY grp" \
	"gpd" "SELECT grp, percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM bench_groups GROUP BY grp"
gs_psql -c "DROP TABLE bench_groups"

# ---------------- report ----------------
status=$(gs_psql -At -F '=' -c "SELECT name, value FROM gpuselect_status() WHERE name IN ('cuda_build','gpu_available','gpu_reason','service_device')" | tr '\n' ' ')
{
	echo "# gpuselect SQL benchmark — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "- machine: $HOST, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc), $(free -g | awk '/^Mem:/ {print $2 " GiB RAM"}')"
	echo "- GPU: $(command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | head -1 || echo none)"
	echo "- git commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- src kernels extension 2>/dev/null || echo ' (+ uncommitted changes)')"
	echo "- PostgreSQL: $(gs_psql -At -c 'SHOW server_version')"
	echo "- settings: gpuselect.device = $DEVICE, work_mem = $WORK_MEM, jit = off, shared_buffers = $(gs_psql -At -c 'SHOW shared_buffers')"
	echo "- gpuselect_status(): $status"
	echo "- each time: median of $RUNS runs of EXPLAIN (ANALYZE, TIMING OFF) execution time, in ms"
	echo "- speedup = time of the built-in with the same answer / time; x floor = time / sum(x) time"
	echo "- same = the result equals the built-in's (percentile_disc for disc/quantiles, percentile_cont(0.5) for gpu_median)"
	[ -n "${GS_BENCH_NOTE:-}" ] && echo "- note: $GS_BENCH_NOTE"
	echo
	echo "| query | rows | workers | time ms | speedup vs built-in | x sum(x) | same |"
	echo "|---|---:|---:|---:|---:|---:|---|"
	for r in "${RESULTS[@]}"; do
		IFS='|' read -r label n w ms bms sms same <<<"$r"
		sp=""; fl=""
		[ -n "$bms" ] && sp=$(awk -v a="$bms" -v b="$ms" 'BEGIN { printf "%.2fx", a / b }')
		[ -n "$sms" ] && fl=$(awk -v a="$ms" -v b="$sms" 'BEGIN { printf "%.2f", a / b }')
		echo "| $label | $n | $w | $ms | $sp | $fl | $same |"
	done
	echo
	printf '%s' "${APPROX_NOTES:-}"
} >"$OUT"
cat "$OUT"
gs_log "results written to $OUT"
