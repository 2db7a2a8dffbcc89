"""What a calibration study found, in words no stronger than what it ran (from its ``outcome.json``): the
runs each scored point had (per replicate design where the outcome records it), and the study's conclusion,
computed from the outcome's numbers, so a page never prints a stored sentence another code version wrote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def runs_words(draws: int, replicates: object) -> str:
    """What a point's scored runs replicate, no stronger than what ran: ``draws`` run seeds each on its own
    partition draw, or (``replicates: seeds``, the authors' design) that many seeds on partition draw 0."""
    if replicates == "seeds":
        return f"{draws} seed{'s' if draws != 1 else ''} on one partition draw"
    return f"{draws} draw{'s' if draws != 1 else ''}"


def promoted_words(found: Mapping[str, Any]) -> str:
    """What the points scored on every row ran, per point no stronger than its runs: their count per replicate
    design where the outcome records it (``search.promoted_replicates``), else the runs each had."""
    draws = int(found["second_pass"]["draws"])
    counts = (found.get("search") or {}).get("promoted_replicates")
    if isinstance(counts, Mapping) and counts:
        return ", ".join(f"{n} with {runs_words(draws, design)}" for design, n in sorted(counts.items()))
    return f"{draws} runs each"


def conclusion(found: Mapping[str, Any]) -> str:
    """The study's conclusion in words no stronger than what it evaluated (from ``outcome.json``)."""
    t, s = found["targets"], found["search"]
    second = found["second_pass"]["calibrated"]
    tables = ", ".join(found["tables"])
    within = [r["table"] for r in found["per_table"] if r["K_star"] <= t["K_star"] and r["accuracy"] <= t["accuracy"]]
    o = s.get("origins") or {}
    origins = (f" ({o['named']} named, {o['coverage']} visiting the values of {', '.join(s['coverage']) or 'no axis'}, "
               f"{o['searched']} proposed by the sampler)" if o else "")
    size = f" of the space's {s['space_size']:,}" if isinstance(s.get("space_size"), int) else ""
    scope = (f"{s['evaluated']}{size} points evaluated on the screen{origins}, {s['promoted']} of them on every row "
             f"of {tables} with {promoted_words(found)} and every feasible K")
    if found["reached"]:
        return (f"The reading {found['calibrated']['label']} reaches {tables} within {t['K_star']:g} round and "
                f"{t['accuracy']:g} points per row on average in sample, on the runs that picked it "
                f"({second['K_star']:.3g} rounds, {second['accuracy']:.3g} points; {scope}).")
    part = (f"; per table it is within both targets on {', '.join(within)}" if within else
            "; it is within both targets on no table")
    return (f"None of the {scope} comes within {t['K_star']:g} round and {t['accuracy']:g} points per row on both "
            f"distances; the nearest, {found['calibrated']['label']}, is {second['K_star']:.2f} rounds and "
            f"{second['accuracy']:.1f} points from the paper per row{part}. The search stopped: "
            f"{found['search']['stopped']}.")


__all__ = ["conclusion", "promoted_words", "runs_words"]
