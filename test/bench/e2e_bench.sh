#!/bin/bash
# test/bench/e2e_bench.sh — end-to-end benchmark of gpuselect inside PostgreSQL.
#
# Runs against the server given by the PG* variables (on the GPU machine:
# test/gpu/pg_device_run.sh "service-on bench"), with gpuselect installed and
# preloaded so that its GPU service runs (the "[gpu]" rows use
# gpuselect.device = gpu: without the service they are ERR).  In one
# run and on the same server it times, for float8 tables of each size in
# GS_BENCH_SIZES (default "1000000 10000000 100000000"):
#   sum(x) (the executor floor) serial and parallel; built-in percentile_disc
#   (0.5 and 101 fractions); gpuselect on the CPU path and on the GPU path
#   (ordered-set, gpu_median, gpu_quantiles serial and parallel, approximate)
# and a dashboard table (10M latencies, hourly timestamps over 30 days):
#   p50/p90/p99 per hour, built-in vs gpuselect;
# and the GPU/CPU crossover used for gpuselect.gpu_min_rows.
# The "alternating" rows run their queries in turn in one session, for ratios
# that do not depend on which CPU a session landed on (this matters on the
# GPU machine, whose scan times vary by up to 2x between sessions).
# Each time is the median of GS_BENCH_REPS runs (default 3; 1 at 100M rows),
# or ERR when any run of it failed (psql stops there: ON_ERROR_STOP),
# wall time measured by psql's \timing in one session that has already
# run a query (the first-call cost is reported separately).
# Prints one table; writes it to $GS_BENCH_OUT (default stdout only).
set -u
SIZES=${GS_BENCH_SIZES-"1000000 10000000 100000000"}   # set but empty: none
EXTRAS=${GS_BENCH_EXTRAS:-1}      # 0: skip the dashboard and crossover parts
ALT_ONLY=${GS_BENCH_ALT_ONLY:-0}  # 1: only the alternating rows (ratios in one session)
REPS=${GS_BENCH_REPS:-3}
WORKERS=${GS_BENCH_WORKERS:-8}
BUILTIN_MAX=${GS_BENCH_BUILTIN_MAX_ROWS:-100000000}   # skip built-in above this size
OUT=${GS_BENCH_OUT:-/dev/null}
PSQL="psql -X -q -v ON_ERROR_STOP=1"
# a constant: an expression here would be evaluated (and compared) per row
F101="'{$(seq -s, 0 100 | sed 's/\([0-9]*\)/\1e-2/g')}'::float8[]"

rows=()
row() { rows+=("$(printf '%-44s %11s %10s %10s %10s' "$@")"); }

# median wall time (ms) of a query run $2 times in one session, after a tiny
# warm-up query (the session's first selection); the table's pages are
# already cached by the sum(x) runs.
# WARM=1: two untimed runs of the query first (parallel plain aggregates
# without the service: a session creates its key arena at its second large
# one, a per-session cost reported by the A/B runs in the results files)
timeq() { # timeq SETTINGS REPS QUERY [WARM]
	local settings=$1 reps=$2 query=$3 warm=${4:-0}
	{
		echo "$settings"
		echo "SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY g) FROM generate_series(1, 10) g;"
		[ "$warm" = 1 ] && echo "$query; $query;"
		echo '\timing on'
		for _ in $(seq "$reps"); do echo "$query;"; done
	} | $PSQL -o /dev/null 2>&1 | awk '/ERROR:/ {print "ERR"} /^Time:/ {print $2}' | sort -g |
		awk '/ERR/ {err = 1} {a[NR]=$1} END {if (NR == 0 || err) print "ERR"; else printf "%.1f\n", a[int((NR + 1) / 2)]}'
}
# the same, for several queries alternating in ONE session (rep 1 of each,
# then rep 2 ...; one more round first, as a warm-up, not counted: e.g. the
# leader's key arena exists from a session's second large parallel
# aggregate on): medians, space-separated.  Each argument is
# "SETTINGS;QUERY" split at the first "|" -- the settings run before every
# repetition of that query.  Used where a ratio matters more than the absolute
# time: the GPU machine's scan times vary by up to 2x between sessions.
timeq_alt() { # timeq_alt REPS "SETTINGS|QUERY"...
	local reps=$1; shift
	local nq=$# q a
	{
		echo "SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY g) FROM generate_series(1, 10) g;"
		echo '\timing on'
		for _ in $(seq "$((reps + 1))"); do
			q=0
			for a in "$@"; do echo "${a%%|*}"; echo "\\echo @Q$q"; echo "${a#*|};"; q=$((q + 1)); done
		done
	} | $PSQL -o /dev/null 2>&1 |
		awk -v nq="$nq" '
			/^@Q/ { cur = substr($0, 3) + 0; want = 1; next }
			/ERROR:/ { err = 1 }
			/^Time:/ { if (want) { if (++seen[cur] > 1) t[cur, ++c[cur]] = $2; want = 0 } }
			END {
				if (err) { for (q = 0; q < nq; q++) printf "%sERR", (q ? " " : ""); print ""; exit }
				for (q = 0; q < nq; q++) {
					n = c[q]; for (i = 1; i <= n; i++) v[i] = t[q, i]
					for (i = 2; i <= n; i++) { x = v[i]; j = i - 1; while (j > 0 && v[j] > x) { v[j + 1] = v[j]; j-- } v[j + 1] = x }
					printf "%s%s", (q ? " " : ""), (n ? sprintf("%.1f", v[int((n + 1) / 2)]) : "ERR")
				}
				print ""
			}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "-" }'; }

