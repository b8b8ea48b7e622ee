"""SGD, Adam, AdamW and RMSprop: hyperparameter checks and defaults as torch.optim's; the
maths is in kit/optim/maths.py.

PyTorch's `foreach=` and `fused=` choose how its update runs (a loop of Tensor ops, one op over
all parameters, one kernel) and give the same numbers. kit's update is a loop over the parameters
on their arrays (maths.py); SGD updates a large CPU parameter in one compiled loop when numba is
installed (kit/optim/_fused.py, the same bits), unless `fused=False`. Both flags are accepted and
kept in the param groups as PyTorch keeps them; asking for both at once is PyTorch's error.

>>> import kit
>>> from kit.optim import Adam
>>> Adam([kit.zeros(1, requires_grad=True)], lr=1e-3).defaults["betas"]
(0.9, 0.999)
"""

from __future__ import annotations

from kit.optim import maths
from kit.optim.optimizer import Optimizer


def _check(name, value, low=0.0):
    if not value >= low:
        raise ValueError(f"Invalid {name} value: {value}")


def _implementation(foreach, fused):
    """PyTorch's implementation switches, as group entries (see the module docstring)."""
    if foreach and fused:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    return {"foreach": foreach, "fused": fused}


class SGD(Optimizer):
    """Stochastic gradient descent, with optional (Nesterov) momentum and weight decay."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, foreach=None, fused=None):
        _check("learning rate", lr)
        _check("momentum", momentum)
        _check("weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {
            "lr": lr, "momentum": momentum, "dampening": dampening,
            "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
            **_implementation(foreach, fused),
        })

    @Optimizer.on_arrays
    def update_many(self, params, grads, states, group):
        maths.sgd(
            params, grads, states, group["lr"], group["momentum"], group["dampening"],
            group["weight_decay"], group["nesterov"], group["maximize"], group.get("fused"),
        )


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2015), with optional amsgrad and L2 weight decay."""

    decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, maximize=False, foreach=None, fused=None):
        _check("learning rate", lr)
        _check("epsilon", eps)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        _check("weight_decay", weight_decay)
        super().__init__(params, {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "amsgrad": amsgrad, "maximize": maximize, **_implementation(foreach, fused),
        })

    @Optimizer.on_arrays
    def update_many(self, params, grads, states, group):
        maths.adam(
            params, grads, states, group["lr"], group["betas"], group["eps"],
            group["weight_decay"], group["amsgrad"], group["maximize"], self.decoupled,
        )


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter, 2019); weight_decay 0.01."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, fused=fused)


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e), optionally centred and with momentum."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, *, maximize=False, foreach=None):
        _check("learning rate", lr)
        _check("epsilon", eps)
        _check("momentum", momentum)
        _check("weight_decay", weight_decay)
        _check("alpha", alpha)
        super().__init__(params, {
            "lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay,
            "momentum": momentum, "centered": centered, "maximize": maximize,
            "foreach": foreach,
        })

    @Optimizer.on_arrays
    def update_many(self, params, grads, states, group):
        maths.rmsprop(
            params, grads, states, group["lr"], group["alpha"], group["eps"],
            group["weight_decay"], group["momentum"], group["centered"], group["maximize"],
        )
