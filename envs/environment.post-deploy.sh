#!/usr/bin/env bash
# Snakemake runs this once, inside the new conda environment, from the workflow's working
# directory (the repository root): install the bladefl package the rules call.
set -euo pipefail
python -m pip install --no-deps .
