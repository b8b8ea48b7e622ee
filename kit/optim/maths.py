"""Optimiser maths as plain functions on kit Tensors: one update of one parameter, in place.

Framework-neutral: `kit.torch.optim` (param groups, state dicts) and a gluon Trainer both call
these. Each function takes the parameter, its gradient, its state (a dict it fills on the first
step) and the hyperparameters, and updates the parameter's storage in place under no_grad, so
references to it stay valid. The order of operations is PyTorch's single-tensor path
(torch/optim/sgd.py, adam.py, rmsprop.py), so results agree with it to float rounding.

>>> import kit
>>> from kit.optim.maths import sgd_update
>>> p = kit.tensor([1.0, 2.0])
>>> sgd_update(p, kit.tensor([1.0, 1.0]), {}, lr=0.5)
>>> p
tensor([0.5000, 1.5000])
"""

from __future__ import annotations

import functools

from kit._creation import tensor, zeros_like
from kit._tensor import float32
from kit.grad_mode import STATE, no_grad
from kit.ops.elementwise import maximum, sqrt


def _under_no_grad(fn):
    """The public update enters no_grad itself unless grad mode is off already (a gluon Trainer
    step: one entry instead of one per parameter); `update.raw` skips even the test, for a
    caller that is under no_grad for a whole step (Optimizer.step)."""

    @functools.wraps(fn)
    def update(*args, **kwargs):
        if not STATE.enabled:
            return fn(*args, **kwargs)
        with no_grad():
            return fn(*args, **kwargs)

    update.raw = fn
    return update


@_under_no_grad
def sgd_update(param, grad, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
               nesterov=False, maximize=False):
    """SGD with optional momentum (state 'momentum_buffer'), dampening, Nesterov momentum,
    L2 weight decay and maximisation."""
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = grad + param * weight_decay
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = grad.detach().clone()
        else:
            buf.mul_(momentum).add_(grad if dampening == 0 else grad * (1 - dampening))
        grad = grad + buf * momentum if nesterov else buf
    # NOTE: p - lr * g is bit-equal to PyTorch's p + (-lr) * g, and takes the in-place fast
    # path (one temporary) that the bare-tensor step `p -= lr * p.grad` takes.
    param.sub_(grad * lr)


@_under_no_grad
def adam_update(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                amsgrad=False, maximize=False, decoupled=False):
    """Adam; with `decoupled`, AdamW (weight decay applied to the parameter, not the gradient).
    State: 'step' (a float32 scalar tensor, as PyTorch's), 'exp_avg', 'exp_avg_sq' and, with
    amsgrad, 'max_exp_avg_sq'."""
    beta1, beta2 = betas
    if maximize:
        grad = -grad
    if not state:
        state["step"] = tensor(0.0, dtype=float32)
        state["exp_avg"] = zeros_like(param)
        state["exp_avg_sq"] = zeros_like(param)
        if amsgrad:
            state["max_exp_avg_sq"] = zeros_like(param)
    state["step"].add_(1)
    if weight_decay != 0:
        if decoupled:
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    # exp_avg.lerp_(grad, 1 - beta1), spelt as PyTorch's kernel computes it for weight < 0.5
    exp_avg.add_((grad - exp_avg) * (1 - beta1))
    exp_avg_sq.mul_(beta2).add_(grad * (1 - beta2) * grad)  # addcmul_
    step = state["step"].item()
    step_size = lr / (1 - beta1**step)
    bias_correction2_sqrt = (1 - beta2**step) ** 0.5
    if amsgrad:
        state["max_exp_avg_sq"].copy_(maximum(state["max_exp_avg_sq"], exp_avg_sq))
        denom = (sqrt(state["max_exp_avg_sq"]) / bias_correction2_sqrt).add_(eps)
    else:
        denom = (sqrt(exp_avg_sq) / bias_correction2_sqrt).add_(eps)
    param.add_(exp_avg * -step_size / denom)  # addcdiv_, in PyTorch's order


