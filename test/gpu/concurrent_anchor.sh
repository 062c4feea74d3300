#!/bin/bash
# test/gpu/concurrent_anchor.sh — one query, GS_CA_CONC (4) copies: each
# alone, then all at once; the wall time against the sum of the alone times.
# The executor's own anchor for hostile_load.sh's "four at once" (issue
# 29): run with the server's settings and the same table, e.g.
#   GS_CA_QUERY="SELECT sum(x) FROM gs_hl" test/gpu/concurrent_anchor.sh
# GS_CA_SET: statements run first in every session (e.g. SET ...;).
set -u -o pipefail
q=${GS_CA_QUERY:?GS_CA_QUERY: the query}
conc=${GS_CA_CONC:-4}
work=$(mktemp -d /tmp/gs-ca.XXXXXX)
trap 'rm -rf "$work"' EXIT
now_ms() { date +%s%3N; }
run() { psql -X -q -At -v ON_ERROR_STOP=1 -c "${GS_CA_SET:-} $q" >/dev/null; }
sum=0
for i in $(seq "$conc"); do
	t0=$(now_ms); run; t1=$(now_ms)
	sum=$((sum + t1 - t0))
done
t0=$(now_ms)
for i in $(seq "$conc"); do
	( s=$(now_ms); run; echo $(( $(now_ms) - s )) >"$work/c$i" ) &
done
wait
wall=$(( $(now_ms) - t0 ))
slowest=$(cat "$work"/c* | sort -n | tail -1)
echo "| $q | ${GS_CA_SET:-} | alone (sum) $sum ms | at once (wall) $wall ms | slowest $slowest ms | wall / sum $(awk -v a="$wall" -v b="$sum" 'BEGIN { printf "%.2f", a / b }') |"
