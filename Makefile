# The two commands a new user needs: `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8787
PYTEST_WORKERS ?= 2

.PHONY: install test test-fast lint bench demo serve fuzz load layer clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile tests

lint: $(STAMP)
	$(BIN)/ruff check layers functions tests bench scripts
	$(BIN)/ruff format --check layers functions tests bench scripts
	$(BIN)/mypy
	$(BIN)/cfn-lint template.yaml

bench: $(STAMP)
	$(BIN)/python -m bench.run

demo: $(STAMP)
	$(BIN)/python -m acx.local.demo --out demo-out

serve: $(STAMP)
	$(BIN)/python -m acx.local.serve --port $(PORT)

layer: $(STAMP)
	$(BIN)/python scripts/build_layer.py

clean:
	rm -rf $(VENV) demo-out bench-out .pytest_cache .mypy_cache .ruff_cache .hypothesis .aws-sam
