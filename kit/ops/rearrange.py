"""Rearranging elements, as PyTorch spells it: flip, roll, triangles and diagonals (tril, triu,
diag, diag_embed, trace), stacking (atleast_Nd, hstack, vstack, dstack, column_stack), meshgrid
and kron. All composites of indexing, where, reshape/expand and cat, so they own no gradient
code; the results are copies, as PyTorch's (meshgrid's are views, as PyTorch's)."""

from __future__ import annotations

import warnings

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._registry import composite
from kit.ops.elementwise import where
from kit.ops.movement import cat, expand, getitem, index_put_add, movedim, reshape
from kit.ops.reductions import normalize_axis
from kit.ops.reductions import sum as sum_
from kit.ops.selection import one_dim, require_tensor
from kit.ops.view_ops import diagonal


def _along(x, d, positions):
    """x at `positions` (a NumPy index array) along dim d: a copy, as PyTorch's flip and roll."""
    return getitem(x, (slice(None),) * d + (backend.to_device(positions, x.device),))


def _dims_arg(dims, op):
    if isinstance(dims, int):
        raise TypeError(f"kit.{op}: dims must be a tuple or list of ints, not an int (as "
                        f"PyTorch). Fix: {op}(x, ({dims},))")
    return tuple(dims)


def _varargs(fn):
    """`x.flip(0, 1)` as well as `x.flip((0, 1))`: PyTorch's method spelling."""

    def method(self, *dims):
        return fn(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)

    return method


@composite("flip", methods=(("flip", _varargs),), torch="flip")
def flip(x, dims):
    """The order of the elements reversed along each of `dims`: flip(x, (0,)) turns x upside
    down."""
    axes = normalize_axis(_dims_arg(dims, "flip"), require_tensor(x, "flip").ndim, "flip")
    if x.ndim == 0:
        return reshape(_along(reshape(x, (1,)), 0, np.arange(1)), ())
    for d in axes:
        x = _along(x, d, np.arange(x.shape[d] - 1, -1, -1))
    return x


@composite("fliplr", methods=("fliplr",), torch="fliplr")
def fliplr(x):
    """flip(x, (1,)), for a tensor of at least 2 dims."""
    if x.ndim < 2:
        raise RuntimeError(f"kit.fliplr: input must be >= 2-d, got {x.ndim}-d")
    return flip(x, (1,))


@composite("flipud", methods=("flipud",), torch="flipud")
def flipud(x):
    """flip(x, (0,)), for a tensor of at least 1 dim."""
    if x.ndim < 1:
        raise RuntimeError("kit.flipud: input must be >= 1-d, got a 0-d tensor")
    return flip(x, (0,))


@composite("roll", methods=("roll",), torch="roll")
def roll(x, shifts, dims=None):
    """The elements shifted by `shifts` along `dims`, those pushed off one end coming back at the
    other; with dims=None along the flattened tensor (as torch.roll)."""
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    if not all(isinstance(s, int) for s in shifts):
        raise TypeError(f"kit.roll: shifts must be ints, got {shifts!r}")
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"kit.roll: shifts and dimensions must align: {len(shifts)} "
                               f"shifts without dims (give one shift, or one dim per shift)")
        return reshape(roll(reshape(x, (-1,)), shifts, 0), tuple(x.shape))
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"kit.roll: shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims: {len(dims)}")
    if x.ndim == 0:
        normalize_axis(dims, 0, "roll")
        return roll(reshape(x, (1,)), shifts, 0).reshape(())
    for shift, dim in zip(shifts, dims, strict=True):
        d = one_dim(x, dim, "roll")
        n = x.shape[d]
        if n:
            x = _along(x, d, (np.arange(n) - shift) % n)
    return x


# --- triangles and diagonals ----------------------------------------------------------------
def _triangle(x, keep, op):
    if require_tensor(x, op).ndim < 2:
        raise RuntimeError(f"kit.{op}: input tensor must have at least 2 dimensions, got shape "
                           f"{tuple(x.shape)}")
    zero = Tensor(backend.to_device(np.zeros((), x.dtype), x.device))
    return where(backend.to_device(keep(*x.shape[-2:]), x.device), x, zero)


@composite("tril", methods=("tril",), inplace=("tril_",), torch="tril")
def tril(x, diagonal=0):
    """The lower triangle of the matrices in the last two dims (on and below `diagonal`), zeros
    elsewhere (NaN too, as PyTorch)."""
    return _triangle(x, lambda r, c: np.tri(r, c, diagonal, dtype=bool), "tril")


@composite("triu", methods=("triu",), inplace=("triu_",), torch="triu")
def triu(x, diagonal=0):
    """The upper triangle of the matrices in the last two dims (on and above `diagonal`)."""
    return _triangle(x, lambda r, c: ~np.tri(r, c, diagonal - 1, dtype=bool), "triu")


def _diagonal_positions(n, offset):
    """Rows and columns of the `offset` diagonal holding n elements."""
    return np.arange(n) + max(-offset, 0), np.arange(n) + max(offset, 0)


@composite("diag_embed", methods=("diag_embed",), torch="diag_embed")
def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """Matrices with the last dim of x on their `offset` diagonal, in the new dims (dim1, dim2)
    of the result (as torch.diag_embed)."""
    if require_tensor(x, "diag_embed").ndim == 0:
        raise RuntimeError("kit.diag_embed: expected a tensor of at least 1 dim, got 0-d")
    a, b = (normalize_axis(d, x.ndim + 1, "diag_embed")[0] for d in (dim1, dim2))
    if a == b:
        raise RuntimeError(f"kit.diag_embed: diagonal dimensions cannot be identical {dim1}, "
                           f"{dim2}")
    k = x.shape[-1]
    n = k + abs(offset)
    rows, cols = (backend.to_device(i, x.device) for i in _diagonal_positions(k, offset))
    out = index_put_add(x, (Ellipsis, rows, cols), tuple(x.shape[:-1]) + (n, n))
    return movedim(out, (-2, -1), (a, b))


