"""Ops that return views, spelt as PyTorch spells them: view, view_as, narrow, unbind, chunk, split,
diagonal. All but diagonal are composites of reshape and basic indexing (whose results are views,
see kit/_views.py); diagonal is a primitive, because NumPy's diagonal is a read-only view.
"""

from __future__ import annotations

import math

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._record import record
from kit.ops._registry import composite, primitive
from kit.ops.movement import getitem, index_put_add, reshape
from kit.ops.reductions import normalize_axis


@composite("view", methods=("view",))
def view(x, *shape):
    """The same storage seen with another shape; an error where that needs a copy (use reshape)."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)) and hasattr(
            shape[0], "itemsize"):
        raise NotImplementedError("kit: Tensor.view(dtype) is not supported; use .to(dtype)")
    y = reshape(x, *shape)
    if type(y) is Tensor and y._data.size and y._base is None:  # (not a vmap sample)
        raise RuntimeError(
            f"view size is not compatible with input tensor's size and stride (at least one "
            f"dimension spans across two contiguous subspaces): a tensor of shape "
            f"{list(x.shape)} cannot be seen as {list(y.shape)} without a copy. Use "
            f".reshape(...) instead."
        )
    return y


@composite("view_as", methods=("view_as",))
def view_as(x, other):
    return view(x, other.shape)


def _dim(x, dim, op):
    return normalize_axis((dim,), x.ndim, op)[0]


@composite("narrow", methods=("narrow",), torch="narrow")
def narrow(x, dim, start, length):
    """Elements start .. start + length - 1 along `dim`: a view."""
    d = _dim(x, dim, "narrow")
    n = x.shape[d]
    start = int(start)
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise IndexError(
            f"kit.narrow: start ({start}) + length ({length}) exceeds dimension size ({n}) of "
            f"dim {dim}"
        )
    return getitem(x, (slice(None),) * d + (slice(start, start + length),))


@composite("unbind", methods=("unbind",), torch="unbind")
def unbind(x, dim=0):
    """The slices along `dim`, as a tuple of views."""
    d = _dim(x, dim, "unbind")
    return tuple(getitem(x, (slice(None),) * d + (i,)) for i in range(x.shape[d]))


@composite("split", methods=("split",), torch="split")
def split(x, split_size_or_sections, dim=0):
    """Pieces of `split_size` along `dim` (the last may be smaller), or of the listed sizes."""
    d = _dim(x, dim, "split")
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and n:
            raise RuntimeError(f"kit.split: split_size must be positive, got {size}")
        sizes = [min(size, n - i) for i in range(0, n, size)] if n else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n:
            raise RuntimeError(
                f"kit.split: split_with_sizes expects split_sizes to sum exactly to {n} (input "
                f"tensor's size at dimension {dim}), but got split_sizes={sizes}"
            )
    pieces, start = [], 0
    for s in sizes:
        pieces.append(getitem(x, (slice(None),) * d + (slice(start, start + s),)))
        start += s
    return tuple(pieces)


@composite("chunk", methods=("chunk",), torch="chunk")
def chunk(x, chunks, dim=0):
    """`chunks` pieces (or fewer) of equal size along `dim`, the last possibly smaller."""
    if chunks <= 0:
        raise RuntimeError(f"kit.chunk: chunk expects `chunks` to be greater than 0, got {chunks}")
    n = x.shape[_dim(x, dim, "chunk")]
    return split(x, max(math.ceil(n / chunks), 1), dim)


def _diagonal_rule(node, g):
    shape, idx = node.params
    return (index_put_add(g, idx, shape),)


@primitive("diagonal", grad=_diagonal_rule, batch="diagonal", methods=("diagonal",),
           torch="diagonal")
def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal of dims (dim1, dim2) as the last dim: a writable view, as in PyTorch."""
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.diagonal: expected a Tensor, got {type(x).__name__}")
    d = x._data
    a, b = (normalize_axis((k,), d.ndim, "diagonal")[0] for k in (dim1, dim2))
    if a == b:
        raise RuntimeError(f"kit.diagonal: dim1 and dim2 cannot be the same dimension ({a})")
    n = max(0, min(d.shape[a] - max(-offset, 0), d.shape[b] - max(offset, 0)))
    rest = [i for i in range(d.ndim) if i not in (a, b)]
    shape = tuple(d.shape[i] for i in rest) + (n,)
    strides = tuple(d.strides[i] for i in rest) + (d.strides[a] + d.strides[b],)
    start = [0] * d.ndim
    start[a], start[b] = max(-offset, 0), max(offset, 0)
    xp = backend.get_array_module(d)
    first = d[tuple(slice(s, None) for s in start)] if n else d
    out = xp.lib.stride_tricks.as_strided(first, shape, strides)  # writable, unlike xp.diagonal
    idx = _diagonal_index(d.shape, a, b, start, n, rest, backend.device_of(d))
    return record("diagonal", _diagonal_rule, out, (x,), (), (d.shape, idx))


def _diagonal_index(shape, a, b, start, n, rest, device):
    """An advanced index of x selecting the diagonal, in the view's element order."""
    grids = np.meshgrid(*[np.arange(shape[i]) for i in rest], np.arange(n), indexing="ij")
    index = [None] * len(shape)
    for axis, grid in zip(rest, grids[:-1], strict=True):
        index[axis] = grid
    index[a] = grids[-1] + start[a]
    index[b] = grids[-1] + start[b]
    return tuple(backend.to_device(i, device) for i in index)

