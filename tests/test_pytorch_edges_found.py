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


# --- found once nn.functional's activations and losses joined the programs --------------------
@pytest.mark.parametrize("torch", LIBS)
@pytest.mark.parametrize("op", ["gelu", "silu", "softplus", "leaky_relu"])
def test_float_only_activations_refuse_integers_and_bools(torch, op):
    """PyTorch's kernels are float-only: NotImplementedError, not a silent float result."""
    F = torch.nn.functional
    for dtype in (torch.int64, torch.uint8, torch.bool):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            getattr(F, op)(torch.ones(3, dtype=dtype))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.layer_norm(torch.ones(2, 3, dtype=torch.int64), (3,))
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        F.binary_cross_entropy_with_logits(torch.ones(3, dtype=torch.int32), torch.ones(3))


@pytest.mark.parametrize("torch", LIBS)
def test_mse_loss_broadcasts_a_target_of_another_shape_with_pytorchs_warning(torch):
    F = torch.nn.functional
    with pytest.warns(UserWarning, match=r"Using a target size \(torch.Size\(\[\]\)\) that is "
                                         r"different to the input size \(torch.Size\(\[3\]\)\)"):
        loss = F.mse_loss(torch.tensor([1.0, 2.0, 4.0]), torch.tensor(2.0))
    assert float(loss) == pytest.approx(5 / 3)
    with pytest.raises(RuntimeError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F.mse_loss(torch.ones(3), torch.ones(2))  # not broadcastable: the shape error


@pytest.mark.parametrize("torch", LIBS)
def test_atan2_addcmul_and_lerp_at_their_edges(torch):
    """atan2's gradient at (0, 0) is 0 and -0 (not NaN); addcmul of integers truncates a float
    value (0.5 is 0); lerp checks dtypes before refusing bools."""
    y = torch.tensor([0.0], requires_grad=True)
    x = torch.tensor([0.0], requires_grad=True)
    torch.atan2(y, x).backward()
    assert values(y.grad)[0] == 0 and values(x.grad)[0] == 0
    assert np.signbit(values(x.grad)[0]) and not np.signbit(values(y.grad)[0])
    a, b = torch.tensor([1, 2]), torch.tensor([3, 4])
    for value, want in ((0.5, [1, 2]), (1.5, [4, 10]), (-1.7, [-2, -6])):
        out = torch.addcmul(a, a, b, value=value)
        assert out.dtype == torch.int64
        np.testing.assert_array_equal(values(out), want)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.addcmul(*(torch.tensor([True]),) * 3, value=0.5)
    with pytest.raises(RuntimeError, match="expected dtype"):
        torch.lerp(torch.tensor([True]), torch.zeros(1, dtype=torch.float64), 0.25)


@pytest.mark.parametrize("torch", LIBS)
def test_layer_norm_and_mse_loss_shapes_and_dtypes_as_pytorch(torch):
    F = torch.nn.functional
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        F.layer_norm(torch.tensor(0.5, dtype=torch.float64), ())
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\]"):
        F.layer_norm(torch.ones(2, 3), (4,))
    # integers with a float target compute in float (PyTorch promotes); two integer ones do not
    assert float(F.mse_loss(torch.tensor([1, 3]), torch.tensor([1.0, 1.0]))) == 2.0
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.mse_loss(torch.tensor([1, 2]), torch.tensor([1, 2], dtype=torch.int32))


@pytest.mark.parametrize("torch", LIBS)
def test_softplus_far_left_and_erfinv_keeps_its_input(torch):
    """softplus(-20) is 2.06e-9 in float32 (log1p, not log(1 + e)); erfinv keeps its input, so
    changing the input in place before backward is an error (and changing the output is not)."""
    x = torch.tensor([-20.0], requires_grad=True)
    torch.nn.functional.softplus(x).backward()
    assert values(x.grad)[0] == pytest.approx(2.0611537e-09, rel=1e-5)
    x = torch.tensor([0.3, -0.5], requires_grad=True).clone()
    y = torch.erfinv(x)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x = torch.tensor([0.3, -0.5], requires_grad=True)
    y = torch.erfinv(x)
    z = y * 1
    y.add_(1)
    z.sum().backward()
    np.testing.assert_allclose(values(x.grad), [0.954520, 1.112585], rtol=1e-5)


@pytest.mark.parametrize("torch", LIBS)
def test_cumsum_of_negative_zeros_and_mse_loss_of_a_bool_target(torch):
    """PyTorch's running sum starts from 0: cumsum of -0.0 is +0.0 (1 / it is inf, not -inf);
    mse_loss computes a bool target in the input's dtype."""
    out = torch.cumsum(torch.tensor([[-0.0, 1.0], [-0.0, 2.0]]), 0)
    assert not np.signbit(values(out)).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = torch.nn.functional.mse_loss(torch.tensor(0.5), torch.zeros(2, 3, dtype=torch.bool))
    assert float(loss) == 0.25
    with pytest.raises(RuntimeError):
        torch.addcmul(*(torch.zeros(2, 0, dtype=torch.bool),) * 2, torch.zeros(3, dtype=torch.bool))


@pytest.mark.parametrize("torch", LIBS)
def test_bce_with_logits_gradient_at_zero(torch):
    """d/dx at x = 0 is sigmoid(0) - target = 1/2 (a |x| and max(-x, 0) spelling gave 1)."""
    x = torch.tensor([0.0], requires_grad=True)
    torch.nn.functional.binary_cross_entropy_with_logits(x, torch.zeros(1)).backward()
    assert values(x.grad)[0] == 0.5


@pytest.mark.parametrize("torch", LIBS)
def test_losses_promote_a_broadcast_0d_target_as_pytorch(torch):
    """l1, smooth L1 and MSE broadcast the operands first (PyTorch's broadcast_tensors), so a
    float64 0-d target makes the loss float64; huber_loss does not, and stays float32."""
    F = torch.nn.functional
    x, t = torch.ones(3), torch.tensor(1.0, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = [f(x, t).dtype for f in (F.l1_loss, F.smooth_l1_loss, F.mse_loss, F.huber_loss)]
    assert got == [torch.float64, torch.float64, torch.float64, torch.float32]
