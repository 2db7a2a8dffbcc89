"""What a run's measured constants (L, xi, delta: :mod:`bladefl.fl.measured_constants`) are measured
against, as its ``summary.json`` records it. Torch-free: the tables and verdicts that read the records
need these words, not the engine."""

from __future__ import annotations

# What a run's constants are measured against, recorded in its summary.json; a run that measured
# before this was recorded measured against the block's aggregate (LEGACY).
AGAINST = "honest aggregate"
LEGACY = "block aggregate"

__all__ = ["AGAINST", "LEGACY"]
