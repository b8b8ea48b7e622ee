"""The primitive set, one module per family, and the Tensor methods that call it.

Primitives (own gradient code): elementwise, reductions, movement, linalg.
Composites (none): sorting.sort/index_add,
composite.relu/softmax/log_softmax/cross_entropy/mse_loss, linalg.outer and every method below
that is spelt with other ops.
"""

from __future__ import annotations

import operator

from kit._tensor import Tensor, bump_version
from kit.grad_mode import STATE
from kit.ops import composite, elementwise, linalg, movement, reductions, sorting
from kit.ops._record import data_of
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


# --- in-place operations --------------------------------------------------------------------
def _recording(t, other=None):
    return STATE.enabled and (
        t.requires_grad or (isinstance(other, Tensor) and other.requires_grad)
    )


def _alias(t):
    """A second Tensor object for t's current value and history, with its own version.

    The out-of-place op saves this alias, so the in-place change of `t` that follows cannot
    corrupt what backward needs.
    """
    if t.grad_fn is None and t.requires_grad:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. Fix: "
            "do the update under `with kit.no_grad():`, or use an out-of-place op (x = x + 1)"
        )
    old = Tensor(t._data)
    old.requires_grad, old.grad_fn, old._nr, old._edge = t.requires_grad, t.grad_fn, t._nr, t._edge
    old._vc = [t._vc[0]]
    return old


def _rebase(t, result):
    """Make `t` hold `result`'s value and history (the in-place op's output)."""
    if result.dtype != t.dtype:
        result = movement.astype(result, t.dtype)
    t._data = result._data
    t.grad_fn, t._nr, t._edge = result.grad_fn, result._nr, result._edge
    t.requires_grad = result.requires_grad
    bump_version(t)
    return t


def _shape_error(name, t, other_shape):
    return RuntimeError(
        f"kit.{name}: an in-place op cannot change the shape of the tensor it writes into: "
        f"shapes {list(t.shape)} and {list(other_shape)} do not broadcast to {list(t.shape)}. "
        f"Fix: use the out-of-place form (x = x + y)"
    )


def _check_writeable(name, t):
    if not getattr(getattr(t._data, "flags", None), "writeable", True):
        raise RuntimeError(
            f"kit.{name}: this tensor is a read-only view (from expand or broadcast_to: several "
            f"elements share one memory location). Fix: .clone() it before changing it in place"
        )


def _inplace(name, op, fast=None):
    """An in-place method: fast NumPy in-place update when nothing records, else rebase."""

    def method(self, other, *args, **kwargs):
        if not _recording(self, other):
            if fast is not None and not args and not kwargs:
                value = data_of(other)
                try:
                    self._data = fast(self._data, value)
                except TypeError as exc:  # NumPy's casting error, e.g. int tensor += float
                    raise TypeError(f"kit.{name}: {exc}") from None
                except ValueError as exc:  # a shape that does not fit, or a read-only view
                    _check_writeable(name, self)
                    if "broadcast" not in str(exc):
                        raise
                    raise _shape_error(name, self, getattr(value, "shape", ())) from None
            else:
                _check_writeable(name, self)
                self._data[...] = op(Tensor(self._data), other, *args, **kwargs)._data
            bump_version(self)
            return self
        result = op(_alias(self), other, *args, **kwargs)
        if result.shape != self.shape:
            raise _shape_error(name, self, getattr(other, "shape", ()))
        return _rebase(self, result)

    method.__name__ = name
    return method


def _fill_op(t, value):
    return index_put(t, Ellipsis, value)


def _zero_(self):
    return Tensor.fill_(self, 0)


def _setitem(self, index, value):
    if not _recording(self, value):
        v = data_of(value)
        if hasattr(v, "shape"):
            from kit.ops._record import check_same_device

            check_same_device("setitem", self._data, v)
        index = movement._index_arg(index)
        _check_writeable("setitem", self)
        self._data[index] = v
        bump_version(self)
        return
    _rebase(self, index_put(_alias(self), index, value))


def _index_add_(self, dim, index, source, alpha=1):
    op = lambda t, src: index_add(t, dim, index, src, alpha)  # noqa: E731
    return _inplace("index_add_", op)(self, source)


def _clamp_(self, min=None, max=None):  # noqa: A002
    op = lambda t, _: clamp(t, min, max)  # noqa: E731
    return _inplace("clamp_", op)(self, None)


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


def _clone(self):
    """A copy that stays in the graph (gradients flow back to the original)."""
    return self * 1 if self.requires_grad and STATE.enabled else Tensor(self._data.copy())


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
    "reshape": reshape, "view": reshape, "permute": permute, "movedim": movedim,
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
del _name, _fn
