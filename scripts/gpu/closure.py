"""What the GPU machine has, what scripts/gpu/prepare.sh carries to it, and the import names of both,
computed from the installed distributions of this environment (their requirement closure).

    closure.py snakemake --minus torch numpy     name==version lines: what the first set needs that a
                                                 machine with the second set lacks
    closure.py --carried [--no-workflow]         name==version lines: what prepare.sh carries (Snakemake's
                                                 closure less the machine's and PuLP's; cryptography's)
    closure.py --modules                         the top-level module names a job on the GPU machine can
                                                 import (the machine's packages, the carried ones, bladefl):
                                                 what scripts/gpu/import_guard allows (tests/test_gpu_script.py)
    closure.py --replica                         requirement lines of a replica of the machine's Python: its
                                                 packages, at the versions seen there where known
                                                 (scripts/gpu/rehearse.sh installs them into a Python 3.12)

The lists below are the one place that says what the GPU machine holds (docs/gpu.md)."""
import re
import sys
from importlib import metadata

MACHINE = ["torch", "numpy", "pandas", "pyyaml", "tqdm", "matplotlib", "scipy"]  # Python 3.12 there
# The versions seen there (the device tool's KINDS.md, 2026-11: Python 3.12.3, torch 2.11.0+cu130, numpy 2.5.2);
# the others were not read, and a replica takes the newest.
SEEN = {"torch": "2.11.0", "numpy": "2.5.2"}
CARRIED = ["cryptography"]  # the ledger's signatures (with its cffi and pycparser)
WORKFLOW = ["snakemake"]  # MODE=snakemake; SNAKEMAKE=0 leaves it out
LEFT_OUT = ["pulp"]  # Snakemake's ILP scheduler (30 MB): the script schedules greedily
OWN = ["bladefl"]  # this project's source (src/ on PYTHONPATH there)


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(names: list[str]) -> dict[str, str]:
    seen: dict[str, str] = {}
    todo = [norm(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency not installed here
        seen[name] = dist.version
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            marker = req.split(";", 1)[1] if ";" in req else ""
            if marker and "python_version" in marker:
                from packaging.markers import Marker
                if not Marker(marker).evaluate({"python_version": "3.12", "python_full_version": "3.12.0"}):
                    continue
            todo.append(norm(re.split(r"[ ;<>=!~\[(]", req, maxsplit=1)[0]))
    return seen


def carried(workflow: bool = True) -> dict[str, str]:
    """What prepare.sh carries: cryptography's closure and (``workflow``) Snakemake's, less what the
    machine has and what the script leaves out."""
    have = closure(MACHINE)
    want = {**closure(CARRIED), **(closure(WORKFLOW) if workflow else {})}
    left_out = {norm(n) for n in LEFT_OUT}
    return {n: v for n, v in want.items() if n not in have and n not in left_out}


def modules(names: list[str]) -> set[str]:
    """The top-level import names the distributions ``names`` provide."""
    wanted = {norm(n) for n in names}
    out = set()
    for module, dists in metadata.packages_distributions().items():
        if any(norm(d) in wanted for d in dists):
            out.add(module)
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if args in (["--carried"], ["--carried", "--no-workflow"]):
        for name, version in sorted(carried(workflow="--no-workflow" not in args).items()):
            print(f"{name}=={version}")
    elif args == ["--replica"]:
        print("\n".join(f"{n}=={SEEN[n]}" if n in SEEN else n for n in MACHINE))
    elif args == ["--modules"]:
        dists = [*closure(MACHINE), *carried()]
        print("\n".join(sorted(modules(dists) | set(OWN))))
    else:
        cut = args.index("--minus") if "--minus" in args else len(args)
        want, have = closure(args[:cut]), closure(args[cut + 1:])
        for name, version in sorted(want.items()):
            if name not in have:
                print(f"{name}=={version}")
