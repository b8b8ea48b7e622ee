"""More elementwise ops, as PyTorch has them: rounding, hyperbolic and inverse trigonometric
functions, log2/log10, erfinv, rsqrt/reciprocal, nan_to_num, atan2/hypot and heaviside are
primitives (forward and gradient side by side, rules as in elementwise.py); frac, square, sgn,
lerp, addcmul, addcdiv, clamp_min and clamp_max are composites of them and of the core family.
"""

from __future__ import annotations

import math

import numpy as np

from kit import backend
from kit._creation import zeros_like
from kit._promotion import default_float
from kit._tensor import Tensor
from kit.ops._record import data_of, dual, pair, record, shape_error
from kit.ops._registry import composite, primitive
from kit.ops.elementwise import (
    BROADCAST,
    _binary,
    _unary,
    clamp,
    exp_,
    pow,  # noqa: A004 - kit's pow
    sign,
    sqrt,
    where,
    where_,
)
from kit.ops.movement import astype, broadcast_shapes
from kit.ops.nn import _ERF

sqrt_ = dual(sqrt, "sqrt")


def _zero(node, g):
    # NOTE: exactly zero, as PyTorch's FloorBackward (g * 0 would be NaN where g is)
    return (zeros_like(g) if isinstance(g, Tensor) else backend.get_array_module(g).zeros_like(g),)


def _no_bool(op, x):
    if x.dtype.kind == "b":
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool' (kit.{op}, as in "
                                  f"PyTorch). Fix: convert first, e.g. x.int().{op}()")


# --- rounding: a zero gradient, integers kept as they are -----------------------------------
def _rounding(op, compute, *aliases):
    def forward(xp, x):
        _no_bool(op, x)
        return x.copy() if x.dtype.kind in "iu" else compute(xp, x)

    names = (op, *aliases)
    return _unary(op, forward, _zero, "", floating=False, methods=names,
                  inplace=tuple(n + "_" for n in names), torch=names, mx=names)


floor = _rounding("floor", lambda xp, x: xp.floor(x))
ceil = _rounding("ceil", lambda xp, x: xp.ceil(x))
trunc = _rounding("trunc", lambda xp, x: xp.trunc(x), "fix")


@primitive("round", grad=_zero, batch="elementwise", methods=("round",), inplace=("round_",),
           torch="round", mx="rint")
def round(x, decimals=0):  # noqa: A001 - PyTorch's name
    """Round half to even, to `decimals` decimal places (negative: tens, hundreds...), as
    torch.round: x * 10**d rounded, then divided back."""
    d = x._data
    _no_bool("round", d)
    if d.dtype.kind in "iu":
        if decimals:
            raise NotImplementedError(f"\"round\" with decimals={decimals} not implemented for "
                                      f"{d.dtype} (kit.round, as in PyTorch). Fix: x.float()")
        return record("round", _zero, d.copy(), (x,))
    return record("round", _zero, backend.get_array_module(d).round(d, decimals), (x,))


@composite("frac", methods=("frac",), inplace=("frac_",), torch="frac")
def frac(x):
    """x - trunc(x): the fractional part, with the sign of x; its gradient is 1."""
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"frac\" not implemented for {x.dtype} (kit.frac, as in "
                                  f"PyTorch): an integer has no fractional part")
    return x - trunc(x)


# --- hyperbolic and inverse trigonometric functions -----------------------------------------
sinh = _unary("sinh", lambda xp, x: xp.sinh(x), lambda node, g, x: (g * cosh_(x),), "x",
              inplace=("sinh_",), torch="sinh", mx="sinh")
cosh = _unary("cosh", lambda xp, x: xp.cosh(x), lambda node, g, x: (g * sinh_(x),), "x",
              inplace=("cosh_",), torch="cosh", mx="cosh")
sinh_ = dual(sinh, "sinh")
cosh_ = dual(cosh, "cosh")


def _inverse(op, compute, rule, alias):
    return _unary(op, compute, rule, "x", methods=(op, alias), inplace=(op + "_", alias + "_"),
                  torch=(op, alias), mx=alias)


# NOTE: at |x| = 1 the derivatives of asin and acos are infinite, as in PyTorch
asin = _inverse("asin", lambda xp, x: xp.arcsin(x),
                lambda node, g, x: (g / sqrt_(1 - x * x),), "arcsin")
