"""YAML read strictly: a key given twice in one mapping is an error naming the key and both lines
(plain YAML keeps the last one silently, so a config's first value would be ignored unseen)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class DuplicateKeyError(ValueError):
    """A mapping repeats a key."""


class _StrictLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKeyError(f"key {key!r} given twice (lines {seen[key]} and {line})")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load(text: str) -> Any:
    """``yaml.safe_load`` that refuses a repeated key (:class:`DuplicateKeyError`)."""
    return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass


class YamlFileError(ValueError):
    """A YAML file that cannot be read: one line naming the file and, for bad YAML, the line."""


def read_file(path: str | Path) -> Any:
    """The YAML document in ``path``, read strictly; :class:`YamlFileError` with one line when it is
    missing or unreadable, not UTF-8, not valid YAML (its line and problem, not the parser's caret
    drawing) or repeats a key."""
    try:
        return load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise YamlFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise YamlFileError(f"{path}: not UTF-8 text") from None
    except DuplicateKeyError as exc:
        raise YamlFileError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise YamlFileError(f"{path}: not valid YAML{at}: {getattr(exc, 'problem', None) or 'unreadable'}") from None
    except TypeError:  # an unhashable key: a list or mapping as a key
        raise YamlFileError(f"{path}: a key that is a list or a mapping") from None


__all__ = ["DuplicateKeyError", "YamlFileError", "load", "read_file"]
