# Two commands: `make run` (the default workflow) and `make test` (the whole test suite, a worker per
# core; `make test-fast`: the unit tests alone, for the edit-test loop).
# Both create .venv if it is missing and install the pinned environment once (stamp file).
VENV ?= .venv
# VENV is data too: its text as given (never expanded by make), reaching recipes as the quoted shell variable
# "$$VENV", checked (letters, digits and ._/-) before the first command that uses it.
override VENV := $(value VENV)
# make names a target after it, so it is checked here, at parse time, by removing every allowed character
# (a function of text only: nothing in the value is expanded or run).
VENV_CHARS := a b c d e f g h i j k l m n o p q r s t u v w x y z A B C D E F G H I J K L M N O P Q R S T U V W X Y Z \
  0 1 2 3 4 5 6 7 8 9 . _ / -
without = $(if $(2),$(call without,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,100,$(2))),$(1))
ifneq ($(words $(VENV))$(call without,$(VENV),$(VENV_CHARS)),1)
$(error VENV: one folder name of letters, digits and ._/- is needed)
endif
STAMP := $(VENV)/.installed-stamp
SHELL := /bin/bash
# The values a user gives (counts, file and folder names) reach the recipes as the shell's variables,
# quoted ("$$CONFIG"), never pasted into a command's text: a name holding a space, a quote, `;` or
# `$$( )` stays one argument, never code (tests/test_shell_scripts.py holds every recipe to it).
# SNAKEMAKE_ARGS and PYTEST_ARGS are arguments typed for the shell, and read as such.
CORES ?= all
TEST_WORKERS ?= auto
SNAKEMAKE_ARGS ?=
CONFIG ?= config/paper.yaml
RESULTS ?=
ARCHIVE ?=
NAME ?=
REF ?= reference/paper-10draws
KEPT ?=
SEEDS ?=
A ?=
B ?=
VERSION ?=
# make itself would expand a value given on its command line or in the environment as it exports it
# (`REF='x$$(shell ...)'` would run): each is taken as the text given, never expanded ($(value ...)).
override CORES := $(value CORES)
override TEST_WORKERS := $(value TEST_WORKERS)
override SNAKEMAKE_ARGS := $(value SNAKEMAKE_ARGS)
override PYTEST_ARGS := $(value PYTEST_ARGS)
override CONFIG := $(value CONFIG)
override RESULTS := $(value RESULTS)
override ARCHIVE := $(value ARCHIVE)
override NAME := $(value NAME)
override REF := $(value REF)
override KEPT := $(value KEPT)
override SEEDS := $(value SEEDS)
override A := $(value A)
override B := $(value B)
override VERSION := $(value VERSION)
export VENV CORES TEST_WORKERS CONFIG RESULTS ARCHIVE NAME REF KEPT SEEDS A B VERSION
export PATH := $(abspath $(VENV))/bin:$(PATH)
export MPLBACKEND := Agg

.PHONY: help install lock run test test-fast lint bench clean-results import-runs keep reference-report rejudge regenerate diff release rulegraph gpu-rehearsal

# The targets a user runs, one line each (tests/test_shell_scripts.py holds the list to the targets here).
help:
	@printf '%s\n' \
	  "make run               the default workflow (SNAKEMAKE_ARGS=\"--configfile config/smoke.yaml\": the tiny grid)" \
	  "make reference-report  render a kept bundle's report, nothing run (REF=reference/paper-10draws)" \
	  "make test              lint and the whole test suite; make test-fast: the unit tests alone" \
	  "make install           the locked environment in .venv (every other target makes it first)" \
	  "make import-runs       runs computed elsewhere into a results folder (ARCHIVE=, OPTIMA=, CONFIG=, SEEDS=)" \
	  "make keep              a results folder kept for good as reference/NAME (NAME=, CONFIG=)" \
	  "make rejudge           a kept bundle's verdicts derived again by this code (REF=)" \
	  "make regenerate        every kept bundle rejudged, docs/findings.md and docs/summary.md rewritten" \
	  "make diff              two bundles side by side (A=, B=)" \
	  "make bench             the speed benchmark" \
	  "make lint              snakemake --lint, snakefmt, ruff, mypy" \
	  "make lock              envs/requirements.lock again from envs/requirements.txt" \
	  "make rulegraph         docs/images/rulegraph.svg again" \
	  "make gpu-rehearsal     the GPU machine's call rehearsed on this CPU" \
	  "make release           a release: version, changelog, commit and tag (VERSION=)" \
	  "make clean-results     remove results/, logs and benchmarks"

