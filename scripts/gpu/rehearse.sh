#!/usr/bin/env bash
# The GPU machine's call rehearsed here, on the CPU, in a replica of that machine's software
# (docs/gpu.md, "A rehearsal in a replica of the machine's Python"):
#   1. a Python 3.12 virtual environment (PY312, default python3.12) holding only the machine's packages,
#      at the versions seen there where known (scripts/gpu/closure.py --replica: torch 2.11.0, numpy 2.5.2,
#      the newest pandas, pyyaml, tqdm, matplotlib and scipy), in REPLICA (default build/gpu-replica; made
#      once from the package registry, about 5 GB: torch's wheel and its CUDA libraries);
#   2. prepare.sh's carry for Python 3.12 (gpu_carry: its packages and data kept when up to date, the
#      code's record written anew);
#   3. the checkout as the device tool sends it (tracked and untracked files that git does not ignore, and
#      gpu_carry) copied to a folder of its own: no results, no data, no virtual environment;
#   4. there, with the replica's python3 first on PATH and nothing on PYTHONPATH:
#      a. the smoke grid through the Snakemake call, with the device check and the bench's start
#         (MODE=snakemake DEVICE=cpu GRID=config/smoke.yaml SEEDS=1), to its end;
#      b. the one call of docs/gpu.md as typed there (MODE=snakemake CHECK=0 BENCH=0 GRID_SEEDS=0-9 on
#         config/paper.yaml), on the CPU with a short budget (PAPER_BUDGET_S, default 150 s): it parses and
#         plans the paper's grid, starts its first jobs, is stopped by its deadline and packs;
#   5. back in this project's environment, in the copy: the smoke grid's archive imported into a results
#      folder of its own, its partitions made here (what `make import-runs` does);
#   6. the same smoke grid run here in this environment, compared run by run and K by K with the replica's
#      (status, block tips, the largest differences of accuracy and losses, the device check's tolerances).
# Writes build/rehearsal/ (REHEARSAL): smoke/ and paper/ (what $OUT holds after each call), their logs,
# and summary.txt; exits 1 naming the first check that failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
# Every value given is checked before any use: paths and programs by pattern, counts and seconds as numbers.
for name in PY312 REPLICA REHEARSAL PYTHON; do
  value=${!name:-}
  if [ -n "$value" ] && ! [[ "$value" =~ ^[A-Za-z0-9._/+-]+$ ]]; then
    echo "$name: a path of letters, digits and . _ / + -, got '$value'" >&2
    exit 2
  fi
done
for name in CORES PAPER_BUDGET_S; do
  value=${!name:-}
  if [ -n "$value" ] && ! [[ "$value" =~ ^[1-9][0-9]{0,5}$ ]] && ! [ "$name.$value" = CORES.all ]; then
    echo "$name: a whole number 1..999999 (CORES: or all), got '$value'" >&2
    exit 2
  fi
done
py312=${PY312:-python3.12}
replica=${REPLICA:-build/gpu-replica}
where=${REHEARSAL:-build/rehearsal}
python=${PYTHON:-.venv/bin/python}
fail() { echo "rehearsal: $*" >&2; exit 1; }
step() { echo "rehearsal: $(date -u +%T) $*" >&2; }
# Both folders are removed and made again only through the guard of destructive steps
# (bladefl.core.owned): absent, empty, or one this script made and marked (.bladefl-owner).
guard() { "$python" -m bladefl.core.owned "$@" || fail "$3: not a folder this script made (above); nothing removed"; }
guard check rehearsal "$where"

# 1. The replica of the machine's Python (kept between rehearsals; made again when its pins change).
step "1/6 the replica of the GPU machine's Python ($replica)"
pins=$("$python" scripts/gpu/closure.py --replica)
if [ ! -x "$replica/bin/python3" ] || [ "$(cat "$replica/PINS" 2>/dev/null)" != "$pins" ]; then
  guard fresh rehearsal-replica "$replica"
  "$py312" -m venv "$replica"
  # shellcheck disable=SC2086 # one requirement a word
  "$replica/bin/python3" -m pip install -q --disable-pip-version-check $pins
  printf '%s\n' "$pins" >"$replica/PINS"
fi
"$replica/bin/python3" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' \
  || fail "$replica is not a Python 3.12 (PY312=$py312)"
# 2. The carry, for the machine's Python 3.12.
step "2/6 the carry (scripts/gpu/prepare.sh)"
PY_VERSION=3.12 PYTHON="$python" scripts/gpu/prepare.sh gpu_carry >/dev/null
# 3. The checkout as it travels.
step "3/6 the checkout as the device tool sends it ($where/checkout)"
guard fresh rehearsal "$where"
mkdir "$where/checkout"
git ls-files -z --cached --others --exclude-standard | tar cf - --null -T - | tar xf - -C "$where/checkout"
cp -r gpu_carry "$where/checkout/gpu_carry"
work=$(cd "$where/checkout" && pwd)
out=$(cd "$where" && pwd)
# 4. The calls, in the replica alone.
step "4/6 the smoke call, then the paper call (about 3 minutes; logs in $where)"
replica_env=(env -u PYTHONPATH -u VIRTUAL_ENV PATH="$(cd "$replica" && pwd)/bin:$PATH")
(cd "$work" && "${replica_env[@]}" OUT="$out/smoke" MODE=snakemake DEVICE=cpu GRID=config/smoke.yaml SEEDS=1 \
  BENCH_S=300 BUDGET_S=1500 bash scripts/gpu/run.sh) >"$out/smoke.log" 2>&1 || fail "the smoke call failed: $out/smoke.log"
