#!/bin/sh
# engine_bench.sh — benchmark the CPU selection engine against std::nth_element.
#   test/bench/engine_bench.sh [n] [reps]       (default 10000000 keys, 7 runs)
# Compiles with -O2 (no server needed) and prints a markdown table preceded by
# the machine, date and commit, ready to paste into test/bench/results/.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
CC=${CC:-gcc}
CXX=${CXX:-g++}
bin=test/bench/engine_bench.bin
# the CPU engine's sources and include paths: kernels/engines.mk
eval "$(make -s --no-print-directory -f kernels/engines.mk engine-vars)"
objs=
for c in $GS_CPU_ENGINE_SRCS; do
	o=test/bench/$(basename "${c%.c}").bench.o
	$CC -O2 -std=gnu11 -Wall -Wextra $GS_ENGINE_INCLUDES -c "$c" -o "$o"
	objs="$objs $o"
done
$CXX -O2 -std=c++17 -Wall -Wextra $GS_ENGINE_INCLUDES -o "$bin" test/bench/engine_bench.cpp $objs -pthread
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc)"
echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet -- kernels/cpu kernels/*.h 2>/dev/null || echo ' (CPU engine modified)')"
echo "flags:   $CC -O2 / $CXX -O2"
echo
"./$bin" "$@"
