"""Batching rules for movement: shapes, axes, indexing, cat/stack.

Shape arguments are per sample; the rules prepend the batch shape. Indexing prefixes one full
slice per batch dimension, so NumPy's rules apply to the per-sample part unchanged; an index that
is itself batched (a different index per sample) becomes an advanced index with one `arange` per
batch dimension in front.
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.func._batched import BatchedTensor, batching, expand_levels, physical
from kit.func._rules import align, batch_rule, batch_shape, union_levels, union_sizes
from kit.ops import elementwise
from kit.ops.movement import expand_shape, shape_arg
from kit.ops.reductions import normalize_axis, one_dim


def _axis(x, dim, op):
    return one_dim(dim, x.ndim, op) + len(x.levels)


# --- shape ----------------------------------------------------------------------------------
@batch_rule("reshape")
def _reshape(fn, x, *shape):
    return BatchedTensor(fn(x.value, batch_shape(x) + shape_arg(shape, "reshape")), x.levels)


@batch_rule("permute")
def _permute(fn, x, *axes):
    axes = shape_arg(axes, "permute")
    nd = x.ndim
    if sorted(a % max(nd, 1) for a in axes) != list(range(nd)):
        raise ValueError(
            f"kit.permute: {list(axes)} is not a permutation of the {nd} axes of a tensor of "
            f"shape {list(x.shape)}"
        )
    k = len(x.levels)
    order = tuple(range(k)) + tuple(a % nd + k for a in axes)
    return BatchedTensor(fn(x.value, order), x.levels)


@batch_rule("transpose")
def _transpose(fn, x, dim0=-2, dim1=-1):
    if x.ndim < 2 and dim0 in (-2, -1) and dim1 in (-2, -1):
        return x
    return BatchedTensor(
        fn(x.value, _axis(x, dim0, "transpose"), _axis(x, dim1, "transpose")), x.levels
    )


@batch_rule("diagonal")
def _diagonal(fn, x, offset=0, dim1=0, dim2=1):
    # the batch dims come first in the value, and diagonal keeps the other dims in order
    return BatchedTensor(
        fn(x.value, offset, _axis(x, dim1, "diagonal"), _axis(x, dim2, "diagonal")), x.levels
    )


@batch_rule("unsqueeze")
def _unsqueeze(fn, x, dim):
    nd = x.ndim
    if not -(nd + 1) <= dim <= nd:
        raise IndexError(
            f"kit.unsqueeze: dimension {dim} is out of range for a tensor with {nd} dimensions "
            f"(expected to be in range [{-(nd + 1)}, {nd}])"
        )
    return BatchedTensor(fn(x.value, dim % (nd + 1) + len(x.levels)), x.levels)


@batch_rule("squeeze")
def _squeeze(fn, x, dim=None):
    shape = x.shape
    if dim is None:
        new = tuple(n for n in shape if n != 1)
    else:
        axes = normalize_axis(dim, x.ndim, "squeeze")
        new = tuple(n for i, n in enumerate(shape) if not (i in axes and n == 1))
    return BatchedTensor(x.value.reshape(batch_shape(x) + new), x.levels)


@batch_rule("flatten")
def _flatten(fn, x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return BatchedTensor(x.value.reshape(batch_shape(x) + (1,)), x.levels)
    k = len(x.levels)
    start, end = start_dim % x.ndim + k, end_dim % x.ndim + k
    return BatchedTensor(fn(x.value, start, end), x.levels)


@batch_rule("expand")
def _expand(fn, x, *shape):
    lead, sizes = expand_shape(shape_arg(shape, "expand"), tuple(x.shape))
    batch = batch_shape(x)
    padded = x.value.reshape(batch + (1,) * lead + tuple(x.shape))
    return BatchedTensor(fn(padded, batch + sizes), x.levels)


# --- indexing -------------------------------------------------------------------------------
def _items(index):
    return index if isinstance(index, tuple) else (index,)


def _is_advanced(item):
    return isinstance(item, (Tensor, list)) or hasattr(item, "shape")


def _prefixed(items, k, op):
    """The physical index: one full slice per batch dim, then the per-sample index."""
    advanced = [i for i, item in enumerate(items) if _is_advanced(item)]
    if advanced and advanced[-1] - advanced[0] + 1 != len(advanced):
        # NumPy moves the result of separated advanced indices to the front, in front of the
        # batch dims; keeping them adjacent keeps the batch dims where they are.
        raise NotImplementedError(
            f"vmap: kit.{op} with advanced indices separated by a slice is not supported. Fix: "
            f"index in two steps, or move the indexed axes next to each other first"
        )
    return (slice(None),) * k + tuple(items)


@batch_rule("getitem")
def _getitem(fn, x, index):
    items = _items(index)
    if any(type(item) is BatchedTensor for item in items):
        return _gather(fn, x, items)
    return BatchedTensor(fn(x.value, _prefixed(items, len(x.levels), "getitem")), x.levels)


def _gather(fn, x, items):
    """x[index] where the index differs per sample: arange grids select each sample's row."""
    lead = 0
    while lead < len(items) and _is_advanced(items[lead]):
        lead += 1
    if any(not (item == slice(None) or item is Ellipsis) for item in items[lead:]) or any(
        type(item) is BatchedTensor and item.dtype.kind == "b" for item in items
    ):
        raise NotImplementedError(
            "vmap: indexing with a batched index is supported for integer index tensors that "
            "come first (x[idx] or x[idx, :]); a batched boolean mask would give each sample a "
            "different shape. Fix: use kit.where(mask, x, 0), or kit.sort / take the indices "
            "outside vmap"
        )
    levels = union_levels(x, *items)
    sizes = union_sizes(x, *items)
    value = expand_levels(x, levels, sizes).value if levels else x.value
    k = len(levels)
    _, indices = align(*[i if isinstance(i, Tensor) else Tensor(np.asarray(i))
                         for i in items[:lead]])
    nd = max(i.ndim for i in indices) - k if indices else 0
    xp = backend.get_array_module(value._data)
    grids = []
    for j, lv in enumerate(levels):
        shape = [1] * (k + nd)
        shape[j] = sizes[lv]
        grids.append(xp.arange(sizes[lv]).reshape(shape))
    return BatchedTensor(fn(value, tuple(grids) + tuple(indices) + items[lead:]), levels)


