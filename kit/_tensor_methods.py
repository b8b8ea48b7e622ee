"""The Tensor's operators and methods, in one table: generated from the op registry, plus the few
methods that are not one op.

`x + y` is `Tensor.__add__`, which is `kit.ops.add`; `x.sum(dim=1)` is `kit.ops.sum` in PyTorch's
spelling. Each op's declaration (kit/ops/<family>.py, see kit/ops/_registry.py) lists its method
names; `table()` turns them into methods, and `install()` (run once, by kit.ops) sets them on
Tensor.
"""

from __future__ import annotations

import inspect

from kit._creation import NEW
from kit._inplace import (
    _clamp_,
    _fill_op,
    _index_add_,
    _inplace,
    _setitem,
    _zero_,
    no_operand,
    reshaping,
)
from kit._random import METHODS as RANDOM
from kit._tensor import Tensor
from kit._tensor_info import INFO
from kit.ops import movement, permute, transpose
from kit.ops._registry import OPS


def _named(method, name):
    method.__name__ = method.__qualname__ = name
    return method


def _from_registry():
    methods = {}
    for op in OPS.values():
        spelt = {}
        for item in op.methods:
            name, spelling = (item, None) if isinstance(item, str) else item
            spelt[name] = op.fn if spelling is None else _named(spelling(op.fn), name)
        for item in op.inplace:
            # `add_` does what the method `add` does (with alpha=), `__iadd__` what `add` does;
            # an item (name, spelling) runs spelling(that) instead (asinh_, kit/ops/
            # elementwise_more.py)
            name, spelling = (item, None) if isinstance(item, str) else item
            base = spelt.get(name[:-1], op.fn) if not name.startswith("__") else op.fn
            base = base if spelling is None else spelling(base)
            spelt[name] = (_inplace(name, base, op.fast) if _takes_operand(base)
                           else no_operand(name, base))
        duplicate = methods.keys() & spelt.keys()
        if duplicate:
            raise ValueError(f"kit: Tensor methods {sorted(duplicate)} are declared twice")
        methods.update(spelt)
    return methods


def _takes_operand(fn):
    """Whether fn needs a second argument (`add(x, y)`: `x.add_(y)`), or not (`floor(x)`)."""
    required = [p for p in inspect.signature(fn).parameters.values()
                if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    return len(required) > 1


def _t(self):
    """`x.t()`: the transpose of a matrix; a 0-d or 1-d tensor is itself (as PyTorch)."""
    if self.ndim > 2:
        raise RuntimeError(f"kit t(): expects a tensor with <= 2 dimensions, but this one is "
                           f"{self.ndim}-D (shape {list(self.shape)}). Fix: x.transpose(0, 1), "
                           f"or x.mT for the last two dims")
    return transpose(self, 0, 1) if self.ndim == 2 else self


def _takes_operand(fn):
    """Whether fn needs a second argument (`add(x, y)`: `x.add_(y)`), or not (`floor(x)`)."""
    required = [p for p in inspect.signature(fn).parameters.values()
                if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    return len(required) > 1


def _comparing(name):
    """`x.allclose(y)` (and isclose, equal): kit.torch's function of the same name, imported on
    first use (kit.torch is built on kit, after these methods)."""

    def method(self, other, *args, **kwargs):
        from kit.torch import _functions

        return getattr(_functions, name)(self, other, *args, **kwargs)

    return _named(method, name)


# Methods that are no single op: spellings of several, or the in-place machinery.
_OTHERS = {
    "__pos__": lambda s: s,
    "expand_as": lambda s, other: movement.expand(s, other.shape),
    "t": _t,
    "T": property(lambda s: permute(s, tuple(reversed(range(s.ndim))))),
    "mT": property(lambda s: transpose(s, -2, -1)),
    "__setitem__": _setitem,
    "fill_": _inplace("fill_", _fill_op),
    "copy_": _inplace("copy_", _fill_op),
    "zero_": _zero_,
    "clamp_": _clamp_,
    "clip_": lambda s, min=None, max=None: _clamp_(s, min, max),  # noqa: A002
    "reshape_as": lambda s, other: movement.reshape(s, tuple(other.shape)),
    "squeeze_": reshaping("squeeze_", movement.squeeze),
    "unsqueeze_": reshaping("unsqueeze_", movement.unsqueeze),
    "transpose_": reshaping("transpose_", transpose),
    "swapaxes_": reshaping("swapaxes_", transpose),
    "swapdims_": reshaping("swapdims_", transpose),
    "t_": reshaping("t_", _t),
    "index_add_": _index_add_,
    "type_as": lambda s, other: s.to(other.dtype),
    **{name: _comparing(name) for name in ("isclose", "allclose", "equal")},
    "is_floating_point": lambda s: s.dtype.kind == "f",
    "is_contiguous": lambda s: bool(s._data.flags.c_contiguous),
    # NOTE: flattened and reshaped back, the data is laid out in C order and the gradient flows
    "contiguous": lambda s: s if s._data.flags.c_contiguous else movement.reshape(
        movement.reshape(s, (-1,)), s.shape),
    **NEW,
    **INFO,  # stride, element_size, is_cuda... (kit/_tensor_info.py)
    **RANDOM,  # multinomial, bernoulli and the in-place random fills (kit/_random.py)
}


def table():
    """Method name -> function (or property), every Tensor operator and method kit.ops defines."""
    methods = _from_registry()
    methods.update(_OTHERS)
    return methods


def install():
    for name, fn in table().items():
        setattr(Tensor, name, fn)
