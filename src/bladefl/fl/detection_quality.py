"""How well a detector's flags and scores find the lazy clients: precision, recall, false-positive
rate and ROC AUC against the truth. Torch-free (numpy): the detection tables are made without loading
the engine."""

from __future__ import annotations

import numpy as np


def roc_auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """Area under the ROC curve (ties count half): the chance that a random lazy client scores
    above a random honest one. nan without both classes."""
    pos, neg = scores[truth.astype(bool)], scores[~truth.astype(bool)]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def precision_recall(flags: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    """(precision, recall, false-positive rate) of boolean flags against the truth."""
    truth = truth.astype(bool)
    tp, fp = int((flags & truth).sum()), int((flags & ~truth).sum())
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / truth.sum() if truth.sum() else float("nan")
    fpr = fp / (~truth).sum() if (~truth).sum() else float("nan")
    return precision, recall, fpr


__all__ = ["precision_recall", "roc_auc"]
