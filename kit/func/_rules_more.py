"""Batching rules for the ops real programs need (issue 12): the ops whose result shape depends
on the data, the pieces of unbind/split, and linear algebra over the last two dims."""

from __future__ import annotations

from kit.func import _rules
from kit.func._batched import BatchedTensor, make
from kit.func._rules import align, batch_rule
from kit.ops import movement
from kit.ops.reductions import normalize_axis


@batch_rule("data_dependent")
def _data_dependent(fn, x, *args):
    raise NotImplementedError(
        f"vmap: kit.{fn.__name__} gives a result whose shape depends on the data, so the samples "
        f"of a batch would have results of different shapes (PyTorch's vmap refuses it too). "
        f"Fix: call {fn.__name__} outside vmap, or use a fixed-shape alternative (kit.where, a "
        f"mask, topk)"
    )


# --- the pieces of unbind and split -----------------------------------------------------------
def _physical_dim(x, dim, op):
    axes = normalize_axis(dim, x.ndim, op)
    return (axes[0] if axes else 0) + len(x.levels)


@batch_rule("unbind")
def _unbind(fn, x, dim=0):
    return tuple(BatchedTensor(p, x.levels) for p in fn(x.value, _physical_dim(x, dim, "unbind")))


@batch_rule("split")
def _split(fn, x, split_size_or_sections, dim=0):
    pieces = fn(x.value, split_size_or_sections, _physical_dim(x, dim, "split"))
    return tuple(BatchedTensor(p, x.levels) for p in pieces)


# --- linear algebra over the last two dims ----------------------------------------------------
@batch_rule("matrix")
def _matrix(fn, x, *args):
    """det, inv, eigh...: the batch dims sit in front, where the op batches anyway."""
    out = fn(x.value, *args)
    if isinstance(out, tuple):
        return type(out)(*(BatchedTensor(o, x.levels) for o in out))
    return BatchedTensor(out, x.levels)


@batch_rule("solve")
def _solve(fn, a, b):
    # a vector B (per sample) becomes a column, so that aligning the batch dims cannot make a
    # batch of vectors look like a matrix
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    if vector:
        b = _rules._unsqueeze(b, -1)
    levels, (x, y) = align(a, b)
    out = fn(x, y)
    return make(movement.squeeze(out, -1) if vector else out, levels)
