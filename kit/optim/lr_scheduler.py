"""Learning-rate schedules: StepLR, MultiStepLR, ExponentialLR, LambdaLR and CosineAnnealingLR,
with PyTorch's recursive formulas (so the rates agree with PyTorch's to the last bit), and
ReduceLROnPlateau, driven by a metric.

>>> import kit
>>> from kit.optim import SGD
>>> from kit.optim.lr_scheduler import StepLR
>>> opt = SGD([kit.zeros(1, requires_grad=True)], lr=1.0)
>>> sched = StepLR(opt, step_size=2, gamma=0.5)
>>> for _ in range(4):
...     opt.step()
...     sched.step()
>>> sched.get_last_lr()
[0.25]
"""

from __future__ import annotations

import functools
import math
from collections import Counter

from kit._modes import STATE


def _replayed(method):
    """`step` as a call kit.compile's replay makes again (a scheduler stepped inside a compiled
    training step changes the rates on every call, not only while tracing)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        tracing = STATE.tracing
        if tracing is not None:
            return tracing.effect(f"{type(self).__name__}.step",
                                  functools.partial(wrapper, self, *args, **kwargs), False,
                                  args, kwargs)
        return method(self, *args, **kwargs)

    wrapper.replayed = True
    return wrapper


class LRScheduler:
    """Base class: sets each group's lr from `get_lr()` on every `step()`."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        method = cls.__dict__.get("step")
        if callable(method) and not getattr(method, "replayed", False):
            cls.step = _replayed(method)

    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        f"resuming scheduler with last_epoch >= 0"
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()

    def get_lr(self):
        raise NotImplementedError

    def get_last_lr(self):
        return list(self._last_lr)

    @_replayed
    def step(self):
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """Multiplies each group's lr by `gamma` every `step_size` epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]


class MultiStepLR(LRScheduler):
    """Multiplies each group's lr by `gamma` at each epoch in `milestones`."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in groups]


class ExponentialLR(LRScheduler):
    """Multiplies each group's lr by `gamma` every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]


class LambdaLR(LRScheduler):
    """Sets each group's lr to its initial lr times `lr_lambda(epoch)` (one function, or one per
    group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        groups = optimizer.param_groups
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(groups):
                raise ValueError(f"Expected {len(groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(groups)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * fn(self.last_epoch)
                for base, fn in zip(self.base_lrs, self.lr_lambdas, strict=True)]

    def state_dict(self):
        # functions are not state: PyTorch's LambdaLR leaves them out too
        return {k: v for k, v in super().state_dict().items() if k != "lr_lambdas"}


class CosineAnnealingLR(LRScheduler):
    """Anneals each group's lr from its initial value to `eta_min` along a half cosine over
    `T_max` epochs (Loshchilov and Hutter's SGDR without restarts)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803 - PyTorch's
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        t, t_max, eta_min = self.last_epoch, self.T_max, self.eta_min
        if t == 0:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and t > 0:
            return [eta_min + (base - eta_min) * (1 + math.cos(t * math.pi / t_max)) / 2
                    for base in self.base_lrs]
        if (t - 1 - t_max) % (2 * t_max) == 0:
            return [group["lr"] + (base - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
                    for base, group in zip(self.base_lrs, groups, strict=True)]
        return [
            (1 + math.cos(math.pi * t / t_max)) / (1 + math.cos(math.pi * (t - 1) / t_max))
            * (group["lr"] - eta_min) + eta_min
            for group in groups
        ]


class ReduceLROnPlateau:
    """Multiplies each group's lr by `factor` once the metric passed to `step(metric)` has not
    improved for `patience` epochs (then waits `cooldown` epochs before counting again)."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0.0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        groups = optimizer.param_groups
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(groups):
                raise ValueError(f"expected {len(groups)} min_lrs, got {len(min_lr)}")
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * len(groups)
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience
        self.threshold, self.threshold_mode, self.cooldown, self.eps = (
            threshold, threshold_mode, cooldown, eps)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = self.last_epoch = 0
        self._last_lr = [group["lr"] for group in groups]

    def is_better(self, a, best):
        if self.mode == "min":
            bound = best * (1 - self.threshold) if self.threshold_mode == "rel" else (
                best - self.threshold)
            return a < bound
        bound = best * (self.threshold + 1) if self.threshold_mode == "rel" else (
            best + self.threshold)
        return a > bound

    @_replayed
    def step(self, metrics):
        current = float(metrics)
        self.last_epoch += 1
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs, strict=True):
                old = float(group["lr"])
                new = max(old * self.factor, min_lr)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        return list(self._last_lr)

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
