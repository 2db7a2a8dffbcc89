"""Transactions, proof of work, validation, and `bladefl chain verify` against tampering."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bladefl.chain import transactions as txm
from bladefl.chain.ledger import Block, Ledger, block_problem, majority_accepts
from bladefl.chain.pow import BlockHeader, meets_target, merkle_root, mine, race
from bladefl.chain.verify import verify_chain
from bladefl.cli import main


def sealed(header, txs, keys, chain, excluded=()):
    """The block of ``header`` and ``txs``, signed by its miner (as the engine's miner signs it)."""
    return Block(header, tuple(txs), tuple(excluded), txm.sign_block(keys[header.miner], chain, header.hash()))


def make_chain(tmp_path, rounds=3, N=4, bits=8, store=True, chain="chain-A"):
    keys = [txm.derive_key(7, i) for i in range(N)]
    ledger = Ledger([txm.public_hex(k) for k in keys], bits, chain_id=chain, n_samples=[512] * N)
    models = tmp_path / "models"
    models.mkdir(exist_ok=True)
    for k in range(1, rounds + 1):
        txs = []
        for i in range(N):
            payload = np.full(5, k * 10 + i, dtype="<f4").tobytes()
            (models / f"{txm.digest(payload)}.bin").write_bytes(payload)
            txs.append(txm.sign(keys[i], k, i, 512, payload, chain))
        header = mine(BlockHeader(ledger.height, ledger.tip, merkle_root([t.tx_hash() for t in txs]), k % N,
                                  float(k), bits))
        ok, votes, _ = majority_accepts(sealed(header, txs, keys, chain), ledger, validators=N)
        assert ok and votes == N
        ledger.blocks.append(sealed(header, txs, keys, chain))
    path = tmp_path / "chain.json"
    ledger.save(path)
    return path, models


def test_keys_are_deterministic_and_distinct():
    assert txm.public_hex(txm.derive_key(1, 0)) == txm.public_hex(txm.derive_key(1, 0))
    assert txm.public_hex(txm.derive_key(1, 0)) != txm.public_hex(txm.derive_key(1, 1))
    assert txm.public_hex(txm.derive_key(1, 0)) != txm.public_hex(txm.derive_key(2, 0))


def test_forged_signature_and_wrong_payload_are_rejected():
    key, other = txm.derive_key(0, 0), txm.derive_key(0, 1)
    payload = b"model-bytes"
    tx = txm.sign(key, 1, 0, 512, payload)
    assert txm.check(tx, key.public_key(), payload) is None
    forged = txm.sign(other, 1, 0, 512, payload)  # client 1 signs in the name of client 0
    assert txm.check(forged, key.public_key(), payload) == "invalid signature"
    assert txm.check(replace(tx, n_samples=10_000), key.public_key(), payload) == "invalid signature"
    assert txm.check(tx, key.public_key(), b"model-bytez") == "payload does not match its digest"


def test_mined_header_meets_target_and_altered_one_is_checked():
    header = mine(BlockHeader(1, "0" * 64, "ab" * 32, 3, 10.0, 12))
    assert meets_target(header)
    assert int(header.hash(), 16) < 1 << (256 - 12)
    bad = [n for n in range(50) if not meets_target(replace(header, nonce=n))]
    assert len(bad) >= 40  # most nonces fail at 12 bits: the check is real


def test_merkle_root_depends_on_every_leaf_and_order():
    leaves = [txm.digest(bytes([i])) for i in range(5)]
    root = merkle_root(leaves)
    assert root != merkle_root(leaves[::-1])
    assert root != merkle_root(leaves[:4] + [txm.digest(b"x")])


def test_race_is_fair_and_has_mean_beta():
    rng = np.random.default_rng(0)
    draws = [race(rng, 10, 6.0) for _ in range(20000)]
    wins = np.bincount([d.winner for d in draws], minlength=10) / len(draws)
    assert np.abs(wins - 0.1).max() < 0.02
    assert np.mean([d.elapsed for d in draws]) == pytest.approx(6.0, rel=0.03)


def test_saved_chain_verifies(tmp_path):
    path, models = make_chain(tmp_path)
    assert verify_chain(path, store=models) is None
    # its own keys sign it, nothing outside the file anchors it: consistent, unanchored (exit 3)
    assert main(["chain", "verify", str(path), "--store", str(models)]) == 3


def tamper(path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "mutate, height, reason",
    [
        (lambda d: d["blocks"][1]["header"].update(miner=0), 2, "field 'hash' does not match the header"),
        (lambda d: d["blocks"][2]["transactions"][1].update(n_samples=1), 3, "Merkle root"),
        (lambda d: d["blocks"].__setitem__(slice(0, 2), d["blocks"][1::-1]), 1, "height is 2, expected 1"),
        (lambda d: d["blocks"].pop(0), 1, "height is 2, expected 1"),
    ],
    ids=["header", "transaction", "order", "missing-block"],
)
def test_tampering_is_detected_with_height_and_reason(tmp_path, capsys, mutate, height, reason):
    path, models = make_chain(tmp_path)
    tamper(path, mutate)
    problem = verify_chain(path, store=models)
    assert problem is not None and problem.height == height and reason in problem.reason
    assert main(["chain", "verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"block {height}:" in out and f"last good height {height - 1}" in out and len(out.splitlines()) == 1


def test_rehashed_header_with_tampered_fields_fails_pow_or_link(tmp_path):
    path, models = make_chain(tmp_path)
    from bladefl.chain.ledger import block_from_dict

    def rehash(d):  # an attacker who also fixes the stored hash
        d["blocks"][0]["header"]["timestamp"] = 99.0
        d["blocks"][0]["hash"] = block_from_dict(d["blocks"][0]).hash

    tamper(path, rehash)
    problem = verify_chain(path, store=models)
    assert problem is not None and problem.height in (1, 2)
    assert "proof of work" in problem.reason or "previous hash" in problem.reason


def test_tampered_model_payload_is_detected(tmp_path):
    path, models = make_chain(tmp_path)
    victim = json.loads(path.read_text())["blocks"][1]["transactions"][2]["model_sha256"]
    f = models / f"{victim}.bin"
    blob = bytearray(f.read_bytes())
    blob[-1] ^= 0x01
    f.write_bytes(bytes(blob))
    problem = verify_chain(path, store=models)
    assert problem.height == 2 and "payload does not match its digest" in problem.reason


def round_one(forge: int):
    """An empty ledger of 4 clients and their round-1 transactions, one of them forged."""
    keys = [txm.derive_key(7, i) for i in range(4)]
    ledger = Ledger([txm.public_hex(k) for k in keys], 8)
    txs = [txm.sign(keys[i], 1, i, 512, b"m%d" % i) for i in range(4)]
    seen = frozenset(t.tx_hash() for t in txs)
    txs[forge] = replace(txs[forge], signature=txm.derive_key(9, 9).sign(txs[forge].message()).hex())
    header = mine(BlockHeader(1, ledger.tip, merkle_root([t.tx_hash() for t in txs]), 0, 1.0, 8))
    return ledger, txs, header, seen


def test_validators_reject_block_with_bad_signature():
    ledger, txs, header, _ = round_one(forge=2)
    ok, votes, reason = majority_accepts(Block(header, tuple(txs)), ledger, validators=4)
    assert not ok and votes == 0 and "client 2: invalid signature" in reason
    assert block_problem(Block(header, tuple(txs[:2] + txs[3:])), ledger.tip, 1, ledger.public_keys) == \
        "Merkle root does not match the transactions"


def test_signature_cache_only_skips_transactions_verified_on_reception():
    ledger, txs, header, seen = round_one(forge=1)  # the forged one was slipped in by the miner
    ok, _, reason = majority_accepts(Block(header, tuple(txs)), ledger, validators=4, verified=seen)
    assert not ok and "client 1: invalid signature" in reason


# --- attacks on the ledger (each passed validation before chain ids, duplicate and weight checks) -------------


def signed_block(ledger, keys, txs, bits=8):
    header = mine(BlockHeader(ledger.height, ledger.tip, merkle_root([t.tx_hash() for t in txs]), 0, 1.0, bits))
    return sealed(header, txs, keys, ledger.chain_id)


def ledger_of(N=4, chain="chain-A"):
    keys = [txm.derive_key(7, i) for i in range(N)]
    return Ledger([txm.public_hex(k) for k in keys], 8, chain_id=chain, n_samples=[512] * N), keys


def test_a_block_with_the_same_transaction_twice_is_rejected():
    ledger, keys = ledger_of()
    txs = [txm.sign(keys[i], 1, i, 512, b"m%d" % i, "chain-A") for i in range(4)]
    block = signed_block(ledger, keys, txs + [txs[2]])
    ok, votes, reason = majority_accepts(block, ledger, validators=4)
    assert not ok and votes == 0 and "client 2 has more than one transaction" in reason


def test_a_client_cannot_inflate_its_fedavg_weight():
    ledger, keys = ledger_of()
    txs = [txm.sign(keys[i], 1, i, 10_000 if i == 1 else 512, b"m%d" % i, "chain-A") for i in range(4)]
    assert txm.check(txs[1], keys[1].public_key(), b"m1") is None  # its own valid signature
    ok, _, reason = majority_accepts(signed_block(ledger, keys, txs), ledger, validators=4)
    assert not ok and "claims n_samples=10000, registered 512" in reason


def test_a_transaction_does_not_replay_into_another_runs_chain():
    ledger, keys = ledger_of(chain="chain-B")
    other = [txm.sign(keys[i], 1, i, 512, b"m%d" % i, "chain-A") for i in range(4)]  # signed for run A
    ok, _, reason = majority_accepts(signed_block(ledger, keys, other), ledger, validators=4)
    assert not ok and "names chain" in reason
    forged = replace(other[0], chain_id="chain-B")  # renaming the chain breaks the signature
    assert txm.check(forged, keys[0].public_key(), b"m0") == "invalid signature"


def test_engine_chains_of_different_K_and_seeds_have_distinct_ids():
    from bladefl.chain.ledger import chain_id

    config = {"seed": 0, "time": {"K": [3, 5]}}
    ids = {chain_id(config, 3), chain_id(config, 5), chain_id({**config, "seed": 1}, 3)}
    assert len(ids) == 3


def test_a_ledger_cut_after_a_block_is_caught_with_the_runs_summary(tmp_path, capsys):
    from bladefl.chain.ledger import chain_id

    config = {"seed": 7, "partition": {"N": 4, "n": 512}, "chain": {"difficulty_bits": 8},  # make_chain's
              "time": {"K": [3]}}
    cid = chain_id(config, 3)
    path, models = make_chain(tmp_path, rounds=3, chain=cid)
    data = json.loads(path.read_text())
    summary = tmp_path / "summary.json"
    metrics = ("train_loss", "test_loss", "test_accuracy")
    last = data["blocks"][-1]["header"]
    record = {"K": 3, "tau": 5, "status": "ok", "blocks": 3, "tip": data["blocks"][-1]["hash"],
              **{m: last.get(m, 0.5) for m in metrics}}
    summary.write_text(json.dumps({"config": config, "per_K": [record]}))
    lines = ["K,round,tau,status,block_hash," + ",".join(metrics)] + [  # every block's record, as a run writes it
        f"3,{i + 1},5,ok,{b['hash']}," + ",".join(repr(b["header"].get(m, 0.5)) for m in metrics)
        for i, b in enumerate(data["blocks"])]
    (tmp_path / "rounds.csv").write_text("\n".join(lines) + "\n")
    assert verify_chain(path, store=models, summary=summary) is None
    tamper(path, lambda d: d["blocks"].pop())  # cut after block 2: still a valid chain on its own
    assert verify_chain(path, store=models) is None
    problem = verify_chain(path, store=models, summary=summary)
    assert problem is not None and problem.last_good_height == 2 and "ledger ends at height 2" in problem.reason
    assert main(["chain", "verify", str(path), "--summary", str(summary)]) == 1
    assert "last good height 2" in capsys.readouterr().out


@pytest.mark.parametrize("content, where", [
    ('{"genesis": {"public_keys": [], "difficulty_bits": 8}, "blocks": [{"hash": "x"', "not valid JSON"),
    ('{"genesis": {"public_keys": ["%s"], "n_samples": [512]}, "blocks": []}' % ("ab" * 32),
     "field 'genesis.difficulty_bits' is missing"),
    ('{"genesis": {"public_keys": ["%s"], "n_samples": [512], "difficulty_bits": 8}, '
     '"blocks": [{"hash": "x", "transactions": []}]}' % ("ab" * 32), "block 1: field 'header' is missing"),
])
def test_a_truncated_or_malformed_ledger_gets_one_line_and_exit_1(tmp_path, capsys, content, where):
    path = tmp_path / "K3.json"
    path.write_text(content)
    before = sorted(tmp_path.iterdir())
    assert main(["chain", "verify", str(path)]) == 1
    out = capsys.readouterr()
    assert len(out.out.strip().splitlines()) == 1 and where in out.out and "Traceback" not in out.err
    assert sorted(tmp_path.iterdir()) == before  # nothing written


def test_faulty_validators_exercise_the_majority_rule():
    ledger, keys = ledger_of(N=10)
    txs = [txm.sign(keys[i], 1, i, 512, b"m%d" % i, "chain-A") for i in range(10)]
    block = signed_block(ledger, keys, txs)
    ok, votes, _ = majority_accepts(block, ledger, validators=10, faults=["reject"] * 4)
    assert ok and votes == 6
    ok, votes, reason = majority_accepts(block, ledger, validators=10, faults=["reject"] * 5)
    assert not ok and votes == 5 and "faulty validator" in reason
    rng = np.random.default_rng(0)
    counts = {majority_accepts(block, ledger, validators=10, faults=["random"] * 4, rng=rng)[1] for _ in range(40)}
    assert len(counts) > 1 and min(counts) >= 6  # random votes vary; the 6 honest ones always accept


def test_a_block_must_exclude_exactly_what_the_validators_detector_flags():
    from bladefl.chain.ledger import Exclusion

    ledger, keys = ledger_of()
    txs = [txm.sign(keys[i], 1, i, 512, b"m%d" % i, "chain-A") for i in range(4)]
    honest_block = signed_block(ledger, keys, txs[:3], bits=8)
    assert ledger.problem(honest_block, excluded=frozenset({3})) is not None  # client 3 flagged, not excluded
    exclusion = Exclusion(3, txs[3].tx_hash(), "flagged by gaussian_difference")
    header = mine(BlockHeader(ledger.height, ledger.tip, merkle_root([t.tx_hash() for t in txs[:3]]
                                                                     + [exclusion.leaf()]), 0, 1.0, 8))
    block = sealed(header, txs[:3], keys, ledger.chain_id, (exclusion,))
    assert ledger.problem(block, excluded=frozenset({3})) is None
    assert "excludes clients [3], the detector flags [1]" in ledger.problem(block, excluded=frozenset({1}))


def test_a_ledger_written_before_chain_ids_still_verifies(tmp_path):
    path, models = make_chain(tmp_path, chain="")  # transactions sign the pre-chain-id message
    assert verify_chain(path, store=models) is None
    message = json.loads(txm.Transaction(1, 0, 512, "ab").message())
    assert "chain_id" not in message
    assert "chain_id" in json.loads(txm.Transaction(1, 0, 512, "ab", chain_id="c").message())


def test_a_ledger_or_secret_that_is_a_fifo_a_device_or_empty_is_refused_without_blocking(tmp_path):
    """A FIFO as the ledger would block the verifier forever, /dev/zero would fill its memory, an
    empty key secret would silently give the seed-only keys: each is refused, naming the file."""
    import os

    from bladefl.chain.ledger_file import read_json
    from bladefl.chain.round import read_secret
    from bladefl.core.bounded_read import read_regular

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        problem = read_json(path, "the ledger")
        assert "is not a regular file" in problem.reason, problem
        with pytest.raises(OSError, match="not a regular file"):
            read_secret(str(path))
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(OSError, match="is empty: it would give the keys of the seed alone"):
        read_secret(str(tmp_path / "empty"))
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(OSError, match="is 11 bytes, more than the 10"):
        read_regular(tmp_path / "big", 10, "a file")
    assert read_secret("") == b"" and read_secret(str(tmp_path / "big")) == b"x" * 11
