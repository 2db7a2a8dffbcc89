"""The ledger against an adversary: attacks on a real run's ledger (forged with the project's own
functions: re-signed with the seed-derived keys, re-mined), malformed ledgers and summaries, and a
seeded mutation loop. Every attack is caught with the run's summary except the one the threat
model names (forging with the seed's keys plus a rewritten summary and rounds.csv); every
malformed file ends in one line and exit 1, never a traceback."""

from __future__ import annotations

import copy
import json
import os
import random
import shutil

import numpy as np
import pytest
from tests.test_engine import small_cfg, synthetic

from bladefl.chain import transactions as txm
from bladefl.chain.ledger import block_from_dict, chain_id
from bladefl.chain.pow import BlockHeader, merkle_root, mine
from bladefl.chain.verify import verify_chain
from bladefl.cli import main
from bladefl.experiments.runs.runner import run_cell


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A real run (4 clients, K = 2 and 3) with its ledgers, models, summary and rounds.csv."""
    out = tmp_path_factory.mktemp("run")
    cfg = small_cfg(time={"K": [2, 3]}, chain={"save_models": True}, seed=3)
    run_cell(cfg, out, data=synthetic(), progress=False)
    return out


@pytest.fixture
def copy_of(run, tmp_path):
    target = tmp_path / "run"
    shutil.copytree(run, target)
    return target


def load(path):
    return json.loads(path.read_text())


def save(path, data):
    path.write_text(json.dumps(data))


def check(folder, K=3, summary=True, store=True):
    return verify_chain(folder / "chains" / f"K{K}.json", store=folder / "models" if store else None,
                        summary=folder / "summary.json" if summary else None)


def remine(data, start, seed=3):
    """Re-mine every block from ``start`` (0-based) on, re-linking each to the previous, and re-sign
    it with its miner's key derived from ``seed`` (None: an attacker without the keys leaves the old
    signature): what an attacker who changed block ``start`` does so that the chain verifies on
    its own."""
    prev = data["blocks"][start - 1]["hash"] if start else "0" * 64
    for raw in data["blocks"][start:]:
        block = block_from_dict(raw)
        header = BlockHeader(**{**raw["header"], "prev_hash": prev, "merkle_root": merkle_root(block.leaves()),
                                "nonce": 0})
        raw["header"] = mine(header).__dict__
        raw["hash"] = prev = BlockHeader(**raw["header"]).hash()
        if seed is not None:
            key = txm.derive_key(seed, raw["header"]["miner"])
            raw["signature"] = txm.sign_block(key, data["genesis"]["chain_id"], raw["hash"])


def resign(raw_tx, seed=3, **changes):
    """A transaction re-signed by its client's seed-derived key after ``changes``."""
    tx = {**raw_tx, **changes}
    signed = txm.sign_digest(txm.derive_key(seed, tx["client"]), tx["round"], tx["client"], tx["n_samples"],
                             tx["model_sha256"], tx["chain_id"])
    return signed.to_dict()


def test_the_real_run_verifies_whole(run):
    assert check(run) is None and check(run, K=2) is None


def test_another_ks_ledger_in_its_place_is_caught(copy_of):
    shutil.copy(copy_of / "chains/K2.json", copy_of / "chains/K3.json")
    problem = check(copy_of)
    assert problem.height == 0 and "K=2" in problem.reason and "K3.json" in problem.reason


def genesis_attack(change):
    def attack(folder):
        path = folder / "chains/K3.json"
        data = load(path)
        change(data["genesis"])
        save(path, data)
    return attack


