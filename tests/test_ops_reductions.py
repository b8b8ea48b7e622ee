"""Reductions: sum, mean, max/min (over all, or along an axis with indices), logsumexp, over an
axis x keepdims grid; finite differences, second order, PyTorch; ties; bad axes."""

import numpy as np
import pytest
from helpers import check_op, compare_torch, host, leaf, rand
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import kit

AXES = [None, 0, 1, -1, (0, 2), (1, -1), (0, 1, 2)]
SMOOTH = ["sum", "mean", "logsumexp"]


def torch_dims(axis, ndim):
    """kit's axis as PyTorch's dim (None means every dim)."""
    return tuple(range(ndim)) if axis is None else axis


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", SMOOTH)
def test_smooth_reduction_gradcheck(name, axis, keepdims, xp_device):
    fn = getattr(kit, name)
    check_op(lambda x: fn(x, axis, keepdims), rand(2, 3, 4), device=xp_device, order=2)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", SMOOTH)
def test_smooth_reduction_matches_torch(name, axis, keepdims, xp_device):
    torch = pytest.importorskip("torch")
    fn = getattr(kit, name)
    t_fn = getattr(torch, name)
    compare_torch(lambda x: fn(x, axis, keepdims),
                  lambda x: t_fn(x, dim=torch_dims(axis, 3), keepdim=keepdims),
                  rand(2, 3, 4), device=xp_device)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=array_shapes(min_dims=0, max_dims=3, max_side=3), data=st.data(),
       name=st.sampled_from(SMOOTH), keepdims=st.booleans())
def test_smooth_reduction_any_shape_and_axes(shape, data, name, keepdims, xp_device):
    ndim = len(shape)
    # distinct axes, each spelt positive or negative
    chosen = data.draw(st.sets(st.integers(0, max(ndim, 1) - 1)) | st.none())
    axes = None if chosen is None else tuple(a - ndim if a % 2 else a for a in sorted(chosen))
    x = rand(*shape)
    fn = getattr(kit, name)
    check_op(lambda t: fn(t, axes, keepdims), x, device=xp_device)
    np_axes = None if axes is None or ndim == 0 else tuple(a % ndim for a in axes)
    expected = np.log(np.exp(x).sum(np_axes, keepdims=keepdims)) if name == "logsumexp" else (
        getattr(np, name)(x, axis=np_axes, keepdims=keepdims))
    np.testing.assert_allclose(host(fn(leaf(x, xp_device), axes, keepdims)), expected)


def test_method_spellings_pytorch_and_numpy():
    x = leaf(rand(2, 3))
    for out in (x.sum(1, True), x.sum(dim=1, keepdim=True), x.sum(axis=1, keepdims=True)):
        assert out.shape == (2, 1)
        np.testing.assert_allclose(host(out), host(x).sum(1, keepdims=True))
    assert x.mean().shape == () and x.logsumexp(0).shape == (3,)


# --- max and min ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["max", "min"])
def test_extreme_over_all_gradcheck_and_torch(name, xp_device):
    fn = getattr(kit, name)
    check_op(fn, rand(3, 4), device=xp_device, order=2)
    compare_torch(fn, lambda t: getattr(t, name)(), rand(3, 4), device=xp_device)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("name", ["max", "min"])
def test_extreme_along_axis_gives_values_and_indices(name, axis, keepdims, xp_device):
    torch = pytest.importorskip("torch")
    x = rand(2, 3, 4)
    values, indices = getattr(kit, name)(leaf(x, xp_device), axis, keepdims)
    t_values, t_indices = getattr(torch, name)(torch.from_numpy(x), axis, keepdims)
    np.testing.assert_array_equal(host(indices), t_indices.numpy())
    assert indices.dtype == kit.int64 and not indices.requires_grad
    np.testing.assert_allclose(host(values), t_values.numpy())
    check_op(lambda t: getattr(kit, name)(t, axis, keepdims).values, x, device=xp_device,
             order=2)
    compare_torch(lambda t: getattr(kit, name)(t, axis, keepdims)[0],
                  lambda t: getattr(torch, name)(t, axis, keepdims)[0], x, device=xp_device)


def test_max_over_all_shares_the_gradient_among_ties():
    x = leaf([[1.0, 3.0], [3.0, 2.0]])
    kit.max(x).backward()
    np.testing.assert_array_equal(host(x.grad), [[0.0, 0.5], [0.5, 0.0]])
    torch = pytest.importorskip("torch")
    t = torch.tensor([[1.0, 3.0], [3.0, 2.0]], requires_grad=True)
    t.max().backward()
    np.testing.assert_array_equal(t.grad.numpy(), host(x.grad))


