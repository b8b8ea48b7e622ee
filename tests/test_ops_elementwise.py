"""Elementwise primitives: finite differences (first and second order) over broadcast shapes,
PyTorch as the reference, scalar operands, ties and kinks, comparisons."""

import numpy as np
import pytest
from helpers import away_from, check_op, compare_torch, host, leaf, rand
from hypothesis import HealthCheck, settings

import kit

FAST = settings(max_examples=12, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def positive(a):
    return np.abs(a) + 0.3


def nonzero(a):
    return away_from(a, [0.0], gap=0.3)


def domain(fn, a):
    return a if fn is None else fn(a)


def torch_fn(name):
    torch = pytest.importorskip("torch")
    return getattr(torch, name)


# --- unary (gradcheck and PyTorch for every op: test_op_registry.py) ---------------------
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "abs",
                                  "neg"])
def test_unary_method_spelling(name):
    x = leaf(positive(rand(4)))
    np.testing.assert_array_equal(host(getattr(x, name)()), host(getattr(kit, name)(x)))


def test_unary_rejects_non_tensor():
    with pytest.raises(TypeError, match=r"kit\.exp: expected a Tensor, got list"):
        kit.exp([1.0, 2.0])


def test_sigmoid_is_stable_for_large_inputs():
    x = leaf([-800.0, 0.0, 800.0])
    y = kit.sigmoid(x)
    np.testing.assert_allclose(host(y), [0.0, 0.5, 1.0])
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), [0.0, 0.25, 0.0])


def test_abs_subgradient_at_zero_is_zero():
    x = leaf([-1.0, 0.0, 2.0])
    kit.abs(x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [-1.0, 0.0, 1.0])


# --- binary (the broadcast grid for every op: test_op_registry.py) ------------------------
@pytest.mark.parametrize("expr", [
    lambda x: x + 2.5, lambda x: 2.5 + x, lambda x: x - 1.5, lambda x: 1.5 - x,
    lambda x: x * 3, lambda x: 3 * x, lambda x: x / 4.0, lambda x: 4.0 / x, lambda x: x ** 3,
    lambda x: x ** 0.5, lambda x: 2.0 ** x, lambda x: -x, lambda x: abs(x), lambda x: +x,
    lambda x: x ** -1.5,
], ids=["add", "radd", "sub", "rsub", "mul", "rmul", "div", "rdiv", "pow_int", "pow_half",
        "rpow", "neg", "abs", "pos", "pow_neg"])
def test_python_scalar_operands(expr, xp_device):
    check_op(expr, positive(rand(2, 3)), device=xp_device, order=2)
    compare_torch(expr, expr, positive(rand(2, 3)), device=xp_device)


def test_numpy_array_operand_is_a_constant():
    x = leaf(rand(2, 3))
    c = np.arange(3.0)
    y = x * c + c
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.broadcast_to(c, (2, 3)))
    z = c - x  # ndarray on the left defers to Tensor's reflected operator
    assert isinstance(z, kit.Tensor) and z.requires_grad


def test_pow_exponent_gradient_at_zero_and_negative_bases_is_pytorchs():
    """d(a**b)/db = a**b log(a): 0 at a == 0 with b >= 0, -inf there with b < 0, NaN for a < 0
    (checked on PyTorch 2.13; an earlier kit gave 0 for every a <= 0)."""
    a = leaf([-2.0, 0.0, 3.0, 0.0])
    b = leaf([2.0, 2.0, 2.0, -1.0])
    (a ** b).sum().backward()
    np.testing.assert_allclose(host(b.grad), [np.nan, 0.0, 9.0 * np.log(3.0), -np.inf])
    np.testing.assert_allclose(host(a.grad)[:3], [-4.0, 0.0, 6.0])


