"""Reductions: sum, mean, max/min (with indices), amax/amin, logsumexp, argmax/argmin,
sum_to_size."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from kit import backend
from kit._errors import ArgumentError, DtypeError, ShapeError
from kit._promotion import default_float
from kit._tensor import Tensor
from kit.engine import OUTPUT, _sum_compatible, _sum_to  # the engine's rule for broadcasts
from kit.ops._record import as_dtype_of, data_of, record
from kit.ops._registry import composite, declare, dims, primitive
from kit.ops.elementwise import where_

MaxMin = namedtuple("MaxMin", ["values", "indices"])  # what torch.max(x, dim) returns
_INTS = (int, np.integer)


def normalize_axis(axis, ndim, op):
    """A tuple of non-negative axes (None means all), with a clear error for bad ones."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, _INTS) else tuple(axis)
    out = []
    n = ndim or 1  # a 0-d tensor accepts dims 0 and -1, as in PyTorch
    for a in axes:
        if not isinstance(a, _INTS):
            raise TypeError(f"kit.{op}: a dim must be an int, got {type(a).__name__} ({a!r})")
        a = int(a)
        if not -n <= a < n:
            raise IndexError(
                f"kit.{op}: dimension {a} is out of range for a tensor with {ndim} dimensions "
                f"(expected to be in range [{-n}, {n - 1}])"
            )
        out.append(a % n)
    if len(set(out)) != len(out):
        twice = next(a for a in out if out.count(a) > 1)
        raise ShapeError(f"kit.{op}: dim {twice} appears multiple times in the list of dims "
                         f"{list(axes)}")
    return tuple(sorted(out)) if ndim else ()


def one_dim(dim, ndim, op):
    """The dim of an op along one dim (sort, cumsum, topk) as a non-negative int (0 for a 0-d
    tensor, which takes 0 or -1); PyTorch's TypeError for a list or tuple of dims."""
    if not isinstance(dim, _INTS):
        raise ArgumentError(f"kit.{op}: dim must be one int, got {dim!r} (as PyTorch)")
    axes = normalize_axis(dim, ndim, op)
    return axes[0] if axes else 0


def all_if_none(dim):
    """PyTorch's `dim=[]` (or `()`) in sum, mean, var, norm...: every dim, as dim=None (where
    kit.sum(x, ()) reduces none, as NumPy)."""
    return None if isinstance(dim, (list, tuple)) and not dim else dim


def every_dim(fn):
    """PyTorch's spelling of sum, mean, amax, amin, logsumexp: `x.sum(dim, keepdim)` (or
    `axis=`, `keepdims=`), where `dim=[]` reduces every dim (kit.sum(x, ()) reduces none, as
    NumPy).

    NOTE: PyTorch 2.13's logsumexp(dim=[]) reduces every dim of a 0-d or empty tensor but
    raises "output with shape [] doesn't match the broadcast shape [1, 1]" on others (an
    internal shape error, not a refusal); kit reduces every dim for all of them."""

    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return fn(self, all_if_none(dim if axis is None else axis),
                  keepdims if keepdims is not None else keepdim)

    return method


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


@primitive("sum", grad=_sum_rule, batch="reduce", methods=(("sum", every_dim),))
def sum(x, axis=None, keepdims=False):  # noqa: A001 - PyTorch's name
    """Sum over `axis` (all axes by default); integers and bools sum in int64, as in PyTorch."""
    axes, keepdims = _args(x, axis, keepdims, "sum")
    d = x._data
    if d.dtype.kind != "u":
        out = d.sum(axis=axes, keepdims=keepdims)
    else:  # NOTE: NumPy sums unsigned ints in uint64, PyTorch in int64 (as NumPy other ints)
        out = d.sum(axis=axes, keepdims=keepdims, dtype=np.int64)
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

    shape = shape_arg(size, "sum_to_size")
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


@primitive("mean", grad=_mean_rule, batch="reduce", methods=(("mean", every_dim),))
def mean(x, axis=None, keepdims=False):
    """Mean over `axis` (all axes by default); NaN over no elements, as in PyTorch."""
    axes, keepdims = _args(x, axis, keepdims, "mean")
    d = x._data
    if d.dtype.kind not in "fc":
        raise DtypeError(
            f"kit.mean: could not infer output dtype. Input dtype must be floating point, got "
            f"{d.dtype}. Fix: x.float().mean()"
        )
    if d.size:
        out = d.mean(axis=axes, keepdims=keepdims)
    else:  # NOTE: 0 / 0 without NumPy's "Mean of empty slice" warning (PyTorch is silent)
        with np.errstate(invalid="ignore"):
            out = d.sum(axis=axes, keepdims=keepdims) / d.dtype.type(0)
    return record("mean", _mean_rule, out, (x,), (), (x.shape, axes))