def test_max_along_axis_sends_the_gradient_to_the_returned_index_at_ties():
    x = leaf([[3.0, 1.0, 3.0], [0.0, 2.0, 2.0]])
    values, indices = x.max(dim=1)
    np.testing.assert_array_equal(host(indices), [0, 1])
    values.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    y = leaf([[3.0, 1.0, 3.0]])
    y.min(0)[0].sum().backward()
    np.testing.assert_array_equal(host(y.grad), [[1.0, 1.0, 1.0]])


@pytest.mark.parametrize("name", ["max", "min"])
def test_extreme_of_a_zero_dim_tensor_along_a_dim_is_itself_at_index_zero(name):
    x = leaf(2.0)
    values, indices = getattr(x, name)(-1, keepdim=True)
    assert values.shape == () and indices.dtype == kit.int64 and indices.item() == 0
    values.backward()
    assert x.grad.item() == 1.0
    torch = pytest.importorskip("torch")
    assert getattr(torch.tensor(2.0), name)(-1, keepdim=True).indices.shape == indices.shape


def test_argmax_argmin():
    x = kit.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    np.testing.assert_array_equal(kit.argmax(x, 1).data, [1, 0])
    np.testing.assert_array_equal(x.argmin(dim=1).data, [0, 1])
    assert kit.argmax(x).item() == 3 and not kit.argmax(x).requires_grad


def test_extreme_errors():
    with pytest.raises(RuntimeError, match=r"kit.max: the tensor is empty \(shape \(0,\)\), so "
                                           r"it has no max; name a dim"):
        kit.max(kit.zeros(0))
    with pytest.raises(ValueError, match="kit.min: with indices, dim must be one int, got "
                                         r"\(0, 1\). Fix: amax/amin"):
        kit.min(leaf(rand(2, 3)), (0, 1))


# --- logsumexp stability --------------------------------------------------------------------
def test_logsumexp_is_stable_and_handles_minus_infinity():
    x = leaf([[1000.0, 1000.0], [-np.inf, 0.0]])
    y = kit.logsumexp(x, 1)
    np.testing.assert_allclose(host(y), [1000.0 + np.log(2.0), 0.0])
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), [[0.5, 0.5], [0.0, 1.0]])
    z = leaf([-np.inf, -np.inf])
    assert kit.logsumexp(z, 0).item() == -np.inf


# --- errors ---------------------------------------------------------------------------------
def test_mean_of_integers_says_to_convert():
    with pytest.raises(TypeError, match=r"kit.mean: .*floating point, got int64. Fix: "
                                        r"x.float\(\).mean\(\)"):
        kit.tensor([1, 2, 3]).mean()


def test_zero_dim_reductions_accept_dim_zero():
    x = leaf(2.0)
    assert kit.sum(x, 0).shape == () and kit.sum(x, -1, True).shape == ()
    kit.sum(x, 0).backward()
    assert x.grad.item() == 1.0


# --- sum_to_size and broadcast_shapes: a broadcast and its undoing ----------------------------
@pytest.mark.parametrize("shape, size", [((3, 4), (4,)), ((3, 4), (3, 1)), ((2, 3, 4), (1, 4)),
                                         ((2, 3, 4), (2, 1, 4)), ((3, 4), (3, 4)), ((3,), ())])
def test_sum_to_size_undoes_a_broadcast_as_torch(shape, size):
    torch = pytest.importorskip("torch")
    x = rand(*shape)
    ours = kit.tensor(x).sum_to_size(size)
    np.testing.assert_allclose(host(ours), torch.tensor(x).sum_to_size(size).numpy())
    # its gradient broadcasts back: sum_to_size(x) . g == x . broadcast(g)
    check_op(lambda t: t.sum_to_size(*size), x, order=2)


def test_sum_to_size_refuses_a_shape_that_does_not_broadcast_naming_both_sizes():
    with pytest.raises(RuntimeError, match=r"kit.sum_to_size: size \[3\] is not expandable to "
                                           r"size \[3, 4\].*Fix: "):
        kit.ones(3, 4).sum_to_size(3)


def test_broadcast_shapes_as_torch():
    torch = pytest.importorskip("torch")
    import kit.torch as ktorch

    for shapes in [((3, 1), (1, 4)), ((2, 1, 4), (3, 1)), (5, (2, 1)), ((), (2,)), ((0, 1), (3,))]:
        assert ktorch.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))
    with pytest.raises(RuntimeError, match=r"kit.broadcast_shapes: shapes \(3,\) and \(4,\) are "
                                           r"not compatible.*Fix: "):
        ktorch.broadcast_shapes((3,), (4,))
