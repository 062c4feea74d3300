#!/usr/bin/env bash
# test/bench/citus_bench.sh — gpuselect on a Citus cluster (docs/citus.md):
# gpu_quantiles against percentile_disc and sum(x), serial, the three
# queries alternating, ROUNDS rounds; prints each query's median and
# minimum time and the bytes the coordinator received (Citus's own counter,
# "Tuple data received from nodes" of EXPLAIN ANALYZE).
#
#   PGHOST=... PGPORT=<coordinator> test/bench/citus_bench.sh [ROWS] [ROUNDS]
#
# Needs a running cluster whose coordinator has citus and gpuselect (see
# docs/citus.md for the settings); creates and drops the table gs_cbench
# (distributed by id, 32 shards; latency float8, ts timestamptz).
set -u -o pipefail
ROWS=${1:-2000000}
ROUNDS=${2:-5}
PSQL=${PSQL:-psql}
q() { "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

q -c "DROP TABLE IF EXISTS gs_cbench" -c "SET citus.shard_count = 32" \
	-c "CREATE TABLE gs_cbench (id int8, ts timestamptz, latency float8)" \
	-c "SELECT create_distributed_table('gs_cbench', 'id')" >/dev/null || exit 1
q -c "INSERT INTO gs_cbench SELECT g, timestamptz '2026-01-01 00:00+00' + (g % 43200) * interval '1 minute',
		(random() * 1000)::float8 FROM generate_series(1, $ROWS) g" -c "VACUUM ANALYZE gs_cbench" >/dev/null || exit 1

FR="'{0.5,0.9,0.99}'::float8[]"
declare -A QUERY=(
	[gpu_quantiles]="SELECT gpu_quantiles(latency, $FR) FROM gs_cbench"
	[percentile_disc]="SELECT percentile_disc($FR) WITHIN GROUP (ORDER BY latency) FROM gs_cbench"
	[sum]="SELECT sum(latency) FROM gs_cbench"
	[gpu_quantiles_hourly]="SELECT date_trunc('hour', ts), gpu_quantiles(latency, $FR) FROM gs_cbench GROUP BY 1"
	[percentile_disc_hourly]="SELECT date_trunc('hour', ts), percentile_disc($FR) WITHIN GROUP (ORDER BY latency) FROM gs_cbench GROUP BY 1"
)
ORDER=(gpu_quantiles percentile_disc sum gpu_quantiles_hourly percentile_disc_hourly)

# time of one run in ms (psql's \timing), the answer discarded
run_ms() {
	q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
}

# the answers agree first
a=$(q -c "${QUERY[gpu_quantiles]}")
b=$(q -c "${QUERY[percentile_disc]}")
[ "$a" = "$b" ] || { echo "answers differ: $a vs $b"; exit 1; }

declare -A T
for ((r = 0; r < ROUNDS; r++)); do
	for k in "${ORDER[@]}"; do
		T[$k]+="$(run_ms "${QUERY[$k]}") "
	done
done

printf '%s rows, %s rounds, PostgreSQL %s, %s\n' "$ROWS" "$ROUNDS" \
	"$(q -c 'SHOW server_version')" "$(q -c "SELECT 'citus ' || citus_version()" | cut -d' ' -f1-3)"
printf '| query | median ms | min ms | bytes to the coordinator |\n|---|---|---|---|\n'
for k in "${ORDER[@]}"; do
	read -r med min < <(tr ' ' '\n' <<<"${T[$k]}" | grep . | sort -n |
		awk '{ v[NR] = $1 } END { printf "%.0f %.0f\n", v[int((NR + 1) / 2)], v[1] }')
	bytes=$(q -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${QUERY[$k]}" |
		sed -n 's/.*Tuple data received from nodes: \(.*\)$/\1/p')
	printf '| %s | %s | %s | %s |\n' "$k" "$med" "$min" "$bytes"
done
q -c "DROP TABLE gs_cbench" >/dev/null
