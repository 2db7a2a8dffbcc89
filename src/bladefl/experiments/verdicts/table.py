"""Every statement of the paper the grid can judge, one verdict table per dataset.

- The experiment's statements (:mod:`.experiment`, :mod:`.convexity`): paired trend tests over
  independent units, the false discovery rate controlled over the dataset's counted claims,
  effects with intervals, an equivalence margin; each tested again inside each partition draw
  where draws are the units.
- Fig. 3's statements and the Remark on the bound fitted to the runs (:mod:`.bound`): a bootstrap
  over the units refitting the bound; the corollaries' values on that fitted bound as readings.
- The bound's formula as mathematics (:mod:`.mathematics`): Theorems 2 and 3 and Corollaries 1-5
  over a scan of valid constants, with a witness where a statement fails.
- The paper's own errors (:mod:`.paper_errors`), each with its computation.

Every row names its statement (``config/paper_statements.yaml``, :mod:`.statements`) and its role;
one row per statement is counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from bladefl.data.datasets import SPECS, get_spec
from bladefl.experiments.plan.grid import Member
from bladefl.experiments.verdicts.bound import bound_claims, closed_form_readings, remark_rows
from bladefl.experiments.verdicts.bound_corollaries import eta_fitted, fitted_corollaries
from bladefl.experiments.verdicts.bound_fit import BoundCell, CellFit, bound_cells_of, cell_fit
from bladefl.experiments.verdicts.convexity import convexity_family
from bladefl.experiments.verdicts.experiment import EXPERIMENT_VERDICTS, experiment_verdicts, per_draw
from bladefl.experiments.verdicts.mathematics import corollary_rows, theorem_rows
from bladefl.experiments.verdicts.paper_errors import paper_error_rows
from bladefl.experiments.verdicts.statements import Inventory
from bladefl.experiments.verdicts.trend import Margins
from bladefl.experiments.verdicts.units import replication, unit_groups
from bladefl.experiments.verdicts.vocabulary import ALL_COLUMNS, POOLED, ROLES, VERDICTS, Curves, unit_resamples
from bladefl.fl.shape import Shape

ROLE_ORDER = {r: i for i, r in enumerate(("claim", "paper error", "derived", "reading"))}
# A verdict table's numbers as written: 10 significant digits, far above the last bit in which two
# machines' BLAS and libm differ (about 2e-16 relative), so another machine writes the same bytes unless
# a number lies within that of a 10th-digit rounding boundary (about 2 in a million numbers).
FLOAT_FORMAT = "%.10g"


def verdict_csv(frame: pd.DataFrame) -> str:
    """A verdict table as its CSV text (:data:`FLOAT_FORMAT`), as every writer of one writes it."""
    return frame.to_csv(index=False, float_format=FLOAT_FORMAT)


def all_verdicts(table: pd.DataFrame, members: Sequence[Member], t_sum: float, bound_cells: Sequence[BoundCell],
                 gaps: pd.DataFrame | None, constants: pd.DataFrame | None, resamples: int = 1000,
                 bound_resamples: int = 100, margins: Margins | None = None, *, dataset: str | None = None,
                 inventory: Inventory | None = None, paper_tables: Sequence[Mapping] = (),
                 model_size: int | None = None, fig3_sweep: str = "fig3", scan_settings: int = 2000) -> pd.DataFrame:
    """The verdict table of one dataset (see the module's docstring). ``resamples`` is kept for
    callers of the earlier signature; ``bound_resamples``: the bootstrap's resamples of the units."""
    def applies(statement: str) -> bool:
        return inventory is None or inventory.applies(statement, dataset)

    experiment = experiment_verdicts(table, members, t_sum, margins, applies,
                                     extra=convexity_family(members, t_sum, fig3_sweep))
    seeds = int(table[table.status == "ok"].seed.nunique())
    frames = [per_draw(experiment, table, members, t_sum, margins).assign(seeds=seeds, support=math.nan)]
    fits = full_fits(table, bound_cells, gaps, constants)
    pooled = pooled_verdicts(table, members, t_sum, bound_cells, gaps, constants, bound_resamples)
    if len(pooled):
        draws = sorted(table.partition.unique()) if "partition" in table else [0]
        per = {} if len(draws) < 2 or pooled.unit.iloc[0] != "draw" else {
            int(d): pooled_verdicts(table[table.partition == d], members, t_sum, bound_cells, gaps, constants, 0)
            for d in draws}
        frames.append(across_partitions(pooled, per))
    if fits:
        theory = pd.DataFrame(corollary_rows(fits, members, scan_settings) + theorem_rows(fits, members, scan_settings))
        frames.append(theory.assign(draws_holding="", across_partitions="mathematics: no units"))
    size = model_size or Shape(d=get_spec(dataset if dataset in SPECS else "mnist").pixels).size
    errors = paper_error_rows(paper_tables, fits, members, size, scan_settings, dataset or "", table)
    if errors:
        frames.append(pd.DataFrame(errors).assign(draws_holding="", across_partitions=""))
    out = pd.concat([f for f in frames if len(f)], ignore_index=True)
    out = out[[applies(str(s)) for s in out.statement]].reset_index(drop=True)
    return finish(out, inventory)


def full_fits(table: pd.DataFrame, bound_cells: Sequence[BoundCell], gaps: pd.DataFrame | None,
              constants: pd.DataFrame | None) -> list[CellFit]:
    """The bound fitted to every run of ``table`` per bound cell (none without the bound's files)."""
    if gaps is None or constants is None or not bound_cells:
        return []
    seeds = sorted(table[table.status == "ok"].seed.unique())
    return [cell_fit(gaps, constants, c, seeds) for c in bound_cells]


def finish(out: pd.DataFrame, inventory: Inventory | None) -> pd.DataFrame:
    """Every column of :data:`ALL_COLUMNS`; each reading names the counted row of its statement;
    the paper's words from the inventory; rows in the inventory's order, the counted row first."""
    for column in ALL_COLUMNS:
        if column not in out:
            out[column] = math.nan if column in ("p_claim", "p_opposite", "effect", "effect_low", "effect_high",
                                                 "support", "seeds", "units") else ""
    counted = {str(r.statement): str(r.claim) for r in out.itertuples() if r.role in ("claim", "paper error")}
    out["reading_of"] = [counted.get(str(r.statement), _text(r.reading_of)) if r.role == "reading" else ""
                         for r in out.itertuples()]
    order = {s.id: i for i, s in enumerate(inventory.statements)} if inventory else {}
    if inventory is not None:
        out["quote"] = [getattr(inventory.get(str(s)), "quote", "") for s in out.statement]
    out["_order"] = [(order.get(str(r.statement), len(order)), ROLE_ORDER.get(str(r.role), 9))
                     for r in out.itertuples()]
    out = out.sort_values("_order", kind="stable").drop(columns="_order").reset_index(drop=True)
    return out[ALL_COLUMNS]


def _text(value: object) -> str:
    return "" if value is None or value != value else str(value)


def across_partitions(pooled: pd.DataFrame, per_draw: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """``pooled`` with ``draws_holding`` (on how many partition draws the claim holds, each judged
    on its own runs, e.g. "3/5") and ``across_partitions``: "one draw", "not applicable", "holds on
    every draw", "fails on every draw" or "flips"."""
    out = pooled.copy()
    if not per_draw:
        out["draws_holding"], out["across_partitions"] = "", "one draw"
        return out
    holding, label = [], []
    for _, row in pooled.iterrows():
        found = [frame.loc[frame.claim == row.claim] for frame in per_draw.values()]
        applicable = [f.iloc[0] for f in found if len(f) and f.iloc[0].verdict not in ("not applicable", "vacuous")]
        holds = sum(bool(r.support >= 0.5) for r in applicable)
        holding.append(f"{holds}/{len(applicable)}" if applicable else "")
        if row.verdict in ("not applicable", "vacuous") or not applicable:
            label.append(row.verdict if row.verdict == "vacuous" else "not applicable")
        elif holds == len(applicable):
            label.append("holds on every draw")
        else:
            label.append("fails on every draw" if holds == 0 else "flips")
    out["draws_holding"], out["across_partitions"] = holding, label
    return out


def pooled_verdicts(table: pd.DataFrame, members: Sequence[Member], t_sum: float, bound_cells: Sequence[BoundCell],
                    gaps: pd.DataFrame | None, constants: pd.DataFrame | None,
                    bound_resamples: int = 100) -> pd.DataFrame:
    """The rows judged on the bound fitted to ``table``'s runs (when the bound's constants were
    measured): Fig. 3's statements, the Remark, and the corollaries' and Theorem 3's readings on the
    fitted bound, the bound fitted once per bound cell and resample of the independent units. With
    no resamples, each claim's support is its answer on the full sample (1 or 0)."""
    if gaps is None or constants is None or not bound_cells:
        return pd.DataFrame(columns=POOLED)
    curves = Curves.from_table(table)
    reps = replication(table)
    draws = unit_resamples(unit_groups(table, curves.seeds), bound_resamples)
    fits = [[cell_fit(gaps, constants, c, [curves.seeds[i] for i in rows]) for c in bound_cells] for rows in draws]
    k_exp = [[curves.mean(rows).k_star(c.cell) for c in bound_cells] for rows in draws]
    rows = (list(bound_claims(fits, k_exp, reps).to_dict("records")) + remark_rows(fits, reps)
            + closed_form_readings(fits, k_exp, reps) + fitted_corollaries(fits, members, reps)
            + eta_fitted(fits, members, reps))
    return pd.DataFrame(rows)


__all__ = ["ALL_COLUMNS", "FLOAT_FORMAT", "verdict_csv", "VERDICTS", "ROLES", "EXPERIMENT_VERDICTS",
           "across_partitions", "pooled_verdicts", "all_verdicts", "BoundCell", "CellFit", "cell_fit",
           "bound_cells_of", "Margins", "finish", "full_fits"]
