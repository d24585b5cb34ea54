# Lookout: `make run` serves the demo on port 3001, `make test` runs the tests.
# Both install the Debian packages they need first (with sudo only when not root).

SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := libmicrohttpd-dev libsqlite3-dev sqlite3 curl python3 postgresql
FORMAT_PATHS := Package.swift Sources Tests

.PHONY: deps build run test crash-test container-test lint format

deps:
	@command -v $(SWIFT) >/dev/null || { echo "Swift 6.3 is required: https://www.swift.org/install/linux/"; exit 1; }
	@missing=""; \
	for package in $(APT_PACKAGES); do \
		dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build -c release --product lookout

run: build
	.build/release/lookout

# C dependencies (BoringSSL's scrypt above all) are compiled optimized even in the test
# build: at -O0 a login costs ~0.7 s and parallel logins slow each other badly.
TEST_BUILD_FLAGS := -Xcc -O2

# Tests that need PostgreSQL start their own server (initdb in a temporary directory, on
# 127.0.0.1 at a free port, stopped at the end); as root it runs as nobody via setpriv.
test: deps
	$(SWIFT) build --build-tests $(TEST_BUILD_FLAGS)
	$(SWIFT) test --skip-build $(TEST_BUILD_FLAGS)
	bash Tests/readme-examples.sh
	bash Tests/crash/crash-test.sh

# kill -9 the debug server 20 times while it takes writes; check nothing acknowledged is lost.
crash-test: deps
	$(SWIFT) build --product lookout $(TEST_BUILD_FLAGS)
	bash Tests/crash/crash-test.sh

# Builds Docker/Dockerfile with podman (base images made locally, nothing pulled), runs the
# image as a user would and checks it; cleans up after itself. Installs podman if missing.
container-test:
	bash Docker/smoke-test.sh

lint:
	$(SWIFT) format lint --strict --recursive $(FORMAT_PATHS)

format:
	$(SWIFT) format --in-place --recursive $(FORMAT_PATHS)
