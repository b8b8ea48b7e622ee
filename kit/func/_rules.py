"""Batching rules: elementwise, reductions, matmul, sorting, cross_entropy.

Each rule is registered under a name with `@batch_rule(name)`; an op's declaration (kit/ops/*.py)
names its rule (`batch="broadcasting"`), and the vmap rule table is filled from the registry at
the end of this module. A declaration naming a rule that does not exist fails at import.

A rule receives the primitive `fn` and the call's arguments, some of them BatchedTensors, and calls
`fn` once on physical values whose batch dimensions sit in front (see _batched.py). Per-sample
axes are shifted past the batch dimensions; broadcasting operands get their batch dimensions
aligned and their per-sample shapes padded on the left, which is what NumPy broadcasting of the
per-sample shapes would do.
"""

from __future__ import annotations

import numpy as np

from kit._tensor import Tensor
from kit.func._batched import (
    RULES,
    BatchedTensor,
    expand_levels,
    levels_of,
    make,
    physical,
    sizes_of,
)
from kit.ops import movement
from kit.ops._registry import OPS
from kit.ops.reductions import MaxMin, normalize_axis, one_dim
from kit.ops.sorting import SortResult

BATCHING = {}  # rule name (what a declaration's batch= says) -> rule(fn, *args, **kwargs)


def batch_rule(name):
    """Register a batching rule under `name`."""

    def register(fn):
        BATCHING[name] = fn
        return fn

    return register


def union_levels(*args):
    levels = set()
    for a in args:
        if type(a) is BatchedTensor:
            levels.update(a.levels)
    return tuple(sorted(levels))


def union_sizes(*args):
    sizes = {}
    for a in args:
        sizes.update(sizes_of(a))
    return sizes


def _logical_ndim(a):
    if isinstance(a, Tensor):
        return a.ndim
    return np.ndim(a) if isinstance(a, (list, tuple, np.ndarray)) else getattr(a, "ndim", 0)


def align(*args):
    """(levels, physical operands) for a broadcasting op over the union of levels."""
    levels = union_levels(*args)
    nd = max(_logical_ndim(a) for a in args)
    out = []
    for a in args:
        if type(a) is not BatchedTensor:
            out.append(a)  # unbatched operands broadcast from the right as they are
            continue
        value, have = a.value, a.levels
        pad = nd - a.ndim
        if have == levels and pad == 0:
            out.append(value)
            continue
        batch = [value.shape[have.index(lv)] if lv in have else 1 for lv in levels]
        out.append(movement.reshape(value, tuple(batch) + (1,) * pad + tuple(a.shape)))
    return levels, out


def batch_shape(x):
    return tuple(x.value.shape[: len(x.levels)])


# --- elementwise ----------------------------------------------------------------------------
@batch_rule("broadcasting")
def _broadcasting(fn, *args):
    levels, values = align(*args)
    return make(fn(*values), levels)


@batch_rule("elementwise")
def _unary(fn, x, *params):
    return BatchedTensor(fn(x.value, *params), x.levels)


# --- reductions -----------------------------------------------------------------------------
def _axes(x, axis, op):
    k = len(x.levels)
    return tuple(a + k for a in normalize_axis(axis, x.ndim, op))


@batch_rule("reduce")
def _reduce(fn, x, axis=None, keepdims=False):
    return BatchedTensor(fn(x.value, _axes(x, axis, fn.__name__), keepdims), x.levels)


@batch_rule("product")
def _product(fn, x, axis, keepdims):
    if axis is None:  # per sample, every element
        return BatchedTensor(fn(_flat(x), len(x.levels), False), x.levels)
    return BatchedTensor(fn(x.value, _axes(x, axis, "prod")[0], keepdims), x.levels)


@batch_rule("variance")
def _variance(fn, x, axes, keepdims, correction, whole):
    # NOTE: per sample, the axes given (every axis of the sample when var had no dim); "whole"
    # keeps the unbatched gradient's case at no degrees of freedom
    return BatchedTensor(fn(x.value, _axes(x, axes, "var"), keepdims, correction, whole),
                         x.levels)


def _flat(x):
    """Physical value with the per-sample dims flattened into one trailing dim."""
    return movement.reshape(x.value, batch_shape(x) + (-1,))


@batch_rule("extreme")
def _extreme(fn, x, axis=None, keepdims=False):
    k = len(x.levels)
    if axis is None:
        # NOTE: per sample, the maximum over all elements; at ties the gradient goes to one
        # element (the first), where kit's unbatched max shares it among the ties.
        return BatchedTensor(fn(_flat(x), k).values, x.levels)
    axes = _axes(x, axis, fn.__name__)
    if len(axes) != 1:
        raise ValueError(f"kit.{fn.__name__}: with indices, reduce over one axis at a time")
    values, indices = fn(x.value, axes[0], keepdims)
    return MaxMin(BatchedTensor(values, x.levels), BatchedTensor(indices, x.levels))


@batch_rule("arg_extreme")
def _arg_extreme(fn, x, axis=None, keepdims=False):
    if axis is None:
        out = fn(_flat(x), len(x.levels))
        if keepdims:  # PyTorch: argmax(keepdim=True) without a dim keeps every dim, as size 1
            out = movement.reshape(out, batch_shape(x) + (1,) * x.ndim)
        return BatchedTensor(out, x.levels)
    return BatchedTensor(fn(x.value, _axes(x, axis, fn.__name__)[0], keepdims), x.levels)


@batch_rule("softmax")
def _softmax(fn, x, dim=-1):
    """softmax or log_softmax along one dim of each sample (a 0-d sample: a dim of size 1)."""
    if x.ndim == 0:
        normalize_axis(dim, 0, fn.__name__)
        one = movement.unsqueeze(x.value, -1)
        return BatchedTensor(movement.squeeze(fn(one, -1), -1), x.levels)
    return BatchedTensor(fn(x.value, _axes(x, dim, fn.__name__)[0]), x.levels)


