# Developer entry points. `make test` is what CI runs (see .ci/run).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup test lint serve redis-server clean

## setup: create .venv (if absent) and install the project with its dev extras
setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e '.[dev]'
	touch $(STAMP)

## redis-server: make sure the binary is installed (the tests start their own server)
redis-server:
	@if command -v redis-server >/dev/null 2>&1; then \
		true; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "redis-server missing: installing it with apt-get"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server; \
	else \
		echo "ERROR: redis-server is not installed and this is not root." >&2; \
		echo "Install it (Debian/Ubuntu: sudo apt-get install -y redis-server), then re-run." >&2; \
		exit 1; \
	fi

## test: the full test suite (starts its own redis-server on a free loopback port)
test: setup redis-server
	$(BIN)/python -m pytest -q

## lint: ruff, mypy (strict on the engine), generated code fresh and buf STANDARD lint
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy truco_engine
	$(BIN)/mypy server/truco_server
	$(BIN)/mypy clients
	scripts/check_proto.sh

## serve: run the server (embedded in-memory store unless REDIS_URL is set)
serve: setup
	$(BIN)/truco serve

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
