# kernels/engines.mk — what the selection engines are built from, in one place.
#
# Included by the top-level Makefile (the PostgreSQL module) and read by the
# scripts that build the engines without PostgreSQL (test/gpu/run.sh,
# test/gpu/prebuild.sh, test/bench/engine_bench.sh, the unit-test rule):
#
#   eval "$(make -s --no-print-directory -f kernels/engines.mk engine-vars)"
#
# sets GS_CPU_ENGINE_SRCS, GS_CUDA_ENGINE_SRCS, GS_ENGINE_INCLUDES,
# GS_CUDA_ARCH (nvcc's -gencode flags) and GS_CUDA_ARCHS_ALL in a shell.  Paths are relative to the repository root.
# Needs no pg_config and no nvcc.

# the plain-C CPU engine (no PostgreSQL, no CUDA): kernels/cpu/
GS_CPU_ENGINE_SRCS := $(sort $(wildcard kernels/cpu/*.c))
GS_CPU_ENGINE_HDRS := $(wildcard kernels/*.h kernels/cpu/*.h)

# the CUDA engine: kernels/cuda/ (host drivers .cu, device passes .cuh)
GS_CUDA_ENGINE_SRCS := $(sort $(wildcard kernels/cuda/*.cu))
GS_CUDA_ENGINE_HDRS := $(wildcard kernels/*.h kernels/cuda/*.h kernels/cuda/*.cuh)

# include paths: the contract (kernels/) and each engine's own folder
GS_ENGINE_INCLUDES := -Ikernels -Ikernels/cpu -Ikernels/cuda

# The GPUs the CUDA build runs on: machine code (SASS) for every
# architecture nvcc 13 builds, sm_75 (T4) to the newest (`nvcc
# --list-gpu-code`), plus PTX of the last one listed, which the driver
# compiles for GPUs that come after.  The engine plans its launch sizes and
# shared memory from the device's own limits at run time
# (kernels/cuda/gs_cuda_device.cu), so one build serves them all.
#   CUDA_ARCH="80 90"          narrows it (ascending; PTX of the last one)
#   CUDA_PTX=80                PTX of another architecture; CUDA_PTX= none
#   CUDA_ARCH= CUDA_PTX=80     PTX only (test/gpu/arch_limits.sh's JIT run)
# The make variables are read from the environment too, so the scripts
# that build through engine-vars follow them.  docs/building.md has the
# list of cards and the build times.
GS_CUDA_ARCHS_ALL := 75 80 86 87 88 89 90 100 103 110 120 121
CUDA_ARCH ?= $(GS_CUDA_ARCHS_ALL)
CUDA_PTX ?= $(lastword $(CUDA_ARCH))
GS_COMMA := ,
GS_CUDA_ARCH := $(foreach a,$(CUDA_ARCH),-gencode=arch=compute_$(a)$(GS_COMMA)code=sm_$(a)) \
	$(if $(strip $(CUDA_PTX)),-gencode=arch=compute_$(strip $(CUDA_PTX))$(GS_COMMA)code=compute_$(strip $(CUDA_PTX)))
ifeq ($(strip $(GS_CUDA_ARCH)),)
$(error CUDA_ARCH and CUDA_PTX are both empty: no GPU code would be built)
endif

# only when run on its own (make -f kernels/engines.mk), so that the module's
# Makefile keeps its own default goal
ifeq ($(firstword $(MAKEFILE_LIST)),kernels/engines.mk)
.PHONY: engine-vars
engine-vars:
	@echo "GS_CPU_ENGINE_SRCS='$(GS_CPU_ENGINE_SRCS)'"
	@echo "GS_CUDA_ENGINE_SRCS='$(GS_CUDA_ENGINE_SRCS)'"
	@echo "GS_ENGINE_INCLUDES='$(GS_ENGINE_INCLUDES)'"
	@echo "GS_CUDA_ARCH='$(strip $(GS_CUDA_ARCH))'"
	@echo "GS_CUDA_ARCHS_ALL='$(GS_CUDA_ARCHS_ALL)'"
endif
