"""The primitive set, one module per family, and the Tensor methods that call it.

Primitives (own gradient code): elementwise, reductions, movement, linalg.
Composites (none): sorting.sort/index_add,
composite.relu/softmax/log_softmax/cross_entropy/mse_loss, linalg.outer and every method below
that is spelt with other ops.
"""

from __future__ import annotations

import operator

from kit._inplace import _clamp_, _clone, _fill_op, _index_add_, _inplace, _setitem, _zero_
from kit._tensor import Tensor
from kit.ops import composite, elementwise, linalg, movement, reductions, sorting, view_ops
from kit.ops.composite import cross_entropy, log_softmax, mse_loss, relu, softmax
from kit.ops.elementwise import (
    abs,
    add,
    clamp,
    cos,
    div,
    eq,
    exp,
    ge,
    gt,
    le,
    log,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    sigmoid,
    sign,
    sin,
    sqrt,
    sub,
    tanh,
    where,
)
from kit.ops.linalg import dot, matmul, mm, outer
from kit.ops.movement import (
    broadcast_to,
    cat,
    concatenate,
    expand,
    flatten,
    getitem,
    index_put,
    index_put_add,
    movedim,
    permute,
    reshape,
    squeeze,
    stack,
    transpose,
    unsqueeze,
)
from kit.ops.reductions import argmax, argmin, logsumexp, max, mean, min, sum
from kit.ops.sorting import argsort, index_add, sort
from kit.ops.view_ops import (  # noqa: F401 - published through __all__ += below
    chunk,
    diagonal,
    narrow,
    split,
    unbind,
    view,
    view_as,
)

__all__ = [
    "abs", "add", "argmax", "argmin", "argsort", "broadcast_to", "cat", "clamp", "composite",
    "concatenate", "cos", "cross_entropy", "div", "dot", "elementwise", "eq", "exp", "expand",
    "flatten", "ge", "getitem", "gt", "index_add", "index_put", "index_put_add", "le", "linalg",
    "log", "log_softmax", "logical_and", "logical_not", "logical_or", "logical_xor", "logsumexp",
    "lt", "matmul", "max", "maximum", "mean", "min", "minimum", "mm", "movedim", "movement",
    "mse_loss", "mul", "ne", "neg", "outer", "permute", "pow", "reductions", "relu", "reshape",
    "sigmoid", "sign", "sin", "softmax", "sort", "sorting", "sqrt", "squeeze", "stack", "sub",
    "sum", "tanh", "transpose", "unsqueeze", "where",
]


# --- methods with PyTorch and NumPy spellings -----------------------------------------------
def _axis(dim, axis):
    return axis if axis is not None else dim


def _keep(keepdim, keepdims):
    return keepdims if keepdims is not None else keepdim


def _reduction(fn):
    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return fn(self, _axis(dim, axis), _keep(keepdim, keepdims))

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _softmax_method(fn):
    def method(self, dim=-1):
        return fn(self, dim)

    return method


def _with_alpha(op):
    """PyTorch's `x.add(y, alpha=a)`, x + a * y; the scaling is an op, so it is differentiable."""

    def method(self, other, alpha=1):
        return op(self, other if alpha == 1 else mul(other, alpha))

    method.__name__ = op.__name__
    return method


_add_alpha = _with_alpha(add)
_sub_alpha = _with_alpha(sub)


def _equality(fn, answer):
    """`t == other` / `t != other`; with a non-operand (None, a string) PyTorch's plain answer
    instead of an error, so that `t in [None, "a"]` works."""

    def method(self, other):
        try:
            return fn(self, other)
        except TypeError:  # raised only for an unsupported operand type
            return answer

    method.__name__ = f"__{fn.__name__}__"
    return method


_METHODS = {
    # arithmetic
    "__add__": add, "__radd__": lambda s, o: add(o, s), "add": _add_alpha,
    "__sub__": sub, "__rsub__": lambda s, o: sub(o, s), "sub": _sub_alpha,
    "__mul__": mul, "__rmul__": lambda s, o: mul(o, s), "mul": mul,
    "__truediv__": div, "__rtruediv__": lambda s, o: div(o, s), "div": div,
    "__pow__": pow, "__rpow__": lambda s, o: pow(o, s), "pow": pow,
    "__neg__": neg, "neg": neg, "__pos__": lambda s: s, "__abs__": abs, "abs": abs,
    "__matmul__": matmul, "__rmatmul__": lambda s, o: matmul(o, s), "matmul": matmul,
    "mm": mm, "dot": dot,
    "exp": exp, "log": log, "sqrt": sqrt, "tanh": tanh, "sigmoid": sigmoid, "sin": sin,
    "cos": cos, "relu": relu, "sign": sign, "clamp": clamp, "clip": clamp,
    "maximum": maximum, "minimum": minimum,
    # comparisons and logic
    "__eq__": _equality(eq, False), "__ne__": _equality(ne, True),
    "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
    "__and__": logical_and, "__or__": logical_or, "__xor__": logical_xor,
    "__invert__": logical_not,
    # reductions
    "sum": _reduction(sum), "mean": _reduction(mean), "max": _reduction(max),
    "min": _reduction(min), "logsumexp": _reduction(logsumexp),
    "argmax": _reduction(argmax), "argmin": _reduction(argmin),
    "softmax": _softmax_method(softmax), "log_softmax": _softmax_method(log_softmax),
    # movement
    "reshape": reshape, "permute": permute, "movedim": movedim,
    "transpose": transpose, "swapaxes": transpose, "unsqueeze": unsqueeze, "squeeze": squeeze,
    "flatten": flatten, "expand": expand, "broadcast_to": broadcast_to,
    "expand_as": lambda s, other: expand(s, other.shape),
    "t": lambda s: transpose(s, 0, 1) if s.ndim == 2 else s,
    "T": property(lambda s: permute(s, tuple(reversed(range(s.ndim))))),
    "mT": property(lambda s: transpose(s, -2, -1)),
    "__getitem__": getitem, "__setitem__": _setitem,
    "sort": lambda s, dim=-1, descending=False: sort(s, dim, descending),
    "argsort": lambda s, dim=-1, descending=False: argsort(s, dim, descending),
    "index_add": index_add, "clone": _clone, "astype": movement.astype,
    # in place
    "__iadd__": _inplace("__iadd__", add, operator.iadd),
    "__isub__": _inplace("__isub__", sub, operator.isub),
    "__imul__": _inplace("__imul__", mul, operator.imul),
    "__itruediv__": _inplace("__itruediv__", div, operator.itruediv),
    "add_": _inplace("add_", _add_alpha, operator.iadd),
    "sub_": _inplace("sub_", _sub_alpha, operator.isub),
    "mul_": _inplace("mul_", mul, operator.imul),
    "div_": _inplace("div_", div, operator.itruediv),
    "fill_": _inplace("fill_", _fill_op),
    "copy_": _inplace("copy_", _fill_op),
    "zero_": _zero_, "clamp_": _clamp_, "index_add_": _index_add_,
}

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
for _name in view_ops.__all__:  # view, view_as, narrow, unbind, split, chunk, diagonal
    setattr(Tensor, _name, getattr(view_ops, _name))
__all__ += view_ops.__all__
del _name, _fn
