"""Elementwise maths real programs call that kit lacked: tan, the inverse hyperbolic functions,
erfc, exp2, logaddexp(2), xlogy, logit, sinc, copysign, fmax/fmin, float_power, nansum...

Primitives (forward and gradient side by side) where PyTorch's gradient differs from a
composite's at the edges (logaddexp of two infinities, xlogy at x = 0, logit at 0 and 1) or a
composite would lose digits (erfc's tail, tan as sin / cos); the rest are composites of kit's
ops, with no gradient code.
"""

from __future__ import annotations

import math

import numpy as np

from kit import backend
from kit._promotion import default_float, result_type
from kit._tensor import Tensor
from kit.engine import OUTPUT
from kit.ops._record import dual, pair, record, shape_error
from kit.ops._registry import composite, dims, primitive
from kit.ops.bitwise import logical_or
from kit.ops.elementwise import (
    BROADCAST,
    _binary,
    _classify,
    _unary,
    _zeros_like,
    cos_,
    exp_,
    isnan,
    pow,  # noqa: A004 - kit's pow
    sin_,
    where,
    where_,
)
from kit.ops.elementwise_math import _floating, sqrt_
from kit.ops.movement import astype, broadcast_shapes
from kit.ops.nn import _TWO_OVER_SQRT_PI
from kit.ops.reductions import all_if_none
from kit.ops.reductions import sum as sum_

_LN2 = math.log(2.0)


# --- one operand -----------------------------------------------------------------------------
tan = _unary("tan", lambda xp, x: xp.tan(x), lambda node, g, y: (g * (1 + y * y),), "y",
             torch="tan")
exp2 = _unary("exp2", lambda xp, x: xp.exp2(x), lambda node, g, y: (g * y * _LN2,), "y",
              torch="exp2")
exp2_ = dual(exp2, "exp2")


def _no_inplace_derivative(fn):
    """The op `x.asinh_()` runs: asinh, then, where it records, one more node whose backward
    raises, as PyTorch 2.13's (it has no derivative for the in-place forms of asinh, acosh and
    atanh; the out-of-place ones have one)."""

    def inplace_op(x):
        out = fn(x)
        if not out.requires_grad:
            return out
        return record(f"{fn.__name__}_", _no_derivative_rule, out._data.copy(), (out,),
                      params=fn.__name__)

    return inplace_op


def _no_derivative_rule(node, g):
    raise NotImplementedError(f"the derivative for 'inplace version of {node.params}' is not "
                              f"implemented (kit.{node.params}_, as in PyTorch). Fix: "
                              f"x = x.{node.params}() out of place")


def _hyperbolic(op, compute, rule):
    alias = "arc" + op[1:]  # asinh: arcsinh, as NumPy spells it
    return _unary(op, compute, rule, "x", methods=(op, alias), torch=(op, alias),
                  inplace=((op + "_", _no_inplace_derivative), (alias + "_",
                                                               _no_inplace_derivative)))


# NOTE: acosh's derivative is infinite at 1 and atanh's at +-1, NaN outside their domains, as
# in PyTorch
asinh = _hyperbolic("asinh", lambda xp, x: xp.arcsinh(x),
                    lambda node, g, x: (g / sqrt_(x * x + 1),))
acosh = _hyperbolic("acosh", lambda xp, x: xp.arccosh(x),
                    lambda node, g, x: (g / sqrt_(x * x - 1),))
atanh = _hyperbolic("atanh", lambda xp, x: xp.arctanh(x),
                    lambda node, g, x: (g / (1 - x * x),))

def _per_element(python_fn, cupyx_name):
    """A forward from a function of Python's math, element by element on the CPU (NumPy has
    none), from cupyx.scipy.special on the GPU; integers computed in the default float."""
    on_cpu = np.frompyfunc(python_fn, 1, 1)

    def forward(xp, x):
        if x.dtype.kind != "f":
            x = x.astype(default_float())
        if backend.device_of(x) == "cpu":
            return np.asarray(on_cpu(x), dtype=x.dtype)
        import cupyx.scipy.special  # pragma: no cover - the GPU (or tests/fake_cupy.py)

        return getattr(cupyx.scipy.special, cupyx_name)(x)

    return forward