ATTACKS = {
    "an added client with a huge sample count": (genesis_attack(
        lambda g: (g["public_keys"].append(txm.public_hex(txm.derive_key(99, 0))), g["n_samples"].append(10**9))),
        0, "genesis.public_keys"),
    "an inflated registered sample count": (genesis_attack(lambda g: g["n_samples"].__setitem__(0, 10**9)), 0,
                                            "genesis.n_samples"),
    "difficulty 0": (genesis_attack(lambda g: g.update(difficulty_bits=0)), 0, "genesis.difficulty_bits"),
    "negative difficulty": (genesis_attack(lambda g: g.update(difficulty_bits=-4)), 0, "genesis.difficulty_bits"),
    "null sample counts": (genesis_attack(lambda g: g.update(n_samples=None)), 0, "genesis.n_samples"),
    "a client's key replaced": (genesis_attack(
        lambda g: g["public_keys"].__setitem__(1, txm.public_hex(txm.derive_key(99, 1)))), 0, "genesis.public_keys"),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_forged_genesis_is_caught_against_the_runs_config(copy_of, name):
    attack, height, field = ATTACKS[name]
    attack(copy_of)
    problem = check(copy_of)
    assert problem is not None and problem.height == height and field in problem.reason


def test_an_easier_difficulty_with_every_block_remined_is_caught(copy_of):
    path = copy_of / "chains/K3.json"
    data = load(path)
    data["genesis"]["difficulty_bits"] = 2
    for raw in data["blocks"]:
        raw["header"]["difficulty_bits"] = 2
    remine(data, 0)
    save(path, data)
    assert check(copy_of, summary=False) is None  # valid on its own
    assert "genesis.difficulty_bits" in check(copy_of).reason


def store(folder, array):
    payload = array.astype("<f4").tobytes()
    (folder / "models" / f"{txm.digest(payload)}.bin").write_bytes(payload)
    return txm.digest(payload)


def stored(folder, digest):
    return np.frombuffer((folder / "models" / f"{digest}.bin").read_bytes(), dtype="<f4")


def test_a_forged_first_block_remined_after_is_named_by_its_height(copy_of):
    """The adversary with the seed: a new model for client 0 in round 1 (stored, re-signed), the
    global model recomputed and committed, every block re-mined. On its own the chain verifies
    (the threat model); against the run's rounds.csv block 1 is named."""
    path = copy_of / "chains/K3.json"
    data = load(path)
    block = data["blocks"][0]
    tx = block["transactions"][0]
    block["transactions"][0] = resign(tx, model_sha256=store(copy_of, stored(copy_of, tx["model_sha256"]) + 1))
    models = [stored(copy_of, t["model_sha256"]).astype(np.float64) for t in block["transactions"]]
    block["header"]["model_sha256"] = store(copy_of, np.mean(models, axis=0))
    remine(data, 0)
    save(path, data)
    assert check(copy_of, summary=False) is None
    problem = check(copy_of)
    assert problem.height == 1 and "rounds.csv" in problem.reason


def test_an_outcome_forged_without_the_miners_key_is_caught_on_its_own(copy_of, capsys):
    """Without the clients' keys (a forger who does not know the seed, or with chain.key_secret_file
    one who knows only the seed): a block's committed accuracy changed and every block re-mined
    verifies no more, even without the run's summary: the miner's signature covers the outcome."""
    path = copy_of / "chains/K3.json"
    data = load(path)
    data["blocks"][1]["header"]["test_accuracy"] = 0.99
    remine(data, 1, seed=None)
    save(path, data)
    problem = check(copy_of, summary=False, store=False)
    assert problem.height == 2 and "not signed by its miner" in problem.reason
    data["blocks"][1].pop("signature")
    save(path, data)
    assert main(["chain", "verify", str(path)]) == 1
    assert "field 'signature' is missing" in capsys.readouterr().out


def test_a_cut_ledger_is_caught_at_the_missing_block(copy_of):
    path = copy_of / "chains/K3.json"
    data = load(path)
    data["blocks"].pop()
    save(path, data)
    problem = check(copy_of)
    assert problem.height == 3 and "cut or replaced" in problem.reason


def test_without_the_seed_a_resigned_upload_fails_its_signature(copy_of):
    path = copy_of / "chains/K3.json"
    data = load(path)
    data["blocks"][1]["transactions"][2] = resign(data["blocks"][1]["transactions"][2], seed=4)  # another key
    remine(data, 1)
    save(path, data)
    problem = check(copy_of, summary=False)
    assert problem.height == 2 and "invalid signature" in problem.reason


def test_a_miner_that_is_no_client_is_named(copy_of):
    path = copy_of / "chains/K3.json"
    data = load(path)
    data["blocks"][0]["header"]["miner"] = 9
    remine(data, 0)
    save(path, data)
    problem = check(copy_of, summary=False)
    assert problem.height == 1 and "header.miner" in problem.reason


KEY = "ab" * 32


def edit(path_fn):
    def apply(data):
        path_fn(data)
        return data
    return apply


MALFORMED = {
    "sample counts shorter than the keys": (edit(lambda d: d["genesis"]["n_samples"].pop()), "genesis.n_samples"),
    "a signature that is a number": (edit(lambda d: d["blocks"][0]["transactions"][0].update(signature=1)),
                                     "transactions[0].signature"),
    "a float client id": (edit(lambda d: d["blocks"][0]["transactions"][1].update(client=1.0)),
                          "transactions[1].client"),
    "a difficulty as text": (edit(lambda d: d["genesis"].update(difficulty_bits="8")), "genesis.difficulty_bits"),
    "a key that is not hex": (edit(lambda d: d["genesis"]["public_keys"].__setitem__(0, "zz" * 32)),
                              "genesis.public_keys[0]"),
    "difficulty 300": (edit(lambda d: d["genesis"].update(difficulty_bits=300)), "genesis.difficulty_bits"),
    "a 5000-digit nonce": (lambda d: json.dumps(d).replace('"nonce": ', '"nonce": ' + "9" * 5000, 1), "digits"),
    "a 100-digit nonce": (edit(lambda d: d["blocks"][1]["header"].update(nonce=10**100)), "header.nonce"),
    "a height as text": (edit(lambda d: d["blocks"][0]["header"].update(height="1")), "header.height"),
    "blocks that are no list": (edit(lambda d: d.update(blocks={})), "blocks"),
    "a null header": (edit(lambda d: d["blocks"][0].update(header=None)), "header"),
    "transactions as an object": (edit(lambda d: d["blocks"][0].update(transactions={})), "transactions"),
    "an extra transaction field": (edit(lambda d: d["blocks"][0]["transactions"][0].update(bonus=1)), "bonus"),
    "an exclusion without a reason": (edit(lambda d: d["blocks"][0].update(excluded=[{"client": 0, "tx_hash": KEY}])),
                                      "excluded[0].reason"),
    "a timestamp that is NaN": (edit(lambda d: d["blocks"][0]["header"].update(timestamp=float("nan"))),
                                "header.timestamp"),
    "a genesis that is a list": (edit(lambda d: d.update(genesis=[])), "genesis"),
    "no public keys": (edit(lambda d: d["genesis"].update(public_keys=[])), "genesis.public_keys"),
    "a hash that is a number": (edit(lambda d: d["blocks"][2].update(hash=5)), "hash"),
    "a block that is text": (edit(lambda d: d["blocks"].__setitem__(1, "block")), "JSON object"),
    "a chain id that is a list": (edit(lambda d: d["genesis"].update(chain_id=[1])), "genesis.chain_id"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_ledger_is_one_line_naming_the_field(copy_of, capsys, name):
    mutate, field = MALFORMED[name]
    path = copy_of / "chains/K3.json"
    mutated = mutate(load(path))
    path.write_text(mutated) if isinstance(mutated, str) else save(path, mutated)
    before = sorted(p.name for p in copy_of.rglob("*"))
    assert main(["chain", "verify", str(path), "--store", str(copy_of / "models")]) == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and field in out and not err
    assert sorted(p.name for p in copy_of.rglob("*")) == before  # nothing written


@pytest.mark.parametrize("content, field", [
    ("[]", "'config'"), ('{"per_K": []}', "'config'"), ('{"config": {}, "per_K": {}}', "'per_K'"),
    ('{"config": {"seed": 3}, "per_K": [{"K": 3}]}', "config.time.K"), ("{", "not valid JSON"), ("", "not valid JSON"),
    ('{"config": {"time": {"K": [3]}}, "per_K": [{"K": 3}, {"K": 3}]}', "K=3 given twice"),
])
def test_a_malformed_summary_is_one_line(copy_of, capsys, content, field):
    (copy_of / "summary.json").write_text(content)
    code = main(["chain", "verify", str(copy_of / "chains/K3.json"), "--summary", str(copy_of / "summary.json")])
    out, err = capsys.readouterr()
    assert code == 1 and len(out.splitlines()) == 1 and field in out and not err


@pytest.mark.parametrize("content", ["", "null", "3", '"text"', "[" * 100_000, "\x00\xff"])
def test_a_ledger_that_is_no_ledger_is_one_line(tmp_path, capsys, content):
    path = tmp_path / "K3.json"
    path.write_bytes(content.encode("latin-1"))
    assert main(["chain", "verify", str(path)]) == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and not err


# --- a seeded mutation loop ---------------------------------------------------------------------

VALUES = [None, True, 0, -1, 1, 2**70, 1.5, float("inf"), "", "x", "0" * 64, [], {}, [1], {"a": 1},
          -(2**70), 2**63, 1e308, -1e308, -0.0, "\u0663", "-1", [[]], [None], {"": None}]


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*prefix, i))


def mutate(data, rng):
    """One random mutation of a ledger: a field's value, type or presence, a list's length or order."""
    data = copy.deepcopy(data)
    target = rng.choice(list(paths(data))[1:])
    parent = data
    for step in target[:-1]:
        parent = parent[step]
    key, kind = target[-1], rng.randrange(5)
    if kind == 0:
        parent[key] = rng.choice(VALUES)
    elif kind == 1:
        del parent[key]
    elif kind == 2 and isinstance(parent[key], list) and parent[key]:
        parent[key].append(copy.deepcopy(parent[key][0]))
    elif kind == 3 and isinstance(parent[key], list) and len(parent[key]) > 1:
        parent[key].reverse()
    elif isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
        parent[key] = parent[key] + rng.choice([-1, 1, 0.5])
    elif isinstance(parent[key], str):
        parent[key] = parent[key][:-1] + rng.choice("0fz")
    else:
        parent[key] = rng.choice(VALUES)
    return data


def test_random_mutations_always_end_in_one_line(copy_of, capsys):
    """Thousands of seeded mutations (values, types, presence, lengths, orders, truncations): the
    verifier ends every one in exit 3 (consistent: keys from the seed, no anchor) or 1 and one line,
    and exit 3 only when the ledger is the original or an equivalent (a no-op mutation)."""
    rng = random.Random(0)
    path = copy_of / "chains/K3.json"
    original = load(path)
    text = json.dumps(original)
    args = ["chain", "verify", str(path), "--store", str(copy_of / "models"), "--summary",
            str(copy_of / "summary.json")]
    for i in range(1500):
        if i % 10 == 9:
            path.write_text(text[: rng.randrange(len(text))])  # truncated
            changed = True
        else:
            mutated = mutate(original, rng)
            save(path, mutated)
            changed = mutated != original
        code = main(args)
        out, err = capsys.readouterr()
        assert code in (3, 1) and len(out.splitlines()) == 1 and not err, (i, out, err)
        assert code == 1 or not changed, (i, out)


def test_the_chain_id_of_a_real_run_is_its_configs(run):
    summary = load(run / "summary.json")
    assert load(run / "chains/K3.json")["genesis"]["chain_id"] == chain_id(summary["config"], 3)


# --- what the results rest on, on the chain ---------------------------------------------------------


def test_every_block_commits_the_global_model_fedavg_gives_and_its_metrics(run):
    """verify --store re-derives every round's global model from the stored uploads; the last
    block's commitment is the run's final model and the summary's final metrics."""
    from bladefl.chain.verify import global_model_problem
    from bladefl.fl.engine import run_k

    data = load(run / "chains/K3.json")
    assert all(b["header"]["model_sha256"] for b in data["blocks"])
    for raw in data["blocks"]:
        assert global_model_problem(block_from_dict(raw), run / "models") is None
    final = next(k for k in load(run / "summary.json")["per_K"] if k["K"] == 3)
    last = data["blocks"][-1]["header"]
    assert (last["train_loss"], last["test_loss"], last["test_accuracy"]) == (
        final["train_loss"], final["test_loss"], final["test_accuracy"])
    again = run_k(small_cfg(time={"K": [2, 3]}, seed=3), synthetic(), 3)
    assert txm.digest(again.model.numpy().astype("<f4").tobytes()) == last["model_sha256"]


@pytest.mark.parametrize("column", ["test_accuracy", "train_loss", "test_loss", "miner", "n_in_block"])
def test_a_one_number_edit_of_rounds_csv_is_caught(copy_of, column):
    import pandas as pd

    rounds = pd.read_csv(copy_of / "rounds.csv")
    row = rounds.index[(rounds.K == 3) & (rounds["round"] == 2)][0]
    rounds.loc[row, column] = rounds.loc[row, column] + 1
    rounds.to_csv(copy_of / "rounds.csv", index=False)
    problem = check(copy_of)
    assert problem.height == 2 and column in problem.reason and "rounds.csv" in problem.reason


@pytest.mark.parametrize("field", ["test_accuracy", "train_loss", "test_loss"])
def test_a_one_number_edit_of_the_summary_is_caught(copy_of, field):
    summary = load(copy_of / "summary.json")
    entry = next(k for k in summary["per_K"] if k["K"] == 3)
    entry[field] += 0.001
    save(copy_of / "summary.json", summary)
    problem = check(copy_of)
    assert problem.height == 3 and field in problem.reason and "summary.json" in problem.reason


def test_an_edited_global_model_in_the_store_is_caught(copy_of):
    header = load(copy_of / "chains/K3.json")["blocks"][1]["header"]
    target = copy_of / "models" / f"{header['model_sha256']}.bin"
    blob = bytearray(target.read_bytes())
    blob[0] ^= 1
    target.write_bytes(bytes(blob))
    problem = check(copy_of, summary=False)
    assert problem.height == 2 and "global model does not match" in problem.reason


def test_a_huge_integer_metric_or_an_endless_csv_field_is_a_named_problem_not_a_traceback(copy_of, capsys):
    """A 400-digit integer where the summary records an accuracy (no float holds it) and a
    rounds.csv field over the csv module's 131,072-character limit: each one line, exit 1."""
    genuine = load(copy_of / "summary.json")
    summary = load(copy_of / "summary.json")
    summary["per_K"][-1]["test_accuracy"] = int("9" * 400)
    save(copy_of / "summary.json", summary)
    ledger = str(copy_of / "chains" / "K3.json")
    assert main(["chain", "verify", ledger, "--summary", str(copy_of / "summary.json")]) == 1
    assert "an integer of 400 digits, more than any run records" in capsys.readouterr().out
    save(copy_of / "summary.json", genuine)
    rounds = (copy_of / "rounds.csv").read_text().splitlines()
    rounds[1] = rounds[1] + "," + "1" * 140_000
    (copy_of / "rounds.csv").write_text("\n".join(rounds) + "\n")
    assert main(["chain", "verify", ledger, "--summary", str(copy_of / "summary.json")]) == 1
    out = capsys.readouterr()
    assert "rounds.csv" in out.out and "not a readable CSV" in out.out and "Traceback" not in out.err


def test_a_summary_naming_a_million_clients_is_refused_before_any_key_is_derived(copy_of):
    """partition.N = 10**6 in the summary, the ledger's chain id re-derived to match: the verifier
    compares N with the genesis' keys first instead of deriving a million key pairs."""
    summary = load(copy_of / "summary.json")
    summary["config"]["partition"]["N"] = 10**6
    save(copy_of / "summary.json", summary)
    data = load(copy_of / "chains/K3.json")
    data["genesis"]["chain_id"] = chain_id(summary["config"], 3)
    save(copy_of / "chains/K3.json", data)
    problem = check(copy_of, store=False)  # before the check: a million key derivations, minutes
    assert "'genesis.public_keys' holds 4 clients' keys" in problem.reason, problem
    assert "has partition.N = 1000000" in problem.reason


def _edit_rounds(change):
    def attack(folder):
        path = folder / "rounds.csv"
        lines = path.read_text().splitlines()
        path.write_text("\n".join(change(lines)) + "\n")
    return attack


def _k3(lines, i=0):
    """The index in ``lines`` of the i-th row of K=3."""
    return [n for n, line in enumerate(lines) if line.startswith("3,")][i]


ROUNDS_EDITS = {
    "K as 3.0": (_edit_rounds(lambda ls: [*ls[:_k3(ls)], "3.0" + ls[_k3(ls)][1:], *ls[_k3(ls) + 1:]]), "plain integer"),
    "K as ' 3'": (_edit_rounds(lambda ls: [*ls[:_k3(ls)], " 3" + ls[_k3(ls)][1:], *ls[_k3(ls) + 1:]]), "plain integer"),
    "round as 2.0": (_edit_rounds(lambda ls: [*ls[:_k3(ls, 1)], ls[_k3(ls, 1)].replace("3,2,", "3,2.0,", 1),
                                               *ls[_k3(ls, 1) + 1:]]), "plain integer"),
    "a byte-order mark": (_edit_rounds(lambda ls: ["\ufeff" + ls[0], *ls[1:]]), "byte-order mark"),
    "a forged row before the genuine one": (_edit_rounds(lambda ls: [*ls[:_k3(ls)], ls[_k3(ls)], *ls[_k3(ls):]]),
                                            "a second row for K=3, round 1"),
    "a row for a round without a block": (_edit_rounds(lambda ls: [*ls, ls[_k3(ls)].replace("3,1,", "3,9,", 1)]),
                                          "round 9, which has no block"),
    "K=3's rows deleted": (_edit_rounds(lambda ls: [line for line in ls if not line.startswith("3,")]),
                           "no row for K=3, round(s) [1, 2, 3]"),
    "the file deleted": (lambda folder: (folder / "rounds.csv").unlink(), "No such file"),
}


@pytest.mark.parametrize("name", list(ROUNDS_EDITS))
def test_rounds_csv_is_read_strictly_against_the_ledger(copy_of, name):
    """What passed before (the analyses' pandas read the forged values): each is a problem now."""
    attack, reason = ROUNDS_EDITS[name]
    attack(copy_of)
    problem = check(copy_of)
    assert problem is not None and reason in problem.reason, (name, problem)


def _forge_tau(folder):
    """K=3's tau one more in the summary and in every K=3 row of rounds.csv (the two agree; the
    blocks do not record tau): only the config's time model can tell."""
    import pandas as pd

    summary = load(folder / "summary.json")
    entry = next(k for k in summary["per_K"] if k["K"] == 3)
    entry["tau"] += 1
    save(folder / "summary.json", summary)
    rounds = pd.read_csv(folder / "rounds.csv")
    rounds.loc[rounds.K == 3, "tau"] += 1
    rounds.to_csv(folder / "rounds.csv", index=False)


SUMMARY_FORGERIES = {
    "tau forged in both files": (_forge_tau, "K=3: tau = "),
    "an ok K turned infeasible": (lambda f: save(f / "summary.json", {**load(f / "summary.json"), "per_K": [
        {**k, "status": "infeasible"} if k["K"] == 2 else k for k in load(f / "summary.json")["per_K"]]}),
        "the summary calls it infeasible"),
    "two blocks recorded for K=3": (lambda f: save(f / "summary.json", {**load(f / "summary.json"), "per_K": [
        {**k, "blocks": 2} if k["K"] == 3 else k for k in load(f / "summary.json")["per_K"]]}),
        "2 blocks, but a run of K rounds mines K = 3"),
    "a second per_K entry for K=3": (lambda f: save(f / "summary.json", {**load(f / "summary.json"), "per_K": [
        *load(f / "summary.json")["per_K"], load(f / "summary.json")["per_K"][-1]]}), "K=3 given twice"),
}


@pytest.mark.parametrize("name", list(SUMMARY_FORGERIES))
def test_summary_forgeries_the_blocks_cannot_see_are_caught(copy_of, capsys, name):
    """Fields the analyses use but no block records (tau, status, the count of blocks, a duplicate
    entry): each forgery exits 1 with one line naming it, as the analyses refuse it too."""
    from bladefl.experiments.runs.run_checks import read_checked_run

    forge, reason = SUMMARY_FORGERIES[name]
    forge(copy_of)
    code = main(["chain", "verify", str(copy_of / "chains/K3.json"), "--summary", str(copy_of / "summary.json")])
    out = capsys.readouterr().out
    assert code == 1 and len(out.splitlines()) == 1 and reason in out, out
    with pytest.raises(ValueError, match=reason.split(":")[0]):
        read_checked_run(copy_of / "summary.json")


@pytest.fixture(scope="module")
def secret_run(tmp_path_factory):
    """A real run whose keys derive from a key secret (chain.key_secret_file) kept beside it."""
    out = tmp_path_factory.mktemp("secret_run")
    secret = out / "secret.key"
    secret.write_bytes(b"a secret kept outside the results")
    cfg = small_cfg(time={"K": [2]}, chain={"key_secret_file": str(secret)}, seed=4)
    run_cell(cfg, out / "run", data=synthetic(), progress=False)
    return out / "run", secret


def test_a_key_secret_is_given_to_the_verifier_never_read_from_the_summary(secret_run, tmp_path, capsys):
    """The verifier derives the keys from its own copy of the secret: without one it says it cannot
    check the genesis; with it the run verifies. A forger who knows only the seed sets the summary's
    key_secret_file to '' and writes a genesis of the seed's keys (chain id re-derived): caught,
    since the path the summary names is never read."""
    from bladefl.chain.round import genesis_ledger

    run, secret = secret_run
    ledger, summary = str(run / "chains/K2.json"), str(run / "summary.json")
    assert main(["chain", "verify", ledger, "--summary", summary]) == 1
    assert "give the verifier its own copy (--key-secret FILE" in capsys.readouterr().out
    assert main(["chain", "verify", ledger, "--summary", summary, "--key-secret", str(secret)]) == 0
    capsys.readouterr()

    forged = tmp_path / "run"
    shutil.copytree(run, forged)
    data = load(forged / "summary.json")
    data["config"]["chain"]["key_secret_file"] = ""
    save(forged / "summary.json", data)
    chain = load(forged / "chains/K2.json")
    config = data["config"]
    seed_keys = genesis_ledger(config["seed"], config["partition"]["N"], config["partition"]["n"],
                               config["chain"]["difficulty_bits"], chain_id(config, 2))
    chain["genesis"].update(chain_id=seed_keys.chain_id, public_keys=seed_keys.public_keys)
    save(forged / "chains/K2.json", chain)
    code = main(["chain", "verify", str(forged / "chains/K2.json"), "--summary", str(forged / "summary.json"),
                 "--key-secret", str(secret)])
    assert code == 1 and "'genesis.public_keys' is not what the run's config gives" in capsys.readouterr().out


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_bytes(b""), "is empty"),
    (lambda p: os.mkfifo(p), "a FIFO, device or socket"),
    (lambda p: None, "No such file"),
])
def test_a_verifier_secret_that_is_empty_a_fifo_or_missing_is_one_line(secret_run, tmp_path, capsys, make, message):
    run, _ = secret_run
    path = tmp_path / "secret"
    make(path)
    code = main(["chain", "verify", str(run / "chains/K2.json"), "--summary", str(run / "summary.json"),
                 "--key-secret", str(path)])
    captured = capsys.readouterr()
    assert code == 2 and message in captured.err and len(captured.err.splitlines()) == 1 and not captured.out


