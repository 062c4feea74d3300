#!/usr/bin/env bash
# test/bench/spill_bench.sh — the spilled path (gpuselect.work_mem small)
# against the built-in percentile_disc/percentile_cont at the default
# work_mem (which spills to an external sort), against gpuselect's
# in-memory path, with sum(x) as the executor floor.  Serial, CPU path.
#
# Every query runs in a fresh session with work_mem at PostgreSQL's default
# (4MB); the timing is psql's \timing of the query, whose one-row answer
# is kept, and the session's peak RSS (VmHWM) is read right after it.  The
# queries alternate within each round (round 1: all queries, round 2: all
# queries, ...); the table reports each query's median and its range.
# Every answer of a round is compared (as text) with the other answers of
# the same aggregate and fractions, built-in included: the timed runs are
# the check, so a 200M-row table costs no extra sorts.
#
# Environment (defaults in brackets):
#   GS_BENCH_ROWS        float8 rows, one or more sizes           [50000000]
#   GS_BENCH_RUNS        rounds                                   [3]
#   GS_BENCH_SPILL_MEM   gpuselect.work_mem of the spilled runs   [4MB]
#   GS_BENCH_QUERIES     which rows of the table below run, by number
#                        from 0, comma-separated            [all]
#   GS_BENCH_EXISTING=1  use the server in PGHOST/PGPORT/... (gpuselect
#                        installed there); else build + throw-away cluster
#   GS_BENCH_OUT         result file [test/bench/results/spill-<date>-<host>.md]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/test/lib/pgenv.sh"

ROWS=${GS_BENCH_ROWS:-50000000}
RUNS=${GS_BENCH_RUNS:-3}
SPILL_MEM=${GS_BENCH_SPILL_MEM:-4MB}
HOST=$(hostname -s)
STAMP=$(date -u +%Y-%m-%d-%H%M)
OUT=${GS_BENCH_OUT:-$ROOT/test/bench/results/spill-$STAMP-$HOST.md}
mkdir -p "$(dirname "$OUT")"

WORK=
cleanup() {
	[ "${GS_BENCH_EXISTING:-0}" = 1 ] || gs_cluster_stop
	[ -n "$WORK" ] && rm -rf "$WORK"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "${GS_BENCH_EXISTING:-0}" != 1 ]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-bench.XXXXXX")
	chmod 755 "$WORK"
	gs_copy_tree "$ROOT" "$WORK/build"
	make -C "$WORK/build" -s -j"$(nproc)" USE_CUDA=0 >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
	gs_private_install "$WORK/build" "$WORK/install" USE_CUDA=0
	gs_cluster_start "$WORK/install"
fi
PSQL=$(gs_pg_bindir)/psql
gs_psql -c "CREATE EXTENSION IF NOT EXISTS gpuselect"

