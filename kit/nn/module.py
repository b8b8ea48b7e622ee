"""`Module`: parameters, buffers and submodules registered by attribute, as torch.nn.Module.

>>> import kit
>>> from kit import nn
>>> class Net(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = nn.Linear(2, 1)
...     def forward(self, x):
...         return self.fc(x)
>>> [name for name, _ in Net().named_parameters()]
['fc.weight', 'fc.bias']
"""

from __future__ import annotations

import functools
from collections import OrderedDict

from kit._tensor import Tensor
from kit.grad_mode import STATE, no_grad
from kit.nn import state
from kit.nn.hooks import ModuleHooks
from kit.nn.parameter import Parameter


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module(ModuleHooks):
    """Base class of every layer and model: subclass it and write `forward`.

    Hooks (forward, forward pre-, full backward and backward pre-hooks): kit/nn/hooks.py.
    """

    training: bool

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        self._init_hooks()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function. Fix: '
            f"define forward(self, ...) in the class"
        )

    # --- registration ----------------------------------------------------------------------
    def _check_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {what} before Module.__init__() call. Fix: call "
                f"super().__init__() first in {type(self).__name__}.__init__"
            )

    def _check_name(self, name, table):
        if not isinstance(name, str):
            raise TypeError(f"{table} name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'{table} name can\'t contain "." and can\'t be empty, got {name!r}')
        if hasattr(self, name) and name not in getattr(self, f"_{table}s"):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        """Add `param` (a Parameter or None) under `name`."""
        self._check_init("parameters")
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                f"(torch.nn.Parameter or None required). Fix: wrap it, nn.Parameter(tensor)"
            )
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (state that is not learned, e.g. BatchNorm's running mean)."""
        self._check_init("buffers")
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                f"(torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        """Add a submodule under `name` (what attribute assignment does)."""
        self._check_init("child modules")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            self._check_init("parameters")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    f"(torch.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            self._check_init("child modules")
            self._forget(name, keep="_modules")
            self._modules[name] = value
        elif self.__dict__.get("_modules") is not None and name in self._modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    f"(torch.nn.Module or None expected)"
                )
            self._modules[name] = None
        elif self.__dict__.get("_buffers") is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    f"(torch.Tensor or None expected)"
                )
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, keep=None):
        # (the table `keep` keeps its entry, so a replaced parameter or submodule keeps its place
        # in named_parameters() and state_dict(), as PyTorch's)
        self.__dict__.pop(name, None)
        for table in ("_parameters", "_buffers", "_modules"):
            if table != keep:
                self.__dict__[table].pop(name, None)
        self._non_persistent.discard(name)

    def __getattr__(self, name):
        # Only called when normal lookup fails: look in the three registries.
        for table in ("_parameters", "_buffers", "_modules"):
            registry = self.__dict__.get(table)
            if registry is not None and name in registry:
                return registry[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(table, ()):
                del self.__dict__[table][name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        names = set(super().__dir__())
        for table in ("_parameters", "_buffers", "_modules"):
            names.update(self.__dict__.get(table, ()))
        return sorted(names)

    # --- traversal --------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(name, module) for this module and every submodule, depth first."""
        memo = set() if memo is None else memo
        if remove_duplicate and self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or (remove_duplicate and value in seen):
                    continue
                seen.add(value)
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(name, Parameter) pairs; a parameter shared by two modules is listed once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_submodule(self, target):
        module = self
        for part in target.split(".") if target else ():
            if part not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{part}`")
            module = module._modules[part]
        return module

    # --- modes, gradients, conversion --------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's `.grad` (to None by default, as PyTorch 2)."""
        if STATE.tracing is not None:  # inside kit.compile's trace: a call its replay makes again
            return STATE.tracing.effect(f"{type(self).__name__}.zero_grad", functools.partial(
                self.zero_grad, set_to_none), False, (set_to_none,), {})
        for param in self.parameters():
            zero_grad(param, set_to_none)

    def apply(self, fn):
        """Call `fn(module)` on every submodule (children first) and on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """`to(device)`, `to(dtype)` or both: floating parameters and buffers are converted.

        NOTE: a converted parameter is a new Parameter object (PyTorch does the same with
        `torch.__future__.set_overwrite_module_params_on_conversion(True)`); convert the model
        before building its optimiser. Nothing is replaced when nothing changes.
        """
        return self._apply(lambda t: _convert(t, args, kwargs))

    def cpu(self):
        return self.to("cpu")

    def gpu(self):
        return self.to("gpu")

    cuda = gpu

    def float(self):
        return self.to("float32")

    def double(self):
        return self.to("float64")

    def _apply(self, fn):
        converted = {}  # id -> new Parameter: a parameter shared by two modules stays shared
        for module in self.modules():
            for name, param in module._parameters.items():
                if param is None:
                    continue
                if id(param) not in converted:
                    new = fn(param)
                    if new is not param:
                        new = Parameter(new, param.requires_grad)
                        if param.grad is not None:
                            new.grad = fn(param.grad)
                    converted[id(param)] = new
                module._parameters[name] = converted[id(param)]
            for name, buf in module._buffers.items():
                if buf is not None:
                    module._buffers[name] = fn(buf)
        return self

    # --- state dicts (kit/nn/state.py) -------------------------------------------------------
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An OrderedDict name -> tensor of every parameter and persistent buffer (detached,
        sharing storage with the module's, as PyTorch's)."""
        return state.collect(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict, strict=True):
        """Copy tensors from `state_dict` into this module's parameters and buffers, in place.

        With `strict` (the default) every key must match, else a RuntimeError lists the missing
        and unexpected ones, as PyTorch's does.
        """
        return state.load(self, state_dict, strict)

    # --- printing ----------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def zero_grad(param, set_to_none=True):
    """Reset one tensor's `.grad`: to None, or to zeros in place (detached from any graph)."""
    grad = param._grad  # NOTE: a parameter's (a leaf's): the property's warning cannot apply
    if grad is None:
        return
    if set_to_none:
        param._grad = None
    else:
        if grad.grad_fn is not None:
            grad.detach_()
        else:
            grad.requires_grad_(False)
        grad.zero_()


def _convert(t, args, kwargs):
    """`t.to(*args, **kwargs)` for a module's tensor: only floating tensors change dtype."""
    with no_grad():
        out = t.detach().to(*args, **kwargs)
    if t.dtype.kind != "f" and out.dtype != t.dtype:
        with no_grad():
            out = out.to(t.dtype)
    if out.dtype == t.dtype and out.device == t.device:
        return t
    return out
