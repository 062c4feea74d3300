#!/bin/bash
# test/gpu/arch_limits.sh — the CUDA build for every architecture, checked
# on the one kind of GPU there is (issue 32 item 3).  On a GPU machine:
#
#   test/gpu/arch_limits.sh [all|build|run]      (default all)
#
# build: the engine harness (test/gpu/gs_test.cu + both engines) twice, into
#   test/gpu/build/arch-all (SASS for every architecture of kernels/engines.mk
#   plus PTX of the newest: what `make` builds) and test/gpu/build/arch-ptx80
#   (compute_80 PTX only); records the build time and the size of each
#   binary's GPU code (its .nv_fatbin section).
# run: the harness's correctness checks (`gs_test.bin check`: every answer
#   against a sort of the same input, approximate picks against the CPU
#   engine) five times on the same inputs (one GS_SEED):
#     default   the device's own limits
#     sm_75     planned with a T4's limits (GS_DEVICE_LIMITS=sm_75: 64 KB of
#               shared memory per block and per SM, 1024 threads per SM):
#               k_sample's small layout, splitters of 8-byte keys in global
#               memory at 8192 buckets (docs/building.md has the table)
#     sm_86     planned with an A10's limits (GS_DEVICE_LIMITS=sm_86: 99 KB
#               of shared memory per block, 100 KB and 1536 threads per SM)
#     sm_80     planned with an A100's (163 KB per block)
#     ptx80-jit the compute_80 PTX build, JIT-compiled (CUDA_FORCE_PTX_JIT=1)
#   Each run checks every answer against the same reference, so clean runs
#   are identical sets of answers; the script also compares the runs' pass
#   counts (every run's, sm_75's too).  Prints a table; logs under
#   $OUT/arch_limits.
#
# Knobs: GS_ARCH_CHECK=small (n <= 100000; default: the full check),
# GS_ARCH_RUNS="default sm_75 sm_86 sm_80 ptx80-jit" (add sm_89 to see an
# L4's limits), GS_SEED (default fixed), NVCC, GS_ARCH_ALL_LIST (the "all"
# build's CUDA_ARCH; default every architecture of kernels/engines.mk).
# build and run may be separate calls (the binaries stay under
# test/gpu/build, which run reuses).
set -u
cd "$(dirname "$0")/../.."
what=${1:-all}
OUTD=${OUT:-test/gpu/out}/arch_limits
B=test/gpu/build
mkdir -p "$OUTD" "$B"
export GS_SEED=${GS_SEED:-20261127}
check=${GS_ARCH_CHECK:-}
runs=${GS_ARCH_RUNS:-default sm_75 sm_86 sm_80 ptx80-jit}
summary=$OUTD/summary.md
rc=0

