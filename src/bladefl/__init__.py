"""BLADE-FL: blockchain-assisted decentralized federated learning, as a reproducible pipeline."""

__version__ = "0.2.0"