# groups stay in memory at every size (gpuselect.work_mem, default 1GB,
# would spill 200M float8 rows to disk and to the CPU path)
NOSPILL="SET gpuselect.work_mem = '${GS_BENCH_GS_WORK_MEM:-64GB}';"
SER="SET max_parallel_workers_per_gather = 0; SET gpuselect.gpu_min_rows = 0; $NOSPILL"
# GS_BENCH_ARENA: the leader's key arena (gpuselect.parallel_arena_size; 100M
# float8 rows need ~1.2 GB with 8 workers)
ARENA="SET gpuselect.parallel_arena_size = '${GS_BENCH_ARENA:-256MB}';"
PAR="SET max_parallel_workers_per_gather = $WORKERS; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET gpuselect.gpu_min_rows = 0; $ARENA $NOSPILL"
# the GPU service copies a scan's full key-pool chunks to the device while
# the scan goes on (prefetch, the default); PF_OFF turns that off for one
# session's scans (a test hook), for the "prefetch off" rows
GPU="SET gpuselect.device = gpu; SET gpuselect.test_service_prefetch = on;"
PF_OFF="SET gpuselect.test_service_prefetch = off;"
CPU="SET gpuselect.device = cpu;"

$PSQL -c "CREATE EXTENSION IF NOT EXISTS gpuselect;" || exit 1
gpu_name=$($PSQL -At -c "SET gpuselect.device = gpu; SET gpuselect.gpu_min_rows = 0;
	SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY g) FROM generate_series(1, 10) g;
	SELECT value FROM gpuselect_status() WHERE name = 'service_device' AND value <> '';" 2>/dev/null | tail -1)
# the first GPU call of a new session (through the GPU service: no context
# of its own) against a call in a session that already made one: the median of 5
# fresh sessions each
median5() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
first_call=$(for i in 1 2 3 4 5; do
	{ echo "$GPU $SER"; echo '\timing on';
	  echo "SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY g) FROM generate_series(1, 1000) g;"; } |
		$PSQL -o /dev/null 2>&1 | awk '/^Time:/ {print $2}'; done | median5)
warm_call=$(for i in 1 2 3 4 5; do
	{ echo "$GPU $SER"; echo "SELECT 1 FROM generate_series(1, 1000) g HAVING gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY g) > 0;";
	  echo '\timing on';
	  echo "SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY g) FROM generate_series(1, 1000) g;"; } |
		$PSQL -o /dev/null 2>&1 | awk '/^Time:/ {print $2}'; done | median5)

