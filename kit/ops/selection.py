"""Selecting elements by index or mask, as PyTorch spells it: index_select, masked_select,
take_along_dim and repeat_interleave are composites of indexing (whose gradient scatters back
with an add); nonzero and unique are primitives with results whose shape depends on the data (not
differentiable: unique's backward raises, as PyTorch's; under vmap both raise, as PyTorch's)."""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._record import ShapeError, data_of, record
from kit.ops._registry import composite, primitive
from kit.ops.extra import gather
from kit.ops.movement import broadcast_shapes, expand, getitem, reshape
from kit.ops.reductions import normalize_axis


def require_tensor(x, op, name="input"):
    """x, after checking that it is a Tensor (a clear error instead of an AttributeError)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.{op}: {name} must be a Tensor, not {type(x).__name__}. Fix: "
                        f"kit.tensor(...) (or torch.tensor) it first")
    return x


def one_dim(x, dim, op):
    """`dim` of x as a non-negative int (0 for a 0-d tensor, which takes 0 and -1)."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"kit.{op}: dim must be an int, got {dim!r}")
    axes = normalize_axis(int(dim), require_tensor(x, op).ndim, op)
    return axes[0] if axes else 0


def _long_index(index, op, what="index"):
    """An integer index tensor's array (int32 or int64), with PyTorch's error otherwise."""
    idx = data_of(index)
    if not hasattr(idx, "dtype"):
        idx = np.asarray(idx)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"kit.{op}: expected dtype int32 or int64 for {what}, got "
                           f"{idx.dtype}. Fix: {what}.long()")
    return idx


def _on_device_of(x, array):
    return backend.to_device(array, x.device)


@composite("index_select", methods=("index_select",), torch="index_select")
def index_select(x, dim, index):
    """The entries of `x` at the positions `index` (a 1-D integer tensor) along `dim`: a copy.

    >>> import kit
    >>> kit.index_select(kit.tensor([[1., 2.], [3., 4.]]), 1, kit.tensor([1, 1, 0]))
    tensor([[2., 2., 1.],
            [4., 4., 3.]])
    """
    idx = _long_index(index, "index_select")
    if idx.ndim > 1:
        raise IndexError(f"kit.index_select: index must be a vector (1-D), got shape "
                         f"{tuple(idx.shape)}. Fix: index.reshape(-1)")
    d = one_dim(x, dim, "index_select")
    n = x.shape[d] if x.ndim else 1
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise RuntimeError(f"kit.index_select: index {bad} is out of range for dimension {d} "
                           f"of size {n} (valid: 0 to {n - 1}; PyTorch takes no negative index "
                           f"here)")
    if x.ndim == 0:
        return reshape(getitem(reshape(x, (1,)), idx.reshape(-1)), ())
    return getitem(x, (slice(None),) * d + (idx.reshape(-1),))


@composite("masked_select", methods=("masked_select",), torch="masked_select")
def masked_select(x, mask):
    """The elements of `x` where the bool tensor `mask` is True, as a 1-D tensor (the two are
    broadcast together first)."""
    m = data_of(mask)
    if getattr(m, "dtype", None) is None or m.dtype.kind != "b":
        raise RuntimeError(f"kit.masked_select: expected a bool tensor for mask, got "
                           f"{getattr(m, 'dtype', type(m).__name__)}. Fix: mask.bool() (or a "
                           f"comparison such as x > 0)")
    shape = broadcast_shapes(tuple(x.shape), tuple(m.shape))
    m = backend.get_array_module(m).broadcast_to(m, shape)
    return getitem(x if tuple(x.shape) == shape else expand(x, shape), _on_device_of(x, m))


@composite("take_along_dim", methods=("take_along_dim",), torch="take_along_dim")
def take_along_dim(x, indices, dim=None):
    """out[i][j] = x[i][indices[i][j]] along `dim`, x and indices broadcast against each other
    in the other dims (as torch.take_along_dim); with dim=None, on the flattened tensors."""
    idx = _long_index(indices, "take_along_dim", "indices")
    if dim is None:
        return gather(reshape(x, (-1,)), 0, Tensor(idx.reshape(-1)))
    if idx.ndim != x.ndim:
        raise RuntimeError(f"kit.take_along_dim: input and indices should have the same number "
                           f"of dimensions, but got {x.ndim} and {idx.ndim}. Fix: unsqueeze "
                           f"the indices")
    d = one_dim(x, dim, "take_along_dim")
    have, want = list(x.shape), list(idx.shape)
    have[d] = want[d] = 1
    try:
        common = list(broadcast_shapes(tuple(have), tuple(want)))
    except ShapeError:
        raise ShapeError(f"kit.take_along_dim: shapes {tuple(x.shape)} and {tuple(idx.shape)} "
                         f"do not broadcast outside dim {d}") from None
    x_shape, idx_shape = list(common), list(common)
    x_shape[d], idx_shape[d] = x.shape[d], idx.shape[d]
    if tuple(x.shape) != tuple(x_shape):
        x = expand(x, tuple(x_shape))
    xp = backend.get_array_module(idx)
    return gather(x, d, Tensor(xp.broadcast_to(idx, tuple(idx_shape))))


