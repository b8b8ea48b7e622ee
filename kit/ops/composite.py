"""Composites: built from primitives, so they own no gradient code.

The exceptions, with their reasons: relu, softmax and log_softmax are primitives (as in
PyTorch: one node each, whose gradient is differentiable, and PyTorch's NaN and inf results),
and cross-entropy against class indices (kit/ops/losses.py).
"""

from __future__ import annotations

import warnings

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.engine import OUTPUT
from kit.ops._record import record
from kit.ops._registry import composite, primitive, with_dim
from kit.ops.elementwise import _select, exp_, sign, where, where_
from kit.ops.losses import (
    _fused_ce_rule,
    cross_entropy_array,
    fused_cross_entropy,
)
from kit.ops.movement import broadcast_shapes
from kit.ops.reductions import mean, normalize_axis
from kit.ops.reductions import sum as sum_


def _relu_rule(node, g, y):
    # NOTE: y is the output, as PyTorch's ReluBackward0 keeps it (so an in-place change of the
    # output is an error there and here, of the input not). y <= 0 exactly where x <= 0 (-0.0
    # and NaN come through unchanged), so the gradient is 0 at exactly 0 and a NaN passes it on,
    # as in PyTorch. With create_graph a recorded op with a zero derivative (0 * sign(y)) is
    # added, so that, as PyTorch's, the gradient requires grad and its own derivative is 0.
    if isinstance(y, Tensor):
        return (where(y <= 0, 0, g) + 0 * sign(y),)
    return (where_(y <= 0, 0, g),)


def _rectified(xp, x):
    # NOTE: x < 0 -> 0, else x: -0.0 and NaN come through, as PyTorch's relu (not where(x > 0)).
    return _select(xp, x < 0, 0, x)


@primitive("relu", grad=_relu_rule, saves="output", batch="elementwise", methods=("relu",),
           inplace=("relu_",), torch="relu", mx="relu", expr=_rectified)
def relu(x):
    """max(x, 0), a primitive: PyTorch's relu is one op (ReluBackward0) whose gradient is
    differentiable in x; as a composite of where it would be neither."""
    d = x._data
    if d.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu (kit.relu, as in PyTorch)")
    return record("relu", _relu_rule, _rectified(backend.get_array_module(d), d), (x,),
                  (OUTPUT,))


def _softmax_rule(node, g, y):
    axes = node.params
    return (y * (g - (g * y).sum(axis=axes, keepdims=True)),)


def _log_softmax_rule(node, g, y):
    axes = node.params
    return (g - exp_(y) * g.sum(axis=axes, keepdims=True),)


def _shifted(x, dim, op):
    """(x - max along dim, the axes): PyTorch's first step of softmax and log_softmax."""
    if not isinstance(dim, (int, np.integer)):
        raise TypeError(f"kit.{op}: dim must be one int, got {dim!r}")
    d = x._data
    axes = normalize_axis(dim, d.ndim, op)
    if not d.size:  # nothing to normalise: an empty result of any dtype, as in PyTorch
        return d, axes
    _float_only(x, op)
    return d - d.max(axis=axes, keepdims=True), axes


@primitive("softmax", grad=_softmax_rule, saves="output", batch="softmax",
           methods=(("softmax", with_dim),))
def softmax(x, dim=-1):
    """exp(x) normalised along `dim`, as PyTorch computes it: exp(x - max) / sum, so it never
    overflows, and a slice holding +inf is NaN throughout (inf - inf), as in PyTorch."""
    e, axes = _shifted(x, dim, "softmax")
    if e.size:
        e = backend.get_array_module(e).exp(e)
        e = e / e.sum(axis=axes, keepdims=True)
    return record("softmax", _softmax_rule, e.copy() if e is x._data else e, (x,), (OUTPUT,),
                  axes)


@primitive("log_softmax", grad=_log_softmax_rule, saves="output", batch="softmax",
           methods=(("log_softmax", with_dim),))
def log_softmax(x, dim=-1):
    """log(softmax(x)) as x - max - log(sum(exp(x - max))), without the rounding of taking a log
    of a small probability."""
    out, axes = _shifted(x, dim, "log_softmax")
    if out.size:
        xp = backend.get_array_module(out)
        with np.errstate(divide="ignore"):  # a slice of -inf: log 0, NaN after, as in PyTorch
            out = out - xp.log(xp.exp(out).sum(axis=axes, keepdims=True))
    return record("log_softmax", _log_softmax_rule, out.copy() if out is x._data else out, (x,),
                  (OUTPUT,), axes)


