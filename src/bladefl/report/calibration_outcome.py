"""A calibration study's ``outcome.json`` (written by :func:`bladefl.experiments.calibration.tables.outcome`)
held to what the study writes before a page reads it: a kept bundle's comes from elsewhere."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bladefl.data.datasets import NAMES
from bladefl.experiments.tables.conventions import K_STAR, accuracy_conventions, accuracy_name

_NUMBER = {"type": "number", "minimum": 0, "maximum": 1e6}
_TEXT = {"type": "string", "maxLength": 2000}
_VALUES = {"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 40}}
_PAIR = {"type": "object", "required": ["K_star", "accuracy"], "properties": {"K_star": _NUMBER, "accuracy": _NUMBER}}
_NUMBER_OR_NONE = {"type": ["number", "null"], "minimum": 0, "maximum": 1e6}
_ROLE_OR_NONE = {"type": "string", "pattern": "^(stated|best[0-9]{1,2})?$"}
_NEAR_NUMBERS = ("headline_K_star_distance", "headline_accuracy_distance", "K_star_distance", "K_star_sd",
                 "accuracy_distance", "accuracy_sd_pct", "paper_K_star_spread", "paper_accuracy_spread")
# outcome.json as experiments.calibration.tables.outcome writes it: what the pages read, held to it first
OUTCOME_SCHEMA = {
    "type": "object",
    "required": ["dataset", "targets", "tables", "rows", "search", "second_pass", "per_table", "floor", "calibrated",
                 "reached", "conclusion"],
    "properties": {
        "dataset": {"type": "string", "enum": list(NAMES)},
        "targets": _PAIR,
        "floor": {"type": "object", "required": ["K_star", "accuracy"],
                  "properties": {"K_star": _NUMBER, "accuracy": _NUMBER,
                                 "cells": {"type": "integer", "minimum": 0, "maximum": 1000}}},
        "reached": {"type": "boolean"}, "conclusion": _TEXT,
        "tables": {"type": "array", "maxItems": 20, "items": {"type": "string", "pattern": "^Table [IVX]+$"}},
        "rows": {"type": "integer", "minimum": 1, "maximum": 1000},
        "search": {"type": "object", "required": ["evaluated", "promoted", "stopped", "rule", "duplicates", "coverage"],
                   "properties": {"evaluated": {"type": "integer", "minimum": 0, "maximum": 10000},
                                  "space_size": {"type": "integer", "minimum": 1, "maximum": 10**15},
                                  "promoted": {"type": "integer", "minimum": 0, "maximum": 10000},
                                  "duplicates": {"type": "integer", "minimum": 0, "maximum": 100000},
                                  "stopped": _TEXT,
                                  "rule": {"type": "object", "required": ["patience", "tolerance", "max_trials"],
                                           "properties": {"patience": _NUMBER, "tolerance": _NUMBER,
                                                          "max_trials": _NUMBER, "min_proposals": _NUMBER}},
                                  "coverage": {"type": "object", "additionalProperties": _VALUES},
                                  "promoted_replicates": {"type": "object", "maxProperties": 8, "additionalProperties":
                                                          {"type": "integer", "minimum": 0, "maximum": 10_000}},
                                  "origins": {"type": "object", "additionalProperties": False,
                                              "required": ["named", "coverage", "searched"],
                                              "properties": {k: {"type": "integer", "minimum": 0, "maximum": 10000}
                                                             for k in ("named", "coverage", "searched")}}}},
        "screen": {"type": "object", "properties": {"rows": _NUMBER, "cells": _NUMBER, "draws": _NUMBER,
                                                     "tables": {"type": "array", "items": _TEXT, "maxItems": 20}}},
        "second_pass": {"type": "object", "required": ["draws", "stated", "calibrated"],
                        "properties": {"draws": {"type": "integer", "minimum": 1, "maximum": 100}, "stated": _PAIR,
                                       "calibrated": _PAIR}},
        "per_table": {"type": "array", "maxItems": 20, "items": {
            "type": "object", "required": ["table", "rows", "K_star", "accuracy"],
            "properties": {"table": {"type": "string", "pattern": "^Table [IVX]+$"}, "rows": _NUMBER,
                           "K_star": _NUMBER, "accuracy": _NUMBER}}},
        "calibrated": {"type": "object", "required": ["role", "label", "differs"],
                       "properties": {"role": {"type": "string", "pattern": "^(stated|best[0-9]{1,2})$"},
                                      "label": _TEXT, "differs": {"type": "object", "maxProperties": 20}}},
        "most_important": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["setting", "importance", "control"],
            "properties": {"setting": {"type": "string", "maxLength": 40}, "importance": _NUMBER,
                           "control": _NUMBER, "p_adjusted": {"type": "number", "minimum": 0, "maximum": 1}}}},
        "screen_agreement": {"type": "object", "required": ["points"], "properties": {
            "points": {"type": "integer", "minimum": 0, "maximum": 10000},
            **{k: {"type": "object", "properties": {"tau": {"type": ["number", "null"], "minimum": -1, "maximum": 1},
                                                    "p": {"type": ["number", "null"], "minimum": 0, "maximum": 1}}}
               for k in ("K_star", "accuracy", "closeness")}}},
        "conventions": {"type": "array", "maxItems": 20, "items": {
            "type": "object",
            "required": ["table", "K_star_reading", "K_star_from", "accuracy_reading", "accuracy_from"],
            "properties": {"table": {"type": "string", "pattern": "^Table [IVX]+$"},
                           **{k: _NUMBER_OR_NONE for k in _NEAR_NUMBERS},
                           "K_star_reading": _ROLE_OR_NONE, "accuracy_reading": _ROLE_OR_NONE,
                           "K_star_from": {"enum": ["", *K_STAR]},
                           "accuracy_from": {"enum": ["", *(accuracy_name(k, f"{r} {w}") for k in K_STAR
                                                            for r, w in accuracy_conventions())]}}}},
        "importance_test": {"type": "object", "required": ["permutations", "trials", "alpha"],
                            "properties": {"permutations": {"type": "integer", "minimum": 1, "maximum": 10000},
                                           "trials": {"type": "integer", "minimum": 0, "maximum": 10000},
                                           "alpha": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
    },
}


def check_outcome(found: Mapping[str, Any], path: object) -> Mapping[str, Any]:
    """``outcome.json`` held to :data:`OUTCOME_SCHEMA` (a kept bundle's comes from elsewhere): ValueError
    naming the file and the first field that is not what the study writes."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(OUTCOME_SCHEMA).iter_errors(found))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top)"
        raise ValueError(f"{path}: not a calibration outcome: {where}: {str(error.message)[:160]}")
    return found
