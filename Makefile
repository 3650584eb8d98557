# One entry point for people and CI. Everything installs into ./.venv from the lock file.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Bytecode is cached (some environments set PYTHONDONTWRITEBYTECODE): the suite starts
# over a hundred server processes, each of which would otherwise compile the package.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install run test test-fast lint typecheck bench lock clean

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --require-hashes -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

## Start the server on 127.0.0.1:8080 with SQLite under ./var/
run: install
	$(BIN)/tidegate serve --host 127.0.0.1 --port 8080

## Lint, strict typecheck, then the whole test suite: real SQLite, real PostgreSQL,
## real Redis, real HTTP.
## Three pytest workers (xdist): the suite is mostly waiting on servers, databases and
## the browser, so a third worker on two cores shortens it.
## Coverage of the package is measured by SlipCover (it takes its probes out of a line
## once the line has run, so coverage costs little CPU; coverage.py's tracer on this
## Python took a fifth of the suite's CPU), printed, and must stay above the floor in
## pyproject.toml ([tool.tidegate.coverage] floor; scripts/coverage_floor.py).
PYTEST_ARGS ?= -n 3 --dist worksteal --durations=25
COVERAGE_REPORT := .coverage.json
test: lint typecheck
	$(BIN)/python -m slipcover --json --out $(COVERAGE_REPORT) -m pytest $(PYTEST_ARGS)
	$(BIN)/python scripts/coverage_floor.py $(COVERAGE_REPORT)

## The quick loop: everything but the tests that start real server processes.
test-fast: install
	$(BIN)/python -m pytest -n 2 -m "not live"

## lint-imports checks the layers; scripts/import_cycles.py fails when a package cycle
## appears or more imports run back up the layers than its committed baseline.
lint: install
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/lint-imports
	$(BIN)/python scripts/import_cycles.py --check

typecheck: install
	$(BIN)/mypy

bench: install
	$(BIN)/python bench/bench_account_read.py
	$(BIN)/python bench/bench_throttle.py
	$(BIN)/python bench/bench_gateway.py
	$(BIN)/python bench/bench_ingest.py
	$(BIN)/python bench/bench_line_parsing.py
	$(BIN)/python bench/bench_parsing_http.py
	$(BIN)/python bench/bench_tenant_patterns.py
	$(BIN)/python bench/bench_health_under_attack.py
	$(BIN)/python bench/bench_ingest_memory.py
	$(BIN)/python bench/bench_gateway_memory.py
	$(BIN)/python bench/bench_export_loop.py
	$(BIN)/python bench/bench_syslog.py
	$(BIN)/python bench/bench_search.py --lines 100k
	$(BIN)/python bench/bench_alert_idle.py

## Re-resolve the lock after changing pyproject.toml (needs uv: pip install uv).
lock:
	uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 -o requirements.lock

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .coverage.json
