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
obj=test/bench/cpu_select.bench.o
$CC -O2 -std=gnu11 -Wall -Wextra -Ikernels -Isrc -c src/cpu_select.c -o "$obj"
$CXX -O2 -std=c++17 -Wall -Wextra -Ikernels -Isrc -o "$bin" test/bench/engine_bench.cpp "$obj"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc)"
echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet -- src/cpu_select.c 2>/dev/null || echo ' (src/cpu_select.c modified)')"
echo "flags:   $CC -O2 / $CXX -O2"
echo
"./$bin" "$@"
