"""torch.nn.functional's margin and likelihood losses: soft margin, margin ranking, hinge
embedding, cosine embedding, triplet margin, Poisson and Gaussian NLL, multilabel soft margin and
multi margin. Composites of kit's primitives, term for term as PyTorch computes them (so their
hinges have PyTorch's gradient where the hinge is exactly 0), with PyTorch's errors for a bad
reduction or shape. Compared with PyTorch in tests/test_nn_more_api.py.

>>> import kit
>>> from kit.nn import functional as F
>>> F.margin_ranking_loss(kit.tensor([1.0, 2.0]), kit.tensor([2.0, 0.0]), kit.tensor([1.0, 1.0]))
tensor(0.5000)
"""

from __future__ import annotations

import math

import numpy as np

from kit._creation import arange
from kit._creation import full as full_
from kit.grad_mode import is_grad_enabled
from kit.nn.functional_more import _torch_name, logsigmoid, raising_backward
from kit.ops.composite import _reduce, floating_input
from kit.ops.elementwise import clamp, exp, log, log1p, minimum, sqrt, where
from kit.ops.movement import broadcast_shapes, getitem
from kit.ops.reductions import sum as sum_
from kit.ops.vectors import pairwise_distance

__all__ = ["cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss",
           "margin_ranking_loss", "multi_margin_loss", "multilabel_soft_margin_loss",
           "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def _checked(reduction, op, says="is not a valid value for reduction"):
    """`reduction`, refused as PyTorch refuses it (before any work, as its functions do)."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} {says} (kit.{op}, as in PyTorch). Fix: reduction='mean', "
                         f"'sum' or 'none'")
    return reduction


def soft_margin_loss(input, target, reduction="mean"):  # noqa: A002 - PyTorch's names
    """log(1 + exp(-target * input)), reduced."""
    _checked(reduction, "soft_margin_loss")
    shape = broadcast_shapes(input.shape, target.shape)
    if tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(shape)} (kit.soft_margin_loss, as in PyTorch). Fix: a "
                           f"target of the input's shape")
    if input.dtype.kind not in "fc":
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_torch_name(input.dtype)} (kit.soft_margin_loss, as in PyTorch). "
                           f"Fix: input.float()")
    _not_differentiable("soft_margin_loss", "target", target)
    boolean = target.dtype.kind == "b"
    if target.dtype != input.dtype:  # computed in the input's dtype, as PyTorch's kernel
        target = target.to(input.dtype)
    with np.errstate(over="ignore"):  # (as PyTorch's: exp may overflow to inf, silently, and
        loss = log1p(exp(-target * input))  # the loss with it)
    loss = _reduce(loss, reduction, "soft_margin_loss")
    if boolean and loss.requires_grad:  # PyTorch takes a bool target forward; its backward
        # negates it, which it refuses for bools
        loss = raising_backward(loss, "soft_margin_loss", "Negation, the `-` operator, on a "
                                "bool tensor is not supported (kit.soft_margin_loss, backward, "
                                "with a bool target, as in PyTorch). Fix: target.float()")
    return loss


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), reduced."""
    _checked(reduction, "margin_ranking_loss")
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {_size(input1)}, input2: {_size(input2)}, "
                           f"target: {_size(target)} (kit.margin_ranking_loss, as in PyTorch). "
                           f"Fix: reshape them to one rank")
    # (clamp's gradient is 1 at the bound, as PyTorch's clamp_min)
    return _reduce(clamp(-target * (input1 - input2) + margin, min=0), reduction,
                   "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, reduction="mean"):  # noqa: A002
    """input where target is 1, max(0, margin - input) where it is -1 (both terms for any other
    target, as PyTorch's), reduced."""
    _checked(reduction, "hinge_embedding_loss")
    beyond = where(target != 1, clamp(margin - input, min=0), 0)
    loss = beyond + where(target != -1, input, 0)
    if loss.dtype != input.dtype:  # in the input's dtype, as PyTorch's (integers: truncated)
        loss = loss.to(input.dtype)
    return _reduce(loss, reduction, "hinge_embedding_loss")


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1."""
    _checked(reduction, "cosine_embedding_loss")
    if target.ndim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported "
                           "(kit.cosine_embedding_loss, as in PyTorch)")
    if input1.ndim != target.ndim + 1 or input2.ndim != target.ndim + 1:
        raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input "
                           f"tensors, but found inputs with sizes {list(input1.shape)} and "
                           f"{list(input2.shape)}. (kit.cosine_embedding_loss, as in PyTorch). "
                           f"Fix: inputs (N, D) with a target (N,), or (D,) with a 0-d target")
    dim = target.ndim
    eps = 1e-12  # (PyTorch's, added to each squared norm)
    cos = sum_(input1 * input2, dim) / sqrt(
        (sum_(input1 * input1, dim) + eps) * (sum_(input2 * input2, dim) + eps))
    loss = where(target == 1, 1 - cos, 0) + where(target == -1, clamp(cos - margin, min=0), 0)
    return _reduce(loss, reduction, "cosine_embedding_loss")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the pairwise p-distance
    (with `swap`, the smaller of d(anchor, negative) and d(positive, negative))."""
    _checked(reduction, "triplet_margin_loss")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin} "
                         f"(kit.triplet_margin_loss, as in PyTorch)")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, positive "
                           f"{positive.ndim}D, and negative {negative.ndim}D inputs "
                           f"(kit.triplet_margin_loss, as in PyTorch)")
    to_positive = pairwise_distance(anchor, positive, p, eps)
    to_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        to_negative = minimum(to_negative, pairwise_distance(positive, negative, p, eps))
    return _reduce(clamp(margin + to_positive - to_negative, min=0), reduction,
                   "triplet_margin_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, eps=1e-8,  # noqa: A002
                     reduction="mean"):
    """exp(input) - target * input (log_input), or input - target * log(input + eps); with
    `full`, Stirling's approximation of log(target!) where target > 1."""
    _checked(reduction, "poisson_nll_loss")
    if log_input:
        loss = exp(input) - target * input
    else:
        loss = input - target * log(input + eps)
    if full:
        if target.dtype.kind == "b":  # (Stirling's term subtracts the target itself)
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                               "supported (kit.poisson_nll_loss with full=True, as in PyTorch). "
                               "Fix: target.float()")
        # (the discarded branch sees 1, not a target <= 1: its log sends no NaN gradient back)
        big = where(target <= 1, 1.0, target)
        stirling = big * log(big) - big + 0.5 * log(2 * math.pi * big)
        loss = loss + where(target <= 1, 0.0, stirling)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    """0.5 (log var + (input - target)^2 / var), var clamped below at eps (the clamp passes the
    gradient on, as PyTorch's clamp under no_grad does); var may be one value, one per sample
    (one dim short, or of size 1 in one dim) or one per element."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries (kit.gaussian_nll_loss, as in "
                             "PyTorch)")
        var = full_(tuple(input.shape), var, dtype=input.dtype, device=input.device)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries (kit.gaussian_nll_loss, as in PyTorch)")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                b for a, b in zip(input.shape, var.shape, strict=True) if a != b) == 1):
            raise ValueError(f"var is of incorrect size (kit.gaussian_nll_loss, as in PyTorch: "
                             f"{list(var.shape)} for an input {list(input.shape)}). Fix: the "
                             f"input's shape, or one dim short of it")
    _checked(reduction, "gaussian_nll_loss", "is not valid")
    if var.dtype.kind not in "fc":  # (PyTorch clamps var in place, in its own dtype)
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_torch_name(var.dtype)} (kit.gaussian_nll_loss, as in PyTorch). "
                           f"Fix: var.float()")
    # var - var.detach() is exactly 0 and carries var's gradient: the clamped value, exactly
    var = where(var.detach() < eps, var - var.detach() + eps, var)
    difference = input - target
    loss = 0.5 * (log(var) + difference * difference / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):  # noqa: A002
    """The mean over classes (the last dim) of the binary cross-entropy of sigmoid(input)."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = sum_(loss, -1) / input.shape[-1]
    _checked(reduction, "multilabel_soft_margin_loss", "is not valid")
    return _reduce(loss, reduction, "multilabel_soft_margin_loss")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None,  # noqa: A002
                      reduction="mean"):
    """For each sample, the mean over classes j other than its target y of
    max(0, margin - input[y] + input[j])^p (p 1 or 2), times weight[y]."""
    _checked(reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported (kit.multi_margin_loss, as in "
                         "PyTorch)")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional (kit.multi_margin_loss, as in PyTorch)")
    _not_differentiable("multi_margin_loss", "weight", weight)
    if input.ndim not in (1, 2) or target.ndim > 1:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)} (kit.multi_margin_loss, as in PyTorch)")
    rows = input.reshape(-1, input.shape[-1])
    n, classes = rows.shape
    if target.numel() != n:
        raise RuntimeError(f"inconsistent target size, expected {n} but got "
                           f"{list(target.shape)} (kit.multi_margin_loss, as in PyTorch)")
    if target.dtype.kind != "i" or target.dtype.itemsize != 8:
        raise RuntimeError(f"expected scalar type Long but found {_torch_name(target.dtype)} "
                           f"(kit.multi_margin_loss, as in PyTorch). Fix: target.long()")
    floating_input("multi_margin_loss_cpu_kernel", "multi_margin_loss", input)
    labels = target.reshape(n)
    if bool(((labels < 0) | (labels >= classes)).any()):
        raise RuntimeError("target out of range (kit.multi_margin_loss, as in PyTorch)")
    picked = getitem(rows, (arange(n, device=input.device), labels))
    hinge = margin - picked.unsqueeze(1) + rows
    other = labels.unsqueeze(1) != arange(classes, device=input.device)
    # where, not clamp: PyTorch's gradient is 0 where a hinge is exactly 0
    hinge = where(other & (hinge > 0), hinge, 0)
    terms = hinge if p == 1 else hinge * hinge
    if weight is not None:
        terms = terms * getitem(weight, labels).unsqueeze(1)
    loss = sum_(terms, 1) / classes
    return _reduce(loss.reshape(target.shape), reduction, "multi_margin_loss")


def _not_differentiable(op, name, t):
    """PyTorch's refusal of a gradient its kernel does not compute (kit's composite would)."""
    if t is not None and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{op}' is not differentiable with respect to argument "
                           f"'{name}'. This input cannot have requires_grad True. (kit.{op}, as "
                           f"in PyTorch). Fix: pass {name}.detach()")


def _size(t):
    return f"torch.Size({list(t.shape)})"