$(STAMP): pyproject.toml envs/requirements.txt envs/requirements.lock
	@case "$$VENV" in ''|-*|*[!A-Za-z0-9._/-]*) echo "VENV: a folder name of letters, digits and ._/- (got '$$VENV')" >&2; exit 2;; esac
	@echo "installing the locked environment into $$VENV (once: about 3 minutes on a fresh 2-core machine, most of it torch)"
	@test -x "$$VENV/bin/python" || python3 -m venv "$$VENV"
	"$$VENV/bin/python" -m pip install -q --disable-pip-version-check --require-hashes -r envs/requirements.lock
	"$$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch "$$VENV/.installed-stamp"
	@echo "installed: source $$VENV/bin/activate for the bladefl and snakemake commands of README.md and docs/"

install: $(STAMP)

# envs/requirements.lock again from envs/requirements.txt's pins: the whole environment with every package's hashes
# (pip-tools' pip-compile in a throw-away environment; about 8 minutes), written beside its place and moved in.
lock:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; python3 -m venv "$$tmp/venv"; \
	  "$$tmp/venv/bin/pip" install -q --disable-pip-version-check pip-tools==7.6.2; \
	  "$$tmp/venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras --no-header \
	    --no-emit-index-url --no-emit-find-links --output-file "$$tmp/lock" envs/requirements.txt; \
	  { echo "# The whole environment of envs/requirements.txt's pins, every package with its hashes: what \`make\` installs"; \
	    echo "# (pip --require-hashes). Made by \`make lock\` (pip-tools' pip-compile --generate-hashes); do not edit."; \
	    cat "$$tmp/lock"; } > envs/.requirements.lock; \
	  mv envs/.requirements.lock envs/requirements.lock

run: install
	snakemake --cores "$$CORES" --rerun-incomplete $(SNAKEMAKE_ARGS)

lint: install
	snakemake --lint
	snakefmt --check workflow
	ruff check src tests notebooks
	mypy

test: install lint
	"$$VENV/bin/python" -m pytest -ra --durations=15 -n "$$TEST_WORKERS" --dist worksteal $(PYTEST_ARGS)

test-fast: install
	"$$VENV/bin/python" -m pytest -q -m "not slow and not slurm and not snakemake" -n "$$TEST_WORKERS" --dist worksteal $(PYTEST_ARGS)

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
# (config/paper.yaml: results/paper); RESULTS=... puts them elsewhere. CONFIG: config files separated
# by spaces (so no space inside one). SEEDS='0 1': a part of the grid, those run seeds only (its partitions
# and references alone are made; parts imported one after another make the whole). The archive is looked
# for before anything is made. OPTIMA=optima.tar.xz (a kept bundle's, `bladefl pack-optima`): the reference
# optima the runs were analysed with, put in place of training them (partitions first, so that each is newer
# than its partition and older than its runs).
import-runs: install
	@test -n "$$ARCHIVE" || { echo "usage: make import-runs ARCHIVE=grid-tables.tar.xz [OPTIMA=optima.tar.xz] [CONFIG=...] [RESULTS=...] [SEEDS='0 1']" >&2; exit 2; }
	@test -f "$$ARCHIVE" || { echo "ARCHIVE: not a file: $$ARCHIVE" >&2; exit 2; }
	@test -z "$$OPTIMA" || test -f "$$OPTIMA" || { echo "OPTIMA: not a file: $$OPTIMA" >&2; exit 2; }
	@case "$$SEEDS" in *[!0-9\ ]*) echo "SEEDS: run seeds (digits) separated by spaces, got '$$SEEDS'" >&2; exit 2;; esac
	set -e; read -ra configs <<< "$$CONFIG"; read -ra given <<< "$$SEEDS"; \
	  settings=($${RESULTS:+"results_dir=$$RESULTS"}); part=(); \
	  if [ "$${#given[@]}" -gt 0 ]; then settings+=("run_seeds=$$(IFS=,; echo "$${given[*]}")"); part=(--seeds "$${given[@]}"); fi; \
	  snakemake run_inputs --cores "$$CORES" --configfile "$${configs[@]}" $${settings[0]:+--config "$${settings[@]}"} \
	    $${OPTIMA:+--omit-from reference}; \
	  if [ -n "$$OPTIMA" ]; then bladefl import-optima --archive "$$OPTIMA" --configfile config/config.yaml \
	    "$${configs[@]}" "$${part[@]}" $${RESULTS:+--results-dir "$$RESULTS"}; fi; \
	  bladefl import-runs --archive "$$ARCHIVE" --configfile config/config.yaml "$${configs[@]}" "$${part[@]}" $${RESULTS:+--results-dir "$$RESULTS"}

