#!/usr/bin/env bash
# A grid in parts on this machine's CPU (docs/workflow.md, "A grid in parts on the CPU"): for each run seed
# given, the runs of that seed alone (config run_seeds: each still the run of the whole design), then the
# part's run tables packed at once into $OUT/part-seed<seed>.tar.xz, the archive `bladefl import-runs
# --seeds <seed>` reads (the members and ABOUT.json of scripts/gpu/run.sh's grid-tables.tar.xz).
#
#   scripts/grid_part.sh 0 1 2          # in a clone at one commit, so every part runs the same code
#
# CONFIG (default "config/paper.yaml config/paper_part10.yaml": the 10-draw design), CORES (default 2; all),
# LEDGERS (default 0; 1: the runs' ledgers packed too, for `import-runs` to verify each run against them),
# OUT (default reference/runs/paper-10draws, made if missing; a relative OUT is relative to where the
# script is called). A part whose archive exists is skipped, so the script resumes after any stop: Snakemake
# keeps the part's finished runs (--rerun-incomplete redoes a cut one) and the archive is written beside
# its place and renamed into it, never left half-written. Progress: one line per part here, Snakemake's
# log in $OUT/part-seed<seed>.log.
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: scripts/grid_part.sh SEED [SEED ...]  (CONFIG, CORES, OUT: see the script's head)" >&2
  exit 2
fi
for seed in "$@"; do
  case "$seed" in '' | *[!0-9]*) echo "SEED: a run seed (digits), got '$seed'" >&2; exit 2 ;; esac
done
case "${LEDGERS:-0}" in 0 | 1) ;; *) echo "LEDGERS: 0 or 1, got '${LEDGERS}'" >&2; exit 2 ;; esac
for name in CONFIG OUT; do  # paths (CONFIG: several, separated by spaces): checked before any use
  value=${!name:-}
  if [ -n "$value" ] && ! [[ "$value" =~ ^[A-Za-z0-9._/+\ -]+$ ]]; then
    echo "$name: paths of letters, digits and . _ / + - (CONFIG: separated by spaces), got '$value'" >&2
    exit 2
  fi
done
cores=${CORES:-2}
case "$cores" in all) ;; '' | *[!0-9]* | 0) echo "CORES: a count of cores or 'all', got '$cores'" >&2; exit 2 ;; esac
threads=$cores
if [ "$cores" = all ]; then threads=0; fi  # xz: 0 is every core
read -ra configs <<< "${CONFIG:-config/paper.yaml config/paper_part10.yaml}"
out=$(realpath -m "${OUT:-reference/runs/paper-10draws}")
# The config's engine and results folder, as Snakemake reads them (on top of config/config.yaml).
read -r engine results < <(python3 -c '
import sys
from bladefl.experiments.plan.config_files import read_configs
try:
    c = read_configs(sys.argv[1:])
except Exception as exc:  # one line, whatever the config holds
    sys.exit(f"CONFIG: {exc}")
print(c.get("engine", "paper"), c.get("results_dir", "results"))' "${configs[@]}") || exit 2
mkdir -p "$out"
code=$(git describe --always --dirty --tags 2>/dev/null || echo unknown)
for seed in "$@"; do
  archive="$out/part-seed$seed.tar.xz"
  if [ -f "$archive" ]; then echo "part seed $seed: $archive exists, skipped"; continue; fi
  echo "$(date -u +%FT%TZ) part seed $seed: started (code $code)"
  t0=$(date +%s)
  snakemake run_folders --cores "$cores" --rerun-incomplete --configfile "${configs[@]}" \
    --config "run_seeds=[$seed]" > "$out/part-seed$seed.log" 2>&1 \
    || { echo "part seed $seed: snakemake failed (its log: $out/part-seed$seed.log)" >&2; exit 1; }
  wall=$(($(date +%s) - t0))
  stage=$(mktemp -d "$out/.stage.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  mkdir "$stage/grid"
  # Members grid/<dataset>/<cell>/seed~<seed>/{rounds.csv,summary.json,detections.csv}, as run.sh packs them.
  # LEDGERS=1 packs the ledgers too (chains/K<k>.json: about 120 kB a run as .xz, against 4 kB of tables).
  ledgers=()
  if [ "${LEDGERS:-0}" = 1 ]; then ledgers=(-o -path "*/chains/K*.json"); fi
  (cd "$results/runs/$engine" && find . -path "*/seed~$seed/*" \
    \( -name rounds.csv -o -name summary.json -o -name detections.csv "${ledgers[@]}" \) -print0 \
    | tar cf - --null -T -) | tar xf - -C "$stage/grid"
  runs=$(find "$stage/grid" -name summary.json | wc -l)
  python3 - "$stage/grid/ABOUT.json" "$seed" "$wall" "$runs" "$code" "$cores" "${configs[*]}" <<'EOF'
import json, os, platform, sys
path, seed, wall, runs, code, cores, grid = sys.argv[1:8]
json.dump({"gpu": None, "device": "cpu", "code_version": code, "mode": "snakemake", "grid": grid,
           "grid_seeds": seed, "run_seeds": [int(seed)], "runs": int(runs), "grid_wall_s": float(wall), "finished": True,
           "machine": f"{os.cpu_count()} CPUs, {platform.machine()}",
           "cores_used": os.cpu_count() if cores == "all" else int(cores)},
          open(path, "w"), indent=1)
EOF
  tar cf - -C "$stage" grid | xz -T"$threads" -6 > "$stage/part.tar.xz"
  mv "$stage/part.tar.xz" "$archive"
  rm -rf "$stage"
  trap - EXIT
  echo "$(date -u +%FT%TZ) part seed $seed: $runs runs in $wall s, packed: $archive"
done
