"""Run configuration of one experiment cell: nested frozen dataclasses, loadable from YAML. Every field is
validated when the config is built; the error names the field (dotted path) and the allowed values.
``load_config(path, overrides)`` applies ``--set time.beta=6`` overrides before validation."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bladefl.chain.pow import DIFFICULTY_BITS
from bladefl.core import strict_yaml
from bladefl.core.bounded_read import read_regular
from bladefl.core.errors import BladeflError
from bladefl.core.values import is_finite as _is_finite
from bladefl.core.values import is_int as _is_int
from bladefl.core.values import is_num as _is_num
from bladefl.data.datasets import SPECS, train_size
from bladefl.data.partition import PartitionSpec, config_fields, partition_errors
from bladefl.fl.ranges import DETECTORS, RANGES, range_error
from bladefl.fl.shape import parameters_on
from bladefl.fl.timemodel import TAU_RULES, iteration_errors


class RunConfigError(BladeflError):
    """Invalid run configuration; the message names every bad field."""


@dataclass(frozen=True)
class ModelConfig:
    hidden: int = 256
    activation: str = "relu"  # relu | none


@dataclass(frozen=True)
class TrainConfig:
    eta: float = 0.01
    iteration: str = "epoch"  # full_batch | epoch | steps
    batch_size: int = 64
    steps: int = 1  # minibatch steps per iteration where iteration is `steps`
    eta_scale: float = 1.0  # every step is eta x eta_scale (a reading that changes the steps per iteration)

    @property
    def step_size(self) -> float:
        """The SGD step the clients take: eta x eta_scale."""
        return self.eta * self.eta_scale


@dataclass(frozen=True)
class TimeConfig:
    alpha: float = 1.0
    beta: float = 10.0
    t_sum: float = 100.0
    K: tuple[int, ...] = tuple(range(1, 10))
    tau_rule: str = "paper"  # paper: floor((t_sum/K - beta)/alpha); authors: their code's (bladefl.fl.timemodel)


@dataclass(frozen=True)
class LazyConfig:
    ratio: float = 0.0  # M / N
    sigma2: float = 0.0  # variance of the noise a lazy client adds (per `noise`)
    noise: str = "parameter"  # parameter: N(0, sigma2) per parameter; model: N(0, sigma2 / P); authors: fl.lazy
    counterfactual: bool = False  # also train lazy clients to measure theta
    detectors: tuple[str, ...] = ()  # lazy-client detectors the validators run (bladefl.fl.detection)
    exclude: bool = False  # leave the uploads the first detector flags out of the block


@dataclass(frozen=True)
class PrivacyConfig:
    epsilon: float = math.inf  # inf disables local DP
    delta: float = 1e-5
    clip: float = 20.0


@dataclass(frozen=True)
class ChainConfig:
    difficulty_bits: int = 12
    block_time: str = "fixed"  # fixed | exponential
    save_models: bool = False  # content-addressed store of uploaded models
    key_secret_file: str = ""  # keys from this file's secret and the seed (else from the seed alone)
    faulty_fraction: float = 0.0  # share of validators that misbehave (the majority rule under faults)
    fault: str = "random"  # random: vote yes or no at random; reject: always vote no


@dataclass(frozen=True)
class MeasureConfig:
    constants: bool = False  # measure L, xi, delta at every aggregation (see bladefl.constants)
    client_test_classes: int = 4  # the authors' client test subsets (bladefl.fl.client_test); 0: none
    client_test_per_class: int = 64


@dataclass(frozen=True)
class RunConfig:
    dataset: str = "mnist"
    partition: PartitionSpec = field(default_factory=PartitionSpec)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    time: TimeConfig = field(default_factory=TimeConfig)
    lazy: LazyConfig = field(default_factory=LazyConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    chain: ChainConfig = field(default_factory=ChainConfig)
    measure: MeasureConfig = field(default_factory=MeasureConfig)
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda
    data_dir: str = "data/raw"
    normalize: bool = True  # standardise pixels with the dataset's mean and std

    @property
    def num_lazy(self) -> int:
        return int(round(self.lazy.ratio * self.partition.N))

    @property
    def parameters(self) -> int:
        """P, the parameters of this config's model on its dataset (:func:`bladefl.fl.shape.parameters_on`)."""
        return parameters_on(self.dataset, self.model.hidden)

    def to_dict(self) -> dict[str, Any]:
        """The config as every run's summary records it; the fields of :data:`LATER_FIELDS` only where
        they leave their default (a run recorded before them is still a run of the same config)."""
        out = {**dataclasses.asdict(self), "partition": self.partition.record()}  # (drops its own later fields)
        out["time"]["K"] = list(self.time.K)
        for (section, name), default in LATER_FIELDS.items():
            if out[section][name] == default:
                del out[section][name]
        return out


