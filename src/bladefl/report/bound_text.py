"""Sentences of the bound page computed from its verdict rows: which fit gives which number."""

from __future__ import annotations

import pandas as pd


def fits_named(bound_rows: pd.DataFrame) -> str:
    """The 5% claim's one number and its fit (the verdict row's finding), and what the page's other
    excess numbers are: other fits, each named where it appears ("" without the claim's row)."""
    close = bound_rows[bound_rows.statement == "fig3-close"] if "statement" in bound_rows else bound_rows.iloc[:0]
    if close.empty or not isinstance(close.iloc[0].finding, str):
        return ""
    return ("**Which fit gives which number.** The 5% claim is judged, here and on the front page, by one number: "
            f"{close.iloc[0].finding} (phi and eps2 chosen so that G >= gap at every K with the smallest largest "
            "excess, fitted once to the mean gap per K over the units). The figures and tables below fit each run "
            "on its own, and each names its fit: *each run's mean fit* (the figure, the gap table and "
            "the K* table: phi and eps2 maximising the mean of gap / G) and *each run's own fit* per way of choosing "
            "the constants (the table of constants' choices). Their excesses answer other questions; they are not "
            "the claim's number.")


__all__ = ["fits_named"]
