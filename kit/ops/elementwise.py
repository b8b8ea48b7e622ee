"""Elementwise primitives: forward and gradient side by side.

Each rule is `rule(node, g, *saved) -> one gradient per input` (see _record.py). Broadcasting is not
undone here: the engine sums each gradient down to its input's shape.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from kit import backend
from kit._promotion import default_float, result_type
from kit._tensor import Tensor
from kit.engine import OUTPUT
from kit.ops._record import (
    as_dtype_of,
    check_same_device,
    cross,
    data_of,
    dual,
    pair,
    record,
    shape_error,
)
from kit.ops._registry import declare, equality, primitive, reflected, with_alpha

_BOOL = np.dtype(bool)

BROADCAST = (
    "they cannot be broadcast together (aligned from the right, each pair of sizes must be equal "
    "or 1). Fix: reshape or unsqueeze one of them, or reduce it first"
)


def _binary(op, compute, rule, keep, check=None, **names):
    """A binary primitive: `compute(x, y)` forward, `rule(node, g, a, b)`. It saves nothing if
    `keep` is None, both operands if it is True, else its operands pruned by `keep` (see
    record)."""

    def fn(a, b):
        if check is not None:
            check(a, b)
        # NOTE: common cases first (two Tensors of one device and dtype, a Tensor and a Python
        # number that keeps its dtype); pair() does the general case.
        if isinstance(a, Tensor):
            x = a._data
            if isinstance(b, Tensor):
                y = b._data
                if type(x) is not type(y) or x.dtype is not y.dtype:
                    a, b, x, y = pair(a, b, op)
            elif type(b) is int or type(b) is float and x.dtype.kind == "f":
                y = b
            else:
                a, b, x, y = pair(a, b, op)
        elif isinstance(b, Tensor) and (
            type(a) is int or type(a) is float and b._data.dtype.kind == "f"
        ):
            x, y = a, b._data  # a reflected op such as 2 * t or 1 - t
        else:
            a, b, x, y = pair(a, b, op)
        try:
            out = compute(x, y)
        except ValueError:
            raise shape_error(op, x, y, detail=BROADCAST) from None
        except OverflowError:  # a Python int that does not fit the tensor's integer dtype
            a, b, x, y = pair(a, b, op)
            out = compute(x, y)
        if keep is None:
            return record(op, rule, out, (a, b))
        return record(op, rule, out, (a, b), (a, b), None, None if keep is True else keep)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {op} with broadcasting; Python numbers are accepted on either side."
    declared = declare(op, fn, grad=rule, saves="" if keep is None else "a, b",
                       batch="broadcasting", expr=lambda xp, x, y: compute(x, y), **names)
    declared.check = check  # (with_alpha checks the operands before it scales one)
    return declared


def _unary(op, compute, rule, save, floating=True, **names):
    """A unary primitive: `compute(xp, x)` forward, `rule(node, g, saved)`, saving "x" (the
    input), "y" (the output) or "" (nothing). A `floating` op computes an integer or bool input
    in the default float dtype, as PyTorch (exp of int64 is float32; NumPy gives float64)."""
    saves_output = (OUTPUT,) if save == "y" else ()

    def fn(x):
        if not isinstance(x, Tensor):
            raise TypeError(f"kit.{op}: expected a Tensor, got {type(x).__name__}")
        d = x._data
        xp = np if type(d) is np.ndarray else backend.get_array_module(d)
        out = compute(xp, d)
        if out.dtype is not d.dtype and floating and d.dtype.kind in "biu":
            # NOTE: tested after computing (one identity test on the common float path)
            out = compute(xp, d.astype(default_float()))
        return record(op, rule, out, (x,), (x,) if save == "x" else saves_output)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {op}."
    saves = {"x": "x", "y": "output", "": ""}[save]
    names.setdefault("methods", (op,))
    # x.exp_(): each method's in-place form, as PyTorch has them
    names.setdefault("inplace", tuple(m + "_" for m in names["methods"] if m[0] != "_"))
    return declare(op, fn, grad=rule, saves=saves, batch="elementwise", expr=compute, **names)


# --- arithmetic -----------------------------------------------------------------------------
add = _binary(
    "add", lambda x, y: x + y, lambda node, g: (g, g), None,
    methods=("__add__", ("__radd__", reflected), ("add", with_alpha)),
    inplace=("__iadd__", "add_"), fast=operator.iadd, mx=("broadcast_add", "elemwise_add"),
)
def _no_bool(a, b):
    if _BOOL in (getattr(a, "dtype", None), getattr(b, "dtype", None)) or bool in (type(a),
                                                                                   type(b)):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


sub = _binary(
    "sub", lambda x, y: x - y, lambda node, g: (g, -g), None,
    methods=("__sub__", ("__rsub__", reflected), ("sub", with_alpha), ("subtract", with_alpha)),
    inplace=("__isub__", "sub_", "subtract_"), fast=operator.isub,
    mx=("broadcast_sub", "elemwise_sub"),
    check=_no_bool,
)


def _mul_rule(node, g, a, b):
    need = node.next_functions
    return (g * b if need[0] else None, g * a if need[1] else None)


def _div_rule(node, g, a, b):
    need = node.next_functions
    # NOTE: (a / b) / b as PyTorch computes it, not a / (b * b), whose b * b underflows to 0
    # for a tiny b (1e-308) and gives inf where PyTorch's gradient is finite.
    return (g / b if need[0] else None, -g * (a / b / b) if need[1] else None)


def _true_divide(x, y):
    out = x / y
    if _integral(x) and _integral(y):
        out = out.astype(default_float())  # NOTE: int / int is float32 as in PyTorch (NumPy: f64)
    return out


def _integral(v):
    return v.dtype.kind in "biu" if hasattr(v, "dtype") else not isinstance(v, float)


def _dividend_if_needed(saved, edges):
    """`keep` for div: the divisor serves both gradients, the dividend only the divisor's."""
    a, b = saved
    return (a if edges[1] else None, b)


