"""mx.nd's joining, splitting, slicing and broadcasting ops, and the gradient stop.

NOTE: this module defines mx.nd.slice, which shadows the builtin here: builtins.slice is spelt out.

Composites of kit's movement ops (stack, getitem, expand, permute, reshape): their gradients come
from kit's engine.
"""

from __future__ import annotations

import builtins

import numpy as np

import kit
from kit import ops
from kit.mx._ndutil import as_shape, tensor_of, write_out
from kit.mx.base import error, run
from kit.mx.ndarray import NDArray, wrap
from kit.ops.reductions import normalize_axis, one_dim

__all__ = [
    "BlockGrad", "add_n", "broadcast_like", "broadcast_to", "flip", "reverse", "slice",
    "slice_axis", "split", "squeeze", "stack", "stop_gradient", "swapaxes", "take",
]


def _axis(axis, ndim, op):
    return one_dim(axis, ndim, f"mx.nd.{op}")


def stack(*data, axis=0, out=None):
    """Join arrays of one shape along a new axis."""
    tensors = [tensor_of(d, "stack") for d in data]
    if len({t.shape for t in tensors}) > 1:
        raise error(ValueError, (
            f"mx.nd.stack: all arrays must have the same shape, got {[t.shape for t in tensors]}"
        ))
    return write_out(wrap(run(ops.stack, tensors, axis)), out)


def split(data, num_outputs, axis=1, squeeze_axis=False):
    """Split into `num_outputs` equal parts along `axis` (MXNet's default axis is 1); one part
    comes back as an NDArray, several as a list."""
    t = tensor_of(data, "split")
    axis = _axis(axis, t.ndim, "split")
    n, num_outputs = t.shape[axis], int(num_outputs)
    if num_outputs < 1 or n % num_outputs:
        raise error(ValueError, (
            f"mx.nd.split: axis {axis} has length {n}, which does not split into {num_outputs} "
            f"equal parts"
        ))
    size = n // num_outputs
    if squeeze_axis and size != 1:
        raise error(ValueError, (
            f"mx.nd.split: squeeze_axis=True needs parts of length 1 on axis {axis}, these have "
            f"length {size}"
        ))

    def part(t, i):
        index = (builtins.slice(None),) * axis + (builtins.slice(i * size, (i + 1) * size),)
        piece = ops.getitem(t, index)
        return ops.squeeze(piece, axis) if squeeze_axis else piece

    parts = [wrap(run(part, t, i)) for i in range(num_outputs)]
    return parts[0] if num_outputs == 1 else parts


def slice_axis(data, axis, begin, end):
    """data[begin:end] along `axis` (end=None: to the end)."""
    t = tensor_of(data, "slice_axis")
    axis = _axis(axis, t.ndim, "slice_axis")
    index = (builtins.slice(None),) * axis + (builtins.slice(begin, end),)
    return wrap(run(ops.getitem, t, index))


def slice(data, begin, end, step=None):  # noqa: A001 - MXNet's name
    """data[begin[0]:end[0]:step[0], begin[1]:end[1], ...]; None entries take the whole axis."""
    t = tensor_of(data, "slice")
    begin, end = tuple(begin), tuple(end)
    step = tuple(step) if step is not None else (None,) * len(begin)
    if not len(begin) == len(end) == len(step) or len(begin) > t.ndim:
        raise error(ValueError, (
            f"mx.nd.slice: begin {begin}, end {end} and step {step} must have the same length, "
            f"at most the number of axes ({t.ndim})"
        ))
    index = tuple(builtins.slice(b, e, s) for b, e, s in zip(begin, end, step, strict=True))
    return wrap(run(ops.getitem, t, index))


def take(a, indices, axis=0, mode="clip"):
    """Rows (or entries along `axis`) of `a` at `indices`; out-of-range indices are clipped
    (mode='clip') or wrapped ('wrap'). The result has shape a.shape[:axis] + indices.shape +
    a.shape[axis+1:]."""
    t = tensor_of(a, "take")
    if mode not in ("clip", "wrap"):
        raise ValueError(f"mx.nd.take: mode must be 'clip' or 'wrap', got {mode!r}")
    axis = _axis(axis, t.ndim, "take")
    n = t.shape[axis]
    idx = tensor_of(indices, "take").detach()
    idx = NDArray(idx).asnumpy().astype(np.int64)
    idx = np.clip(idx, 0, n - 1) if mode == "clip" else idx % n
    index = (builtins.slice(None),) * axis + (kit.tensor(idx, device=t.device),)
    return wrap(run(ops.getitem, t, index))


def squeeze(data, axis=None):
    """Remove axes of length 1 (all of them, or those in `axis`)."""
    t = tensor_of(data, "squeeze")
    if axis is None:
        return wrap(run(ops.squeeze, t))
    axes = normalize_axis(axis, t.ndim, "mx.nd.squeeze")
    long = [a for a in axes if t.shape[a] != 1]
    if long:
        raise error(ValueError, (
            f"mx.nd.squeeze: axes {long} of shape {t.shape} do not have length 1"
        ))
    shape = tuple(n for a, n in enumerate(t.shape) if a not in axes)
    return wrap(run(ops.reshape, t, shape))


def swapaxes(data, dim1=0, dim2=0):
    """Exchange two axes."""
    t = tensor_of(data, "swapaxes")
    return wrap(run(ops.transpose, t, dim1, dim2))


def flip(data, axis):
    """Reverse the order of elements along `axis` (an int or a tuple of them)."""
    t = tensor_of(data, "flip")
    axes = normalize_axis(axis, t.ndim, "mx.nd.flip")
    index = tuple(builtins.slice(None, None, -1) if a in axes else builtins.slice(None)
                  for a in range(t.ndim))
    return wrap(run(ops.getitem, t, index))


reverse = flip


def broadcast_to(data, shape):
    """data broadcast to `shape`; a 0 in `shape` keeps that axis, as in MXNet."""
    t = tensor_of(data, "broadcast_to")
    shape = as_shape(shape)
    if len(shape) != t.ndim:
        raise error(ValueError, (
            f"mx.nd.broadcast_to: shape {shape} must have as many axes as the data {t.shape}"
        ))
    shape = tuple(n if s == 0 else s for n, s in zip(t.shape, shape, strict=True))
    bad = [a for a, (n, s) in enumerate(zip(t.shape, shape, strict=True)) if n not in (1, s)]
    if bad:
        raise error(ValueError, (
            f"mx.nd.broadcast_to: cannot broadcast shape {t.shape} to {shape}: axes {bad} have "
            f"a length other than 1"
        ))
    return wrap(run(ops.expand, t, shape))


def broadcast_like(lhs, rhs):
    """lhs broadcast to the shape of rhs."""
    return broadcast_to(lhs, tensor_of(rhs, "broadcast_like").shape)


def add_n(*args, out=None):
    """The elementwise sum of arrays of one shape."""
    tensors = [tensor_of(a, "add_n") for a in args]
    if not tensors or len({t.shape for t in tensors}) > 1:
        raise error(ValueError, (
            f"mx.nd.add_n: needs one or more arrays of the same shape, got "
            f"{[t.shape for t in tensors]}"
        ))

    def total(*ts):
        result = ts[0]
        for t in ts[1:]:
            result = result + t
        return result

    return write_out(wrap(run(total, *tensors)), out)


def BlockGrad(data):  # noqa: N802 - MXNet's name
    """The same values, with no gradient flowing back (mx.nd.stop_gradient)."""
    return NDArray(tensor_of(data, "BlockGrad").detach())


stop_gradient = BlockGrad
