#!/bin/bash
# test/gpu/ab_engine.sh BEFORE AFTER [ROUNDS] — one device call that checks
# the AFTER harness (gs_test check) and times two prebuilt harnesses
# (test/gpu/prebuild.sh DIR, carried) against each other: bench tables
# alternately AFTER, BEFORE, ... so that both see the same instance.  The
# 2^28 rows of each table are printed last; full tables go to $OUT.
set -u
cd "$(dirname "$0")/../.."
before=${1:?usage: ab_engine.sh BEFORE AFTER [ROUNDS]} after=${2:?} rounds=${3:-2}
OUTD=${OUT:-test/gpu/out}
mkdir -p "$OUTD"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,memory.used --format=csv,noheader
echo "before: $(cat "$before/built-from")  after: $(cat "$after/built-from")"
t0=$SECONDS
timeout "${GS_T_CHECK:-300}" "$after/gs_test.bin" check > "$OUTD/check.log" 2>&1
echo "check (after): rc=$? $((SECONDS - t0)) s: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUTD/check.log" | tail -1)"
grep '^FAIL' "$OUTD/check.log" | head -10
for r in $(seq 1 "$rounds"); do
	for v in after before; do
		d=$after; [ $v = before ] && d=$before
		t0=$SECONDS
		timeout "${GS_T_BENCH:-150}" "$d/gs_test.bin" bench "$OUTD/bench-$v-$r.md" > /dev/null 2>&1
		echo "bench $v round $r: rc=$? $((SECONDS - t0)) s"
	done
done
echo "2^28 rows (type n dist read-pass CUB-sort 1rank 101 1001 approx ...):"
for f in "$OUTD"/bench-*.md; do
	grep -E '\| 2\^28 \|' "$f" | sed "s|^|$(basename "$f" .md) |" | cut -c1-150
done