@_under_no_grad
def rmsprop_update(param, grad, state, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0,
                   momentum=0.0, centered=False, maximize=False):
    """RMSprop. State: 'step', 'square_avg', and 'momentum_buffer' / 'grad_avg' when used."""
    if maximize:
        grad = -grad
    if not state:
        state["step"] = tensor(0.0, dtype=float32)
        state["square_avg"] = zeros_like(param)
        if momentum > 0:
            state["momentum_buffer"] = zeros_like(param)
        if centered:
            state["grad_avg"] = zeros_like(param)
    state["step"].add_(1)
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    square_avg = state["square_avg"]
    square_avg.mul_(alpha).add_(grad * (1 - alpha) * grad)
    if centered:
        grad_avg = state["grad_avg"]
        grad_avg.add_((grad - grad_avg) * (1 - alpha))
        avg = sqrt(square_avg + grad_avg * -1 * grad_avg)
    else:
        avg = sqrt(square_avg)
    avg = avg.add_(eps)
    if momentum > 0:
        buf = state["momentum_buffer"]
        buf.mul_(momentum).add_(grad / avg)
        param.add_(buf, alpha=-lr)
    else:
        param.add_(grad * -lr / avg)


# --- MXNet 1.x's update rules (mxnet.optimizer, src/operator/optimizer_op-inl.h) --------------
# Where MXNet's formula differs from PyTorch's it is spelt here, next to PyTorch's: the gradient is
# first scaled by `rescale_grad` (gluon's Trainer sets 1/batch_size) and clipped, weight decay is
# added to it (SGD: inside the momentum), and Adam folds both bias corrections into the step size
# with epsilon added to the uncorrected sqrt(v).

def _mxnet_grad(grad, rescale_grad, clip_gradient):
    grad = grad * rescale_grad if rescale_grad != 1 else grad
    if clip_gradient is not None and clip_gradient >= 0:
        grad = grad.clamp(-clip_gradient, clip_gradient)
    return grad


@_under_no_grad
def mxnet_sgd_update(weight, grad, state, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                     clip_gradient=None):
    """MXNet's SGD: without momentum `w = w - lr * (rescale * g + wd * w)`; with it
    `mom = momentum * mom - lr * (rescale * g + wd * w); w += mom` (state 'mom', zeros first).

    >>> import kit
    >>> w = kit.tensor([1.0]); state = {}
    >>> mxnet_sgd_update(w, kit.tensor([4.0]), state, lr=0.5, momentum=0.9, rescale_grad=0.25)
    >>> mxnet_sgd_update(w, kit.tensor([4.0]), state, lr=0.5, momentum=0.9, rescale_grad=0.25)
    >>> w  # mom = -0.5, then 0.9 * -0.5 - 0.5 = -0.95
    tensor([-0.4500])
    """
    if clip_gradient is None and momentum == 0 and wd == 0:
        # NOTE: the bare-tensor step's arithmetic (one temporary, in place): w -= g * lr'.
        weight.sub_(grad * (lr * rescale_grad))
        return
    step = _mxnet_grad(grad, rescale_grad, clip_gradient)
    if wd != 0:
        step = step + weight * wd
    if momentum == 0:
        weight.sub_(step * lr)
        return
    mom = state.get("mom")
    if mom is None:
        mom = state["mom"] = zeros_like(weight)
    mom.mul_(momentum).sub_(step * lr)
    weight.add_(mom)


@_under_no_grad
def mxnet_adam_update(weight, grad, state, lr, t, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,
                      rescale_grad=1.0, clip_gradient=None):
    """MXNet's Adam at update count `t` (1 on the first step): `g = rescale * g + wd * w`,
    `mean = b1 mean + (1 - b1) g`, `var = b2 var + (1 - b2) g^2`, then
    `w -= lr * sqrt(1 - b2^t) / (1 - b1^t) * mean / (sqrt(var) + epsilon)`. State 'mean', 'var'.

    >>> import kit
    >>> w = kit.tensor([1.0])
    >>> mxnet_adam_update(w, kit.tensor([2.0]), {}, lr=0.1, t=1)
    >>> round(w.item(), 6)  # the first step moves every weight by about lr
    0.9
    """
    g = _mxnet_grad(grad, rescale_grad, clip_gradient)
    if wd != 0:
        g = g + weight * wd
    if "mean" not in state:
        state["mean"] = zeros_like(weight)
        state["var"] = zeros_like(weight)
    mean, var = state["mean"], state["var"]
    mean.mul_(beta1).add_(g * (1 - beta1))
    var.mul_(beta2).add_(g * g * (1 - beta2))
    step_size = lr * (1 - beta2**t) ** 0.5 / (1 - beta1**t)
    weight.sub_(mean * step_size / (sqrt(var) + epsilon))
