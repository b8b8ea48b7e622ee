"""Symbolic elementwise expressions: what a fused kernel computes, per element.

An `Expr` stands for "one element of an array". It speaks NumPy's protocols (operators,
`__array_ufunc__` for `np.exp(x)`, `__array_function__` for `np.where`, `astype`), so the very
functions kit runs on arrays build an expression tree when given Exprs instead:

- an elementwise primitive's declared expression form, `op.expr(xp, *operands)` (the registry's
  `expr=`, kit/ops/_registry.py), gives the forward;
- its gradient rule, `rule(node, g, *saved)`, called on Exprs in its first-order (array) form,
  gives the gradient, so a fused backward is derived from the same rules the engine runs.

Each Expr carries a one-element `witness` array computed alongside by NumPy itself, so its dtype
follows NumPy's promotion rules exactly (a float32 times a Python float stays float32). A rule that
looks at the data (`if mask.any():`) cannot be written per element: it raises `NotFusableError`, and
that op is left out of fusion.

>>> import numpy as np
>>> x = Expr.input(0, np.dtype("float32"), (3,))
>>> y = np.tanh(x * 2.0)
>>> y.op, y.dtype, [a.op for a in y.args]
('tanh', dtype('float32'), ['mul'])
"""

from __future__ import annotations

import itertools

import numpy as np

# Ufunc name -> the expression op it becomes (the vocabulary of the code generators).
UFUNCS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div", "divide": "div",
    "power": "pow", "negative": "neg", "exp": "exp", "log": "log", "log1p": "log1p",
    "expm1": "expm1", "sqrt": "sqrt", "tanh": "tanh", "sin": "sin", "cos": "cos",
    "absolute": "abs", "sign": "sign", "isnan": "isnan", "maximum": "max", "minimum": "min",
    "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge", "equal": "eq",
    "not_equal": "ne", "logical_and": "and", "logical_or": "or", "logical_xor": "xor",
    "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor", "logical_not": "not",
    "invert": "not",
}
# expensive to recompute: a fused backward reads these from the forward instead
TRANSCENDENTAL = frozenset({"exp", "log", "log1p", "expm1", "sqrt", "tanh", "sin", "cos", "pow"})
_NUMPY = {op: getattr(np, name) for name, op in UFUNCS.items()}
_NUMPY["where"] = np.where
_IDS = itertools.count()


class NotFusableError(Exception):
    """The computation cannot be written as one per-element expression (it reads the data,
    reduces, or uses a function the code generators do not know)."""


class Expr:
    """One element of an array, symbolically: an op and its arguments (Exprs or Python
    numbers)."""

    __slots__ = ("op", "args", "witness", "shape", "id", "value")
    __array_priority__ = 10_000  # ndarray <op> Expr defers to Expr

    def __init__(self, op, args, witness, shape, value=None):
        self.op = op
        self.args = args
        self.witness = witness
        self.shape = shape
        self.id = next(_IDS)
        self.value = value  # "input": its position

    @classmethod
    def input(cls, index, dtype, shape):
        """Input `index` of a kernel, of this dtype."""
        return cls("input", (), np.ones((), dtype), tuple(shape), index)

    @property
    def dtype(self):
        return self.witness.dtype

    @property
    def ndim(self):
        return len(self.shape)

    # --- building -------------------------------------------------------------------------
    @staticmethod
    def make(op, args, cast=None):
        """The Expr `op(*args)`; its dtype is NumPy's, worked out on the witnesses."""
        shape = next(a.shape for a in args if isinstance(a, Expr))
        values = [a.witness if isinstance(a, Expr) else a for a in args]
        for v in values:
            if not isinstance(v, (np.ndarray, bool, int, float)):
                raise NotFusableError(f"operand of type {type(v).__name__}")
        with np.errstate(all="ignore"):
            witness = np.asarray(_NUMPY[op](*values) if cast is None else values[0].astype(cast))
        return Expr(op, tuple(args), witness, shape)

    def astype(self, dtype, copy=True):
        dtype = np.dtype(dtype)
        return self if dtype == self.dtype else Expr.make("cast", (self,), cast=dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        op = UFUNCS.get(ufunc.__name__)
        if method != "__call__" or op is None or kwargs:
            suffix = "" if method == "__call__" else "." + method
            raise NotFusableError(f"np.{ufunc.__name__}{suffix}")
        return Expr.make(op, inputs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.where and len(args) == 3 and not kwargs:
            return Expr.make("where", args)
        raise NotFusableError(f"np.{func.__name__}")

    def __bool__(self):
        raise NotFusableError("Python branches on the data")

    __hash__ = object.__hash__

    def __repr__(self):
        return f"Expr({self.op}, {self.dtype})"


def _operator(op, reflected=False):
    if reflected:
        return lambda self, other: Expr.make(op, (other, self))
    return lambda self, other: Expr.make(op, (self, other))


for _name, _op in [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                   ("pow", "pow"), ("and", "and"), ("or", "or"), ("xor", "xor")]:
    setattr(Expr, f"__{_name}__", _operator(_op))
    setattr(Expr, f"__r{_name}__", _operator(_op, reflected=True))
for _name, _op in [("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge"), ("eq", "eq"),
                   ("ne", "ne")]:
    setattr(Expr, f"__{_name}__", _operator(_op))
Expr.__neg__ = lambda self: Expr.make("neg", (self,))
Expr.__abs__ = lambda self: Expr.make("abs", (self,))
Expr.__invert__ = lambda self: Expr.make("not", (self,))


def evaluate(expr, values):
    """The value of `expr` with NumPy, inputs taken from `values` (by position): the reference
    the code generators are tested against."""
    done = {}
    for e in topological([expr]):
        if e.op == "input":
            done[e.id] = values[e.value]
            continue
        args = [done[a.id] if isinstance(a, Expr) else a for a in e.args]
        done[e.id] = args[0].astype(e.dtype) if e.op == "cast" else _NUMPY[e.op](*args)
    return done[expr.id]


def topological(roots):
    """Every Expr the roots depend on, each once, arguments before their users (no recursion:
    a chain of 1,000 ops is fine)."""
    order, seen = [], set()
    stack = [(r, False) for r in reversed(roots) if isinstance(r, Expr)]
    while stack:
        e, ready = stack.pop()
        if ready:
            order.append(e)
            continue
        if e.id in seen:
            continue
        seen.add(e.id)
        stack.append((e, True))
        stack.extend((a, False) for a in reversed(e.args)
                     if isinstance(a, Expr) and a.id not in seen)
    return order
