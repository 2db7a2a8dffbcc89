"""The IDX file format of MNIST and Fashion-MNIST (big-endian header, unsigned bytes)."""

from __future__ import annotations

import struct

import numpy as np

_UBYTE = 0x08


def encode(array: np.ndarray) -> bytes:
    """Encode a uint8 array of any rank as IDX bytes."""
    if array.dtype != np.uint8:
        raise TypeError(f"IDX encoding supports uint8 arrays only, got {array.dtype}")
    header = struct.pack(">HBB", 0, _UBYTE, array.ndim)
    header += struct.pack(f">{array.ndim}I", *array.shape)
    return header + np.ascontiguousarray(array).tobytes()


def decode(data: bytes) -> np.ndarray:
    """Decode IDX bytes (unsigned byte payload) into a numpy array; a malformed file is a
    ValueError saying what is wrong (never a struct error)."""
    if len(data) < 4:
        raise ValueError(f"too short for an IDX header ({len(data)} bytes)")
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != _UBYTE:
        raise ValueError("not an unsigned-byte IDX file")
    if len(data) < 4 + 4 * ndim:
        raise ValueError(f"the header announces {ndim} dimensions but the file ends after {len(data)} bytes")
    shape = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    payload = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if payload.size != int(np.prod(shape)):
        raise ValueError(f"IDX payload has {payload.size} bytes, header says shape {shape}")
    return payload.reshape(shape)
