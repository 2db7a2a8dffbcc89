"""The workflow config as Snakemake reads it from its files: the default config, then each
``--configfile`` merged on top key by key (:func:`read_configs`), each file read strictly
(:func:`config_file_errors`: a key given twice, an integer not in plain decimal). For the commands
that read a workflow config outside Snakemake (``bladefl bench --grid``, ``import-runs``, ``rejudge``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bladefl.experiments.plan.workflow_config import DEFAULT_CONFIG, ConfigError


def renamed_keys(config: Mapping[str, Any]) -> tuple[dict, list[str]]:
    """A config written before ``profile`` became ``engine`` (top level, each reading's key and the
    ``profile`` axis), under the new names, with a line per renaming for the user. Snakemake's
    ``--profile`` (``profiles/``) is another thing; the engine's settings are ``config/engines/``."""
    out, notes = dict(config), []
    if "profile" in out:
        value = out.pop("profile")
        out["engine"] = value
        notes.append(f"config key 'profile' is now 'engine' (config/engines/): read as engine: {value}")
    if isinstance(out.get("readings"), Mapping):
        readings_ = {}
        for name, spec in out["readings"].items():
            if isinstance(spec, Mapping) and ("profile" in spec or spec.get("axis") == "profile"):
                spec = dict(spec)
                if "profile" in spec:
                    spec["engine"] = spec.pop("profile")
                if spec.get("axis") == "profile":
                    spec["axis"] = "engine"
                notes.append(f"readings.{name}: 'profile' is now 'engine' (key and axis)")
            readings_[name] = spec
        out["readings"] = readings_
    return out, notes



def merged(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict:
    """``overlay`` merged into ``base`` key by key, mappings recursively: how Snakemake combines
    the config files it is given."""
    out = dict(base)
    for key, value in overlay.items():
        both = isinstance(value, Mapping) and isinstance(out.get(key), Mapping)
        out[key] = merged(out[key], value) if both else value
    return out


def layers(paths: Sequence[str | Path], default: str | Path = DEFAULT_CONFIG) -> list[Path]:
    """The files Snakemake reads for ``--configfile paths``: the Snakefile's default config first
    (once), then ``paths`` in order."""
    given = [Path(p) for p in paths]
    base = Path(default)
    return given if given and given[0].resolve() == base.resolve() else [base, *given]


def read_configs(paths: Sequence[str | Path], default: str | Path | None = DEFAULT_CONFIG) -> dict:
    """The workflow config Snakemake would see for ``--configfile paths``: the files merged in order
    on top of the default config (``default=None``: ``paths`` alone), each read strictly (a key
    given twice is an error naming the file)."""
    from bladefl.core import strict_yaml

    config: dict = {}
    for path in layers(paths, default) if default is not None else [Path(p) for p in paths]:
        try:
            layer = strict_yaml.read_file(path) or {}
        except strict_yaml.YamlFileError as exc:
            raise ConfigError(f"invalid config: {exc}") from None
        if not isinstance(layer, Mapping):
            raise ConfigError(f"invalid config: {path}: not a mapping of keys to values")
        config = merged(config, renamed_keys(layer)[0])
    return config


def config_file_errors(paths: Sequence[str | Path]) -> list[str]:
    """A key given twice in a config file, or an integer not in plain decimal (Snakemake's reader
    keeps the last key silently and reads ``017`` as 15): :func:`strict_yaml.file_problem`."""
    from bladefl.core import strict_yaml

    return [problem for path in paths if (problem := strict_yaml.file_problem(path))]


def config_size_errors(config: Mapping) -> list[str]:
    """The merged config (files and ``--config``) when its aliases expand past what any config holds:
    checked before the schema, whose error message would print all of it (10^10 values hang it)."""
    from bladefl.core import strict_yaml

    try:
        strict_yaml.check_expansion(config)
    except strict_yaml.TooLargeError as exc:
        return [f"the config: {exc}"]
    return []
