#!/usr/bin/env bash
# Snakemake runs this once, inside the new conda environment, from the workflow's working
# directory (the repository root): install the bladefl package the rules call, editable, so the
# environment follows the checkout (a change to src/bladefl needs no new environment; a change
# to the dependencies does, and changes environment.yaml, whose hash names the environment).
set -euo pipefail
python -m pip install --no-deps -e .
