#!/usr/bin/env bash
# test/bench/citus_bench.sh — gpuselect on a Citus cluster (docs/citus.md;
# issue 34's goals): times and bytes of gpu_quantiles against the built-in
# percentile_disc/cont and sum(x), ungrouped and per hour, with the
# exchange on (the default) and off (today's plan: the partial aggregates,
# the anchor).
#
#   test/bench/citus_bench.sh --local [ROWS] [ROUNDS]
#       builds this tree for PostgreSQL $GS_BENCH_PG (default 17: the
#       pinned build of test/pg-binaries.sh) with Citus (test/citus-build.sh,
#       cached), starts a coordinator and two workers on this machine
#       (unix sockets, max_parallel_workers_per_gather = 0), runs, stops;
#   PGHOST=... PGPORT=<coordinator> test/bench/citus_bench.sh [ROWS] [ROUNDS]
#       a running cluster whose coordinator has citus and gpuselect loaded.
#
# Creates and drops the table gs_cbench (distributed by id, 32 shards; id
# int8, ts timestamptz over 720 hours, latency float8 uniform).  Serial:
# one session per query (psql), the queries alternating, a warm-up round
# and ROUNDS timed rounds; the median and minimum of the timed ones.  The
# answers of each pair are compared first (exact: the built-in's).  Bytes:
# Citus's counter ("Tuple data received from nodes", EXPLAIN ANALYZE) for
# plans without the exchange; the exchange's own report line (its rounds
# run through SPI, under the outer query's counter) for those with it.
# Prints the machine's load before each round and a table last.
# GS_BENCH_ROUNDS=1: then gq3's exchange round by round, each round's
# statement (from its DEBUG2 lines) timed alone, alternating with gq3 and
# sum, with Citus's counter of its bytes (GS_BENCH_ROUNDS_OF=gq3_hour_x: that
# query's rounds instead, still labelled x_gq3).  GS_BENCH_REUSE=1: a gs_cbench
# of ROWS rows already there (GS_BENCH_KEEP=1) is used as it is.  gq3_hour_x
# (not timed unless named in GS_BENCH_QUERIES): the grouped exchange's
# distributed rounds forced (citus_exchange_min_rows = 0, shard scans off;
# at 720 groups of 14k values gq3_hour runs the grouped shard scans, and
# gq3_hour_noshard today's plan after a sample; gq3_hour_nospool the grouped
# shard scans whose gather scans the shards again).  gq3_day, gq3_day_noshard, disc3_day, sum_day (not timed
# unless named): the last day of the 720 hours as a WHERE; gq3_most and its
# kin: every day but the first.
set -u -o pipefail
LOCAL=0
[ "${1:-}" = --local ] && { LOCAL=1; shift; }
ROWS=${1:-2000000}
ROUNDS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

# ---------------- a local cluster: a coordinator and two workers ----------------
if [ "$LOCAL" = 1 ]; then
	. "$ROOT/test/lib/pgenv.sh"
	. "$ROOT/test/pg-binaries.sh"
	. "$ROOT/test/citus-build.sh"
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-cbench.XXXXXX")
	chmod 755 "$WORK"
	DIRS=()
	stop_all() {
		local d
		for d in "${DIRS[@]}"; do GS_CLUSTER_DIR=$d gs_cluster_stop; done
		rm -rf "$WORK"
	}
	# GS_BENCH_KEEP=1: leave the cluster running (its psql and sockets in $WORK/env)
	[ "${GS_BENCH_KEEP:-0}" = 1 ] || trap stop_all EXIT
	trap 'exit 130' INT TERM
	GS_PG_CONFIG=$(gs_pg_binaries "${GS_BENCH_PG:-17}") || exit 1
	gs_log "building $(git -C "$ROOT" describe --always --dirty) for $("$GS_PG_CONFIG" --version) (USE_CUDA=0)"
	gs_copy_tree "$ROOT" "$WORK/src"
	make -C "$WORK/src" -s -j"${GS_JOBS:-$(nproc)}" PG_CONFIG="$GS_PG_CONFIG" USE_CUDA=0 >"$WORK/build.log" 2>&1 ||
		{ tail -30 "$WORK/build.log"; exit 1; }
	gs_private_install "$WORK/src" "$WORK/tree" PG_CONFIG="$GS_PG_CONFIG" USE_CUDA=0 || exit 1
	stage=$(gs_citus_build "$GS_PG_CONFIG") && cp -a "$stage/." "$WORK/tree/" && chmod -R a+rX "$WORK/tree" || exit 1
	CONF=("shared_preload_libraries = 'citus,gpuselect'" 'max_parallel_workers_per_gather = 0'
		"shared_buffers = ${GS_SHARED_BUFFERS:-1GB}" 'citus.shard_count = 32')
	HOSTS=() PORTS=()
	for i in 0 1 2; do
		GS_CLUSTER_DIR=
		gs_cluster_start "$WORK/tree" "${CONF[@]}" || exit 1
		DIRS+=("$GS_CLUSTER_DIR") HOSTS+=("$PGHOST") PORTS+=("$PGPORT")
		"$GS_CLUSTER_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION citus' -c 'CREATE EXTENSION gpuselect' || exit 1
	done
	PSQL=$GS_CLUSTER_BINDIR/psql
	export PGHOST=${HOSTS[0]} PGPORT=${PORTS[0]}
	"$PSQL" -X -q -v ON_ERROR_STOP=1 -c "SELECT citus_set_coordinator_host('${HOSTS[0]}', ${PORTS[0]})" \
		-c "SELECT citus_add_node('${HOSTS[1]}', ${PORTS[1]})" -c "SELECT citus_add_node('${HOSTS[2]}', ${PORTS[2]})" \
		>/dev/null || exit 1
	printf 'export PSQL=%s PGHOST=%s PGPORT=%s PGUSER=postgres PGDATABASE=postgres\n' "$PSQL" "$PGHOST" "$PGPORT" >"$WORK/env"
	gs_log "cluster: . $WORK/env; server logs: ${DIRS[*]/%//server.log}"
