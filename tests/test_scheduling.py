"""The test suite's own scheduling hint (conftest.LONGEST): each xdist worker's share starts with its
part of the longest tests, and every name in the hint is a test that exists."""

from __future__ import annotations

import re
from dataclasses import dataclass

from conftest import LONGEST, REPO, longest_first


@dataclass(frozen=True)
class Item:
    nodeid: str


def test_each_workers_share_starts_with_every_other_long_test_and_the_shares_are_even():
    items = [Item(f"tests/test_a.py::test_{i}") for i in range(10)]
    longest = ("test_a.py::test_7", "test_a.py::test_2", "test_a.py::test_9")
    ordered = longest_first(items, longest, workers=2)
    assert sorted(i.nodeid for i in ordered) == sorted(i.nodeid for i in items)  # nothing lost or added
    first, second = ordered[:5], ordered[5:]  # xdist's first share: len // 2
    assert [i.nodeid[-6:] for i in first[:2]] == ["test_7", "test_9"]
    assert second[0].nodeid.endswith("test_2")
    assert not any(i.nodeid.endswith(("test_7", "test_9", "test_2")) for i in first[2:] + second[1:])


def test_every_test_the_hint_names_exists():
    for name in LONGEST:
        path, function = name.split("::")
        function = re.sub(r"\[.*\]$", "", function)
        assert f"def {function}(" in (REPO / "tests" / path).read_text(), name
