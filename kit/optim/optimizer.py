"""`Optimizer`: parameter groups, per-parameter state, zero_grad and state dicts, as
torch.optim.Optimizer; subclasses supply `update(param, grad, state, group)` (or, for a whole
group at once, `update_many(params, grads, states, group)`).

>>> import kit
>>> from kit.optim import SGD
>>> p = kit.tensor([1.0], requires_grad=True)
>>> opt = SGD([p], lr=0.1)
>>> (p * 3).sum().backward()
>>> opt.step()
>>> p
tensor([0.7000], requires_grad=True)
"""

from __future__ import annotations

import functools
import warnings
from collections import defaultdict

from kit._modes import STATE
from kit._tensor import Tensor
from kit.grad_mode import enable_grad, no_grad
from kit.nn.module import zero_grad


class _Required:
    """Marks a hyperparameter that every param group must give (SGD's lr in old PyTorch)."""

    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _profiled(method):
    """`method` (step or zero_grad) as a range of a running kit.profiler, named as PyTorch's
    optimisers name theirs: "Optimizer.step#SGD.step", after the instance's class. As in
    PyTorch, a subclass's step that calls its base's gives two nested ranges of that name. While
    no profiler runs it costs one attribute read."""
    kind = method.__name__

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        tracing = STATE.tracing
        if tracing is not None:  # inside kit.compile's trace: a call its replay makes again
            return tracing.effect(f"{type(self).__name__}.{kind}",
                                  functools.partial(wrapper, self, *args, **kwargs),
                                  kind == "step", args, kwargs)
        recorder = STATE.profiler
        if recorder is None:
            return method(self, *args, **kwargs)
        event = recorder.begin(f"Optimizer.{kind}#{type(self).__name__}.{kind}", "range")
        try:
            return method(self, *args, **kwargs)
        finally:
            recorder.end(event)

    wrapper.profiled = True
    return wrapper


class Optimizer:
    """Base class of the optimisers: holds `param_groups` (dicts) and `state` (per parameter).
    Under kit.profiler, each `step` and `zero_grad` call is a range, as in PyTorch (a subclass's
    own `step`, a user's optimiser's too)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for kind in ("step", "zero_grad"):
            method = cls.__dict__.get(kind)
            if callable(method) and not getattr(method, "profiled", False):
                setattr(cls, kind, _profiled(method))

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}. Fix: pass [tensor] or "
                "model.parameters()"
            )
        groups = list(params)
        if not groups:
            raise ValueError(
                "optimizer got an empty parameter list. Fix: check that the model has "
                "parameters (e.g. it was built before model.parameters() was called)"
            )
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        return "\n".join(lines) + "\n)"

    def add_param_group(self, param_group):
        """Add a group (a dict with 'params' and any hyperparameters overriding the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        param_group["params"] = params = list(params)
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(param).__name__}"
                )
            if not (param.is_leaf or param.retains_grad):
                raise ValueError(
                    "can't optimize a non-leaf Tensor. Fix: optimise the leaf it was computed "
                    "from, or make one with .detach().requires_grad_()"
                )
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter "
                    f"{name}"
                )
            param_group.setdefault(name, default)
        if len(params) != len(set(params)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error", stacklevel=3,
            )
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
        if not seen.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    @_profiled
    def zero_grad(self, set_to_none=True):
        """Reset the gradients of every optimised parameter (to None by default)."""
        for group in self.param_groups:
            for param in group["params"]:
                if set_to_none:
                    param._grad = None  # (a leaf's: nothing else to do)
                else:
                    zero_grad(param, False)

    @_profiled
    def step(self, closure=None):
        """One update of every parameter that has a gradient; `closure` recomputes the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        if getattr(type(self).update_many, "on_arrays", False) or not STATE.enabled:
            self._update_groups()  # (nothing records: no grad mode to enter)
        else:
            with no_grad():  # for an update() written with Tensor ops
                self._update_groups()
        return loss

    def _update_groups(self):
        """update_many for each group's parameters that have a gradient."""
        state = self.state
        for group in self.param_groups:
            # (a leaf's gradient, or a retained one: the .grad property has no warning to give)
            params = [p for p in group["params"] if p._grad is not None]
            if params:
                self.update_many(params, [p._grad for p in params], [state[p] for p in params],
                                 group)

    @staticmethod
    def on_arrays(update_many):
        """Mark an `update_many` that updates the arrays below the Tensor level (records no op):
        step() then needs no no_grad block around it."""
        update_many.on_arrays = True
        return update_many

    def update_many(self, params, grads, states, group):
        """Update the parameters of one group that have a gradient, in place, with their
        gradients and states (lists); called under no_grad by step(). The built-in optimisers
        run one loop over the arrays (kit/optim/maths.py), as PyTorch's foreach ones; by
        default, `update` per parameter."""
        for param, grad, state in zip(params, grads, states, strict=True):
            self.update(param, grad, state, group)

    def update(self, param, grad, state, group):
        """Update one parameter in place; called under no_grad by step()."""
        raise NotImplementedError(f"{type(self).__name__} must define update() or update_many()")

    # --- state dicts ---------------------------------------------------------------------
    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}, PyTorch's
        layout: parameters are numbered in the order of the groups."""
        index, groups, start = {}, [], 0
        for group in self.param_groups:
            ids = list(range(start, start + len(group["params"])))
            index.update(zip((id(p) for p in group["params"]), ids, strict=True))
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
            start += len(ids)
        state = {
            index[id(param)]: dict(value)
            for param, value in self.state.items() if id(param) in index
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore hyperparameters and state saved by `state_dict` (tensors are copied, and cast
        to the parameter's dtype and device, except 'step')."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, groups, strict=True):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size "
                    "of optimizer's group"
                )
        self.state = defaultdict(dict)
        for mine, saved in zip(self.param_groups, groups, strict=True):
            for param, i in zip(mine["params"], saved["params"], strict=True):
                if i in state_dict["state"]:
                    self.state[param] = {
                        key: _cast(value, param, key)
                        for key, value in state_dict["state"][i].items()
                    }
            mine.update({k: v for k, v in saved.items() if k != "params"})


def _cast(value, param, key):
    if not isinstance(value, Tensor):
        return value
    value = value.detach()
    if key != "step":
        value = value.to(param.dtype)
    return value.to(param.device).clone()