fi

PSQL=${PSQL:-psql}
q() { "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

load_line() { uptime | sed 's/.*load average: /load /'; }
echo "before the load: $(load_line)"
# GS_BENCH_REUSE=1: a gs_cbench of ROWS rows left by an earlier run (GS_BENCH_KEEP=1) is used as it is
if [ "${GS_BENCH_REUSE:-0}" = 1 ] && [ "$(q -c "SELECT count(*) FROM gs_cbench" 2>/dev/null)" = "$ROWS" ]; then
	echo "gs_cbench: reused"
else
q -c "DROP TABLE IF EXISTS gs_cbench" -c "SET citus.shard_count = 32" \
	-c "CREATE TABLE gs_cbench (id int8, ts timestamptz, latency float8)" \
	-c "SELECT create_distributed_table('gs_cbench', 'id')" >/dev/null || exit 1
q -c "INSERT INTO gs_cbench SELECT g, timestamptz '2026-01-01 00:00+00' + (g % 43200) * interval '1 minute',
		(random() * 1000)::float8 FROM generate_series(1, $ROWS) g" -c "VACUUM ANALYZE gs_cbench" >/dev/null || exit 1
fi

F1="'{0.99}'::float8[]"
F3="'{0.5,0.9,0.99}'::float8[]"
F101=$(q -c "SELECT quote_literal(array_agg(round(i / 100.0, 2))::float8[]::text) || '::float8[]' FROM generate_series(0, 100) i")
HOUR="date_trunc('hour', ts)"
OFF="SET gpuselect.citus_exchange = off;"
ACC="SET gpuselect.accelerate_builtins = on;"
# the grouped exchange's distributed rounds whatever the groups' sizes (at
# 720 groups of 14k values they would run today's plan:
# citus_exchange_min_rows; with shard scans on, the grouped shard scans run)
XG="SET gpuselect.citus_exchange_min_rows = 0; SET gpuselect.citus_exchange_shard_scans = off;"
DAY="ts >= timestamptz '2026-01-30 00:00+00'"
MOST="ts >= timestamptz '2026-01-02 00:00+00'"
# name -> query (settings first, the SELECT last)
declare -A QUERY=(
	[gq3]="SELECT gpu_quantiles(latency, $F3) FROM gs_cbench"
	[gq3_off]="$OFF SELECT gpu_quantiles(latency, $F3) FROM gs_cbench"
	# the exchange with its first counts round as a distributed aggregate, not shard scans
	[gq3_noshard]="SET gpuselect.citus_exchange_shard_scans = off; SELECT gpu_quantiles(latency, $F3) FROM gs_cbench"
	[disc3]="SELECT percentile_disc($F3) WITHIN GROUP (ORDER BY latency) FROM gs_cbench"
	[sum]="SELECT sum(latency) FROM gs_cbench"
	[gq3_hour]="SELECT $HOUR, gpu_quantiles(latency, $F3) FROM gs_cbench GROUP BY 1"
	[gq3_hour_off]="$OFF SELECT $HOUR, gpu_quantiles(latency, $F3) FROM gs_cbench GROUP BY 1"
	# shard scans off: the grouped rounds as distributed queries (here: a sample, then today's plan)
	[gq3_hour_noshard]="SET gpuselect.citus_exchange_shard_scans = off; SELECT $HOUR, gpu_quantiles(latency, $F3) FROM gs_cbench GROUP BY 1"
	# the grouped shard scans without their spools: the gather scans the shards again
	[gq3_hour_nospool]="SET gpuselect.citus_exchange_spool = off; SELECT $HOUR, gpu_quantiles(latency, $F3) FROM gs_cbench GROUP BY 1"
	[cont3_hour]="SELECT $HOUR, percentile_cont($F3) WITHIN GROUP (ORDER BY latency) FROM gs_cbench GROUP BY 1"
	[cont3_hour_acc]="$ACC SELECT $HOUR, percentile_cont($F3) WITHIN GROUP (ORDER BY latency) FROM gs_cbench GROUP BY 1"
	[sum_hour]="SELECT $HOUR, sum(latency) FROM gs_cbench GROUP BY 1"
	[gq3_hour_x]="$XG SELECT $HOUR, gpu_quantiles(latency, $F3) FROM gs_cbench GROUP BY 1"
	# a dashboard's time filter: the last 24 of the 720 hours (1/30 of the rows)
	[gq3_day]="SELECT gpu_quantiles(latency, $F3) FROM gs_cbench WHERE $DAY"
	[gq3_day_noshard]="SET gpuselect.citus_exchange_shard_scans = off; SELECT gpu_quantiles(latency, $F3) FROM gs_cbench WHERE $DAY"
	[disc3_day]="SELECT percentile_disc($F3) WITHIN GROUP (ORDER BY latency) FROM gs_cbench WHERE $DAY"
	[sum_day]="SELECT sum(latency) FROM gs_cbench WHERE $DAY"
	# and one that keeps 29 of the 30 days
	[gq3_most]="SELECT gpu_quantiles(latency, $F3) FROM gs_cbench WHERE $MOST"
	[gq3_most_noshard]="SET gpuselect.citus_exchange_shard_scans = off; SELECT gpu_quantiles(latency, $F3) FROM gs_cbench WHERE $MOST"
	[disc3_most]="SELECT percentile_disc($F3) WITHIN GROUP (ORDER BY latency) FROM gs_cbench WHERE $MOST"
	[sum_most]="SELECT sum(latency) FROM gs_cbench WHERE $MOST"
	# bytes only
	[gq1]="SELECT gpu_quantiles(latency, $F1) FROM gs_cbench"
	[gq101]="SELECT gpu_quantiles(latency, $F101) FROM gs_cbench"
	[gq1_hour]="SELECT $HOUR, gpu_quantiles(latency, $F1) FROM gs_cbench GROUP BY 1"
	[gq101_hour]="SELECT $HOUR, gpu_quantiles(latency, $F101) FROM gs_cbench GROUP BY 1"
	[gq1_hour_x]="$XG SELECT $HOUR, gpu_quantiles(latency, $F1) FROM gs_cbench GROUP BY 1"
	[gq101_hour_x]="$XG SELECT $HOUR, gpu_quantiles(latency, $F101) FROM gs_cbench GROUP BY 1"
)
TIMED=(${GS_BENCH_QUERIES:-gq3 disc3 sum gq3_off gq3_hour cont3_hour cont3_hour_acc gq3_hour_off sum_hour})

# the time of one run in ms (psql's \timing of the last statement)
run_ms() {
	q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
}

# the answers agree first (a pair: gpuselect's and the built-in's)
same() {
	local a b
	a=$(q -c "$1" | sort) b=$(q -c "$2" | sort)
	[ "$a" = "$b" ] || { echo "answers differ: $1 / $2"; exit 1; }
}
if [ "${GS_BENCH_CHECK:-1}" = 1 ]; then
	same "${QUERY[gq3]}" "${QUERY[disc3]}"
	same "${QUERY[gq3_off]}" "${QUERY[disc3]}"
	same "${QUERY[gq3_noshard]}" "${QUERY[disc3]}"
	same "${QUERY[cont3_hour_acc]}" "${QUERY[cont3_hour]}"
	same "${QUERY[gq3_hour]}" \
		"SELECT $HOUR, percentile_disc($F3) WITHIN GROUP (ORDER BY latency) FROM gs_cbench GROUP BY 1"
	same "${QUERY[gq3_hour]}" "${QUERY[gq3_hour_noshard]}"
	same "${QUERY[gq3_hour]}" "${QUERY[gq3_hour_nospool]}"
	case " ${TIMED[*]} " in *" gq3_day "*)
		same "${QUERY[gq3_day]}" "${QUERY[disc3_day]}"
		same "${QUERY[gq3_day_noshard]}" "${QUERY[disc3_day]}" ;;
	esac
	case " ${TIMED[*]} " in *" gq3_most "*)
		same "${QUERY[gq3_most]}" "${QUERY[disc3_most]}"
		same "${QUERY[gq3_most_noshard]}" "${QUERY[disc3_most]}" ;;
	esac
	case " ${TIMED[*]} " in *" gq3_hour_x "*)
		same "${QUERY[gq3_hour_x]}" \
			"SELECT $HOUR, percentile_disc($F3) WITHIN GROUP (ORDER BY latency) FROM gs_cbench GROUP BY 1" ;;
	esac
