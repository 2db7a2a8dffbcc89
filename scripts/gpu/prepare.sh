#!/usr/bin/env bash
# Prepare, on a machine with the package registry and this project's environment (.venv), what the
# GPU machine needs and cannot download (docs/gpu.md): wheels for its Python 3.12 of what it lacks
# (scripts/gpu/closure.py --carried: cryptography and its cffi/pycparser; Snakemake and its dependencies,
# less PuLP, for MODE=snakemake; SNAKEMAKE=0 leaves them out), unpacked into site.tar.xz, and the
# datasets' IDX files, xz-compressed.
# Writes ./gpu_carry (ignored by git); carry it along. Run it again right before a call: the packages and
# the data are kept when they are up to date (seconds), and the code's record is written anew:
# CODE_VERSION (git describe) and SOURCE.sha256, the SHA-256 of every file of the code that travels, which
# run.sh checks there (a checkout changed since the carry was prepared is refused, not recorded as this
# version).
set -euo pipefail
out=${1:-gpu_carry}
# Every value given is checked before any use: paths by pattern, the version and the switch by closed form.
for name in DATA_DIR PYTHON; do
  value=${!name:-}
  if [ -n "$value" ] && ! [[ "$value" =~ ^[A-Za-z0-9._/+-]+$ ]]; then
    echo "$name: a path of letters, digits and . _ / + -, got '$value'" >&2
    exit 2
  fi
done
if [ -n "${PY_VERSION:-}" ] && ! [[ "$PY_VERSION" =~ ^3\.[0-9]{1,2}$ ]]; then
  echo "PY_VERSION: 3.N, got '$PY_VERSION'" >&2
  exit 2
fi
case "${SNAKEMAKE:-1}" in 0 | 1) ;; *) echo "SNAKEMAKE: 0 or 1, got '${SNAKEMAKE}'" >&2; exit 2 ;; esac
data=${DATA_DIR:-data/raw}
python=${PYTHON:-.venv/bin/python}
mkdir -p "$out"
# PY_VERSION: the GPU machine's Python (3.12); another value prepares a dry run on this machine.
platforms=(--python-version "${PY_VERSION:-3.12}" --implementation cp --platform manylinux_2_28_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
# What the GPU machine's Python (scripts/gpu/closure.py: torch, numpy, pandas, pyyaml, tqdm, matplotlib,
# scipy) lacks, at the versions installed here: cryptography (with cffi and pycparser) and, unless
# SNAKEMAKE=0, Snakemake and its dependencies less PuLP (the ILP scheduler, 30 MB: the script schedules
# greedily). The same lists make the import guard the tests run the script under (a step that needs
# anything else fails in CI). A package published only as source is built here (pure Python only).
# The wheels, unpacked into one xz archive (a third smaller than the wheels' zip compression: what travels
# to the GPU machine is at most 64 MiB, the checkout's tracked files included).
make_site() {
  rm -rf "$out/wheels" "$out/site" "$out/site.tar.xz"
  mkdir -p "$out/wheels"
  grep -v '^python ' "$out/carried-requirements.txt" | while read -r req; do
    if ! "$python" -m pip download -q --no-deps --only-binary=:all: "${platforms[@]}" -d "$out/wheels" "$req" \
      >/dev/null 2>&1; then
      "$python" -m pip wheel -q --no-deps -w "$out/wheels" "$req" >/dev/null
      name=$(echo "${req%%==*}" | tr - _)
      if [ -z "$(find "$out/wheels" -maxdepth 1 -iname "${name}-*-py3-none-any.whl" -print -quit)" ]; then
        echo "error: $req has no wheel for Python ${PY_VERSION:-3.12} and is not pure Python" >&2
        exit 1
      fi
    fi
  done
  "$python" -c 'import glob, sys, zipfile
for wheel in glob.glob(sys.argv[1] + "/wheels/*.whl"):
    zipfile.ZipFile(wheel).extractall(sys.argv[1] + "/site")' "$out"
  tar -C "$out/site" -cf - . | xz -9e -T0 >"$out/site.tar.xz.tmp"
  mv "$out/site.tar.xz.tmp" "$out/site.tar.xz"
  rm -rf "$out/site" "$out/wheels"
}
# Made again only when the requirements (or the Python they are for) changed.
closure=(--carried)
if [ "${SNAKEMAKE:-1}" = 0 ]; then closure+=(--no-workflow); fi
"$python" scripts/gpu/closure.py "${closure[@]}" >"$out/carried-requirements.txt.new"
echo "python ${PY_VERSION:-3.12}" >>"$out/carried-requirements.txt.new"
if [ -s "$out/site.tar.xz" ] && cmp -s "$out/carried-requirements.txt.new" "$out/carried-requirements.txt"; then
  echo "packages: up to date ($out/site.tar.xz)"
  rm "$out/carried-requirements.txt.new"
else
  mv "$out/carried-requirements.txt.new" "$out/carried-requirements.txt"
  make_site
fi
# The datasets' IDX files, xz-compressed (35 MB for both; gzip: 42 MB); one newer than its source is kept.
for class in MNIST FashionMNIST; do
  mkdir -p "$out/data/$class/raw"
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    dst="$out/data/$class/raw/$f.xz"
    if [ ! -s "$dst" ] || [ "$data/$class/raw/$f" -nt "$dst" ]; then
      xz -9e -T0 -c "$data/$class/raw/$f" >"$dst.tmp" && mv "$dst.tmp" "$dst"
    fi
  done
done
# The commit this copy of the source comes from (the GPU machine gets no git history): results
# record it as their code version (BLADEFL_CODE_VERSION, see bladefl.experiments.runs.provenance),
# and the SHA-256 of each file of the code as it is now (tracked or untracked and not ignored, as the
# device tool sends them), which run.sh checks against the checkout it is given.
git describe --always --dirty --tags >"$out/CODE_VERSION" 2>/dev/null || echo unknown >"$out/CODE_VERSION"
git ls-files -z --cached --others --exclude-standard | "$python" scripts/gpu/source_digest.py >"$out/SOURCE.sha256"
du -sh "$out"