def _extreme_rule(node, g, x, y):
    # NOTE: over all elements the gradient is shared evenly among ties (as PyTorch's max()); the
    # others get exactly 0, also when g is NaN or inf (PyTorch fills, it does not multiply).
    # x and the output y are kept, as PyTorch's MaxBackward1 keeps self and result.
    shape, axes = node.params
    d, best = data_of(x), data_of(y)
    # NOTE: a NaN result came from the NaN elements: they get the gradient, as in PyTorch
    winners = backend.get_array_module(d).isnan(d) if best != best else d == best
    return (where_(winners, expand_back(g, shape, axes) / int(winners.sum()), 0),)


def _extreme_dim_rule(node, g, indices):
    # NOTE: along a dim the gradient goes to the one index returned, as PyTorch's max(dim),
    # whose MaxBackward0 keeps the indices (not x): an in-place change of them is an error.
    shape, axis, keepdims = node.params
    if not shape:  # a 0-d tensor along dim 0: itself
        return (g,)
    idx = data_of(indices)
    xp = backend.get_array_module(idx)
    if not keepdims:
        idx = xp.expand_dims(idx, axis)
    positions = xp.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(len(shape))])
    return (where_(positions == idx, expand_back(g, shape, (axis,)), 0),)


def _one_dim(axis, op):
    if axis is not None and not isinstance(axis, _INTS) and len(axis) != 1:
        raise ArgumentError(f"kit.{op}: with indices, dim must be one int, got {axis!r}. Fix: "
                            f"amax/amin reduce several dims (values only), or reduce one dim "
                            f"at a time")


def _nonempty(d, axes, op, named, error=RuntimeError):
    """PyTorch's errors for the max of nothing: a RuntimeError (argmax: an IndexError) without a
    dim, an IndexError when a named dim has size 0."""
    if not named and d.size == 0:
        raise error(f"kit.{op}: the tensor is empty (shape {tuple(d.shape)}), so it has "
                           f"no {op}; name a dim to reduce, as PyTorch asks (Expected reduction "
                           f"dim to be specified for input.numel() == 0)")
    for a in axes:
        if named and d.shape[a] == 0:
            raise IndexError(f"kit.{op}: dim {a} has size 0 (shape {tuple(d.shape)}), so there "
                             f"is no {op} along it (Expected reduction dim {a} to have non-zero "
                             f"size)")


def _extreme(op):
    def fn(x, axis=None, keepdims=False):
        _one_dim(axis, op)
        axes, keepdims = _args(x, axis, keepdims, op)
        d = x._data
        _nonempty(d, axes, op, axis is not None)
        xp = backend.get_array_module(d)
        if axis is None:
            out = xp.asarray(d.max() if op == "max" else d.min())
            return record(op, _extreme_rule, out, (x,), (x, OUTPUT), (d.shape, axes))
        if d.ndim == 0:  # along dim 0 or -1 of a 0-d tensor: itself, at index 0 (PyTorch)
            indices = Tensor(xp.zeros((), dtype=np.int64))
            out = record(op, _extreme_dim_rule, d.copy(), (x,), (indices,), ((), 0, keepdims))
            return MaxMin(out, indices)
        a = axes[0]
        idx = d.argmax(axis=a, keepdims=keepdims) if op == "max" else d.argmin(
            axis=a, keepdims=keepdims)
        values = xp.take_along_axis(d, idx if keepdims else xp.expand_dims(idx, a), axis=a)
        indices = Tensor(idx)
        out = record(op, _extreme_dim_rule, values if keepdims else values.squeeze(a), (x,),
                     (indices,), (d.shape, a, keepdims))
        return MaxMin(out, indices)

    fn.__name__ = op
    fn.__doc__ = (
        f"{op} over all elements, or `(values, indices)` along one axis (as torch.{op}(x, dim))."
    )
    return declare(op, fn, grad=_extreme_rule, saves="x, output", batch="extreme",
                   methods=((op, dims),))


max = _extreme("max")  # noqa: A001
min = _extreme("min")  # noqa: A001


