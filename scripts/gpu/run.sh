#!/usr/bin/env bash
# On a GPU machine whose Python has torch, numpy, pandas, pyyaml and tqdm but not this
# project's other packages, and no network (docs/gpu.md): install the carried wheels into a
# folder, unpack and verify the carried data, then run the paper grid (20 seeds, both datasets)
# through the multi-run engine. Output goes to $OUT (default out/):
#   gpu.txt              the GPU (nvidia-smi)
#   check.txt            `bladefl device-check`: the mixed group (lazy, DP, detection, exclusion, several
#                        runs ending together) on the device against the CPU (CHECK=0 skips it)
#   bench.txt            what the run printed (the benchmark's rates and breakdown, the grid's wall time)
#   jobs.tar.xz          MODE=snakemake: its benchmark files (each job's wall and memory) and the run groups' logs
#   grid-tables.tar.xz   every finished run folder's rounds.csv, summary.json and detections.csv (with
#                        LEDGERS=1 also its ledgers chains/K*.json, which the import verifies) and
#                        ABOUT.json (GPU, code version, dates, wall time, whether the grid finished):
#                        what `make import-runs ARCHIVE=...` brings into a results folder
# LEDGERS (default 0): 1 packs the ledgers too. The 20-seed grid's are 1.34 million transactions in
#   69,280 blocks, about 670 MB of JSON and 160 MB xz-compressed (120 bytes a transaction, measured on
#   N = 20 ledgers): more than a device call brings back (8 files of 16 MiB), so off by default there.
# MODE=bench (default): every grid run through `bladefl bench --grid` (the engine without Snakemake).
# MODE=snakemake: the documented command, `snakemake --profile profiles/gpu --configfile $GRID`, up
#   to the runs (target run_folders; the analyses and the report are made where the tables are
#   imported); needs Snakemake's wheels (prepare.sh carries them).
# BENCH (default 1): `bladefl bench --device cuda --host-copy-compare` (the stacked groups at 1, 6 and 23
#   seeds, the round ends' host copy both ways, the chain's drag), in either mode; BENCH=0 skips it.
# BENCH_AT (default start): start runs the bench before the grid; end runs it after a grid that
#   finished, in the time the grid left (a second call that finishes a grid measures the bench too).
# BENCH_S (default 240): the benchmark's most seconds (stopped then, never fatal).
# BUDGET_S (default 540): the whole script's seconds; the grid gets what the setup and the benchmark
#   leave, less the stop and 30 s for packing, and is stopped then by scripts/gpu/deadline.py (SIGINT,
#   after GRACE_S (default 20) SIGTERM to every process it started, 5 s later SIGKILL), so that what
#   finished is packed before the machine's own limit (set the call's timeout above BUDGET_S).
# GRID_SEEDS: a part of the grid: k (the config's first k seeds) or i-j (seeds i to j), each run still a
#   run of the whole config (config run_seeds); parts of separate calls import into one results folder.
# GRID_DIR (default $OUT/grid): where the grid's run folders are written; a folder kept between calls
#   (e.g. results-gpu/grid on a machine kept warm) makes a second call continue the grid, skipping the
#   run folders already finished (MODE=bench runs draw by draw, so a grid cut short holds whole draws).
# A dry run elsewhere: DEVICE=cpu GRID=config/smoke.yaml SEEDS=1 (wheels from PY_VERSION=3.11 prepare.sh).
set -euo pipefail
carry=${CARRY:-gpu_carry}
out=${OUT:-out}
grid=${GRID:-config/paper.yaml}
mode=${MODE:-bench}
budget=${BUDGET_S:-540}
grid_dir=${GRID_DIR:-$out/grid}
# Every value given is parsed by pattern before any use, and refused in one line otherwise: each reaches
# bash arithmetic or a record only as what the pattern allows.
if ! [[ "$budget" =~ ^[1-9][0-9]{0,5}$ ]]; then
  echo "BUDGET_S: whole seconds in 1..999999, got '$budget'" >&2
  exit 2
fi
# The other seconds, sizes and counts reach bash arithmetic or a command line: the same check, before any use
# (default when unset); the switches are words of a closed set.
for name in BENCH_S GRACE_S SPLIT_BYTES SEEDS; do
  value=${!name:-}
  if [ -n "$value" ] && ! [[ "$value" =~ ^[1-9][0-9]{0,9}$ ]]; then
    echo "$name: a whole number 1..9999999999, got '$value'" >&2
    exit 2
  fi
done
for name in CHECK BENCH LEDGERS; do
  case "${!name:-}" in '' | 0 | 1) ;; *) echo "$name: 0 or 1, got '${!name}'" >&2; exit 2 ;; esac
