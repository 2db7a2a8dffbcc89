#!/usr/bin/env bash
# Prepare, on a machine with the package registry and this project's environment (.venv), what the
# GPU machine needs and cannot download (docs/gpu.md): wheels for its Python 3.12 of what it lacks
# (scripts/gpu/closure.py --carried: cryptography and its cffi/pycparser; Snakemake and its dependencies,
# less PuLP, for MODE=snakemake; SNAKEMAKE=0 leaves them out), unpacked into site.tar.xz, and the
# datasets' IDX files, xz-compressed.
# Writes ./gpu_carry (ignored by git); carry it along.
set -euo pipefail
out=${1:-gpu_carry}
data=${DATA_DIR:-data/raw}
python=${PYTHON:-.venv/bin/python}
rm -rf "$out/wheels"
mkdir -p "$out/wheels"
# PY_VERSION: the GPU machine's Python (3.12); another value prepares a dry run on this machine.
platforms=(--python-version "${PY_VERSION:-3.12}" --implementation cp --platform manylinux_2_28_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
# What the GPU machine's Python (scripts/gpu/closure.py: torch, numpy, pandas, pyyaml, tqdm, matplotlib,
# scipy) lacks, at the versions installed here: cryptography (with cffi and pycparser) and, unless
# SNAKEMAKE=0, Snakemake and its dependencies less PuLP (the ILP scheduler, 30 MB: the script schedules
# greedily). The same lists make the import guard the tests run the script under (a step that needs
# anything else fails in CI). A package published only as source is built here (pure Python only).
"$python" scripts/gpu/closure.py --carried $([ "${SNAKEMAKE:-1}" = 0 ] && echo --no-workflow) \
  >"$out/carried-requirements.txt"
while read -r req; do
  if ! "$python" -m pip download -q --no-deps --only-binary=:all: "${platforms[@]}" -d "$out/wheels" "$req" \
    >/dev/null 2>&1; then
    "$python" -m pip wheel -q --no-deps -w "$out/wheels" "$req" >/dev/null
    name=$(echo "${req%%==*}" | tr - _)
    if ! ls "$out/wheels" | grep -i "^${name}-.*-py3-none-any.whl$" >/dev/null; then
      echo "error: $req has no wheel for Python ${PY_VERSION:-3.12} and is not pure Python" >&2
      exit 1
    fi
  fi
done <"$out/carried-requirements.txt"
# The wheels unpacked into one xz archive (a third smaller than the wheels' zip compression: what travels
# to the GPU machine is at most 64 MiB, the checkout's tracked files included).
rm -rf "$out/site" "$out/site.tar.xz"
"$python" -c 'import glob, sys, zipfile
for wheel in glob.glob(sys.argv[1] + "/wheels/*.whl"):
    zipfile.ZipFile(wheel).extractall(sys.argv[1] + "/site")' "$out"
tar -C "$out/site" -cf - . | xz -9e -T0 >"$out/site.tar.xz"
rm -rf "$out/site" "$out/wheels"
# The datasets' IDX files, xz-compressed (35 MB for both; gzip: 42 MB).
rm -rf "$out/data"
for class in MNIST FashionMNIST; do
  mkdir -p "$out/data/$class/raw"
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    xz -9e -T0 -c "$data/$class/raw/$f" >"$out/data/$class/raw/$f.xz"
  done
done
# The commit this copy of the source comes from (the GPU machine gets no git history): results
# record it as their code version (BLADEFL_CODE_VERSION, see bladefl.experiments.runs.provenance).
git describe --always --dirty --tags >"$out/CODE_VERSION" 2>/dev/null || echo unknown >"$out/CODE_VERSION"
du -sh "$out"
