# sentinel front door. `make demo` and `make test` are the two commands (README.md).
# Everything is built by CMake into build/ (build-asan/ for the sanitizer suite).
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
BUILD      ?= build
BUILD_ASAN ?= build-asan
CMAKE_ARGS ?=
CTEST_ARGS ?=
PREFIX     ?= /usr/local

.PHONY: all deps configure build test test-flipped test-asan bench demo install clean help

all: build

help:
	@echo "make deps       install missing Debian packages (as root) or print the apt-get line"
	@echo "make            configure and build into $(BUILD)/"
	@echo "make test       build and run the whole ctest suite"
	@echo "make test-flipped  the numerics-labelled tests again with the OpenBLAS/ATen"
	@echo "                variables flipped (scripts/test_flipped.sh)"
	@echo "make test-asan  the same suite under AddressSanitizer + UBSan ($(BUILD_ASAN)/)"
	@echo "make bench      build and run every benchmark in bench/"
	@echo "make demo       the whole pipeline on the built-in default"
	@echo "make install    the runtime detector library, header, pkg-config file into PREFIX"
	@echo "                ($(PREFIX); docs/export.md)"

deps:
	@scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	@scripts/deps.sh
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

test-flipped: build
	@scripts/test_flipped.sh $(BUILD) $(CTEST_ARGS)

$(BUILD_ASAN)/CMakeCache.txt:
	@scripts/deps.sh
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DSENTINEL_SANITIZE=address,undefined $(CMAKE_ARGS)

test-asan: $(BUILD_ASAN)/CMakeCache.txt
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -LE noasan $(CTEST_ARGS)

bench: build
	@scripts/bench.sh $(BUILD)

demo: build
	@scripts/demo.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