done
case "${BENCH_AT:-start}" in start | end) ;; *) echo "BENCH_AT: start or end, got '${BENCH_AT}'" >&2; exit 2 ;; esac
if [ -n "${GRID_SEEDS:-}" ] && ! [[ "$GRID_SEEDS" =~ ^([1-9][0-9]{0,3}|(0|[1-9][0-9]{0,3})-(0|[1-9][0-9]{0,3}))$ ]]; then
  echo "GRID_SEEDS: k (the config's first k seeds) or i-j (seeds i to j), digits, got '$GRID_SEEDS'" >&2
  exit 2
fi
for name in GRID OUT GRID_DIR CARRY; do
  value=${!name:-}
  if [ -n "$value" ] && ! [[ "$value" =~ ^[A-Za-z0-9._/+-]+$ ]]; then
    echo "$name: a path of letters, digits and . _ / + -, got '$value'" >&2
    exit 2
  fi
done
case "${DEVICE:-cuda}" in cuda | cpu) ;; *) echo "DEVICE: cuda or cpu, got '${DEVICE:-}'" >&2; exit 2 ;; esac
case "$mode" in bench | snakemake) ;; *) echo "MODE: bench or snakemake, got '$mode'" >&2; exit 2 ;; esac
# The code must be the code the carry was prepared for (prepare.sh's SOURCE.sha256: no file changed,
# missing or added), or the results would record another code version than the one that made them:
# refused before any work. The version recorded (code_version) is the carry's only when its code is
# checked so.
code_version=$(cat "$carry/CODE_VERSION" 2>/dev/null || true)
if [ -s "$carry/SOURCE.sha256" ]; then
  differs=""
  if ! changed=$(sha256sum --check --quiet "$carry/SOURCE.sha256" 2>&1); then
    differs=$(echo "$changed" | sed -n -E 's/: FAILED open or read$/ (missing)/p; s/: FAILED$/ (changed)/p')
    differs=${differs:-$changed}
  fi
  if ! added=$(python3 scripts/gpu/source_digest.py --added "$carry/SOURCE.sha256"); then
    echo "error: the code's files could not be listed against $carry/SOURCE.sha256" >&2
    exit 2
  fi
  if [ -n "$added" ]; then differs=$(printf '%s\n%s' "$differs" "$added"); fi
  if [ -n "$differs" ]; then
    files=$(echo "$differs" | sed '/^$/d' | head -5 | paste -sd, - | sed 's/,/, /g')
    echo "error: this checkout's code differs from the code $carry was prepared for (${code_version:-unknown}):" \
      "$files; run scripts/gpu/prepare.sh again (seconds when only the code changed)" >&2
    exit 2
  fi
elif [ -n "$code_version" ]; then
  echo "note: $carry has no SOURCE.sha256 (prepared by an older prepare.sh): its CODE_VERSION is not recorded" >&2
  code_version=""
fi
mkdir -p "$out" "$grid_dir"
# The carried packages unpacked into a folder on PYTHONPATH (no pip needed): prepare.sh's site.tar.xz,
# or wheels (zip archives); the carried IDX files (.xz or .gz) decompressed into data/raw. Data already
# there (an earlier call on the same machine) is kept; `bladefl fetch --sources existing` verifies it.
python3 - "$carry" <<'EOF'
import glob, gzip, lzma, os, shutil, sys, tarfile, zipfile
carry = sys.argv[1]
for wheel in glob.glob(f"{carry}/wheels/*.whl"):
    zipfile.ZipFile(wheel).extractall(f"{carry}/site")
if os.path.exists(f"{carry}/site.tar.xz"):
    with tarfile.open(f"{carry}/site.tar.xz") as tar:
        tar.extractall(f"{carry}/site", filter="data")
