"""What kind of value a parsed config field holds: a whole number, a number, a finite number (a bool,
which Python counts as an int, is none of them)."""

from __future__ import annotations

import math
from typing import Any


def is_int(v: Any) -> bool:  # noqa: ANN401 - any parsed value
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v: Any) -> bool:  # noqa: ANN401
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_finite(v: Any) -> bool:  # noqa: ANN401
    """A number that is neither infinite nor nan."""
    return is_num(v) and math.isfinite(v)


__all__ = ["is_finite", "is_int", "is_num"]