mul = _binary(
    "mul", lambda x, y: x * y, _mul_rule, cross,
    methods=("__mul__", ("__rmul__", reflected), "mul", "multiply"),
    inplace=("__imul__", "mul_", "multiply_"), fast=operator.imul, torch=("mul", "multiply"),
    mx=("broadcast_mul", "elemwise_mul"),
)
div = _binary(
    "div", _true_divide, _div_rule, _dividend_if_needed,
    methods=("__truediv__", ("__rtruediv__", reflected), "div", "divide", "true_divide"),
    inplace=("__itruediv__", "div_", "divide_", "true_divide_"), fast=operator.itruediv,
    torch=("div", "divide", "true_divide"),
    mx=("broadcast_div", "elemwise_div"),
)


def _pow_rule(node, g, a, b, y):
    need = node.next_functions
    ga = None
    if need[0] and getattr(b, "dtype", None) == _BOOL:
        _no_bool(b, 1)  # PyTorch computes b - 1 here, and refuses it for a bool exponent
    if need[0]:
        # NOTE: where b == 0 the gradient is 0, as in PyTorch (not 0 * 0**-1 = nan at a = 0),
        # whatever g is: PyTorch fills 0 after multiplying by g (an inf g gives 0, not NaN)
        if not hasattr(b, "shape"):
            ga = _zeros_like(g) if b == 0 else g * (b * _number_power(a, b - 1))
        else:
            ga = g * (b * a ** (b - 1))
            zero = data_of(b) == 0
            if zero.any():
                ga = where_(zero, 0, ga)
    gb = None
    if need[1]:
        # NOTE: d(a**b)/db = a**b * log(a), as PyTorch: 0 where a == 0 and b >= 0, NaN for a < 0.
        if not hasattr(a, "shape"):
            if a == 0:
                zero = data_of(b) >= 0
                gb = g * (where_(zero, 0, y * (-math.inf)) if hasattr(zero, "shape") else (
                    0 if zero else y * (-math.inf)))
            else:
                gb = g * (y * (math.log(a) if a > 0 else math.nan))
        else:
            zero = (data_of(a) == 0) & (data_of(b) >= 0)
            if not isinstance(a, Tensor) and a.dtype.kind in "biu":
                a = a.astype(g.dtype)  # NOTE: NumPy's log of uint8 is float16; PyTorch's float32
            gb = g * where_(zero, 0, y * log_(a))
    return ga, gb


