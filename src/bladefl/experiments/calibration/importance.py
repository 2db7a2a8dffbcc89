"""Which settings move each distance, and how much of that could be noise: Optuna's fANOVA importances
(scikit-learn's random forest) of each distance over the evaluated trials, each beside a **control**,
the share the largest setting gets when the distances are shuffled across the trials (a permutation
baseline: the same trials and settings, with every link between a setting and a distance broken).
An importance under its control is indistinguishable from what fANOVA gives pure noise."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

OBJECTIVES = ("K_star_distance", "accuracy_distance")
COLUMNS = ["objective", "setting", "importance", "control", "clears"]


def _fanova(trials: Sequence, params: list[str], targets: dict[int, float]) -> dict[str, float]:
    import optuna

    study = optuna.create_study(direction="minimize")
    for t in trials:
        study.add_trial(optuna.trial.create_trial(params=t.params, distributions=t.distributions,
                                                  value=targets[t.number]))
    found = optuna.importance.get_param_importances(
        study, params=params, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0))
    return {p: float(found.get(p, 0.0)) for p in params}


def importances(trials: Sequence, params: Sequence[str], permutations: int = 20, quantile: float = 0.95,
                seed: int = 0) -> pd.DataFrame:
    """Per objective and setting: its fANOVA share of the distance's variance over ``trials`` (evaluated,
    each with its two distances as ``values``), the control (the ``quantile`` of the largest share
    over ``permutations`` shuffles of the distances) and whether the share clears it. Empty with fewer
    than 3 trials or no setting that varies; a distance no trial changed gives every setting 0."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    varied = [p for p in params if len({repr(t.params.get(p)) for t in trials}) > 1]
    if len(trials) < 3 or not varied:
        return pd.DataFrame(columns=COLUMNS)
    rng = np.random.default_rng(seed)
    rows = []
    for i, name in enumerate(OBJECTIVES):
        values = np.array([float(t.values[i]) for t in trials])
        if np.ptp(values) == 0:
            rows += [{"objective": name, "setting": p, "importance": 0.0, "control": 0.0, "clears": False}
                     for p in params]
            continue
        found = _fanova(trials, varied, {t.number: v for t, v in zip(trials, values, strict=True)})
        maxima = [max(_fanova(trials, varied, {t.number: v for t, v in zip(trials, rng.permutation(values),
                                                                              strict=True)}).values())
                  for _ in range(permutations)]
        control = float(np.quantile(maxima, quantile))
        rows += [{"objective": name, "setting": p, "importance": found.get(p, 0.0), "control": control,
                  "clears": bool(found.get(p, 0.0) > control)} for p in params]
    return pd.DataFrame(rows, columns=COLUMNS)
