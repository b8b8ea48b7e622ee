"""Random programs run on kit.torch and on real PyTorch: the shared machinery of the differential
tests (tests/test_differential.py) and of `python -m tests.differential N`, which tries N
programs of each kind (finite; with NaN, infinities and integer extremes; an op then an in-place
change) and prints every difference.

Programs are drawn by hypothesis (`programs()`): a few leaves (dtypes, shapes including empty
ones, edge values) and a sequence of steps, each an op spelt the same way in both libraries
applied to earlier values; then the gradients of a sum of every floating result that requires
grad. In the third kind every op is followed by an in-place change of its result or one of its
inputs, so that the backward at the end raises exactly where PyTorch's does: what each op saves
decides it. The outcome compared is, for every value made, its dtype, requires_grad flag, shape
and numbers, and the UserWarnings it gave, then the gradients; or, when a step raises, the step
and the exception's class. Under pytest the draws are derandomized (a fixed seed), so CI runs
the same programs each time, and hypothesis shrinks a failing program to a small one.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool"]
SHAPES = [(), (3,), (2, 3), (1, 3), (0,), (2, 0)]
EDGES = [0.0, -1.0, 0.5, 2.0, -0.0, 3.0]
SPECIAL = [math.inf, -math.inf, math.nan]  # the nan=True programs add these...
INT_EDGES = [0, 1, -1, 2, -3, 7, 64]
INT_EXTREMES = [2**63 - 1, -(2**63), 255, -128]  # ...and these (wrapped to the dtype)

STEPS = {
    # elementwise, one operand
    "exp": lambda T, x, y: T.exp(x), "log": lambda T, x, y: T.log(x),
    "sqrt": lambda T, x, y: T.sqrt(x), "abs": lambda T, x, y: T.abs(x),
    "neg": lambda T, x, y: -x, "tanh": lambda T, x, y: T.tanh(x),
    "sigmoid": lambda T, x, y: T.sigmoid(x), "relu": lambda T, x, y: T.relu(x),
    "sign": lambda T, x, y: T.sign(x), "sin": lambda T, x, y: T.sin(x),
    "square": lambda T, x, y: x * x, "invert": lambda T, x, y: ~x,
    "logical_not": lambda T, x, y: T.logical_not(x),
    # elementwise, two operands (and a Python number on either side)
    "add": lambda T, x, y: x + y, "sub": lambda T, x, y: x - y, "mul": lambda T, x, y: x * y,
    "div": lambda T, x, y: x / y, "pow": lambda T, x, y: x ** y,
    "maximum": lambda T, x, y: T.maximum(x, y), "minimum": lambda T, x, y: T.minimum(x, y),
    "eq": lambda T, x, y: x == y, "lt": lambda T, x, y: x < y, "ge": lambda T, x, y: x >= y,
    "floor_divide": lambda T, x, y: x // y, "remainder": lambda T, x, y: x % y,
    "fmod": lambda T, x, y: T.fmod(x, y), "and": lambda T, x, y: x & y,
    "or": lambda T, x, y: x | y, "xor": lambda T, x, y: x ^ y,
    "lshift": lambda T, x, y: x << y, "rshift": lambda T, x, y: x >> y,
    "logical_and": lambda T, x, y: T.logical_and(x, y),
    "logical_xor": lambda T, x, y: T.logical_xor(x, y),
    "rfloordiv_2": lambda T, x, y: 2 // x, "rmod_3": lambda T, x, y: 3.0 % x,
    "mul_half": lambda T, x, y: x * 0.5, "radd_1": lambda T, x, y: 1 + x,
    "and_3": lambda T, x, y: x & 3, "rshift_1": lambda T, x, y: x >> 1,
    # reductions and dims
    "sum": lambda T, x, y: x.sum(), "sum_0": lambda T, x, y: x.sum(0),
    "sum_dims_empty": lambda T, x, y: x.sum(dim=[]), "mean": lambda T, x, y: x.mean(),
    "mean_last": lambda T, x, y: x.mean(-1, keepdim=True),
    "amax_dims_empty": lambda T, x, y: x.amax(dim=[]), "amin_last": lambda T, x, y: x.amin(-1),
    "max": lambda T, x, y: x.max(), "max_last": lambda T, x, y: x.max(dim=-1).values,
    "argmax": lambda T, x, y: x.argmax(), "argmin_last": lambda T, x, y: x.argmin(-1),
    "logsumexp": lambda T, x, y: T.logsumexp(x, dim=-1),
    "softmax": lambda T, x, y: T.softmax(x, dim=-1),
    "log_softmax": lambda T, x, y: T.log_softmax(x, dim=0),
    "sum_repeated_dim": lambda T, x, y: x.sum(dim=(0, -x.dim() if x.dim() else 0)),
    # sorting
    "sort_down": lambda T, x, y: T.sort(x, descending=True, stable=True).values,
    "sort_indices": lambda T, x, y: T.sort(x, stable=True).indices,
    "argsort_down": lambda T, x, y: T.argsort(x, dim=-1, descending=True, stable=True),
    "topk_1": lambda T, x, y: T.topk(x, 1).values, "msort": lambda T, x, y: T.msort(x),
    # shapes
    "reshape": lambda T, x, y: x.reshape(-1), "t": lambda T, x, y: x.t(),
    "unsqueeze": lambda T, x, y: x.unsqueeze(0), "index0": lambda T, x, y: x[0],
    "where": lambda T, x, y: T.where(x > 0, x, y),
    "clamp": lambda T, x, y: T.clamp(x, min=-0.5, max=1.5),
    "expand": lambda T, x, y: x.expand(2, *x.shape),
    "expand_new_1": lambda T, x, y: x.expand(-1, 3),
    # more ops, whose saved values decide in-place errors too
    "log1p": lambda T, x, y: T.log1p(x), "expm1": lambda T, x, y: T.expm1(x),
    "cos": lambda T, x, y: T.cos(x), "erf": lambda T, x, y: T.erf(x),
    "pow_half": lambda T, x, y: x ** 0.5, "clone": lambda T, x, y: x.clone(),
    "clamp_tensor": lambda T, x, y: T.clamp(x, min=y), "where_0": lambda T, x, y: T.where(
        y > 0, x, 0.0), "masked_fill": lambda T, x, y: x.masked_fill(y > 0, 0.5),
    "index_tensor": lambda T, x, y: x[T.tensor([0, 0])], "index_mask": lambda T, x, y: x[y > 0],
    "matmul": lambda T, x, y: x @ y, "norm": lambda T, x, y: x.norm(),
    "norm_inf_last": lambda T, x, y: x.norm(float("inf"), -1),
    "cumsum_0": lambda T, x, y: x.cumsum(0), "max_0_indices": lambda T, x, y: x.max(0).indices,
    "amax_01": lambda T, x, y: x.amax((0, 1)), "logsumexp_all": lambda T, x, y: T.logsumexp(
        x, dim=tuple(range(x.dim()))), "flatten": lambda T, x, y: x.flatten(),
    "prod": lambda T, x, y: x.prod(), "prod_last": lambda T, x, y: x.prod(-1),
    "var": lambda T, x, y: x.var(), "std_0": lambda T, x, y: x.std(0),
    "var_last_keepdim": lambda T, x, y: x.var(-1, keepdim=True, correction=0),
    # nn.functional and more elementwise maths (real programs' activations and losses)
    "gelu": lambda T, x, y: T.nn.functional.gelu(x),
    "gelu_tanh": lambda T, x, y: T.nn.functional.gelu(x, approximate="tanh"),
    "silu": lambda T, x, y: T.nn.functional.silu(x),
    "softplus": lambda T, x, y: T.nn.functional.softplus(x),
    "leaky_relu": lambda T, x, y: T.nn.functional.leaky_relu(x, 0.1),
    "mse_loss": lambda T, x, y: T.nn.functional.mse_loss(x, y),
    "bce_logits": lambda T, x, y: T.nn.functional.binary_cross_entropy_with_logits(x, y),
    "layer_norm": lambda T, x, y: T.nn.functional.layer_norm(x, x.shape[-1:]),
    "normalize": lambda T, x, y: T.nn.functional.normalize(x, dim=-1),
    "atan2": lambda T, x, y: T.atan2(x, y), "hypot": lambda T, x, y: T.hypot(x, y),
    "lerp": lambda T, x, y: T.lerp(x, y, 0.25), "sinh": lambda T, x, y: T.sinh(x),
    "cosh": lambda T, x, y: T.cosh(x), "atan": lambda T, x, y: T.atan(x),
    "log2": lambda T, x, y: T.log2(x), "log10": lambda T, x, y: T.log10(x),
    "rsqrt": lambda T, x, y: T.rsqrt(x), "reciprocal": lambda T, x, y: T.reciprocal(x),
    "frac": lambda T, x, y: T.frac(x), "trunc": lambda T, x, y: T.trunc(x),
    "floor": lambda T, x, y: T.floor(x), "round": lambda T, x, y: T.round(x),
    "nan_to_num": lambda T, x, y: T.nan_to_num(x), "erfinv": lambda T, x, y: T.erfinv(x),
    "addcmul": lambda T, x, y: T.addcmul(x, x, y, value=0.5),
    "addcdiv": lambda T, x, y: T.addcdiv(x, x, y if y.is_floating_point() else y.float(),
                                         value=0.5),  # (an integer divisor: see below)
    "elu": lambda T, x, y: T.nn.functional.elu(x),
    "hardtanh": lambda T, x, y: T.nn.functional.hardtanh(x, -0.5, 2.0),
    "relu6": lambda T, x, y: T.nn.functional.relu6(x),
    "hardswish": lambda T, x, y: T.nn.functional.hardswish(x),
    "hardsigmoid": lambda T, x, y: T.nn.functional.hardsigmoid(x),
    "logsigmoid": lambda T, x, y: T.nn.functional.logsigmoid(x),
    "softsign": lambda T, x, y: T.nn.functional.softsign(x),
    "mish": lambda T, x, y: T.nn.functional.mish(x),
    "l1_loss": lambda T, x, y: T.nn.functional.l1_loss(x, y),
    "smooth_l1_loss": lambda T, x, y: T.nn.functional.smooth_l1_loss(x, y, beta=0.5),
    "huber_loss": lambda T, x, y: T.nn.functional.huber_loss(x, y, delta=2.0),
    "softshrink": lambda T, x, y: T.nn.functional.softshrink(x, 0.5),
    "hardshrink": lambda T, x, y: T.nn.functional.hardshrink(x, 0.5),
    "threshold": lambda T, x, y: T.nn.functional.threshold(x, 0.5, -2.0),
    "soft_margin_loss": lambda T, x, y: T.nn.functional.soft_margin_loss(x, y),
    "hinge_embedding_loss": lambda T, x, y: T.nn.functional.hinge_embedding_loss(x, y),
    "poisson_nll_loss": lambda T, x, y: T.nn.functional.poisson_nll_loss(x, y),
    # Tensor methods and torch functions PyTorch programs call (kit/ops/elementwise_more.py)
    "tan": lambda T, x, y: T.tan(x), "arcsinh": lambda T, x, y: x.arcsinh(),
    "acosh": lambda T, x, y: T.acosh(x), "atanh": lambda T, x, y: x.atanh(),
    "erfc": lambda T, x, y: T.erfc(x), "exp2": lambda T, x, y: x.exp2(),
    "lgamma": lambda T, x, y: T.lgamma(x), "digamma": lambda T, x, y: x.digamma(),
    "logit": lambda T, x, y: T.logit(x), "logit_eps": lambda T, x, y: x.logit(0.25),
    "sinc": lambda T, x, y: T.sinc(x), "deg2rad": lambda T, x, y: T.deg2rad(x),
    "rad2deg": lambda T, x, y: x.rad2deg(), "signbit": lambda T, x, y: T.signbit(x),
    "isposinf": lambda T, x, y: x.isposinf(), "isneginf": lambda T, x, y: T.isneginf(x),
    "nansum": lambda T, x, y: x.nansum(), "nansum_last": lambda T, x, y: T.nansum(x, -1),
    "nanmean": lambda T, x, y: x.nanmean(), "positive": lambda T, x, y: T.positive(x),
    "negative": lambda T, x, y: x.negative(), "absolute": lambda T, x, y: T.absolute(x),
    "logaddexp": lambda T, x, y: T.logaddexp(x, y), "logaddexp2": lambda T, x, y: x.logaddexp2(y),
    "xlogy": lambda T, x, y: T.xlogy(x, y), "xlogy_2": lambda T, x, y: x.xlogy(2),
    "copysign": lambda T, x, y: T.copysign(x, y), "copysign_neg": lambda T, x, y: x.copysign(-1),
    "fmax": lambda T, x, y: T.fmax(x, y), "fmin": lambda T, x, y: x.fmin(y),
    "float_power": lambda T, x, y: T.float_power(x, y),
    "float_power_2": lambda T, x, y: x.float_power(2),
    "subtract_alpha": lambda T, x, y: T.subtract(x, y, alpha=2),
    "multiply": lambda T, x, y: x.multiply(y), "true_divide": lambda T, x, y: T.true_divide(x, y),
    "not_equal": lambda T, x, y: T.not_equal(x, y), "greater": lambda T, x, y: x.greater(y),
    "less_equal": lambda T, x, y: T.less_equal(x, y),
    "swapdims": lambda T, x, y: T.swapdims(x, 0, -1), "moveaxis": lambda T, x, y: x.moveaxis(0, -1),
    "ravel": lambda T, x, y: T.ravel(x), "reshape_as": lambda T, x, y: x.reshape_as(y),
    "dist": lambda T, x, y: T.dist(x, y), "dist_1": lambda T, x, y: x.dist(y, 1),
    "dist_inf": lambda T, x, y: T.dist(x, y, float("inf")),
}
# NOTE: x.std(dim=[]) is left out: PyTorch 2.13's gradient of it is inf (its backward divides
# by N - 1 with N = 1, as if no dim were reduced); kit's is the gradient over every dim.

# In place, after an op, on its result or one of its inputs: what the op saved decides whether
# the backward at the end raises (or, if kit saved the wrong thing, differs), as in PyTorch.
INPLACE = {
    "fill_1_": lambda t: t.fill_(1), "mul_1_": lambda t: t.mul_(1),
    "add_2_": lambda t: t.add_(2), "neg_": lambda t: t.neg_(), "zero_": lambda t: t.zero_(),
    "exp_": lambda t: t.exp_(), "relu_": lambda t: t.relu_(), "clamp_": lambda t: t.clamp_(0, 1),
    "setitem_": lambda t: (t.__setitem__(..., 3), t)[1],
}
# kit's composites that keep other values than PyTorch's one node (tests/test_what_ops_save.py,
# DIFFERENT): left out of the programs that change values in place. (The activations and losses
# of nn.functional are composites of primitives; hypot recomputes its result in backward, where
# PyTorch's HypotBackward0 keeps it and keeps an operand only when that operand needs a
# gradient; lerp, addcmul and addcdiv are composites too.)
SAVED_OTHERWISE = {"norm", "norm_inf_last", "gelu", "gelu_tanh", "silu", "softplus",
                   "leaky_relu", "mse_loss", "bce_logits", "layer_norm", "normalize", "hypot",
                   "lerp", "addcmul", "addcdiv", "elu", "hardtanh", "relu6", "hardswish",
                   "hardsigmoid", "logsigmoid", "softsign", "mish", "l1_loss", "smooth_l1_loss",
                   "huber_loss", "softshrink", "hardshrink", "threshold", "soft_margin_loss",
                   "hinge_embedding_loss", "poisson_nll_loss",
                   # (fmax and fmin are a where, which keeps its condition, where PyTorch's node
                   # keeps both operands; nansum and nanmean a where too, where PyTorch keeps
                   # the input; float_power a pow of a float64 copy, where PyTorch keeps the
                   # input itself)
                   "fmax", "fmin", "nansum", "nansum_last", "nanmean", "float_power",
                   "float_power_2", "dist", "dist_1", "dist_inf"}
# Left out of the programs with infinities: PyTorch 2.13's CPU gelu gives NaN at +inf (its
# vectorised kernel), where the formula, and kit, give inf.
FINITE_ONLY = {"gelu", "softshrink"}
# (softshrink: PyTorch 2.13's gradient at NaN depends on where the element lies, 0 in its
# vectorised loop and 1 in the scalar tail, the last few elements; kit's is 0)
# Differences left that surveys (`python -m tests.differential N`) can still draw, rarely: PyTorch
# 2.13's addcdiv backward raises when its input was broadcast (a 0-d input against a larger or an
# empty tensor: its gradient is not summed back to the input's shape); kit sums it, as for any
# broadcast. And with an integer divisor PyTorch's addcdiv backward raises ("result type Float
# can't be cast to the desired output type Long"); kit differentiates it: the programs divide by
# floats.
# Also left, found by the grid over dtypes and shapes (tests/test_differential_grid.py) with
# extreme values: PyTorch computes part of atan2's gradient in a uint8 operand's dtype, where a
# negation wraps (kit's is the derivative); hardswish above 3 is PyTorch's x * 6 / 6, an ulp from
# x, and inf near float32's largest values (kit gives x); layer_norm of a row whose variance
# overflows float32 is NaN in PyTorch, finite in kit; softplus's gradient at exactly the
# threshold is z / (z + 1) in PyTorch, an ulp from kit's. And where an infinite gradient reaches
# a composite (BCE with logits of a -inf logit, fed by another loss), a term its one-node formula
# in PyTorch never forms gives inf * 0 = NaN in kit.


def _values(dtype, size, nan):
    if dtype == "bool":
        return st.lists(st.booleans(), min_size=size, max_size=size)
    if dtype.startswith("float"):
        # NOTE: multiples of 1/1000, not any float: with tiny and subnormal values (1e-300) a
        # gradient's terms cancel (1 + 1e164 - 1e164) and the result depends on the order the
        # engine adds them in, which kit does not copy from PyTorch.
        pool = EDGES + (SPECIAL if nan else [])
        element = st.sampled_from(pool) | st.integers(-3000, 3000).map(lambda i: i / 1000)
    else:
        element = st.sampled_from(INT_EDGES + (INT_EXTREMES if nan else [])) | st.integers(-5, 5)
    return st.lists(element, min_size=size, max_size=size)


@st.composite
def _leaf(draw, nan, dtypes=DTYPES[:2] + DTYPES):  # floats twice as often: more gradients
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(st.sampled_from(SHAPES))
    values = draw(_values(dtype, math.prod(shape), nan))
    return dtype, shape, values, draw(st.integers(0, 3)) if dtype.startswith("float") else 0


def _spread(names):
    # NOTE: not sampled_from: hypothesis favours its first items (the "simplest"), so a name is
    # drawn as a wide integer, which spreads the draws over every name (it shrinks to the first).
    return st.integers(0, 2**16).map(lambda i: names[i % len(names)])


def programs(nan=False, max_steps=4, inplace=False):
    """A strategy for programs as plain data: leaves (dtype, shape, values, grad: 0 none, 1 a
    leaf that requires grad, 2 or 3 a clone of one, which in-place steps may change) and steps
    (op name, two operand choices). With `inplace`, on floating leaves, every op is followed by
    a step that changes its result or one of its inputs in place."""
    operands = (st.integers(0, 99), st.integers(0, 99))
    if inplace:
        pair = st.tuples(st.tuples(_spread(sorted(set(STEPS) - SAVED_OTHERWISE)), *operands),
                         st.tuples(_spread(sorted(INPLACE)), *operands))
        return st.tuples(st.lists(_leaf(nan, DTYPES[:2]), min_size=1, max_size=3),
                         st.lists(pair, min_size=1, max_size=max_steps // 2).map(
                             lambda pairs: [step for p in pairs for step in p]))
    step = st.tuples(_spread(sorted(set(STEPS) - (FINITE_ONLY if nan else set()))), *operands)
    return st.tuples(st.lists(_leaf(nan), min_size=1, max_size=3),
                     st.lists(step, min_size=1, max_size=max_steps))


def leaf_array(dtype, shape, values):
    """The leaf's data: Python numbers wrapped into the dtype as a cast does (-1 as uint8 is
    255), the same array for both libraries."""
    data = np.array(values, dtype=np.float64 if dtype.startswith("float") else object)
    if dtype.startswith("float"):
        return data.astype(dtype).reshape(shape)
    if dtype == "bool":
        return data.astype(bool).reshape(shape)
    bits = np.iinfo(dtype).bits
    wrapped = [((int(v) + 2 ** (bits - 1)) % 2**bits) - 2 ** (bits - 1) for v in values]
    return np.array(wrapped, dtype=np.int64).astype(dtype).reshape(shape)


def run(lib, program, transform=None, order=1):
    """The outcome of `program` on `lib` (kit.torch or torch). `transform` wraps the function
    that applies the steps to the leaves (kit.compile, say); `order=2` adds the gradients of
    the sum of the gradients."""
    leaves, steps = program
    wrt = [lib.tensor(leaf_array(dtype, shape, values), requires_grad=grad > 0)
           for dtype, shape, values, grad in leaves]
    pool = [t.clone() if grad > 1 else t for t, (*_, grad) in zip(wrt, leaves, strict=True)]

    def apply(*pool):
        return _apply(lib, steps, list(pool))

    items, raised = (apply if transform is None else transform(apply))(*pool)
    pool += [v for v in items if not isinstance(v, tuple)]
    made = [v if isinstance(v, tuple) else _describe(v) for v in items]
    if raised is not None:
        return made + [raised]
    floats = [t for t in pool if t.dtype in (lib.float32, lib.float64) and t.requires_grad]
    wrt = [t for t in wrt if t.requires_grad]
    if floats and wrt:
        loss = sum(t.double().sum() for t in floats)
        try:
            grads = lib.autograd.grad(loss, wrt, allow_unused=True, create_graph=order > 1)
            made += [None if g is None else _describe(g) for g in grads]
            if order > 1 and any(g is not None and g.requires_grad for g in grads):
                total = sum(g.double().sum() for g in grads if g is not None and g.requires_grad)
                second = lib.autograd.grad(total, wrt, allow_unused=True)
                made += [None if g is None else _describe(g) for g in second]
        except Exception as exc:  # noqa: BLE001
            return made + [("raised", "grad", _error_class(exc))]
    return made


def _apply(lib, steps, pool):
    """The program's steps on `pool` (its values so far): (the values made, with a ("warned",
    step, class) before a value for each UserWarning its step gave; the failure or None)."""
    made, last = [], ()
    for i, (name, a, b) in enumerate(steps):
        x, y = pool[a % len(pool)], pool[b % len(pool)]
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            try:
                if name in INPLACE:  # on the last op's result or inputs (else any earlier value)
                    out = INPLACE[name](last[a % 3] if last else x)
                else:
                    out = STEPS[name](lib, x, y)
                    last = (out, x, y)
            except Exception as exc:  # noqa: BLE001 - the class is the outcome
                return made, ("raised", i, _error_class(exc))
        made += [("warned", i, w.category.__name__) for w in warned
                 if issubclass(w.category, UserWarning)]  # PyTorch's warnings, kit's too
        pool.append(out)
        made.append(out)
    return made, None


def _error_class(exc):
    """The built-in class an exception is (kit's own classes derive from PyTorch's)."""
    # NOTE: RuntimeError before TypeError/ValueError: kit's DtypeError and ShapeError are both
    # (PyTorch raises the RuntimeError), NotImplementedError first (a RuntimeError subclass).
    for cls in (IndexError, NotImplementedError, RuntimeError, TypeError, ValueError):
        if isinstance(exc, cls):
            return cls.__name__
    return type(exc).__name__


def _describe(t):
    data = np.asarray(t.detach().numpy(), dtype=np.float64)
    return (str(t.dtype).replace("torch.", ""), bool(t.requires_grad), data.shape,
            data.tolist())


def same(a, b):
    """Outcomes equal: dtypes, flags, shapes and error classes exactly, numbers to rounding."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x is None or y is None or x[0] in ("raised", "warned") or y[0] in ("raised", "warned"):
            if x != y:
                return False
            continue
        if x[:3] != y[:3]:
            return False
        if not np.allclose(np.asarray(x[3], dtype=float), np.asarray(y[3], dtype=float),
                           rtol=1e-5, atol=1e-6, equal_nan=True):
            return False
    return True