LATER_FIELDS: dict[tuple[str, str], Any] = {  # added after runs were first recorded, with their default
    ("train", "steps"): 1, ("train", "eta_scale"): 1.0, ("lazy", "noise"): "parameter", ("time", "tau_rule"): "paper",
    ("measure", "client_test_classes"): 4, ("measure", "client_test_per_class"): 64}  # measured, not trained


SECTIONS = {
    "partition": PartitionSpec,
    "model": ModelConfig,
    "train": TrainConfig,
    "time": TimeConfig,
    "lazy": LazyConfig,
    "privacy": PrivacyConfig,
    "chain": ChainConfig,
    "measure": MeasureConfig,
}


ITERATIONS, LAZY_NOISE = ("full_batch", "epoch", "steps"), ("parameter", "model", "authors")
MAX_STEPS = 10_000  # minibatch steps per iteration (an epoch of the largest client at batch 1 is 60,000 / N)
MAX_ITERATIONS, MAX_K_VALUES = 1e6, 1000  # a run's local iterations (the paper's: 100) and K values (9)


def _train_errors(t: dict[str, Any]) -> list[str]:
    """The ``train`` section's own checks (its eta against its range is checked with the cell's)."""
    e = []
    if t["iteration"] not in ITERATIONS:
        e.append(f"train.iteration must be one of {list(ITERATIONS)} (got {t['iteration']!r})")
    if not (_is_finite(t["eta_scale"]) and t["eta_scale"] > 0):
        e.append(f"train.eta_scale must be a finite number > 0 (got {t['eta_scale']!r})")
    elif _is_num(t["eta"]) and not t["eta"] * t["eta_scale"] < 1:
        e.append(f"train.eta x train.eta_scale must be < 1 (got {t['eta']!r} x {t['eta_scale']!r}; a step past 1 "
                 "diverges)")
    if not (_is_int(t["steps"]) and 1 <= t["steps"] <= MAX_STEPS):
        e.append(f"train.steps must be an integer in 1..{MAX_STEPS} (got {t['steps']!r})")
    if not (_is_int(t["batch_size"]) and t["batch_size"] >= 1):
        e.append(f"train.batch_size must be an integer >= 1 (got {t['batch_size']!r})")
    return e


