# gpuselect — PGXS build.  `make` builds with CUDA when nvcc is found and
# without it otherwise; `make USE_CUDA=0` forces the CPU-only build.
# CUDA objects go into SHLIB_LINK, not OBJS: Debian's PGXS compiles every
# OBJS entry to LLVM bitcode as well, which nvcc output cannot do.

EXTENSION = gpuselect
MODULE_big = gpuselect
DATA = $(wildcard extension/gpuselect--*.sql)
# README.md and docs/*.md go to $(docdir)/extension/gpuselect/ (rules below),
# not through PGXS's DOCS, which installs files flat: every extension's
# README.md would be one file there, and README's links into docs/ break
GS_DOCS = README.md $(wildcard docs/*.md)

OBJS = \
	src/gpuselect.o \
	src/status.o \
	src/base/guc.o \
	src/base/types.o \
	src/base/engine_call.o \
	src/service/service_shmem.o \
	src/service/service_pool.o \
	src/service/service_pool_queue.o \
	src/service/service_pool_held.o \
	src/service/service_main.o \
	src/service/service_lanes.o \
	src/service/service_devices.o \
	src/service/service_prefetch.o \
	src/service/service_slot.o \
	src/service/service_pages.o \
	src/state/state.o \
	src/state/state_serial.o \
	src/state/shared_state.o \
	src/state/shared_fileset.o \
	src/state/arena.o \
	src/state/shm_budget.o \
	src/state/datum_state.o \
	src/state/datum_numkey.o \
	src/state/datum_spill.o \
	src/state/spill.o \
	src/state/service_scan.o \
	src/state/ostree.o \
	src/state/datum_frame.o \
	src/select/dispatch.o \
	src/select/datum_select.o \
	src/select/datum_textkey.o \
	src/select/datum_spill_select.o \
	src/select/service_client.o \
	src/aggs/fn_cache.o \
	src/aggs/ranks.o \
	src/aggs/final.o \
	src/aggs/ordered_set.o \
	src/aggs/plain_aggs.o \
	src/aggs/moving_aggs.o \
	src/aggs/final_batch.o \
	src/aggs/datum_final.o \
	src/aggs/citus_exchange.o \
	src/aggs/citus_rounds.o \
	src/aggs/citus_exchange_grouped.o \
	src/aggs/citus_keys.o \
	src/aggs/citus_shard_round.o \
	src/aggs/citus_shard_groups.o \
	src/scan/bulk_scan.o \
	src/scan/bulk_groups.o \
	src/scan/bulk_ship.o \
	src/scan/bulk_shard_scan.o \
	src/scan/bulk_group_range.o \
	src/scan/bulk_shard_groups.o \
	src/scan/shard_spool.o \
	src/planner/planner.o \
	src/planner/planner_aggs.o \
	src/planner/planner_fraction.o \
	src/planner/planner_merge.o \
	src/planner/planner_groups.o \
	src/planner/planner_citus.o \
	src/planner/planner_bulk_scan.o \
	src/planner/planner_bulk_scan_shape.o \
	src/planner/planner_bulk_scan_plan.o

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=. --load-extension=gpuselect

# the selection engines (kernels/): sources, include paths, CUDA arch
include kernels/engines.mk
OBJS += $(GS_CPU_ENGINE_SRCS:.c=.o)

PG_CONFIG ?= pg_config
PG_CPPFLAGS += $(GS_ENGINE_INCLUDES) -I$(srcdir)/src
# the module's version for PG_MODULE_MAGIC_EXT (PostgreSQL 18; src/base/pg_compat.h)
GS_EXTVERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" $(dir $(firstword $(MAKEFILE_LIST)))gpuselect.control)
PG_CPPFLAGS += -DGS_EXTVERSION='"$(GS_EXTVERSION)"'
PG_CFLAGS += -std=gnu11
# the GPU service's lane threads (src/service/service_lanes.c)
SHLIB_LINK += -pthread

# ---- optional CUDA ----
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
ifeq ($(origin USE_CUDA),undefined)
USE_CUDA := $(if $(NVCC),1,0)
endif

CUDA_OBJS = $(GS_CUDA_ENGINE_SRCS:.cu=.o)

ifeq ($(USE_CUDA),1)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
# (CUDA_ARCH, CUDA_PTX: the GPUs built for, kernels/engines.mk)
# --threads 0: one thread per CPU for a file's architectures (twelve by
# default: the all-architecture build took 4.6 min on a 2-core VM with it)
NVCCFLAGS ?= -O3 -std=c++17 $(GS_CUDA_ARCH) --threads 0 -Xcompiler -fPIC -Xcompiler -Wall -Werror all-warnings $(GS_ENGINE_INCLUDES)
PG_CPPFLAGS += -DGS_HAVE_CUDA
OBJS += src/service/service_cuda.o
# static cudart: the module loads on machines with no CUDA runtime or driver
SHLIB_LINK += $(CUDA_OBJS) -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib \
	-lcudart_static -lstdc++ -lrt -lpthread -ldl
else
OBJS += src/service/service_cuda_none.o
endif

# sql/cpu_only.sql expects a CPU-only build (gpuselect.device = 'gpu' is an
# ERROR there), so CUDA builds do not run it.
ifeq ($(USE_CUDA),1)
REGRESS := $(filter-out cpu_only,$(REGRESS))
endif

EXTRA_CLEAN = $(CUDA_OBJS) test/unit/*.bin test/gpu/*.bin test/bench/*.bin

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# the documentation, laid out as in the source tree (README.md, docs/*.md)
GS_DOCDIR = $(DESTDIR)$(docdir)/extension/gpuselect
.PHONY: install-gs-docs uninstall-gs-docs
install: install-gs-docs
uninstall: uninstall-gs-docs
install-gs-docs:
	$(MKDIR_P) '$(GS_DOCDIR)/docs'
	$(INSTALL_DATA) $(srcdir)/README.md '$(GS_DOCDIR)/'
	$(INSTALL_DATA) $(addprefix $(srcdir)/, $(filter docs/%,$(GS_DOCS))) '$(GS_DOCDIR)/docs/'
uninstall-gs-docs:
	rm -f $(addprefix '$(GS_DOCDIR)'/, $(GS_DOCS))
	-rmdir '$(GS_DOCDIR)/docs' '$(GS_DOCDIR)'

# PGXS tracks no header dependencies (only with --enable-depend), so a
# changed header rebuilds every object: an object compiled against an older
# layout of a shared-memory struct would crash the GPU service
GS_HEADERS = $(wildcard src/*.h src/*/*.h kernels/*.h kernels/cpu/*.h)
$(OBJS) $(patsubst %.o,%.bc,$(OBJS)): $(GS_HEADERS)

ifeq ($(USE_CUDA),1)
$(shlib): $(CUDA_OBJS)

kernels/cuda/%.o: kernels/cuda/%.cu $(GS_CUDA_ENGINE_HDRS)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@
endif

# ---- unit tests of the CPU engine (no server needed) ----
UNIT_CFLAGS = -O2 -g -std=gnu11 -Wall -Wextra -Werror $(GS_ENGINE_INCLUDES)
test/unit/%.bin: test/unit/%.c test/unit/unit.h $(GS_CPU_ENGINE_SRCS) $(GS_CPU_ENGINE_HDRS)
	$(CC) $(UNIT_CFLAGS) -pthread -o $@ $< $(GS_CPU_ENGINE_SRCS) -lm

# the GPU service's choice of the next job: a plain-C header, nothing else
test/unit/test_service_order.bin: test/unit/test_service_order.c test/unit/unit.h src/service/service_order.h
	$(CC) $(UNIT_CFLAGS) -Isrc -o $@ $<

# the GPU service's lane threads with the CPU engine: no PostgreSQL in them either
test/unit/test_service_lanes.bin: test/unit/test_service_lanes.c test/unit/unit.h src/service/service_lanes.c src/service/service_lanes.h \
		src/service/service_cuda.h src/service/service_cuda_none.c $(GS_CPU_ENGINE_SRCS) $(GS_CPU_ENGINE_HDRS)
	$(CC) $(UNIT_CFLAGS) -Isrc -pthread -o $@ $< src/service/service_lanes.c src/service/service_cuda_none.c \
		$(GS_CPU_ENGINE_SRCS) -lm

# the Citus exchange's reader of an int8[]'s text: a plain-C header
test/unit/test_int8_text.bin: test/unit/test_int8_text.c test/unit/unit.h src/aggs/int8_text.h
	$(CC) $(UNIT_CFLAGS) -Isrc -o $@ $<

# the order-statistic tree of the window aggregates: PostgreSQL's allocator
# replaced by malloc (test/unit/pgshim); also with 8-entry nodes (deep trees)
test/unit/test_ostree.bin: test/unit/test_ostree.c test/unit/unit.h src/state/ostree.c src/state/ostree.h
	$(CC) $(UNIT_CFLAGS) -Itest/unit/pgshim -Isrc -o $@ $< src/state/ostree.c
test/unit/test_ostree_fan8.bin: test/unit/test_ostree.c test/unit/unit.h src/state/ostree.c src/state/ostree.h
	$(CC) $(UNIT_CFLAGS) -DGS_OSTREE_FAN=8 -Itest/unit/pgshim -Isrc -o $@ $< src/state/ostree.c

.PHONY: unit
unit: $(patsubst test/unit/%.c,test/unit/%.bin,$(wildcard test/unit/test_*.c)) test/unit/test_ostree_fan8.bin
	@set -e; for t in $^; do echo "== $$t"; ./$$t; done

# ---- PGXN source distribution: make dist -> dist/gpuselect-<version>.zip ----
# The version is META.json's (test/check_meta.pl checks it against
# CHANGELOG.md and debian/changelog first).  Packed with git archive from
# HEAD, so only committed files go in; left out are what builds and tests of
# the extension never read: test/bench (benchmarks and their recorded
# results, a quarter of the tree), test/gpu (the harness for GPU hosts) and
# .ci (this repository's CI entry point).
GS_DIST_EXCLUDE = ':(exclude)test/bench' ':(exclude)test/gpu' ':(exclude).ci'

.PHONY: dist
dist:
	perl $(srcdir)/test/check_meta.pl $(srcdir)
	@test -z "$$(git -C $(srcdir) status --porcelain --untracked-files=no)" || \
		echo "make dist: uncommitted changes are not in the archive (it packs HEAD)"
	@v=$$(perl -MJSON::PP -e 'local $$/; print decode_json(<>)->{version}' $(srcdir)/META.json) && \
	mkdir -p dist && \
	git -C $(srcdir) archive --format=zip --prefix=gpuselect-$$v/ HEAD -- . $(GS_DIST_EXCLUDE) \
		>dist/gpuselect-$$v.zip && \
	echo "dist/gpuselect-$$v.zip"
