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
  # All or nothing, resumable: every dataset's journal and archives checked (regular files, not links; members
  # trials/<key>/.../seed~<s>/{rounds.csv,summary.json,detections.csv} only, bounded in size, none in place)
  # before a file is written; then staged in $cal/.restore and, once all is staged (its list written last),
  # moved in. A restore killed while moving is finished by the next (saying so); one killed while staging
  # starts again.
  python3 - "$cal" "$out" <<'EOF'
import json, os, re, shutil, stat, sys, tarfile
from pathlib import Path

cal, out = Path(sys.argv[1]), Path(sys.argv[2])
stage, listed = cal / ".restore", cal / ".restore" / "LIST.json"
MEMBER = re.compile(r"trials/[A-Za-z0-9._~=+,-]+(/[A-Za-z0-9._~=+,-]+)*/seed~\d+/(rounds\.csv|summary\.json|detections\.csv)")
FOLDER = re.compile(r"trials(/[A-Za-z0-9._~=+,-]+)*")
MAX_MEMBER, MAX_TOTAL = 16 << 20, 512 << 20  # the 2-core study's tables: about 26 MB in 2,014 files


def refuse(text, why="; nothing restored"):
    print(f"{text}{why}", file=sys.stderr)
    sys.exit(2)


def regular(path):
    try:
        info = os.lstat(path)
    except OSError as exc:
        refuse(f"{path}: cannot read it ({exc.strerror})")
    if not stat.S_ISREG(info.st_mode):
        refuse(f"{path}: not a regular file (a link, a FIFO or a folder)")
    return info.st_size


def checked():
    """{target file: (archive, member) or journal path} of every dataset, or refuse."""
    plan, total = {}, 0
    for folder in sorted(p for p in out.iterdir() if not p.name.startswith(".") and p.name != "ABOUT.json"):
        if folder.is_symlink() or not folder.is_dir() or not re.fullmatch(r"[a-z0-9_]+", folder.name):
            refuse(f"{folder}: not a dataset's folder")
        target = cal / folder.name
        if os.path.lexists(target / "study.journal"):
            refuse(f"{target / 'study.journal'} exists: not replaced", "")
        total += regular(folder / "study.journal")
        for archive in sorted(folder.glob("trials-*.tar.xz")):
            regular(archive)
            with tarfile.open(archive, "r:xz") as tar:
                for m in tar.getmembers():
                    if m.isdir() and FOLDER.fullmatch(m.name.rstrip("/")) and ".." not in m.name.split("/"):
                        continue
                    to = target / m.name
                    if (not m.isfile() or not MEMBER.fullmatch(m.name) or ".." in m.name.split("/")
                            or os.path.lexists(to) or m.size > MAX_MEMBER):
                        refuse(f"{archive}: {m.name!r}: not a trial run's table (at most {MAX_MEMBER} bytes), or "
                               "one already in place")
                    if str(to) in plan:
                        refuse(f"{to}: a table packed twice")
                    total += m.size
                    if total > MAX_TOTAL:
                        refuse(f"{out}: the tables hold over {MAX_TOTAL} bytes")
                    plan[str(to)] = [str(archive), m.name]
        plan[str(target / "study.journal")] = str(folder / "study.journal")  # after its tables
    return plan


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


for part in (cal, *cal.parents):  # the results folder reached through no link a restore would write through
    if part.is_symlink():
        refuse(f"{part}: a link")
if os.path.lexists(stage) and (stage.is_symlink() or not stage.is_dir()):
    refuse(f"{stage}: not a restore's own staging folder")
resumed = listed.is_file()
if not resumed:
    shutil.rmtree(stage, ignore_errors=True)  # a restore killed while staging: staged again from the start
    plan = checked()
    stage.mkdir(parents=True)
    for to, source in plan.items():
        staged = stage / Path(to).relative_to(cal)  # the stage laid out as the target
        if isinstance(source, list):
            with tarfile.open(source[0], "r:xz") as tar:
                write(staged, tar.extractfile(source[1]).read())
        else:
            write(staged, Path(source).read_bytes())
    names = sorted((str(Path(t).relative_to(cal)) for t in plan), key=lambda t: t.endswith("/study.journal"))
    write(stage / "LIST.part", json.dumps(names).encode())
    os.replace(stage / "LIST.part", listed)  # staged whole: from here a rerun finishes the move
targets = json.loads(regular(listed) and listed.read_text())
if not isinstance(targets, list) or not all(isinstance(t, str) and (
        re.fullmatch(r"[a-z0-9_]+/study\.journal", t) or re.fullmatch(r"[a-z0-9_]+/" + MEMBER.pattern, t))
        and ".." not in t.split("/") for t in targets):
    refuse(f"{listed}: not a restore's list")
for name in targets:  # each dataset's journal last: a study resumes only once all its tables are in
    if (stage / name).is_file():
        (cal / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / name, cal / name)
shutil.rmtree(stage)
journals = sum(t.endswith("/study.journal") for t in targets)
print(f"{cal}: {'a restore cut short, finished: ' if resumed else ''}{len(targets) - journals} trial run tables "
      f"restored, {journals} journals")
EOF
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
