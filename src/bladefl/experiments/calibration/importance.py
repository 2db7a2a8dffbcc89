"""Which settings move each distance, and how much of that could be noise: Optuna's fANOVA importances
(scikit-learn's random forest) of each distance over the evaluated trials, each with a **permutation
p-value**: the distances are shuffled across the trials (the same trials and settings, every link between
a setting and a distance broken) and each shuffle's largest share over the settings is kept, so the share of
a setting is compared with the largest any setting gets from noise (a max-statistic test: the p-value holds
over all the settings at once); a Bonferroni factor covers the two distances. With P shuffles the smallest
p-value is 1/(P + 1): too few shuffles, or too few trials, can only say "not distinguishable from noise".
The control (the 95th percentile of the shuffles' largest share) stays beside it as a picture of the noise."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

OBJECTIVES = ("K_star_distance", "accuracy_distance")
COLUMNS = ["objective", "setting", "importance", "control", "p", "p_adjusted", "permutations", "clears"]
ALPHA = 0.05  # a setting clears when its Bonferroni-adjusted max-statistic p-value is below this


def _fanova(trials: Sequence, params: list[str], targets: dict[int, float]) -> dict[str, float]:
    import optuna

    study = optuna.create_study(direction="minimize")
    for t in trials:
        study.add_trial(optuna.trial.create_trial(params=t.params, distributions=t.distributions,
                                                  value=targets[t.number]))
    found = optuna.importance.get_param_importances(
        study, params=params, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0))
    return {p: float(found.get(p, 0.0)) for p in params}


def importances(trials: Sequence, params: Sequence[str], permutations: int = 200, quantile: float = 0.95,
                seed: int = 0) -> pd.DataFrame:
    """Per objective and setting: its fANOVA share of the distance's variance over ``trials`` (evaluated,
    each with its two distances as ``values``), the control (the ``quantile`` of the largest share over
    ``permutations`` shuffles of the distances), the max-statistic permutation p-value ((1 + the shuffles
    whose largest share reaches the setting's) / (1 + permutations)), that p-value times the number of
    distances (Bonferroni, at most 1) and whether the adjusted p-value is below :data:`ALPHA`. Empty with
    fewer than 3 trials or no setting that varies; a distance no trial changed gives every setting 0, p 1."""
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
            rows += [{"objective": name, "setting": p, "importance": 0.0, "control": 0.0, "p": 1.0, "p_adjusted": 1.0,
                      "permutations": permutations, "clears": False} for p in params]
            continue
        found = _fanova(trials, varied, {t.number: v for t, v in zip(trials, values, strict=True)})
        maxima = np.array([max(_fanova(trials, varied, {t.number: v for t, v in
                                                         zip(trials, rng.permutation(values), strict=True)}).values())
                           for _ in range(permutations)])
        control = float(np.quantile(maxima, quantile))
        for p in params:
            share = found.get(p, 0.0)
            p_value = float((1 + np.sum(maxima >= share)) / (1 + permutations))
            adjusted = min(1.0, p_value * len(OBJECTIVES))
            rows.append({"objective": name, "setting": p, "importance": share, "control": control, "p": p_value,
                         "p_adjusted": adjusted, "permutations": permutations, "clears": bool(adjusted < ALPHA)})
    return pd.DataFrame(rows, columns=COLUMNS)
