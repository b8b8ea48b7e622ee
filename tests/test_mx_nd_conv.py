"""mx.nd.Convolution and mx.nd.Pooling (2-D, NCHW): values against direct NumPy loops written
from MXNet's definitions, gradients by finite differences, MXNet's defaults and errors."""

import math

import numpy as np
import pytest
from mx_helpers import check_nd, f64

import kit.mx as mx

RNG = np.random.default_rng(21)


def _padded(x, pad, value=0.0):
    return np.pad(x, ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2), constant_values=value)


def _conv_ref(x, w, b, stride, pad, dilate, groups):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = _padded(x, pad)
    oh = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, f, oh, ow))
    per = f // groups
    for o in range(f):
        g = o // per
        for i in range(oh):
            for j in range(ow):
                r, s = i * stride[0], j * stride[1]
                patch = xp[:, g * cg:(g + 1) * cg, r:r + dilate[0] * (kh - 1) + 1:dilate[0],
                           s:s + dilate[1] * (kw - 1) + 1:dilate[1]]
                y[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3)) + (0 if b is None else b[o])
    return y


@pytest.mark.parametrize("stride,pad,dilate,groups", [
    ((1, 1), (0, 0), (1, 1), 1), ((2, 1), (1, 2), (1, 1), 1), ((1, 1), (1, 1), (2, 2), 1),
    ((2, 2), (1, 0), (1, 1), 2),
])
def test_convolution_matches_the_definition_and_gradchecks(stride, pad, dilate, groups):
    x, w, b = RNG.normal(size=(2, 4, 5, 6)), RNG.normal(size=(6, 4 // groups, 3, 2)), \
        RNG.normal(size=6)
    kwargs = dict(kernel=(3, 2), stride=stride, pad=pad, dilate=dilate, num_filter=6,
                  num_group=groups)
    got = mx.nd.Convolution(f64(x), f64(w), f64(b), **kwargs).asnumpy()
    np.testing.assert_allclose(got, _conv_ref(x, w, b, stride, pad, dilate, groups), rtol=1e-10)
    small = (x[:1, :, :4, :4], w[:2 * groups], b[:2 * groups])
    small_kwargs = dict(kwargs, num_filter=2 * groups)
    check_nd(lambda x, w, b: mx.nd.Convolution(x, w, b, **small_kwargs), *small)


def test_convolution_without_bias_and_with_integer_kernel():
    x, w = RNG.normal(size=(1, 2, 4, 4)), RNG.normal(size=(3, 2, 2, 2))
    got = mx.nd.Convolution(f64(x), f64(w), kernel=2, num_filter=3, no_bias=True).asnumpy()
    np.testing.assert_allclose(got, _conv_ref(x, w, None, (1, 1), (0, 0), (1, 1), 1),
                               rtol=1e-10)


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_filter=3), r"weight has shape \(3, 2, 2, 2\), expected .* \(3, 2, 3, 3\)"),
    (dict(num_filter=4, weight=(4, 2, 3, 3)), r"bias must have shape \(4,\)"),
    (dict(num_filter=3, kernel=(9, 9), weight=(3, 2, 9, 9)), "does not fit"),
    (dict(num_filter=3, num_group=2), "divisible by num_group=2"),
])
def test_convolution_errors(kwargs, match):
    weight = kwargs.pop("weight", (3, 2, 2, 2))
    kwargs.setdefault("kernel", (3, 3))
    with pytest.raises(mx.MXNetError, match=match):
        mx.nd.Convolution(mx.nd.ones((1, 2, 4, 4)), mx.nd.ones(weight), mx.nd.ones((3,)),
                          **kwargs)
    with pytest.raises(ValueError, match="2-D"):
        mx.nd.Convolution(mx.nd.ones((1, 2, 4)), mx.nd.ones((3, 2, 2)), kernel=(2,),
                          num_filter=3, no_bias=True)


