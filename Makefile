# Entry points: `make demo`, `make test`, `make bench`, `make report`, `make docs`. Each installs missing dependencies,
# configures (once) and builds incrementally into build/ (build-<sanitizer>/ with SANITIZE=).
#
#   make test                  all tests, both engines
#   make test SANITIZE=address threads-engine tests under ASan+UBSan
#   make test SANITIZE=thread  threads-engine tests under TSan
#   make docs                  the API reference (Doxygen) in build/docs/html; fails on warnings
#   make report                the benchmark set in quick mode (REPORT_FULL=1: full), plotted
#                              into report/index.html

SANITIZE ?=
BUILD_TYPE ?= Release
ifeq ($(SANITIZE),)
BUILD_DIR ?= build
CONFIG_FLAGS :=
TEST_FLAGS :=
else
BUILD_DIR ?= build-$(SANITIZE)
BUILD_TYPE := RelWithDebInfo
# MPI libraries are not sanitizer-clean: sanitized builds test the threads engine. -O1 -g1
# (line tables, enough for the sanitizers' stack traces) compiles the tests in half the time
# of -O2 -g: the heaviest test took 176 s instead of 370 s under ASan here.
CONFIG_FLAGS := '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG' \
  -DCAIRN_SANITIZE=$(SANITIZE) -DCAIRN_WITH_MPI=OFF -DCAIRN_BUILD_BENCH=OFF -DCAIRN_BUILD_EXAMPLES=OFF \
  -DCAIRN_BUILD_PYTHON=OFF
TEST_FLAGS := -L threads
endif
JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: all deps configure build test demo bench report docs clean

all: build

deps:
	@bash scripts/install-deps

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCAIRN_WERROR=ON $(CONFIG_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(TEST_FLAGS) $(CTEST_ARGS)

demo: build
	@bash scripts/demo $(BUILD_DIR)

bench: build
	@bash scripts/bench $(BUILD_DIR)

report: build
	@bash scripts/report $(BUILD_DIR)

docs: configure
	cmake --build $(BUILD_DIR) --target docs

clean:
	rm -rf build build-address build-thread
