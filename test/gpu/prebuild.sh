#!/bin/bash
# test/gpu/prebuild.sh DIR — build the engine harness here (nvcc, no GPU
# needed) into DIR, so that a device call can skip the build:
#   GS_PREBUILT=DIR test/gpu/run.sh ...   (carry DIR with the call)
# The binary links cudart statically and the CPU engine, like run.sh's build.
set -eu
cd "$(dirname "$0")/../.."
dir=${1:?usage: prebuild.sh DIR}
mkdir -p "$dir"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
ARCH="-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"
FLAGS="-O3 -std=c++17 $ARCH -Xcompiler -Wall -Ikernels -Isrc"
gcc -O2 -std=gnu11 -Ikernels -Isrc -c src/cpu_select.c -o "$dir/cpu_select.o"
$NVCC $FLAGS -lineinfo -Xcompiler -fPIC -Werror all-warnings -c kernels/gs_gpu.cu -o "$dir/gs_gpu.o" &
$NVCC $FLAGS -lineinfo -DGS_HAVE_CPU_ENGINE -c test/gpu/gs_test.cu -o "$dir/gs_test.o" &
wait %1 && wait %2
$NVCC $FLAGS "$dir/gs_test.o" "$dir/gs_gpu.o" "$dir/cpu_select.o" -o "$dir/gs_test.bin"
echo "$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- kernels test/gpu src/cpu_select.c 2>/dev/null || echo '+changes') $(date -u +%FT%TZ)" > "$dir/built-from"
cat "$dir/built-from"
