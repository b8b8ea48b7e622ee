"""mx.nd's joining, splitting, slicing and broadcasting ops: values against NumPy, gradients by
finite differences, MXNet's defaults (split along axis 1, 0 in broadcast_to keeps an axis)."""

import numpy as np
import pytest
from mx_helpers import check_nd, f64

import kit.mx as mx

RNG = np.random.default_rng(8)


def _data(*shape):
    return RNG.uniform(-2, 2, shape)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack(axis):
    a, b = _data(2, 3), _data(2, 3)
    np.testing.assert_array_equal(mx.nd.stack(f64(a), f64(b), axis=axis).asnumpy(),
                                  np.stack([a, b], axis))
    check_nd(lambda a, b: mx.nd.stack(a, b, axis=axis), a, b)
    with pytest.raises(mx.MXNetError, match="same shape"):
        mx.nd.stack(mx.nd.ones((2,)), mx.nd.ones((3,)))


def test_split_default_axis_1_squeeze_and_errors():
    x = _data(2, 6)
    parts = mx.nd.split(f64(x), num_outputs=3)
    for got, want in zip(parts, np.split(x, 3, axis=1), strict=True):
        np.testing.assert_array_equal(got.asnumpy(), want)
    rows = mx.nd.split(f64(x), num_outputs=2, axis=0, squeeze_axis=True)
    np.testing.assert_array_equal(rows[1].asnumpy(), x[1])
    assert isinstance(mx.nd.split(f64(x), num_outputs=1), mx.nd.NDArray)
    check_nd(lambda x: mx.nd.split(x, num_outputs=3), x)
    with pytest.raises(mx.MXNetError, match="does not split into 4 equal parts"):
        mx.nd.split(f64(x), num_outputs=4)
    with pytest.raises(mx.MXNetError, match="squeeze_axis=True needs parts of length 1"):
        mx.nd.split(f64(x), num_outputs=3, squeeze_axis=True)


def test_slicing():
    x = _data(4, 5)
    np.testing.assert_array_equal(mx.nd.slice_axis(f64(x), axis=1, begin=1, end=3).asnumpy(),
                                  x[:, 1:3])
    np.testing.assert_array_equal(mx.nd.slice_axis(f64(x), 0, 2, None).asnumpy(), x[2:])
    got = mx.nd.slice(f64(x), begin=(1, None), end=(4, None), step=(2, -1)).asnumpy()
    np.testing.assert_array_equal(got, x[1:4:2, ::-1])
    check_nd(lambda x: mx.nd.slice_axis(x, axis=1, begin=1, end=3), x)
    check_nd(lambda x: mx.nd.slice(x, begin=(1, None), end=(4, None), step=(2, -1)), x)
    with pytest.raises(mx.MXNetError, match="same length"):
        mx.nd.slice(f64(x), begin=(1,), end=(2, 3))


@pytest.mark.parametrize("mode,indices,want", [
    ("clip", [[0, 5], [-1, 2]], [[0, 3], [0, 2]]), ("wrap", [[0, 5], [-1, 2]], [[0, 1], [3, 2]]),
])
def test_take(mode, indices, want):
    x = _data(4, 3)
    got = mx.nd.take(f64(x), mx.nd.array(indices), mode=mode).asnumpy()
    np.testing.assert_array_equal(got, x[np.array(want)])
    np.testing.assert_array_equal(mx.nd.take(f64(x), mx.nd.array([2, 0]), axis=1).asnumpy(),
                                  x[:, [2, 0]])
    check_nd(lambda x: mx.nd.take(x, mx.nd.array([1, 1, 3])), x)  # repeats accumulate


def test_squeeze_swapaxes_flip():
    x = _data(1, 3, 1, 2)
    assert mx.nd.squeeze(f64(x)).shape == (3, 2)
    assert mx.nd.squeeze(f64(x), axis=2).shape == (1, 3, 2)
    with pytest.raises(mx.MXNetError, match=r"axes \[1\].*do not have length 1"):
        mx.nd.squeeze(f64(x), axis=1)
    np.testing.assert_array_equal(mx.nd.swapaxes(f64(x), 1, 3).asnumpy(), np.swapaxes(x, 1, 3))
    y = _data(3, 4)
    np.testing.assert_array_equal(mx.nd.flip(f64(y), axis=1).asnumpy(), y[:, ::-1])
    np.testing.assert_array_equal(mx.nd.reverse(f64(y), axis=(0, 1)).asnumpy(), y[::-1, ::-1])
    check_nd(lambda y: mx.nd.flip(y, axis=0), y)
    check_nd(lambda x: mx.nd.swapaxes(mx.nd.squeeze(x, axis=0), 0, 1), x)


def test_broadcast_to_and_like():
    x = _data(1, 3)
    np.testing.assert_array_equal(mx.nd.broadcast_to(f64(x), (4, 0)).asnumpy(),
                                  np.broadcast_to(x, (4, 3)))
    np.testing.assert_array_equal(mx.nd.broadcast_like(f64(x), mx.nd.ones((2, 3))).asnumpy(),
                                  np.broadcast_to(x, (2, 3)))
    check_nd(lambda x: mx.nd.broadcast_to(x, (4, 3)), x)
    with pytest.raises(mx.MXNetError, match=r"cannot broadcast shape \(1, 3\) to \(4, 2\)"):
        mx.nd.broadcast_to(f64(x), (4, 2))


def test_add_n_and_block_grad():
    a, b, c = _data(2, 2), _data(2, 2), _data(2, 2)
    np.testing.assert_allclose(mx.nd.add_n(f64(a), f64(b), f64(c)).asnumpy(), a + b + c)
    check_nd(lambda a, b, c: mx.nd.add_n(a, b, c), a, b, c)
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * mx.nd.BlockGrad(x) + mx.nd.stop_gradient(x * 3)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [1, 2])  # only the unblocked factor


def test_methods_on_ndarray():
    x = mx.nd.array(np.arange(6.0).reshape(1, 2, 3))
    assert x.squeeze().shape == (2, 3)
    assert x.swapaxes(1, 2).shape == (1, 3, 2)
    assert [p.shape for p in x.split(num_outputs=2)] == [(1, 1, 3), (1, 1, 3)]
    np.testing.assert_array_equal(x.slice_axis(axis=2, begin=0, end=1).asnumpy(),
                                  [[[0], [3]]])
    assert x.broadcast_to((4, 2, 3)).shape == (4, 2, 3)
    assert x.flip(axis=2).asnumpy()[0, 0, 0] == 2
    assert x.take(mx.nd.array([0, 0])).shape == (2, 2, 3)
