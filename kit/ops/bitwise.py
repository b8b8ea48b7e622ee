"""Integer arithmetic, bits and logic, as PyTorch defines them: floor_divide (`//`), remainder
(`%`), fmod, bitwise_and/or/xor/not (`&`, `|`, `^`, `~`), bitwise_left/right_shift (`<<`, `>>`)
and logical_and/or/xor/not.

NumPy computes almost all of it as PyTorch does (tests/test_bitwise.py compares them over edge
values); what differs is handled here: integer division by zero raises (NumPy gives 0 and
warns), a float remainder of zero keeps the dividend's sign, bitwise ops refuse floats, logical
ops take any dtype and give bool, and NumPy's warnings (1 // 0.0) are silenced as PyTorch is
silent. Gradients as PyTorch's: remainder and fmod are differentiable (1 for the dividend,
-floor(a / b) or -trunc(a / b) for the divisor); floor_divide is recorded but its backward
raises; the bit and logic ops give tensors without history.
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._record import as_dtype_of, check_same_device, data_of, pair, record, shape_error
from kit.ops._registry import declare, primitive, reflected
from kit.ops.elementwise import BROADCAST

_KIND_NAMES = {"b": "Bool", "f": "Float", "c": "Complex"}


def _dtype(x, y):
    """The dtype an op of the promoted operands computes in (one of them is an array)."""
    return x.dtype if hasattr(x, "dtype") else y.dtype


def _fits(op, x, y):
    """PyTorch checks the shapes before the dtypes."""
    try:
        np.broadcast_shapes(np.shape(x), np.shape(y))
    except ValueError:
        raise shape_error(op, x, y, detail=BROADCAST) from None


def _refuse(op, dtype, kinds):
    if dtype.kind not in kinds:
        name = _KIND_NAMES.get(dtype.kind, str(dtype))
        fix = "x.long()" if dtype.kind == "f" else "x.long() or x.float()"
        raise NotImplementedError(f"kit.{op}: not implemented for '{name}' tensors ({dtype}), "
                                  f"as in PyTorch. Fix: convert first, e.g. {fix}")


# --- floor_divide, remainder, fmod ------------------------------------------------------------
def _floor_divide_rule(node, g):
    raise RuntimeError(
        "kit.floor_divide: the derivative of floor_divide is not implemented (as in PyTorch: "
        "`//` is flat wherever it has a derivative). Fix: divide the detached values, "
        "x.detach() // y, or use x / y where a gradient is wanted"
    )


def _quotient_rule(op, rounding):
    """d/da = 1, d/db = -rounded(a / b): remainder (floor) and fmod (trunc). The quotient is a
    constant, as PyTorch's (its derivative is 0), so the rule is also right to second order."""

    def rule(node, g, a=None, b=None):  # (nothing kept when only the dividend needs one)
        need = node.next_functions
        gb = None
        if need[1]:
            if not hasattr(a, "shape"):
                raise RuntimeError(
                    f"kit.{op}: the derivative of {op}(number, tensor) with respect to the "
                    f"tensor is not implemented, as in PyTorch. Fix: make the number a tensor, "
                    f"torch.{op}(torch.tensor({a!r}), y)"
                )
            x, y = data_of(a), data_of(b)
            xp = backend.get_array_module(x, y)
            with np.errstate(divide="ignore", invalid="ignore"):
                q = xp.floor_divide(x, y) if rounding == "floor" else xp.trunc(x / y)
            gb = -g * as_dtype_of(q, g)
        return (g if need[0] else None), gb

    return rule


def _divisor_needs(saved, edges):
    """`keep` for remainder and fmod: only the divisor's gradient uses the operands, so they are
    kept only when the divisor needs one (PyTorch keeps nothing otherwise)."""
    return saved if edges[1] else ()


def _remainder(xp, x, y):
    if _dtype(x, y).kind != "f":
        return xp.remainder(x, y)
    # NOTE: PyTorch's formula, fmod moved to the divisor's sign: a zero result keeps the
    # dividend's sign (-0.0 % 3 is -0.0), where NumPy gives the divisor's.
    r = xp.fmod(x, y)
    return xp.where((r != 0) & ((y < 0) != (r < 0)), r + y, r)


def _division(op, compute, rule, **names):
    def fn(a, b):
        if op == "fmod" and not isinstance(a, Tensor):
            raise TypeError(f"kit.fmod: the dividend must be a Tensor, got "
                            f"{type(a).__name__} (as PyTorch). Fix: torch.tensor({a!r})")
        a, b, x, y = pair(a, b, op)
        _fits(op, x, y)
        dtype = _dtype(x, y)
        _refuse(op, dtype, "iuf")
        xp = backend.get_array_module(x, y)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # as PyTorch
            out = compute(xp, x, y)
        if dtype.kind != "f" and out.size and not xp.all(y):  # (an empty result divides none)
            raise RuntimeError(f"kit.{op}: integer division by zero (PyTorch raises "
                               f"ZeroDivisionError). Fix: make the divisor nonzero, or divide "
                               f"floats (x.float()), which give inf or nan")
        if rule is _floor_divide_rule:
            return record(op, rule, out, (a, b))
        return record(op, rule, out, (a, b), (a, b), None, _divisor_needs)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {op} with broadcasting and PyTorch's type promotion."
    # NOTE: floor_divide is declared without a gradient (the generic tests have none to check);
    # it is still recorded, with a rule that raises, so that requires_grad and the error on
    # backward are PyTorch's.
    declared = None if rule is _floor_divide_rule else rule
    return declare(op, fn, grad=declared, saves="a, b" if declared else "",
                   batch="broadcasting", **names)


