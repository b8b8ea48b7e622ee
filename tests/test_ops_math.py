"""kit/ops/elementwise_math.py at the edges, against PyTorch 2.13: integer, bool and NaN inputs,
the in-place forms, and the errors (the generic registry tests check values and gradients)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers import host

import kit
import kit.torch as ktorch
from kit.ops.elementwise_math import erfinv_array

torch = pytest.importorskip("torch")

INT = [3, -2, 0, 7]
BOOL = [True, False, True]
FLOAT = [1.5, -2.5, 0.5, -0.25, float("nan"), float("inf")]
UNARY = ["floor", "ceil", "round", "trunc", "frac", "sinh", "cosh", "asin", "acos", "atan",
         "arcsin", "arccos", "arctan", "fix", "log2", "log10", "erfinv", "square", "rsqrt",
         "reciprocal", "sgn", "nan_to_num"]


def _same(got, expected):
    """kit's result equals PyTorch's: dtype, shape and values (NaN where PyTorch has NaN)."""
    assert np.dtype(got.dtype) == expected.numpy().dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(host(got), expected.double().numpy(), rtol=1e-6, equal_nan=True)


def _both(fn, data):
    """fn on kit.torch and on torch: both results, or both exception types."""
    results = []
    for module in (ktorch, torch):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's; PyTorch is silent
                results.append(fn(module, module.tensor(data)))
        except (RuntimeError, TypeError, NotImplementedError) as exc:
            results.append(exc)
    return results


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("data", [INT, BOOL, FLOAT], ids=["int", "bool", "float"])
def test_unary_on_every_dtype_as_pytorch(name, data):
    got, expected = _both(lambda m, x: getattr(m, name)(x), data)
    if isinstance(expected, Exception):
        assert isinstance(got, type(expected)), (got, expected)
        assert name in str(got) or "kit" in str(got)
    else:
        _same(got, expected)


@pytest.mark.parametrize("name", UNARY)
def test_in_place_forms_write_into_the_tensor(name):
    results = []
    for module in (ktorch, torch):
        x = module.tensor([0.625, -0.375, 0.25] if name in ("asin", "acos", "atan") else
                          [0.625, 0.375, 0.25])
        view = x[1:]
        assert getattr(x, name + "_")() is x
        results += [x, view]
    _same(results[0], results[2])
    _same(results[1], results[3])  # a view sees the change


def test_in_place_forms_with_arguments_and_their_gradients():
    def program(m):
        a = m.tensor([0.75, -1.5, 2.0], dtype=m.float64, requires_grad=True)
        b = m.tensor([0.5, 1.5, -1.0], dtype=m.float64, requires_grad=True)
        x = a * 1
        x.round_(decimals=1)
        y = a * 2
        y.lerp_(b, 0.25)
        y.addcmul_(a, b, value=0.5)
        y.addcdiv_(b, a.abs() + 1)
        y.clamp_min_(-1.0).clamp_max_(2.5)
        y.nan_to_num_(nan=0.0)
        y.atan2_(b).hypot_(a)
        z = (x + y).sum()
        z.backward()
        return [x, y, a.grad, b.grad]

    for got, expected in zip(program(ktorch), program(torch), strict=True):
        np.testing.assert_allclose(host(got), expected.detach().numpy(), rtol=1e-12)


def test_rounding_keeps_integers_and_refuses_bool_and_decimals_on_integers():
    x = kit.tensor([3, -2])
    assert ktorch.floor(x).dtype == np.int64 and ktorch.floor(x)._data is not x._data
    with pytest.raises(NotImplementedError, match="Bool"):
        ktorch.ceil(kit.tensor([True]))
    with pytest.raises(NotImplementedError, match="decimals=2.*x.float"):
        ktorch.round(x, decimals=2)
    np.testing.assert_allclose(host(ktorch.round(kit.tensor([1234.5, 0.125]), decimals=-2)),
                               torch.round(torch.tensor([1234.5, 0.125]), decimals=-2))


@pytest.mark.parametrize(("name", "a", "b"), [
    ("atan2", [1, -2], [3, 0]), ("atan2", [True], [False]), ("hypot", [3, 0], [4, 0]),
    ("hypot", [3.0, 0.0], [4.0, 0.0]), ("atan2", [1.0, float("nan")], [0.0, 1.0]),
])
def test_binary_ops_on_integers_and_nan_as_pytorch(name, a, b):
    results = []
    for module in (ktorch, torch):
        try:
            results.append(getattr(module, name)(module.tensor(a), module.tensor(b)))
        except (RuntimeError, NotImplementedError) as exc:
            results.append(exc)
    got, expected = results
    if isinstance(expected, Exception):
        assert isinstance(got, type(expected)) and "Fix" in str(got)
    else:
        _same(got, expected)


def test_heaviside_as_pytorch_and_its_backward_raises_as_pytorch_does():
    x = [-1.0, 0.0, 2.0, float("nan")]
    got = ktorch.heaviside(ktorch.tensor(x), ktorch.tensor([0.5]))
    _same(got, torch.heaviside(torch.tensor(x), torch.tensor([0.5])))
    _same(ktorch.tensor([True, False]).heaviside(ktorch.tensor([True])),
          torch.tensor([True, False]).heaviside(torch.tensor([True])))
    with pytest.raises(RuntimeError, match="same dtype.*values.to"):
        ktorch.heaviside(ktorch.tensor([1, 0]), ktorch.tensor([0.5]))
    with pytest.raises(TypeError, match="'values' must be a Tensor"):
        ktorch.heaviside(ktorch.tensor([1.0]), 0.5)
    with pytest.raises(RuntimeError, match="broadcast"):
        ktorch.heaviside(ktorch.ones(2), ktorch.ones(3))
    leaf = ktorch.tensor(x[:3], requires_grad=True)
    y = ktorch.heaviside(leaf, ktorch.tensor([0.5]))
    assert y.requires_grad  # as PyTorch: recorded, so the error comes at backward
    with pytest.raises(RuntimeError, match="derivative for heaviside is not implemented"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        torch.heaviside(torch.tensor(x[:3], requires_grad=True), torch.tensor([0.5])).sum() \
            .backward()


def test_nan_to_num_defaults_are_the_dtype_extremes():
    for dtype in (kit.float32, kit.float64):
        x = kit.tensor([math.nan, math.inf, -math.inf, 1.0], dtype=dtype)
        info = np.finfo(dtype)
        np.testing.assert_array_equal(host(ktorch.nan_to_num(x)), [0, info.max, info.min, 1])
    x = ktorch.tensor([math.nan, math.inf, 2.0], requires_grad=True)
    ktorch.nan_to_num(x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0, 0, 1])  # as PyTorch


def test_erfinv_is_exact_to_the_last_digits_into_the_tails():
    near_one = 1 - np.logspace(-16, -1, 60)
    x = np.concatenate([np.linspace(-0.999, 0.999, 501), near_one, -near_one, [0.0, 1.0, -1.0]])
    expected = torch.erfinv(torch.tensor(x)).numpy()
    np.testing.assert_allclose(erfinv_array(x), expected, rtol=1e-14)
    assert np.isnan(erfinv_array(np.array([1.5, -2.0, np.nan]))).all()
    x32 = x.astype(np.float32)
    assert erfinv_array(x32).dtype == np.float32


def test_lerp_addcmul_addcdiv_dtypes_and_errors_as_pytorch():
    a, b = ktorch.tensor([1.0, 2.0]), ktorch.tensor([3.0, 5.0])
    assert ktorch.lerp(a, b, 1.0).tolist() == [3.0, 5.0]  # the far end exactly
    _same(ktorch.lerp(a, b, ktorch.tensor([0.25, 0.75])),
          torch.lerp(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 5.0]),
                     torch.tensor([0.25, 0.75])))
    with pytest.raises(NotImplementedError, match="lerp.*int64"):
        ktorch.lerp(ktorch.tensor([1, 2]), ktorch.tensor([3, 4]), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float32 for `end`"):
        ktorch.lerp(a, b.double(), 0.5)
    _same(ktorch.addcmul(ktorch.tensor([1, 2]), ktorch.tensor([3, 4]), ktorch.tensor([1, 1]),
                         value=2),
          torch.addcmul(torch.tensor([1, 2]), torch.tensor([3, 4]), torch.tensor([1, 1]),
                        value=2))
    with pytest.raises(RuntimeError, match="integer division with addcdiv"):
        ktorch.addcdiv(ktorch.tensor([1, 2]), ktorch.tensor([3, 4]), ktorch.tensor([2, 2]))
    _same(ktorch.clamp_min(ktorch.tensor([1, 2, 3]), 2.5),
          torch.clamp_min(torch.tensor([1, 2, 3]), 2.5))


def test_the_core_unary_ops_have_their_in_place_forms_as_pytorch():
    def program(m):
        a = m.tensor([0.5, -1.5, 2.0], dtype=m.float64, requires_grad=True)
        total = 0
        for name in ("exp", "log", "sin", "cos", "tanh", "sigmoid", "neg", "abs", "sqrt",
                     "relu", "log1p", "expm1", "erf", "sign"):
            x = (a.abs() + 0.25 if name in ("log", "sqrt", "log1p") else a) * 1
            assert getattr(x, name + "_")() is x
            total = total + x.sum()
        y, z = a * 1, a * 1
        y.pow_(3)
        z **= 2
        (total + y.sum() + z.sum()).backward()
        return [total, y, z, a.grad]

    for got, expected in zip(program(ktorch), program(torch), strict=True):
        np.testing.assert_allclose(host(got), expected.detach().numpy(), rtol=1e-12)
