"""`mx.nd.save` / `mx.nd.load`: a list or a dict of NDArrays in one file.

The file is NumPy's .npz (a zip of .npy arrays), written to exactly the name given, as MXNet
does; loading never unpickles (allow_pickle=False), so a file cannot run code. MXNet's own binary
format is not read: save again from MXNet with numpy.savez to move arrays across.
"""

from __future__ import annotations

import zipfile

import numpy as np

import kit
from kit.mx.ndarray import NDArray

__all__ = ["load", "save"]

_KIND = "__kit_mx_nd_save__"  # "list" or "dict": what load gives back


def save(fname, data):
    """Save an NDArray, a list of NDArrays or a dict of str -> NDArray to `fname`.

    >>> import os, tempfile, kit.mx as mx
    >>> path = os.path.join(tempfile.mkdtemp(), "weights")
    >>> mx.nd.save(path, {"w": mx.nd.ones((2,))})
    >>> mx.nd.load(path)["w"].asnumpy()
    array([1., 1.], dtype=float32)
    """
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        kind, items = "dict", list(data.items())
        bad = [k for k, _ in items if not isinstance(k, str) or k == _KIND]
        if bad:
            raise TypeError(f"mx.nd.save: dict keys must be strings (not {_KIND!r}), got {bad!r}")
    elif isinstance(data, (list, tuple)):
        kind, items = "list", [(str(i), v) for i, v in enumerate(data)]
    else:
        raise TypeError(
            f"mx.nd.save: data must be an NDArray, a list of NDArrays or a dict of str -> "
            f"NDArray, got {type(data).__name__}"
        )
    arrays = {}
    for key, value in items:
        if not isinstance(value, NDArray):
            raise TypeError(
                f"mx.nd.save: entry {key!r} is a {type(value).__name__}, expected an NDArray. "
                f"Fix: mx.nd.array(value)"
            )
        arrays[key] = value.asnumpy()
    with open(fname, "wb") as f:  # a file object: numpy would otherwise append ".npz"
        np.savez(f, **{_KIND: np.array(kind)}, **arrays)


def load(fname):
    """The list or dict of NDArrays that mx.nd.save wrote to `fname` (on the CPU)."""
    try:
        with np.load(fname, allow_pickle=False) as archive:
            kind = str(archive[_KIND]) if _KIND in archive.files else None
            arrays = {k: archive[k] for k in archive.files if k != _KIND}
    except (ValueError, OSError, zipfile.BadZipFile, KeyError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(
            f"mx.nd.load: {fname!r} is not a file written by kit.mx's mx.nd.save ({exc}). kit.mx "
            f"reads NumPy .npz files without pickled objects; MXNet's own binary format is not "
            f"read. Fix: in MXNet, numpy.savez(path, **{{k: v.asnumpy() ...}}), then load that"
        ) from None
    if kind is None:
        raise ValueError(
            f"mx.nd.load: {fname!r} is an .npz file but was not written by mx.nd.save. Fix: load "
            f"it with numpy.load and wrap each array with mx.nd.array"
        )
    loaded = {k: NDArray(kit.tensor(v)) for k, v in arrays.items()}
    if kind == "dict":
        return loaded
    return [loaded[str(i)] for i in range(len(loaded))]
