# The two first commands of the README: `make demo` (set-up + main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# A CPU build of torch is enough for everything that runs without a GPU.
TORCH ?= torch==2.13.0

.PHONY: demo test lint typecheck unit corpus bench notebooks clean

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

demo: $(VENV)/.installed
	$(BIN)/karyamorph demo

lint: $(VENV)/.installed
	$(BIN)/ruff check karyamorph tests benchmarks datasets
	$(BIN)/ruff format --check karyamorph tests benchmarks datasets

typecheck: $(VENV)/.installed
	$(BIN)/mypy karyamorph
	$(BIN)/mypy --strict --follow-imports=silent karyamorph/model

# Every core (pytest-xdist); GPU tests share one worker, as do a Ray module's (tests/conftest.py).
unit: $(VENV)/.installed
	$(BIN)/python -m pytest -q -n auto --dist loadgroup

test: lint typecheck unit

# JupyterLab on notebooks/ (the optional `notebooks` extra, installed on first use).
NOTEBOOK_ARGS ?=
notebooks: $(VENV)/.installed
	test -x $(BIN)/jupyter-lab || $(BIN)/python -m pip install -q -e ".[dev,notebooks]"
	$(BIN)/jupyter-lab notebooks $(NOTEBOOK_ARGS)

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/compile_side.py
	$(BIN)/python benchmarks/parser.py

# Rebuild the PTX round-trip corpus (nvcc from the wheels; Triton in its own venv).
corpus: $(VENV)/.installed
	$(BIN)/python tests/corpus/generate_nvcc.py
	test -x .triton-venv/bin/python || ($(PYTHON) -m venv .triton-venv && .triton-venv/bin/pip install -q triton==3.9.0)
	.triton-venv/bin/python tests/corpus/generate_triton.py
	$(BIN)/python tests/corpus/verify_ptxas.py

clean:
	rm -rf $(VENV) karyamorph.duckdb .pytest_cache .mypy_cache .ruff_cache
