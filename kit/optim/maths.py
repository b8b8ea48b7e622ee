"""Optimiser maths as plain functions: updates of parameters, in place.

Framework-neutral: `kit.torch.optim` (param groups, state dicts) and a gluon Trainer both call
these. Each update takes the parameters, their gradients, their states (dicts it fills on the
first step; their values are Tensors, as PyTorch's) and the hyperparameters, and updates each
parameter's storage in place, so references to it stay valid. The order of operations is
PyTorch's (torch/optim/sgd.py, adam.py, rmsprop.py), so results agree with it to float rounding.

As PyTorch's `foreach` implementation, `sgd`, `adam` and `rmsprop` take lists and run one loop
over them, doing the arithmetic on the arrays (NumPy or CuPy) below the Tensor level: no op is
recorded (no grad mode to enter), no Tensor is made per operation, and each tensor changed in
place has its version bumped once per update, so a graph that saved a parameter still refuses a
backward after the step. `sgd_update`, `adam_update` and `rmsprop_update` update one parameter.

>>> import kit
>>> from kit.optim.maths import sgd_update
>>> p = kit.tensor([1.0, 2.0])
>>> sgd_update(p, kit.tensor([1.0, 1.0]), {}, lr=0.5)
>>> p
tensor([0.5000, 1.5000])
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._creation import tensor, zeros_like
from kit._tensor import Tensor, bump_version, float32
from kit.grad_mode import STATE
from kit.optim import _fused


def _changed(*tensors):
    """Bump the version of each tensor an update wrote into (once per update). A compiled
    function's trace cannot replay a write made below the Tensor level: it runs eagerly."""
    if STATE.tracing is not None:
        STATE.tracing.observe(tensors[0], "inplace")
    for t in tensors:
        bump_version(t)


def sgd(params, grads, states, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
        nesterov=False, maximize=False, fused=None):
    """SGD with optional momentum (state 'momentum_buffer'), dampening, Nesterov momentum,
    L2 weight decay and maximisation, over lists of parameters, gradients and states. Large
    CPU arrays are updated by one compiled loop (kit/optim/_fused.py, same bits) unless `fused`
    is False."""
    if STATE.tracing is not None and params:
        STATE.tracing.observe(params[0], "inplace")  # (as _changed: once is enough)
    fused = fused is not False
    for param, grad, state in zip(params, grads, states, strict=True):
        p, g = param._data, grad._data
        buf = state.get("momentum_buffer") if momentum != 0 else None
        if fused and p.size >= _fused.FUSED_FROM and \
                _fused.usable(p, g, None if buf is None else buf._data):
            first = momentum != 0 and buf is None
            if first:
                buf = state["momentum_buffer"] = Tensor(np.empty_like(p))
            _fused.sgd(p, g, None if buf is None else buf._data, lr, momentum, dampening,
                       weight_decay, nesterov, maximize, first)
            if buf is not None and not first:
                bump_version(buf)
            bump_version(param)
            continue
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + p * weight_decay
        if momentum != 0:
            if buf is None:
                buf = state["momentum_buffer"] = Tensor(g.copy())
            else:
                b = buf._data
                b *= momentum
                b += g if dampening == 0 else g * (1 - dampening)
                bump_version(buf)
            g = g + buf._data * momentum if nesterov else buf._data
        # NOTE: p - lr * g is bit-equal to PyTorch's p + (-lr) * g (one temporary, as the
        # bare-tensor step `p -= lr * p.grad`)
        p -= g * lr
        bump_version(param)


def sgd_update(param, grad, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
               nesterov=False, maximize=False):
    """`sgd` of one parameter."""
    sgd((param,), (grad,), (state,), lr, momentum, dampening, weight_decay, nesterov, maximize)


