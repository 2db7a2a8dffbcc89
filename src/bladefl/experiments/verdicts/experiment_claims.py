"""The paper's statements about the experiment as trend claims: which quantity moves which way
over which sweep, the statement of ``config/paper_statements.yaml`` each judges and in which role
(the counted ``claim``, a ``reading``, or ``derived`` from another claim)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Part:
    """One quantity and the direction it is claimed to move: rises | falls | same."""

    quantity: str  # K | K_accuracy | mining_time | training_time | min_loss | max_accuracy
    direction: str


@dataclass(frozen=True)
class TrendClaim:
    """A claim that quantities move over a sweep (``only``: the sweep values it speaks of). With
    several ``parts`` every one must move as claimed (learning performance: loss and accuracy)."""

    name: str
    statement: str
    source: str
    param: str
    parts: tuple[Part, ...]
    role: str = "claim"  # claim | reading | derived
    page: str = "02_sweeps"
    derived_from: str = ""
    reading_of: str = ""
    only: Callable[[float], bool] | None = None

    @property
    def quantity(self) -> str:
        return self.parts[0].quantity

    @property
    def direction(self) -> str:
        return self.parts[0].direction


def _one(quantity: str, direction: str) -> tuple[Part, ...]:
    return (Part(quantity, direction),)


def _at_least(v: float, low: float) -> bool:
    return v >= low


# name, statement, source, param, parts, extra fields
# (name, statement, source, param, parts, further TrendClaim fields)
_CLAIMS: list[tuple[str, str, str, str, tuple[Part, ...], dict[str, Any]]] = [
    ("K* falls as alpha grows", "tab2-alpha", "Table II text (Corollary 1)", "alpha", _one("K", "falls"), {}),
    ("the loss grows with alpha", "fig4-alpha-loss", "Fig. 4 text", "alpha", _one("min_loss", "rises"), {}),
    ("K* falls as beta grows", "tab3-beta", "Table III text (Corollary 1)", "beta", _one("K", "falls"), {}),
    ("β·K* rises with beta", "tab3-beta-mining", "Table III text", "beta", _one("mining_time", "rises"), {}),
    ("the loss grows with beta", "fig5-beta-loss", "Fig. 5 text", "beta", _one("min_loss", "rises"), {}),
    ("K* falls as N grows", "tab4-N", "Table IV text (Corollary 3)", "N", _one("K", "falls"), {}),
    ("the loss falls as N grows", "fig6-N-loss", "Fig. 6 text", "N", _one("min_loss", "falls"), {}),
    ("K* settles for N >= 20", "fig6-N-settles", "Fig. 6 text", "N", _one("K", "same"),
     {"only": lambda v: _at_least(v, 20)}),
    ("K* rises with eta", "tab5-eta", "Table V text (Corollary 4)", "eta", _one("K", "rises"), {}),
    ("the loss falls as eta grows below 0.1", "fig7-eta-loss", "Fig. 7 text", "eta", _one("min_loss", "falls"),
     {"only": lambda v: v < 0.1}),
    ("the loss rises again at eta = 0.1", "fig7-eta-rise", "Fig. 7 text", "eta", _one("min_loss", "rises"),
     {"only": lambda v: _at_least(v, 0.05)}),
    ("K* falls as M/N grows", "tab6-MN", "Table VI text (Corollary 5)", "lazy_ratio", _one("K", "falls"), {}),
    ("the loss rises and the accuracy falls as M/N grows", "fig8-MN-perf", "Fig. 8 text", "lazy_ratio",
     (Part("min_loss", "rises"), Part("max_accuracy", "falls")), {}),
    ("K* falls as sigma2 grows", "tab7-sigma", "Table VII text (Corollary 5)", "sigma2", _one("K", "falls"), {}),
    ("the loss rises and the accuracy falls as sigma2 grows", "fig9-sigma-perf", "Fig. 9 text", "sigma2",
     (Part("min_loss", "rises"), Part("max_accuracy", "falls")), {}),
    ("the loss falls and the accuracy rises as epsilon grows", "fig10-perf", "Fig. 10 text", "epsilon",
     (Part("min_loss", "falls"), Part("max_accuracy", "rises")), {"page": "04_privacy"}),
    ("accuracy rises with epsilon", "fig11-acc", "Fig. 11 text", "epsilon", _one("max_accuracy", "rises"),
     {"page": "04_privacy"}),
    ("K* does not depend on epsilon", "dp-K", "Fig. 10 text; Section VI", "epsilon", _one("K", "same"),
     {"page": "04_privacy"}),
]
_DERIVED = [
    ("τ·α·K* rises with alpha", "Table II text", "alpha", "K* falls as alpha grows"),
    ("τ·α·K* rises with M/N", "Table VI text", "lazy_ratio", "K* falls as M/N grows"),
    ("τ·α·K* rises with sigma2", "Table VII text", "sigma2", "K* falls as sigma2 grows"),
]


def claims() -> list[TrendClaim]:
    """Every experiment claim: the counted claims, then their derived rows and readings."""
    out = [TrendClaim(name, statement, source, param, parts, **extra)
           for name, statement, source, param, parts, extra in _CLAIMS]
    by_name = {c.name: c for c in out}
    out += [TrendClaim(name, by_name[base].statement, source, param, _one("training_time", "rises"), role="derived",
                       derived_from=base) for name, source, param, base in _DERIVED]
    out += [
        TrendClaim("K* does not depend on epsilon (epsilon >= 100: small noise, Section VI's reading)", "dp-K",
                   "Section VI", "epsilon", _one("K", "same"), role="reading", page="04_privacy",
                   reading_of="K* does not depend on epsilon", only=lambda v: _at_least(v, 100)),
        TrendClaim("K* falls as eta grows (Corollary 4's proof, on the experiment)", "cor4-proof",
                   "Appendix, proof of Corollary 4", "eta", _one("K", "falls"), role="reading",
                   reading_of="K* rises with eta"),
    ]
    by_loss = [c for c in out if c.quantity == "K" and c.role != "derived" and c.statement != "cor4-proof"]
    out += [TrendClaim(f"{c.name} (K* by accuracy)", c.statement, c.source, c.param, _one("K_accuracy", c.direction),
                       role="reading", page=c.page, reading_of=c.name, only=c.only) for c in by_loss]
    return out


__all__ = ["Part", "TrendClaim", "claims"]