acos = _inverse("acos", lambda xp, x: xp.arccos(x),
                lambda node, g, x: (-g / sqrt_(1 - x * x),), "arccos")
atan = _inverse("atan", lambda xp, x: xp.arctan(x),
                lambda node, g, x: (g / (1 + x * x),), "arctan")


def _kind(v):
    """The dtype kind of an array or a Python number."""
    return v.dtype.kind if hasattr(v, "dtype") else np.dtype(type(v)).kind


def _xp(x, y):
    return backend.get_array_module(*(v for v in (x, y) if hasattr(v, "shape")))


def _floating(compute):
    """compute(xp, x, y) for a binary op whose integer operands give the default float dtype."""

    def run(x, y):
        xp = _xp(x, y)
        if _kind(x) in "biu" and _kind(y) in "biu":
            x, y = (v.astype(default_float()) if hasattr(v, "shape") else float(v) for v in (x, y))
        return compute(xp, x, y)

    return run


def _atan2_rule(node, g, a, b):
    # NOTE: at (0, 0) the gradient is 0 (and -0), as PyTorch 2.13's, not 0 / 0 = NaN
    need = node.next_functions
    if need[1] and a.dtype.kind == "b":  # PyTorch's rule negates y, which it refuses for bools
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported "
                           "(kit.atan2, backward, as in PyTorch: the gradient of x is -y / (y^2 "
                           "+ x^2), with y bool). Fix: atan2(y.float(), x)")
    squared = a * a + b * b
    squared = where_(squared == 0, 1, squared)
    return (g * b / squared if need[0] else None, -g * a / squared if need[1] else None)


atan2 = _binary("atan2", _floating(lambda xp, y, x: xp.arctan2(y, x)), _atan2_rule, True,
                methods=("atan2", "arctan2"), inplace=("atan2_", "arctan2_"),
                torch=("atan2", "arctan2"))


def _hypot_rule(node, g, a, b):
    # NOTE: at (0, 0) this is 0 / 0 = NaN, as PyTorch's HypotBackward
    need = node.next_functions
    h = hypot_(a, b)
    return (g * a / h if need[0] else None, g * b / h if need[1] else None)


def _hypot(x, y):
    if _kind(x) != "f" or _kind(y) != "f":
        np.broadcast_shapes(np.shape(x), np.shape(y))  # shapes first (a ValueError: the shape
        # error), then the dtypes, as PyTorch
        raise NotImplementedError("\"hypot\" not implemented for integer or bool tensors (kit."
                                  "hypot, as in PyTorch). Fix: convert first, e.g. x.float()")
    return _xp(x, y).hypot(x, y)


hypot = _binary("hypot", _hypot, _hypot_rule, True, methods=("hypot",), inplace=("hypot_",),
                torch="hypot")
hypot_ = dual(hypot, "hypot")


# --- logarithms, roots, reciprocals ---------------------------------------------------------
_LN2, _LN10 = math.log(2.0), math.log(10.0)
log2 = _unary("log2", lambda xp, x: xp.log2(x), lambda node, g, x: (g / (x * _LN2),), "x",
              inplace=("log2_",), torch="log2")
log10 = _unary("log10", lambda xp, x: xp.log10(x), lambda node, g, x: (g / (x * _LN10),), "x",
               inplace=("log10_",), torch="log10")
rsqrt = _unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda node, g, y: (-0.5 * g * y * y * y,),
               "y", inplace=("rsqrt_",), torch="rsqrt")
reciprocal = _unary("reciprocal", lambda xp, x: 1 / x, lambda node, g, y: (-g * y * y,), "y",
                    inplace=("reciprocal_",), torch="reciprocal")


@composite("square", methods=("square",), inplace=("square_",), torch="square")
def square(x):
    """x * x, as pow(x, 2) (PyTorch's square): bool gives int64, integers stay integers."""
    return pow(astype(x, np.int64) if x.dtype.kind == "b" else x, 2)


@composite("sgn", methods=("sgn",), inplace=("sgn_",), torch="sgn")
def sgn(x):
    """The sign of each element (for real tensors, torch.sgn is torch.sign)."""
    return sign(x)


# --- erfinv ---------------------------------------------------------------------------------
_ERFC = np.frompyfunc(math.erfc, 1, 1)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2
# M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): a first guess good to
# about 1e-7, polynomials in w = -log(1 - x^2) (w < 5) and in sqrt(w) (w >= 5).
_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coefficients, w):
    p = np.full_like(w, coefficients[0])
    for c in coefficients[1:]:
        p = p * w + c
    return p


