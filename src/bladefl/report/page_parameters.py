"""A report page's parameters, checked before its notebook runs.

papermill writes each parameter into the notebook as ``name = value`` source code, so a parameter
file is code: a key such as ``x = 1; open(...)`` would run. A page therefore takes only the
parameters its notebook declares (the names of its ``parameters`` cell, each with the type of its
default: a dataset name, a path, a list of paths), every path inside the run's results or data
folder (the output folders inside the results folder), from a YAML file of at most
:data:`MAX_BYTES` with no aliases and no tags. Anything else is one :class:`ParameterError` naming
the key, before any kernel starts."""

from __future__ import annotations

import ast
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from bladefl.core import strict_yaml
from bladefl.core.errors import BladeflError
from bladefl.data.datasets import SPECS

MAX_BYTES = 1 << 20
MAX_NOTEBOOK_BYTES = 64 << 20  # a report notebook before it runs (the executed one: page_html.read_notebook)
OUTPUT_FOLDERS = ("figures_dir", "tables_dir")  # written by the page: inside the results folder only


class ParameterError(BladeflError):
    """A page parameter file that may not run."""


def declared(notebook: str | os.PathLike[str]) -> dict[str, str]:
    """The notebook's parameters (its cell tagged ``parameters``), each as ``dataset``, ``path``
    (a string default) or ``paths`` (a list default). The notebook is read as hostile (a regular file
    of at most :data:`MAX_NOTEBOOK_BYTES` that nbformat validates, a parameters cell that parses):
    :class:`ParameterError` naming it otherwise, before any kernel starts."""
    import nbformat

    from bladefl.core.bounded_read import read_regular

    try:
        text = read_regular(Path(notebook), MAX_NOTEBOOK_BYTES, "notebook").decode("utf-8")
        node = nbformat.reads(text, as_version=4)
        nbformat.validate(node)
        source = next(("".join(c.source) for c in node.cells if "parameters" in c.get("metadata", {}).get("tags", [])),
                      "")
        body = ast.parse(source).body
    except (OSError, UnicodeDecodeError, ValueError, TypeError, AttributeError, KeyError, SyntaxError, RecursionError,
            nbformat.ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ParameterError(f"{notebook}: not a notebook whose parameters can be read ({first[:200]})") from None
    kinds = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, default = stmt.targets[0].id, stmt.value
            kinds[name] = "dataset" if name == "dataset" else "paths" if isinstance(default, ast.List) else "path"
    return kinds


def _plain_yaml(text: str, where: str) -> Any:
    """``text`` read as YAML with neither aliases (an alias bomb expands without end) nor tags, nor
    nesting past :data:`bladefl.core.strict_yaml.MAX_DEPTH` (checked first: the parser is slow in depth)."""
    if strict_yaml.nesting_depth(text) > strict_yaml.MAX_DEPTH:
        raise ParameterError(f"{where}: nested deeper than {strict_yaml.MAX_DEPTH} levels")
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise ParameterError(f"{where}: YAML anchors and aliases are not allowed")
            tag = getattr(event, "tag", None)
            if tag is not None and not (isinstance(event, yaml.ScalarEvent) and tag == "!"):
                raise ParameterError(f"{where}: YAML tags are not allowed (got {tag!r})")
        return strict_yaml.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise ParameterError(f"{where}: not valid YAML{at}: {getattr(exc, 'problem', None) or 'unreadable'}") from None
    except strict_yaml.DuplicateKeyError as exc:
        raise ParameterError(f"{where}: {exc}") from None
    except TypeError:  # an unhashable key (a list or mapping as a key)
        raise ParameterError(f"{where}: every key must be a parameter name") from None


def _inside(value: str, roots: list[Path]) -> bool:
    real = Path(os.path.realpath(value))
    return any(real == root or root in real.parents for root in roots)


def page_folders(values: Mapping[str, Any], page: str, results: Path, where: str) -> dict[str, str]:
    """The page's own output folders, resolved: ``<results>/figures/<dataset>/<page>`` and
    ``<results>/tables/<dataset>/<page>`` and nothing else (another folder of the results, such as
    ``results/bound/mnist``, holds files other steps read); null refused."""
    out = {}
    for key, kind in (("figures_dir", "figures"), ("tables_dir", "tables")):
        if key not in values:
            continue
        value, own = values[key], results / kind / str(values.get("dataset")) / page
        if not isinstance(value, str) or Path(os.path.realpath(value)) != own:
            raise ParameterError(f"{where}: {key} must be the page's own folder <results>/{kind}/<dataset>/{page} "
                                 f"(got {str(value)[:80]!r})")
        out[key] = str(own)
    return out


def check(values: Any, kinds: Mapping[str, str], results_dir: str | os.PathLike[str],
          data_dir: str | os.PathLike[str], where: str = "--parameters", page: str | None = None) -> dict[str, Any]:
    """``values`` as the page may run them, or :class:`ParameterError` naming the first bad key; with
    ``page`` (the notebook's name) its output folders must be its own, and are given resolved (every
    write re-checks that no link has since appeared on their way: :func:`bladefl.core.atomic.plain_folder`)."""
    if not isinstance(values, dict):
        raise ParameterError(f"{where}: a mapping of parameter names to values, not {type(values).__name__}")
    results, data = (Path(os.path.realpath(p)) for p in (results_dir, data_dir))
    for key, value in values.items():
        if not isinstance(key, str) or key not in kinds:
            raise ParameterError(f"{where}: unknown parameter {str(key)[:80]!r} (allowed: {sorted(kinds)})")
        kind, roots = kinds[key], [results] if key in OUTPUT_FOLDERS else [results, data]
        folders = "the results folder" if key in OUTPUT_FOLDERS else "the results or data folder"
        if kind == "dataset" and not (isinstance(value, str) and value in SPECS):
            raise ParameterError(f"{where}: {key} must be one of {sorted(SPECS)} (got {str(value)[:80]!r})")
        if kind == "path" and value is not None and not (isinstance(value, str) and _inside(value, roots)):
            raise ParameterError(f"{where}: {key} must be a path inside {folders} (got {str(value)[:80]!r})")
        if kind == "paths" and not (isinstance(value, list)
                                    and all(isinstance(v, str) and _inside(v, roots) for v in value)):
            raise ParameterError(f"{where}: {key} must be a list of paths inside {folders}")
    return {**values, **page_folders(values, page, results, where)} if page is not None else values


def read(path: str | os.PathLike[str], notebook: str | os.PathLike[str], results_dir: str | os.PathLike[str],
         data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The checked parameters of ``notebook`` from the file ``path``."""
    where = f"--parameters {path}"
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ParameterError(f"{where}: cannot be read ({exc.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise ParameterError(f"{where}: larger than {MAX_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ParameterError(f"{where}: not UTF-8 text") from None
    return check(_plain_yaml(text, where), declared(notebook), results_dir, data_dir, where, Path(notebook).stem)


__all__ = ["MAX_BYTES", "ParameterError", "check", "declared", "read"]