def test_an_imported_runs_ledgers_are_verified_as_chain_verify_does(copy_of):
    """bladefl import-runs holds a run's ledgers to its files with the verifier's checks: a real run
    passes; a block's accuracy forged (re-mined, re-signed with the seed's keys) is named, and so
    is a run missing the ledger of a K that trained."""
    from bladefl.experiments.bundles.run_import import ledger_problems

    def files(folder):
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
                if p.is_file() and (p.name in ("summary.json", "rounds.csv") or p.parent.name == "chains")}

    assert ledger_problems(files(copy_of)) == []
    data = load(copy_of / "chains/K3.json")
    data["blocks"][1]["header"]["test_accuracy"] = 0.99
    remine(data, 1)
    save(copy_of / "chains/K3.json", data)
    problems = ledger_problems(files(copy_of))
    assert len(problems) == 1 and problems[0].startswith("chains/K3.json: block 2: block hash"), problems
    without = {k: v for k, v in files(copy_of).items() if k != "chains/K2.json"}
    assert "chains/K2.json missing" in ledger_problems(without)[0]


def test_a_ledger_rewritten_with_the_seeds_keys_is_consistent_never_valid_and_an_anchor_catches_it(
        run, copy_of, tmp_path, capsys):
    """Keys from the seed: whoever knows it re-mines and re-signs a changed block and everything after,
    and the ledger verifies on its own. The verifier then says "consistent, but unanchored" (exit 3),
    never "valid"; an anchor written from the honest run (as `bladefl keep` writes one into a bundle)
    names the forgery (exit 1) and makes the honest ledger valid (exit 0)."""
    anchor = tmp_path / "anchors.json"
    assert main(["chain", "anchor", "--summary", str(run / "summary.json"), "--out", str(anchor)]) == 0
    assert len(json.loads(anchor.read_text())["chains"]) == 2  # K = 2 and 3
    honest = ["chain", "verify", str(run / "chains/K3.json"), "--summary", str(run / "summary.json")]
    assert main(honest) == 3 and "consistent, its tip is the run's" in capsys.readouterr().out
    assert main([*honest, "--anchor", str(anchor)]) == 0
    assert f"chain valid, its tip is the run's ({run / 'summary.json'}), anchored by the anchor" in \
        capsys.readouterr().out
    path = copy_of / "chains/K3.json"
    data = load(path)
    data["blocks"][1]["header"]["test_accuracy"] = 0.99
    remine(data, 1)  # re-signed with the seed's keys: consistent on its own
    save(path, data)
    assert main(["chain", "verify", str(path)]) == 3
    assert "consistent, but unanchored: anyone holding the run's seed could have written it" in capsys.readouterr().out
    assert main(["chain", "verify", str(path), "--anchor", str(anchor)]) == 1
    out = capsys.readouterr().out
    assert "the anchor records this chain ending at block 3" in out and len(out.splitlines()) == 1


