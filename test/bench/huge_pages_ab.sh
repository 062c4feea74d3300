#!/bin/bash
# test/bench/huge_pages_ab.sh — gpuselect.huge_pages on against off, in one
# session, alternating: serial queries whose state holds every value
# (10M 16-byte texts under "C": the value store; 10M float8: key chunks),
# with the backend's minor page faults per query read from /proc (run it on
# the server's machine, as a user who may read /proc/<pid>/stat).
# Tables: gsb_text (types_bench.sh's shape) and dash_bench (dashboard_bench.sh),
# created here with GS_HP_ROWS rows when missing.  Prints one line per query
# and setting: the median ms and minor faults of GS_HP_ROUNDS rounds.
set -euo pipefail
ROWS=${GS_HP_ROWS:-10000000}
ROUNDS=${GS_HP_ROUNDS:-4}
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
"${PSQL[@]}" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS gpuselect"
if [ -z "$("${PSQL[@]}" -c "SELECT to_regclass('gsb_text')")" ]; then
	"${PSQL[@]}" -c "SELECT setseed(0.3)" \
		-c "CREATE TABLE gsb_text AS SELECT substr(md5(random()::text), 1, 16) AS x FROM generate_series(1, $ROWS)" \
		-c "VACUUM ANALYZE gsb_text" >/dev/null
fi
if [ -z "$("${PSQL[@]}" -c "SELECT to_regclass('dash_bench')")" ]; then
	"${PSQL[@]}" -c "CREATE TABLE dash_bench AS SELECT timestamp '2026-01-01' + random() * interval '30 days' AS ts, exp(random() * 3 + random() * random() * 4) AS latency FROM generate_series(1, $ROWS)" \
		-c "VACUUM ANALYZE dash_bench" >/dev/null
fi
echo "kernel: transparent_hugepage $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)"
QUERIES=(
	"text C|SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x COLLATE \"C\") FROM gsb_text"
	"float8|SELECT gpu_quantiles(latency, ARRAY[0.5, 0.9, 0.99]) FROM dash_bench"
)
{
	echo "SET jit = off; SET max_parallel_workers_per_gather = 0; SET work_mem = '1GB'; SET gpuselect.device = 'cpu';"
	echo "SELECT pg_backend_pid() AS pid \\gset"
	echo "\\setenv HP_PID :pid"
	for q in "${QUERIES[@]}"; do echo "${q#*|};"; done	# untimed warm-up
	for _ in $(seq "$ROUNDS"); do
		for q in "${QUERIES[@]}"; do
			for hp in on off; do
				echo "SET gpuselect.huge_pages = $hp;"
				echo "\\! echo \"@@ ${q%%|*} $hp|\$(awk '{print \$10}' /proc/\$HP_PID/stat)\""
				echo "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) ${q#*|};"
				echo "\\! echo \"@@ end|\$(awk '{print \$10}' /proc/\$HP_PID/stat)\""
			done
		done
	done
} >"${TMPDIR:-/tmp}/huge_pages_ab.sql"
"${PSQL[@]}" -f "${TMPDIR:-/tmp}/huge_pages_ab.sql" | awk -F'|' '
	/^@@ end/ { f[label] = f[label] " " ($2 - start); next }
	/^@@ / { label = substr($1, 4); start = $2; next }
	/Execution Time:/ { split($0, w, " "); t[label] = t[label] " " w[3] }
	function med(s,   a, n, i, j, x) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return a[int((n + 1) / 2)]
	}
	END { for (l in t) printf "| %s | %.1f ms | %d minor faults |   (ms:%s)\n", l, med(t[l]), med(f[l]), t[l] }' | sort