_erfc = _per_element(math.erfc, "erfc")


# 1 - erf(x) would round to 0 from x = 4 in float32 (erfc(4) = 1.5e-8): computed directly
erfc = _unary("erfc", _erfc, lambda node, g, x: (-g * _TWO_OVER_SQRT_PI * exp_(-(x * x)),),
              "x", torch="erfc")


# --- lgamma and digamma (NumPy has neither; Python's math has lgamma) ------------------------
def _lgamma_of(v):
    try:
        return math.lgamma(v)
    except ValueError:  # a pole (0, -1, -2...): +inf, as PyTorch
        return math.inf


_lgamma = _per_element(_lgamma_of, "gammaln")


def _shifted_up(xp, x, term):
    """(y, sum of term(x + k) for the k that bring x to 10 or more): the recurrences of
    digamma and trigamma, so that their asymptotic series are exact to double precision."""
    y, total = x, xp.zeros_like(x)
    for _ in range(10):
        small = y < 10
        total = total + xp.where(small, term(xp.where(small, y, 1.0)), 0.0)
        y = xp.where(small, y + 1, y)
    return y, total


def _digamma(xp, x):
    """digamma(x) = d lgamma(x) / dx: reflected below 1/2 (psi(1 - x) - pi / tan(pi x)),
    recurred up to 10, then its asymptotic series; -1/x at +-0, NaN at the negative integers
    and -inf, as PyTorch."""
    if x.dtype.kind != "f":
        x = x.astype(default_float())
    d = x.astype(np.float64)  # (float32 would lose digits near the poles, where PyTorch's not)
    reflect = d < 0.5
    y, total = _shifted_up(xp, xp.where(reflect, 1 - d, d), lambda v: 1 / v)
    inv2 = 1 / (y * y)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    psi = xp.log(y) - 0.5 / y - series - total
    psi = xp.where(reflect, psi - math.pi / xp.tan(math.pi * d), psi)
    pole = (d < 0) & (d == xp.floor(d))  # (also -inf)
    psi = xp.where(pole, math.nan, xp.where(d == 0, -1 / xp.where(d == 0, d, 1.0), psi))
    return psi.astype(x.dtype, copy=False)


_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66)  # B2, B4, ... B10


def _polygamma_array(n, xp, x):
    """polygamma(n, x), the n-th derivative of digamma (n = 1, 2), in x's own dtype (as
    PyTorch: at float32's poles it gives float32's values): reflected below 1/2, recurred up to
    10, then its asymptotic series in the Bernoulli numbers."""
    reflect = x < 0.5
    y, total = _shifted_up(xp, xp.where(reflect, 1 - x, x), lambda v: v ** -(n + 1))
    series = math.factorial(n - 1) / y**n + math.factorial(n) / (2 * y ** (n + 1))
    for k, b in enumerate(_BERNOULLI, start=1):
        series = series + b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / y ** (
            2 * k + n)
    out = (-1) ** (n + 1) * (series + math.factorial(n) * total)  # at 1 - x where reflected
    s = xp.sin(math.pi * x)
    if n == 1:  # psi1(x) + psi1(1 - x) = pi^2 / sin^2(pi x)
        reflected = (math.pi / s) ** 2 - out
    else:  # psi2(1 - x) - psi2(x) = 2 pi^3 cos(pi x) / sin^3(pi x)
        reflected = out - 2 * math.pi**3 * xp.cos(math.pi * x) / s**3
    return xp.where(reflect, reflected, out).astype(x.dtype, copy=False)


def _polygamma_rule(node, g, x):
    n = node.params
    if n >= 2:
        raise NotImplementedError("kit.digamma: its third derivative (polygamma(3, x)) is not "
                                  "implemented in kit (PyTorch has one). Fix: differentiate "
                                  "digamma at most twice")
    return (g * _polygamma(n + 1, x),)