for n in $SIZES; do
	t=bench_f8_$n
	reps=$REPS; [ "$n" -ge 100000000 ] && reps=1
	$PSQL -c "CREATE TABLE IF NOT EXISTS $t AS SELECT random() * 1000 AS x FROM generate_series(1, $n);" \
		-c "VACUUM ANALYZE $t;" >/dev/null
	$PSQL -o /dev/null -c "SELECT sum(x) FROM $t"   # read the table into the caches
	# GS_BENCH_ALT_ONLY=1: straight to the alternating rows
	if [ "$ALT_ONLY" != 1 ]; then
		sum_s=$(timeq "$SER" $reps "SELECT sum(x) FROM $t")
		sum_p=$(timeq "$PAR" $reps "SELECT sum(x) FROM $t")
		row "sum(x) serial [floor]" "$n" "$sum_s" "-" "1.00x"
		row "sum(x) parallel $WORKERS workers [floor]" "$n" "$sum_p" "-" "1.00x"
		if [ "$n" -le "$BUILTIN_MAX" ]; then
			b1=$(timeq "$SER" $reps "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t")
			b101=$(timeq "$SER" $reps "SELECT percentile_disc($F101) WITHIN GROUP (ORDER BY x) FROM $t")
		else
			b1="skipped"; b101="skipped"
		fi
		row "built-in percentile_disc(0.5)" "$n" "$b1" "1.00x" "$(ratio "$b1" "$sum_s")"
		row "built-in percentile_disc(101)" "$n" "$b101" "1.00x" "$(ratio "$b101" "$sum_s")"
		for path in cpu gpu; do
			if [ $path = gpu ]; then DEV=$GPU; else DEV=$CPU; fi
			x=$(timeq "$DEV $SER" $reps "SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t")
			row "[$path] gpu_percentile_disc(0.5)" "$n" "$x" "$(ratio "$b1" "$x")" "$(ratio "$x" "$sum_s")"
			x=$(timeq "$DEV $SER" $reps "SELECT gpu_median(x) FROM $t")
			row "[$path] gpu_median" "$n" "$x" "$(ratio "$b1" "$x")" "$(ratio "$x" "$sum_s")"
			x=$(timeq "$DEV $SER" $reps "SELECT gpu_quantiles(x, $F101) FROM $t")
			row "[$path] gpu_quantiles(101) serial" "$n" "$x" "$(ratio "$b101" "$x")" "$(ratio "$x" "$sum_s")"
			x=$(timeq "$DEV $PAR" $reps "SELECT gpu_quantiles(x, $F101) FROM $t" 1)
			row "[$path] gpu_quantiles(101) parallel" "$n" "$x" "$(ratio "$b101" "$x")" "$(ratio "$x" "$sum_p") par"
			x=$(timeq "$DEV $SER SET gpuselect.approximate = on;" $reps "SELECT gpu_quantiles(x, $F101) FROM $t")
			bound=$($PSQL -At -c "$DEV $SER SET gpuselect.approximate = on; SELECT gpu_quantiles(x, $F101) FROM $t;
				SELECT value FROM gpuselect_status() WHERE name = 'last_rank_bound';" | tail -1)
			row "[$path] approximate quantiles(101) bound=$bound" "$n" "$x" "$(ratio "$b101" "$x")" "$(ratio "$x" "$sum_s")"
		done
	else
		b1=skipped; b101=skipped
	fi
	# parallel, alternating in one session: the floor, gpu_quantiles with the
	# keys in the leader's arena (the default; GS_BENCH_ARENA sets its size),
	# in a shared memory segment per worker state (no arena), and through the
	# tuple queue (GS_BENCH_REPS runs also at 100M rows: parallel runs are short)
	read -r a_sum a_ar a_pf a_shm a_q <<<"$(timeq_alt "$REPS" \
		"$PAR|SELECT sum(x) FROM $t" \
		"$GPU $PAR SET gpuselect.shared_partial_states = on;|SELECT gpu_quantiles(x, $F101) FROM $t" \
		"$GPU $PAR SET gpuselect.shared_partial_states = on; $PF_OFF|SELECT gpu_quantiles(x, $F101) FROM $t" \
		"$GPU $PAR SET gpuselect.parallel_arena_size = 0; SET gpuselect.shared_partial_states = on;|SELECT gpu_quantiles(x, $F101) FROM $t" \
		"$GPU $PAR SET gpuselect.shared_partial_states = off;|SELECT gpu_quantiles(x, $F101) FROM $t")"
	row "alternating: sum(x) parallel [floor]" "$n" "$a_sum" "-" "1.00x"
	row "alternating: [gpu] quantiles(101) parallel" "$n" "$a_ar" "$(ratio "$b101" "$a_ar")" "$(ratio "$a_ar" "$a_sum") par"
	row "alternating: same, prefetch off" "$n" "$a_pf" "$(ratio "$b101" "$a_pf")" "$(ratio "$a_pf" "$a_sum") par"
	row "alternating: same, segments, no arena" "$n" "$a_shm" "$(ratio "$b101" "$a_shm")" "$(ratio "$a_shm" "$a_sum") par"
	row "alternating: same, states via tuple queue" "$n" "$a_q" "$(ratio "$b101" "$a_q")" "$(ratio "$a_q" "$a_sum") par"
	# serial, alternating: the floor, the built-in (up to BUILTIN_MAX rows),
	# gpuselect's ordered-set form on the GPU
	if [ "$n" -le "$BUILTIN_MAX" ]; then
		read -r a_ssum a_sb a_sg a_spf a_sc <<<"$(timeq_alt "$reps" \
			"$SER|SELECT sum(x) FROM $t" \
			"$SER|SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t" \
			"$GPU $SER|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t" \
			"$GPU $SER $PF_OFF|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t" \
			"$CPU $SER|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t")"
	else
		a_sb=skipped		# without the built-in, GS_BENCH_REPS rounds fit at 100M too
		read -r a_ssum a_sg a_spf a_sc <<<"$(timeq_alt "$REPS" \
			"$SER|SELECT sum(x) FROM $t" \
			"$GPU $SER|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t" \
			"$GPU $SER $PF_OFF|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t" \
			"$CPU $SER|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM $t")"
	fi
	row "alternating: sum(x) serial [floor]" "$n" "$a_ssum" "-" "1.00x"
	row "alternating: built-in percentile_disc(0.5)" "$n" "$a_sb" "1.00x" "$(ratio "$a_sb" "$a_ssum")"
	row "alternating: [gpu] gpu_percentile_disc(0.5)" "$n" "$a_sg" "$(ratio "$a_sb" "$a_sg")" "$(ratio "$a_sg" "$a_ssum")"
	row "alternating: same, prefetch off" "$n" "$a_spf" "$(ratio "$a_sb" "$a_spf")" "$(ratio "$a_spf" "$a_ssum")"
	row "alternating: [cpu] gpu_percentile_disc(0.5)" "$n" "$a_sc" "$(ratio "$a_sb" "$a_sc")" "$(ratio "$a_sc" "$a_ssum")"
	[ "$n" -ge 100000000 ] && $PSQL -c "DROP TABLE $t;" >/dev/null
done

if [ "$EXTRAS" = 1 ]; then
# dashboard: 10M latencies, hourly timestamps over 30 days
$PSQL -c "CREATE TABLE IF NOT EXISTS bench_dash AS
	SELECT timestamp '2026-10-01' + (g % (30 * 24)) * interval '1 hour' + random() * interval '59 minutes' AS ts,
	       exp(random() * 6) AS latency_ms
	FROM generate_series(1, ${GS_BENCH_DASH_ROWS:-10000000}) g;" \
	-c "CREATE STATISTICS IF NOT EXISTS bench_dash_hour ON (date_trunc('hour', ts)) FROM bench_dash;" \
	-c "VACUUM ANALYZE bench_dash;" >/dev/null
# The statistics on the grouping expression are what a dashboard's owner would
# create: without them the planner takes every row for a group of its own (no
# statistics on date_trunc(ts)) and never aggregates partially in parallel
# workers; with them it plans Partial HashAggregate -> Gather -> Finalize for
# gpu_quantiles and sum, and lets workers scan and sort for the built-in.
q_b="SELECT date_trunc('hour', ts), percentile_disc(array[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY latency_ms) FROM bench_dash GROUP BY 1"
q_o="SELECT date_trunc('hour', ts), gpu_percentile_disc(array[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY latency_ms) FROM bench_dash GROUP BY 1"
q_p="SELECT date_trunc('hour', ts), gpu_quantiles(latency_ms, array[0.5, 0.9, 0.99]) FROM bench_dash GROUP BY 1"
q_s="SELECT date_trunc('hour', ts), sum(latency_ms) FROM bench_dash GROUP BY 1"
SETA="SET max_parallel_workers_per_gather = 0; SET gpuselect.device = auto; RESET gpuselect.gpu_min_rows;"
ds=$(timeq "$SETA" $REPS "$q_s")
db=$(timeq "$SETA" $REPS "$q_b")
do_=$(timeq "$SETA" $REPS "$q_o")
dp=$(timeq "$SETA" $REPS "$q_p")
SETP="SET max_parallel_workers_per_gather = $WORKERS; SET parallel_setup_cost = 0; SET min_parallel_table_scan_size = 0; SET gpuselect.device = auto; RESET gpuselect.gpu_min_rows;"
dsp=$(timeq "$SETP" $REPS "$q_s")
dbp=$(timeq "$SETP" $REPS "$q_b")
dpp=$(timeq "$SETP" $REPS "$q_p")
DR=${GS_BENCH_DASH_ROWS:-10000000}
row "dashboard sum per hour [floor]" "$DR" "$ds" "-" "1.00x"
row "dashboard built-in p50/p90/p99 per hour" "$DR" "$db" "1.00x" "$(ratio "$db" "$ds")"
row "dashboard gpu_percentile_disc per hour" "$DR" "$do_" "$(ratio "$db" "$do_")" "$(ratio "$do_" "$ds")"
row "dashboard gpu_quantiles per hour" "$DR" "$dp" "$(ratio "$db" "$dp")" "$(ratio "$dp" "$ds")"
row "dashboard sum per hour, parallel [floor]" "$DR" "$dsp" "-" "1.00x par"
row "dashboard built-in, parallel (workers sort)" "$DR" "$dbp" "$(ratio "$db" "$dbp")" "$(ratio "$dbp" "$dsp") par"
row "dashboard gpu_quantiles per hour, parallel" "$DR" "$dpp" "$(ratio "$db" "$dpp")" "$(ratio "$dpp" "$dsp") par"
row "  same vs the parallel built-in" "$DR" "$dpp" "$(ratio "$dbp" "$dpp")" "-"

# crossover for gpuselect.gpu_min_rows: same query, CPU vs GPU path, growing
# n, the two paths alternating in one session (7 runs each); both the
# ordered-set form and gpu_quantiles
$PSQL -c "CREATE TABLE IF NOT EXISTS bench_cross_4m AS SELECT random() * 1000 AS x FROM generate_series(1, 4000000);" \
	-c "VACUUM ANALYZE bench_cross_4m;" >/dev/null
$PSQL -o /dev/null -c "SELECT sum(x) FROM bench_cross_4m"
for k in ${GS_BENCH_CROSS_SIZES-10000 100000 300000 1000000 2000000 4000000}; do
	for form in "gpu_quantiles(101)|SELECT gpu_quantiles(x, $F101)" \
		"gpu_percentile_disc(0.5)|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x)"; do
		q="${form#*|} FROM (SELECT x FROM bench_cross_4m LIMIT $k) s"
		read -r c g <<<"$(timeq_alt 7 "$CPU $SER|$q" "$GPU $SER|$q")"
		row "crossover ${form%%|*}: cpu | gpu" "$k" "$c | $g" "$(ratio "$c" "$g")" "-"
	done
done
fi

{
	echo "# gpuselect end-to-end benchmark"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: ${GS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
	echo "- GPU: ${gpu_name:-none}; CPU: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
	echo "- server: $($PSQL -At -c 'SHOW server_version'), shared_buffers $($PSQL -At -c 'SHOW shared_buffers'), work_mem $($PSQL -At -c 'SHOW work_mem')"
	echo "- first GPU call in a new session (context creation, or the GPU service, included): ${first_call} ms; in a session that made one before: ${warm_call} ms (medians of 5 sessions each)"
	echo "- median of $REPS runs (1 at 100M rows); 'vs built-in' = built-in time / this time; 'vs floor' = this time / sum(x) time"
	echo
	echo '```'
	printf '%-44s %11s %10s %10s %10s\n' "query" "rows" "ms" "vs built-in" "vs floor"
	printf '%s\n' "${rows[@]}"
	echo '```'
} | tee "$OUT"
