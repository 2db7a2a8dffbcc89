"""What ``bladefl bench`` holds its measurements to, and how it prints them: each value beside its target."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """A value the bench is held to: at least ``value``, or below it."""

    value: float
    at_least: bool = True

    def met(self, x: float) -> bool:
        return x >= self.value if self.at_least else x < self.value

    def __str__(self) -> str:
        return f"{'>=' if self.at_least else '<'} {self.value:g}"


def print_lines(lines: list[tuple[str, float, Target]]) -> int:
    print("\nratio                                              value    target   met")
    for label, value, target in lines:
        print(f"{label:<50} {value:8.3f}  {target!s:>8}   {'yes' if target.met(value) else 'NO'}")
    return 0
