# The two commands a new user needs: `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8787
PYTEST_WORKERS ?= 2

.PHONY: install test test-fast lint bench demo serve fuzz load layer layer-requirements clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile tests

# Longer schema fuzzing of the API on the local stack, and of the bundle/cartridge parsers.
ACX_FUZZ_EXAMPLES ?= 500
fuzz: $(STAMP)
	ACX_FUZZ_EXAMPLES=$(ACX_FUZZ_EXAMPLES) $(BIN)/pytest -p no:warnings tests/e2e/test_fuzz_api.py tests/unit/test_fuzz_parsers.py

# checkov pins boto3 exactly (conflicting with constraints.txt), so it gets its own venv.
CHECKOV := $(VENV)/checkov/bin/checkov
$(CHECKOV): tools/checkov-requirements.txt
	$(PY) -m venv $(VENV)/checkov
	$(VENV)/checkov/bin/pip install -q -r tools/checkov-requirements.txt
	touch $(CHECKOV)

lint: $(STAMP) $(CHECKOV)
	$(BIN)/ruff check layers functions tests bench scripts
	$(BIN)/ruff format --check layers functions tests bench scripts
	$(BIN)/mypy
	$(BIN)/cfn-lint template.yaml
	$(BIN)/python scripts/layer_requirements.py --check
	$(CHECKOV) -f template.yaml --framework cloudformation --compact --quiet --skip-download

# Regenerate layers/acx/requirements.txt (exact pins) from constraints.txt after changing either.
layer-requirements: $(STAMP)
	$(BIN)/python scripts/layer_requirements.py

bench: $(STAMP)
	$(BIN)/python -m bench.run

demo: $(STAMP)
	$(BIN)/python -m acx.local.demo --out demo-out

serve: $(STAMP)
	$(BIN)/python -m acx.local.serve --port $(PORT)

load: $(STAMP)
	$(BIN)/python scripts/load.py --clients 16 --seconds 60 --packages 3

layer: $(STAMP)
	$(BIN)/python scripts/build_layer.py

clean:
	rm -rf $(VENV) demo-out bench-out .pytest_cache .mypy_cache .ruff_cache .hypothesis .aws-sam
