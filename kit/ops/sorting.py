"""Sorting and index_add: composites over indexing, so they own no gradient code."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._record import data_of
from kit.ops._registry import composite, primitive
from kit.ops.movement import getitem, index_put_add, reshape
from kit.ops.reductions import one_dim

SortResult = namedtuple("SortResult", ["values", "indices"])


def _dim_descending(fn):
    """`x.sort(dim=-1, descending=False, *, stable=False)`: kit's sort is always stable (a
    stable sort is also a valid unstable one)."""

    def method(self, dim=-1, descending=False, *, stable=False):
        return fn(self, dim, descending)

    return method


@primitive("argsort", batch="argsort", methods=(("argsort", _dim_descending),))
def argsort(x, axis=-1, descending=False):
    """Indices that sort `x` along `axis` (stable: ties keep their order); NaN counts as the
    largest value, as in PyTorch (last ascending, first descending). Not differentiable."""
    d = data_of(x)
    xp = backend.get_array_module(d)
    axis = one_dim(axis, d.ndim, "argsort")
    if d.ndim == 0:  # a 0-d tensor sorts to itself: index 0, as in PyTorch
        return Tensor(xp.zeros((), dtype=np.int64))
    if not descending:
        return Tensor(xp.argsort(d, axis=axis, kind="stable"))
    # NOTE: not argsort(-d), which keeps NaN last and breaks on unsigned ints, bool and
    # INT64_MIN: a stable ascending sort of the reversed data, reversed back, is descending
    # with NaN first and ties in their original order.
    n = d.shape[axis]
    flipped = xp.argsort(xp.flip(d, axis), axis=axis, kind="stable")
    return Tensor((n - 1) - xp.flip(flipped, axis))


def _along(d, axis, idx):
    """An index tuple selecting idx (an integer Tensor) along `axis` (a gather, as
    take_along_axis)."""
    xp = backend.get_array_module(d)
    grids = list(xp.ix_(*[xp.arange(n) for n in idx.shape]))
    grids[axis] = idx
    return tuple(grids)


@primitive("sort", batch="sort", methods=(("sort", _dim_descending),))
def sort(x, axis=-1, descending=False):
    """`(values, indices)` sorted along `axis`; the gradient of values goes back to where each
    element came from."""
    d = data_of(x)
    axis = one_dim(axis, d.ndim, "sort")
    indices = argsort(x, axis, descending)
    if d.ndim == 0:  # itself, a copy (not a view), at index 0: as the values of a 1-element sort
        return SortResult(getitem(reshape(x, (1,)), indices), indices)
    # NOTE: the indices Tensor itself goes into the index, so the values' node keeps it (as
    # PyTorch's SortBackward0 keeps the indices): changing them in place before backward is an
    # error, not a gradient sent to the wrong elements.
    return SortResult(getitem(x, _along(d, axis, indices)), indices)


@composite("msort", methods=("msort",), torch="msort")
def msort(x):
    """`sort(x, dim=0).values`, as torch.msort."""
    return sort(x, 0).values


@primitive("index_add", batch="index_add", methods=("index_add",), torch="index_add")
def index_add(x, dim, index, source, alpha=1):
    """x with `alpha * source` added at `index` along `dim` (repeats accumulate)."""
    d = data_of(x)
    dim = one_dim(dim, d.ndim, "index_add")
    idx = data_of(index)
    if idx.ndim != 1:
        raise ValueError(f"kit.index_add: index must be 1-D, got shape {tuple(idx.shape)}")
    expected = d.shape[:dim] + (idx.shape[0],) + d.shape[dim + 1:]
    if tuple(data_of(source).shape) != expected:
        raise ValueError(
            f"kit.index_add: source has shape {tuple(data_of(source).shape)} but must have shape "
            f"{expected} (x's shape with dimension {dim} replaced by len(index))"
        )
    where = (slice(None),) * dim + (index if type(index) is Tensor else idx,)  # kept (_held)
    scattered = index_put_add(source if alpha == 1 else source * alpha, where, d.shape)
    return x + scattered