# bytes of GPU code in a binary: its .nv_fatbin section (all architectures)
fatbin_bytes() {
	local h
	h=$(objdump -h "$1" 2>/dev/null | awk '$2 == ".nv_fatbin" { print $3 }')
	[ -n "$h" ] && echo $((16#$h))
}

# seconds from $1 to $2 (date +%s.%N), rounded
secs() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'
}

# build LABEL [make variables for kernels/engines.mk]: the harness into $B/arch-LABEL
build_one() {
	local label=$1
	shift
	local dir=$B/arch-$label t0 t1
	rm -rf "$dir"
	t0=$(date +%s.%N)
	# (a CUDA_ARCH or CUDA_PTX of the caller's environment does not apply)
	if ! env -u CUDA_ARCH -u CUDA_PTX "$@" test/gpu/prebuild.sh "$dir" > "$OUTD/build-$label.log" 2>&1; then
		echo "| build $label | FAILED: see build-$label.log | | |" >> "$summary"
		rc=1
		return
	fi
	t1=$(date +%s.%N)
	printf '| build %s | %s s | %s bytes | %s |\n' "$label" "$(secs "$t0" "$t1")" \
		"$(fatbin_bytes "$dir/gs_test.bin")" "$(stat -c %s "$dir/gs_test.bin") bytes binary" >> "$summary"
	cuobjdump --list-elf "$dir/gs_test.bin" 2>/dev/null | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/' | sort | uniq -c \
		> "$OUTD/elf-$label.txt"
	cuobjdump --list-ptx "$dir/gs_test.bin" 2>/dev/null | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/' | sort | uniq -c \
		> "$OUTD/ptx-$label.txt"
}

# run LABEL: one check of the harness; a row of the table
run_one() {
	local label=$1 bin=$B/arch-all/gs_test.bin t0 t1 line res
	local -a env=()

	case $label in
		default) ;;
		ptx80-jit)
			bin=$B/arch-ptx80/gs_test.bin
			env=(CUDA_FORCE_PTX_JIT=1 CUDA_CACHE_MAXSIZE=4294967296) ;;
		sm_*) env=(GS_DEVICE_LIMITS=$label) ;;
		*) echo "unknown run $label"; rc=1; return ;;
	esac
	if [ ! -x "$bin" ]; then
		echo "| $label | no $bin (run the build first) | | | |" >> "$summary"
		rc=1
		return
	fi
	t0=$(date +%s.%N)
	env "${env[@]}" "$bin" check $check > "$OUTD/check-$label.log" 2>&1
	local r=$?
	t1=$(date +%s.%N)
	line=$(grep -m1 '^device ' "$OUTD/check-$label.log" | cut -c1-160)
	res=$(tail -n 1 "$OUTD/check-$label.log")
	printf '| %s | %s | exit %d | %s | %s s |\n' "$label" "$res" "$r" "$line" "$(secs "$t0" "$t1")" >> "$summary"
	echo "$res" > "$OUTD/result-$label.txt"
	# the layouts the engine chose under those limits (gs_cuda_test_plan)
	echo "- $label: $(grep -m1 '^plan: ' "$OUTD/check-$label.log" | cut -c7-)" >> "$OUTD/plans.txt"
	[ $r -eq 0 ] || rc=1
}

: > "$summary"
echo "arch_limits: commit $(git rev-parse --short HEAD 2>/dev/null) $(date -u +%FT%TZ) seed $GS_SEED check ${check:-full}" >> "$summary"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$summary" 2>/dev/null
echo "nvcc: $(${NVCC:-nvcc} --version 2>/dev/null | tail -1)" >> "$summary"
if [ "$what" = all ] || [ "$what" = build ]; then
	echo "| build | time | GPU code (.nv_fatbin) | binary |" >> "$summary"
	echo "|---|---:|---:|---:|" >> "$summary"
	# every architecture of kernels/engines.mk (prebuild.sh alone builds
	# for the Hopper only)
	eval "$(env -u CUDA_ARCH -u CUDA_PTX make -s --no-print-directory -f kernels/engines.mk engine-vars)"
	build_one all "CUDA_ARCH=${GS_ARCH_ALL_LIST:-$GS_CUDA_ARCHS_ALL}"
	build_one ptx80 CUDA_ARCH= CUDA_PTX=80
fi
if [ "$what" = all ] || [ "$what" = run ]; then
	rm -f "$OUTD"/result-*.txt "$OUTD/plans.txt"
	echo "| run | harness result | exit | limits the engine planned with | time |" >> "$summary"
	echo "|---|---|---|---|---:|" >> "$summary"
	for r in $runs; do
		run_one "$r"
	done
	# the same inputs, every answer checked against the same reference:
	# the runs must agree on the count of checks as well
	counts=$(cat "$OUTD"/result-*.txt 2>/dev/null | sort -u | wc -l)
	if [ "$counts" -gt 1 ]; then
		echo "runs differ in their results:" >> "$summary"
		for f in "$OUTD"/result-*.txt; do
			echo "- $(basename "$f" .txt | cut -c8-): $(cat "$f")" >> "$summary"
		done
		rc=1
	fi
	echo "identical answers: $([ $rc -eq 0 ] && echo yes || echo NO)" >> "$summary"
	echo "layouts planned:" >> "$summary"
	cat "$OUTD/plans.txt" >> "$summary" 2>/dev/null
fi
cat "$summary"
exit $rc
