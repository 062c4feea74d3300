# kernels/engines.mk — what the selection engines are built from, in one place.
#
# Included by the top-level Makefile (the PostgreSQL module) and read by the
# scripts that build the engines without PostgreSQL (test/gpu/run.sh,
# test/gpu/prebuild.sh, test/bench/engine_bench.sh, the unit-test rule):
#
#   eval "$(make -s --no-print-directory -f kernels/engines.mk engine-vars)"
#
# sets GS_CPU_ENGINE_SRCS, GS_CUDA_ENGINE_SRCS, GS_ENGINE_INCLUDES and
# GS_CUDA_ARCH in a shell.  Paths are relative to the repository root.
# Needs no pg_config and no nvcc.

# the plain-C CPU engine (no PostgreSQL, no CUDA): kernels/cpu/
GS_CPU_ENGINE_SRCS := $(sort $(wildcard kernels/cpu/*.c))
GS_CPU_ENGINE_HDRS := $(wildcard kernels/*.h kernels/cpu/*.h)

# the CUDA engine: kernels/cuda/ (host drivers .cu, device passes .cuh)
GS_CUDA_ENGINE_SRCS := $(sort $(wildcard kernels/cuda/*.cu))
GS_CUDA_ENGINE_HDRS := $(wildcard kernels/*.h kernels/cuda/*.h kernels/cuda/*.cuh)

# include paths: the contract (kernels/) and each engine's own folder
GS_ENGINE_INCLUDES := -Ikernels -Ikernels/cpu -Ikernels/cuda

# Hopper (sm_90) machine code plus PTX for later GPUs
GS_CUDA_ARCH := -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90

# only when run on its own (make -f kernels/engines.mk), so that the module's
# Makefile keeps its own default goal
ifeq ($(firstword $(MAKEFILE_LIST)),kernels/engines.mk)
.PHONY: engine-vars
engine-vars:
	@echo "GS_CPU_ENGINE_SRCS='$(GS_CPU_ENGINE_SRCS)'"
	@echo "GS_CUDA_ENGINE_SRCS='$(GS_CUDA_ENGINE_SRCS)'"
	@echo "GS_ENGINE_INCLUDES='$(GS_ENGINE_INCLUDES)'"
	@echo "GS_CUDA_ARCH='$(GS_CUDA_ARCH)'"
endif