(cd "$work" && "${replica_env[@]}" OUT="$out/paper" DEVICE=cpu MODE=snakemake CHECK=0 BENCH=0 \
  BUDGET_S="${PAPER_BUDGET_S:-150}" GRID_SEEDS=0-9 bash scripts/gpu/run.sh) >"$out/paper.log" 2>&1 \
  || fail "the paper call failed: $out/paper.log"
# 5. The smoke grid's archive imported here.
step "5/6 the smoke grid's archive imported here"
bin=$(cd "$(dirname "$python")" && pwd)
(cd "$work" && "$bin/snakemake" run_inputs --cores "${CORES:-2}" --configfile config/smoke.yaml \
  --config results_dir=results-imported && "$bin/bladefl" import-runs --archive "$out/smoke/grid-tables.tar.xz" \
  --configfile config/config.yaml config/smoke.yaml --results-dir results-imported) >"$out/import.log" 2>&1 \
  || fail "the smoke grid's archive did not import: $out/import.log"
# 6. The same smoke grid run here, in this environment (its Python and torch), one job per run: compared
#    below run by run with the replica's.
step "6/6 the smoke grid run here, to compare"
(cd "$work" && "$bin/snakemake" run_folders --cores "${CORES:-2}" --configfile config/smoke.yaml \
  --config results_dir=results-here) >"$out/here.log" 2>&1 || fail "the smoke grid did not run here: $out/here.log"
# What each call says of itself, and what a reader checks.
"$python" - "$out" "$replica" <<'EOF'
import json, re, subprocess, sys, tarfile
from pathlib import Path

out, replica = Path(sys.argv[1]), sys.argv[2]
versions = subprocess.run([f"{replica}/bin/python3", "-c", "import sys, torch, numpy, pandas, scipy, matplotlib; "
                           "print(sys.version.split()[0], torch.__version__, numpy.__version__, pandas.__version__, "
                           "scipy.__version__, matplotlib.__version__)"], capture_output=True, text=True,
                          check=True).stdout.split()
lines = ["the replica: Python {}, torch {}, numpy {}, pandas {}, scipy {}, matplotlib {}".format(*versions)]
problems = []
for call in ("smoke", "paper"):
    log = (out / f"{call}.log").read_text(errors="replace")
    # What a stop interrupts ends in KeyboardInterrupt (the deadline's SIGINT, the bench's time limit);
    # nothing else may fail.
    if log.count("\nTraceback (most recent call last)") > log.count("\nKeyboardInterrupt"):
        problems.append(f"{call}: a traceback other than a stop's in {call}.log")
    if "bench: failed or stopped" in log:
        lines.append(f"{call}: the bench was stopped by its time limit (BENCH_S)")
    with tarfile.open(out / call / "grid-tables.tar.xz") as tar:
        names = tar.getnames()
        about = json.load(tar.extractfile("grid/ABOUT.json"))
    runs = sum(n.endswith("/summary.json") for n in names)
    lines.append(f"{call}: {about['grid']} seeds {about['grid_seeds']}, {runs} runs packed, grid "
                 f"{about['grid_wall_s']} s, finished {about['finished']}")
    if call == "smoke" and (not about["finished"] or runs == 0):
        problems.append("smoke: the grid did not finish")
    if about["code_version"] != (out / "checkout/gpu_carry/CODE_VERSION").read_text().strip():
        problems.append(f"{call}: the code version packed is not the carry's ({about['code_version']})")
    if call == "paper":
        if "Job stats:" not in log:
            problems.append("paper: Snakemake did not plan the paper's grid")
        if "deadline: " not in log:
            problems.append("paper: the deadline did not stop the grid")
        if about["finished"]:
            problems.append("paper: a 2-core CPU finished the paper grid in the budget? (a stop was expected)")
check = (out / "smoke/check.txt").read_text()
lines.append("device check: " + (check.strip().splitlines() or ["(empty)"])[-1])
every = re.search(r" (\d+) of (\d+) runs within", check)  # the mixed group in both modes, every run
if not every or every.group(1) != every.group(2):
    problems.append("smoke: the device check did not pass every run of its mixed group")
lines.append("import: " + (out / "import.log").read_text().strip().splitlines()[-1])
# The replica's runs against this environment's, run by run and K by K (the device check's tolerances).
there = {p.relative_to(out / "checkout/results-imported"): p
         for p in (out / "checkout/results-imported/runs").rglob("summary.json")}
diffs = {"test_accuracy": 0.0, "test_loss": 0.0, "train_loss": 0.0}
same_tips = same_status = compared = 0
for rel, path in sorted(there.items()):
    a, b = json.loads(path.read_text())["per_K"], json.loads((out / "checkout/results-here" / rel).read_text())["per_K"]
    for x, y in zip(a, b, strict=True):
        compared += 1
        same_status += x["status"] == y["status"] and x["K"] == y["K"]
        same_tips += x.get("tip") == y.get("tip")
        for key in diffs:
            if x.get(key) is not None and y.get(key) is not None:
                diffs[key] = max(diffs[key], abs(x[key] - y[key]))
here_versions = subprocess.run([sys.executable, "-c", "import sys, torch; print(sys.version.split()[0], torch.__version__)"],
                               capture_output=True, text=True, check=True).stdout.split()
lines.append(f"replica against here (Python {here_versions[0]}, torch {here_versions[1]}): {len(there)} runs, "
             f"{compared} run x K, status identical in {same_status}, block tips identical in {same_tips}, largest "
             "differences " + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()))
if not there or same_status < compared or diffs["test_accuracy"] > 0.01 or max(diffs["test_loss"], diffs["train_loss"]) > 1e-3:
    problems.append("the replica's runs differ from this environment's beyond the device check's tolerances")
(out / "summary.txt").write_text("\n".join(lines + [f"PROBLEM {p}" for p in problems]) + "\n")
print("\n".join(lines))
for p in problems:
    print(f"rehearsal: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