def erfinv_array(x):
    """erfinv of a NumPy float array: Giles's first guess, then Newton steps on erf, or, where
    |x| > 0.5, on log(erfc) from the exact 1 - |x| (the tails keep their digits, and the log is
    nearly quadratic, so a guess far out in the tail still converges in a few steps)."""
    a = np.abs(x.astype(np.float64))
    inside = a < 1
    safe = np.where(inside, a, 0.0)
    w = -np.log((1 - safe) * (1 + safe))
    y = safe * np.where(w < 5, _horner(_CENTRAL, w - 2.5), _horner(_TAIL, np.sqrt(w) - 3))
    tail = safe > 0.5
    log_rest = np.log(np.where(tail, 1 - safe, 1.0))
    for _ in range(4):
        slope = np.exp(-y * y) / _SQRT_PI_OVER_2
        rest = np.asarray(_ERFC(y), dtype=np.float64)
        step = np.where(tail, (np.log(rest) - log_rest) * rest,
                        np.asarray(_ERF(y), dtype=np.float64) - safe)
        y = y + np.where(tail, step, -step) / slope
    with np.errstate(invalid="ignore"):
        edge = np.where(a == 1, np.inf, np.nan)  # +-1 -> +-inf, |x| > 1 and NaN -> NaN
    return np.asarray(np.sign(x) * np.where(inside, y, edge), dtype=x.dtype)


def _erfinv(xp, x):
    if x.dtype.kind in "biu":
        x = x.astype(default_float())
    if backend.device_of(x) == "cpu":
        return erfinv_array(x)
    import cupyx.scipy.special  # pragma: no cover - the GPU (or tests/fake_cupy.py)

    return cupyx.scipy.special.erfinv(x)


def _erfinv_rule(node, g, x):
    # NOTE: as PyTorch's ErfinvBackward0, the input is kept and erfinv recomputed (so an
    # in-place change of the input before backward is an error there and here)
    y = erfinv(x) if isinstance(x, Tensor) else _erfinv(backend.get_array_module(x), x)
    return (g * _SQRT_PI_OVER_2 * exp_(y * y),)


erfinv = _unary("erfinv", _erfinv, _erfinv_rule, "x", inplace=("erfinv_",), torch="erfinv",
                mx="erfinv")


# --- nan_to_num and heaviside ---------------------------------------------------------------
def _nan_to_num_rule(node, g, x):
    d = data_of(x)
    return (where_(backend.get_array_module(d).isfinite(d), g, 0),)


