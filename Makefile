# Two commands: `make run` (the default workflow) and `make test` (the whole test suite, a worker per
# core; `make test-fast`: the unit tests alone, for the edit-test loop).
# Both create .venv if it is missing and install the pinned environment once (stamp file).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
CORES ?= all
TEST_WORKERS ?= auto
SNAKEMAKE_ARGS ?=
export PATH := $(abspath $(VENV))/bin:$(PATH)
export MPLBACKEND := Agg

.PHONY: install run test test-fast lint bench clean-results import-runs keep reference-report rejudge gpu-rehearsal

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
	mypy

test: install lint
	$(PY) -m pytest -ra --durations=15 -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

test-fast: install
	$(PY) -m pytest -q -m "not slow and not slurm and not snakemake" -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

bench: install
	bladefl bench

# The GPU machine's call rehearsed on this CPU in a replica of its Python 3.12 and torch 2.11 (docs/gpu.md).
gpu-rehearsal: install
	scripts/gpu/rehearse.sh

clean-results:
	rm -rf results/* logs benchmarks .snakemake

# Runs computed elsewhere (scripts/gpu/run.sh's grid-tables.tar.xz; docs/gpu.md), analysed here without
# running them: partitions and references first, so that the imported runs are newer than their inputs,
# then `make run SNAKEMAKE_ARGS="--configfile $(CONFIG)"`. Each config names its own results folder
# (config/paper.yaml: results/paper); RESULTS=... puts them elsewhere.
CONFIG ?= config/paper.yaml
RESULTS ?=
RESULTS_SET = $(if $(RESULTS),--config results_dir=$(RESULTS))
import-runs: install
	@test -n "$(ARCHIVE)" || { echo "usage: make import-runs ARCHIVE=grid-tables.tar.xz [CONFIG=...] [RESULTS=...]"; exit 2; }
	snakemake run_inputs --cores $(CORES) --configfile $(CONFIG) $(RESULTS_SET)
	bladefl import-runs --archive $(ARCHIVE) --configfile config/config.yaml $(CONFIG) $(if $(RESULTS),--results-dir $(RESULTS))

# The report's inputs kept for good in reference/$(NAME)/ (tidy tables, provenance, manifest; no runs).
keep: install
	@test -n "$(NAME)" || { echo "usage: make keep NAME=paper-20seeds [CONFIG=...] [RESULTS=...]"; exit 2; }
	snakemake reference/$(NAME)/MANIFEST.json --cores $(CORES) --configfile $(CONFIG) $(RESULTS_SET)

# A kept bundle's verdict tables derived again from its own tables by this code (no runs), manifest updated.
rejudge: install
	bladefl rejudge $(REF)

# The report rendered from a kept bundle alone, nothing run: results/kept/<name>/report/index.html
# (KEPT=/an/absolute/folder renders it there: the config's paths may then lie outside this folder).
REF ?= reference/paper-20seeds
KEPT = results/kept/$(notdir $(REF))
reference-report: install
	rm -rf $(KEPT)
	bladefl lay-out $(REF) --results-dir $(KEPT) --data-dir $(KEPT)/data
	snakemake $(KEPT)/report/index.html --cores $(CORES) --configfile $(REF)/config.yaml \
	  --config results_dir=$(KEPT) data_dir=$(KEPT)/data logs_dir=$(KEPT)/logs benchmarks_dir=$(KEPT)/benchmarks \
	  $(if $(filter /%,$(KEPT)),paths_outside_workdir=True) \
	  --allowed-rules dump_config notebook_parameters notebook report_index calibration_index
	@echo "the report: $(KEPT)/report/index.html"
