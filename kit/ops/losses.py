"""Cross-entropy with class-index targets: the one fused primitive among the losses.

Stated reason (DESIGN.md allows a fused primitive for stability or speed): spelt with primitives,
`-log_softmax(x)[range(N), t].mean()` records five nodes (logsumexp, sub, getitem, neg, mean)
and scatters its gradient through a zero matrix; fused, it is one node whose gradient is the
textbook `(softmax(x) - onehot(t)) * g / N`, computed from the probabilities forward already
made. The log-sum-exp is taken with the row maximum subtracted, so large logits cannot overflow.
tests/test_ops_losses.py checks it against the composite spelling, finite differences and
PyTorch, to first and second order.
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._record import data_of, record


def _fused_ce_rule(node, g, x, probs, held):
    target, reduction = node.params
    if isinstance(x, Tensor):  # create_graph: rebuild the probabilities differentiably
        from kit.ops.composite import softmax

        probs = softmax(x, 1)
    d = data_of(x)
    xp = backend.get_array_module(d)
    n = d.shape[0]
    if reduction == "none":
        weight = g.reshape((n, 1))
    else:
        weight = g / n if reduction == "mean" else g
    if isinstance(probs, Tensor) or getattr(weight, "dtype", None) != probs.dtype:
        onehot = xp.zeros(d.shape, dtype=d.dtype)
        onehot[xp.arange(n), target] = 1
        return ((probs - onehot) * weight,)
    # NOTE: (probs - onehot) * weight without the one-hot matrix, the same bits: subtracting 0
    # changes nothing, and each row has one target
    grad = probs.copy()
    grad[xp.arange(n), target] -= 1
    grad *= weight
    return (grad,)


def check_classes(target, classes):
    """Class indices must lie in 0..classes-1 (an IndexError, as in PyTorch)."""
    if not target.size:
        return
    low, high = int(target.min()), int(target.max())
    if low < 0 or high >= classes:
        raise IndexError(
            f"kit.cross_entropy: target holds class {low if low < 0 else high} but logits have "
            f"{classes} classes (valid: 0..{classes - 1})"
        )


def _loss_and_probabilities(d, target, reduction):
    n = d.shape[0]
    if type(d) is np.ndarray and type(target) is np.ndarray and n and (
            d.dtype == np.float32 or d.dtype == np.float64):
        # NOTE: NumPy's own reductions, without the Python wrappers of ndarray.max, .sum and
        # .mean (a few microseconds of a small step): the same ufunc reductions, and for the
        # mean what NumPy computes for these dtypes, a sum and one division in the dtype. The
        # classes are checked by NumPy's indexing, which refuses one past the end; a negative
        # class, which it would count from the end, is looked for first.
        if target.dtype.kind == "i" and np.minimum.reduce(target) < 0:
            check_classes(target, d.shape[1])
        shifted = d - np.maximum.reduce(d, axis=1, keepdims=True)
        exp = np.exp(shifted)
        total = np.add.reduce(exp, axis=1, keepdims=True)
        try:
            picked = shifted[np.arange(n), target]
        except IndexError:
            check_classes(target, d.shape[1])
            raise
        losses = np.log(total[:, 0]) - picked
        if reduction == "none":
            return losses, exp / total
        summed = np.add.reduce(losses)
        return summed.dtype.type(summed / n) if reduction == "mean" else summed, exp / total
    check_classes(target, d.shape[1])
    xp = backend.get_array_module(d)
    shifted = d - d.max(axis=1, keepdims=True)
    exp = xp.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    losses = xp.log(total[:, 0]) - shifted[xp.arange(n), target]
    if reduction == "mean":
        out = losses.mean() if n else xp.asarray(xp.nan, dtype=d.dtype)
    elif reduction == "sum":
        out = losses.sum()
    else:
        out = losses
    return out, exp / total


def fused_cross_entropy(logits, target, reduction):
    """Cross-entropy of logits (N, C) against class indices (N,), as one node (see above).

    NOTE: a target Tensor is kept as itself, as PyTorch's NllLossBackward0 keeps the target: the
    array in params shares its memory, so changing it in place before backward is an error."""
    held, target = target, data_of(target)
    out, probabilities = _loss_and_probabilities(logits._data, target, reduction)
    return record(
        "cross_entropy", _fused_ce_rule, out, (logits,), (logits, probabilities, held),
        (target, reduction)
    )


def cross_entropy_array(xp, logits, target, reduction="mean"):
    """The fused cross-entropy on arrays, as kit.compile replays it (the registry's array
    form): (loss, (probabilities,)), the probabilities being what its node keeps."""
    if target.dtype.kind not in "iu":
        raise TypeError("kit.cross_entropy: an array form for class-index targets only")
    out, probabilities = _loss_and_probabilities(logits, target, reduction)
    return out, (probabilities,)
