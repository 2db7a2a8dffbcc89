"""The suite's order (conftest.heavy_first): each worker's share starts with files that start workflows."""

from __future__ import annotations

from conftest import heavy_first


def _modules(spec: list[tuple[str, int, int]]) -> list[tuple[list[str], int]]:
    """(name, tests, seconds of those starting workflows) -> heavy_first's input, tests named name:i."""
    return [([f"{name}:{i}" for i in range(n)], heavy) for name, n, heavy in spec]


def test_each_workers_share_starts_with_its_workflow_files_whole_and_ends_with_short_tests():
    spec = [("a", 10, 0), ("b", 4, 40), ("c", 30, 0), ("d", 6, 10), ("e", 3, 30), ("f", 9, 0), ("g", 5, 20)]
    order = heavy_first(_modules(spec), 2)
    assert sorted(order) == sorted(t for module, _ in _modules(spec) for t in module)  # each test once
    half = len(order) // 2  # what worksteal hands each of two workers first: 33 and 34
    shares = [order[:half], order[half:]]
    heavy = {name for name, _, count in spec if count}
    for share in shares:
        files = [t.split(":")[0] for t in share]
        started = files[:next(i for i, f in enumerate(files) if f not in heavy)]
        assert started and all(f not in heavy for f in files[len(started):])  # workflow files first, then short
    # the workflow files shared out by their seconds (40+10 against 30+20), each whole and in its own order
    counts = [sum(dict((n, c) for n, _, c in spec)[f] for f in {t.split(":")[0] for t in share}) for share in shares]
    assert sorted(counts) == [50, 50]
    for name, n, _ in spec:
        mine = [t for t in order if t.startswith(f"{name}:")]
        assert mine == [f"{name}:{i}" for i in range(n)]
        if name in heavy:  # contiguous: one worker makes its module fixtures
            start = order.index(mine[0])
            assert order[start:start + n] == mine


def test_one_worker_runs_the_workflow_files_first_the_heaviest_first_then_the_rest_as_collected():
    spec = [("a", 2, 0), ("b", 2, 10), ("c", 1, 0), ("d", 2, 20)]
    order = heavy_first(_modules(spec), 1)
    assert [t.split(":")[0] for t in order] == ["d", "d", "b", "b", "a", "a", "c"]