fi

# the queries named, alternating: a warm-up round and ROUNDS timed ones (their ms into T)
declare -A T
time_alternating() {
	local r k ms
	for ((r = 0; r <= ROUNDS; r++)); do
		echo "round $r$([ $r = 0 ] && echo ' (warm-up)'): $(load_line)"
		for k in "$@"; do
			ms=$(run_ms "${QUERY[$k]}")
			[ $r -gt 0 ] && T[$k]+="$ms "
			printf '  %-16s %10s ms\n' "$k" "$ms"
		done
	done
	echo "after the rounds: $(load_line)"
}
time_alternating "${TIMED[@]}"

# GS_BENCH_ROUNDS=1: gq3's exchange round by round, each of its statements
# (from the DEBUG2 lines) re-run alone, alternating with sum and gq3: what
# each round costs against a scan
ROUND_KEYS=()
if [ "${GS_BENCH_ROUNDS:-0}" = 1 ]; then
	i=0
	while IFS= read -r sql; do
		i=$((i + 1)) ROUND_KEYS+=("x$i") QUERY[x$i]=$sql
	done < <(q -c 'SET client_min_messages = debug2' -c "${QUERY[${GS_BENCH_ROUNDS_OF:-gq3}]}" 2>&1 >/dev/null |
		sed -n 's/.*Citus exchange round: //p' | grep -v pg_dist_shard)
	QUERY[x_gq3]=${QUERY[${GS_BENCH_ROUNDS_OF:-gq3}]} QUERY[x_sum]=${QUERY[sum]}
	time_alternating x_gq3 x_sum "${ROUND_KEYS[@]}"
