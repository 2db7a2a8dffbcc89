"""The dataset registry (bladefl.data.datasets.SPECS) is the single source of a dataset: every list of
dataset names, the model's input size and the split sizes are derived from it or held to it here."""

from __future__ import annotations

from pathlib import Path

import yaml

from bladefl.data import datasets, fetch
from bladefl.experiments.runs import job_work
from bladefl.experiments.verdicts import statements
from bladefl.fl import shape
from bladefl.report import calibration_outcome, page_html

REPO = Path(__file__).resolve().parents[1]


def test_every_name_list_is_the_registrys():
    names = list(datasets.SPECS)
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["properties"]["datasets"]["items"]["enum"] == names
    assert list(statements.DATASETS) == names and list(datasets.NAMES) == names
    assert calibration_outcome.OUTCOME_SCHEMA["properties"]["dataset"]["enum"] == names
    assert page_html.DATASET_TITLES == {s.name: s.title for s in datasets.SPECS.values()}
    assert set(fetch.REGISTRY_COPIES) <= set(names)


def test_the_schemas_partition_schemes_are_the_scheme_registrys():
    from bladefl.data import schemes

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    found = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "scheme" in node and isinstance(node["scheme"], dict) and "enum" in node["scheme"]:
                found.append(node["scheme"]["enum"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    assert found and all(e == list(schemes.SCHEME_REGISTRY) for e in found)


def test_the_schemas_partition_properties_are_the_config_fields_of_a_partition():
    """Every field a workflow config's partition may override (all but N, which each cell gives: the spec's base
    fields and every scheme's parameter) is a property of the schema's `partition` (whose additionalProperties is
    false), with the parameter's kind and range: a scheme whose parameter lacks its schema entry fails here, not
    as a ConfigError at the workflow's first parse."""
    from bladefl.data import partition, schemes

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    given = schema["properties"]["partition"]
    fields = set(partition.config_fields())
    assert given["additionalProperties"] is False
    assert fields - {"N"} <= set(given["properties"]), sorted(fields - {"N"} - set(given["properties"]))
    assert set(given["properties"]) - fields == {"seeds"}  # the replicate draws: the workflow's, not a spec's
    owned = [s.parameter.field for s in schemes.SCHEME_REGISTRY.values() if s.parameter]
    assert len(owned) == len(set(owned)), owned  # a field names one scheme's parameter
    for field, parameter in schemes.parameters().items():
        entry = given["properties"][field]
        assert entry["type"] == {int: "integer", float: "number"}[parameter.kind], field
        low = "exclusiveMinimum" if parameter.low_open else "minimum"
        assert entry[low] == parameter.low and entry.get("maximum", parameter.high) == parameter.high, field


def test_the_sizes_the_engine_assumes_are_each_datasets_own():
    """The model's input size, the partition checks' training-set size and the work a job holds are read
    per dataset from its spec (Cifar-10: 3,072 values, 50,000 training images; MNIST's: 784, 60,000)."""
    from bladefl.fl.run_config import RunConfig
    from bladefl.fl.stacked import model_shape

    published = {"mnist": (784, 60_000), "fashion_mnist": (784, 60_000), "cifar10": (3072, 50_000)}
    for name, sizes in published.items():  # the published sizes of the datasets that have them: a new one adds none
        assert name not in datasets.SPECS or (datasets.SPECS[name].pixels, datasets.SPECS[name].train_size) == sizes
    for spec in datasets.SPECS.values():
        assert spec.pixels > 0 and spec.train_size > 0
        cfg = RunConfig(dataset=spec.name)
        assert model_shape(cfg).d == spec.pixels == shape.Shape(d=spec.pixels, h=8).d
        assert cfg.parameters == shape.parameters_on(spec.name, cfg.model.hidden) == model_shape(cfg).size
        assert job_work.run_work(cfg)[1] == cfg.partition.N * cfg.partition.n * spec.pixels
        assert datasets.train_size(spec.name) == spec.train_size
    assert datasets.train_size(["mnist", "cifar10"]) == 50_000 == datasets.train_size(["cifar10", "nope"])


def test_every_raw_file_has_one_pin_and_one_format():
    for spec in datasets.SPECS.values():
        assert spec.file_format in datasets.FORMATS, spec.name
        assert set(spec.sha256) | set(spec.md5) == set(spec.files), spec.name
        assert not set(spec.sha256) & set(spec.md5), spec.name
        assert all(len(spec.pin(f)[1]) == {"sha256": 64, "md5": 32}[spec.pin(f)[0]] for f in spec.files), spec.name


def test_every_refusal_of_bad_input_has_one_base_and_no_two_share_a_name():
    """One error base (bladefl.core.errors.BladeflError) for every exception class of the project (FetchError
    and ReportInputError once stood outside it), and no two error classes of one name (there were two
    ConfigError)."""
    import importlib
    import inspect
    import pkgutil

    import bladefl
    from bladefl.core.errors import BladeflError

    found: dict[str, list[str]] = {}
    for info in pkgutil.walk_packages(bladefl.__path__, "bladefl."):
        if info.name.startswith(("bladefl.cli", "bladefl.__main__")):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__ == info.name:
                found.setdefault(name, []).append(info.name)
                assert issubclass(obj, BladeflError), f"{info.name}.{name}"
    assert {n: m for n, m in found.items() if len(m) > 1} == {}


def test_each_wing_says_what_it_holds_and_names_every_module():
    """Each top-level wing's __init__ has a docstring naming each of its modules (a module added
    without its word there fails)."""
    import ast

    src = REPO / "src/bladefl"
    for init in sorted(src.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        modules = sorted(p.stem for p in init.parent.glob("*.py") if p.stem not in ("__init__", "__main__"))
        modules += sorted(p.name for p in init.parent.iterdir() if (p / "__init__.py").is_file())
        missing = [m for m in modules if f"``{m}``" not in doc and f"{m} <" not in doc and f"< {m}" not in doc]
        assert doc and not missing, (init.parent.name, missing)


def test_the_root_of_a_raw_file_is_read_from_its_datasets_folder(tmp_path):
    """The workflow's fetch and run rules take the data root from the raw files themselves (Snakemake's lint:
    a path prefix derived from the input or output, not hard-coded)."""
    for spec in datasets.SPECS.values():
        for f in spec.files:
            assert datasets.root_of_raw_file(spec.raw_dir(tmp_path / "data/raw") / f) == tmp_path / "data/raw"
    assert datasets.root_of_raw_file("raw/FashionMNIST/raw/t10k-labels-idx1-ubyte") == Path("raw")  # not MNIST's folder
    import pytest

    with pytest.raises(ValueError, match="not in any dataset's raw folder"):
        datasets.root_of_raw_file(tmp_path / "MNIST/elsewhere/train-images-idx3-ubyte")
