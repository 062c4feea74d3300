#!/bin/bash
# test/gpu/ncu_detail.sh — Nsight Compute detail (throughput, stalls,
# occupancy, instruction mix) of the level-1 kernels at 2^28 f32 uniform,
# plus their SASS, for finding out what bounds a pass.  Writes to $OUT (or
# test/gpu/out); prints the headline metrics of each kernel.
# Needs test/gpu/gs_test.bin (test/gpu/run.sh builds it; or GS_PREBUILT).
set -u
cd "$(dirname "$0")/../.."
OUTD=${OUT:-test/gpu/out}
mkdir -p "$OUTD"
[ -n "${GS_PREBUILT:-}" ] && cp "$GS_PREBUILT/gs_test.bin" test/gpu/gs_test.bin
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
SECT="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section Occupancy --section InstructionStats --section LaunchStats"
# kind: 0 one rank, 1 101 ranks, 3 approximate; kernel; which launch (0 = level 1)
# GS_DETAIL_SPECS="kind:kernel ..." and GS_DETAIL_KB (4 or 8) pick others
# GS_DETAIL_SOURCE=1 adds per-instruction source counters: shared-memory
# wavefronts per opcode and stall reasons (test/gpu/shared_wavefronts.py)
for spec in ${GS_DETAIL_SPECS:-0:k_count_focus 1:k_count 1:k_filter 3:k_count}; do
	set -- ${spec/:/ }
	src=()
	[ -n "${GS_DETAIL_SOURCE:-}" ] && src=(--section SourceCounters --import-source yes -o "$OUTD/rep-$1-$2")
	GS_PROF_REPS=1 GS_PROF_ONLY=${GS_DETAIL_KB:-4}:$1 timeout 120 "$NCU" --clock-control none $SECT "${src[@]}" \
		--kernel-name "$2" --launch-count 1 ./test/gpu/gs_test.bin prof > "$OUTD/detail-$1-$2.txt" 2>&1
	if [ -n "${GS_DETAIL_SOURCE:-}" ]; then
		"$NCU" -i "$OUTD/rep-$1-$2.ncu-rep" --page details > "$OUTD/detail-$1-$2.txt" 2>&1
		"$NCU" -i "$OUTD/rep-$1-$2.ncu-rep" --page source --csv --print-source sass > "$OUTD/sass-$1-$2.csv" 2>&1
		rm -f "$OUTD/rep-$1-$2.ncu-rep"
	fi
	echo "=== kind $1 $2"
	grep -E "^ +(Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc Active|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Warp Cycles Per Issued Instruction|Block Limit [A-Za-z ]+|L1/TEX Hit Rate|Mem Busy|Max Bandwidth|Shared Memory Configuration Size|Dynamic Shared Memory Per Block|Executed Instructions) " \
		"$OUTD/detail-$1-$2.txt" | sed 's/  */ /g'
	grep -iE "stall|bank" "$OUTD/detail-$1-$2.txt" | grep -vE "^ *-" | sed 's/  */ /g' | head -8
	[ -n "${GS_DETAIL_SOURCE:-}" ] && python3 test/gpu/shared_wavefronts.py "$OUTD/sass-$1-$2.csv"
done
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
"$CUOBJ" -sass test/gpu/gs_test.bin > "$OUTD/sass.txt" 2>/dev/null
python3 - "$OUTD/sass.txt" <<'PY'
import re, sys
txt = open(sys.argv[1]).read()
for fn in re.split(r"\n\s*Function : ", txt)[1:]:
    name = fn.split("\n", 1)[0].strip()
    if not re.search(r"k_count|k_filter", name):
        continue
    ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", fn)
    kinds = {}
    for o in ops:
        k = o.split(".")[0]
        kinds[k] = kinds.get(k, 0) + 1
    top = sorted(kinds.items(), key=lambda kv: -kv[1])[:14]
    print(f"SASS {name[:60]}: {len(ops)} instr; " + " ".join(f"{k}:{v}" for k, v in top))
PY
