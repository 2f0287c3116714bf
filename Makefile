# Developer entry points. `make test` is what CI runs (see .ci/run).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
SERVER_STAMP := $(VENV)/.installed-server
# Packages go in with uv (a resolver and installer several times faster than pip's on a warm
# cache: the quick start's install takes seconds, README "Quick start"). uv itself is the one
# package pip installs, into .venv, so nothing outside the checkout is touched.
UV     := $(BIN)/uv
INSTALL := $(UV) pip install --python $(BIN)/python

.PHONY: setup setup-server compiled clean-compiled test lint serve system-deps clean

## setup: create .venv (if absent) and install the project with the server and the test and
## lint tools (what `make test` and `make lint` need)
setup: $(STAMP)

$(STAMP): pyproject.toml $(UV)
	@echo "[setup] installing the project with the server and the test and lint tools into $(VENV)"
	@$(INSTALL) -q -e '.[dev]'
	@touch $(STAMP) $(SERVER_STAMP)
	@echo "[setup] done"

## setup-server: create .venv (if absent) and install the project with the server only (what
## `make serve` needs)
setup-server: $(SERVER_STAMP)

$(SERVER_STAMP): pyproject.toml $(UV)
	@echo "[setup-server] installing the project with the server only (no test tools) into $(VENV)"
	@$(INSTALL) -e '.[server]' 2>&1 | grep -E '^(Resolved|Prepared|Installed|Uninstalled|error|  ×)' || true
	@$(BIN)/python -c 'import truco_server.app.embedded' || { echo "[setup-server] install failed" >&2; exit 1; }
	@touch $(SERVER_STAMP)

# The virtualenv with uv in it (the one package installed with pip). The venv is made without
# its own copy of pip (seconds saved) and the interpreter's pip installs uv into it; where that
# pip is too old for --python, the venv gets its own pip instead. A uv already on PATH is used as is.
BOOT_PIP := install --disable-pip-version-check --progress-bar off -q uv
$(UV):
	@echo "[venv] creating $(VENV) with $(PYTHON) and installing uv into it"
	@test -x $(BIN)/python || $(PYTHON) -m venv --without-pip $(VENV)
	@if command -v uv >/dev/null 2>&1; then ln -sf "$$(command -v uv)" $(UV); \
	else $(PYTHON) -m pip --python $(BIN)/python $(BOOT_PIP) 2>/dev/null \
		|| { $(BIN)/python -m ensurepip >/dev/null && $(BIN)/python -m pip $(BOOT_PIP); }; fi

## compiled: compile the move path with mypyc, in place (an extension module beside each
## compiled source, which Python imports in its place: setup.py, docs/engine.md "Compiled
## build"); rebuilt when setup.py or a compiled source changes. Needs a C compiler and Python's
## headers (system-deps). The extensions are touched once built: `truco serve` and the tests
## refuse to start on one older than its source.
COMPILED_SOURCES := $(shell $(PYTHON) setup.py --compiled-sources 2>/dev/null)
COMPILED_STAMP := build/.compiled-move-path
COMPILED_TREES := truco_engine truco_match contract/truco_contract server/truco_server

compiled: $(COMPILED_STAMP)

$(COMPILED_STAMP): setup.py $(COMPILED_SOURCES) $(STAMP)
	@echo "[compiled] compiling the move path with mypyc ($(words $(COMPILED_SOURCES)) modules, a minute or two; log: build/compiled.log)"
	@mkdir -p build
	@TRUCO_MYPYC=move-path $(BIN)/python setup.py build_ext --inplace > build/compiled.log 2>&1 \
		|| { tail -n 20 build/compiled.log >&2; echo "[compiled] failed (the whole log: build/compiled.log)" >&2; exit 1; }
	@find $(COMPILED_TREES) -name '*.so' -exec touch {} +
	@touch $@
	@echo "[compiled] $$($(BIN)/python -c 'from truco_server.core.build import describe; print(describe())')"

## clean-compiled: remove the compiled modules (the checkout runs its source again)
clean-compiled:
	find $(COMPILED_TREES) -name '*.so' -delete
	rm -f *__mypyc.*.so $(COMPILED_STAMP)

## system-deps: make sure redis-server (integration tests start their own), openssl (a test
## certificate for Redis over TLS), chromium (the reference page's browser test), node/npm (its
## driver, the TypeScript example), jemalloc (the container image's allocator, tested) and a C
## compiler with Python's headers (the compiled build) are installed; installs them with apt as
## root
system-deps:
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v openssl >/dev/null 2>&1 || missing="$$missing openssl"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	[ -n "$$(ldconfig -p 2>/dev/null | grep libjemalloc.so.2)" ] || missing="$$missing libjemalloc2"; \
	command -v cc >/dev/null 2>&1 || missing="$$missing gcc libc6-dev"; \
	$(PYTHON) -c 'import os, sysconfig, sys; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
		|| missing="$$missing python3-dev"; \
	if [ -z "$$missing" ]; then \
		true; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing with apt-get:$$missing"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	else \
		echo "ERROR: missing system packages:$$missing (and this is not root with apt)." >&2; \
		echo "Install them (Debian/Ubuntu: sudo apt-get install -y$$missing), then re-run." >&2; \
		exit 1; \
	fi

## test: the full test suite on the compiled build (starts its own redis-server on a free
## loopback port)
test: setup system-deps compiled
	TRUCO_TEST_BUILD=compiled $(BIN)/python -m pytest -q

## lint: ruff (checks and formatting), mypy (strict on the engine, the match and the contract), the
## import contracts (between the packages and between the server's layers), generated code
## fresh and buf STANDARD lint
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy truco_engine truco_match
	$(BIN)/mypy --strict contract/truco_contract
	$(BIN)/mypy server/truco_server
	$(BIN)/mypy clients
	$(BIN)/mypy cli tools
	$(BIN)/lint-imports
	scripts/check_proto.sh

## serve: run the server (embedded in-memory store unless REDIS_URL is set)
serve: setup-server
	@if [ -e $(COMPILED_STAMP) ]; then $(MAKE) --no-print-directory compiled; fi
	@echo "[serve] starting the server (Ctrl-C stops it)"
	@$(BIN)/truco serve

clean: clean-compiled
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
