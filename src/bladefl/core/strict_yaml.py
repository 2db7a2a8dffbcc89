"""YAML read strictly: a key given twice in one mapping is an error naming the key and both lines
(plain YAML keeps the last one silently, so a config's first value would be ignored unseen)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from bladefl.core.errors import BladeflError


class DuplicateKeyError(BladeflError):
    """A mapping repeats a key."""


class _StrictLoader(yaml.SafeLoader):
    """Safe YAML, each key once, integers in plain decimal only: YAML 1.1's octal (``017`` is 15),
    hex (``0x10``), binary, underscore (``1_000``) and base-60 (``1:30``) forms stay strings, so a
    seed, K or N written that way is refused by the field's type check, not read as another number."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKeyError(f"key {key!r} given twice (lines {seen[key]} and {line})")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:int"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"),
                                    list("-+0123456789"))


MAX_DEPTH = 50  # nesting of collections; no file of this project nests deeper than about 6


class OversizeError(BladeflError):
    """A document too deep or too large for any config: refused before anything walks it."""


class TooDeepError(OversizeError):
    """A document nested deeper than :data:`MAX_DEPTH` (PyYAML's scanner takes time quadratic in the
    depth, and its composer recurses: 200,000 levels of ``[`` did not finish in 300 s)."""


def nesting_depth(text: str) -> int:
    """An upper bound on a YAML text's nesting, in one linear pass: the flow collections' depth
    (``[``/``{`` outside quoted scalars) plus, per line, its indentation's and its leading ``- ``
    entries' count; what it says of a sound file is far below :data:`MAX_DEPTH`."""
    deepest = depth = 0
    quote = ""
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        dashes = 0
        while stripped.startswith("- ") or stripped == "-":
            dashes += 1
            stripped = stripped[2:].lstrip(" ")
        block = (len(line) - len(line.lstrip(" "))) // 2 + dashes
        for ch in line:
            if quote:
                quote = "" if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch == "#" and not depth:
                break
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                depth = max(0, depth - 1)
            deepest = max(deepest, depth + block)
        deepest = max(deepest, block)
    return deepest


MAX_VALUES = 100_000  # values of a document with its aliases expanded; the largest config holds a few hundred


class TooLargeError(OversizeError):
    """A document whose aliases expand to more than :data:`MAX_VALUES` values: ten levels of ten
    aliases each read in microseconds as shared lists, then hang whatever walks them (10^10 values)."""


def expanded_size(value: Any, limit: int = MAX_VALUES) -> int:
    """The number of values in ``value`` counting a shared (aliased) list or mapping each time it is
    reached, as any walk over it does; stops counting once past ``limit`` (time O(limit))."""
    count, stack = 0, [value]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    return count


def check_expansion(data: Any) -> None:  # noqa: ANN401 - any parsed document
    """:class:`TooLargeError` where ``data``'s aliases expand past :data:`MAX_VALUES` values."""
    if expanded_size(data) > MAX_VALUES:
        raise TooLargeError(f"its aliases expand to more than {MAX_VALUES} values (no config of this project "
                            "holds that many)")


def load(text: str) -> Any:
    """``yaml.safe_load`` that refuses a repeated key (:class:`DuplicateKeyError`), before parsing a
    document nested deeper than :data:`MAX_DEPTH` (:class:`TooDeepError`: one line, at once), and
    after it one whose aliases expand past :data:`MAX_VALUES` (:class:`TooLargeError`)."""
    if nesting_depth(text) > MAX_DEPTH:
        raise TooDeepError(f"nested deeper than {MAX_DEPTH} levels (no config of this project nests that deep)")
    data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    check_expansion(data)
    return data


MAX_FILE_BYTES = 16 << 20  # a config or the paper's values: kilobytes


def _text(path: str | Path) -> str:
    """A YAML file's text: a regular file of at most :data:`MAX_FILE_BYTES` (a FIFO would hang)."""
    from bladefl.core.bounded_read import read_regular

    return read_regular(path, MAX_FILE_BYTES, "YAML file").decode("utf-8")


class YamlFileError(BladeflError):
    """A YAML file that cannot be read: one line naming the file and, for bad YAML, the line."""


def read_file(path: str | Path) -> Any:
    """The YAML document in ``path``, read strictly; :class:`YamlFileError` with one line when it is
    missing or unreadable, not UTF-8, not valid YAML (its line and problem, not the parser's caret
    drawing) or repeats a key."""
    try:
        return load(_text(path))
    except OSError as exc:
        raise YamlFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise YamlFileError(f"{path}: not UTF-8 text") from None
    except (DuplicateKeyError, OversizeError) as exc:
        raise YamlFileError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise YamlFileError(f"{path}: not valid YAML{at}: {getattr(exc, 'problem', None) or 'unreadable'}") from None
    except TypeError:  # an unhashable key: a list or mapping as a key
        raise YamlFileError(f"{path}: a key that is a list or a mapping") from None


def _first_reread(strict: Any, plain: Any, where: str = "") -> str | None:
    """Where a plain YAML reader made an integer of what the strict one keeps as text."""
    if isinstance(strict, dict) and isinstance(plain, dict):
        return next((w for k in strict if k in plain and (w := _first_reread(strict[k], plain[k], f"{where}.{k}"))),
                    None)
    if isinstance(strict, list) and isinstance(plain, list) and len(strict) == len(plain):
        return next((w for i, (a, b) in enumerate(zip(strict, plain, strict=True))
                     if (w := _first_reread(a, b, f"{where}[{i}]"))), None)
    return f"{where.lstrip('.')}: {strict!r}" if isinstance(strict, str) and isinstance(plain, int) else None


def file_problem(path: str | Path) -> str | None:
    """A key given twice in a YAML file others read with a plain reader (Snakemake keeps the last
    one), a document too deep or whose aliases expand too far, or an integer in a form a plain reader
    turns into another number (``017`` is 15, ``0x10`` 16, ``1_000`` 1000); None when there is none of
    these, or when the file is unreadable (its reader says so)."""
    try:
        text = _text(path)
        strict = load(text)
    except (DuplicateKeyError, OversizeError) as exc:
        return f"{path}: {exc}"
    except (OSError, ValueError, TypeError, yaml.YAMLError):
        return None
    where = _first_reread(strict, yaml.safe_load(text))
    return f"{path}: {where} is not a plain decimal integer (write it as digits alone)" if where else None


__all__ = ["DuplicateKeyError", "YamlFileError", "file_problem", "load", "read_file"]
