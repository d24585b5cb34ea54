# Lookout: `make run` serves the demo on port 3001, `make test` runs the tests.
# Both install the Debian packages they need first (with sudo only when not root).

SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := libmicrohttpd-dev libsqlite3-dev sqlite3 curl python3 python3-venv postgresql strace
FORMAT_PATHS := Package.swift Sources Tests Fuzz/Package.swift Fuzz/Sources

.PHONY: deps build run test crash-test browser-deps browser-test container-test lint format fuzz fuzz-build \
	python-tools schemathesis example-client

deps:
	@command -v $(SWIFT) >/dev/null || { echo "Swift 6.3 is required: https://www.swift.org/install/linux/"; exit 1; }
	@missing=""; \
	for package in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -qx 'install ok installed' || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --reinstall $$missing; \
	fi

build: deps
	$(SWIFT) build -c release --product lookout

run: build
	.build/release/lookout

# C dependencies (BoringSSL's scrypt above all) are compiled optimized even in the test
# build: at -O0 a login costs ~0.7 s and parallel logins slow each other badly.
TEST_BUILD_FLAGS := -Xcc -O2

# At most TEST_WIDTH tests run at once. Swift Testing starts every test at once by
# default, and a test's time limit and its sockets' timeouts count from its start: with two
# CPU-bound processes beside it on this 2-core machine, the suite took 186-218 s and 9 and
# 44 tests ran past their limits (2026-11-29, stop 41); with 4 at once it passed in 177 s,
# and in 70 s unloaded instead of 59.
TEST_WIDTH ?= 4

# Tests that need PostgreSQL start their own server (initdb in a temporary directory, on
# 127.0.0.1 at a free port, stopped at the end); as root it runs as nobody via setpriv.
test: deps browser-deps python-tools
	$(SWIFT) build --build-tests $(TEST_BUILD_FLAGS)
	$(SWIFT) test --skip-build $(TEST_BUILD_FLAGS) --experimental-maximum-parallelization-width $(TEST_WIDTH)
	bash Tests/readme-examples.sh
	bash Tests/schemathesis/run.sh
	bash Tests/crash/crash-test.sh
	bash Tests/browser/browser-test.sh

# The Python tools the OpenAPI tests use (openapi-spec-validator, schemathesis), pinned in
# Tests/openapi/requirements.txt, in a virtual environment of their own: .build-py/.
PYTHON_TOOLS := .build-py/installed
python-tools: deps $(PYTHON_TOOLS)

$(PYTHON_TOOLS): Tests/openapi/requirements.txt
	python3 -m venv .build-py
	.build-py/bin/pip install --quiet --disable-pip-version-check -r Tests/openapi/requirements.txt
	touch $@

# Schemathesis against the debug server, driven by its /openapi.json (see README).
schemathesis: deps python-tools
	$(SWIFT) build --product lookout $(TEST_BUILD_FLAGS)
	bash Tests/schemathesis/run.sh

# The Swift client generated from the committed demo document by swift-openapi-generator's
# build plugin (examples/swift-client), built in its own build directory, then run against
# the debug server: it logs in and lists a collection.
example-client: deps
	$(SWIFT) build --package-path examples/swift-client --scratch-path .build-client
	$(SWIFT) build --product lookout $(TEST_BUILD_FLAGS)
	bash examples/swift-client/run.sh

