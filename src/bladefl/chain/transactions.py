"""Step 2 of a round: signed model transactions (Ed25519, from the ``cryptography`` package).

A transaction holds the chain id (the run it belongs to: see :func:`bladefl.chain.ledger.chain_id`),
the round, the client id, the sample count and the SHA-256 of the uploaded model's canonical
bytes (see :mod:`bladefl.fl.mlp`), signed by the client's key, so a transaction signed for one
run does not verify in another. A receiver accepts it only if the signature verifies and the
payload it received hashes to the digest.

Keys are derived from the run seed: fine for a simulation (every run is reproducible, and
each client signs only its own uploads), not for a deployment, where a client's key is its
secret. With ``chain.key_secret_file`` they derive from the seed and a secret kept outside the
results (whoever holds the secret can re-verify; whoever knows only the seed cannot sign).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from dataclasses import asdict, dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def derive_key(seed: int, client: int, secret: bytes = b"") -> Ed25519PrivateKey:
    """A client's key pair, derived deterministically from the run seed, or from the seed and a
    ``secret`` (HMAC-SHA256) that is kept outside the results: then knowing the seed is not enough
    to sign."""
    label = f"bladefl-ed25519/{seed}/{client}".encode()
    material = hmac.new(secret, label, hashlib.sha256).digest() if secret else hashlib.sha256(label).digest()
    return Ed25519PrivateKey.from_private_bytes(material)


def public_hex(key: Ed25519PrivateKey) -> str:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def load_public(hex_key: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(bytes.fromhex(hex_key))


@dataclass(frozen=True)
class Transaction:
    round: int
    client: int
    n_samples: int
    model_sha256: str
    chain_id: str = ""
    signature: str = ""

    def message(self) -> bytes:
        """The signed bytes: canonical JSON of every field but the signature (a transaction without a
        chain id, as ledgers written before chain ids existed, signs the same bytes as then)."""
        body = {"round": self.round, "client": self.client, "n_samples": self.n_samples,
                "model_sha256": self.model_sha256}
        if self.chain_id:
            body["chain_id"] = self.chain_id
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @functools.cached_property
    def _hash(self) -> str:
        return hashlib.sha256(self.message() + bytes.fromhex(self.signature or "")).hexdigest()

    def tx_hash(self) -> str:
        """Leaf hash for the Merkle tree (covers the signature too); computed once per object."""
        return self._hash

    def to_dict(self) -> dict:
        return asdict(self)


def digest(payload: bytes | memoryview) -> str:
    """SHA-256 of a payload: its bytes, or any buffer of them (hashlib releases the GIL while it
    hashes a large buffer)."""
    return hashlib.sha256(payload).hexdigest()


def sign_digest(key: Ed25519PrivateKey, round_: int, client: int, n_samples: int, model_sha256: str,
                chain_id: str = "") -> Transaction:
    """The client's signed transaction for a payload of digest ``model_sha256``."""
    tx = Transaction(round_, client, n_samples, model_sha256, chain_id)
    return Transaction(round_, client, n_samples, model_sha256, chain_id, key.sign(tx.message()).hex())


def sign(key: Ed25519PrivateKey, round_: int, client: int, n_samples: int, payload: bytes,
         chain_id: str = "") -> Transaction:
    return sign_digest(key, round_, client, n_samples, digest(payload), chain_id)


def signature_ok(tx: Transaction, public: Ed25519PublicKey) -> bool:
    try:
        public.verify(bytes.fromhex(tx.signature), tx.message())
    except (InvalidSignature, ValueError):
        return False
    return True


def block_message(chain_id: str, block_hash: str) -> bytes:
    """What a block's miner signs: the block's hash (its header: height, previous hash, Merkle root,
    miner, proof of work and the round's outcome) for this chain."""
    return f"bladefl-block/{chain_id}/{block_hash}".encode()


def sign_block(key: Ed25519PrivateKey, chain_id: str, block_hash: str) -> str:
    return key.sign(block_message(chain_id, block_hash)).hex()


def block_signature_ok(signature: str, public: Ed25519PublicKey, chain_id: str, block_hash: str) -> bool:
    try:
        public.verify(bytes.fromhex(signature), block_message(chain_id, block_hash))
    except (InvalidSignature, ValueError):
        return False
    return True


def check(tx: Transaction, public: Ed25519PublicKey, payload: bytes | None) -> str | None:
    """Why a receiver rejects ``tx`` (None if it accepts): bad signature or digest mismatch."""
    if not signature_ok(tx, public):
        return "invalid signature"
    if payload is not None and digest(payload) != tx.model_sha256:
        return "payload does not match its digest"
    return None
