"""The one base of every refusal of bad input: a config, a file from elsewhere, a command's argument.

Each wing's error (a run config's, the workflow config's, an archive's, a journal's, a guarded deletion)
is a :class:`BladeflError`, itself a ``ValueError``: a caller that takes any refusal catches one class,
and the CLI prints its message on one line."""

from __future__ import annotations


class BladeflError(ValueError):
    """Bad input, refused before any work: the message names the field or file and what is allowed."""


__all__ = ["BladeflError"]
