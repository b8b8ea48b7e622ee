"""Containers: Sequential, ModuleList and ModuleDict, registered like any submodule, and
ParameterList and ParameterDict, whose parameters are registered under their index or key.

>>> from kit import nn
>>> net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
>>> len(net), type(net[0]).__name__
(2, 'Linear')
"""

from __future__ import annotations

import operator
from collections import OrderedDict

from kit._tensor import Tensor
from kit.nn.module import Module
from kit.nn.parameter import Parameter


def _index(index, size, what):
    """`index` as a position in 0..size-1 (negative counts from the end)."""
    i = operator.index(index)
    if not -size <= i < size:
        raise IndexError(f"index {index} is out of range for a {what} of length {size}")
    return i % size


class Sequential(Module):
    """Calls its modules in order, each on the previous one's output."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_index(index, len(self), "Sequential")]

    def __setitem__(self, index, module):
        key = list(self._modules)[_index(index, len(self), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, index):
        keys = list(self._modules)
        for key in keys[index] if isinstance(index, slice) else [keys[_index(index, len(keys),
                                                                              "Sequential")]]:
            del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):  # noqa: A002 - PyTorch's argument name
        for module in self._modules.values():
            input = module(input)  # noqa: A001
        return input


class ModuleList(Module):
    """A list of modules, each registered (so its parameters are the parent's)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[str(_index(index, len(self), "ModuleList"))]

    def __setitem__(self, index, module):
        self.add_module(str(_index(index, len(self), "ModuleList")), module)

    def __delitem__(self, index):
        modules = list(self._modules.values())
        del modules[index]
        self._modules.clear()
        self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        self.extend(modules)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            "ModuleList has no forward: it only holds modules. Fix: iterate over it in your "
            "module's forward, e.g. `for layer in self.layers: x = layer(x)`"
        )


class ModuleDict(Module):
    """A dict of modules, each registered under its key."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key):
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            "ModuleDict has no forward: it only holds modules. Fix: call the one you want, "
            "e.g. self.heads['a'](x)"
        )


# PyTorch's legacy type names, which ParameterDict prints (ParameterList prints the dtype)
_TYPE_NAMES = {"float16": "HalfTensor", "float32": "FloatTensor", "float64": "DoubleTensor",
               "uint8": "ByteTensor", "int8": "CharTensor", "int16": "ShortTensor",
               "int32": "IntTensor", "int64": "LongTensor", "bool": "BoolTensor"}


def _as_parameter(value):
    """A plain tensor becomes a Parameter (requiring grad), as PyTorch's containers make it."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value, in_dict):
    """One entry as PyTorch's ParameterList (in_dict False) or ParameterDict prints it."""
    if not isinstance(value, Tensor):
        return f"Object of type: {type(value).__name__}"
    size = "x".join(str(n) for n in value.shape)
    gpu = value.device != "cpu"
    if in_dict:
        name = ("torch.cuda." if gpu else "torch.") + _TYPE_NAMES.get(str(value.dtype),
                                                                      str(value.dtype))
        where = " (GPU 0)" if gpu else ""
    else:
        name, where = f"torch.{value.dtype}", " (cuda:0)" if gpu else ""
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"{kind} containing: [{name} of size {size}{where}]"


class ParameterList(Module):
    """A list of parameters, each registered under its index (so `parameters()` and
    `state_dict()` list them, as named '0', '1', ...); plain tensors become Parameters."""

    def __init__(self, values=None):
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self.extend(values)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)([self[i] for i in range(len(self))[index]])
        return getattr(self, str(_index(index, len(self), "ParameterList")))

    def __setitem__(self, index, value):
        setattr(self, str(_index(index, len(self), "ParameterList")), _as_parameter(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        object.__setattr__(self, "_size", self._size + 1)
        self[self._size - 1] = value
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({i}): {_describe(value, False)}" for i, value in enumerate(self))


class ParameterDict(Module):
    """A dict of parameters, each registered under its key; plain tensors become Parameters. A
    plain dict's items are added in sorted key order, an OrderedDict's in its order, as
    PyTorch's; a missing key raises AttributeError, as there."""

    def __init__(self, parameters=None):
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        setattr(self, key, _as_parameter(value))
        self._keys[key] = None

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def values(self):
        return [self[key] for key in self._keys]

    def items(self):
        return [(key, self[key]) for key in self._keys]

    def get(self, key, default=None):
        return self[key] if key in self else default

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def clear(self):
        for key in list(self._keys):
            del self[key]

    def update(self, parameters):
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = parameters.items()
        elif hasattr(parameters, "items"):
            items = sorted(parameters.items())
        else:
            items = parameters
        for key, value in items:
            self[key] = value

    def extra_repr(self):
        return "\n".join(f"  ({key}): {_describe(value, True)}" for key, value in self.items())