def outcomes(program):
    """(kit's outcome, PyTorch's outcome) of `program`.

    NOTE: kit runs with NumPy's floating-point warnings off: NumPy warns (RuntimeWarning) where
    an op makes inf or NaN (log(0), 1/0, inf - inf), PyTorch says nothing. That difference is
    kept: silencing it per op costs an errstate switch (about 2 us, as much as half a tiny op).
    """
    import torch

    import kit.torch

    with np.errstate(all="ignore"):
        ours = run(kit.torch, program)
    return ours, run(torch, program)


SETTINGS = {"deadline": None, "database": None,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def survey(n, nan, derandomize=True, inplace=False):
    """Try n programs; (number tried, [(program, kit's outcome, PyTorch's)] that differ)."""
    tried, found = [], []

    @settings(max_examples=n, derandomize=derandomize, **SETTINGS)
    @given(programs(nan, inplace=inplace))
    def each(program):
        tried.append(program)
        ours, theirs = outcomes(program)
        if not same(ours, theirs):
            found.append((program, ours, theirs))

    each()
    return len(tried), found


def main(n):
    kinds = {(False, False): "finite", (True, False): "with NaN, infinities and integer extremes",
             (False, True): "an op, then a value changed in place, on floats"}
    for (nan, inplace), kind in kinds.items():
        tried, found = survey(n, nan, derandomize=False, inplace=inplace)
        for program, ours, theirs in found:
            print(f"{program}\n  kit:     {ours}\n  pytorch: {theirs}")
        print(f"{tried} programs ({kind}), {len(found)} differences")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)