def _power(xp, x, y):
    """x ** y. NOTE: PyTorch computes ** 0.5 as sqrt and ** -0.5 as 1 / sqrt, which keep the sign
    of -0.0 (-0.0 ** -0.5 is -inf; NumPy's power gives +inf)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 ** -1 is inf, as in PyTorch
        if type(y) is float and y in (0.5, -0.5):
            root = xp.sqrt(x)
            return root if y > 0 else 1 / root
        return x**y


@primitive("pow", grad=_pow_rule, saves="a, b, output", batch="broadcasting",
           methods=("__pow__", ("__rpow__", reflected), "pow"), inplace=("__ipow__", "pow_"),
           torch="pow", mx="power", expr=_power)
def pow(a, b):  # noqa: A001 - PyTorch's name, used as kit.pow
    """Elementwise a ** b (either may be a Python number)."""
    a, b, x, y = pair(a, b, "pow")
    if _BOOL in (getattr(x, "dtype", None), getattr(y, "dtype", None)):
        _broadcastable("pow", x, y)  # PyTorch checks shapes before it refuses bools
    if type(x) is bool and getattr(y, "dtype", None) == _BOOL:
        raise NotImplementedError("\"pow\" not implemented for 'Bool' (kit.pow, as in PyTorch)")
    if getattr(x, "dtype", None) == _BOOL:
        if getattr(y, "dtype", None) == _BOOL or type(y) is not bool:
            raise NotImplementedError("\"pow\" not implemented for 'Bool' (kit.pow, as in "
                                      "PyTorch). Fix: convert first, e.g. x.int() ** y")
        out = x.copy() if y else backend.get_array_module(x).ones_like(x)  # bool ** True/False
        return record("pow", _pow_rule, out, (a, b), _pow_saves(a, b))
    try:
        out = _power(np, x, y)
    except ValueError as exc:
        if "negative integer powers" not in str(exc):
            raise shape_error("pow", x, y, detail=BROADCAST) from None
        if not hasattr(y, "shape"):  # a Python int exponent: refused, as PyTorch refuses it
            raise RuntimeError("kit.pow: Integers to negative integer powers are not allowed. "
                               "Fix: use a float base, e.g. x.float() ** -1") from None
        out = _int_power(x, y)
    return record("pow", _pow_rule, out, (a, b), _pow_saves(a, b))


def _broadcastable(op, x, y):
    if hasattr(x, "shape") and hasattr(y, "shape"):
        try:
            np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            raise shape_error(op, x, y, detail=BROADCAST) from None


def _number_power(a, b):
    """a ** b for a Python number b, on a Tensor or an array (a gradient rule's), as _power."""
    if type(b) is float and b in (0.5, -0.5):
        root = sqrt_(a)
        return root if b > 0 else 1 / root
    return a**b


def _pow_saves(a, b):
    # NOTE: as PyTorch, the output is kept only for a tensor exponent: a number exponent has no
    # gradient, and the base's gradient does not use the output.
    return (a, b, OUTPUT if isinstance(b, Tensor) else None)


def _negate(xp, x):
    if x.dtype == _BOOL:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return -x


def _absolute(xp, x):
    if x.dtype == _BOOL:
        raise NotImplementedError("\"abs\" not implemented for 'Bool' (kit.abs, as in PyTorch)")
    return xp.abs(x)


neg = _unary("neg", _negate, lambda node, g: (-g,), "", floating=False,
             methods=("__neg__", "neg", "negative"), torch=("neg", "negative"), mx="negative")
exp = _unary("exp", lambda xp, x: xp.exp(x), lambda node, g, y: (g * y,), "y",
             torch="exp", mx="exp")
log = _unary("log", lambda xp, x: xp.log(x), lambda node, g, x: (g / x,), "x",
             torch="log", mx="log")
log1p = _unary("log1p", lambda xp, x: xp.log1p(x), lambda node, g, x: (g / (1 + x),), "x",
               torch="log1p", mx="log1p")
expm1 = _unary("expm1", lambda xp, x: xp.expm1(x), lambda node, g, y: (g * (y + 1),), "y",
               torch="expm1", mx="expm1")
sqrt = _unary("sqrt", lambda xp, x: xp.sqrt(x), lambda node, g, y: (g / (2 * y),), "y",
              torch="sqrt", mx="sqrt")
tanh = _unary("tanh", lambda xp, x: xp.tanh(x), lambda node, g, y: (g * (1 - y * y),), "y",
              torch="tanh", mx="tanh")
def _sigmoid(xp, x):
    # NOTE: PyTorch's formula, 1 / (1 + e^-x): exact to a few ulps in both tails (the form
    # 0.5 * (tanh(x / 2) + 1) gave 0 for sigmoid(-20) in float32), and 0 where e^-x overflows
    # (x < -88.7 in float32), as in PyTorch. That overflow is expected: not warned about.
    # NOTE: 0 - x, not -x or x * -1: NumPy refuses to negate a bool array and to multiply a uint8
    # one by -1, both of which PyTorch's sigmoid takes (fn() recomputes them as floats)
    with np.errstate(over="ignore"):
        return 1 / (1 + xp.exp(0 - x))


sigmoid = _unary("sigmoid", _sigmoid, lambda node, g, y: (g * y * (1 - y),), "y",
                 torch="sigmoid", mx="sigmoid")
def _abs_rule(node, g, x):
    # NOTE: the subgradient at 0 is 0 (sign(0) = 0), as in PyTorch. With create_graph the sign is
    # a recorded op (its own gradient is 0), so the gradient requires grad as PyTorch's does.
    if isinstance(x, Tensor):
        return (g * sign(x),)
    xp = backend.get_array_module(x)
    return (g * as_dtype_of(xp.where(x == x, xp.sign(x), 0), g),)  # sign(NaN) is 0, as sign


abs = _unary(  # noqa: A001
    "abs", _absolute, _abs_rule, "x", floating=False,
    methods=("__abs__", "abs", "absolute"), torch=("abs", "absolute"), mx="abs",
)
sin = _unary("sin", lambda xp, x: xp.sin(x), lambda node, g, x: (g * cos_(x),), "x",
             torch="sin", mx="sin")
cos = _unary("cos", lambda xp, x: xp.cos(x), lambda node, g, x: (-g * sin_(x),), "x",
             torch="cos", mx="cos")

log_ = dual(log, "log")
sqrt_ = dual(sqrt, "sqrt")
exp_ = dual(exp, "exp")
sin_ = dual(sin, "sin")
cos_ = dual(cos, "cos")


# --- selection ------------------------------------------------------------------------------
def _extremum_rule(node, g, a, b):
    # NOTE: as PyTorch: where(x == y, g / 2, g) (a tie splits it in half), then exactly 0 on the
    # side that lost (a fill, not a product: an inf or NaN g does not leak to the loser). With a
    # NaN no comparison holds, so both sides get g.
    x, y = data_of(a), data_of(b)
    a_lost, b_lost = (x < y, x > y) if node.params == "max" else (x > y, x < y)
    shared = where_(x == y, g * 0.5, g)  # NOTE: no `if tie.any()`: kit.compile fuses this rule
    need = node.next_functions
    return (where_(a_lost, 0, shared) if need[0] else None,
            where_(b_lost, 0, shared) if need[1] else None)


def _extremum(op):
    def fn(a, b):
        a, b, x, y = pair(a, b, op)
        xp = backend.get_array_module(x, y)
        try:
            out = xp.maximum(x, y) if op == "maximum" else xp.minimum(x, y)
        except ValueError:
            raise shape_error(op, x, y, detail=BROADCAST) from None
        return record(op, _extremum_rule, out, (a, b), (a, b), op[:3])

    fn.__name__ = op
    fn.__doc__ = f"Elementwise {op} of two tensors (gradient split at ties)."
    # kit.torch's maximum/minimum refuse Python numbers, as PyTorch's (kit/torch/_functions.py)
    return declare(op, fn, grad=_extremum_rule, saves="a, b", batch="broadcasting", methods=(op,),
                   mx=op, expr=lambda xp, x, y: getattr(xp, op)(x, y))


maximum = _extremum("maximum")
minimum = _extremum("minimum")


def _where_rule(node, g, cond):
    need = node.next_functions
    zero = 0
    return (
        None,
        where_(cond, g, zero) if need[1] else None,
        where_(cond, zero, g) if need[2] else None,
    )


@primitive("where", grad=_where_rule, saves="condition", batch="broadcasting", torch="where",
           expr=lambda xp, condition, a, b: xp.where(condition, a, b))
def where(condition, a, b):
    """Elements of `a` where `condition` is true, else of `b`; no gradient flows to condition."""
    cond = data_of(condition)
    if cond.dtype.kind != "b":
        raise TypeError(f"kit.where: condition must be a bool tensor, got dtype {cond.dtype}")
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        a, b, x, y = pair(a, b, "where")
    else:
        x, y = a, b
    cond = _condition_on_device(condition, cond, x, y)
    xp = backend.get_array_module(cond, data_of(x), data_of(y))
    try:
        out = _select(xp, cond, x, y)
    except ValueError:
        raise shape_error("where", cond, x, y, detail=BROADCAST) from None
    if not (hasattr(x, "dtype") or hasattr(y, "dtype")):
        # NOTE: two Python numbers: PyTorch's default dtypes (float32, int64), not NumPy's
        out = out.astype(result_type(x, y), copy=False)
    # NOTE: a Tensor condition is kept as itself (PyTorch's WhereBackward0 keeps it), so an
    # in-place change of it before backward is an error, not a silently different gradient.
    return record("where", _where_rule, out, (None, a, b),
                  (condition if isinstance(condition, Tensor) else cond,))


def _condition_on_device(condition, cond, x, y):
    """A NumPy condition follows GPU data there (as NumPy operands do, see `constant`); a Tensor
    condition on another device is an error, as in PyTorch."""
    dx, dy = data_of(x), data_of(y)
    if type(cond) is type(dx) is np.ndarray and type(dy) in (np.ndarray, int, float, bool):
        return cond  # all on the CPU: the common case, kept cheap (relu goes through here)
    devices = {backend.device_of(v) for v in (dx, dy) if hasattr(v, "shape")}
    if not devices or backend.device_of(cond) in devices:
        return cond
    if isinstance(condition, Tensor):
        check_same_device("where", cond, *(v for v in (dx, dy) if hasattr(v, "shape")))
    return backend.to_device(cond, devices.pop())


def where_(cond, a, b):
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return where(cond, a, b)
    return _select(backend.get_array_module(cond), cond, a, b)


def _select(xp, cond, a, b):
    """xp.where(cond, a, b); when one side is the number 0 (relu and its gradient), a faster
    equivalent on NumPy arrays."""
    if type(b) in (int, float) and b == 0:
        kept = _keep_or_zero(cond, a)
    elif type(a) in (int, float) and a == 0:
        kept = _keep_or_zero(~cond, b) if type(cond) is np.ndarray else None
    else:
        kept = None
    return xp.where(cond, a, b) if kept is None else kept


def _keep_or_zero(cond, x):
    """np.where(cond, x, 0) bit for bit (kept elements unchanged, the others +0.0), or None.

    NOTE: np.where with an irregular mask is about 3x slower than masking the bits: view the
    floats as same-size integers and AND them with 0 or -1 (all bits set).
    """
    if (type(x) is not np.ndarray or type(cond) is not np.ndarray or x.dtype.kind != "f"
            or cond.dtype.kind != "b" or cond.shape != x.shape or x.size < 2048):
        return None  # below ~2,000 elements np.where's lower call overhead wins
    ints = np.dtype(f"i{x.dtype.itemsize}")
    out = np.empty_like(x)  # owns its memory (not a view), like np.where's result
    mask = out.view(ints)
    np.copyto(mask, cond)
    np.negative(mask, out=mask)
    np.bitwise_and(x.view(ints), mask, out=mask)
    return out


def _clamp_rule(node, g, x, lo, hi):
    # NOTE: as PyTorch's clamp_backward: x gets g inside [min, max] (bounds included, a NaN is
    # outside); a Tensor bound gets g where it was the answer: min where x < min (and min < max),
    # max where x > max (or max < min, where clamp gives max). Written without a ones() array so
    # that kit.compile can differentiate it per element.
    d, low, high = data_of(x), data_of(lo), data_of(hi)
    need = node.next_functions
    g_x = g_lo = g_hi = None
    if need[0]:
        if lo is None:
            inside = d <= high
        elif hi is None:
            inside = d >= low
        else:
            inside = (d >= low) & (d <= high)
        g_x = where_(inside, g, 0)
    if need[1]:
        below = d < low
        g_lo = where_(below & (low < high) if hi is not None else below, g, 0)
    if need[2]:
        above = d > high
        g_hi = where_(above | (high < low) if lo is not None else above, g, 0)
    return g_x, g_lo, g_hi


def _clamped(xp, x, lo, hi):
    out = x if lo is None else xp.maximum(x, lo)
    return out if hi is None else xp.minimum(out, hi)


@primitive("clamp", grad=_clamp_rule, saves="x, min, max", batch="broadcasting",
           methods=("clamp", "clip"), torch=("clamp", "clip"), expr=_clamped)
def clamp(x, min=None, max=None):  # noqa: A002 - PyTorch's keyword names
    """Limit values to [min, max] (numbers or Tensors, which get gradients too); the gradient is
    1 inside (bounds included), 0 outside."""
    if min is None and max is None:
        raise ValueError("kit.clamp: at least one of min and max must be given")
    lo, hi = data_of(min), data_of(max)
    xp = backend.get_array_module(x._data)
    out = x._data
    dtype = result_type(out, lo, hi)  # as PyTorch: an int tensor with float bounds gives float32
    if out.dtype != dtype:
        out = out.astype(dtype)
    # (Tensor bounds in that dtype too: NumPy would promote float32 and int64 to float64)
    lo, hi = (v.astype(dtype) if getattr(v, "dtype", dtype) != dtype else v for v in (lo, hi))
    try:
        out = _clamped(xp, out, lo, hi)
    except ValueError:
        raise shape_error("clamp", *(v for v in (x._data, lo, hi) if v is not None),
                          detail=BROADCAST) from None
    if out is x._data:
        out = out.copy()
    # NOTE: Tensor bounds are inputs (PyTorch's ClampBackward0 keeps them: an in-place change
    # before backward is an error); numbers are constants (ClampBackward1 keeps x alone).
    return record("clamp", _clamp_rule, out, (x, min, max), (x, min, max))


def _int_power(x, y):
    """x ** y for integer arrays with negative exponents, as PyTorch computes it (NumPy refuses):
    1 ** n = 1, (-1) ** n = +-1, and 0 for any other base (0 ** -n too)."""
    xp = backend.get_array_module(x, y)
    negative = y < 0
    safe = xp.where(negative, 0, y)
    out = x ** safe
    odd = (xp.abs(y) % 2) == 1
    at_negative = xp.where(x == 1, 1, xp.where(x == -1, xp.where(odd, -1, 1), 0))
    return xp.where(negative, at_negative, out).astype(out.dtype)


# --- comparisons: boolean results, never differentiable (logic: kit/ops/bitwise.py) -------
def _compare(op, compute, operators, alias=None):
    """A comparison `op` (and its NumPy-style `alias`, torch.greater for gt): the operator, the
    method, its in-place form (which writes 1 and 0 in the tensor's own dtype) and kit.torch's
    function."""
    names = (op,) if alias is None else (op, alias)

    def fn(a, b):
        a, b, x, y = pair(a, b, op)
        try:
            return Tensor(compute(x, y))
        except ValueError:
            raise shape_error(op, x, y, detail=BROADCAST) from None

    fn.__name__ = op
    fn.__doc__ = f"Elementwise {op} comparison: a bool tensor with no gradient."
    return declare(op, fn, batch="broadcasting", expr=lambda xp, x, y: compute(x, y),
                   methods=operators + names, inplace=tuple(n + "_" for n in names),
                   torch=names)


eq = _compare("eq", lambda x, y: x == y, (("__eq__", equality(False)),))
ne = _compare("ne", lambda x, y: x != y, (("__ne__", equality(True)),), "not_equal")
lt = _compare("lt", lambda x, y: x < y, ("__lt__",), "less")
le = _compare("le", lambda x, y: x <= y, ("__le__",), "less_equal")
gt = _compare("gt", lambda x, y: x > y, ("__gt__",), "greater")
ge = _compare("ge", lambda x, y: x >= y, ("__ge__",), "greater_equal")


def _classify(op, compute):
    def fn(x):
        d = x._data
        return Tensor(compute(backend.get_array_module(d), d))

    fn.__name__ = op
    fn.__doc__ = f"Elementwise {op}: a bool tensor with no gradient (integers are finite)."
    return declare(op, fn, batch="elementwise", methods=(op,), torch=op)


isnan = _classify("isnan", lambda xp, d: xp.isnan(d))
isinf = _classify("isinf", lambda xp, d: xp.isinf(d))
isfinite = _classify("isfinite", lambda xp, d: xp.isfinite(d))


def _zeros_like(g):
    """A zero gradient of g's shape and dtype (not g * 0: an inf or NaN g gives 0, not NaN)."""
    d = data_of(g)
    zeros = backend.get_array_module(d).zeros_like(d)
    return Tensor(zeros) if isinstance(g, Tensor) else zeros


def _sign_rule(node, g):
    # NOTE: 0 almost everywhere; recorded all the same, as PyTorch's SignBackward0, whose
    # gradient is zeros
    return (_zeros_like(g),)


def _signs(xp, d):
    if d.dtype.kind != "f":
        return xp.sign(d)
    return xp.where(xp.isnan(d), 0, xp.sign(d)).astype(d.dtype)  # NOTE: sign(nan) is 0, as PyTorch


@primitive("sign", grad=_sign_rule, batch="elementwise", methods=("sign",), inplace=("sign_",),
           torch="sign", expr=_signs)
def sign(x):
    """Sign of each element; recorded with a zero gradient (as PyTorch). bool stays bool."""
    d = x._data
    if d.dtype == _BOOL:
        return Tensor(d.copy())
    out = _signs(backend.get_array_module(d), d)
    if d.dtype.kind != "f":
        return Tensor(out)
    return record("sign", _sign_rule, out, (x,))
