"""The installed distributions a set of packages needs (their requirement closure in this
environment), less those of another set: what a machine that has the second set lacks.
Prints name==version lines. Usage: closure.py snakemake --minus torch numpy pandas"""
import re
import sys
from importlib import metadata


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


if __name__ == "__main__":
    args = sys.argv[1:]
    cut = args.index("--minus") if "--minus" in args else len(args)
    want, have = closure(args[:cut]), closure(args[cut + 1:])
    for name, version in sorted(want.items()):
        if name not in have:
            print(f"{name}=={version}")
