#!/usr/bin/env bash
# Prepare, on a machine with the package registry, what the GPU machine needs and cannot
# download (docs/gpu.md): wheels for its Python 3.12 (cryptography and its cffi/pycparser)
# and the datasets' IDX files, gzipped. Writes ./gpu_carry (ignored by git); carry it along.
set -euo pipefail
out=${1:-gpu_carry}
data=${DATA_DIR:-data/raw}
mkdir -p "$out/wheels"
# PY_VERSION: the GPU machine's Python (3.12); another value prepares a dry run on this machine.
pip download --no-deps --only-binary=:all: --python-version "${PY_VERSION:-3.12}" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$out/wheels" cryptography==50.0.2 cffi==2.1.1 pycparser==3.12
for class in MNIST FashionMNIST; do
  mkdir -p "$out/data/$class/raw"
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    gzip -9 -c "$data/$class/raw/$f" >"$out/data/$class/raw/$f.gz"
  done
done
# The commit this copy of the source comes from (the GPU machine gets no git history): results
# record it as their code version (BLADEFL_CODE_VERSION, see bladefl.experiments.provenance).
git describe --always --dirty --tags >"$out/CODE_VERSION" 2>/dev/null || echo unknown >"$out/CODE_VERSION"
du -sh "$out"
