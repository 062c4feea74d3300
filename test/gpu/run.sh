#!/bin/bash
# test/gpu/run.sh — build the CUDA engine + harness, run the correctness
# checks, compute-sanitizer (memcheck, racecheck) on small sizes, and the
# benchmark.  Usage: test/gpu/run.sh [check|sanitize|bench|sweep|crossover|prof|all] (default all)
# Logs and the benchmark table go to $OUT (or test/gpu/out).
set -u
cd "$(dirname "$0")/../.."
OUTD=${OUT:-test/gpu/out}
mkdir -p "$OUTD"
what=${1:-all}
NVCC=${NVCC:-nvcc}
# the engines' sources, include paths and arch: kernels/engines.mk; the
# Hopper this runs on unless told (every architecture costs device time)
export CUDA_ARCH=${CUDA_ARCH-90}
eval "$(make -s --no-print-directory -f kernels/engines.mk engine-vars)"
FLAGS="-O3 -std=c++17 $GS_CUDA_ARCH -Xcompiler -Wall $GS_ENGINE_INCLUDES"
set -e
if [ -n "${GS_PREBUILT:-}" ] && [ -x "$GS_PREBUILT/gs_test.bin" ]; then
	# built beforehand from this same tree (test/gpu/prebuild.sh), to save
	# device time; the commit it was built from is in the file's name list
	cp "$GS_PREBUILT/gs_test.bin" test/gpu/gs_test.bin
	echo "using the prebuilt harness in $GS_PREBUILT ($(cat "$GS_PREBUILT/built-from" 2>/dev/null))"
else
	test/gpu/prebuild.sh test/gpu/build >/dev/null
	cp test/gpu/build/gs_test.bin test/gpu/gs_test.bin
fi
set +e
rc=0
if [ "$what" = all ] || [ "$what" = check ]; then
	./test/gpu/gs_test.bin check 2>&1 | tee "$OUTD/check.log" | grep -v "^size " ; rc=$((rc | ${PIPESTATUS[0]}))
fi
if [ "$what" = all ] || [ "$what" = sanitize ]; then
	CS=${CS:-compute-sanitizer}
	command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
	for tool in memcheck racecheck; do
		# racecheck is much slower: only the "race" cases (n = 9000 and 100000,
		# f32/f64, three distributions), which run every kernel with real work
		sel=small; [ $tool = racecheck ] && sel=race
		timeout ${GS_T_TOOL:-480} $CS --tool $tool --error-exitcode 9 ./test/gpu/gs_test.bin check $sel > "$OUTD/sanitize-$tool.log" 2>&1
		r=$?; rc=$((rc | r))
		echo "compute-sanitizer $tool: exit $r; $(grep -E 'ERROR SUMMARY|passed,' "$OUTD/sanitize-$tool.log" | tr '\n' ' ')"
	done
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
	./test/gpu/gs_test.bin bench "$OUTD/bench.md" > "$OUTD/bench.log" 2>&1; rc=$((rc | $?))
	echo "commit $(git rev-parse --short HEAD 2>/dev/null) date $(date -u +%F)"; cat "$OUTD/bench.log"
fi
if [ "$what" = sweep ]; then
	# one rank at 2^28 under several single-rank finishing-sort thresholds
	./test/gpu/gs_test.bin sweep; rc=$((rc | $?))
fi
if [ "$what" = crossover ]; then
	# exact selection against the whole-input sort by key width, n, ranks
	./test/gpu/gs_test.bin crossover "$OUTD/crossover.md"; rc=$((rc | $?))
fi
if [ "$what" = prof ]; then
	# per-kernel device time of each kind of call (2^28 uniform; kinds: 0 one
	# rank, 1 101 ranks, 2 1001 ranks, 3 approx 101 ranks / 1024 buckets),
	# from Nsight Compute with the clocks left as found
	NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
	reps=${GS_PROF_REPS:-3}
	# GS_PROF_KINDS="8:0 4:1" limits it to those kb:kind pairs
	for kb in 4 8; do
		for kind in 0 1 2 3; do
			case " ${GS_PROF_KINDS:-$kb:$kind} " in *" $kb:$kind "*) ;; *) continue ;; esac
			if [ -n "$NCU" ]; then
				GS_PROF_REPS=$reps GS_PROF_ONLY=$kb:$kind timeout 240 "$NCU" --clock-control none \
					--metrics gpu__time_duration.sum --csv --log-file "$OUTD/ncu-$kb-$kind.csv" \
					./test/gpu/gs_test.bin prof > "$OUTD/prof-$kb-$kind.log" 2>&1
				python3 test/gpu/ncu_summary.py "f$((kb * 8)) kind$kind" "$reps" "$OUTD/ncu-$kb-$kind.csv"
			else
				GS_PROF_REPS=$reps GS_PROF_ONLY=$kb:$kind ./test/gpu/gs_test.bin prof
			fi
		done
	done
fi
exit $rc