def adam(params, grads, states, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
         amsgrad=False, maximize=False, decoupled=False):
    """Adam over lists; with `decoupled`, AdamW (weight decay applied to the parameter, not the
    gradient). State: 'step' (a float32 scalar tensor, as PyTorch's), 'exp_avg', 'exp_avg_sq'
    and, with amsgrad, 'max_exp_avg_sq'."""
    beta1, beta2 = betas
    for param, grad, state in zip(params, grads, states, strict=True):
        p, g = param._data, grad._data
        xp = backend.get_array_module(p)
        if maximize:
            g = -g
        if not state:
            state["step"] = tensor(0.0, dtype=float32)
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_like(param)
        step_t, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
        step_t._data += 1
        if weight_decay != 0:
            if decoupled:
                p *= 1 - lr * weight_decay
            else:
                g = g + p * weight_decay
        m, v = exp_avg._data, exp_avg_sq._data
        # exp_avg.lerp_(grad, 1 - beta1), spelt as PyTorch's kernel computes it for weight < 0.5
        m += (g - m) * (1 - beta1)
        v *= beta2
        v += g * (1 - beta2) * g  # addcmul_
        step = float(step_t._data)
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if amsgrad:
            kept = state["max_exp_avg_sq"]
            xp.maximum(kept._data, v, out=kept._data)
            denom = xp.sqrt(kept._data) / bias_correction2_sqrt
            _changed(kept)
        else:
            denom = xp.sqrt(v) / bias_correction2_sqrt
        denom += eps
        p += m * -step_size / denom  # addcdiv_, in PyTorch's order
        _changed(param, step_t, exp_avg, exp_avg_sq)


def adam_update(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                amsgrad=False, maximize=False, decoupled=False):
    """`adam` of one parameter."""
    adam((param,), (grad,), (state,), lr, betas, eps, weight_decay, amsgrad, maximize, decoupled)


def rmsprop(params, grads, states, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0,
            momentum=0.0, centered=False, maximize=False):
    """RMSprop over lists. State: 'step', 'square_avg', and 'momentum_buffer' / 'grad_avg'
    when used."""
    for param, grad, state in zip(params, grads, states, strict=True):
        p, g = param._data, grad._data
        xp = backend.get_array_module(p)
        if maximize:
            g = -g
        if not state:
            state["step"] = tensor(0.0, dtype=float32)
            state["square_avg"] = zeros_like(param)
            if momentum > 0:
                state["momentum_buffer"] = zeros_like(param)
            if centered:
                state["grad_avg"] = zeros_like(param)
        state["step"]._data += 1
        if weight_decay != 0:
            g = g + p * weight_decay
        square_avg = state["square_avg"]
        v = square_avg._data
        v *= alpha
        v += g * (1 - alpha) * g
        changed = [param, state["step"], square_avg]
        if centered:
            grad_avg = state["grad_avg"]
            mean = grad_avg._data
            mean += (g - mean) * (1 - alpha)
            avg = xp.sqrt(v + mean * -1 * mean)
            changed.append(grad_avg)
        else:
            avg = xp.sqrt(v)
        avg += eps
        if momentum > 0:
            buf = state["momentum_buffer"]
            b = buf._data
            b *= momentum
            b += g / avg
            p += b * -lr
            changed.append(buf)
        else:
            p += g * -lr / avg
        _changed(*changed)


def rmsprop_update(param, grad, state, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0,
                   momentum=0.0, centered=False, maximize=False):
    """`rmsprop` of one parameter."""
    rmsprop((param,), (grad,), (state,), lr, alpha, eps, weight_decay, momentum, centered,
            maximize)


# --- MXNet 1.x's update rules (mxnet.optimizer, src/operator/optimizer_op-inl.h) --------------
# Where MXNet's formula differs from PyTorch's it is spelt here, next to PyTorch's: the gradient is
# first scaled by `rescale_grad` (gluon's Trainer sets 1/batch_size) and clipped, weight decay is
# added to it (SGD: inside the momentum), and Adam folds both bias corrections into the step size
# with epsilon added to the uncorrected sqrt(v).

def _mxnet_grad(g, rescale_grad, clip_gradient, xp):
    g = g * rescale_grad if rescale_grad != 1 else g
    if clip_gradient is not None and clip_gradient >= 0:
        g = xp.minimum(xp.maximum(g, -clip_gradient), clip_gradient)  # kit.clamp's arithmetic
    return g