@composite("repeat_interleave", methods=("repeat_interleave",), torch="repeat_interleave")
def repeat_interleave(x, repeats=None, dim=None, *, output_size=None):
    """Each element repeated `repeats` times (an int, or one count per element along `dim`), the
    repeats next to each other: [1, 2] -> [1, 1, 2, 2]. With dim=None the input is flattened.
    `repeat_interleave(counts)` alone gives repeat_interleave(arange(len(counts)), counts)."""
    if repeats is None:
        counts = _long_index(x, "repeat_interleave", "repeats")
        return Tensor(_on_device_of(x, np.repeat(np.arange(counts.size), _host(counts))))
    if dim is None:
        x, dim = reshape(x, (-1,)), 0
    d = one_dim(x, dim, "repeat_interleave")
    n = x.shape[d] if x.ndim else 1
    counts = _host(_long_index(repeats, "repeat_interleave", "repeats")).reshape(-1)
    if counts.size not in (1, n):
        raise RuntimeError(f"kit.repeat_interleave: repeats must have the same size as input "
                           f"along dim {d}, but got {counts.size} repeats for size {n}")
    if (counts < 0).any():
        raise RuntimeError("kit.repeat_interleave: repeats must be non-negative")
    picks = np.repeat(np.arange(n), counts)
    if output_size is not None and picks.size != output_size:
        raise RuntimeError(f"kit.repeat_interleave: output_size={output_size} but the repeats "
                           f"give {picks.size} elements")
    if x.ndim == 0:
        x = reshape(x, (1,))
    return getitem(x, (slice(None),) * d + (_on_device_of(x, picks),))


def _host(array):
    return backend.to_device(array, "cpu")


# --- results whose shape depends on the data ------------------------------------------------
@primitive("nonzero", batch="data_dependent", methods=("nonzero",), torch="nonzero")
def nonzero(x, as_tuple=False):
    """The indices of the nonzero elements (NaN counts as nonzero): an int64 tensor of shape
    (count, x.ndim), or with as_tuple=True one 1-D tensor per dim (x[x.nonzero(as_tuple=True)]
    are the elements)."""
    d = data_of(x)
    xp = backend.get_array_module(d)
    if as_tuple:
        return tuple(Tensor(i.astype(np.int64)) for i in xp.nonzero(d.reshape(-1) if d.ndim == 0
                                                                     else d))
    return Tensor(xp.argwhere(d).astype(np.int64))


@composite("argwhere", methods=("argwhere",), torch="argwhere")
def argwhere(x):
    """nonzero(x): the indices of the nonzero elements, one row per element."""
    return nonzero(x)


def _unique_rule(node, g):
    raise NotImplementedError("kit.unique: the derivative for unique is not implemented (as in "
                              "PyTorch). Fix: take the unique values of x.detach(); to sum "
                              "gradients per value, use the inverse indices with index_add")


@primitive("unique", grad=_unique_rule, batch="data_dependent", methods=("unique",),
           torch="unique")
def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values of `x`, sorted (also with sorted=False, as PyTorch's CPU result; NaNs
    are never equal, so each stays); with return_inverse each element's position among them,
    with return_counts how often each occurs. With `dim`, the distinct slices along dim."""
    d = data_of(x)
    xp = backend.get_array_module(d)
    axis = None if dim is None else one_dim(x, dim, "unique")
    values, inverse, counts = xp.unique(d, return_inverse=True, return_counts=True, axis=axis,
                                        equal_nan=False)
    out = record("unique", _unique_rule, values, (x,))
    if not (return_inverse or return_counts):
        return out
    inverse = inverse.reshape(d.shape if axis is None else (d.shape[axis],)).astype(np.int64)
    extra = ((Tensor(inverse),) if return_inverse else ()) + (
        (Tensor(counts.astype(np.int64)),) if return_counts else ())
    return (out, *extra)