def _errors(raw: dict[str, Any]) -> list[str]:
    e: list[str] = []

    def need(ok: bool, path: str, allowed: str, value: Any) -> None:
        if not ok:
            e.append(f"{path} must be {allowed} (got {value!r})")

    need(raw["dataset"] in SPECS, "dataset", f"one of {sorted(SPECS)}", raw["dataset"])
    need(raw["device"] in ("auto", "cpu", "cuda"), "device", "one of ['auto', 'cpu', 'cuda']", raw["device"])
    need(_is_int(raw["seed"]) and raw["seed"] >= 0, "seed", "an integer >= 0", raw["seed"])
    e.extend(partition_errors(raw["partition"], train_size=train_size(raw["dataset"])))
    m, t, tm = raw["model"], raw["train"], raw["time"]
    need(_is_int(m["hidden"]) and m["hidden"] >= 1, "model.hidden", "an integer >= 1", m["hidden"])
    need(m["activation"] in ("relu", "none"), "model.activation", "one of ['relu', 'none']", m["activation"])
    e.extend(_train_errors(t))
    need(_is_finite(tm["t_sum"]) and tm["t_sum"] > 0, "time.t_sum", "a finite number > 0", tm["t_sum"])
    need(tm["tau_rule"] in TAU_RULES, "time.tau_rule", f"one of {list(TAU_RULES)}", tm["tau_rule"])
    if not e and _is_num(tm["alpha"]) and tm["alpha"] > 0:
        e.extend(iteration_errors(tm["t_sum"], tm["alpha"], tm["tau_rule"], MAX_ITERATIONS))
    for r in RANGES:  # the cell's parameters, as the grid checks them (fl.ranges)
        if r.run != "partition.N":  # (checked with the partition)
            section, name = r.run.split(".")
            wrong = range_error(r, raw[section][name], r.run)
            if wrong:
                e.append(wrong)
    ks = tm["K"]
    need(isinstance(ks, (list, tuple)) and 0 < len(ks) <= MAX_K_VALUES and all(_is_int(k) and k >= 1 for k in ks)
         and len(set(ks)) == len(ks), "time.K", f"a non-empty list of distinct integers >= 1 (at most {MAX_K_VALUES})",
         ks if not isinstance(ks, (list, tuple)) or len(ks) <= 20 else f"a list of {len(ks)}")
    lz, pv, ch = raw["lazy"], raw["privacy"], raw["chain"]
    need(lz["noise"] in LAZY_NOISE, "lazy.noise", f"one of {list(LAZY_NOISE)}", lz["noise"])
    need(isinstance(lz["counterfactual"], bool), "lazy.counterfactual", "true or false", lz["counterfactual"])
    need(isinstance(lz["detectors"], (list, tuple)) and set(lz["detectors"]) <= set(DETECTORS), "lazy.detectors",
         f"a list of {list(DETECTORS)}", lz["detectors"])
    need(isinstance(lz["exclude"], bool) and (not lz["exclude"] or bool(lz["detectors"])), "lazy.exclude",
         "true or false (true needs lazy.detectors)", lz["exclude"])
    need(_is_num(pv["delta"]) and 0 < pv["delta"] < 1, "privacy.delta", "a number in (0, 1)", pv["delta"])
    need(_is_finite(pv["clip"]) and 0 < pv["clip"] <= 1e6, "privacy.clip", "a number in (0, 1e6]", pv["clip"])
    lo, hi = DIFFICULTY_BITS
    need(_is_int(ch["difficulty_bits"]) and lo <= ch["difficulty_bits"] <= hi, "chain.difficulty_bits",
         f"an integer in {lo}..{hi}", ch["difficulty_bits"])
    secret = ch["key_secret_file"]
    need(isinstance(secret, str) and (not secret or Path(secret).is_file()), "chain.key_secret_file",
         "a readable file holding the key secret, or '' (keys from the seed)", secret)
    need(ch["block_time"] in ("fixed", "exponential"), "chain.block_time", "one of ['fixed', 'exponential']",
         ch["block_time"])
    need(isinstance(ch["save_models"], bool), "chain.save_models", "true or false", ch["save_models"])
    need(_is_num(ch["faulty_fraction"]) and 0 <= ch["faulty_fraction"] < 0.5, "chain.faulty_fraction",
         "a number in [0, 0.5) (a strict honest majority)", ch["faulty_fraction"])
    need(ch["fault"] in ("random", "reject"), "chain.fault", "one of ['random', 'reject']", ch["fault"])
    need(isinstance(raw["normalize"], bool), "normalize", "true or false", raw["normalize"])
    need(isinstance(raw["data_dir"], str), "data_dir", "a path", raw["data_dir"])
    me = raw["measure"]
    need(isinstance(me["constants"], bool), "measure.constants", "true or false", me["constants"])
    for name, low in (("client_test_classes", 0), ("client_test_per_class", 1)):
        need(_is_int(me[name]) and low <= me[name] <= 10_000, f"measure.{name}", f"an integer in {low}..10000",
             me[name])
    if not e and int(round(lz["ratio"] * raw["partition"]["N"])) >= raw["partition"]["N"]:
        e.append(f"lazy.ratio must leave at least one honest client (got {lz['ratio']} of N={raw['partition']['N']})")
    return e


# ASCII digits only: "\d" would take other scripts' digits ("١" read as 1).
NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
INTEGER = re.compile(r"[+-]?(0|[1-9][0-9]*)")  # plain decimal: "017" is not 15 nor 17


def _coerce(value: Any, default: Any) -> Any:
    """Strings that are numbers where the field is a number: "inf", and scientific notation that
    YAML 1.1 reads as a string ("1e-2"; PyYAML wants "1.0e-2")."""
    if not isinstance(value, str) or isinstance(default, bool) or not _is_num(default):
        return value
    text = value.strip()
    if text.lower() in ("inf", "+inf", ".inf", "infinity"):
        return math.inf
    if isinstance(default, int):  # an integer field takes integer text only: "1e23" is no exact integer
        return int(text) if INTEGER.fullmatch(text) else value
    if NUMBER.fullmatch(text):
        return float(text)
    return value


