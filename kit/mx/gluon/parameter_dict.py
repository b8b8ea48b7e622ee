"""gluon `ParameterDict`: Parameters by full name, and kit's file format for their values.

>>> import kit.mx as mx
>>> params = mx.gluon.ParameterDict("net_")
>>> params.get("weight", shape=(2, 2))
Parameter net_weight (shape=(2, 2), dtype=float32)
"""

from __future__ import annotations

import re
from collections import OrderedDict

import numpy as np

from kit.mx import init as mx_init
from kit.mx.gluon.parameter import Constant, Parameter


class ParameterDict:
    """Parameters by full name (prefix + name); `get` creates or reuses one."""

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    @property
    def prefix(self):
        return self._prefix

    def __repr__(self):
        body = "\n".join(f"  {p!r}" for p in self._params.values())
        return f"{self._prefix} (\n{body}\n)"

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    def items(self):
        return self._params.items()

    def _lookup(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The Parameter `prefix + name`, created with `kwargs` if it does not exist yet."""
        full = self._prefix + name
        param = self._lookup(full)
        if param is None:
            param = self._params[full] = Parameter(full, **kwargs)
            return param
        shape = kwargs.pop("shape", None)
        if shape is not None:
            param.shape = (shape,) if isinstance(shape, int) else shape
        for key, value in kwargs.items():
            if value is not None and hasattr(param, key) and getattr(param, key) != value:
                if key == "dtype" and np.dtype(value) == np.dtype(param.dtype):
                    continue
                raise AssertionError(
                    f"Cannot retrieve Parameter '{full}' because desired attribute does not "
                    f"match with stored for attribute '{key}': desired '{value}' vs stored "
                    f"'{getattr(param, key)}'."
                )
        return param

    def get_constant(self, name, value=None):
        full = self._prefix + name
        param = self._lookup(full)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named '{full}'. Please specify value.")
            param = self._params[full] = Constant(full, value)
        return param

    def update(self, other):
        """Add `other`'s Parameters (a name bound to another Parameter is an error)."""
        for name, param in other.items():
            if name in self._params and self._params[name] is not param:
                raise ValueError(
                    f"Cannot update self with other because they have different Parameters "
                    f"with the same name '{name}'"
                )
            self._params[name] = param

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialise every Parameter (`init` is the default for those without their own)."""
        default = mx_init.Uniform() if init is None else init
        for param in self.values():
            param.initialize(None, ctx, default, force_reinit)

    def zero_grad(self):
        for param in self.values():
            param.zero_grad()

    def reset_ctx(self, ctx):
        for param in self.values():
            param.reset_ctx(ctx)

    def setattr(self, name, value):
        """Set an attribute on every Parameter, e.g. setattr('grad_req', 'null')."""
        for param in self.values():
            setattr(param, name, value)

    def list_ctx(self):
        return sorted({c for p in self.values() for c in p.list_ctx()}, key=str)

    def save(self, filename, strip_prefix=""):
        """Write the values by name (less `strip_prefix`) to an .npz file."""
        arrays = {}
        for param in self.values():
            if strip_prefix and not param.name.startswith(strip_prefix):
                raise ValueError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but Parameter's "
                    f"name '{param.name}' does not start with '{strip_prefix}'."
                )
            arrays[param.name[len(strip_prefix):]] = param.data().asnumpy()
        save_arrays(filename, arrays)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix="", cast_dtype=False, dtype_source="current"):
        """Read values saved by `save` (names get `restore_prefix` back)."""
        loaded = {restore_prefix + k: v for k, v in load_arrays(filename).items()}
        match_names(loaded, self._params, filename, allow_missing, ignore_extra)
        for name, values in loaded.items():
            if name in self._params:
                self._params[name]._load_init(values, ctx, cast_dtype, dtype_source)


def select(params, pattern):
    """The items of `params` whose name matches the regular expression (re.match)."""
    regex = re.compile(pattern)
    return {name: p for name, p in params.items() if regex.match(name)}


def save_arrays(filename, arrays):
    """kit's file format for gluon parameters: a NumPy .npz archive, name -> array."""
    with open(filename, "wb") as f:
        np.savez(f, **arrays)


def load_arrays(filename):
    with np.load(filename, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def match_names(loaded, own, filename, allow_missing, ignore_extra):
    """MXNet's checks of a loaded file against the model's parameter names."""
    if not allow_missing:
        for name in own:
            if name not in loaded:
                raise AssertionError(
                    f"Parameter '{name}' is missing in file '{filename}', which contains "
                    f"parameters: {_names(loaded)}. Set allow_missing=True to ignore missing "
                    f"parameters."
                )
    if not ignore_extra:
        for name in loaded:
            if name not in own:
                raise AssertionError(
                    f"Parameter '{name}' loaded from file '{filename}' is not present in "
                    f"ParameterDict, which contains parameters {_names(own)}. Set "
                    f"ignore_extra=True to ignore."
                )


def _names(table):
    names = list(table)
    return ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