@batch_rule("index_put_add")
def _index_put_add(fn, src, index, shape):
    k = len(src.levels)
    return BatchedTensor(
        fn(src.value, _prefixed(_items(index), k, "index_put_add"), batch_shape(src) + shape),
        src.levels,
    )


def _region_ndim(shape, items):
    """How many dims `x[index]` has for a per-sample x of `shape` (computed on a stride-0 view)."""
    def on_cpu(item):
        if isinstance(item, Tensor):
            item = physical(item)._data
        return backend.to_device(item, "cpu")

    index = tuple(on_cpu(i) for i in items)
    return np.broadcast_to(np.zeros((), np.int8), shape)[index].ndim


@batch_rule("index_put")
def _index_put(fn, x, index, value):
    items = _items(index)
    if len(items) == 1 and type(items[0]) is BatchedTensor:
        mask = items[0]
        full_mask = mask.dtype.kind == "b" and tuple(mask.shape) == tuple(x.shape)
        if full_mask and _logical_ndim_0(value):
            return _call_batched(elementwise.where, mask, value, x)
    if any(type(item) is BatchedTensor for item in items):
        raise NotImplementedError(
            "vmap: assignment through a batched index is supported for a boolean mask of the "
            "tensor's shape with a scalar value (x[mask] = 0). Fix: use kit.where(mask, v, x)"
        )
    levels = union_levels(x, value)
    sizes = union_sizes(x, value)
    target = expand_levels(x, levels, sizes).value
    k = len(levels)
    if type(value) is BatchedTensor:
        region = _region_ndim(x.shape, items)
        batch = [value.value.shape[value.levels.index(lv)] if lv in value.levels else 1
                 for lv in levels]
        pad = max(region - value.ndim, 0)
        value = value.value.reshape(tuple(batch) + (1,) * pad + tuple(value.shape))
    return BatchedTensor(fn(target, _prefixed(items, k, "setitem"), value), levels)


def _logical_ndim_0(value):
    return not isinstance(value, Tensor) or value.ndim == 0


def _call_batched(fn, *args):
    with batching():
        return fn(*args)


# --- joining --------------------------------------------------------------------------------
def _joined(tensors):
    tensors = list(tensors)
    levels = union_levels(*tensors)
    sizes = union_sizes(*tensors)
    values = [expand_levels(t, levels, sizes).value for t in tensors]
    return tensors[0].ndim, levels, values


@batch_rule("cat")
def _cat(fn, tensors, axis=0):
    nd, levels, values = _joined(tensors)
    return BatchedTensor(fn(values, one_dim(axis, nd, "cat") + len(levels)), levels)


@batch_rule("stack")
def _stack(fn, tensors, axis=0):
    nd, levels, values = _joined(tensors)
    return BatchedTensor(fn(values, axis % (nd + 1) + len(levels)), levels)