def _float_only(x, op):
    if x.dtype.kind not in "fc":
        raise NotImplementedError(
            f"kit.{op} is not implemented for {x.dtype} tensors (as in PyTorch). Fix: "
            f"x.float().{op}(dim)"
        )


def _check_reduction(reduction, op):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(
            f"kit.{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
        )


# PyTorch's names of the integer and bool dtypes in "not implemented for 'Long'" errors
_TORCH_DTYPE_NAMES = {"uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                      "int64": "Long", "bool": "Bool"}


def floating_input(kernel, op, x):
    """PyTorch's NotImplementedError for a float-only kernel given integers or bools (kit would
    otherwise compute in float and silently return what PyTorch refuses)."""
    if isinstance(x, Tensor) and x.dtype.kind not in "fc":
        name = _TORCH_DTYPE_NAMES.get(str(x.dtype), str(x.dtype))
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}' (kit.{op}, as in "
                                  f"PyTorch). Fix: convert first, e.g. x.float()")


def _reduce(loss, reduction, op):
    _check_reduction(reduction, op)
    if reduction == "mean":
        return mean(loss)
    return sum_(loss) if reduction == "sum" else loss


@primitive("cross_entropy", grad=_fused_ce_rule, saves="logits, probabilities, target",
           batch="cross_entropy", array=cross_entropy_array)
def cross_entropy(logits, target, reduction="mean"):
    """Cross-entropy of `logits` (N, C) against class indices (N,) or probabilities (N, C)."""
    if logits.ndim != 2:
        raise ValueError(
            f"kit.cross_entropy: expected logits of shape (N, C), got {tuple(logits.shape)}"
        )
    t = target._data if isinstance(target, Tensor) else target
    if t.dtype.kind in "iu":
        n = logits.shape[0]
        if t.shape != (n,):
            raise ValueError(
                f"kit.cross_entropy: class-index target must have shape ({n},), got {t.shape}"
            )
        _check_reduction(reduction, "cross_entropy")
        return fused_cross_entropy(logits, target, reduction)  # (it checks the classes)
    if tuple(t.shape) != tuple(logits.shape):
        raise ValueError(
            f"kit.cross_entropy: probability target must have the logits' shape "
            f"{tuple(logits.shape)}, got {tuple(t.shape)}"
        )
    logp = log_softmax(logits, dim=1)
    return _reduce(-sum_(logp * target, axis=1), reduction, "cross_entropy")


@composite("mse_loss")
def mse_loss(input, target, reduction="mean"):  # noqa: A002 - PyTorch's keyword
    """Mean squared error. As PyTorch: a target of another shape is broadcast, with PyTorch's
    warning (a bug, almost always), and integer inputs are refused."""
    if tuple(input.shape) != tuple(getattr(target, "shape", input.shape)):
        warnings.warn(
            f"Using a target size (torch.Size({list(target.shape)})) that is different to the "
            f"input size (torch.Size({list(input.shape)})). This will likely lead to incorrect "
            f"results due to broadcasting. Please ensure they have the same size. (kit.mse_loss; "
            f"fix: reshape the target to the input's shape)", UserWarning, stacklevel=2)
        if isinstance(target, Tensor):  # expanded first, as PyTorch's broadcast_tensors
            shape = broadcast_shapes(input.shape, target.shape)
            input, target = input.expand(*shape), target.expand(*shape)
    if not any(getattr(t, "dtype", np.dtype(float)).kind in "fc" for t in (input, target)):
        broadcast_shapes(input.shape, getattr(target, "shape", ()))  # shapes first, as PyTorch
        floating_input("mse_cpu", "mse_loss", input if input.dtype.itemsize >= getattr(
            target, "dtype", input.dtype).itemsize else target)  # the computation's dtype
    if isinstance(target, Tensor) and target.dtype.kind == "b":  # computed in input's dtype,
        target = target.to(input.dtype)  # as PyTorch (a bool in `-` would be refused)
    elif input.dtype.kind == "b" and isinstance(target, Tensor):
        input = input.to(target.dtype)
    diff = input - target
    return _reduce(diff * diff, reduction, "mse_loss")
