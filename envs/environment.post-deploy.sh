#!/usr/bin/env bash
# Snakemake runs this once, inside the new conda environment, from a copy of this file and from the
# working folder (which, for the workflow used as a module, is not the workflow's): install the
# bladefl package the rules call, editable, from the workflow's own tree, which the workflow names
# in BLADEFL_SOURCE (workflow/rules/common.smk; the working folder where it is unset), so the
# environment follows the checkout (a change to src/bladefl needs no new environment; a change to
# the dependencies does, and changes environment.yaml, whose hash names the environment).
set -euo pipefail
python -m pip install --no-deps -e "${BLADEFL_SOURCE:-.}"
