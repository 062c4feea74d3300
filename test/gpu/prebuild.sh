#!/bin/bash
# test/gpu/prebuild.sh DIR — build the engine harness (test/gpu/gs_test.cu and
# gs_test_split.cu, with the CUDA engine and the CPU engine linked in) into
# DIR/gs_test.bin.
# nvcc is enough: no GPU is needed, so a device call can skip the build:
#   GS_PREBUILT=DIR test/gpu/run.sh ...   (carry DIR with the call)
# test/gpu/run.sh calls it too when nothing was prebuilt.  The engines'
# sources come from kernels/engines.mk.
set -eu
cd "$(dirname "$0")/../.."
dir=${1:?usage: prebuild.sh DIR}
mkdir -p "$dir"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
# the Hopper the device machines have unless told (CUDA_ARCH="..." for
# others; every architecture costs minutes here: test/gpu/arch_limits.sh)
export CUDA_ARCH=${CUDA_ARCH-90}
eval "$(make -s --no-print-directory -f kernels/engines.mk engine-vars)"
FLAGS="-O3 -std=c++17 $GS_CUDA_ARCH -Xcompiler -Wall $GS_ENGINE_INCLUDES"
objs=()
for c in $GS_CPU_ENGINE_SRCS; do
	o="$dir/cpu-$(basename "${c%.c}").o"
	gcc -O2 -std=gnu11 $GS_ENGINE_INCLUDES -c "$c" -o "$o"
	objs+=("$o")
done
pids=()
for cu in $GS_CUDA_ENGINE_SRCS test/gpu/gs_test.cu test/gpu/gs_test_split.cu; do
	o="$dir/$(basename "${cu%.cu}").o"
	extra=(-Xcompiler -fPIC -Werror all-warnings)
	case $cu in test/gpu/*) extra=(-DGS_HAVE_CPU_ENGINE) ;; esac
	$NVCC $FLAGS -lineinfo "${extra[@]}" -c "$cu" -o "$o" &
	pids+=($!)
	objs+=("$o")
done
for p in "${pids[@]}"; do wait "$p"; done
$NVCC $FLAGS "${objs[@]}" -o "$dir/gs_test.bin"
echo "$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- kernels test/gpu 2>/dev/null || echo '+changes') $(date -u +%FT%TZ)" > "$dir/built-from"
cat "$dir/built-from"