# --- sorting --------------------------------------------------------------------------------
def _sort_axis(x, axis):
    if x.ndim == 0:
        return None
    return one_dim(axis, x.ndim, "sort") + len(x.levels)


@batch_rule("cumsum")
def _cumsum(fn, x, dim, dtype=None):
    """cumsum along one dim of each sample, as softmax's rule does it."""

    def along(value, axis):
        return fn(value, axis, dtype)

    along.__name__ = "cumsum"
    return _softmax(along, x, dim)


@batch_rule("sort")
def _sort(fn, x, axis=-1, descending=False):
    physical_axis = _sort_axis(x, axis)
    if physical_axis is None:  # a 0-d sample is already sorted
        return SortResult(x.clone(), BatchedTensor(movement.reshape(
            movement.astype(x.value * 0, np.int64), batch_shape(x)), x.levels))
    values, indices = fn(x.value, physical_axis, descending)
    return SortResult(BatchedTensor(values, x.levels), BatchedTensor(indices, x.levels))


@batch_rule("argsort")
def _argsort(fn, x, axis=-1, descending=False):
    physical_axis = _sort_axis(x, axis)
    if physical_axis is None:
        return BatchedTensor(movement.astype(x.value * 0, np.int64), x.levels)
    return BatchedTensor(fn(x.value, physical_axis, descending), x.levels)


@batch_rule("index_add")
def _index_add(fn, x, dim, index, source, alpha=1):
    if type(index) is BatchedTensor:
        raise NotImplementedError(
            "vmap: kit.index_add with a batched index is not supported. Fix: pass the same "
            "index for every sample (in_dims=None for it), or use indexing and addition"
        )
    levels = union_levels(x, source)
    sizes = union_sizes(x, source)
    nd = x.ndim
    x = expand_levels(x, levels, sizes)
    source = expand_levels(source, levels, sizes)
    axis = one_dim(dim, nd, "index_add") + len(levels)
    return BatchedTensor(fn(x.value, axis, index, source.value, alpha), levels)


# --- linear algebra -------------------------------------------------------------------------
@batch_rule("matmul")
def _matmul(fn, a, b):
    a_nd, b_nd = _logical_ndim(a), _logical_ndim(b)
    if a_nd == 0 or b_nd == 0:
        raise ValueError("kit.matmul: both arguments need at least 1 dimension, got a 0-d tensor")
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("kit.matmul: both operands must be tensors under vmap")
    # Fast paths: a batch of vectors times one matrix is a single matrix product.
    if type(b) is not BatchedTensor and a_nd == 1 and b_nd == 2:
        return BatchedTensor(fn(a.value, b), a.levels)
    if type(a) is not BatchedTensor and a_nd == 2 and b_nd == 1:
        return BatchedTensor(fn(b.value, movement.transpose(a, 0, 1)), b.levels)
    # General case: make both operands at least matrices, pad per-sample batch dims, multiply,
    # then drop the dims that 1-D operands were given.
    if a_nd == 1:
        a = _unsqueeze(a, -2)
    if b_nd == 1:
        b = _unsqueeze(b, -1)
    levels, (x, y) = align(a, b)
    out = fn(x, y)
    if a_nd == 1 and b_nd == 1:
        out = movement.reshape(out, out.shape[:-2])
    elif a_nd == 1:
        out = movement.reshape(out, out.shape[:-2] + out.shape[-1:])
    elif b_nd == 1:
        out = movement.reshape(out, out.shape[:-1])
    return make(out, levels)


def _unsqueeze(t, dim):
    """Per-sample unsqueeze of a plain or batched tensor (used before alignment)."""
    value = physical(t)
    k = len(levels_of(t))
    position = dim % (value.ndim - k + 1) + k
    shape = value.shape[:position] + (1,) + value.shape[position:]
    return make(movement.reshape(value, shape), levels_of(t))


# --- losses that inspect their targets ------------------------------------------------------
@batch_rule("cross_entropy")
def _cross_entropy(fn, logits, target, reduction="mean"):
    if logits.ndim != 2:
        raise ValueError(
            f"kit.cross_entropy: expected logits of shape (N, C), got {tuple(logits.shape)}"
        )
    if not isinstance(target, Tensor):
        target = Tensor(np.asarray(target))
    levels = union_levels(logits, target)
    sizes = union_sizes(logits, target)
    lg = expand_levels(logits, levels, sizes).value
    tg = expand_levels(target, levels, sizes).value
    batch = tuple(lg.shape[: len(levels)])
    n, c = lg.shape[-2:]
    flat_target = movement.reshape(tg, (-1,) + tuple(tg.shape[len(levels) + 1:]))
    loss = fn(movement.reshape(lg, (-1, c)), flat_target, "none")
    loss = movement.reshape(loss, batch + (n,))
    if reduction == "mean":
        loss = loss.mean(axis=-1)
    elif reduction == "sum":
        loss = loss.sum(axis=-1)
    elif reduction != "none":
        raise ValueError(
            f"kit.cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
        )
    return BatchedTensor(loss, levels)


# --- the vmap rule table, from the registry -------------------------------------------------
from kit.func import _rules_more, _rules_movement, _rules_nn  # noqa: E402, F401 - their rules


def _table():
    missing = {op.name: op.batch for op in OPS.values() if op.batch and op.batch not in BATCHING}
    if missing:
        raise LookupError(f"kit.func: these ops name batching rules that do not exist: {missing}")
    return {op.name: BATCHING[op.batch] for op in OPS.values() if op.batch}


RULES.update(_table())