COMMON="SET gpuselect.device = 'cpu'; SET max_parallel_workers_per_gather = 0; SET jit = off; SET extra_float_digits = 3; SET work_mem = '4MB';"
FR101="(SELECT array_agg(i / 100.0) FROM generate_series(0, 100) i)"
# name | settings | aggregate expression
QUERIES=(
	"sum(x) (floor)||sum(x)|"
	"built-in percentile_disc(0.5), work_mem 4MB||percentile_disc(0.5) WITHIN GROUP (ORDER BY x)|disc"
	"built-in percentile_cont(0.5), work_mem 4MB||percentile_cont(0.5) WITHIN GROUP (ORDER BY x)|cont"
	"gpu_percentile_disc(0.5), in memory||gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x)|disc"
	"gpu_percentile_cont(0.5), in memory||gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x)|cont"
	"gpu_percentile_disc(0.5), spilled at $SPILL_MEM|SET gpuselect.work_mem = '$SPILL_MEM';|gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x)|disc"
	"gpu_percentile_cont(0.5), spilled at $SPILL_MEM|SET gpuselect.work_mem = '$SPILL_MEM';|gpu_percentile_cont(0.5) WITHIN GROUP (ORDER BY x)|cont"
	"gpu_percentile_disc(101 fractions), in memory||gpu_percentile_disc($FR101) WITHIN GROUP (ORDER BY x)|disc101"
	"gpu_percentile_disc(101 fractions), spilled at $SPILL_MEM|SET gpuselect.work_mem = '$SPILL_MEM';|gpu_percentile_disc($FR101) WITHIN GROUP (ORDER BY x)|disc101"
	"built-in percentile_disc(101 fractions), work_mem 4MB||percentile_disc($FR101) WITHIN GROUP (ORDER BY x)|disc101"
)
if [ -n "${GS_BENCH_QUERIES:-}" ]; then
	PICKED=()
	for i in ${GS_BENCH_QUERIES//,/ }; do PICKED+=("${QUERIES[$i]}"); done
	QUERIES=("${PICKED[@]}")
fi

# one query in a fresh session: "ms kB answer"
run_one() {
	local set=$1 agg=$2
	gs_psql -At -c "$COMMON $set" -c '\timing on' \
		-c "SELECT 'ans ' || ($agg)::text FROM spill_t" -c '\timing off' \
		-c "SELECT 'hwm ' || substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s*(\\d+) kB')" |
		awk '/^Time: / { ms = $2 } /^hwm / { kb = $2 } /^ans / { a = substr($0, 5) } END { print ms, kb, a }'
}

{
	echo "# Spilled path against the built-in (CPU, serial)"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src kernels || echo ' (+ uncommitted changes)')"
	echo "- machine: $HOST, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo) RAM; shared with other work"
	echo "- server: $("$PSQL" -XAtc 'SELECT version()' | cut -d, -f1); server work_mem $("$PSQL" -XAtc 'SHOW work_mem') (every timed session sets 4MB), shared_buffers $("$PSQL" -XAtc 'SHOW shared_buffers')"
	echo "- method: $RUNS rounds, each query once per round in a fresh session, alternating; psql \\timing of the one-row query; peak RSS = the backend's VmHWM after the query (includes shared buffers it touched)"
	echo "- script: test/bench/spill_bench.sh (GS_BENCH_SPILL_MEM=$SPILL_MEM)"
} >"$OUT"

for n in $ROWS; do
	gs_log "table of $n float8 rows"
	# unlogged, filled by 8 sessions at once: at 200M rows the load would
	# otherwise take longer than the queries (the scan is the same)
	gs_psql -c "DROP TABLE IF EXISTS spill_t" -c "CREATE UNLOGGED TABLE spill_t (x float8)"
	for p in 0 1 2 3 4 5 6 7; do
		gs_psql -c "INSERT INTO spill_t SELECT random() * 2e6 - 1e6 FROM generate_series(1, $n / 8 + ($p < $n % 8)::int)" &
	done
	wait
	gs_psql -c "VACUUM ANALYZE spill_t"
	ok=yes
	declare -A ANS

	declare -A MS KB
	for r in $(seq 1 "$RUNS"); do
		for i in "${!QUERIES[@]}"; do
			IFS='|' read -r name set agg check <<<"${QUERIES[$i]}"
			read -r ms kb ans < <(run_one "$set" "$agg")
			MS[$i]="${MS[$i]:-} $ms"
			KB[$i]="${KB[$i]:-} $kb"
			if [ -n "$check" ]; then
				[ -z "${ANS[$check]:-}" ] && ANS[$check]=$ans
				[ "${ANS[$check]}" = "$ans" ] || { ok=NO; gs_log "answer differs: $name: $ans, not ${ANS[$check]}"; }
			fi
			gs_log "n=$n round $r: $name: $ms ms, $kb kB"
		done
	done
	{
		echo
		echo "## $n rows (answers of the same aggregate equal, built-ins' included: $ok)"
		echo
		echo "| query | median ms (min-max) | x sum(x) | peak RSS MB |"
		echo "|---|---:|---:|---:|"
		floor=$(echo ${MS[0]} | tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
		for i in "${!QUERIES[@]}"; do
			IFS='|' read -r name set agg check <<<"${QUERIES[$i]}"
			read -r med lo hi < <(echo ${MS[$i]} | tr ' ' '\n' | sort -g |
				awk '{a[NR]=$1} END {print a[int((NR+1)/2)], a[1], a[NR]}')
			kbmax=$(echo ${KB[$i]} | tr ' ' '\n' | sort -g | tail -1)
			awk -v n="$name" -v m="$med" -v l="$lo" -v h="$hi" -v f="$floor" -v k="$kbmax" \
				'BEGIN { printf "| %s | %.0f (%.0f-%.0f) | %.2f | %.0f |\n", n, m, l, h, m / f, k / 1024 }'
		done
	} >>"$OUT"
	unset MS KB ANS
	gs_psql -c "DROP TABLE spill_t"
done
gs_log "results: $OUT"
cat "$OUT"
