#!/bin/bash
# test/gpu/topk_run.sh CCCL_DIR [LOG2_N] — build and run test/gpu/topk_bench.cu
# on the GPU machine: CUB's DeviceTopK (from CCCL_DIR, a newer CCCL's source
# tree with cub/, thrust/ and libcudacxx/: fetch it for the run, never commit
# it) beside the engine, CUB's radix sort and a read pass.  The engine's
# objects are built with the toolkit's own CCCL, as the module builds them.
set -eu
cd "$(dirname "$0")/../.."
cccl=${1:?usage: topk_run.sh CCCL_DIR [LOG2_N]}
dir=${GS_TOPK_BUILD:-test/gpu/build-topk}
mkdir -p "$dir"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export CUDA_ARCH=${CUDA_ARCH-90}	# the Hopper it runs on, unless told
eval "$(make -s --no-print-directory -f kernels/engines.mk engine-vars)"
FLAGS="-O3 -std=c++17 $GS_CUDA_ARCH $GS_ENGINE_INCLUDES"
objs=()
pids=()
for cu in $GS_CUDA_ENGINE_SRCS; do
	o="$dir/$(basename "${cu%.cu}").o"
	$NVCC $FLAGS -c "$cu" -o "$o" &
	pids+=($!)
	objs+=("$o")
done
$NVCC $FLAGS -I"$cccl/cub" -I"$cccl/thrust" -I"$cccl/libcudacxx/include" \
	-c test/gpu/topk_bench.cu -o "$dir/topk_bench.o" &
pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done
$NVCC $FLAGS "$dir/topk_bench.o" "${objs[@]}" -o "$dir/topk_bench.bin"
"$dir/topk_bench.bin" "${2:-28}"
