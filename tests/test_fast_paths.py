"""The engine's fast paths give exactly what the plain paths give.

Performance work (benchmarks/) added shortcuts: where with a 0 side masks bits instead of calling
np.where, a leading-axes broadcast is undone with one plain sum, Node.apply checks versions and
unpacks saved values in one pass. Each must be invisible except in speed.
"""

import numpy as np
import pytest

import kit
from kit.ops.elementwise import _select


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("zero", [0, 0.0])
def test_where_with_a_zero_side_is_bit_identical_to_np_where(dtype, zero):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 100)).astype(dtype)
    x[0, :4] = [np.nan, -0.0, np.inf, -np.inf]
    cond = rng.random((64, 100)) > 0.5
    cond[0, :4] = True
    for a, b in [(x, zero), (zero, x)]:
        got, want = _select(np, cond, a, b), np.where(cond, a, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()  # NaN, -0.0 and inf kept bit for bit
        assert got.base is None  # owns its memory: a leaf can take it as .grad without a copy
    strided = x[:, ::2]
    assert _select(np, cond[:, ::2], strided, 0).tobytes() == np.where(
        cond[:, ::2], strided, 0).tobytes()


def test_relu_forward_and_backward_on_a_large_tensor_match_numpy():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((64, 256)).astype(np.float32)
    x = kit.tensor(data, requires_grad=True)
    g = rng.standard_normal((64, 256)).astype(np.float32)
    y = kit.relu(x)
    y.backward(kit.tensor(g))
    np.testing.assert_array_equal(y._data, np.where(data > 0, data, 0))
    np.testing.assert_array_equal(x.grad._data, np.where(data > 0, g, 0))


def test_bias_gradient_sums_leading_axes_first_and_higher_order():
    rng = np.random.default_rng(2)
    h = kit.tensor(rng.standard_normal((5, 4, 3)).astype(np.float32), requires_grad=True)
    b = kit.tensor(rng.standard_normal(3).astype(np.float32), requires_grad=True)
    out = (h + b) * (h + b)
    out.sum().backward(create_graph=True)
    want = (2 * (h._data + b._data)).sum(axis=(0, 1))
    np.testing.assert_allclose(b.grad._data, want, rtol=1e-5)
    assert b.grad.shape == (3,) and b.grad._data.base is None
    (second,) = kit.grad(b.grad.sum(), b)  # d/db sum_k 2 * sum(h + b)_k = 2 * 5 * 4 each
    np.testing.assert_allclose(second._data, np.full(3, 40.0), rtol=1e-6)


def test_bias_of_shape_1_and_a_0d_target_still_take_the_general_path():
    x = kit.tensor(np.ones((4, 3), np.float32), requires_grad=True)
    c = kit.tensor(np.float32(2.0), requires_grad=True)  # 0-d: broadcast over everything
    one = kit.tensor(np.ones((1, 3), np.float32), requires_grad=True)
    ((x * c + one).sum()).backward()
    assert c.grad.shape == () and float(c.grad) == 12.0
    assert one.grad.shape == (1, 3)
    np.testing.assert_array_equal(one.grad._data, np.full((1, 3), 4.0, np.float32))


def test_saved_tensor_and_saved_output_changed_in_place_are_still_caught():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    y = a * a  # saves a twice
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    z = (x * 1).exp()  # saves its own output
    z.mul_(2)
    with pytest.raises(RuntimeError, match="its output"):
        z.sum().backward()