def _polygamma(n, x):
    """polygamma(n, x) of an array, or of a Tensor as a node (create_graph differentiates
    digamma's gradient)."""
    if isinstance(x, Tensor):
        d = x._data
        return record("polygamma", _polygamma_rule, _polygamma_array(
            n, backend.get_array_module(d), d), (x,), (x,), n)
    return _polygamma_array(n, backend.get_array_module(x), x)


digamma = _unary("digamma", _digamma, lambda node, g, x: (g * _polygamma(1, x),), "x",
                 torch="digamma")
lgamma = _unary("lgamma", _lgamma, lambda node, g, x: (g * (
    digamma(x) if isinstance(x, Tensor) else _digamma(backend.get_array_module(x), x)),), "x",
    torch="lgamma")


def _logit_rule(node, g, x):
    # NOTE: PyTorch's LogitBackward0: 1 / (x (1 - x)), infinite at 0 and 1; without eps NaN
    # outside [0, 1]; with eps 0 outside [eps, 1 - eps] (where the input was clamped)
    eps = node.params
    gx = g / (x * (1 - x) + 0.0)  # (+ 0.0: at -0.0 the gradient is +inf, as PyTorch's)
    if eps is None:
        return (where_((x < 0) | (x > 1), math.nan, gx),)
    return (where_((x < eps) | (x > 1 - eps), 0, gx),)


@primitive("logit", grad=_logit_rule, saves="x", batch="elementwise", methods=("logit",),
           inplace=("logit_",), torch="logit")