# The report's inputs kept for good in reference/$(NAME)/ (tidy tables, provenance, manifest; no runs).
keep: install
	@case "$$NAME" in ""|.|..|*[!A-Za-z0-9._-]*) echo "usage: make keep NAME=paper-20seeds [CONFIG=...] [RESULTS=...] (NAME: letters, digits, '.', '_' and '-')" >&2; exit 2;; esac
	read -ra configs <<< "$$CONFIG"; \
	  snakemake "reference/$$NAME/MANIFEST.json" --cores "$$CORES" --configfile "$${configs[@]}" $${RESULTS:+--config "results_dir=$$RESULTS"}

# A kept bundle's verdict tables derived again from its own tables by this code (no runs), manifest updated.
rejudge: install
	bladefl rejudge "$$REF"

# Every kept bundle of reference/bundles.yaml re-judged, then docs/findings.md and docs/summary.md written from
# them: the one command after a change that moves a verdict (a new statement, a test); then `make test`.
regenerate: install
	bladefl regenerate

# The default workflow's rule graph in docs/workflow.md (docs/images/rulegraph.svg; Graphviz's `dot`:
# apt install graphviz), written beside its place and moved in.
rulegraph: install
	@command -v dot > /dev/null || { echo "rulegraph: Graphviz's dot is needed (apt install graphviz)" >&2; exit 2; }
	set -o pipefail; snakemake --rulegraph --cores 1 | dot -Tsvg -o docs/images/.rulegraph.svg
	mv docs/images/.rulegraph.svg docs/images/rulegraph.svg

# A release (scripts/release.sh): the version in every place, CHANGELOG.md's section, a commit and a tag.
release:
	bash scripts/release.sh

# Two bundles side by side, changed rows first (Markdown on the terminal): verdicts, K*, accuracy, distances.
diff: install
	@if [ -z "$$A" ] || [ -z "$$B" ]; then echo "usage: make diff A=reference/default-2seeds B=reference/paper-20seeds" >&2; exit 2; fi
	bladefl diff "$$A" "$$B"

# The report rendered from a kept bundle alone, nothing run: results/kept/<name>/report/index.html
# (KEPT=/an/absolute/folder renders it there: the config's paths may then lie outside this folder).
# The folder is emptied first through the one guard of destructive steps (bladefl.core.owned): it must
# be absent, empty or one this recipe laid out before (its .bladefl-owner mark; the .kept-report mark of
# earlier versions of this recipe counts), never a link, a folder holding tracked files, the current folder
# or one above it; a name ending in / is refused. Snakemake's output goes to its log, the steps done to the
# terminal; interrupted (Ctrl-C), the folder is emptied again, one line says so, and make stops as interrupted.
reference-report: install
	@set -e; ref="$${REF%/}"; kept="$${KEPT:-results/kept/$${ref##*/}}"; \
	  case "$$kept" in ""|/|.|..|*/|*/.|*/..) echo "KEPT: a folder of its own is needed, got '$$kept'" >&2; exit 2;; esac; \
	  python -m bladefl.core.owned check reference-report "$$kept" --legacy-mark .kept-report || exit 2; \
	  outside=(); if [[ "$$kept" == /* ]]; then outside=(paths_outside_workdir=True); fi; \
	  set -x; python -m bladefl.core.owned fresh reference-report "$$kept" --legacy-mark .kept-report; \
	  bladefl lay-out "$$ref" --results-dir "$$kept" --data-dir "$$kept/data"; \
	  { set +x; } 2>/dev/null; log="$$kept/logs/snakemake.log"; mkdir -p "$$kept/logs"; \
	  echo "rendering the report's pages (Snakemake's log: $$log)"; stopped=0; trap 'stopped=1' INT TERM; set +e; \
	  snakemake "$$kept/report/index.html" --cores "$$CORES" --configfile "$$ref/config.yaml" \
	    --config "results_dir=$$kept" "data_dir=$$kept/data" "logs_dir=$$kept/logs" "benchmarks_dir=$$kept/benchmarks" \
	    "$${outside[@]}" --allowed-rules dump_config notebook_parameters notebook report_index calibration_index 2>&1 \
	    | (trap '' INT TERM; tee -- "$$log" | grep --line-buffered -E '^[0-9]+ of [0-9]+ steps'); \
	  status=$${PIPESTATUS[0]}; set -e; \
	  if [ "$$stopped" = 1 ]; then python -m bladefl.core.owned fresh reference-report "$$kept" >/dev/null; \
	    echo "interrupted: $$kept emptied (a report is there whole or not at all); the same command renders it again" >&2; \
	    trap - INT; kill -INT $$$$; fi; \
	  if [ "$$status" != 0 ]; then failed=$$(awk '/^Error in rule/{f=1} f' "$$log" | head -n 60); \
	    if [ -n "$$failed" ]; then printf '%s\n' "$$failed" >&2; else tail -n 25 -- "$$log" >&2; fi; \
	    echo "the report failed: $$log" >&2; exit "$$status"; fi; \
	  echo "the report: $$kept/report/index.html"