@composite("diag", methods=("diag",), torch="diag")
def diag(x, diagonal=0):
    """A 1-D tensor as a square matrix with it on the `diagonal`-th diagonal, or the
    `diagonal`-th diagonal of a matrix as a 1-D tensor (a copy; `diagonal()` gives a view)."""
    if require_tensor(x, "diag").ndim == 1:
        return diag_embed(x, diagonal)
    if x.ndim != 2:
        raise RuntimeError(f"kit.diag: supports 1-D or 2-D tensors, got {x.ndim}-D. Fix: "
                           f"x.diagonal(offset, dim1, dim2) for a batch of matrices")
    rows, cols = x.shape
    n = max(0, min(rows - max(-diagonal, 0), cols - max(diagonal, 0)))
    index = tuple(backend.to_device(i, x.device) for i in _diagonal_positions(n, diagonal))
    return getitem(x, index)


@composite("trace", methods=("trace",), torch="trace")
def trace(x):
    """The sum of the main diagonal of a matrix (integers sum to int64)."""
    if require_tensor(x, "trace").ndim != 2:
        raise RuntimeError(f"kit.trace: expected a matrix, but got a tensor with {x.ndim} dims")
    if x.dtype.kind == "b":
        raise NotImplementedError("\"trace\" not implemented for 'Bool' (kit.trace, as in "
                                  "PyTorch). Fix: x.long().trace()")
    return sum_(diagonal(x))


# --- stacking ---------------------------------------------------------------------------------
def _at_least(n):
    def fn(*tensors):
        many = len(tensors) != 1 or isinstance(tensors[0], (list, tuple))
        tensors = tuple(tensors[0]) if len(tensors) == 1 and many else tensors
        out = tuple(_padded(t, n) for t in tensors)
        return out if many else out[0]

    fn.__name__ = fn.__qualname__ = f"atleast_{n}d"
    fn.__doc__ = (f"Each tensor with at least {n} dims (as torch.atleast_{n}d): a view with "
                  f"dims of size 1 added; a tuple for several tensors.")
    return composite(fn.__name__, torch=fn.__name__)(fn)


def _padded(t, n):
    shape = tuple(t.shape)
    if len(shape) >= n:
        return t
    if n == 3 and len(shape) == 2:
        return reshape(t, shape + (1,))
    if n == 3:  # PyTorch (and NumPy): (k,) -> (1, k, 1)
        return reshape(t, (1,) + (shape or (1,)) + (1,))
    return reshape(t, (1,) * (n - len(shape)) + shape)


atleast_1d = _at_least(1)
atleast_2d = _at_least(2)
atleast_3d = _at_least(3)


def _joined(tensors, op, pad, dim):
    tensors = [require_tensor(t, op, "each item") for t in tensors]
    if not tensors:
        raise RuntimeError(f"kit.{op}: expects a non-empty list of tensors")
    return cat([pad(t) for t in tensors], dim)


@composite("hstack", torch="hstack")
def hstack(tensors):
    """The tensors joined column-wise: along dim 0 if they are 1-D, else along dim 1."""
    tensors = [atleast_1d(require_tensor(t, "hstack", "each item")) for t in tensors]
    return _joined(tensors, "hstack", lambda t: t, 0 if tensors and tensors[0].ndim == 1 else 1)


@composite("vstack", torch=("vstack", "row_stack"))
def vstack(tensors):
    """The tensors joined row-wise: each made at least 2-D, then joined along dim 0."""
    return _joined(tensors, "vstack", atleast_2d, 0)


@composite("dstack", torch="dstack")
def dstack(tensors):
    """The tensors joined depth-wise: each made at least 3-D, then joined along dim 2."""
    return _joined(tensors, "dstack", atleast_3d, 2)


@composite("column_stack", torch="column_stack")
def column_stack(tensors):
    """The tensors as columns: 0-D and 1-D ones become (n, 1) columns, then joined along dim 1."""
    return _joined(tensors, "column_stack",
                   lambda t: reshape(t, (t.numel(), 1)) if t.ndim < 2 else t, 1)


@composite("meshgrid", torch="meshgrid")
def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors: with indexing='ij' the i-th output varies along dim i;
    'xy' swaps the first two dims (NumPy's and Matlab's way). Without indexing, PyTorch warns
    and uses 'ij'; so does kit. The outputs are views (expanded)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument. (kit.meshgrid uses indexing='ij', as PyTorch does.)",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"kit.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"kit.meshgrid: expected 0-D or 1-D tensors, got one of shape "
                               f"{tuple(t.shape)}. Fix: flatten it first")
    sizes = [max(t.numel(), 1) if t.ndim else 1 for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[i] for i in order)
    grids = []
    for i, t in enumerate(tensors):
        place = [1] * len(tensors)
        place[order.index(i)] = sizes[i]
        grids.append(expand(reshape(t, tuple(place)), shape))
    return tuple(grids)


@composite("kron", methods=("kron",), torch="kron")
def kron(a, b):
    """The Kronecker product: block (i, j) of kron(a, b) is a[i, j] * b (any number of dims, the
    shorter shape padded with leading 1s)."""
    require_tensor(a, "kron")
    require_tensor(b, "kron", "other")
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    spread_a = reshape(a, tuple(v for n in sa for v in (n, 1)))
    spread_b = reshape(b, tuple(v for n in sb for v in (1, n)))
    return reshape(spread_a * spread_b, tuple(m * n for m, n in zip(sa, sb, strict=True)))
