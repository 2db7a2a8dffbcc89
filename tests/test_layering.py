"""The library's wings import only from themselves and the wings below them:

    core < data < chain < fl < theory < experiments < report < entry points (cli, bench)

and inside ``experiments`` its sub-wings the same way:

    plan < runs < tables < verdicts < calibration < bundles

A lower wing (or sub-wing) importing a higher one (at module level or inside a function) is a
failure."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import HANG_S, REPO

WINGS = ("core", "data", "chain", "fl", "theory", "experiments", "report")
ENTRY_POINTS = ("cli", "bench", "__main__")  # cli: a package, one module per command group
SUB_WINGS = {"experiments": ("plan", "runs", "tables", "verdicts", "calibration", "bundles")}


def rank(module: str) -> tuple[int, int] | None:
    """Position of a ``bladefl`` module in the layering, (wing, sub-wing); None outside the
    package. A wing's own ``__init__`` sits below its sub-wings (-1)."""
    parts = module.split(".")
    if parts[0] != "bladefl":
        return None
    if len(parts) == 1 or (parts[1].startswith("__") and parts[1] not in ENTRY_POINTS):
        return (-1, -1)  # the package root (its __version__) sits below everything
    if parts[1] not in WINGS:
        return (len(WINGS), -1)
    subs = SUB_WINGS.get(parts[1], ())
    sub = subs.index(parts[2]) if len(parts) > 2 and parts[2] in subs else -1
    return (WINGS.index(parts[1]), sub)


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module) of every import, relative ones resolved; ``from pkg import name``
    counts as importing ``pkg.name`` (it may be a module)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def violations(src: Path) -> list[str]:
    bad = []
    for path in sorted((src / "bladefl").rglob("*.py")):
        module = module_name(path, src)
        own = rank(module)
        tree = ast.parse(path.read_text(), filename=str(path))
        for line, target in imported_modules(tree, module, path.name == "__init__.py"):
            theirs = rank(target)
            if theirs is not None and theirs > own:
                bad.append(f"{path.relative_to(src)}:{line}: {module} imports {target} from a higher wing")
    return bad


def test_no_module_imports_from_a_wing_above_it():
    assert violations(REPO / "src") == []


def test_every_module_lives_in_a_wing_or_is_an_entry_point():
    package = REPO / "src" / "bladefl"
    top = {p.stem for p in package.glob("*.py")} - {"__init__"}
    assert top <= set(ENTRY_POINTS), top - set(ENTRY_POINTS)
    folders = {p.name for p in package.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert folders == set(WINGS) | {"cli"}


def test_every_experiments_module_lives_in_a_sub_wing_with_a_docstring():
    for wing, subs in SUB_WINGS.items():
        folder = REPO / "src" / "bladefl" / wing
        assert {p.stem for p in folder.glob("*.py")} == {"__init__"}
        found = {p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("__")}
        assert found == set(subs)
        for sub in subs:
            doc = ast.get_docstring(ast.parse((folder / sub / "__init__.py").read_text()))
            assert doc and len(doc) > 80, f"{wing}/{sub}/__init__.py says nothing of what it owns"


def test_the_check_catches_a_lower_wing_importing_a_higher_one(tmp_path):
    pkg = tmp_path / "bladefl"
    for wing in ("data", "report", "fl"):
        (pkg / wing).mkdir(parents=True)
        (pkg / wing / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "report" / "plots.py").write_text("x = 1\n")
    (pkg / "fl" / "engine.py").write_text("from bladefl.data import x\n")  # downward: fine
    (pkg / "data" / "absolute.py").write_text("from bladefl.report import plots\n")
    (pkg / "data" / "relative.py").write_text("def f():\n    from ..report.plots import x\n")
    (pkg / "data" / "plain.py").write_text("import bladefl.fl.engine\n")
    found = violations(tmp_path)
    assert len(found) == 3, found
    assert any("data.absolute imports bladefl.report.plots" in v for v in found)
    assert any("data.relative imports bladefl.report.plots.x" in v for v in found)
    assert any("data.plain imports bladefl.fl.engine" in v for v in found)


def test_the_check_catches_a_sub_wing_importing_a_later_one(tmp_path):
    pkg = tmp_path / "bladefl"
    for folder in ("experiments/plan", "experiments/tables", "experiments/bundles", "theory"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "experiments" / "__init__.py").write_text("")
    (pkg / "experiments" / "plan" / "grid.py").write_text("from bladefl.experiments.tables import tidy\n")
    (pkg / "experiments" / "tables" / "tidy.py").write_text("from bladefl.experiments.plan import grid\n")
    (pkg / "experiments" / "bundles" / "keep.py").write_text("from ..tables import tidy\n")
    (pkg / "theory" / "scan.py").write_text("from bladefl.experiments.plan import grid\n")
    found = violations(tmp_path)
    assert len(found) == 2, found
    assert any("experiments.plan.grid imports bladefl.experiments.tables.tidy" in v for v in found)
    assert any("theory.scan imports bladefl.experiments.plan.grid" in v for v in found)


def test_what_reads_the_grids_tables_loads_no_torch():
    """Every module of the plan, tables, verdicts, bundles and report (sub-)wings imports without
    loading torch: `bladefl verdicts`, `summarize`, `detection`, `report-index` and the report's pages
    start in a fraction of the time (torch is loaded only where a run is computed or analysed
    against its model)."""
    import pkgutil
    import subprocess
    import sys

    import bladefl.experiments.bundles
    import bladefl.experiments.plan
    import bladefl.experiments.tables
    import bladefl.experiments.verdicts
    import bladefl.report

    modules = [f"{pkg.__name__}.{m.name}" for pkg in (bladefl.experiments.plan, bladefl.experiments.tables,
                                                      bladefl.experiments.verdicts, bladefl.experiments.bundles,
                                                      bladefl.report)
               for m in pkgutil.iter_modules(pkg.__path__)]
    assert len(modules) > 30
    code = ("import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
            "    assert 'torch' not in sys.modules, m\n")
    proc = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-1000:]


def import_graph() -> dict[str, set[str]]:
    """Every module of the package and the modules of it that it imports, at any level (a function's own
    imports too: a circle broken only by importing late is still a circle of design)."""
    import ast

    root = Path(__file__).resolve().parents[1] / "src"
    modules = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets = ([f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                        for a in node.names] if isinstance(node, ast.ImportFrom) and node.module else
                       [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            graph[name] |= {t for t in targets if t in modules and t != name and not name.startswith(f"{t}.")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_through_others():
    """No import circle, a function's own imports counted (report.bundle_design and report.front_page once
    imported each other)."""
    assert circles(import_graph()) == []
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
