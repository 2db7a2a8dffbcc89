#!/usr/bin/env bash
# The calibration study across machines (docs/calibration.md, "Across machines"): its progress packed into
# the repository as it goes, so that a later machine, at the same commit, resumes it where this one stopped.
#
#   scripts/calibration_part.sh pack      # the journals and the trials' finished runs not packed yet, into $OUT
#   scripts/calibration_part.sh restore   # in a fresh clone at that commit, before snakemake: back into place
#
# CONFIG (default "config/calibration.yaml config/calibration_cpu.yaml": the 2-core study), OUT (default
# reference/runs/calibration-cpu). $OUT/ABOUT.json names the code the study runs: pack and restore refuse
# other code, or a tree with uncommitted changes, so every run of the study comes from one commit. Per
# dataset, $OUT/<dataset>/ holds study.journal (Optuna's journal, text, replaced by each pack; a trial still
# running in it is asked again on resume, its finished runs reused), trials-<n>.tar.xz (the tables, rounds.csv,
# summary.json and detections.csv, of the trial run folders finished since the last pack) and packed.txt
# (those folders, one a line). A pack is written beside its place and renamed in: never half-written.
set -euo pipefail
export LC_ALL=C  # one collation for sort and comm
shopt -s nullglob  # a dataset with no trial archive yet restores its journal alone
usage() { echo "usage: scripts/calibration_part.sh pack|restore  (CONFIG, OUT: see the script's head)" >&2; exit 2; }
[ "$#" -eq 1 ] || usage
case "$1" in pack | restore) ;; *) usage ;; esac
for name in CONFIG OUT; do  # paths (CONFIG: several, separated by spaces): checked before any use
  value=${!name:-}
  if [ -n "$value" ] && ! [[ "$value" =~ ^[A-Za-z0-9._/+\ -]+$ ]]; then
    echo "$name: paths of letters, digits and . _ / + - (CONFIG: separated by spaces), got '$value'" >&2
    exit 2
  fi
done
read -ra configs <<< "${CONFIG:-config/calibration.yaml config/calibration_cpu.yaml}"
out=$(realpath -m "${OUT:-reference/runs/calibration-cpu}")
results=$(python3 -c '
import sys
from bladefl.experiments.plan.config_files import read_configs
try:
    print(read_configs(sys.argv[1:]).get("results_dir", "results"))
except Exception as exc:  # one line, whatever the config holds
    sys.exit(f"CONFIG: {exc}")' "${configs[@]}") || exit 2
cal="$results/calibration"
code=$(git describe --always --dirty --tags 2>/dev/null || echo unknown)
case "$code" in *-dirty | unknown) echo "code $code: the study runs from one clean commit (commit first)" >&2; exit 2 ;; esac
if [ -f "$out/ABOUT.json" ]; then
  kept=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["code_version"])' "$out/ABOUT.json")
  [ "$kept" = "$code" ] || { echo "$out holds a study of code $kept, this clone is $code (check out $kept)" >&2; exit 2; }
fi

if [ "$1" = restore ]; then
  [ -f "$out/ABOUT.json" ] || { echo "$out: nothing packed to restore" >&2; exit 2; }
  for dir in "$out"/*/; do
    dataset=$(basename "$dir")
    case "$dataset" in *[!a-z0-9_]*) echo "$dir: not a dataset's folder" >&2; exit 2 ;; esac
    [ -e "$cal/$dataset/study.journal" ] && { echo "$cal/$dataset/study.journal exists: not replaced" >&2; exit 2; }
    mkdir -p "$cal/$dataset"
    # Members trials/<key>/.../seed~<s>/{rounds.csv,summary.json,detections.csv} only, regular files, none
    # existing: anything else refuses the whole restore of the dataset before a file is written.
    python3 - "$cal/$dataset" "$dir"trials-*.tar.xz <<'EOF'
import re, sys, tarfile
from pathlib import Path
target, archives = Path(sys.argv[1]), sys.argv[2:]
name = re.compile(r"trials/[A-Za-z0-9._~=+,-]+(/[A-Za-z0-9._~=+,-]+)*/seed~\d+/(rounds\.csv|summary\.json|detections\.csv)")
members = []
for archive in archives:
    with tarfile.open(archive, "r:xz") as tar:
        for m in tar.getmembers():
            if m.isdir():
                continue
            if not m.isfile() or not name.fullmatch(m.name) or ".." in m.name.split("/") or (target / m.name).exists():
                sys.exit(f"{archive}: {m.name!r}: not a trial run's table, or one already in place; nothing restored")
            members.append(m.name)
if len(members) != len(set(members)):
    sys.exit(f"{target}: a table packed twice; nothing restored")
for archive in archives:
    with tarfile.open(archive, "r:xz") as tar:
        tar.extractall(target, filter="data")
print(f"{target}: {len(members)} trial run tables restored")
EOF
    cp "$dir/study.journal" "$cal/$dataset/study.journal.restoring"
    mv "$cal/$dataset/study.journal.restoring" "$cal/$dataset/study.journal"
  done
  exit 0
fi

mkdir -p "$out"
[ -f "$out/ABOUT.json" ] || python3 - "$out/ABOUT.json" "$code" "${configs[*]}" <<'EOF'
import json, os, platform, sys
path, code, config = sys.argv[1:4]
json.dump({"code_version": code, "config": config, "machine": f"{os.cpu_count()} CPUs, {platform.machine()}"},
          open(path, "w"), indent=1)
EOF
for dir in "$cal"/*/; do
  [ -f "$dir/study.journal" ] || continue
  dataset=$(basename "$dir")
  mkdir -p "$out/$dataset"
  touch "$out/$dataset/packed.txt"
  stage=$(mktemp -d "$out/.stage.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  cp "$dir/study.journal" "$stage/study.journal"  # first: a run finished after it is packed next time
  # A finished run folder: its summary.json (written last); the ones packed before left out.
  : > "$stage/new.txt"
  if [ -d "$dir/trials" ]; then
    (cd "$dir" && find trials -name summary.json -printf '%h\n' | sort) \
      | comm -23 - <(sort "$out/$dataset/packed.txt") > "$stage/new.txt"
  fi
  if [ -s "$stage/new.txt" ]; then
    n=$(find "$out/$dataset" -maxdepth 1 -name 'trials-*.tar.xz' | wc -l)
    archive=$(printf 'trials-%03d.tar.xz' "$((n + 1))")
    (cd "$dir" && while read -r run; do
      for f in rounds.csv summary.json detections.csv; do if [ -f "$run/$f" ]; then printf '%s\0' "$run/$f"; fi; done
    done < "$stage/new.txt" | tar cf - --null -T -) | xz -6 > "$stage/$archive"
    mv "$stage/$archive" "$out/$dataset/$archive"
    sort -m "$out/$dataset/packed.txt" "$stage/new.txt" > "$stage/packed.txt"
    mv "$stage/packed.txt" "$out/$dataset/packed.txt"
  fi
  mv "$stage/study.journal" "$out/$dataset/study.journal"
  echo "$(date -u +%FT%TZ) $dataset: $(wc -l < "$stage/new.txt") runs packed, $(wc -l < "$out/$dataset/packed.txt") in all"
  rm -rf "$stage"
  trap - EXIT
done