def _pool_ref(x, kernel, stride, pad, pool_type, full, count_include_pad):
    n, c, h, w = x.shape
    size = [(math.ceil if full else math.floor)((d + 2 * p - k) / s) + 1
            for d, k, s, p in zip((h, w), kernel, stride, pad, strict=True)]
    y = np.zeros((n, c) + tuple(size))
    for i in range(size[0]):
        for j in range(size[1]):
            r0, c0 = i * stride[0] - pad[0], j * stride[1] - pad[1]
            r1, c1 = min(r0 + kernel[0], h + pad[0]), min(c0 + kernel[1], w + pad[1])
            area = (r1 - r0) * (c1 - c0)  # inside the padded input, as MXNet counts
            window = x[:, :, max(r0, 0):min(r1, h), max(c0, 0):min(c1, w)]
            if pool_type == "max":
                y[:, :, i, j] = window.max(axis=(2, 3))
            elif pool_type == "sum":
                y[:, :, i, j] = window.sum(axis=(2, 3))
            else:
                inside = window.shape[2] * window.shape[3]
                y[:, :, i, j] = window.sum(axis=(2, 3)) / (area if count_include_pad else inside)
    return y


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
@pytest.mark.parametrize("kernel,stride,pad,convention,include", [
    ((2, 2), (2, 2), (0, 0), "valid", True), ((3, 3), (2, 2), (1, 1), "valid", True),
    ((3, 2), (2, 2), (1, 0), "full", True), ((3, 3), (2, 2), (1, 1), "valid", False),
    ((2, 2), (1, 1), (0, 0), "valid", True), ((2, 2), (2, 2), (0, 0), "full", True),
    ((2, 3), (2, 2), (0, 1), "full", False),
])
def test_pooling_matches_the_definition_and_gradchecks(pool_type, kernel, stride, pad,
                                                       convention, include):
    x = RNG.permutation(2 * 3 * 5 * 6).reshape(2, 3, 5, 6) / 10.0  # distinct: one max each
    kwargs = dict(kernel=kernel, stride=stride, pad=pad, pool_type=pool_type,
                  pooling_convention=convention, count_include_pad=include)
    got = mx.nd.Pooling(f64(x), **kwargs).asnumpy()
    want = _pool_ref(x, kernel, stride, pad, pool_type, convention == "full", include)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_nd(lambda x: mx.nd.Pooling(x, **kwargs), x[:1, :2])


@pytest.mark.parametrize("pool_type,ref", [("max", np.max), ("avg", np.mean), ("sum", np.sum)])
def test_global_pooling(pool_type, ref):
    x = RNG.normal(size=(2, 3, 4, 5))
    got = mx.nd.Pooling(f64(x), pool_type=pool_type, global_pool=True).asnumpy()
    np.testing.assert_allclose(got, ref(x, axis=(2, 3), keepdims=True), rtol=1e-12)
    check_nd(lambda x: mx.nd.Pooling(x, pool_type=pool_type, global_pool=True, kernel=(1, 1)),
             x)


def test_pooling_errors():
    with pytest.raises(ValueError, match="pool_type must be one of"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 4, 4)), kernel=(2, 2), pool_type="lp")
    with pytest.raises(mx.MXNetError, match="2-D pooling of NCHW"):
        mx.nd.Pooling(mx.nd.ones((1, 4, 4)), kernel=(2, 2))
    with pytest.raises(mx.MXNetError, match="does not fit"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 2, 2)), kernel=(3, 3))


def test_a_small_convnet_trains():
    mx.random.seed(4)
    x = mx.nd.random.normal(shape=(16, 1, 6, 6))
    label = (x[:, 0, :3].sum(axis=(1, 2)) > x[:, 0, 3:].sum(axis=(1, 2))) * 1
    w = mx.nd.random.normal(0, 0.3, shape=(4, 1, 3, 3))
    v = mx.nd.random.normal(0, 0.3, shape=(2, 16))
    for p in (w, v):
        p.attach_grad()
    for _ in range(40):
        with mx.autograd.record():
            h = mx.nd.Activation(mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=4,
                                                   no_bias=True), act_type="relu")
            h = mx.nd.Pooling(h, kernel=(2, 2), stride=(2, 2))
            out = mx.nd.SoftmaxOutput(mx.nd.FullyConnected(h, v, num_hidden=2, no_bias=True),
                                      label, normalization="batch")
        out.backward()
        for p in (w, v):
            p[:] -= 0.5 * p.grad
    assert (mx.nd.argmax(out, axis=1) == label).mean().asscalar() >= 0.9
