"""Gradient utilities: `clip_grad_norm_` and `clip_grad_value_`, in place, as torch.nn.utils.

>>> import kit
>>> from kit.nn.utils import clip_grad_norm_
>>> p = kit.tensor([3.0, 4.0], requires_grad=True)
>>> (p * p).sum().backward()
>>> clip_grad_norm_([p], 1.0)
tensor(10.)
"""

from __future__ import annotations

import math

from kit._creation import tensor
from kit._tensor import Tensor
from kit.grad_mode import no_grad
from kit.ops.elementwise import abs as abs_
from kit.ops.elementwise import clamp
from kit.ops.movement import stack
from kit.ops.reductions import max as max_
from kit.ops.reductions import sum as sum_


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale the gradients so that their total `norm_type` norm is at most `max_norm`; returns
    the total norm before clipping (as one tensor)."""
    grads = _grads(parameters)
    if not grads:
        return tensor(0.0)
    norm_type = float(norm_type)
    with no_grad():
        if norm_type == float("inf"):
            total = max_(stack([max_(abs_(g)) for g in grads]))
        else:
            per = stack([sum_(abs_(g) ** norm_type) ** (1.0 / norm_type) for g in grads])
            total = sum_(per ** norm_type) ** (1.0 / norm_type)
        if error_if_nonfinite and not math.isfinite(float(total.item())):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                f"non-finite, so it cannot be clipped. To disable this error and scale the "
                f"gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
            )
        # NOTE: always multiplied (by at most 1), in the gradients' dtype, as PyTorch does.
        coef = clamp(float(max_norm) / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef)
    return total


def clip_grad_value_(parameters, clip_value):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