def test_a_run_of_another_config_is_not_in_the_anchor(run, tmp_path, capsys):
    anchor = tmp_path / "anchors.json"
    assert main(["chain", "anchor", "--summary", str(run / "summary.json"), "--out", str(anchor)]) == 0
    other = tmp_path / "other"
    run_cell(small_cfg(time={"K": [2]}, seed=5), other, data=synthetic(), progress=False)
    code = main(["chain", "verify", str(other / "chains/K2.json"), "--summary", str(other / "summary.json"),
                 "--anchor", str(anchor)])
    assert code == 1 and "the anchor records no chain" in capsys.readouterr().out


@pytest.mark.parametrize("content, said", [
    ("{}", "not an anchor file (needs"),
    ("not json", "not an anchor file"),
    ('{"format": "bladefl-anchors/1", "chains": {"../x": {"tip": "00", "blocks": 1}}}', "is not a chain id"),
    ('{"format": "bladefl-anchors/1", "chains": {"' + "a" * 64 + '": {"tip": "' + "b" * 64 + '", "blocks": true}}}',
     "is not a chain id"),
])
def test_a_bad_anchor_file_is_one_line_exit_2(run, tmp_path, capsys, content, said):
    (tmp_path / "a.json").write_text(content)
    code = main(["chain", "verify", str(run / "chains/K2.json"), "--anchor", str(tmp_path / "a.json")])
    err = capsys.readouterr().err
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("make, said", [
    (lambda p: os.truncate(p, 8 << 30), "more than the"),  # a sparse 8 GB file: refused from its size
    (lambda p: (p.unlink(), os.mkfifo(p)), "not a regular file"),  # a FIFO: refused, not waited on
])
def test_a_store_file_that_is_no_model_is_one_line_not_a_memory_error(copy_of, capsys, make, said):
    path = copy_of / "chains/K3.json"
    first = load(path)["blocks"][0]["transactions"][0]["model_sha256"]
    make(copy_of / "models" / f"{first}.bin")
    code = main(["chain", "verify", str(path), "--store", str(copy_of / "models")])
    out = capsys.readouterr().out
    assert code == 1 and said in out and len(out.splitlines()) == 1, out


