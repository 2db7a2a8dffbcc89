"""BLADE-FL: blockchain-assisted decentralized federated learning, as a reproducible pipeline."""

__version__ = "0.1.0"