floor_divide = _division(
    "floor_divide", lambda xp, x, y: xp.floor_divide(x, y), _floor_divide_rule,
    methods=("__floordiv__", ("__rfloordiv__", reflected), "floor_divide"),
    inplace=("__ifloordiv__", "floor_divide_"), torch="floor_divide",
)
remainder = _division(
    "remainder", _remainder, _quotient_rule("remainder", "floor"),
    methods=("__mod__", ("__rmod__", reflected), "remainder"),
    inplace=("__imod__", "remainder_"), torch="remainder",
)
fmod = _division(
    "fmod", lambda xp, x, y: xp.fmod(x, y), _quotient_rule("fmod", "trunc"),
    methods=("fmod",), inplace=("fmod_",), torch="fmod",
)


# --- bits -------------------------------------------------------------------------------------
def _bits(op, compute, kinds="biu", **names):
    def fn(a, b):
        a, b, x, y = pair(a, b, op)
        _fits(op, x, y)
        _refuse(op, _dtype(x, y), kinds)
        return Tensor(compute(x, y))

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {op} of integer or bool tensors (no gradient), as torch.{op}."
    return declare(op, fn, batch="broadcasting", torch=op, **names)


def _operator(name, op):
    return {"methods": (f"__{name}__", (f"__r{name}__", reflected), op),
            "inplace": (f"__i{name}__", f"{op}_")}


bitwise_and = _bits("bitwise_and", lambda x, y: x & y, **_operator("and", "bitwise_and"))
bitwise_or = _bits("bitwise_or", lambda x, y: x | y, **_operator("or", "bitwise_or"))
bitwise_xor = _bits("bitwise_xor", lambda x, y: x ^ y, **_operator("xor", "bitwise_xor"))
# NOTE: NumPy shifts as PyTorch does: by the width or more gives 0 (or -1 for a negative
# number shifted right), a negative shift gives 0. bool is refused unless promoted (bool << 1).
bitwise_left_shift = _bits("bitwise_left_shift", lambda x, y: x << y, "iu",
                           **_operator("lshift", "bitwise_left_shift"))
bitwise_right_shift = _bits("bitwise_right_shift", lambda x, y: x >> y, "iu",
                            **_operator("rshift", "bitwise_right_shift"))


def _invert(fn):
    """`~x`: PyTorch's TypeError for a float tensor (torch.bitwise_not raises another class)."""

    def method(self):
        if self.dtype.kind not in "biu":
            raise TypeError(f"kit: ~ (operator.invert) is only implemented on integer and "
                            f"Boolean-type tensors, not {self.dtype}. Fix: for a mask, compare "
                            f"first (~(x > 0)), or use x.logical_not()")
        return fn(self)

    return method


@primitive("bitwise_not", batch="elementwise", methods=(("__invert__", _invert), "bitwise_not"),
           inplace=("bitwise_not_",), torch="bitwise_not")
def bitwise_not(x):
    """Elementwise ~x of an integer or bool tensor (no gradient), as torch.bitwise_not."""
    d = x._data
    _refuse("bitwise_not", d.dtype, "biu")
    return Tensor(~d)


# --- logic: any dtype in, bool out -------------------------------------------------------------
def _tensor(op, v, which):
    if not isinstance(v, Tensor):
        raise TypeError(f"kit.{op}(): argument '{which}' must be a Tensor, not "
                        f"{type(v).__name__} (as PyTorch). Fix: torch.tensor({v!r})")
    return v._data


def _logic(op, compute):
    def fn(a, b):
        x, y = _tensor(op, a, "input"), _tensor(op, b, "other")
        check_same_device(op, x, y)
        try:
            return Tensor(compute(x != 0, y != 0))  # NaN is true, as in PyTorch
        except ValueError:
            raise shape_error(op, x, y, detail=BROADCAST) from None

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {op} of the truth of any two tensors (nonzero is true): bool."
    return declare(op, fn, batch="broadcasting", methods=(op,), inplace=(f"{op}_",), torch=op)


logical_and = _logic("logical_and", lambda x, y: x & y)
logical_or = _logic("logical_or", lambda x, y: x | y)
logical_xor = _logic("logical_xor", lambda x, y: x ^ y)


@primitive("logical_not", batch="elementwise", methods=("logical_not",),
           inplace=("logical_not_",), torch="logical_not")
def logical_not(x):
    """Elementwise not of any tensor (zero is false, NaN true): a bool tensor, no gradient."""
    return Tensor(_tensor("logical_not", x, "input") == 0)
