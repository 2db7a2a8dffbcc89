"""Paired inference for a claim over a sweep: independent units, a trend test within them, the
effect with its interval, an equivalence margin, and the false discovery rate over claims.

The **unit** is what was replicated independently: with several run seeds on each partition draw
(``config/paper.yaml``: 4 seeds on each of 5 draws) the draw, its value the seed-mean curve of its
runs (the seeds are replicates inside it); with one seed per draw (the default design pairs seed
i with draw i) each run. Every unit sees every value of a sweep (the sweep's cells share the
unit's partition and seed), so the design is blocked: a claim's direction is tested *within*
units, and the offset between units (a draw's level) cancels.

- **Trend:** Page's test for ordered alternatives (units as blocks, the values ranked within each
  unit, ties at their mid-ranks) with three or more sweep values, its p-value exact under the null
  that each unit's values are in random order *given its ties* (:func:`page_exact`; scipy's exact
  Page null assumes untied ranks and overstates p for tied data such as K*); with two, the paired
  t-test on the units' changes (:func:`scipy.stats.ttest_1samp`) where at least three units
  change by different amounts, else the sign test (:func:`scipy.stats.binomtest`: identical
  changes leave the t-test undefined). Both directions are tested.
- **Effect:** per unit, the change over the sweep (last value minus first; relative to the first
  for a loss); its mean, range and a 95% t-interval over the units.
- **Equivalence:** a claim of change is refuted, and a claim of no change reproduced, by every change
  along the sweep shown inside a margin: between every two of its values, each step and the whole
  sweep (each pair's 90% t-interval of the mean change inside +-margin: two one-sided tests at 5% per
  pair; the endpoints alone would call 60, 56, 70, 60 "unchanged", the steps alone a steady fall of
  small steps).
- **Few units:** the smallest p-value a design can give is (1/k!)^m for m units and k values
  (0.5^m for the sign test, none for the t-test); a claim is "too few runs" when that floor,
  adjusted with the other claims' p-values (:func:`reachable`), cannot reach the threshold.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

ALPHA = 0.05  # the false discovery rate controlled over a dataset's claims


# The trend test's name as the verdicts say it: Page's L with its exact null given each unit's ties
# (:func:`page_exact`), not scipy.stats.page_trend_test's (whose exact null assumes untied ranks).
PAGE = "tie-aware exact Page"

@dataclass(frozen=True)
class Margins:
    """Equivalence margins per quantity (a change smaller than this is no change)."""

    K: float = 1.0  # rounds
    mining_time: float = 0.10  # relative (beta K*)
    min_loss: float = 0.02  # relative
    max_accuracy: float = 0.01  # absolute (1 percentage point)

    def of(self, quantity: str) -> float:
        return float(getattr(self, quantity))


def parse_margins(items: list[str]) -> Margins:
    """``["K=1", "min_loss=0.02"]`` as :class:`Margins` (the rest at their defaults); an unknown
    quantity or a margin that is not a positive number is an error naming it and the allowed ones."""
    import dataclasses

    allowed = [f.name for f in dataclasses.fields(Margins)]
    given: dict[str, float] = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in allowed:
            raise ValueError(f"verdicts.margins: unknown quantity {name!r} (allowed: {', '.join(allowed)})")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not number > 0:
            raise ValueError(f"verdicts.margins.{name}: {value!r} is not a positive number")
        given[name] = number
    return Margins(**given)


RELATIVE = ("mining_time", "min_loss")  # quantities whose effect is relative to the first value


@dataclass(frozen=True)
class Trend:
    """A trend test of a [units, values] table (values in increasing order of the swept parameter)."""

    test: str  # PAGE | "paired t" | "sign" | "none"
    statistic: float
    p_rises: float
    p_falls: float
    units: int
    min_p: float  # the smallest p-value this design can give

    def p(self, direction: str) -> float:
        return self.p_rises if direction == "rises" else self.p_falls


def min_p(units: int, values: int) -> float:
    """The smallest one-sided p-value of a rank trend test: (1/k!)^m (the sign test's 0.5^m for k = 2)."""
    if units < 1 or values < 2:
        return 1.0
    return float(math.factorial(values)) ** -units


def units_needed(values: int, alpha: float = ALPHA) -> int:
    """How many units a sweep of ``values`` values needs before any p-value can reach ``alpha``."""
    return max(2, math.ceil(math.log(alpha) / -math.log(math.factorial(values)))) if values >= 2 else 0


def trend_test(table: np.ndarray) -> Trend:
    """Both one-sided trend tests of ``table`` [units, values]; units with a missing value are
    left out."""
    table = np.asarray(table, dtype=float)
    table = table[np.isfinite(table).all(axis=1)] if table.ndim == 2 else table.reshape(0, 0)
    m, k = table.shape if table.ndim == 2 else (0, 0)
    floor = min_p(m, k)
    if m < 2 or k < 2:
        return Trend("none", math.nan, 1.0, 1.0, m, floor)
    if k == 2:
        return _two_values(table[:, 1] - table[:, 0], m, floor)
    statistic, p_rises, p_falls = page_exact(table)
    return Trend(PAGE, statistic, p_rises, p_falls, m, floor)


def page_exact(table: np.ndarray) -> tuple[float, float, float]:
    """Page's L for a rising trend over the columns of ``table`` [units, values] (each unit's values
    ranked, ties at their mid-ranks: :func:`scipy.stats.rankdata`), and its exact one-sided p-values
    for a rise and for a fall under the permutation null given the ties: each unit's ranks in every
    order equally likely. The null of L is the convolution of the units' own distributions (each over
    the distinct orders of its mid-ranks, at most k! of them), so it is exact at any number of units.
    Without ties it is Page's exact null."""
    ranks = stats.rankdata(table, axis=1)  # mid-ranks: multiples of 1/2
    k = table.shape[1]
    weights = np.arange(1, k + 1)
    observed = int(round(2 * float((ranks * weights).sum())))
    total = np.ones(1)  # the null of 2L, as counts from offset 0
    offset = 0
    for row in ranks:
        doubled = [int(round(2 * float(np.dot(order, weights)))) for order in itertools.permutations(row.tolist())]
        low = min(doubled)
        unit = np.bincount(np.asarray(doubled) - low) / len(doubled)
        total, offset = np.convolve(total, unit), offset + low
    values = np.arange(len(total)) + offset
    p_rises = float(total[values >= observed].sum())
    # a fall is a rise of the reversed order: L(reversed) = (k + 1) x (sum of ranks) - L
    mirrored = int(round(2 * (k + 1) * float(ranks.sum()))) - observed
    p_falls = float(total[values >= mirrored].sum())
    return observed / 2, min(1.0, p_rises), min(1.0, p_falls)


def _two_values(change: np.ndarray, m: int, floor: float) -> Trend:
    """Two sweep values: the paired t-test on the units' changes where three or more units change
    by different amounts (its p-values have no floor), else the sign test."""
    if m >= 3 and float(np.std(change)) > 1e-12 * max(1.0, float(np.abs(change).max())):
        up = stats.ttest_1samp(change, 0.0, alternative="greater")
        down = stats.ttest_1samp(change, 0.0, alternative="less")
        return Trend("paired t", float(up.statistic), float(up.pvalue), float(down.pvalue), m, 0.0)
    rises, falls = int((change > 0).sum()), int((change < 0).sum())
    n = rises + falls
    if n == 0:
        return Trend("sign", 0.0, 1.0, 1.0, m, floor)
    p_up = stats.binomtest(rises, n, 0.5, alternative="greater").pvalue
    p_down = stats.binomtest(falls, n, 0.5, alternative="greater").pvalue
    return Trend("sign", float(rises - falls), float(p_up), float(p_down), m, floor)


def reachable(raw: list[float], index: int, floor: float) -> float:
    """The smallest adjusted p-value entry ``index`` of a family of raw p-values could get: its
    design's floor adjusted (Benjamini-Hochberg) together with the others as they are. Above
    ALPHA, no outcome of this design could be significant: too few runs."""
    trial = list(raw)
    trial[index] = floor
    return fdr_adjust(trial)[index]


def directions(change: np.ndarray, direction: str, noun: str = "unit") -> str:
    """How the units moved, in words: "every unit (5) opposite", "4 of 5 units in the claimed
    direction, 1 opposite" (``direction``: rises | falls; ``noun``: what a unit is)."""
    change = np.asarray(change, dtype=float)
    change = change[np.isfinite(change)]
    m = len(change)
    with_ = int((change > 0).sum() if direction == "rises" else (change < 0).sum())
    against = int((change < 0).sum() if direction == "rises" else (change > 0).sum())
    flat = m - with_ - against
    if m and with_ == m:
        return f"every {noun} ({m}) in the claimed direction"
    if m and against == m:
        return f"every {noun} ({m}) opposite"
    if m and flat == m:
        return f"no {noun} ({m}) changed"
    parts = [f"{with_} of {m} {noun}s in the claimed direction"] + [f"{against} opposite"] * bool(against) + [
        f"{flat} unchanged"] * bool(flat)
    return ", ".join(parts)


def updown(change: np.ndarray, noun: str = "unit") -> str:
    """How the units moved, neutrally: "every draw (5) down", "3 draws up, 2 unchanged"."""
    change = np.asarray(change, dtype=float)
    change = change[np.isfinite(change)]
    counts = {"up": int((change > 0).sum()), "down": int((change < 0).sum()), "unchanged": int((change == 0).sum())}
    m = len(change)
    for word, n in counts.items():
        if m and n == m:
            return f"every {noun} ({m}) {word}"
    return ", ".join(f"{n} {noun}{'s' * (n != 1)} {word}" for word, n in counts.items() if n)


def shape(series: np.ndarray) -> str:
    """What a series over the sweep did: "rises", "falls", "stays", "rises then falls",
    "falls then rises" or "goes up and down"."""
    steps = np.sign(np.round(np.diff(np.asarray(series, dtype=float)), 12))
    moves = [int(s) for s in steps if s != 0]
    if not moves:
        return "stays"
    runs = [moves[0]] + [b for a, b in zip(moves, moves[1:], strict=False) if b != a]
    names = {1: "rises", -1: "falls"}
    if len(runs) == 1:
        return names[runs[0]]
    if len(runs) == 2:
        return f"{names[runs[0]]} then {names[runs[1]]}"
    return "goes up and down"


@dataclass(frozen=True)
class Effect:
    """Per-unit change over the sweep (last value minus first): the values, their mean and range, a
    95% interval; whether every change between two values of the sweep lies inside +-margin
    (equivalence), and the 90% interval of the change that comes nearest the margin."""

    per_unit: tuple[float, ...]
    mean: float
    low: float  # 95% t-interval (nan with one unit)
    high: float
    equivalent: bool
    low90: float = math.nan  # the 90% interval of the change nearest the margin
    high90: float = math.nan
    pair: tuple[int, int] = (0, 1)  # that change: from the value at the first index to the second


def _inside(change: np.ndarray, margin: float) -> tuple[bool, float, float]:
    """Two one-sided t-tests at 5% on one set of per-unit changes: whether its 90% interval lies inside
    +-margin, and the interval (the range of the changes where the units are identical: then the sign
    test decides, every unit inside and 0.5^m < ALPHA)."""
    mean = float(change.mean())
    se = float(change.std(ddof=1)) / math.sqrt(len(change))
    if se > 0:
        half = stats.t.ppf(0.95, len(change) - 1) * se
        return bool(mean - half > -margin and mean + half < margin), mean - half, mean + half
    inside = bool(np.all(np.abs(change) < margin)) and 0.5 ** len(change) < ALPHA
    return inside, float(change.min()), float(change.max())


def effect(table: np.ndarray, margin: float, relative: bool = False) -> Effect:
    """The change last-minus-first of each unit of ``table`` [units, values] (relative to the first
    with ``relative``), and equivalence: the change between every two values (relative to the earlier
    one) shown inside +-margin."""
    table = np.asarray(table, dtype=float)
    table = table[np.isfinite(table).all(axis=1)]
    if table.shape[0] == 0:
        return Effect((), math.nan, math.nan, math.nan, False)
    change = table[:, -1] - table[:, 0]
    if relative:
        change = change / np.abs(table[:, 0])
    mean = float(change.mean())
    if len(change) < 2:
        return Effect(tuple(change.tolist()), mean, math.nan, math.nan, False)
    se = float(change.std(ddof=1)) / math.sqrt(len(change))
    half95 = stats.t.ppf(0.975, len(change) - 1) * se
    pairs = list(itertools.combinations(range(table.shape[1]), 2))
    tests = []
    for a, b in pairs:
        moved = table[:, b] - table[:, a]
        tests.append(_inside(moved / np.abs(table[:, a]) if relative else moved, margin))
    nearest = max(range(len(pairs)), key=lambda i: max(abs(tests[i][1]), abs(tests[i][2])))
    _, low90, high90 = tests[nearest]
    return Effect(tuple(float(c) for c in change), mean, mean - half95, mean + half95,
                  all(inside for inside, _, _ in tests), low90, high90, pairs[nearest])


def fdr_adjust(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (:func:`scipy.stats.false_discovery_control`); nan stays nan."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    keep = np.isfinite(p)
    if keep.any():
        out[keep] = stats.false_discovery_control(np.clip(p[keep], 0.0, 1.0), method="bh")
    return out.tolist()
