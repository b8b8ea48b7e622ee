"""Movement: reshape, permute, squeeze/unsqueeze, expand, indexing, cat/stack, dtype and device.

Indexing follows NumPy (basic, advanced and boolean); its gradient scatters back with an add, so
repeated indices accumulate (`index_put_add`, whose own gradient is indexing again).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from kit import backend
from kit._errors import DimIndexError, ShapeError
from kit._tensor import Tensor
from kit.ops._record import check_same_device, data_of, record, shape_error
from kit.ops._registry import composite, primitive
from kit.ops.elementwise import BROADCAST
from kit.ops.reductions import normalize_axis, one_dim


def _tensor_arg(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.{op}: expected a Tensor, got {type(x).__name__}")
    return x._data


def shape_arg(shape, op):
    """A shape given as sizes or as one sequence (x.reshape(2, 3) or x.reshape((2, 3))), each
    size an int (or anything with __index__, as PyTorch: not a float, not a bool)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(_size(n, op) for n in shape)


def _size(n, op):
    try:
        if isinstance(n, bool):
            raise TypeError
        return operator.index(n)
    except TypeError:
        raise TypeError(f"kit.{op}: sizes must be ints, got {type(n).__name__} {n!r} (as "
                        f"PyTorch, a float size is refused). Fix: int({n!r})") from None


def expand_shape(shape, have):
    """What expand(shape) makes of a tensor of shape `have` (-1 keeps a size), and how many
    dimensions it adds in front."""
    lead = len(shape) - len(have)
    if lead < 0:
        raise ShapeError(
            f"kit.expand: the number of sizes ({len(shape)}) must be at least the number of "
            f"dimensions of the tensor ({len(have)})"
        )
    if -1 in shape[:lead]:
        raise ShapeError(
            f"kit.expand: size -1 (keep the size) in new leading dimension "
            f"{shape.index(-1)} of {list(shape)}: a dimension the tensor of shape {list(have)} "
            f"does not have has no size to keep. Fix: give its size"
        )
    return lead, tuple(have[i - lead] if n == -1 else n for i, n in enumerate(shape))


def broadcast_shapes(*shapes):
    """The shape tensors of `shapes` broadcast to (an int is a 1-d shape); as
    torch.broadcast_shapes. Sizes are aligned from the right; each pair must be equal or 1.

    >>> broadcast_shapes((3, 1), (4,))
    (3, 4)
    """
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(
            f"kit.broadcast_shapes: shapes {' and '.join(map(str, shapes))} are not compatible: "
            f"{BROADCAST}"
        ) from None


# --- shape ----------------------------------------------------------------------------------
def _reshape_rule(node, g):
    return (g.reshape(node.params),)


@primitive("reshape", grad=_reshape_rule, batch="reshape", methods=("reshape",),
           torch="reshape")
def reshape(x, *shape):
    """The same elements in a new shape (-1 is inferred)."""
    d = _tensor_arg(x, "reshape")
    shape = shape_arg(shape, "reshape")
    try:
        out = d.reshape(shape)
    except ValueError:
        raise ShapeError(
            f"kit.reshape: shape {list(shape)} is invalid for input of size {d.size} "
            f"(shape {list(d.shape)})"
        ) from None
    return record("reshape", _reshape_rule, out, (x,), (), d.shape)


def _permute_rule(node, g):
    inverse = tuple(np.argsort(node.params))
    if isinstance(g, Tensor):
        return (permute(g, inverse),)
    return (g.transpose(inverse),)


@primitive("permute", grad=_permute_rule, batch="permute", methods=("permute",),
           torch="permute")
def permute(x, *axes):
    """Reorder the axes: `permute(x, 2, 0, 1)`."""
    d = _tensor_arg(x, "permute")
    axes = shape_arg(axes, "permute")
    in_range = all(-d.ndim <= a < d.ndim for a in axes)
    if not in_range or sorted(a % max(d.ndim, 1) for a in axes) != list(range(d.ndim)):
        raise (ShapeError if in_range else DimIndexError)(
            f"kit.permute: {list(axes)} is not a permutation of the {d.ndim} axes of a tensor "
            f"of shape {list(d.shape)}"
        )
    axes = tuple(a % d.ndim for a in axes)
    return record("permute", _permute_rule, d.transpose(axes), (x,), (), axes)


@primitive("transpose", batch="transpose", methods=("transpose", "swapaxes", "swapdims"),
           torch=("transpose", "swapaxes", "swapdims"))