def _amax_rule(node, g, x, y):
    # NOTE: shared evenly among the ties of each reduced slice, as PyTorch's amax: (g / count) *
    # mask, so a slice whose result is NaN (no element equals it) gets NaN, as in PyTorch.
    shape, axes = node.params
    d = data_of(x)
    hits = d == data_of(y).reshape(kept_shape(shape, axes))
    with np.errstate(divide="ignore", invalid="ignore"):
        share = hits / hits.sum(axis=axes, keepdims=True)
    return (expand_back(g, shape, axes) * as_dtype_of(share, g),)


def _amax(op):
    def fn(x, axis=None, keepdims=False):
        if axis is not None and isinstance(x, Tensor) and not x._data.size:
            # NOTE: PyTorch checks each dim of an empty tensor (range, then size) before it
            # looks for repeated dims: amax(dim=(0, 0)) of a (0, 3) tensor is an IndexError
            for a in (axis,) if isinstance(axis, _INTS) else axis:
                _nonempty(x._data, normalize_axis(a, x._data.ndim, op), op, True)
        axes, keepdims = _args(x, axis, keepdims, op)
        d = x._data
        _nonempty(d, axes, op, axis is not None)
        out = d.max(axis=axes, keepdims=keepdims) if op == "amax" else d.min(
            axis=axes, keepdims=keepdims)
        return record(op, _amax_rule, out, (x,), (x, OUTPUT), (d.shape, axes))

    fn.__name__ = op
    fn.__doc__ = (f"The {op[1:]} over `axis` (one dim, several, or all), values only; the "
                  f"gradient is shared among ties, as torch.{op}.")
    return declare(op, fn, grad=_amax_rule, saves="x, output", batch="reduce",
                   methods=((op, every_dim),))


amax = _amax("amax")
amin = _amax("amin")


def _logsumexp_rule(node, g, x, y):
    shape, axes = node.params
    from kit.ops.elementwise import exp_

    kept = kept_shape(shape, axes)
    # NOTE: the product broadcasts g over the reduced axes; no expand_back view is needed.
    return (g.reshape(kept) * exp_(x - y.reshape(kept)),)


@primitive("logsumexp", grad=_logsumexp_rule, saves="x, output", batch="reduce",
           methods=(("logsumexp", every_dim),))
def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over `axis`, computed stably (the max is taken out first); -inf over
    no elements."""
    axes, keepdims = _args(x, axis, keepdims, "logsumexp")
    d = x._data
    if d.dtype.kind in "biu":
        d = d.astype(default_float())  # as PyTorch: an integer or bool input gives float32
    xp = backend.get_array_module(d)
    if d.size:
        m = d.max(axis=axes, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0)
    else:
        m = xp.zeros(kept_shape(d.shape, axes), dtype=d.dtype)
    with np.errstate(divide="ignore"):  # NOTE: all -inf gives -inf (log 0), as in PyTorch
        out = xp.log(xp.exp(d - m).sum(axis=axes, keepdims=True)) + m
    if not keepdims:
        out = out.reshape([n for i, n in enumerate(d.shape) if i not in axes])
    return record("logsumexp", _logsumexp_rule, out, (x,), (x, OUTPUT), (d.shape, axes))


def _arg_extreme(x, axis, keepdims, op):
    d = data_of(x)
    if axis is not None and not isinstance(axis, _INTS):
        raise ArgumentError(f"kit.{op}: dim must be one int, got {axis!r}")
    if d.dtype.kind == "b":
        raise RuntimeError(f"kit.{op}: does not support bool input (as PyTorch). Fix: "
                           f"x.int().{op}(...)")
    axes = normalize_axis(axis, d.ndim, op)
    _nonempty(d, axes, op, axis is not None, IndexError)
    find = d.argmax if op == "argmax" else d.argmin
    if axis is None:
        out = find()
        return Tensor(out.reshape((1,) * d.ndim) if keepdims else out)
    if d.ndim == 0:
        return Tensor(backend.get_array_module(d).zeros((), dtype=np.int64))
    return Tensor(find(axis=axes[0], keepdims=keepdims))


@primitive("argmax", batch="arg_extreme", methods=(("argmax", dims),))
def argmax(x, axis=None, keepdims=False):
    """Index of the largest element (flattened when axis is None; a NaN counts as the largest,
    as in PyTorch); not differentiable."""
    return _arg_extreme(x, axis, keepdims, "argmax")


@primitive("argmin", batch="arg_extreme", methods=(("argmin", dims),))
def argmin(x, axis=None, keepdims=False):
    """Index of the smallest element (flattened when axis is None); not differentiable."""
    return _arg_extreme(x, axis, keepdims, "argmin")