@primitive("nan_to_num", grad=_nan_to_num_rule, saves="x", batch="elementwise",
           methods=("nan_to_num",), inplace=("nan_to_num_",), torch="nan_to_num")
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default 0 and the dtype's
    largest and smallest finite values); the gradient is 1 where x is finite, else 0."""
    d = x._data
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and not isinstance(v, (int, float)):
            raise TypeError(f"kit.nan_to_num: {name} must be a number, got {v!r}")
    if d.dtype.kind != "f":
        return record("nan_to_num", _nan_to_num_rule, d.copy(), (x,), (x,))
    out = backend.get_array_module(d).nan_to_num(d, nan=nan, posinf=posinf, neginf=neginf)
    return record("nan_to_num", _nan_to_num_rule, out, (x,), (x,))


def _heaviside_rule(node, g):
    raise RuntimeError("kit.heaviside: the derivative for heaviside is not implemented (as in "
                       "PyTorch: it is 0 everywhere but at 0, where it does not exist). Fix: "
                       "detach the input, or use a smooth step such as sigmoid(k * x)")


@primitive("heaviside", grad=_heaviside_rule, batch="broadcasting", methods=("heaviside",),
           inplace=("heaviside_",), torch="heaviside")
def heaviside(x, values):
    """The step function: 0 where x < 0, `values` where x == 0, 1 where x > 0 (NaN: 0, as in
    PyTorch); not differentiable (backward raises, as PyTorch's)."""
    for name, v in (("input", x), ("values", values)):
        if not isinstance(v, Tensor):
            raise TypeError(f"kit.heaviside: argument '{name}' must be a Tensor, not "
                            f"{type(v).__name__}. Fix: kit.tensor({v!r})")
    if x.dtype != values.dtype:
        raise RuntimeError(f"kit.heaviside: input and values must have the same dtype, got "
                           f"{x.dtype} and {values.dtype} (PyTorch: heaviside is not yet "
                           f"implemented for tensors with different dtypes). Fix: "
                           f"values.to(x.dtype)")
    x, values, d, v = pair(x, values, "heaviside")
    xp = backend.get_array_module(d, v)
    try:
        out = xp.where(d == 0, v, (d > 0).astype(d.dtype))
    except ValueError:
        raise shape_error("heaviside", d, v, detail=BROADCAST) from None
    return record("heaviside", _heaviside_rule, out, (x, values))


# --- composites: interpolation, fused multiply-add, one-sided clamps -------------------------
def _floating_only(op, *tensors):
    for t in tensors:
        if isinstance(t, Tensor) and t.dtype.kind != "f":
            raise NotImplementedError(f"\"{op}\" not implemented for {t.dtype} (kit.{op}, as in "
                                      f"PyTorch). Fix: convert first, e.g. x.float()")


@composite("lerp", methods=("lerp",), inplace=("lerp_",), torch="lerp")
def lerp(start, end, weight):
    """start + weight * (end - start), computed from the nearer end as PyTorch does (so weight
    1 gives `end` exactly); differentiable in all three."""
    if not isinstance(weight, (Tensor, int, float)):
        raise TypeError(f"kit.lerp: weight must be a number or a Tensor, got "
                        f"{type(weight).__name__}")
    for name, t in (("end", end), ("weight", weight)):  # (PyTorch checks the dtypes first,
        if isinstance(t, Tensor) and t.dtype != start.dtype and (name == "end" or t.ndim):
            raise RuntimeError(f"kit.lerp: expected dtype {start.dtype} for `{name}` but got "
                               f"dtype {t.dtype} (as PyTorch). Fix: {name}.to(start.dtype)")
    broadcast_shapes(*(t.shape for t in (start, end, weight) if isinstance(t, Tensor)))  # shapes
    _floating_only("lerp", start, end, weight)  # then the kernel's dtypes)
    span = end - start
    if not isinstance(weight, Tensor):
        return start + weight * span if abs(weight) < 0.5 else end - span * (1 - weight)
    return where(abs(weight) < 0.5, start + weight * span, end - span * (1 - weight))


@composite("addcmul", methods=("addcmul",), inplace=("addcmul_",), torch="addcmul")
def addcmul(x, tensor1, tensor2, value=1):
    """x + value * tensor1 * tensor2 (as torch.addcmul, an optimiser's building block). As in
    PyTorch, on integer tensors a float `value` is cast to the integers (truncated: 0.5 is 0),
    and bool tensors are refused."""
    product = tensor1 * tensor2  # (shapes are checked first, as in PyTorch)
    kinds = {getattr(t, "dtype", np.dtype(float)).kind for t in (x, tensor1, tensor2)}
    if kinds == {"b"}:
        broadcast_shapes(x.shape, product.shape)
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool' (kit.addcmul, "
                                  "as in PyTorch). Fix: convert first, e.g. x.int()")
    if kinds <= set("biu") and isinstance(value, float):
        value = int(value)
    return x + (product if value == 1 else value * product)


@composite("addcdiv", methods=("addcdiv",), inplace=("addcdiv_",), torch="addcdiv")
def addcdiv(x, tensor1, tensor2, value=1):
    """x + value * tensor1 / tensor2 (Adam's update is addcdiv); integer division is refused,
    as PyTorch refuses it."""
    if all(t.dtype.kind in "biu" for t in (tensor1, tensor2)):
        raise RuntimeError("kit.addcdiv: integer division with addcdiv is not supported (as in "
                           "PyTorch). Fix: tensor1.float(), or x + value * (tensor1 // tensor2)")
    quotient = tensor1 / tensor2
    return x + (quotient if value == 1 else value * quotient)


@composite("clamp_min", methods=("clamp_min",), inplace=("clamp_min_",), torch="clamp_min")
def clamp_min(x, min):  # noqa: A002 - PyTorch's name
    """clamp(x, min=min)."""
    return clamp(x, min=min)


@composite("clamp_max", methods=("clamp_max",), inplace=("clamp_max_",), torch="clamp_max")
def clamp_max(x, max):  # noqa: A002 - PyTorch's name
    """clamp(x, max=max)."""
    return clamp(x, max=max)
