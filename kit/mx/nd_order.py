"""mx.nd's orderings, scans and products: sort, argsort, argmin, cumsum, prod, reshape_like, on
kit's ops (so sort, cumsum, prod and reshape_like are differentiable, as in MXNet). Indices come
back as float32 unless `dtype` says otherwise, as MXNet returns them.

>>> import kit.mx as mx
>>> mx.nd.sort(mx.nd.array([3, 1, 2])).asnumpy()
array([1., 2., 3.], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from kit import ops
from kit._tensor import Tensor
from kit.mx._ndutil import REAL, tensor_of, write_out
from kit.mx.base import run
from kit.mx.ndarray import NDArray, wrap
from kit.ops.reductions import normalize_axis

__all__ = ["argmin", "argsort", "cumsum", "prod", "reshape_like", "sort"]


def _flat_or(x, axis):
    """(x, axis): with axis=None, the flattened array along 0 (MXNet's meaning of None)."""
    if axis is None:
        return run(ops.reshape, x, (-1,)), 0
    return x, axis


def sort(data, axis=-1, is_ascend=True, out=None):
    """The values sorted along `axis` (flattened when None), ascending unless is_ascend=False."""
    x, axis = _flat_or(tensor_of(data, "sort"), axis)
    return write_out(wrap(run(lambda t: ops.sort(t, axis, not is_ascend).values, x)), out)


def argsort(data, axis=-1, is_ascend=True, dtype="float32"):
    """The indices that sort `data` along `axis` (flattened when None), as float32."""
    x, axis = _flat_or(tensor_of(data, "argsort"), axis)
    indices = run(ops.argsort, x, axis, not is_ascend)
    return NDArray(Tensor(indices._data.astype(np.dtype(dtype or REAL))))


def argmin(data, axis=None, keepdims=False):
    """Index of the smallest element along `axis` (of the flattened array, shape (1,), when
    None), as float32."""
    t = tensor_of(data, "argmin")
    d = t._data
    idx = d.argmin().reshape(1) if axis is None else d.argmin(axis=axis)
    if keepdims and axis is not None:
        idx = idx.reshape(tuple(1 if i == axis % d.ndim else n for i, n in enumerate(d.shape)))
    return NDArray(Tensor(idx.astype(d.dtype if d.dtype.kind == "f" else REAL)))


def cumsum(a, axis=None, dtype=None, out=None):
    """Running sums along `axis` (of the flattened array when None)."""
    x, axis = _flat_or(tensor_of(a, "cumsum"), axis)
    return write_out(wrap(run(ops.cumsum, x, axis, dtype=dtype)), out)


def prod(data, axis=None, keepdims=False, exclude=False, out=None):
    """The product over `axis` (all axes by default; `exclude=True` the other axes); a full
    reduction has shape (1,), as MXNet's."""
    x = tensor_of(data, "prod")
    axes = normalize_axis(axis, x.ndim, "mx.nd.prod")
    if exclude:
        axes = tuple(i for i in range(x.ndim) if i not in axes)

    def compute(t):
        for a in sorted(axes, reverse=True):
            t = ops.prod(t, a, True)
        if not keepdims:
            t = ops.reshape(t, tuple(n for i, n in enumerate(t.shape) if i not in axes) or (1,))
        return t

    return write_out(wrap(run(compute, x)), out)


def reshape_like(lhs, rhs, out=None):
    """lhs with the shape of rhs (the same number of elements)."""
    shape = tuple(tensor_of(rhs, "reshape_like").shape)
    return write_out(wrap(run(ops.reshape, tensor_of(lhs, "reshape_like"), shape)), out)
