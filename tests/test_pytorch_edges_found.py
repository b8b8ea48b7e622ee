"""What the differential programs (tests/differential.py) found, each pinned here, run on
kit.torch and (where installed) real PyTorch; and the differences left, with their reasons."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from tests.torch_oracle import is_kit, libraries

LIBS = libraries()
INF, NAN = math.inf, math.nan


def values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


@pytest.fixture(autouse=True)
def _quiet_numpy():
    """NumPy warns where an op makes inf or NaN (0 / 0), PyTorch is silent: a known difference
    (tests/differential.py's `outcomes`)."""
    with np.errstate(all="ignore"):
        yield


@pytest.mark.parametrize("torch", LIBS)
def test_cumsum_adds_in_order_so_an_inf_spreads_forward_only(torch):
    x = torch.tensor([[1.0, -INF, 2.0], [0.5, 0.25, NAN]], requires_grad=True)
    y = x.cumsum(1)
    np.testing.assert_array_equal(values(y), [[1.0, -INF, -INF], [0.5, 0.75, NAN]])
    assert type(y.grad_fn).__name__ == "CumsumBackward0"
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad((x.cumsum(0) * x).sum(), x, create_graph=True)
    np.testing.assert_allclose(values(g), [[6.0, 9.0, 12.0], [9.0, 12.0, 15.0]])
    (gg,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(values(gg), [[3.0, 3.0, 3.0], [3.0, 3.0, 3.0]])
    assert torch.tensor([True, True]).cumsum(0).dtype == torch.int64


@pytest.mark.parametrize("torch", LIBS)
def test_std_has_a_zero_gradient_where_it_is_zero(torch):
    x = torch.tensor([[0.5, 1.0], [0.5, 2.0]], dtype=torch.float64, requires_grad=True)
    x.std(0).sum().backward()
    np.testing.assert_allclose(values(x.grad), [[0.0, -0.5**0.5], [0.0, 0.5**0.5]])


@pytest.mark.parametrize("torch", LIBS)
def test_inf_norm_of_a_nan_slice_is_nan_with_pytorchs_gradient(torch):
    x = torch.tensor([[NAN, 1.0], [-2.0, 1.0]], requires_grad=True)
    n = torch.linalg.vector_norm(x, -INF, dim=1)
    np.testing.assert_array_equal(values(n), [NAN, 1.0])
    n.sum().backward()
    np.testing.assert_array_equal(values(x.grad), [[0.0, 0.0], [0.0, 1.0]])
    x = torch.tensor([NAN, 1.0], requires_grad=True)
    (torch.log(x.norm(INF)) + 0).backward()  # a NaN gradient reaches it: NaN, as PyTorch
    assert np.isnan(values(x.grad)).all()


@pytest.mark.parametrize("torch", LIBS)
def test_an_overwritten_slice_sends_no_nan_back(torch):
    leaf = torch.tensor([2.0, 3.0], requires_grad=True)
    x = leaf * 1
    top = x[:1]
    top.zero_()
    (top / top).sum().backward()  # 0 / 0: a NaN gradient for the part zero_ overwrote
    np.testing.assert_array_equal(values(leaf.grad), [0.0, 0.0])


@pytest.mark.parametrize("torch", LIBS)
def test_sign_sends_zeros_back_even_for_an_inf_gradient(torch):
    x = torch.tensor([NAN, 1.0], requires_grad=True)
    (torch.sign(x) * torch.tensor([INF, 1.0])).sum().backward()
    np.testing.assert_array_equal(values(x.grad), [0.0, 0.0])


@pytest.mark.parametrize("torch", LIBS)
def test_power_one_half_keeps_the_sign_of_minus_zero(torch):
    x = torch.tensor([-0.0, 4.0], requires_grad=True)
    y = x ** 0.5
    y.sum().backward()
    np.testing.assert_array_equal(values(x.grad), [-INF, 0.25])
    assert values(torch.tensor(-0.0) ** -0.5) == -INF
    np.testing.assert_array_equal(values(torch.tensor([4]) ** 0.5), [2.0])


@pytest.mark.parametrize("torch", LIBS)
def test_pow_zero_slopes_and_an_infinite_gradient(torch):
    """d(a ** 0)/da and d(0 ** b)/db (b >= 0) are 0. PyTorch fills a's 0 after multiplying by
    the incoming gradient (an inf gradient still gives 0) and b's before (inf * 0 = NaN)."""
    a = torch.tensor([0.0, 2.0], requires_grad=True)
    b = torch.tensor([0.0, 2.67], requires_grad=True)
    ((a ** b) ** 0.5 * torch.tensor([INF, 1.0])).sum().backward()
    assert values(a.grad)[0] == 0 and np.isnan(values(b.grad)[0])
    x = torch.tensor([0.0, 2.0], requires_grad=True)
    (x ** 0).sum().backward()
    np.testing.assert_array_equal(values(x.grad), [0.0, 0.0])
    x.grad = None
    ((x ** 0) * torch.tensor([INF, -INF])).sum().backward()
    np.testing.assert_array_equal(values(x.grad), [0.0, 0.0])


@pytest.mark.parametrize("torch", LIBS)
def test_matmul_takes_one_dtype_and_no_bools_after_checking_shapes(torch):
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.ones(2, 2) @ torch.ones(2, 2, dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.ones(3, dtype=torch.bool) @ torch.ones(3, dtype=torch.bool)
    with pytest.raises(RuntimeError) as caught:  # the shapes first
        torch.ones(2, 0, dtype=torch.bool) @ torch.ones(2, 0, dtype=torch.bool)
    assert not isinstance(caught.value, NotImplementedError)
    assert (torch.ones(2, 2, dtype=torch.int64) @ torch.ones(2, 2, dtype=torch.int64)).dtype \
        == torch.int64


@pytest.mark.parametrize("torch", LIBS)
def test_masked_fill_casts_the_value_to_an_integer_tensor(torch):
    x = torch.tensor([-2, 2**63 - 1, 7])
    mask = torch.tensor([True, False, True])
    for value, want in ((0.5, 0), (2.7, 2), (-2.7, -2), (True, 1), (torch.tensor(2.5), 2)):
        assert x.masked_fill(mask, value).tolist() == [want, 2**63 - 1, want]
    assert values(torch.tensor([True, False]).masked_fill(mask[:2], 0.5)).tolist() == [1, 0]
    with pytest.raises(RuntimeError, match="value cannot be converted to type"):
        torch.tensor([1, 2], dtype=torch.uint8).masked_fill(mask[:2], 300)


@pytest.mark.parametrize("torch", LIBS)
@pytest.mark.parametrize("mask", [(0,), (2,), (1, 2)])
def test_a_boolean_mask_of_another_shape_is_an_index_error(torch, mask):
    x = torch.zeros(1, 3)
    with pytest.raises(IndexError, match="The shape of the mask"):
        x[torch.zeros(mask, dtype=torch.bool)]
    with pytest.raises(IndexError, match="The shape of the mask"):
        x[torch.zeros(mask, dtype=torch.bool)] = 1.0
    assert tuple(x[torch.ones(1, 3, dtype=torch.bool)].shape) == (3,)


@pytest.mark.parametrize("torch", LIBS)
def test_clamp_bounds_broadcast_and_promote_as_pytorch(torch):
    with pytest.raises(RuntimeError):
        torch.clamp(torch.zeros(0), min=torch.zeros(3))
    out = torch.clamp(torch.tensor(0.5), min=torch.tensor([[7, -1, -5]]))
    assert out.dtype == torch.float32
    np.testing.assert_array_equal(values(out), [[7.0, 0.5, 0.5]])
    with pytest.raises(RuntimeError):
        torch.ones(2, dtype=torch.bool) ** torch.ones(3, dtype=torch.bool)


@pytest.mark.parametrize("torch", LIBS)
def test_prod_var_and_std_gradients_are_pytorchs_formulas(torch):
    """prod, var and std are one node each with PyTorch's backward: result / x where no element
    is 0 (NaN next to an inf), the product of the others where one is; 2 / (N - c) * g *
    (x - mean), NaN where x is the mean and inf elsewhere at no degrees of freedom; 0 where std
    is 0."""
    x = torch.tensor([-INF, 0.5, -3.0], requires_grad=True)
    x.prod().backward()
    np.testing.assert_array_equal(values(x.grad), [NAN, INF, -INF])
    x = torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]], requires_grad=True)
    x.prod(1).sum().backward()
    np.testing.assert_array_equal(values(x.grad), [[0.0, 0.0, 0.0], [0.0, 4.0, 0.0]])
    x.grad = None
    (x.prod() * INF).backward()  # several zeros in a whole product: zeros, not inf * 0
    np.testing.assert_array_equal(values(x.grad), np.zeros((2, 3)))
    x = torch.tensor([1.0, 3.0, INF], requires_grad=True)
    x.var().backward()
    np.testing.assert_array_equal(values(x.grad), [-INF, -INF, NAN])  # x - mean: inf - inf
    for make in (lambda t: t.var(), lambda t: t.std(0, keepdim=True)):
        x = torch.tensor([2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degrees of freedom <= 0
            make(x).sum().backward()
        assert np.isnan(values(x.grad)).all()
    x = torch.tensor([[2.0, 2.0], [1.0, 3.0]], requires_grad=True)
    x.std(1).sum().backward()
    np.testing.assert_allclose(values(x.grad), [[0.0, 0.0], [-0.707107, 0.707107]], rtol=1e-5)


# --- differences left, with their reasons -----------------------------------------------------
@pytest.mark.parametrize("torch", LIBS)
def test_std_over_every_dim_by_an_empty_list(torch):
    """std(dim=[]) reduces every dim in both; PyTorch 2.13's gradient of it is inf (its backward
    divides by N - 1 with N = 1, as if no dim were reduced), kit's is std()'s."""
    x = torch.tensor([2.0, 0.5, 2.0], requires_grad=True)
    x.std(dim=[]).backward()
    if is_kit(torch):
        np.testing.assert_allclose(values(x.grad), [0.288675, -0.57735, 0.288675], rtol=1e-5)
    else:
        assert np.isinf(values(x.grad)).all()
