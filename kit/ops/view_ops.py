"""Ops that return views, spelt as PyTorch spells them: view, view_as, narrow, unbind, chunk, split,
diagonal. view, view_as, narrow and chunk are composites of reshape, basic indexing (whose results
are views, see kit/_views.py) and split; diagonal is a primitive, because NumPy's diagonal is a
read-only view; unbind and split are primitives whose pieces are the outputs of one node, so that
`output_nr` numbers them 0, 1, 2... as PyTorch does.
"""

from __future__ import annotations

import math

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._outputs import node_type, record_outputs
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


# --- unbind and split: one node whose outputs are the pieces ---------------------------------
# NOTE: an in-place change of a piece is refused while recorded (kit/_views.py), as PyTorch
_PIECES = {op: node_type(op, multiple_views=True) for op in ("unbind", "split", "split_with_sizes")}


def _pieces_rule(node, *grads):
    # NOTE: a piece nobody used gets zeros; the pieces' gradients are joined back as they were
    # cut (stacked for unbind, concatenated for split), so a Tensor g (create_graph) is too.
    d, stacked = node.params
    given = next(g for g in grads if g is not None)
    filled = [g if g is not None else _zeros(given, shape, dtype)
              for g, (shape, dtype) in zip(grads, node.output_meta, strict=True)]
    if isinstance(given, Tensor):
        from kit.ops.movement import cat, stack

        return ((stack if stacked else cat)(filled, d),)
    xp = backend.get_array_module(given)
    return ((xp.stack if stacked else xp.concatenate)(filled, d),)


def _zeros(like, shape, dtype):
    if isinstance(like, Tensor):
        from kit._creation import zeros

        return zeros(shape, dtype=dtype, device=like.device)
    return backend.get_array_module(like).zeros(shape, dtype)


def _pieces(op, x, d, cuts, stacked):
    """The views x[cut] for each cut (basic indices along dim d), outputs of one node."""
    return record_outputs(_PIECES[op], op, _pieces_rule, [x._data[cut] for cut in cuts], (x,),
                          (), (d, stacked))


@primitive("unbind", grad=_pieces_rule, batch="unbind", methods=("unbind",), torch="unbind")
def unbind(x, dim=0):
    """The slices along `dim`, as a tuple of views (outputs 0, 1, 2... of one node)."""
    d = _dim(x, dim, "unbind")
    # (i, ...): a 0-d piece of a 1-D tensor is a view too, not the scalar NumPy gives for x[i]
    cuts = [(slice(None),) * d + (i, Ellipsis) for i in range(x.shape[d])]
    return _pieces("unbind", x, d, cuts, True)


@primitive("split", grad=_pieces_rule, batch="split", methods=("split",), torch="split")
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
    starts = np.cumsum([0] + sizes[:-1])
    cuts = [(slice(None),) * d + (slice(int(a), int(a) + s),) for a, s in zip(starts, sizes,
                                                                             strict=True)]
    op = "split" if isinstance(split_size_or_sections, int) else "split_with_sizes"
    return _pieces(op, x, d, cuts, False)


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

