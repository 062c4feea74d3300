#!/bin/bash
# test/gpu/run.sh — build the CUDA engine + harness, run the correctness
# checks, compute-sanitizer (memcheck, racecheck) on small sizes, and the
# benchmark.  Usage: test/gpu/run.sh [check|sanitize|bench|all] (default all)
# Logs and the benchmark table go to $OUT (or test/gpu/out).
set -u
cd "$(dirname "$0")/../.."
OUTD=${OUT:-test/gpu/out}
mkdir -p "$OUTD"
what=${1:-all}
NVCC=${NVCC:-nvcc}
ARCH="-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"
FLAGS="-O3 -std=c++17 $ARCH -Xcompiler -Wall -Ikernels -Isrc"
EXTRA=""
if [ -f src/cpu_select.c ]; then
	gcc -O2 -std=gnu11 -Ikernels -Isrc -c src/cpu_select.c -o test/gpu/cpu_select.o || exit 1
	EXTRA="-DGS_HAVE_CPU_ENGINE test/gpu/cpu_select.o"
	echo "linking the CPU engine (src/cpu_select.c)"
fi
set -e
$NVCC $FLAGS -Xcompiler -fPIC -Werror all-warnings -c kernels/gs_gpu.cu -o test/gpu/gs_gpu.o
$NVCC $FLAGS -lineinfo test/gpu/gs_test.cu test/gpu/gs_gpu.o $EXTRA -o test/gpu/gs_test.bin
set +e
rc=0
if [ "$what" = all ] || [ "$what" = check ]; then
	./test/gpu/gs_test.bin check 2>&1 | tee "$OUTD/check.log" | grep -v "^size " ; rc=$((rc | ${PIPESTATUS[0]}))
fi
if [ "$what" = all ] || [ "$what" = sanitize ]; then
	CS=${CS:-compute-sanitizer}
	command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
	for tool in memcheck racecheck; do
		tiny=""; [ $tool = racecheck ] && tiny=1	# racecheck is much slower: n <= 9000
		GS_TINY=$tiny timeout 200 $CS --tool $tool --error-exitcode 9 ./test/gpu/gs_test.bin check small > "$OUTD/sanitize-$tool.log" 2>&1
		r=$?; rc=$((rc | r))
		echo "compute-sanitizer $tool: exit $r; $(grep -E 'ERROR SUMMARY|passed,' "$OUTD/sanitize-$tool.log" | tr '\n' ' ')"
	done
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
	./test/gpu/gs_test.bin bench "$OUTD/bench.md" > "$OUTD/bench.log" 2>&1; rc=$((rc | $?))
	echo "commit $(git rev-parse --short HEAD 2>/dev/null) date $(date -u +%F)"; cat "$OUTD/bench.log"
fi
if [ "$what" = prof ]; then
	if command -v nsys >/dev/null; then
		nsys profile -o "$OUTD/prof" --force-overwrite true --stats=false ./test/gpu/gs_test.bin prof > "$OUTD/prof.log" 2>&1
		nsys stats --report cuda_gpu_kern_sum --format csv "$OUTD/prof.nsys-rep" > "$OUTD/kern.csv" 2>/dev/null
		rm -f "$OUTD"/prof.sqlite
		cut -c1-160 "$OUTD/kern.csv" | head -40
	else
		./test/gpu/gs_test.bin prof
	fi
fi
exit $rc
