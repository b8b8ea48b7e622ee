"""Reductions: sum, mean, max/min (with indices), logsumexp, argmax/argmin, sum_to_size."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from kit import backend
from kit._promotion import default_float
from kit._tensor import Tensor
from kit.engine import OUTPUT, _sum_compatible, _sum_to  # the engine's rule for broadcasts
from kit.ops._record import DtypeError, ShapeError, as_dtype_of, data_of, record
from kit.ops._registry import composite, declare, dims, primitive

MaxMin = namedtuple("MaxMin", ["values", "indices"])  # what torch.max(x, dim) returns


def normalize_axis(axis, ndim, op):
    """A tuple of non-negative axes (None means all), with a clear error for bad ones."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    n = ndim or 1  # a 0-d tensor accepts dims 0 and -1, as in PyTorch
    for a in axes:
        if not -n <= a < n:
            raise IndexError(
                f"kit.{op}: dimension {a} is out of range for a tensor with {ndim} dimensions "
                f"(expected to be in range [{-n}, {n - 1}])"
            )
        out.append(a % n)
    if ndim and len(set(out)) != len(out):
        raise ValueError(f"kit.{op}: a dimension appears more than once in {list(axes)}")
    return tuple(sorted(out)) if ndim else ()


def kept_shape(shape, axes):
    """The shape with the reduced axes kept as size 1."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def expand_back(g, shape, axes):
    """Broadcast a reduced gradient back over the reduced axes (works on arrays and Tensors)."""
    g = g.reshape(kept_shape(shape, axes))
    if isinstance(g, Tensor):
        from kit.ops.movement import expand

        return expand(g, shape)
    return backend.get_array_module(g).broadcast_to(g, shape)


def _args(x, axis, keepdims, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.{op}: expected a Tensor, got {type(x).__name__}")
    return normalize_axis(axis, x._data.ndim, op), bool(keepdims)


def _sum_rule(node, g):
    shape, axes = node.params
    return (expand_back(g, shape, axes),)


@primitive("sum", grad=_sum_rule, batch="reduce", methods=(("sum", dims),))
def sum(x, axis=None, keepdims=False):  # noqa: A001 - PyTorch's name
    """Sum over `axis` (all axes by default)."""
    axes, keepdims = _args(x, axis, keepdims, "sum")
    out = x._data.sum(axis=axes, keepdims=keepdims)
    return record("sum", _sum_rule, out, (x,), (), (x.shape, axes))


@composite("sum_to_size", methods=("sum_to_size",), torch=None)
def sum_to_size(x, *size):
    """Sum `x` down to `size`, a shape that broadcasts to x's: what a broadcast's backward does
    (as Tensor.sum_to_size; kit's engine applies the same rule to a gradient of the wrong shape).

    >>> import kit
    >>> kit.ones(3, 4).sum_to_size(1, 4)
    tensor([[3., 3., 3., 3.]])
    """
    from kit.ops.movement import shape_arg

    shape = shape_arg(size)
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.sum_to_size: expected a Tensor, got {type(x).__name__}")
    if not _sum_compatible(x.shape, shape):
        raise ShapeError(
            f"kit.sum_to_size: size {list(shape)} is not expandable to size {list(x.shape)}: "
            f"summing can only remove leading dimensions and shrink dimensions to 1. Fix: give "
            f"a shape that broadcasts to {tuple(x.shape)}"
        )
    return x if x.shape == shape else _sum_to(x, shape)


def _mean_rule(node, g):
    shape, axes = node.params
    count = math.prod(shape[a] for a in axes)
    return (expand_back(g / count, shape, axes),)


@primitive("mean", grad=_mean_rule, batch="reduce", methods=(("mean", dims),))
def mean(x, axis=None, keepdims=False):
    """Mean over `axis` (all axes by default)."""
    axes, keepdims = _args(x, axis, keepdims, "mean")
    if x._data.dtype.kind not in "fc":
        raise DtypeError(
            f"kit.mean: could not infer output dtype. Input dtype must be floating point, got "
            f"{x._data.dtype}. Fix: x.float().mean()"
        )
    out = x._data.mean(axis=axes, keepdims=keepdims)
    return record("mean", _mean_rule, out, (x,), (), (x.shape, axes))


def _extreme_rule(node, g, x):
    # NOTE: over all elements the gradient is shared evenly among ties (as PyTorch's max());
    # along an axis it goes to the one index returned, as PyTorch's max(dim) does.
    shape, axes, winners, op = node.params
    if winners is None:
        d = data_of(x)
        best = d.max() if op == "max" else d.min()
        # NOTE: a NaN result came from the NaN elements: they get the gradient, as in PyTorch
        hits = backend.get_array_module(d).isnan(d) if best != best else d == best
        winners = hits / hits.sum()
    return (expand_back(g, shape, axes) * as_dtype_of(winners, g),)


def _extreme(op):
    def fn(x, axis=None, keepdims=False):
        axes, keepdims = _args(x, axis, keepdims, op)
        d = x._data
        if d.size == 0:
            raise RuntimeError(f"kit.{op}: cannot reduce an empty tensor (it has no {op})")
        xp = backend.get_array_module(d)
        if axis is None:
            out = d.max() if op == "max" else d.min()
            return record(op, _extreme_rule, xp.asarray(out), (x,), (x,), (d.shape, axes, None, op))
        if d.ndim == 0:  # along dim 0 or -1 of a 0-d tensor: itself, at index 0 (PyTorch)
            params = (d.shape, axes, xp.ones((), dtype=bool), op)
            out = record(op, _extreme_rule, d.copy(), (x,), (x,), params)
            return MaxMin(out, Tensor(xp.zeros((), dtype=np.int64)))
        if len(axes) != 1:
            raise ValueError(f"kit.{op}: with indices, reduce over one axis at a time")
        a = axes[0]
        idx = d.argmax(axis=a) if op == "max" else d.argmin(axis=a)
        idx_k = xp.expand_dims(idx, a)
        values = xp.take_along_axis(d, idx_k, axis=a)
        shape_k = [1] * d.ndim
        shape_k[a] = d.shape[a]
        onehot = xp.arange(d.shape[a]).reshape(shape_k) == idx_k
        if not keepdims:
            values = values.squeeze(a)
        out = record(op, _extreme_rule, values, (x,), (x,), (d.shape, axes, onehot, op))
        return MaxMin(out, Tensor(idx_k if keepdims else idx))

    fn.__name__ = op
    fn.__doc__ = (
        f"{op} over all elements, or `(values, indices)` along one axis (as torch.{op}(x, dim))."
    )
    return declare(op, fn, grad=_extreme_rule, saves="x", batch="extreme", methods=((op, dims),))


max = _extreme("max")  # noqa: A001
min = _extreme("min")  # noqa: A001


def _logsumexp_rule(node, g, x, y):
    shape, axes = node.params
    from kit.ops.elementwise import exp_

    kept = kept_shape(shape, axes)
    # NOTE: the product broadcasts g over the reduced axes; no expand_back view is needed.
    return (g.reshape(kept) * exp_(x - y.reshape(kept)),)


@primitive("logsumexp", grad=_logsumexp_rule, saves="x, output", batch="reduce",
           methods=(("logsumexp", dims),))
def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over `axis`, computed stably (the max is taken out first)."""
    axes, keepdims = _args(x, axis, keepdims, "logsumexp")
    d = x._data
    if d.dtype.kind in "biu":
        d = d.astype(default_float())  # as PyTorch: an integer or bool input gives float32
    xp = backend.get_array_module(d)
    m = d.max(axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):  # NOTE: all -inf gives -inf (log 0), as in PyTorch
        out = xp.log(xp.exp(d - m).sum(axis=axes, keepdims=True)) + m
    if not keepdims:
        out = out.reshape([n for i, n in enumerate(d.shape) if i not in axes])
    return record("logsumexp", _logsumexp_rule, out, (x,), (x, OUTPUT), (d.shape, axes))


@primitive("argmax", batch="arg_extreme", methods=(("argmax", dims),))
def argmax(x, axis=None, keepdims=False):
    """Index of the largest element (flattened when axis is None); not differentiable."""
    d = data_of(x)
    return Tensor(d.argmax(axis=axis, keepdims=keepdims) if axis is not None else d.argmax())


@primitive("argmin", batch="arg_extreme", methods=(("argmin", dims),))
def argmin(x, axis=None, keepdims=False):
    d = data_of(x)
    return Tensor(d.argmin(axis=axis, keepdims=keepdims) if axis is not None else d.argmin())