def transpose(x, dim0=-2, dim1=-1):
    """Swap two axes (PyTorch's transpose; defaults to the last two)."""
    d = _tensor_arg(x, "transpose")
    if d.ndim < 2 and dim0 in (-2, -1) and dim1 in (-2, -1):
        return x
    if not d.ndim:  # a 0-d tensor takes dims 0 and -1, as in PyTorch
        one_dim(dim0, 0, "transpose"), one_dim(dim1, 0, "transpose")
        return x
    a, b = one_dim(dim0, d.ndim, "transpose"), one_dim(dim1, d.ndim, "transpose")
    axes = list(range(d.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return permute(x, axes)


@composite("movedim", methods=("movedim", "moveaxis"), torch=("movedim", "moveaxis"))
def movedim(x, source, destination):
    """Move dim(s) `source` to `destination` (ints or tuples), keeping the others in order.

    A composite of permute, as torch.movedim: `movedim(x, 0, -1)` makes the first dim last.
    """
    nd = x.ndim
    src = normalize_axis(source, nd, "movedim") if isinstance(source, int) else tuple(
        one_dim(s, nd, "movedim") for s in source)
    dst = normalize_axis(destination, nd, "movedim") if isinstance(destination, int) else tuple(
        one_dim(d, nd, "movedim") for d in destination)
    if len(src) != len(dst):
        raise ValueError(
            f"kit.movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)"
        )
    rest = iter(i for i in range(nd) if i not in src)
    moved = dict(zip(dst, src, strict=True))
    return permute(x, tuple(moved[i] if i in moved else next(rest) for i in range(nd)))


@primitive("unsqueeze", batch="unsqueeze", methods=("unsqueeze",), torch="unsqueeze")
def unsqueeze(x, dim):
    d = _tensor_arg(x, "unsqueeze")
    if not -(d.ndim + 1) <= dim <= d.ndim:
        raise IndexError(
            f"kit.unsqueeze: dimension {dim} is out of range for a tensor with {d.ndim} "
            f"dimensions (expected to be in range [{-(d.ndim + 1)}, {d.ndim}])"
        )
    dim %= d.ndim + 1
    return reshape(x, d.shape[:dim] + (1,) + d.shape[dim:])


@primitive("squeeze", batch="squeeze", methods=("squeeze",), torch="squeeze")
def squeeze(x, dim=None):
    d = _tensor_arg(x, "squeeze")
    if dim is None:
        shape = tuple(n for n in d.shape if n != 1)
    else:
        axes = normalize_axis(dim, d.ndim, "squeeze")
        shape = tuple(n for i, n in enumerate(d.shape) if not (i in axes and n == 1))
    return reshape(x, shape)


@composite("ravel", methods=("ravel",), torch="ravel")
def ravel(x):
    """The elements in one dim, in C order (a view where x is contiguous, as torch.ravel)."""
    return reshape(x, (-1,))


@primitive("flatten", batch="flatten", methods=("flatten",), torch="flatten")
def flatten(x, start_dim=0, end_dim=-1):
    d = _tensor_arg(x, "flatten")
    if d.ndim == 0:
        return reshape(x, (1,))
    s = one_dim(start_dim, d.ndim, "flatten")
    e = one_dim(end_dim, d.ndim, "flatten")
    if s > e:
        raise ShapeError(f"kit.flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return reshape(x, d.shape[:s] + (math.prod(d.shape[s : e + 1]),) + d.shape[e + 1 :])


def _expand_rule(node, g):
    return (g,)  # NOTE: the engine sums the gradient back down to the input's shape


@primitive("expand", grad=_expand_rule, batch="expand", methods=("expand",))
def expand(x, *shape):
    """Broadcast to a larger shape without copying (-1 keeps a size); as torch.expand."""
    d = _tensor_arg(x, "expand")
    _, shape = expand_shape(shape_arg(shape, "expand"), d.shape)
    try:
        out = backend.get_array_module(d).broadcast_to(d, shape)
    except ValueError:
        raise shape_error("expand", d, np.empty(shape), detail="a dimension of size other "
                          "than 1 cannot be expanded") from None
    return record("expand", _expand_rule, out, (x,))


@composite("broadcast_to", methods=("broadcast_to",), torch="broadcast_to")
def broadcast_to(x, shape):
    return expand(x, tuple(shape))


# --- indexing -------------------------------------------------------------------------------
def _index_arg(index):
    """Replace Tensors inside an index by their arrays."""
    if isinstance(index, tuple):
        return tuple(_index_arg(i) for i in index)
    if isinstance(index, Tensor):
        return index._data
    if isinstance(index, list) and any(isinstance(i, Tensor) for i in index):
        return [_index_arg(i) for i in index]
    return index


def _held(index):
    """The Tensors in an index: what getitem, index_put and index_put_add save (nothing for
    slices and numbers, so their declarations say saves="").

    NOTE: a node keeps them (as PyTorch's IndexBackward0 and IndexPutBackward0 keep their
    indices), because the arrays in its params share their memory: an in-place change of an
    index before backward must be an error, not a silently different gradient."""
    if isinstance(index, Tensor):
        return (index,)
    held = ()
    if isinstance(index, tuple):
        for item in index:
            if isinstance(item, Tensor):
                held += (item,)
    return held


def _check_masks(index, shape):
    """PyTorch's IndexError for a boolean mask whose shape is not that of the dims it indexes
    (NumPy lets a mask of size 0 through on a dim of size 1, and gives an empty result)."""
    dim = 0
    for item in index if isinstance(index, tuple) else (index,):
        if item is Ellipsis:
            return  # (the dims after it are counted from the end: NumPy checks those)
        if item is None or isinstance(item, bool):
            continue
        if getattr(getattr(item, "dtype", None), "kind", None) == "b":
            if tuple(item.shape) != tuple(shape[dim:dim + item.ndim]):
                raise IndexError(f"kit indexing: The shape of the mask {list(item.shape)} at "
                                 f"index {dim} does not match the shape of the indexed tensor "
                                 f"{list(shape)} at index {dim}")
            dim += item.ndim
        else:
            dim += 1


def _is_basic(index):
    """Slices, ints, None and Ellipsis only: each element is selected at most once."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (slice, int)) for i in items)


def _getitem_rule(node, g, *held):
    shape, index = node.params
    return (index_put_add(g, index, shape),)


@primitive("getitem", grad=_getitem_rule, batch="getitem", methods=("__getitem__",))
def getitem(x, index):
    """x[index] with NumPy semantics; the gradient scatters back with an add."""
    d = _tensor_arg(x, "getitem")
    held = ()
    if type(index) is not slice and type(index) is not int:  # (the common ones first)
        held = _held(index)
        index = _index_arg(index)
        _check_masks(index, d.shape)
    try:
        out = d[index]
    except IndexError as exc:
        raise IndexError(f"kit indexing a tensor of shape {list(d.shape)}: {exc}") from None
    if type(out) is not np.ndarray and (isinstance(out, np.generic) or not hasattr(out, "shape")):
        # NOTE: NumPy gives a scalar (a copy) for a full integer index; with `...` after it, a
        # 0-d view, as PyTorch's x[0] (an in-place change of x shows in it, and of it in x)
        index = (index if isinstance(index, tuple) else (index,)) + (Ellipsis,)
        out = d[index]
    return record("getitem", _getitem_rule, out, (x,), held, (d.shape, index))


def _index_put_add_rule(node, g, *held):
    _, index = node.params
    return (g[index],)


@primitive("index_put_add", grad=_index_put_add_rule, batch="index_put_add")
def index_put_add(src, index, shape):
    """zeros(shape) with `src` added at `index` (repeats accumulate): the adjoint of indexing."""
    if not isinstance(src, Tensor):
        xp = backend.get_array_module(src)
        out = xp.zeros(shape, dtype=src.dtype)
        _scatter_add(xp, out, index, src)
        return out
    held = _held(index)  # (only scatter_add and index_add pass Tensors in the index)
    index = _index_arg(index)
    d = src._data
    xp = backend.get_array_module(d)
    out = xp.zeros(shape, dtype=d.dtype)
    _scatter_add(xp, out, index, d)
    return record("index_put_add", _index_put_add_rule, out, (src,), held, (shape, index))


def _scatter_add(xp, out, index, values):
    if _is_basic(index) or (
        hasattr(index, "dtype") and index.dtype.kind == "b"
    ):
        out[index] += values  # each position is hit at most once
    elif hasattr(xp, "add") and hasattr(xp.add, "at"):
        xp.add.at(out, index, values)
    else:  # pragma: no cover - older CuPy
        import cupyx

        cupyx.scatter_add(out, index, values)


def _index_put_rule(node, g, *held):
    index, value_shape = node.params
    need = node.next_functions
    if isinstance(g, Tensor):
        keep = backend.get_array_module(g._data).ones(g.shape, dtype=bool)
        keep[index] = False
        from kit.ops.elementwise import where

        gx = where(keep, g, 0) if need[0] else None
    else:
        # (np.array, not g.copy(): a 0-d gradient summed by the engine is a NumPy scalar)
        gx = backend.get_array_module(g).array(g) if need[0] else None
        if gx is not None:
            gx[index] = 0
    gv = g[index] if need[1] else None
    return gx, gv


@primitive("index_put", grad=_index_put_rule, batch="index_put")
def index_put(x, index, value):
    """A copy of `x` with `x[index] = value` (the out-of-place form of setitem)."""
    d = _tensor_arg(x, "setitem")
    held = _held(index)
    index = _index_arg(index)
    _check_masks(index, d.shape)
    out = d.copy()
    v = data_of(value)
    if hasattr(v, "shape"):
        check_same_device("setitem", d, v)
    try:
        out[index] = v
    except ValueError:
        raise shape_error("setitem", out[index], v, detail="the value cannot be broadcast to "
                          "the indexed region") from None
    return record("index_put", _index_put_rule, out, (x, value), held,
                  (index, getattr(v, "shape", ())))


# --- joining --------------------------------------------------------------------------------
def _cat_rule(node, g):
    axis, sizes = node.params
    grads, start = [], 0
    lead = (slice(None),) * axis
    for n in sizes:
        grads.append(g[lead + (slice(start, start + n),)])
        start += n
    return tuple(grads)


def _tensors_arg(tensors, op):
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"kit.{op}: expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"kit.{op}: item {i} is a {type(t).__name__}, expected a Tensor")
    arrays = [t._data for t in tensors]
    check_same_device(op, *arrays)
    return tensors, arrays


@primitive("cat", grad=_cat_rule, batch="cat")
def cat(tensors, axis=0):
    """Join tensors along an existing axis (torch.cat / np.concatenate)."""
    tensors, arrays = _tensors_arg(tensors, "cat")
    axis = one_dim(axis, arrays[0].ndim, "cat")
    try:
        out = backend.get_array_module(arrays[0]).concatenate(arrays, axis=axis)
    except ValueError:
        detail = f"all sizes except axis {axis} must match"
        raise shape_error("cat", *arrays, detail=detail) from None
    sizes = tuple(a.shape[axis] for a in arrays)
    return record("cat", _cat_rule, out, tuple(tensors), (), (axis, sizes))


concatenate = cat


def _stack_rule(node, g):
    axis, count = node.params
    lead = (slice(None),) * axis
    return tuple(g[lead + (i,)] for i in range(count))


@primitive("stack", grad=_stack_rule, batch="stack")
def stack(tensors, axis=0):
    """Join tensors of the same shape along a new axis."""
    tensors, arrays = _tensors_arg(tensors, "stack")
    axis = one_dim(axis, arrays[0].ndim + 1, "stack")  # the new axis may be last
    try:
        out = backend.get_array_module(arrays[0]).stack(arrays, axis=axis)
    except ValueError:
        raise shape_error("stack", *arrays, detail="all tensors must have the same shape") from None
    return record("stack", _stack_rule, out, tuple(tensors), (), (axis, len(arrays)))


# --- dtype and device -----------------------------------------------------------------------
def _astype_rule(node, g):
    return (g,)  # NOTE: the engine casts the gradient back to the input's dtype


@primitive("astype", grad=_astype_rule, batch="elementwise", methods=("astype",),
           public=False)
def astype(x, dtype):
    from kit._tensor import SUPPORTED_DTYPES

    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"kit: unsupported dtype {dtype}")
    if x._data.dtype == dtype:
        return x
    if dtype.kind not in "fc":  # NOTE: a cast to an integer or bool is not recorded (PyTorch)
        return Tensor(x._data.astype(dtype))
    return record("astype", _astype_rule, x._data.astype(dtype), (x,))


@primitive("clone", grad=_astype_rule, batch="elementwise", methods=("clone",), torch="clone")
def clone(x):
    """A copy that stays in the graph (CloneBackward0, which keeps nothing, as PyTorch's)."""
    return record("clone", _astype_rule, _tensor_arg(x, "clone").copy(), (x,))


def _to_device_rule(node, g):
    source = node.params
    if isinstance(g, Tensor):
        return (to_device(g, source),)
    return (backend.to_device(g, source),)


@primitive("to", grad=_to_device_rule, batch="elementwise", public=False)
def to_device(x, device):
    """Copy to "cpu" or "gpu"; recorded, so the gradient is copied back."""
    device = backend.normalize_device(device)
    source = backend.device_of(x._data)
    if device == source:
        return x
    return record("to", _to_device_rule, backend.to_device(x._data, device), (x,), (), source)
