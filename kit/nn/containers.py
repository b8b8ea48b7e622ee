"""Containers: Sequential, ModuleList and ModuleDict, registered like any submodule.

>>> from kit import nn
>>> net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
>>> len(net), type(net[0]).__name__
(2, 'Linear')
"""

from __future__ import annotations

import operator
from collections import OrderedDict

from kit.nn.module import Module


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