fi

# bytes: Citus's counter of the statement (the exchange's rounds are not in
# it), and the exchange's own report (the rows it received, before Citus adds
# the counts rounds' shards up: a lower bound of what crossed)
citus_bytes() {
	local s=$1 pre=
	case $s in SET*) pre=${s%%SELECT*} s=SELECT${s#*SELECT} ;; esac
	q -c "$pre EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $s" |
		sed -n 's/.*Tuple data received from nodes: \(.*\)$/\1/p' | head -1
}
own_bytes() {
	q -c 'SET gpuselect.debug = on' -c "$1" 2>&1 >/dev/null | tr '\n' ' ' |
		sed -n 's/.*Citus exchange over [^;]*; \([0-9]* rounds\) received [0-9]* rows, \([0-9]*\) bytes.* at most \([0-9]*\) bytes from the \([0-9]*\) shards.*/\2 (\1; counts from the shards <= \3)/p'
}
declare -A CB OB
# GS_BENCH_BYTES=0: no bytes (a run that only times)
QUERY_KEYS=("${!QUERY[@]}")
[ "${GS_BENCH_BYTES:-1}" = 1 ] || QUERY_KEYS=()
for k in "${QUERY_KEYS[@]}"; do
	case $k in sum* | disc* | cont3_hour) ;; *) OB[$k]=$(own_bytes "${QUERY[$k]}") ;; esac
	CB[$k]=$(citus_bytes "${QUERY[$k]}")
done
COLBYTES=$(q -c "SELECT 8 * count(latency) FROM gs_cbench")

med() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { printf "%.0f %.0f\n", v[int((NR + 1) / 2)], v[1] }'; }
declare -A MED MIN
for k in "${!T[@]}"; do read -r MED[$k] MIN[$k] < <(med "${T[$k]}"); done
ratio() { [ -n "${MED[$1]:-}" ] && [ -n "${MED[$2]:-}" ] && awk -v a="${MED[$1]}" -v b="${MED[$2]}" 'BEGIN { printf "%.2f", a / b }'; }

echo
printf '%s rows, %s timed rounds (+1 warm-up), PostgreSQL %s, Citus %s, gpuselect %s; the column: %s bytes\n' \
	"$ROWS" "$ROUNDS" "$(q -c 'SHOW server_version')" "$(q -c 'SELECT citus_version()' | awk '{print $2}')" \
	"$(git -C "$ROOT" describe --always --dirty)" "$COLBYTES"
echo "disc3 / gq3 = $(ratio disc3 gq3) (goal >= 10); gq3 / sum = $(ratio gq3 sum) (goal <= 3); gq3_off / gq3 = $(ratio gq3_off gq3)"
echo "disc3_day / gq3_day = $(ratio disc3_day gq3_day); gq3_day / sum_day = $(ratio gq3_day sum_day); gq3_day_noshard / gq3_day = $(ratio gq3_day_noshard gq3_day)"
echo "disc3_most / gq3_most = $(ratio disc3_most gq3_most); gq3_most / sum_most = $(ratio gq3_most sum_most); gq3_most_noshard / gq3_most = $(ratio gq3_most_noshard gq3_most)"
echo "gq3_noshard / sum = $(ratio gq3_noshard sum); gq3 / gq3_noshard = $(ratio gq3 gq3_noshard); disc3 / gq3_noshard = $(ratio disc3 gq3_noshard)"
echo "cont3_hour / gq3_hour = $(ratio cont3_hour gq3_hour) (goal >= 10); cont3_hour / cont3_hour_acc = $(ratio cont3_hour cont3_hour_acc) (goal >= 10); gq3_hour_off / gq3_hour = $(ratio gq3_hour_off gq3_hour)"
echo "gq3_hour / sum_hour = $(ratio gq3_hour sum_hour); gq3_hour_noshard / gq3_hour = $(ratio gq3_hour_noshard gq3_hour)"
echo "cont3_hour / gq3_hour_x = $(ratio cont3_hour gq3_hour_x); gq3_hour_x / sum_hour = $(ratio gq3_hour_x sum_hour); gq3_hour_x / gq3_hour_off = $(ratio gq3_hour_x gq3_hour_off)"
# the exchange's bytes with the counts rounds' rows as every shard sent them
# (an upper bound: what Citus combined counted once, here once per shard)
read -r ob3 cb3 < <(sed -n 's/^\([0-9]*\) .*<= \([0-9]*\))$/\1 \2/p' <<<"${OB[gq3]:-}")
[ -n "${ob3:-}" ] && awk -v a="$ob3" -v c="$cb3" -v b="$COLBYTES" 'BEGIN {
	printf "gq3 received %d bytes, at most %d with every shard'"'"'s counts: %.3f%%-%.3f%% of the column (goal <= 1%%)\n",
		a, a + c, 100 * a / b, 100 * (a + c) / b }'
echo
printf '| query | median ms | min ms | Citus counter | exchange report |\n|---|---|---|---|---|\n'
for k in "${TIMED[@]}" gq1 gq101 gq1_hour gq101_hour gq1_hour_x gq101_hour_x; do
	printf '| %s | %s | %s | %s | %s |\n' "$k" "${MED[$k]:--}" "${MIN[$k]:--}" "${CB[$k]:--}" "${OB[$k]:--}"
done
if [ ${#ROUND_KEYS[@]} -gt 0 ]; then
	echo
	echo "gq3's exchange round by round (x_gq3, x_sum: gq3 and sum timed again with them; x1...: each round's statement re-run alone):"
	printf '| round | median ms | min ms | / sum | Citus counter | statement |\n|---|---|---|---|---|---|\n'
	for k in x_gq3 x_sum "${ROUND_KEYS[@]}"; do
		printf '| %s | %s | %s | %s | %s | %s |\n' "$k" "${MED[$k]}" "${MIN[$k]}" "$(ratio "$k" x_sum)" \
			"$(case $k in x_*) ;; *) citus_bytes "${QUERY[$k]}" ;; esac)" "$(cut -c1-110 <<<"${QUERY[$k]}")"
	done
fi
[ "${GS_BENCH_KEEP:-0}" = 1 ] || q -c "DROP TABLE gs_cbench" >/dev/null