# Coverage-guided fuzzing (libFuzzer) of every parser of client bytes, for a bounded time,
# from the corpus in Tests/FuzzCorpus and Tests/FuzzRegressions; fails on a crash, a
# violated property or a unit slower than FUZZ_SLOW seconds, and prints the reproducer
# (Fuzz/run.sh). Swift targets are FuzzTarget's cases, all in one executable built from
# Fuzz/ with -sanitize=fuzzer,address into its own build directory. A C target NAME is
# Fuzz/NAME.c defining LLVMFuzzerTestOneInput, built with the toolchain's clang with the
# C files in FUZZ_C_SOURCES_NAME (see "Fuzzing" in README.md).
#
# The slow-unit bound separates linear from quadratic parsing, not fast from slow: the
# slowest linear unit, a merge patch of a 1 MiB body with 96,000 keys (the template
# {"k0":1,"k1":1,...}), takes 7-9 s in this sanitizer build on a busy 2-core machine,
# where a quadratic parser of that body took 48 s in a release build (issue 16), hundreds
# here. A 5 s bound failed CI on the linear unit under load.
FUZZ_SECONDS ?= 25
FUZZ_TIMEOUT ?= 30
FUZZ_SLOW ?= 15
FUZZ_JOBS ?= 2
FUZZ_BUILD := .build-fuzz
FUZZ_SWIFT_TARGETS := json query cursor entity-tag token form merge-patch data-file
FUZZ_C_TARGETS := frame server
FUZZ_C_SOURCES_frame := Sources/CMicroHTTPD/lk_frame.c Sources/CMicroHTTPD/lk_head.c
FUZZ_C_SOURCES_server := $(wildcard Sources/CMicroHTTPD/*.c)
FUZZ_TARGETS ?= $(FUZZ_SWIFT_TARGETS) $(FUZZ_C_TARGETS)
FUZZ_CC ?= clang
FUZZ_CFLAGS ?= -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-ISources/CMicroHTTPD/include -ISources/CMicroHTTPD
FUZZ_SWIFT_BINARY = $(FUZZ_BUILD)/release/lookout-fuzz

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_TIMEOUT=$(FUZZ_TIMEOUT) FUZZ_SLOW=$(FUZZ_SLOW) FUZZ_JOBS=$(FUZZ_JOBS) \
		bash Fuzz/run.sh \
		$(foreach t,$(filter $(FUZZ_SWIFT_TARGETS),$(FUZZ_TARGETS)),$(t)=$(FUZZ_SWIFT_BINARY)) \
		$(foreach t,$(filter $(FUZZ_C_TARGETS),$(FUZZ_TARGETS)),$(t)=$(FUZZ_BUILD)/c/$(t))

fuzz-build: deps $(addprefix $(FUZZ_BUILD)/c/,$(FUZZ_C_TARGETS))
	$(SWIFT) build --package-path Fuzz --scratch-path $(FUZZ_BUILD) -c release -Xswiftc -sanitize=fuzzer,address

$(FUZZ_BUILD)/c/%: Fuzz/%.c $(wildcard Sources/CMicroHTTPD/*.[ch] Sources/CMicroHTTPD/include/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_C_SOURCES_$*) -lmicrohttpd -o $@

# kill -9 the debug server 20 times while it takes writes; check nothing acknowledged is lost.
crash-test: deps
	$(SWIFT) build --product lookout $(TEST_BUILD_FLAGS)
	bash Tests/crash/crash-test.sh

# The example page (examples/browser) in headless Chromium against the debug server: a
# write reaches its EventSource and long-poll views, another origin is refused. Debian's
# chromium, and a Japanese font for the demo's titles in the screenshot it saves
# (.build/browser-test/browser-test.png); the driver needs only Python's standard library.
BROWSER_APT_PACKAGES := chromium fonts-ipafont-gothic

browser-deps:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BROWSER_APT_PACKAGES)"

browser-test: deps browser-deps
	$(SWIFT) build --product lookout $(TEST_BUILD_FLAGS)
	bash Tests/browser/browser-test.sh

# Builds Docker/Dockerfile with podman (base images made locally, nothing pulled), runs the
# image as a user would and checks it; cleans up after itself. Installs podman if missing.
container-test:
	bash Docker/smoke-test.sh

lint:
	$(SWIFT) format lint --strict --recursive $(FORMAT_PATHS)

format:
	$(SWIFT) format --in-place --recursive $(FORMAT_PATHS)
