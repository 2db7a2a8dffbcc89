"""Compare two results folders of the same grid, before and after a change that must not alter them.

    python tests/compare_outputs.py BEFORE AFTER

Every CSV and JSON file of BEFORE (run folders, ledgers, tables, verdicts, the report's table
data) must exist in AFTER with the same content, apart from what measures the machine and not
the science: wall-clock seconds (any key or column whose name ends in ``seconds`` or is
``seconds``, and the ``wall`` breakdown inside it), provenance (code version, host, Python, torch,
SLURM job) and the report's run-time tables. Figures are compared through the tables their
notebooks write beside them. Files only in AFTER are listed (new outputs), not counted as a
difference. Exit 0 when identical, 1 with one line per difference.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

VOLATILE_KEYS = {"provenance", "code_version", "host", "python", "torch", "slurm_job_id", "seconds", "group"}
VOLATILE_COLUMNS = {"code_version", "host", "python", "torch", "slurm_job_id", "s", "h:m:s"}
SKIP_PARTS = {"logs", "benchmarks", ".snakemake"}


def _volatile(name: str) -> bool:
    return name in VOLATILE_KEYS or name.endswith("seconds")


def stable_json(value: object) -> object:
    """``value`` without the keys that measure the machine (recursively)."""
    if isinstance(value, dict):
        return {k: stable_json(v) for k, v in value.items() if not _volatile(str(k))}
    if isinstance(value, list):
        return [stable_json(v) for v in value]
    return value


def stable_csv(text: str) -> list[list[str]]:
    """A CSV's rows without its machine-measuring columns."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return rows
    keep = [i for i, name in enumerate(rows[0]) if name not in VOLATILE_COLUMNS and not _volatile(name)]
    return [[row[i] for i in keep if i < len(row)] for row in rows]


def content(path: Path) -> object:
    text = path.read_text()
    if path.suffix == ".json":
        try:
            return stable_json(json.loads(text))
        except json.JSONDecodeError:
            return text
    return stable_csv(text)


def compared(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.suffix in (".csv", ".json")
            and not SKIP_PARTS & set(p.relative_to(root).parts)}


def differences(before: Path, after: Path) -> tuple[list[str], list[str]]:
    """(one line per difference, the files only ``after`` has)."""
    old, new = compared(before), compared(after)
    lines = [f"missing after: {name}" for name in sorted(old - new)]
    for name in sorted(old & new):
        a, b = content(before / name), content(after / name)
        if a != b:
            lines.append(f"differs: {name}")
    return lines, sorted(new - old)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    before, after = map(Path, args)
    lines, added = differences(before, after)
    for line in lines:
        print(line)
    total = len(compared(before))
    print(f"{total - len(lines)} of {total} files identical" + (f"; {len(added)} new files" if added else ""))
    return 1 if lines else 0


if __name__ == "__main__":
    raise SystemExit(main())