def pair_outcomes(lib, call, shapes, int_value=0):
    """`call(lib.nn.functional, x, t)` for every pair of dtypes (float32, float64, int64, bool),
    each pair of `shapes` and each choice of which operand requires grad: the result's dtype,
    value and number of UserWarnings, then the gradients; or the exception's class. (The loss
    tests compare these between kit.torch and PyTorch with `assert_same_pairs`.)"""
    dtypes = [lib.float32, lib.float64, lib.int64, lib.bool]
    outcomes = []
    for xd in dtypes:
        for td in dtypes:
            for xs, ts in shapes:
                for grads in [(True, False), (False, True), (True, True)]:
                    x = lib.full(xs, 0.25).to(xd) if xd in dtypes[:2] else lib.ones(xs, dtype=xd)
                    t = lib.full(ts, 0.5 if td in dtypes[:2] else int_value).to(td)
                    for v, g in zip((x, t), grads, strict=True):
                        if g and v.is_floating_point():
                            v.requires_grad_()
                    try:
                        with warnings.catch_warnings(record=True) as warned:
                            warnings.simplefilter("always")
                            y = call(lib.nn.functional, x, t)
                        got = [str(y.dtype).split(".")[-1], y.detach().item(),
                               sum(issubclass(w.category, UserWarning) for w in warned)]
                        if y.requires_grad:
                            y.backward()
                            got += [None if v.grad is None else v.grad.tolist() for v in (x, t)]
                    except Exception as e:  # noqa: BLE001 - the class is the outcome compared
                        got = _error_class(e)
                    outcomes.append(((str(xd), str(td), xs, ts, grads), got))
    return outcomes


def assert_same_pairs(ours, theirs):
    """Two `pair_outcomes` lists agree: classes, dtypes and warnings exactly, numbers to 1e-6."""
    for (case, a), (_, b) in zip(ours, theirs, strict=True):
        if isinstance(a, str) or isinstance(b, str):
            assert a == b, (case, a, b)
            continue
        assert a[0] == b[0] and a[2] == b[2] and len(a) == len(b), (case, a, b)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-6, err_msg=str(case))
        for u, v in zip(a[3:], b[3:], strict=True):
            assert (u is None) == (v is None), (case, a, b)
            if u is not None:
                np.testing.assert_allclose(u, v, rtol=1e-6, err_msg=str(case))