for path in glob.glob(f"{carry}/data/*/raw/*.gz") + glob.glob(f"{carry}/data/*/raw/*.xz"):
    folder = os.path.join("data/raw", os.path.relpath(os.path.dirname(path), f"{carry}/data"))
    os.makedirs(folder, exist_ok=True)
    with (gzip.open if path.endswith(".gz") else lzma.open)(path) as src, \
            open(os.path.join(folder, os.path.basename(path)[:-3]), "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
# (a caller's PYTHONPATH is kept after them: the tests' import guard, scripts/gpu/import_guard)
export PYTHONPATH="$PWD/src:$PWD/$carry/site${PYTHONPATH:+:$PYTHONPATH}"
# The `bladefl` command the workflow's rules call (no pip install here to write it).
mkdir -p "$carry/bin"
printf '#!/bin/sh\nexec python3 -m bladefl.cli "$@"\n' >"$carry/bin/bladefl"
chmod +x "$carry/bin/bladefl"
export PATH="$PWD/$carry/bin:$PATH"
if [ -n "$code_version" ]; then
  export BLADEFL_CODE_VERSION="$code_version"
fi
started=$(date -u +%FT%TZ)
grid_s=""
grid_budget=0
finished=false
# What comes back of a run folder (no models; ledgers with LEDGERS=1), and the archive's ABOUT.json.
tables() {
  if [ "${LEDGERS:-0}" = 1 ]; then
    find "$1" \( -name rounds.csv -o -name summary.json -o -name detections.csv -o -name ABOUT.json \
      -o -path '*/chains/K*.json' \) -print0
  else
    find "$1" \( -name rounds.csv -o -name summary.json -o -name detections.csv -o -name ABOUT.json \) -print0
  fi
}
pack() {
  # The record's values reach Python as arguments, never as its code.
  python3 - "$grid_dir/ABOUT.json" "${DEVICE:-cuda}" "${BLADEFL_CODE_VERSION:-unknown}" "$mode" "$grid" \
    "${GRID_SEEDS:-all}" "$started" "${grid_s:-nan}" "$budget" "${grid_budget:-0}" "$finished" <<'EOF'
import json, os, subprocess, sys
path, device, code, mode, grid, seeds, started, grid_s, budget, grid_budget, finished = sys.argv[1:]
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip() or None
except OSError:
    gpu = None
about = {"gpu": gpu, "device": device, "code_version": code, "mode": mode, "grid": grid, "grid_seeds": seeds,
         "started": started, "grid_wall_s": float(grid_s or "nan"), "budget_s": int(budget),
         "grid_budget_s": int(grid_budget), "finished": finished == "true"}
if os.path.exists(path):  # a grid continued: the earlier calls' records kept
    earlier = json.load(open(path))
    about["earlier_calls"] = [*earlier.pop("earlier_calls", []), earlier]
json.dump(about, open(path, "w"), indent=1)
EOF
  # Members are named grid/<dataset>/<cell>/seed~<seed>/..., wherever GRID_DIR is.
  (cd "$grid_dir/.." && tables "$(basename "$grid_dir")" | tar cf - --null -T - \
    --transform "s|^$(basename "$grid_dir")/|grid/|") | xz -T0 -6 >"$out/grid-tables.tar.xz"
  # A file back from the GPU machine is at most 16 MiB (the 20-seed grid's tables: 16 MB as .tar.xz):
  # a larger archive comes back in parts of SPLIT_BYTES (default 15 MiB); `cat grid-tables.tar.xz.part-*
  # > grid-tables.tar.xz` joins them (docs/gpu.md).
  split_bytes=${SPLIT_BYTES:-15728640}
  if [ "$(stat -c %s "$out/grid-tables.tar.xz")" -gt "$split_bytes" ]; then
    split -b "$split_bytes" "$out/grid-tables.tar.xz" "$out/grid-tables.tar.xz.part-" && rm "$out/grid-tables.tar.xz"
  fi
  if [ "$grid_dir" = "$out/grid" ]; then rm -rf "$grid_dir"; fi
}
trap pack EXIT
python3 -m bladefl.cli fetch --dataset mnist --sources existing
python3 -m bladefl.cli fetch --dataset fashion_mnist --sources existing
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$out/gpu.txt"
fi
if [ "${CHECK:-1}" != 0 ]; then
  python3 -m bladefl.cli device-check --device "${DEVICE:-cuda}" --out "$out/check.csv" 2>&1 | tee "$out/check.txt" || true
fi
bench() {  # at most $1 seconds, and never fatal: the grid runs (or has run) whatever the bench did
  timeout --signal=INT "$1" python3 -m bladefl.cli bench --device "${DEVICE:-cuda}" --data-dir data/raw --host-copy-compare \
    ${SEEDS:+--seeds $SEEDS} 2>&1 | tee -a "$out/bench.txt" || echo "bench: failed or stopped (rc $?)" | tee -a "$out/bench.txt"
}
if [ "${BENCH:-1}" != 0 ] && [ "${BENCH_AT:-start}" = start ]; then
  bench "${BENCH_S:-240}"
fi
# The grid's deadline leaves the stop (GRACE_S after SIGINT, 5 s after SIGTERM) and the packing (30 s)
# inside the budget: scripts/gpu/deadline.py stops it whatever its jobs do (SECONDS: since the script started).
grace=${GRACE_S:-20}
grid_budget=$((budget - SECONDS - 30 - grace - 5))
if [ "$grid_budget" -lt 1 ]; then grid_budget=1; fi
t0=$(date +%s.%N)
rc=0
if [ "$mode" = snakemake ]; then
  # Exactly the documented command (docs/gpu.md), the runs only; greedy scheduling (PuLP is not carried).
  # The grid's config as Snakemake reads it (on top of config/config.yaml): its first N seeds, its engine.
  config_of_grid='import sys; from bladefl.experiments.plan.config_files import read_configs; c = read_configs([sys.argv[1]])'
  settings=()
  if [ -n "${GRID_SEEDS:-}" ]; then  # a part of the grid: config run_seeds (each run still a run of the whole grid)
    settings+=("run_seeds=$(python3 -c "$config_of_grid; import re; k = sys.argv[2]
print(','.join(map(str, c['seeds'][:int(k)])) if re.fullmatch('[0-9]+', k) else k)" "$grid" "$GRID_SEEDS")")
  fi
  if [ "${DEVICE:-cuda}" = cpu ]; then settings+=(gpu_profile_on_cpu=True); fi  # a dry run elsewhere
  if [ "${#settings[@]}" -gt 0 ]; then settings=(--config "${settings[@]}"); fi
  # A call stopped by its deadline leaves Snakemake's lock: the next call on the same machine unlocks it.
  python3 -m snakemake run_folders --profile profiles/gpu --configfile "$grid" "${settings[@]}" --unlock \
    >/dev/null 2>&1 || true
  python3 scripts/gpu/deadline.py "$grid_budget" "$grace" -- python3 -m snakemake run_folders --profile profiles/gpu \
    --configfile "$grid" --scheduler greedy "${settings[@]}" 2>&1 | tee -a "$out/bench.txt" || rc=$?
  # The finished run folders' tables, packed as the bench's are (the workflow writes <results_dir>/runs/<engine>,
  # each config its own results_dir: config/paper.yaml's is results/paper).
  engine=$(python3 -c "$config_of_grid; print(c.get('engine', 'paper'))" "$grid")
  results=$(python3 -c "$config_of_grid; print(c.get('results_dir', 'results'))" "$grid")
  folders=$(python3 -c "$config_of_grid; print(c.get('benchmarks_dir', 'benchmarks'), c.get('logs_dir', 'logs'))" "$grid")
  if [ -d "$results/runs/$engine" ]; then
    (cd "$results/runs/$engine" && tables . | tar cf - --null -T -) | tar xf - -C "$grid_dir"
  fi
  # Runs of finished groups not yet copied to their place (a workflow stopped between the two): each
  # run folder with its summary (written last), from the group folders (<results_dir>/groups/<engine>/<group>).
  for group in "$results"/groups/"$engine"/*/; do
    [ -d "$group" ] || continue
    (cd "$group" && find . -name summary.json -printf '%h\0' | while IFS= read -r -d '' run; do tables "$run"; done \
      | tar cf - --null -T -) | tar xf - -C "$grid_dir"
  done
  # Each job's wall and memory (Snakemake's benchmark files) and the groups' logs: where the wall went.
  read -r bench_dir logs_dir <<< "$folders"
  kept=()
  for folder in "$bench_dir" "$logs_dir/run_group"; do if [ -d "$folder" ]; then kept+=("$folder"); fi; done
  if [ "${#kept[@]}" -gt 0 ]; then tar cJf "$out/jobs.tar.xz" "${kept[@]}" 2>/dev/null || true; fi
else
  python3 scripts/gpu/deadline.py "$grid_budget" "$grace" -- python3 -m bladefl.cli bench --device "${DEVICE:-cuda}" \
    --data-dir data/raw --host-copy-compare --grid "$grid" --grid-only ${GRID_SEEDS:+--grid-seeds "$GRID_SEEDS"} \
    --out "$grid_dir" 2>&1 | tee -a "$out/bench.txt" || rc=$?
fi
grid_s=$(python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$t0")
if [ "$rc" = 0 ]; then finished=true; fi
echo "grid: ${grid_s} s wall, finished: $finished (rc $rc, the grid's budget ${grid_budget} s of ${budget} s)" | tee -a "$out/bench.txt"
left=$((budget - SECONDS - 30))  # what the grid left, less the packing's 30 s
if [ "$finished" = true ] && [ "${BENCH:-1}" != 0 ] && [ "${BENCH_AT:-start}" = end ] && [ "$left" -gt 20 ]; then
  bench "$((left < ${BENCH_S:-240} ? left : ${BENCH_S:-240}))"
fi
