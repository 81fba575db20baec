"""Reader of the IDX format (MNIST, Fashion-MNIST), used by adamcb's and qnbo's real rungs.

IDX (LeCun et al.): two zero bytes, a type code, the number of dimensions, one big-endian
uint32 per dimension, then the array in C order. Files are usually gzip-compressed.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

# IDX type codes -> big-endian numpy dtypes
_DTYPES = {
    0x08: ">u1",
    0x09: ">i1",
    0x0B: ">i2",
    0x0C: ">i4",
    0x0D: ">f4",
    0x0E: ">f8",
}


class IdxError(ValueError):
    """A file that is not a whole IDX array; the message names it."""


def read_idx(path: str | Path) -> np.ndarray:
    """The array stored in an IDX file (``.gz`` or raw), in native byte order.

    Raises:
        IdxError: naming the file, when its header or length is not a valid IDX array
            (a truncated or corrupt download, or another file).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError, zlib.error) as err:
        raise IdxError(f"{path}: not a readable (gzip) IDX file ({err})") from err
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES:
        raise IdxError(f"{path}: no IDX header (expected 00 00 <type> <ndim>)")
    dtype, ndim = np.dtype(_DTYPES[data[2]]), data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise IdxError(f"{path}: header truncated")
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = header + int(np.prod(shape)) * dtype.itemsize
    if len(data) != expected:
        raise IdxError(f"{path}: {len(data)} bytes, an array of shape {shape} needs {expected}")
    return (
        np.frombuffer(data, dtype=dtype, offset=header)
        .reshape(shape)
        .astype(dtype.newbyteorder("="))
    )