def test_pow_with_exponent_zero_has_zero_gradient_at_zero():
    """A polynomial's constant term x**0 must not make the gradient nan at x = 0."""
    x = leaf([0.0, 1.0])
    coefficients = [3.0, 2.0, 1.0]
    sum(c * x ** k for k, c in enumerate(coefficients)).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [2.0, 4.0])
    compare_torch(lambda a, b: a ** b, lambda a, b: a ** b, np.array([0.0, 0.0, 2.0]),
                  np.array([0.0, 2.0, 0.0]))


def test_pow_scalar_base_gradient():
    b = leaf([0.5, 2.0])
    (2.0 ** b).sum().backward()
    np.testing.assert_allclose(host(b.grad), np.log(2.0) * 2.0 ** np.array([0.5, 2.0]))


def test_third_derivative_of_x_to_the_fourth():
    x = leaf(1.5)
    (g1,) = kit.grad(x ** 4, x, create_graph=True)
    (g2,) = kit.grad(g1, x, create_graph=True)
    (g3,) = kit.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == pytest.approx((4 * 1.5**3, 12 * 1.5**2, 24 * 1.5))


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_extremum_ties_split_the_gradient(name):
    a = leaf([1.0, 2.0, 3.0])
    b = leaf([1.0, 5.0, 0.0])
    getattr(kit, name)(a, b).sum().backward()
    first = [0.5, 0.0, 1.0] if name == "maximum" else [0.5, 1.0, 0.0]
    np.testing.assert_array_equal(host(a.grad), first)
    np.testing.assert_array_equal(host(b.grad), 1 - np.array(first))
    compare_torch(getattr(kit, name), torch_fn(name), np.array([1.0, 2.0, 3.0]),
                  np.array([1.0, 5.0, 0.0]))


# --- where and clamp ------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((3,), (3,), (3,)), ((2, 3), (3,), (2, 1)),
                                    ((2, 1), (1, 3), ()), ((3,), (2, 3), (2, 3))], ids=str)
def test_where_gradcheck_and_torch(shapes, xp_device):
    rng = np.random.default_rng(3)
    cond = rng.random(shapes[0]) > 0.5
    k_cond = kit.tensor(cond, device=xp_device)
    a, b = rand(*shapes[1], rng=rng), rand(*shapes[2], rng=rng)
    check_op(lambda x, y: kit.where(k_cond, x, y), a, b, device=xp_device, order=2)
    torch = pytest.importorskip("torch")
    compare_torch(lambda x, y: kit.where(k_cond, x, y),
                  lambda x, y: torch.where(torch.from_numpy(cond), x, y), a, b, device=xp_device)


def test_where_with_a_scalar_and_a_tensor_condition():
    x = leaf([-1.0, 2.0, -3.0])
    y = kit.where(x > 0, x, 0.0)
    y.sum().backward()
    np.testing.assert_array_equal(host(y), [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(host(x.grad), [0.0, 1.0, 0.0])


def test_where_of_two_numbers_has_pytorchs_default_dtypes():
    torch = pytest.importorskip("torch")
    cond = np.array([True, False])
    for a, b in ((1.0, -1.0), (1, -1), (1, -1.0), (True, False)):
        want = torch.where(torch.from_numpy(cond), a, b)
        got = kit.where(kit.tensor(cond), a, b)
        assert str(got.dtype) == str(want.dtype).removeprefix("torch."), (a, b)
        np.testing.assert_array_equal(host(got), want.numpy())


def test_where_needs_a_bool_condition():
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError, match="kit.where: condition must be a bool tensor"):
        kit.where(np.array([1, 0]), x, x)


@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (None, 0.3), (-0.3, None)], ids=str)
def test_clamp_gradcheck_and_torch(bounds, xp_device):
    lo, hi = bounds
    x = away_from(rand(3, 4), [b for b in bounds if b is not None])
    check_op(lambda t: kit.clamp(t, lo, hi), x, device=xp_device, order=2)
    compare_torch(lambda t: kit.clamp(t, lo, hi), lambda t: t.clamp(lo, hi), x, device=xp_device)


