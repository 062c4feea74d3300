#!/bin/bash
# test/gpu/pg_path_profile.sh — where the time of one GPU-path query goes.
# For each aggregate and path, runs the query GS_PROF_REPS times in one
# session with gpuselect.debug = on and prints psql's wall time next to the
# final call's own copy_ms / select_ms (from the debug NOTICE), so the
# transition (scan) cost and the final-call cost can be told apart.
# Needs PG* set and gpuselect installed; table size GS_PROF_ROWS (10M).
set -u
N=${GS_PROF_ROWS:-10000000}
REPS=${GS_PROF_REPS:-5}
PSQL="psql -X -q -v ON_ERROR_STOP=1"
F101="'{$(seq -s, 0 100 | sed 's/\([0-9]*\)/\1e-2/g')}'::float8[]"
$PSQL -c "CREATE EXTENSION IF NOT EXISTS gpuselect;" \
	-c "CREATE TABLE IF NOT EXISTS prof_$N AS SELECT random() * 1000 AS x FROM generate_series(1, $N);" \
	-c "VACUUM ANALYZE prof_$N;" >/dev/null
for q in "sum(x)" "gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x)" "gpu_median(x)" "gpu_quantiles(x, $F101)"; do
	for dev in cpu gpu cpu gpu; do
		out=$( { echo "SET max_parallel_workers_per_gather = 0; SET gpuselect.gpu_min_rows = 0; SET gpuselect.device = $dev;"
			echo "SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY g) FROM generate_series(1, 10) g;"
			echo "SET gpuselect.debug = on;"; echo '\timing on'
			for _ in $(seq "$REPS"); do echo "SELECT $q FROM prof_$N;"; done; } | $PSQL -o /dev/null 2>&1)
		ms=$(echo "$out" | awk '/^Time:/ {printf "%s ", $2}')
		fin=$(echo "$out" | sed -n 's/.*copy_ms=\([0-9.]*\) select_ms=\([0-9.]*\).*/\1+\2/p' | tr '\n' ' ')
		printf '%-8s %-4s wall ms: %-48s final copy+select ms: %s\n' "${q:0:8}" "$dev" "$ms" "$fin"
	done
done