def logit(x, eps=None):
    """log(x / (1 - x)), the inverse of sigmoid; with `eps`, x is first clamped to
    [eps, 1 - eps] (so 0 and 1 give finite values)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.logit: expected a Tensor, got {type(x).__name__}")
    d = x._data
    if d.dtype.kind != "f":
        d = d.astype(default_float())
    xp = backend.get_array_module(d)
    if eps is not None:
        d = xp.clip(d, eps, 1 - eps)
    out = xp.log(d / (1 - d))
    return record("logit", _logit_rule, out, (x,), (x,), eps)


def _sinc_rule(node, g, x):
    # NOTE: PyTorch's SincBackward0 formula, (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at 0:
    # the chain rule through sin(s) / s cancels differently (3% apart near 0 in float32)
    s = x * math.pi
    return (g * where_(x == 0, 0, (s * cos_(s) - sin_(s)) / (s * x)),)


def _sinc(xp, x):
    if x.dtype.kind != "f":
        x = x.astype(default_float())
    s = x * math.pi
    return xp.where(x == 0, 1, xp.sin(s) / xp.where(x == 0, 1, s)).astype(x.dtype, copy=False)


sinc = _unary("sinc", _sinc, _sinc_rule, "x", torch="sinc")


@composite("positive", methods=("positive",), torch="positive")
def positive(x):
    """x itself (the same Tensor, as torch.positive); refused for bool, as `+` is."""
    if x.dtype == np.bool_:
        raise RuntimeError("kit.positive: the `+` operator, on a bool tensor is not supported "
                           "(as in PyTorch). Fix: x.int()")
    return x


@composite("deg2rad", methods=("deg2rad",), inplace=("deg2rad_",), torch="deg2rad")
def deg2rad(x):
    """Degrees to radians; integers give the default float dtype."""
    return x * (math.pi / 180)


@composite("rad2deg", methods=("rad2deg",), inplace=("rad2deg_",), torch="rad2deg")
def rad2deg(x):
    """Radians to degrees; integers give the default float dtype."""
    return x * (180 / math.pi)


def _real(op, compute):
    """A bool classification of a real tensor (no gradient); integers have no sign bit to
    test as floats do, nor an infinity."""
    return _classify(op, lambda xp, d: compute(xp, d) if d.dtype.kind in "fi" else
                     xp.zeros(d.shape, dtype=bool))


signbit = _real("signbit", lambda xp, d: xp.signbit(d))
isposinf = _real("isposinf", lambda xp, d: d == math.inf)
isneginf = _real("isneginf", lambda xp, d: d == -math.inf)
isreal = _classify("isreal", lambda xp, d: xp.ones(d.shape, dtype=bool))


# --- two operands ----------------------------------------------------------------------------
def _float_tensors(op):
    """PyTorch's logaddexp takes two Tensors (TypeError for a number) of a floating type once
    promoted (NotImplementedError for two integer tensors), shapes checked first."""

    def check(a, b):
        for name, v in (("input", a), ("other", b)):
            if not isinstance(v, Tensor):
                raise TypeError(f"kit.{op}(): argument '{name}' must be Tensor, not "
                                f"{type(v).__name__}. Fix: kit.tensor({v!r})")
        if a.dtype.kind != "f" and b.dtype.kind != "f":
            broadcast_shapes(a.shape, b.shape)  # (PyTorch's RuntimeError for the shapes first)
            dtype = result_type(a._data, b._data)
            raise NotImplementedError(f"\"{op}\" not implemented for {dtype} (kit.{op}, as in "
                                      f"PyTorch). Fix: convert first, e.g. x.float()")

    return check


def _no_bool_operand(op, a, b):
    if np.bool_ in (getattr(a, "dtype", None), getattr(b, "dtype", None)):
        raise RuntimeError(f"Subtraction, the `-` operator, with a bool tensor is not supported "
                           f"(kit.{op}, backward, as in PyTorch: its gradient subtracts the "
                           f"operands). Fix: {op}(x, y.float())")


def _logaddexp_rule(node, g, a, b):
    # NOTE: PyTorch's formula, g / (1 + e^(b - a)): NaN where a and b are the same infinity
    need = node.next_functions
    _no_bool_operand("logaddexp", a, b)
    return (g / (1 + exp_(b - a)) if need[0] else None,
            g / (1 + exp_(a - b)) if need[1] else None)


def _logaddexp2_rule(node, g, a, b):
    need = node.next_functions
    _no_bool_operand("logaddexp2", a, b)
    return (g / (1 + exp2_(b - a)) if need[0] else None,
            g / (1 + exp2_(a - b)) if need[1] else None)


logaddexp = _binary("logaddexp", lambda x, y: backend.get_array_module(x).logaddexp(x, y),
                    _logaddexp_rule, True, _float_tensors("logaddexp"), methods=("logaddexp",),
                    torch="logaddexp")
logaddexp2 = _binary("logaddexp2", lambda x, y: backend.get_array_module(x).logaddexp2(x, y),
                     _logaddexp2_rule, True, _float_tensors("logaddexp2"),
                     methods=("logaddexp2",), torch="logaddexp2")


def _xlogy(xp, x, y):
    """x * log(y), and 0 where x is 0 (unless y is NaN), as torch.xlogy."""
    # a number's log in x's dtype (NumPy's would be float64); in the gradient, an integer y's
    # in g's (NumPy's log of uint8 is float16)
    if not hasattr(y, "dtype") or y.dtype.kind != "f":
        y = xp.asarray(y, dtype=x.dtype)
    return xp.where((x == 0) & (y == y), 0, x * xp.log(y))


def _xlogy_rule(node, g, a, b):
    # NOTE: PyTorch's XlogyBackward0: xlogy(g, y), set to 0 where x == 0 and y <= 0 (there
    # log y is -inf or NaN); for y, g * x / y
    need = node.next_functions
    gx = gy = None
    if need[0]:
        gx = xlogy(g, b) if isinstance(g, Tensor) else _xlogy(_array_module(g, b), g, b)
        gx = where_((a == 0) & (b <= 0), 0, gx)
    if need[1]:
        gy = g * a / b
    return gx, gy


def _array_module(*values):
    return backend.get_array_module(*(v for v in values if hasattr(v, "shape")))


xlogy = _binary("xlogy", _floating(_xlogy), _xlogy_rule, True, methods=("xlogy",),
                inplace=("xlogy_",), torch="xlogy")


def _both_tensors(op, x, y):
    for name, v in (("input", x), ("other", y)):
        if not isinstance(v, Tensor):
            raise TypeError(f"kit.{op}(): argument '{name}' must be Tensor, not "
                            f"{type(v).__name__}. Fix: kit.tensor({v!r})")


@composite("fmax", methods=("fmax",), torch="fmax")
def fmax(x, y):
    """The larger of x and y, ignoring a NaN (NaN only where both are); a tie's gradient goes
    to x, as PyTorch's."""
    _both_tensors("fmax", x, y)
    return where(logical_or(x >= y, isnan(y)), x, y)


