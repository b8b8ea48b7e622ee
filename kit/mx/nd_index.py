"""mx.nd's selection and repetition ops: pick, where, topk, tile, repeat.

Composites of kit's indexing, broadcasting and reshaping (their gradients scatter back through
kit's getitem and expand); the integer indices they compute are constants.
"""

from __future__ import annotations

import numpy as np

import kit
from kit import ops
from kit.mx._ndutil import REAL, tensor_of, write_out
from kit.mx.base import error, run
from kit.mx.ndarray import NDArray, wrap
from kit.ops.reductions import one_dim

__all__ = ["pick", "repeat", "tile", "topk", "where"]


def _host(t):
    """A constant NumPy copy of a Tensor's values (labels, indices, conditions)."""
    return NDArray(t.detach()).asnumpy()


def _gather(x, axis, idx):
    """x's elements at `idx` along `axis` (idx has x's shape except on that axis): an index
    tuple of open grids, a differentiable getitem."""
    grids = list(np.ix_(*[np.arange(n) for n in idx.shape]))
    grids[axis] = idx
    return ops.getitem(x, tuple(kit.tensor(g, device=x.device) for g in grids))


def pick(data, index, axis=-1, keepdims=False, mode="clip", out=None):
    """data's element at position index along `axis`, for every other position; out-of-range
    indices are clipped (mode='clip') or wrapped (mode='wrap').

    >>> import kit.mx as mx
    >>> mx.nd.pick(mx.nd.array([[1, 2], [3, 4]]), mx.nd.array([1, 0])).asnumpy()
    array([2., 3.], dtype=float32)
    """
    x, i = tensor_of(data, "pick"), tensor_of(index, "pick")
    if mode not in ("clip", "wrap"):
        raise ValueError(f"mx.nd.pick: mode must be 'clip' or 'wrap', got {mode!r}")
    axis = one_dim(axis, x.ndim, "mx.nd.pick")
    want = tuple(n for a, n in enumerate(x.shape) if a != axis)
    idx = _host(i).astype(np.int64)
    if idx.shape == tuple(1 if a == axis else n for a, n in enumerate(x.shape)):
        idx = idx.reshape(want)
    if idx.shape != want:
        raise error(ValueError, (
            f"mx.nd.pick: index has shape {idx.shape}; for data of shape {x.shape} picking along "
            f"axis {axis} it must have shape {want}"
        ))
    n = x.shape[axis]
    idx = np.clip(idx, 0, n - 1) if mode == "clip" else idx % n
    idx = np.expand_dims(idx, axis)

    def compute(x):
        picked = _gather(x, axis, idx)
        return picked if keepdims else ops.squeeze(picked, axis)

    return write_out(wrap(run(compute, x)), out)


def where(condition, x, y, out=None):
    """Elements of x where condition is non-zero, else of y; a 1-D condition selects rows."""
    c, a, b = (tensor_of(v, "where") for v in (condition, x, y))
    if a.shape != b.shape:
        raise error(ValueError, f"mx.nd.where: x and y must have the same shape, got {a.shape} "
                                f"and {b.shape}")
    mask = _host(c) != 0
    if mask.shape != a.shape:
        if mask.shape != a.shape[:1]:
            raise error(ValueError, (
                f"mx.nd.where: condition has shape {mask.shape}; it must have x's shape "
                f"{a.shape}, or be 1-D of length {a.shape[0]} (selecting rows)"
            ))
        mask = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
    cond = kit.tensor(mask, device=a.device)
    return write_out(wrap(run(ops.where, cond, a, b)), out)


_RET_TYPES = ("value", "indices", "mask", "both")


def topk(data, axis=-1, k=1, ret_typ="indices", is_ascend=False, dtype="float32"):
    """The k largest (smallest with is_ascend=True) elements along `axis`: their indices
    (ret_typ='indices', as float32), values ('value'), both ([values, indices]) or a 0/1 mask.

    >>> import kit.mx as mx
    >>> mx.nd.topk(mx.nd.array([1, 5, 3]), k=2, ret_typ='value').asnumpy()
    array([5., 3.], dtype=float32)
    """
    x = tensor_of(data, "topk")
    if ret_typ not in _RET_TYPES:
        raise ValueError(f"mx.nd.topk: ret_typ must be one of {_RET_TYPES}, got {ret_typ!r}")
    if axis is None:
        x, axis = run(ops.reshape, x, (-1,)), 0
    axis = one_dim(axis, x.ndim, "mx.nd.topk")
    k = int(k)
    if not 1 <= k <= x.shape[axis]:
        raise error(ValueError, (
            f"mx.nd.topk: k must be between 1 and the length of axis {axis} ({x.shape[axis]}), "
            f"got {k}"
        ))
    order = ops.argsort(x, axis, descending=not is_ascend)
    idx = np.take(_host(order), np.arange(k), axis=axis)
    if ret_typ == "mask":
        hit = np.zeros(x.shape, dtype=bool)
        np.put_along_axis(hit, idx, True, axis=axis)
        return NDArray(kit.tensor(hit.astype(x.dtype), device=x.device))
    indices = NDArray(kit.tensor(idx.astype(np.dtype(dtype or REAL)), device=x.device))
    if ret_typ == "indices":
        return indices
    values = wrap(run(_gather, x, axis, idx))
    return values if ret_typ == "value" else [values, indices]


def tile(data, reps):
    """data repeated reps[i] times along each axis, as numpy.tile."""
    x = tensor_of(data, "tile")
    reps = (int(reps),) if isinstance(reps, int) else tuple(int(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError(f"mx.nd.tile: reps must be >= 0, got {reps}")
    ndim = max(x.ndim, len(reps))
    shape = (1,) * (ndim - x.ndim) + tuple(x.shape)
    reps = (1,) * (ndim - len(reps)) + reps

    def compute(x):
        spread = ops.reshape(x, tuple(v for n in shape for v in (1, n)))
        grown = ops.expand(spread, tuple(v for r, n in zip(reps, shape, strict=True)
                                         for v in (r, n)))
        return ops.reshape(grown, tuple(r * n for r, n in zip(reps, shape, strict=True)))

    return wrap(run(compute, x))


def repeat(data, repeats, axis=None):
    """Each element repeated `repeats` times along `axis` (of the flattened data by default)."""
    x = tensor_of(data, "repeat")
    repeats = int(repeats)
    if repeats < 0:
        raise ValueError(f"mx.nd.repeat: repeats must be >= 0, got {repeats}")

    def compute(x):
        nonlocal axis
        if axis is None:
            x, axis = ops.reshape(x, (-1,)), 0
        a = one_dim(axis, x.ndim, "mx.nd.repeat")
        spread = ops.unsqueeze(x, a + 1)
        grown = ops.expand(spread, x.shape[:a + 1] + (repeats,) + x.shape[a + 1:])
        return ops.reshape(grown, x.shape[:a] + (x.shape[a] * repeats,) + x.shape[a + 1:])

    return wrap(run(compute, x))