def test_clamp_gradient_includes_the_bounds():
    x = leaf([-2.0, -1.0, 0.0, 1.0, 2.0])
    x.clamp(-1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0.0, 1.0, 1.0, 1.0, 0.0])


def test_clamp_needs_a_bound():
    with pytest.raises(ValueError, match="kit.clamp: at least one of min and max"):
        kit.clamp(leaf([1.0]))


# --- comparisons ----------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_give_bool_without_grad(op):
    a = leaf([1.0, 2.0, 3.0])
    b = leaf([2.0, 2.0, 2.0])
    for out in (getattr(kit, op)(a, b), getattr(a, f"__{op}__")(b), getattr(a, op)(2.0)):
        assert out.dtype == kit.bool_
        assert not out.requires_grad and out.grad_fn is None
    expected = getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                            "gt": "greater", "ge": "greater_equal"}[op])([1, 2, 3], [2, 2, 2])
    np.testing.assert_array_equal(getattr(kit, op)(a, b).data, expected)


def test_equality_with_a_non_operand_is_false_as_in_pytorch():
    t = kit.tensor([1.0])
    assert (t == None) is False and (t != None) is True  # noqa: E711 - the operator is tested
    assert (t == "a") is False and (t != object()) is True
    assert t not in [None, "a"]
    with pytest.raises(TypeError, match="kit.eq: unsupported operand of type NoneType"):
        kit.eq(t, None)


def test_logical_ops_and_sign():
    p = kit.tensor([True, False, True])
    q = kit.tensor([True, True, False])
    np.testing.assert_array_equal((p & q).data, [True, False, False])
    np.testing.assert_array_equal((p | q).data, [True, True, True])
    np.testing.assert_array_equal((p ^ q).data, [False, True, True])
    np.testing.assert_array_equal((~p).data, [False, True, False])
    s = kit.sign(leaf([-2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(host(s), [-1.0, 0.0, 1.0])
    assert s.requires_grad and s.grad_fn.name() == "SignBackward0"  # tracked, as in PyTorch
    s.sum().backward()  # with a zero gradient


@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite"])
@pytest.mark.parametrize("values", [[1.0, float("nan"), float("inf"), -float("inf")], [1, -2],
                                    [True, False]], ids=["float", "int", "bool"])
def test_isnan_isinf_isfinite_as_pytorch(op, values):
    x = kit.tensor(values)
    for out in (getattr(kit, op)(x), getattr(x, op)()):
        assert out.dtype == kit.bool_ and not out.requires_grad
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(host(getattr(kit, op)(x)),
                                  getattr(torch, op)(torch.tensor(values)).numpy())


def test_gradients_keep_the_input_dtype():
    x = kit.tensor([1.0, 2.0], requires_grad=True)  # float32
    y = kit.tensor(np.array([3.0, 4.0]), requires_grad=True)  # float64
    (x * y).sum().backward()
    assert x.grad.dtype == kit.float32 and y.grad.dtype == kit.float64
    z = kit.tensor([1.0, 2.0], requires_grad=True)
    (z * np.float64(2.0) + 1).sum().backward()
    assert z.grad.dtype == kit.float32


def test_sigmoid_is_exact_to_a_few_ulps_far_into_both_tails():
    x = np.array([-80.0, -60.0, -20.0, -10.0, -1e-3, 0.0, 1e-3, 10.0, 20.0, 60.0], np.float32)
    got = kit.sigmoid(kit.tensor(x)).numpy()
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np.float32).eps, atol=0)
    assert got.dtype == np.float32
    torch = pytest.importorskip("torch")  # and, where e^-x overflows, PyTorch's 0
    tails = np.array([-100.0, -88.0, 88.0, 100.0], np.float32)
    np.testing.assert_array_equal(kit.sigmoid(kit.tensor(tails)).numpy(),
                                  torch.sigmoid(torch.from_numpy(tails)).numpy())