def _descend(w, g, step):
    """`w -= g * step` in place: for a large CPU array, SGD's compiled loop (kit/optim/_fused.py:
    one pass, no temporary, the same bits); else NumPy's two passes."""
    if w.size >= _fused.FUSED_FROM and _fused.usable(w, g):
        _fused.sgd(w, g, None, step, 0.0, 0.0, 0.0, False, False, False)
    else:
        w -= g * step


def mxnet_sgd(weights, grads, states, lrs, momentum=0.0, wds=None, rescale_grad=1.0,
              clip_gradient=None):
    """MXNet's SGD over lists (MXNet's aggregated `multi_sgd_update`), with one learning rate
    and one weight decay per weight (`lrs`, `wds`; `wds` None for none): without momentum
    `w = w - lr * (rescale * g + wd * w)`; with it `mom = momentum * mom - lr * (rescale * g +
    wd * w); w += mom` (state 'mom', zeros first).

    >>> import kit
    >>> w = kit.tensor([1.0]); state = {}
    >>> mxnet_sgd([w], [kit.tensor([4.0])], [state], [0.5], momentum=0.9, rescale_grad=0.25)
    >>> mxnet_sgd([w], [kit.tensor([4.0])], [state], [0.5], momentum=0.9, rescale_grad=0.25)
    >>> w  # mom = -0.5, then 0.9 * -0.5 - 0.5 = -0.95
    tensor([-0.4500])
    """
    if not weights:
        return
    # NOTE: every weight's version is bumped once, before the writes (one call for the list:
    # a failure part way still leaves each weight marked as changed)
    _changed(*weights)
    plain = clip_gradient is None and momentum == 0
    if plain and wds is None:
        # NOTE: the bare-tensor step's arithmetic (one temporary, in place): w -= g * lr'. The
        # loop holds nothing else: each pass over a large array pushes this Python code out of
        # the CPU's caches, so every line run between two passes costs (measured: this loop
        # with a per-weight check of wd takes ~7 us more a step for the 784-256-256-10 MLP).
        for weight, grad, lr in zip(weights, grads, lrs, strict=True):
            _descend(weight._data, grad._data, lr * rescale_grad)
        return
    for i, (weight, grad, lr) in enumerate(zip(weights, grads, lrs, strict=True)):
        w = weight._data
        wd = 0.0 if wds is None else wds[i]
        if plain and wd == 0:  # the same arithmetic as above
            _descend(w, grad._data, lr * rescale_grad)
            continue
        step = _mxnet_grad(grad._data, rescale_grad, clip_gradient, backend.get_array_module(w))
        if wd != 0:
            step = step + w * wd
        if momentum == 0:
            w -= step * lr
            continue
        state = states[i]
        mom = state.get("mom")
        if mom is None:
            mom = state["mom"] = zeros_like(weight)
        m = mom._data
        m *= momentum
        m -= step * lr
        w += m
        bump_version(mom)


def mxnet_sgd_update(weight, grad, state, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                     clip_gradient=None):
    """`mxnet_sgd` of one weight."""
    mxnet_sgd((weight,), (grad,), (state,), (lr,), momentum, (wd,), rescale_grad, clip_gradient)


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
    w = weight._data
    xp = backend.get_array_module(w)
    g = _mxnet_grad(grad._data, rescale_grad, clip_gradient, xp)
    if wd != 0:
        g = g + w * wd
    if "mean" not in state:
        state["mean"] = zeros_like(weight)
        state["var"] = zeros_like(weight)
    mean, var = state["mean"], state["var"]
    m, v = mean._data, var._data
    m *= beta1
    m += g * (1 - beta1)
    v *= beta2
    v += g * g * (1 - beta2)
    step_size = lr * (1 - beta2**t) ** 0.5 / (1 - beta1**t)
    w -= m * step_size / (xp.sqrt(v) + epsilon)
    _changed(weight, mean, var)