@composite("fmin", methods=("fmin",), torch="fmin")
def fmin(x, y):
    """The smaller of x and y, ignoring a NaN (NaN only where both are); a tie's gradient goes
    to x, as PyTorch's."""
    _both_tensors("fmin", x, y)
    return where(logical_or(x <= y, isnan(y)), x, y)


def _copysign_rule(node, g, x, y):
    # NOTE: PyTorch's CopysignBackward0: g * result / x, set to 0 where x is 0 (so NaN where x is
    # infinite or NaN); y gets a zero gradient
    need = node.next_functions
    return (where_(x == 0, 0, g * y / x) if need[0] else None,
            _zeros_like(g) if need[1] else None)


@primitive("copysign", grad=_copysign_rule, saves="a, output", batch="broadcasting",
           methods=("copysign",), inplace=("copysign_",), torch="copysign")
def copysign(x, y):
    """|x| with the sign (bit) of y, in the promoted dtype (integers: the default float)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.copysign(): argument 'input' must be Tensor, not "
                        f"{type(x).__name__}. Fix: kit.tensor({x!r})")
    if x.dtype.kind != "f" and not isinstance(y, Tensor):  # (-1 would become 255 in uint8)
        x = astype(x, default_float())
    a, b, d, e = pair(x, y, "copysign")
    if d.dtype.kind != "f":
        d = d.astype(default_float())
        e = e.astype(d.dtype) if hasattr(e, "dtype") else e
    try:
        out = backend.get_array_module(d).copysign(d, e)
    except ValueError:
        raise shape_error("copysign", d, e, detail=BROADCAST) from None
    return record("copysign", _copysign_rule, out, (a, b), (a, OUTPUT))


def _float64_base(fn):
    """x.float_power_(y) runs float_power: it writes float64 results, so x must be float64."""

    def inplace_op(x, y):
        if x.dtype != np.float64:
            raise RuntimeError(f"kit.float_power_: the base given to float_power_ has dtype "
                               f"{x.dtype} but the operation's result requires dtype float64 "
                               f"(as PyTorch). Fix: x = x.double() first, or x.float_power(y)")
        return fn(x, y)

    return inplace_op


@composite("float_power", methods=("float_power",), inplace=(("float_power_", _float64_base),),
           torch="float_power")
def float_power(x, y):
    """x ** y computed in float64, whatever the dtypes (as torch.float_power)."""
    x, y = (astype(v, np.float64) if isinstance(v, Tensor) else float(v) for v in (x, y))
    return pow(x, y)


# --- reductions that skip NaN ----------------------------------------------------------------
@composite("nansum", methods=(("nansum", dims),), torch="nansum")
def nansum(x, dim=None, keepdim=False):
    """The sum, with NaN counted as 0."""
    dim = all_if_none(dim)
    if x.dtype.kind == "f":
        x = where(isnan(x), 0.0, x)
    return sum_(x, dim, keepdim)


@composite("nanmean", methods=(("nanmean", dims),), torch="nanmean")
def nanmean(x, dim=None, keepdim=False):
    """The mean of the elements that are not NaN (NaN where all are); floating point only."""
    if x.dtype.kind != "f":
        raise RuntimeError(f"kit.nanmean(): expected input to have floating point or complex "
                           f"dtype but got {x.dtype} (as PyTorch). Fix: x.float().nanmean()")
    counted = sum_(astype(~isnan(x), x.dtype), all_if_none(dim), keepdim)
    return nansum(x, dim, keepdim) / counted