def _merge(defaults: dict[str, Any], given: Mapping[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise RunConfigError(f"{where.rstrip('.') or 'config'}: unknown field(s) {unknown}; allowed: "
                             f"{sorted(defaults)}")
    out = dict(defaults)
    for key, value in given.items():
        if isinstance(defaults[key], dict):
            if not isinstance(value, Mapping):
                raise RunConfigError(f"{where}{key} must be a mapping (got {value!r})")
            out[key] = _merge(defaults[key], value, f"{where}{key}.")
        else:
            out[key] = _coerce(value, defaults[key])
    return out


def from_dict(data: Mapping[str, Any]) -> RunConfig:
    """Build and validate a :class:`RunConfig` (missing fields take their defaults)."""
    defaults = {**dataclasses.asdict(RunConfig()), "partition": config_fields()}  # every field, LATER_FIELDS' too
    defaults["time"]["K"] = list(defaults["time"]["K"])
    raw = _merge(defaults, data, "")
    errors = _errors(raw)
    if errors:
        raise RunConfigError("invalid run config: " + "; ".join(errors))
    kwargs = {k: v for k, v in raw.items() if k not in SECTIONS}
    for name, cls in SECTIONS.items():
        section = dict(raw[name])
        if name == "time":
            section["K"] = tuple(section["K"])
        if name == "lazy":
            section["detectors"] = tuple(section["detectors"])
        kwargs[name] = PartitionSpec.of(**section) if cls is PartitionSpec else cls(**section)
    return RunConfig(**kwargs)


def parse_override(text: str) -> tuple[list[str], Any]:
    if "=" not in text:
        raise RunConfigError(f"override must look like key=value (got {text!r})")
    key, value = text.split("=", 1)
    try:
        return key.strip().split("."), strict_yaml.load(value)
    except (yaml.YAMLError, strict_yaml.OversizeError) as exc:
        problem = str(getattr(exc, "problem", "") or exc).splitlines()[0]
        raise RunConfigError(f"{key.strip()[:80]}: {value[:80]!r} is not a YAML value ({problem})") from None


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    out = yaml.safe_load(yaml.safe_dump(data)) or {}
    for item in overrides:
        path, value = parse_override(item)
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> RunConfig:
    """The run config of the YAML file ``path`` (none: the defaults) with ``overrides`` applied,
    every field checked; a missing, unreadable or non-YAML file is a :class:`RunConfigError` naming it.

    A file read once is not read again while it is unchanged (the same file, size and change times):
    the workflow asks for its engine's config for every job it plans, and the config is frozen."""
    if path:
        try:
            stat = Path(path).stat()
        except OSError:
            stat = None  # read below, and refused there with the reason
        if stat is not None:
            unchanged = (str(Path(path).resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
            return _load_unchanged(str(path), unchanged, tuple(overrides))
    return _load(path, overrides)


@functools.lru_cache(maxsize=64)
def _load_unchanged(path: str, unchanged: tuple[str, int, int, int, int], overrides: tuple[str, ...]) -> RunConfig:
    """:func:`_load` of ``path`` as it is now (``unchanged``: its place, inode, size and change times)."""
    return _load(path, overrides)


def _load(path: str | Path | None, overrides: Sequence[str]) -> RunConfig:
    try:
        data: Any = strict_yaml.load(read_regular(path, 1 << 20, "config").decode("utf-8")) if path else {}
        if data is not None and not isinstance(data, Mapping):
            raise RunConfigError(f"--config {path}: must hold a mapping of fields (got a {type(data).__name__})")
        return from_dict(apply_overrides(dict(data or {}), overrides))
    except (OSError, UnicodeDecodeError) as exc:
        raise RunConfigError(f"--config {path}: cannot read it ({exc.__class__.__name__}: {exc})") from None
    except (strict_yaml.DuplicateKeyError, strict_yaml.OversizeError) as exc:
        raise RunConfigError(f"--config {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise RunConfigError(f"--config {path}: not YAML ({str(exc).splitlines()[0]})") from None
    except TypeError:  # a set (!!set), or a list or mapping as a key: nothing a config holds
        raise RunConfigError(f"--config {path or '(none)'}: a set, or a list or mapping as a key, where a config holds "
                          "plain values") from None