def _sync(folder, data, K=3):
    """The run's records made to agree with a re-mined ledger: rounds.csv's hashes and the summary's tip."""
    import pandas as pd

    save(folder / f"chains/K{K}.json", data)
    rounds = pd.read_csv(folder / "rounds.csv")
    for raw in data["blocks"]:
        rounds.loc[(rounds.K == K) & (rounds["round"] == raw["header"]["height"]), "block_hash"] = raw["hash"]
    rounds.to_csv(folder / "rounds.csv", index=False)
    summary = load(folder / "summary.json")
    for entry in summary["per_K"]:
        if entry["K"] == K:
            entry["tip"] = data["blocks"][-1]["hash"]
    save(folder / "summary.json", summary)


def _metric_dropped(folder):
    data = load(folder / "chains/K3.json")
    data["blocks"][1]["header"]["test_accuracy"] = None
    remine(data, 1)  # the hash leaves out an outcome field without a value
    del data["blocks"][1]["header"]["test_accuracy"]  # the model's digest kept
    _sync(folder, data)


def _metric_huge(folder):
    data = load(folder / "chains/K3.json")
    data["blocks"][1]["header"]["test_loss"] = int("9" * 400)
    remine(data, 1)
    _sync(folder, data)


def _alpha_zero(folder):
    """alpha 0 in the summary's config, every block re-signed for the chain id that config gives."""
    summary = load(folder / "summary.json")
    summary["config"]["time"]["alpha"] = 0
    save(folder / "summary.json", summary)
    data = load(folder / "chains/K3.json")
    cid = chain_id(summary["config"], 3)
    data["genesis"]["chain_id"] = cid
    for raw in data["blocks"]:
        raw["transactions"] = [resign(t, chain_id=cid) for t in raw["transactions"]]
    remine(data, 0)
    _sync(folder, data)


@pytest.mark.parametrize("forge, said", [
    (_metric_dropped, "header.test_accuracy' is missing"), (_metric_huge, "header.test_loss"),
    (_alpha_zero, "alpha")], ids=["metric-dropped", "metric-400-digits", "alpha-zero"])
def test_the_last_three_malformed_ledger_tracebacks_are_one_line(copy_of, capsys, forge, said):
    """Issue 61, item 5: a header that lost test_accuracy but kept its model's digest (TypeError), one whose
    test_loss is a 400-digit integer (OverflowError), a summary with alpha 0 whose blocks were re-signed for
    its chain id (ZeroDivisionError): each exits 1 with one line naming what is wrong."""
    forge(copy_of)
    code = main(["chain", "verify", str(copy_of / "chains/K3.json"), "--summary", str(copy_of / "summary.json")])
    out = capsys.readouterr()
    assert code == 1 and "Traceback" not in out.err and len(out.out.strip().splitlines()) == 1, out
    assert said in out.out, out.out
