#!/bin/bash
# test/gpu/device_engine.sh — the CUDA engine's checks and figures in ONE
# device call: correctness harness, benchmark table, per-kernel profile (ncu),
# compute-sanitizer on small sizes.  Everything is logged; the logs come back
# as $OUT/engine-logs.tgz, the benchmark table as $OUT/bench.md, and a short
# summary is printed last.
#   test/gpu/device_engine.sh [STAGES]     STAGES: any of "check bench prof sanitize sweep"
#   (default "check bench prof"; "sanitize" needs a device call of its own:
#   racecheck alone took ~360 s on the H100 in the sixth session)
# Each stage has a time limit (GS_T_<STAGE> seconds) so the whole call ends
# inside the device tool's 10-minute limit.  GS_PREBUILT=DIR uses a harness
# built beforehand by test/gpu/prebuild.sh DIR (carry DIR).
set -u
cd "$(dirname "$0")/../.."
STAGES=${1:-"check bench prof"}
OUTD=${OUT:-test/gpu/out}
mkdir -p "$OUTD"
L=$(mktemp -d)
summary=()
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,memory.used --format=csv | tee "$L/gpu.txt"
echo "tree: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo '+changes')  date: $(date -u +%FT%TZ)" | tee "$L/tree.txt"
declare -A LIMIT=([check]=${GS_T_CHECK:-300} [bench]=${GS_T_BENCH:-150} [prof]=${GS_T_PROF:-170} [sanitize]=${GS_T_SANITIZE:-540} [sweep]=${GS_T_SWEEP:-90})
for s in $STAGES; do
	t0=$SECONDS
	OUT=$L timeout "${LIMIT[$s]}" test/gpu/run.sh "$s" > "$L/$s.out" 2>&1
	rc=$?
	case $s in
	check) res=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$L/$s.out" | tail -1); grep '^FAIL' "$L/$s.out" | head -20 ;;
	sanitize) res=$(grep 'compute-sanitizer' "$L/$s.out" | tr '\n' ' ') ;;
	*) res="" ;;
	esac
	summary+=("$(printf '%-9s rc=%-3s %4ss  %s' "$s" "$rc" "$((SECONDS - t0))" "$res")")
done
[ -f "$L/bench.md" ] && cp "$L/bench.md" "$OUTD/bench.md"
tar czf "$OUTD/engine-logs.tgz" -C "$L" . 2>/dev/null
echo
for s in $STAGES; do
	case $s in
	bench) echo "== bench"; grep -E '^\|' "$L/bench.out" ;;
	sweep) echo "== sweep (one rank, ms)"; grep -E '^\||sweep:' "$L/sweep.out" ;;
	prof) echo "== prof (us per call)"; grep -vE '^(using|linking)' "$L/prof.out" ;;
	esac
done
echo "== summary"
printf '%s\n' "${summary[@]}"
