# The two commands a new user needs: `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8787
PYTEST_WORKERS ?= 2

# The functions run on Lambda's python3.12: `make test-py312` (run by .ci/run after `make test`, kept
# out of `make test` so that stays under 10 minutes) runs the unit and integration tests on
# 3.12 when an interpreter is found (PATH, else pyenv's versions); without one it says so and skips.
PY312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
	$$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1 && { echo $$p; break; }; done)
VENV312 := .venv312
STAMP312 := $(VENV312)/.installed

.PHONY: install test test-py312 test-fast lint bench demo serve reset-local fuzz load layer layer-requirements mutate clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile tests

$(STAMP312): pyproject.toml constraints.txt
	$(PY312) -m venv $(VENV312)
	$(VENV312)/bin/pip install -q --upgrade pip
	$(VENV312)/bin/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP312)

# Unit, contract (both backends) and integration on 3.12 (the e2e suite is interpreter-neutral HTTP and
# already ran above).
test-py312:
ifeq ($(strip $(PY312)),)
	@echo "test-py312: no python3.12 found (PATH or ~/.pyenv/versions/3.12*); the 3.12 run is skipped"
else
	@$(MAKE) --no-print-directory $(STAMP312)
	$(VENV312)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile -p no:cacheprovider tests/unit tests/backends tests/integration
endif

# Longer schema fuzzing of the API on the local stack, and of the bundle/cartridge parsers.
ACX_FUZZ_EXAMPLES ?= 500
fuzz: $(STAMP)
	ACX_FUZZ_EXAMPLES=$(ACX_FUZZ_EXAMPLES) ACX_ST_EXAMPLES=50 ACX_ST_PHASES=examples,coverage,fuzzing,stateful \
	  $(BIN)/pytest -p no:warnings tests/e2e/test_fuzz_api.py tests/unit/core/test_fuzz_parsers.py

# Mutation testing of the core modules that check input or compute hashes (tests/mutation/config.toml):
# prints the score per module and the survivors, exits 1 below the floor. Not part of `make test`.
MUTATE_ARGS ?=
mutate: $(STAMP)
	$(BIN)/python scripts/mutate.py --json bench-out/mutation.json $(MUTATE_ARGS)

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

# State lives in $(ACX_LOCAL_DATA) or .acx-local/ (docs/LOCAL.md); `make reset-local` empties it.
serve: $(STAMP)
	$(BIN)/python -m acx.local.serve --port $(PORT)

reset-local: $(STAMP)
	$(BIN)/python -m acx.local.serve --reset

load: $(STAMP)
	$(BIN)/python scripts/load.py --clients 16 --seconds 60 --packages 3

layer: $(STAMP)
	$(BIN)/python scripts/build_layer.py

clean:
	rm -rf $(VENV) $(VENV312) demo-out bench-out .pytest_cache .mypy_cache .ruff_cache .hypothesis .aws-sam
