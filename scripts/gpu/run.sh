#!/usr/bin/env bash
# On a GPU machine whose Python has torch, numpy, pandas, pyyaml and tqdm but not this
# project's other packages, and no network (docs/gpu.md): install the carried wheels into a
# folder, unpack and verify the carried data, then run the GPU benchmark and the whole paper
# grid (20 seeds, both datasets) through the multi-run engine. Output goes to $OUT (default out/):
# gpu.txt, bench.txt, and grid-tables.tar.gz (every finished run folder's rounds.csv, summary.json
# and detections.csv, no ledgers; packed at the end, also when the run is cut short).
# A dry run elsewhere: DEVICE=cpu GRID=config/smoke.yaml SEEDS=1 (wheels from PY_VERSION=3.11 prepare.sh).
set -euo pipefail
carry=${CARRY:-gpu_carry}
out=${OUT:-out}
grid=${GRID:-config/paper.yaml}
mkdir -p "$out"
# A wheel is a zip archive: unpacking it into a folder on PYTHONPATH installs it (no pip needed).
python3 -c 'import glob, sys, zipfile
for wheel in glob.glob(sys.argv[2] + "/*.whl"):
    zipfile.ZipFile(wheel).extractall(sys.argv[1])' "$carry/site" "$carry/wheels"
export PYTHONPATH="$PWD/src:$PWD/$carry/site"
if [ -s "$carry/CODE_VERSION" ]; then
  export BLADEFL_CODE_VERSION="$(cat "$carry/CODE_VERSION")"
fi
pack() {
  if [ -d "$out/grid" ]; then
    (cd "$out" && find grid \( -name rounds.csv -o -name summary.json -o -name detections.csv \) -print0 |
      tar czf grid-tables.tar.gz --null -T -) && rm -rf "$out/grid"
  fi
}
trap pack EXIT
for class in MNIST FashionMNIST; do
  mkdir -p "data/raw/$class/raw"
  for gz in "$carry/data/$class/raw/"*.gz; do
    gunzip -c "$gz" >"data/raw/$class/raw/$(basename "$gz" .gz)"
  done
done
python3 -m bladefl.cli fetch --dataset mnist --sources existing
python3 -m bladefl.cli fetch --dataset fashion_mnist --sources existing
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$out/gpu.txt"
fi
python3 -m bladefl.cli bench --device "${DEVICE:-cuda}" --data-dir data/raw ${SEEDS:+--seeds $SEEDS} \
  --grid "$grid" ${GRID_SEEDS:+--grid-seeds $GRID_SEEDS} --out "$out/grid" 2>&1 | tee "$out/bench.txt"
