# Two commands: `make run` (the default workflow) and `make test` (the whole test suite).
# Both create .venv if it is missing and install the pinned environment once (stamp file).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
CORES ?= all
SNAKEMAKE_ARGS ?=
export PATH := $(abspath $(VENV))/bin:$(PATH)
export MPLBACKEND := Agg

.PHONY: install run test lint bench clean-results

$(STAMP): pyproject.toml envs/requirements.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r envs/requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

install: $(STAMP)

run: install
	snakemake --cores $(CORES) --rerun-incomplete $(SNAKEMAKE_ARGS)

lint: install
	snakemake --lint
	snakefmt --check Snakefile workflow
	ruff check src tests notebooks

test: install lint
	$(PY) -m pytest -ra $(PYTEST_ARGS)

bench: install
	bladefl bench

clean-results:
	rm -rf results/* logs benchmarks .snakemake
