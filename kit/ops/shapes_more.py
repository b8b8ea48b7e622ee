"""Shape, indexing and product ops PyTorch programs call that kit lacked (repeat, tile,
unflatten, tensor_split, select, take, rot90, diff, index_fill, index_copy, scatter,
masked_scatter, cummax, cross, inner, mv, addmv, addr...): composites of kit's movement,
indexing and matmul primitives, so they own no gradient code.
"""

from __future__ import annotations

import math
import warnings
from collections import namedtuple

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._record import data_of
from kit.ops._registry import composite
from kit.ops.elementwise import where
from kit.ops.extra import _check_index, _grid, gather
from kit.ops.linalg import _add_product, dot, matmul, outer
from kit.ops.movement import (
    astype,
    broadcast_shapes,
    cat,
    expand,
    getitem,
    index_put,
    reshape,
    transpose,
)
from kit.ops.rearrange import flip
from kit.ops.selection import _long_index, one_dim, require_tensor
from kit.ops.view_ops import split

Cumulative = namedtuple("Cumulative", ["values", "indices"])  # what x.cummax(dim) returns


def _sizes(sizes, op):
    """`x.repeat(2, 3)` or `x.repeat((2, 3))`: a tuple of ints."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    return tuple(int(n) for n in sizes)


# --- repeating and reshaping -----------------------------------------------------------------
@composite("repeat", methods=("repeat",))
def repeat(x, *sizes):
    """x repeated sizes[i] times along dim i (leading sizes add dims), as Tensor.repeat: each
    dim is expanded in front of itself and merged, so the gradient sums the copies."""
    sizes = _sizes(sizes, "repeat")
    if len(sizes) < x.ndim:
        raise RuntimeError(f"kit.repeat: Number of dimensions of repeat dims can not be smaller "
                           f"than number of dimensions of tensor ({len(sizes)} < {x.ndim}). "
                           f"Fix: give one size per dim, e.g. x.repeat(1, 2)")
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"kit.repeat: Trying to create tensor with negative dimension "
                           f"({list(sizes)}). Fix: repeat counts are >= 0")
    shape = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
    spread = reshape(x, tuple(v for n in shape for v in (1, n)))
    grown = expand(spread, *(v for r, n in zip(sizes, shape, strict=True) for v in (r, n)))
    return reshape(grown, tuple(r * n for r, n in zip(sizes, shape, strict=True)))


@composite("tile", methods=("tile",), torch="tile")
def tile(x, dims):
    """x repeated dims[i] times along dim i; fewer dims than x has repeat the last dims."""
    dims = _sizes((dims,), "tile")
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


@composite("unflatten", methods=("unflatten",), torch="unflatten")
def unflatten(x, dim, sizes):
    """Dim `dim` split into dims of `sizes` (one may be -1), as torch.unflatten."""
    d = one_dim(x, dim, "unflatten")
    sizes = tuple(int(n) for n in sizes)
    n = x.shape[d]
    known = math.prod(s for s in sizes if s != -1)
    if sizes.count(-1) > 1 or (-1 not in sizes and known != n) or (
            -1 in sizes and (known == 0 or n % known)):
        raise RuntimeError(f"kit.unflatten: Provided sizes {list(sizes)} don't multiply up to "
                           f"the size of dim {dim} ({n}) in the input tensor")
    if -1 in sizes:
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    return reshape(x, tuple(x.shape[:d]) + sizes + tuple(x.shape[d + 1:]))


# --- pieces ----------------------------------------------------------------------------------
def _along(x, d, start, stop):
    return getitem(x, (slice(None),) * d + (slice(start, stop),))


@composite("tensor_split", methods=("tensor_split",), torch="tensor_split")
def tensor_split(x, indices_or_sections, dim=0):
    """Views of x along `dim`: `n` pieces as equal as can be (the first ones one longer), or
    cut at the listed indices (as NumPy's array_split)."""
    d = one_dim(x, dim, "tensor_split")
    n = x.shape[d] if x.ndim else 0
    if x.ndim == 0:
        raise RuntimeError("kit.tensor_split: expected at least a 1-dimensional tensor")
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise RuntimeError(f"kit.tensor_split: number of sections must be larger than 0, "
                               f"got {sections}")
        size, extra = divmod(n, sections)
        cuts = np.cumsum([0] + [size + (i < extra) for i in range(sections)]).tolist()
    else:
        cuts = [0] + [int(i) for i in indices_or_sections] + [n]
    return tuple(_along(x, d, a, max(a, b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True))


def _side_split(x, sections, dim, op, least):
    if x.ndim < least:
        raise RuntimeError(f"kit.{op}: torch.{op} requires a tensor with at least {least} "
                           f"dimension, but got a tensor with {x.ndim} dimensions!")
    if isinstance(sections, (int, np.integer)) and (sections == 0 or x.shape[dim] % sections):
        raise RuntimeError(f"kit.{op}: torch.{op} attempted to split along dimension {dim}, but "
                           f"the size of the dimension {x.shape[dim]} is not divisible by the "
                           f"split_size {sections}!")
    return tensor_split(x, sections, dim)


@composite("hsplit", methods=("hsplit",), torch="hsplit")
def hsplit(x, sections):
    """tensor_split along dim 1 (dim 0 of a 1-D tensor); `n` must divide it evenly."""
    return _side_split(x, sections, 1 if x.ndim > 1 else 0, "hsplit", 1)


@composite("vsplit", methods=("vsplit",), torch="vsplit")
def vsplit(x, sections):
    """tensor_split along dim 0 of a tensor of 2 dims or more."""
    return _side_split(x, sections, 0, "vsplit", 2)


@composite("dsplit", methods=("dsplit",), torch="dsplit")
def dsplit(x, sections):
    """tensor_split along dim 2 of a tensor of 3 dims or more."""
    return _side_split(x, sections, 2, "dsplit", 3)


@composite("split_with_sizes", methods=("split_with_sizes",), torch="split_with_sizes")
def split_with_sizes(x, split_sizes, dim=0):
    """split with a list of sizes, which must add up to the size of `dim`."""
    return split(x, [int(n) for n in split_sizes], dim)


# --- picking elements ------------------------------------------------------------------------
@composite("select", methods=("select",), torch="select")
def select(x, dim, index):
    """x[..., index] at dim `dim`, a view with that dim removed."""
    d = one_dim(x, dim, "select")
    if x.ndim == 0:
        raise IndexError("kit.select: select() cannot be applied to a 0-dim tensor.")
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"kit.select: select(): index {index} out of range for tensor of size "
                         f"{list(x.shape)} at dimension {d}")
    return getitem(x, (slice(None),) * d + (int(index), Ellipsis))


@composite("take", methods=("take",), torch="take")
def take(x, index):
    """The elements of x, read as one flat dim, at `index` (negative counts from the end); the
    result has index's shape."""
    idx = _long_index(index, "take")
    n = x.numel()
    if idx.size and (int(idx.max()) >= n or int(idx.min()) < -n):
        bad = int(idx.max()) if int(idx.max()) >= n else int(idx.min())
        raise IndexError(f"kit.take: out of range: tried to access index {bad} on a tensor of "
                         f"{n} elements.")
    return getitem(reshape(x, (-1,)), index if isinstance(index, Tensor) else Tensor(idx))


@composite("rot90", methods=("rot90",), torch="rot90")
def rot90(x, k=1, dims=(0, 1)):
    """x rotated by 90 degrees k times, from dims[0] towards dims[1] (flips and a transpose)."""
    if len(dims) != 2:
        raise RuntimeError(f"kit.rot90: expected total rotation dims == 2, but got dims = "
                           f"{len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"kit.rot90: expected total dims >= 2, but got total dims = {x.ndim}")
    a, b = (one_dim(x, d, "rot90") for d in dims)
    if a == b:
        raise RuntimeError(f"kit.rot90: expected rotation dims to be different, but got dim0 = "
                           f"{a} and dim1 = {b}")
    k %= 4
    if k == 1:
        return transpose(flip(x, [b]), a, b)
    if k == 2:
        return flip(x, [a, b])
    if k == 3:
        return flip(transpose(x, a, b), [b])
    return x.clone()


@composite("diff", methods=("diff",), torch="diff")
def diff(x, n=1, dim=-1, prepend=None, append=None):
    """x[i + 1] - x[i] along `dim`, `n` times (after joining prepend and append); for bool,
    x[i + 1] != x[i]."""
    if x.ndim == 0:
        raise RuntimeError("kit.diff: diff expects input to be at least one-dimensional")
    d = one_dim(x, dim, "diff")
    parts = [v for v in (prepend, x, append) if v is not None]
    if len(parts) > 1:
        x = cat([v if isinstance(v, Tensor) else Tensor(np.asarray(v)) for v in parts], d)
    for _ in range(n):
        size = x.shape[d]
        later, earlier = _along(x, d, 1, size), _along(x, d, 0, max(size - 1, 0))
        x = later != earlier if x.dtype == np.bool_ else later - earlier
    return x


# --- writing elements (out of place; the in-place forms come from the registry) --------------
def _positions(x, dim, index, op):
    """A bool mask of x's shape, True at the positions `index` names along `dim`."""
    d = one_dim(x, dim, op)
    idx = _long_index(index, op).reshape(-1)
    n = x.shape[d] if x.ndim else 1
    if idx.size and (int(idx.max()) >= n or int(idx.min()) < -n):
        raise IndexError(f"kit.{op}: index {int(idx.max())} is out of bounds for dimension {d} "
                         f"with size {n}")
    xp = backend.get_array_module(idx)
    chosen = xp.zeros(n, dtype=bool)
    chosen[idx] = True
    shape = [1] * x.ndim
    if x.ndim:
        shape[d] = n
    return Tensor(backend.to_device(chosen.reshape(shape), x.device)), d


@composite("index_fill", methods=("index_fill",), inplace=("index_fill_",), torch="index_fill")
def index_fill(x, dim, index, value):
    """x with `value` (a number or a 0-d tensor) at the indices of `dim`."""
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"kit.index_fill: only supports a 0-dimensional value tensor, but "
                           f"got tensor with {value.ndim} dimension(s).")
    mask, _ = _positions(x, dim, index, "index_fill")
    if isinstance(value, Tensor):
        value = astype(value, x.dtype)
    elif x.dtype.kind in "iub" and isinstance(value, float):
        value = int(value) if x.dtype.kind != "b" else bool(value)
    return where(mask, value, x) if x.dtype.kind != "b" else where(mask, bool(value), x)


@composite("index_copy", methods=("index_copy",), inplace=("index_copy_",), torch="index_copy")
def index_copy(x, dim, index, source):
    """x with source's slices along `dim` written at the indices `index` names."""
    d = one_dim(x, dim, "index_copy")
    idx = _long_index(index, "index_copy")
    if idx.ndim > 1:
        raise IndexError("kit.index_copy: Index should have dimension 1 or 0 (got "
                         f"{idx.ndim})")
    expected = list(x.shape)
    if x.ndim:
        expected[d] = idx.size
    if list(source.shape) != expected and not (x.ndim == 0 and source.numel() == 1):
        raise RuntimeError(f"kit.index_copy: source shape {list(source.shape)} does not match "
                           f"{expected} (x's shape with dim {d} the index's length)")
    if source.dtype != x.dtype:
        raise RuntimeError(f"kit.index_copy: index_copy_(): self and source expected to have "
                           f"the same dtype, but got (self) {x.dtype} and (source) "
                           f"{source.dtype}. Fix: source.to(x.dtype)")
    if x.ndim == 0:
        return reshape(source, ())
    return index_put(x, (slice(None),) * d + (Tensor(idx.reshape(-1)),), source)


@composite("scatter", methods=("scatter",), inplace=("scatter_",), torch="scatter")
def scatter(x, dim, index, src=None, value=None):
    """x with src[i][j] (or `value`) written at x[i][index[i][j]] for dim=1 (a repeated index:
    one of the values, as PyTorch does not promise which)."""
    if src is None and value is None:
        raise TypeError("kit.scatter: give src (a tensor) or value (a number)")
    if src is None or not isinstance(src, Tensor):
        value = src if value is None else value
        idx = data_of(index)  # (not x's array: under vmap, x is a batch)
        src = Tensor(backend.get_array_module(idx).full(idx.shape, value, dtype=x.dtype))
    d = _check_index(x, dim, index, "scatter")
    if src.dtype != x.dtype:
        raise RuntimeError(f"kit.scatter: Expected self.dtype to be equal to src.dtype ({x.dtype}"
                           f" and {src.dtype}). Fix: src.to(x.dtype)")
    part = getitem(src, tuple(slice(0, n) for n in data_of(index).shape))
    return index_put(x, _grid(index, d, "scatter"), part)


@composite("masked_scatter", methods=("masked_scatter",), inplace=("masked_scatter_",),
           torch="masked_scatter")
def masked_scatter(x, mask, source):
    """x with source's first elements (in order) written where mask is True."""
    m = data_of(mask)
    if m.dtype != np.bool_:
        raise RuntimeError(f"kit.masked_scatter: masked_scatter_ only supports boolean masks, "
                           f"but got mask with dtype {m.dtype}")
    if source.dtype != x.dtype:
        raise RuntimeError(f"kit.masked_scatter: masked_scatter: expected self and source to "
                           f"have same dtypes but got {x.dtype} and {source.dtype}")
    xp = backend.get_array_module(m)
    shape = broadcast_shapes(tuple(x.shape), m.shape)
    m = xp.broadcast_to(m, shape)
    count = int(m.sum())
    if count > source.numel():
        raise RuntimeError("kit.masked_scatter: Number of elements of source < number of ones "
                           "in mask")
    if tuple(x.shape) != shape:
        x = expand(x, *shape)
    values = getitem(reshape(source, (-1,)), slice(0, count))
    return index_put(x, Tensor(m), values)


def _cumulative(x, dim, op, better):
    """(values, indices) of the running best along dim; a NaN, once met, stays the best, as in
    PyTorch; a tie moves the index to the later element."""
    d = one_dim(x, dim, op)
    data = data_of(x)
    xp = backend.get_array_module(data)
    if x.ndim == 0:
        return Cumulative(x.clone(), Tensor(xp.zeros((), dtype=np.int64)))
    moved = xp.moveaxis(data, d, 0)
    indices = xp.zeros(moved.shape, dtype=np.int64)
    if moved.shape[0]:
        best, at = moved[0].copy(), xp.zeros(moved.shape[1:], dtype=np.int64)
        for i in range(moved.shape[0]):
            v = moved[i]
            nan = (v != v) if moved.dtype.kind == "f" else False
            take = nan | (better(v, best) & ~((best != best) if moved.dtype.kind == "f"
                                               else False))
            best, at = xp.where(take, v, best), xp.where(take, i, at)
            indices[i] = at
    index = Tensor(xp.moveaxis(indices, 0, d))
    return Cumulative(gather(x, d, index), index)


@composite("cummax", methods=("cummax",), torch="cummax")
def cummax(x, dim):
    """(values, indices) of the running maximum along `dim`; the gradient goes to the element
    each maximum came from."""
    return _cumulative(x, dim, "cummax", lambda v, best: v >= best)


@composite("cummin", methods=("cummin",), torch="cummin")
def cummin(x, dim):
    """(values, indices) of the running minimum along `dim`."""
    return _cumulative(x, dim, "cummin", lambda v, best: v <= best)


# --- products --------------------------------------------------------------------------------
@composite("cross", methods=("cross",), torch="cross")
def cross(x, y, dim=None):
    """The cross product of 3-vectors along `dim` (by default the first dim of size 3, with
    PyTorch's deprecation warning), with broadcasting."""
    shape = broadcast_shapes(tuple(x.shape), tuple(y.shape))
    if dim is not None:  # each input has 3 there before broadcasting, as PyTorch checks
        for t in (x, y):
            d = one_dim(t, dim, "cross")
            if t.shape[d] != 3:
                raise RuntimeError(f"kit.cross: linalg.cross: inputs dimension {dim} must have "
                                   f"length 3. Got {x.shape[d]} and {y.shape[d]}")
    else:
        warnings.warn("kit.cross: Using torch.cross without specifying the dim arg is "
                      "deprecated. Fix: pass dim, or use torch.linalg.cross", UserWarning,
                      stacklevel=2)
        dim = next((i for i, n in enumerate(x.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"kit.cross: no dimension of size 3 in input (shape "
                               f"{list(shape)})")
    if tuple(x.shape) != shape:
        x = expand(x, *shape)
    if tuple(y.shape) != shape:
        y = expand(y, *shape)
    d = one_dim(x, dim, "cross")
    if shape[d] != 3:
        raise RuntimeError(f"kit.cross: inputs dimension {dim} must have length 3, got "
                           f"{shape[d]}")
    a = [select(x, d, i) for i in range(3)]
    b = [select(y, d, i) for i in range(3)]
    parts = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    return cat([reshape(p, p.shape[:d] + (1,) + p.shape[d:]) for p in parts], d)


@composite("inner", methods=("inner",), torch="inner")
def inner(x, y):
    """The sum of products over the last dims of x and y (a number times a tensor when one is
    0-d), shape x.shape[:-1] + y.shape[:-1]."""
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    if x.shape[-1] != y.shape[-1]:
        raise RuntimeError(f"kit.inner: inner() the last dimension must match on both input "
                           f"tensors but got shapes {list(x.shape)} and {list(y.shape)}")
    n = x.shape[-1]
    product = matmul(reshape(x, (-1, n)), transpose(reshape(y, (-1, n)), 0, 1))
    return reshape(product, tuple(x.shape[:-1]) + tuple(y.shape[:-1]))


@composite("mv", methods=("mv",), torch="mv")
def mv(matrix, vector):
    """A matrix (2-D) times a vector (1-D)."""
    require_tensor(matrix, "mv"), require_tensor(vector, "mv", "vec")
    if matrix.ndim != 2 or vector.ndim != 1 or matrix.shape[1] != vector.shape[0]:
        raise RuntimeError(f"kit.mv: vector + matrix @ vector expected, got matrix "
                           f"{list(matrix.shape)} and vector {list(vector.shape)}. Fix: "
                           f"matrix.shape[1] == vector.shape[0]")
    return matmul(matrix, vector)


@composite("addmv", methods=("addmv",), inplace=("addmv_",), torch="addmv")
def addmv(x, matrix, vector, *, beta=1, alpha=1):
    """beta * x + alpha * (matrix @ vector)."""
    return _add_product("addmv", mv, x, matrix, vector, beta, alpha)


@composite("addr", methods=("addr",), inplace=("addr_",), torch="addr")
def addr(x, vec1, vec2, *, beta=1, alpha=1):
    """beta * x + alpha * outer(vec1, vec2)."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"kit.addr: expected 1-D vectors, got {vec1.ndim}-D and "
                           f"{vec2.ndim}-D")
    return _add_product("addr", outer, x, vec1, vec2, beta, alpha)


@composite("dist", methods=("dist",), torch="dist")
def dist(x, y, p=2):
    """The p-norm of x - y (broadcast), as torch.dist."""
    from kit.ops.norms import norm

    return norm(x - y, float(p))


@composite("vdot", methods=("vdot",), torch="vdot")
def vdot(x, y):
    """The dot product of two 1-D tensors (for real tensors, dot)."""
    return dot(x, y)
