"""mx.nd operators real custom-op code calls: values against NumPy references, gradients by
finite differences (float64), MXNet's defaults and errors."""

import numpy as np
import pytest
from mx_helpers import check_nd, f64

import kit.mx as mx

RNG = np.random.default_rng(3)


def _data(*shape):
    return RNG.uniform(-2, 2, shape)


@pytest.mark.parametrize("name,ref", [
    ("reciprocal", lambda x: 1 / x), ("rsqrt", lambda x: 1 / np.sqrt(x)), ("log1p", np.log1p),
    ("expm1", np.expm1), ("log2", np.log2), ("log10", np.log10),
])
def test_more_unary_functions(name, ref):
    x = RNG.uniform(0.5, 2, (2, 3))
    np.testing.assert_allclose(getattr(mx.nd, name)(f64(x)).asnumpy(), ref(x), rtol=1e-12)
    check_nd(getattr(mx.nd, name), x)


# --- arithmetic, norm, batch_dot -------------------------------------------------------------
@pytest.mark.parametrize("name,ref", [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
    ("true_divide", np.divide),
])
def test_named_arithmetic_broadcasts_and_takes_scalars(name, ref):
    a, b = _data(2, 3), RNG.uniform(0.5, 2, (1, 3))
    fn = getattr(mx.nd, name)
    np.testing.assert_allclose(fn(f64(a), f64(b)).asnumpy(), ref(a, b), rtol=1e-12)
    np.testing.assert_allclose(fn(f64(a), 2.0).asnumpy(), ref(a, 2.0), rtol=1e-12)
    check_nd(fn, a, b)


@pytest.mark.parametrize("ord_,axis,keepdims", [
    (2, None, False), (2, 1, False), (1, None, False), (1, (0, 2), True), (2, -1, True),
])
def test_norm(ord_, axis, keepdims):
    x = _data(2, 3, 4)
    got = mx.nd.norm(f64(x), ord=ord_, axis=axis, keepdims=keepdims).asnumpy()
    if axis is None:
        want = np.array([np.sqrt((x * x).sum()) if ord_ == 2 else np.abs(x).sum()])
    else:
        want = (np.sqrt((x * x).sum(axis=axis, keepdims=keepdims)) if ord_ == 2
                else np.abs(x).sum(axis=axis, keepdims=keepdims))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_nd(lambda x: mx.nd.norm(x, ord=ord_, axis=axis, keepdims=keepdims), x)
    assert mx.nd.norm(mx.nd.ones((2, 2))).shape == (1,)  # full reductions have shape (1,)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_dot(ta, tb):
    a, b = _data(3, 2, 4), _data(3, 4, 5)
    a_in = np.swapaxes(a, 1, 2) if ta else a
    b_in = np.swapaxes(b, 1, 2) if tb else b
    got = mx.nd.batch_dot(f64(a_in), f64(b_in), transpose_a=ta, transpose_b=tb)
    np.testing.assert_allclose(got.asnumpy(), a @ b, rtol=1e-12)
    check_nd(lambda a, b: mx.nd.batch_dot(a, b, transpose_a=ta, transpose_b=tb), a_in, b_in)


def test_batch_dot_shape_errors():
    with pytest.raises(mx.MXNetError, match="batch_dot.*do not multiply"):
        mx.nd.batch_dot(mx.nd.ones((2, 3, 4)), mx.nd.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="at least 3"):
        mx.nd.batch_dot(mx.nd.ones((3, 4)), mx.nd.ones((4, 3)))


# --- repetition and selection ------------------------------------------------------------------
@pytest.mark.parametrize("reps", [(2,), (2, 3), (2, 1, 2), 3])
def test_tile_matches_numpy(reps):
    x = _data(2, 3)
    np.testing.assert_array_equal(mx.nd.tile(f64(x), reps).asnumpy(), np.tile(x, reps))
    check_nd(lambda x: mx.nd.tile(x, reps), x)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_repeat_matches_numpy(axis):
    x = _data(2, 3)
    np.testing.assert_array_equal(mx.nd.repeat(f64(x), 3, axis=axis).asnumpy(),
                                  np.repeat(x, 3, axis=axis))
    check_nd(lambda x: mx.nd.repeat(x, 2, axis=axis), x)


@pytest.mark.parametrize("axis,keepdims", [(-1, False), (0, False), (1, True)])
def test_pick(axis, keepdims):
    x = _data(3, 4)
    n = x.shape[axis]
    idx = RNG.integers(0, n, x.shape[1 - axis % 2])
    want = np.take_along_axis(x, np.expand_dims(idx, axis), axis)
    want = want if keepdims else want.squeeze(axis)
    got = mx.nd.pick(f64(x), mx.nd.array(idx), axis=axis, keepdims=keepdims).asnumpy()
    np.testing.assert_array_equal(got, want)
    check_nd(lambda x: mx.nd.pick(x, mx.nd.array(idx), axis=axis, keepdims=keepdims), x)


def test_pick_clips_or_wraps_out_of_range_indices_and_checks_the_shape():
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(mx.nd.pick(x, mx.nd.array([5, -1])).asnumpy(), [3, 4])
    np.testing.assert_array_equal(mx.nd.pick(x, mx.nd.array([4, -1]), mode="wrap").asnumpy(),
                                  [2, 6])
    with pytest.raises(mx.MXNetError, match=r"pick: index has shape \(3,\)"):
        mx.nd.pick(x, mx.nd.array([0, 1, 2]))


def test_pick_in_a_negative_log_likelihood_trains_the_right_logits():
    logits, labels = _data(4, 3), np.array([0, 2, 1, 2])

    def nll(x):
        return -mx.nd.sum(mx.nd.pick(mx.nd.log_softmax(x), mx.nd.array(labels)))

    check_nd(nll, logits)


def test_where_full_and_row_conditions():
    x, y = _data(3, 2), _data(3, 2)
    cond = np.array([[1, 0], [0, 0], [2, 1]], dtype=float)
    got = mx.nd.where(mx.nd.array(cond), f64(x), f64(y)).asnumpy()
    np.testing.assert_array_equal(got, np.where(cond != 0, x, y))
    rows = np.array([1.0, 0.0, 1.0])
    got = mx.nd.where(mx.nd.array(rows), f64(x), f64(y)).asnumpy()
    np.testing.assert_array_equal(got, np.where(rows[:, None] != 0, x, y))
    check_nd(lambda a, b: mx.nd.where(mx.nd.array(cond), a, b), x, y)
    with pytest.raises(mx.MXNetError, match="condition has shape"):
        mx.nd.where(mx.nd.ones((2,)), mx.nd.ones((3, 2)), mx.nd.ones((3, 2)))


@pytest.mark.parametrize("axis,is_ascend", [(-1, False), (0, True), (None, False)])
def test_topk_every_ret_typ(axis, is_ascend):
    x = RNG.permutation(12).reshape(3, 4).astype(float)  # distinct values: one right answer
    flat = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis
    order = np.argsort(flat if is_ascend else -flat, axis=ax)
    idx = np.take(order, np.arange(2), axis=ax)
    got = mx.nd.topk(f64(x), axis=axis, k=2, is_ascend=is_ascend)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.asnumpy(), idx)
    values, indices = mx.nd.topk(f64(x), axis=axis, k=2, ret_typ="both", is_ascend=is_ascend)
    np.testing.assert_array_equal(values.asnumpy(), np.take_along_axis(flat, idx, ax))
    np.testing.assert_array_equal(indices.asnumpy(), idx)
    mask = mx.nd.topk(f64(x), axis=axis, k=2, ret_typ="mask", is_ascend=is_ascend).asnumpy()
    want = np.zeros(flat.shape)
    np.put_along_axis(want, idx, 1, ax)
    np.testing.assert_array_equal(mask, want)
    check_nd(lambda x: mx.nd.topk(x, axis=axis, k=2, ret_typ="value", is_ascend=is_ascend), x)


def test_topk_errors():
    with pytest.raises(mx.MXNetError, match="k must be between 1 and"):
        mx.nd.topk(mx.nd.ones((2, 3)), k=4)
    with pytest.raises(ValueError, match="ret_typ"):
        mx.nd.topk(mx.nd.ones((2, 3)), ret_typ="values")


def test_sign_clip_argmax_one_hot():
    x = np.array([[-1.5, 0.0, 2.0], [3.0, -0.2, 0.1]])
    np.testing.assert_array_equal(mx.nd.sign(f64(x)).asnumpy(), np.sign(x))
    np.testing.assert_array_equal(mx.nd.clip(f64(x), -1, 1).asnumpy(), np.clip(x, -1, 1))
    np.testing.assert_array_equal(mx.nd.argmax(f64(x), axis=1).asnumpy(), [2, 0])
    np.testing.assert_array_equal(mx.nd.one_hot(mx.nd.array([2, 0]), 3).asnumpy(),
                                  np.eye(3)[[2, 0]])
    check_nd(lambda x: mx.nd.clip(x, -1, 1), np.array([[-1.5, 0.3], [0.7, 2.0]]))
    v = mx.nd.array(x)
    v.attach_grad()
    with mx.autograd.record():
        y = mx.nd.sign(v) * v
    y.backward()  # sign passes no gradient: d(sign(x) * x) = sign(x)
    np.testing.assert_array_equal(v.grad.asnumpy(), np.sign(x))


# --- nn operators ------------------------------------------------------------------------
@pytest.mark.parametrize("act_type,ref", [
    ("relu", lambda x: np.maximum(x, 0)), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("tanh", np.tanh), ("softrelu", lambda x: np.log1p(np.exp(x))),
    ("softsign", lambda x: x / (1 + np.abs(x))),
])
def test_activation(act_type, ref):
    x = RNG.uniform(-3, 3, (3, 4))
    x[np.abs(x) < 0.05] = 0.5  # away from relu's kink
    np.testing.assert_allclose(mx.nd.Activation(f64(x), act_type=act_type).asnumpy(), ref(x),
                               rtol=1e-12)
    check_nd(lambda x: mx.nd.Activation(x, act_type=act_type), x)


def test_softrelu_does_not_overflow_and_unknown_act_type():
    big = mx.nd.Activation(mx.nd.array([1000.0, -1000.0]), act_type="softrelu").asnumpy()
    np.testing.assert_allclose(big, [1000.0, 0.0])
    with pytest.raises(ValueError, match="act_type must be one of"):
        mx.nd.Activation(mx.nd.ones((2,)), act_type="gelu")


@pytest.mark.parametrize("flatten", [True, False])
def test_fully_connected(flatten):
    x, w, b = _data(2, 3, 4), _data(5, 12 if flatten else 4), _data(5)
    got = mx.nd.FullyConnected(f64(x), f64(w), f64(b), num_hidden=5, flatten=flatten).asnumpy()
    want = (x.reshape(2, 12) if flatten else x) @ w.T + b
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_nd(lambda x, w, b: mx.nd.FullyConnected(x, w, b, num_hidden=5, flatten=flatten),
             x, w, b)
    no_bias = mx.nd.FullyConnected(f64(x), f64(w), num_hidden=5, no_bias=True, flatten=flatten)
    np.testing.assert_allclose(no_bias.asnumpy(), want - b, rtol=1e-12)


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_hidden=4), r"weight must have shape \(num_hidden"),
    (dict(num_hidden=5, no_bias=True, weight_shape=(5, 7)), "has 12 input features"),
    (dict(num_hidden=5), "bias is required unless no_bias=True"),
    (dict(), "num_hidden is not presented"),
])
def test_fully_connected_errors(kwargs, match):
    shape = kwargs.pop("weight_shape", (5, 12))
    with pytest.raises(mx.MXNetError, match=match):
        mx.nd.FullyConnected(mx.nd.ones((2, 3, 4)), mx.nd.ones(shape), **kwargs)


def test_dropout_only_in_training_scales_the_kept_and_shares_masks_along_axes():
    x = mx.nd.ones((200, 50))
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.5).asnumpy(), x.asnumpy())  # predict
    mx.random.seed(1)
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.25).asnumpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02
    with mx.autograd.train_mode():
        shared = mx.nd.Dropout(x, p=0.5, axes=(1,)).asnumpy()
    assert (shared == shared[:, :1]).all()  # one mask value per row
    always = mx.nd.Dropout(x, p=0.5, mode="always").asnumpy()
    assert (always == 0).any()
    mx.random.seed(1)
    with mx.autograd.record():
        again = mx.nd.Dropout(x, p=0.25).asnumpy()
    np.testing.assert_array_equal(again, y)  # seeded: the same mask


def test_dropout_gradient_is_the_mask():
    x = mx.nd.array(_data(20, 10))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.5)
    y.backward()
    kept = y.asnumpy() != 0
    np.testing.assert_allclose(x.grad.asnumpy(), kept * 2.0)


# --- SoftmaxOutput: MXNet's loss layer -----------------------------------------------------
def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _grad_of(x, label, head=None, **kwargs):
    v = mx.nd.array(x, dtype="float64")
    v.attach_grad()
    with mx.autograd.record():
        out = mx.nd.SoftmaxOutput(v, mx.nd.array(label, dtype="float64"), **kwargs)
    out.backward(head)
    return out.asnumpy(), v.grad.asnumpy()


def test_softmax_output_forward_is_softmax_and_backward_ignores_the_head_gradient():
    x, label = _data(4, 3), np.array([0, 2, 1, 1])
    out, grad = _grad_of(x, label)
    np.testing.assert_allclose(out, _softmax(x, 1), rtol=1e-12)
    np.testing.assert_allclose(grad, _softmax(x, 1) - np.eye(3)[label], rtol=1e-12)
    _, with_head = _grad_of(x, label, head=mx.nd.array(_data(4, 3), dtype="float64") * 7)
    np.testing.assert_allclose(with_head, grad, rtol=1e-12)  # out_grad is ignored


@pytest.mark.parametrize("normalization,divisor", [("null", 1), ("batch", 4), ("valid", 3)])
def test_softmax_output_grad_scale_ignore_label_and_normalization(normalization, divisor):
    x, label = _data(4, 3), np.array([0, 2, -1, 1])
    _, grad = _grad_of(x, label, grad_scale=2.0, use_ignore=True, ignore_label=-1,
                       normalization=normalization)
    want = _softmax(x, 1) - np.eye(3)[np.maximum(label, 0)]
    want[2] = 0  # the ignored row
    np.testing.assert_allclose(grad, 2.0 * want / divisor, rtol=1e-12)


def test_softmax_output_multi_output_softmaxes_axis_1():
    x, label = _data(2, 3, 4), RNG.integers(0, 3, (2, 4))
    out, grad = _grad_of(x, label, multi_output=True)
    np.testing.assert_allclose(out, _softmax(x, 1), rtol=1e-12)
    onehot = np.moveaxis(np.eye(3)[label], -1, 1)
    np.testing.assert_allclose(grad, (_softmax(x, 1) - onehot) / 4, rtol=1e-12)  # / positions


def test_softmax_output_preserve_shape_and_flattening():
    x, label = _data(2, 3, 4), RNG.integers(0, 4, (2, 3))
    out, grad = _grad_of(x, label, preserve_shape=True)
    np.testing.assert_allclose(out, _softmax(x, -1), rtol=1e-12)
    np.testing.assert_allclose(grad, _softmax(x, -1) - np.eye(4)[label], rtol=1e-12)
    flat_label = RNG.integers(0, 12, 2)
    out, grad = _grad_of(x, flat_label)  # default: softmax over all axes but the first
    p = _softmax(x.reshape(2, 12), 1)
    np.testing.assert_allclose(out, p.reshape(2, 3, 4), rtol=1e-12)
    np.testing.assert_allclose(grad, (p - np.eye(12)[flat_label]).reshape(2, 3, 4), rtol=1e-12)


def test_softmax_output_probability_labels_and_out_grad():
    x = _data(3, 4)
    target = _softmax(_data(3, 4), 1)
    _, grad = _grad_of(x, target)
    np.testing.assert_allclose(grad, _softmax(x, 1) - target, rtol=1e-12)
    head = _data(3, 4)
    _, grad = _grad_of(x, np.array([0, 1, 3]), head=mx.nd.array(head, dtype="float64"),
                       out_grad=True)
    np.testing.assert_allclose(grad, (_softmax(x, 1) - np.eye(4)[[0, 1, 3]]) * head, rtol=1e-12)


def test_softmax_output_trains_a_linear_classifier():
    mx.random.seed(0)
    x = mx.nd.random.normal(shape=(64, 2))
    label = (x[:, 0] > x[:, 1]) * 1
    w = mx.nd.zeros((2, 2))
    w.attach_grad()
    for _ in range(50):
        with mx.autograd.record():
            out = mx.nd.SoftmaxOutput(mx.nd.dot(x, w), label, normalization="batch")
        out.backward()
        w[:] = w - 1.0 * w.grad
    accuracy = (mx.nd.argmax(out, axis=1) == label).mean().asscalar()
    assert accuracy > 0.95


def test_softmax_output_refuses_a_second_derivative_and_checks_the_label_shape():
    v = mx.nd.array(_data(2, 3))
    v.attach_grad()
    with mx.autograd.record():
        out = mx.nd.SoftmaxOutput(v, mx.nd.array([0, 1]))
        g = mx.autograd.grad(out, v, create_graph=True)
    with pytest.raises(RuntimeError, match="SoftmaxOutput backward.*cannot be differentiated"):
        g.backward()
    with pytest.raises(mx.MXNetError, match=r"label has shape \(3,\), expected \(2,\)"):
        mx.nd.SoftmaxOutput(mx.nd.ones((2, 3)), mx.nd.ones((3,)))


def test_softmax_cross_entropy_sums_over_the_batch():
    x, label = _data(4, 3), np.array([0, 2, 1, 1])
    got = mx.nd.softmax_cross_entropy(f64(x), mx.nd.array(label)).asnumpy()
    want = -np.log(_softmax(x, 1)[np.arange(4), label]).sum()
    np.testing.assert_allclose(got, [want], rtol=1e-12)
    check_nd(lambda x: mx.nd.softmax_cross_entropy(x, mx.nd.array(label)), x)


# --- random --------------------------------------------------------------------------------
def test_random_is_seeded_shaped_and_typed():
    mx.random.seed(42)
    u = mx.nd.random.uniform(-1, 3, shape=(1000,))
    n = mx.nd.random.normal(2, 0.5, shape=(2, 500))
    r = mx.nd.random.randint(0, 5, shape=(1000,))
    assert u.dtype == np.float32 and n.shape == (2, 500) and r.dtype == np.int32
    assert -1 <= u.asnumpy().min() and u.asnumpy().max() < 3
    assert abs(n.asnumpy().mean() - 2) < 0.1 and abs(n.asnumpy().std() - 0.5) < 0.1
    assert set(np.unique(r.asnumpy())) == {0, 1, 2, 3, 4}
    mx.random.seed(42)
    np.testing.assert_array_equal(mx.nd.random.uniform(-1, 3, shape=(1000,)).asnumpy(),
                                  u.asnumpy())
    assert mx.nd.random.uniform().shape == (1,)
    assert mx.nd.random_uniform(shape=(2,), dtype="float64").dtype == np.float64
    assert mx.nd.random_normal(shape=3).shape == (3,)


def test_random_shuffle_permutes_rows_and_errors():
    x = mx.nd.arange(10).reshape((5, 2))
    shuffled = mx.nd.random.shuffle(x).asnumpy()
    assert sorted(map(tuple, shuffled)) == sorted(map(tuple, x.asnumpy()))
    with pytest.raises(TypeError, match="takes a number for low"):
        mx.nd.random.uniform(mx.nd.zeros((2,)), 1)
    with pytest.raises(ValueError, match="low < high"):
        mx.nd.random.randint(3, 3)
    with pytest.raises(TypeError, match="seed_state must be an int"):
        mx.random.seed(1.5)


# --- sparse spellings, storage, synchronisation ---------------------------------------------
@pytest.mark.parametrize("name,ref", [
    ("elemwise_add", np.add), ("elemwise_sub", np.subtract), ("elemwise_mul", np.multiply),
    ("elemwise_div", np.divide),
])
def test_sparse_elementwise_ops_accept_dense_arrays(name, ref):
    a, b = _data(2, 3), RNG.uniform(0.5, 2, (2, 3))
    fn = getattr(mx.nd.sparse, name)
    np.testing.assert_allclose(fn(f64(a), f64(b)).asnumpy(), ref(a, b), rtol=1e-12)
    check_nd(fn, a, b)


def test_sparse_dot_zeros_array_and_cast_storage_on_dense():
    a, b = _data(2, 3), _data(3, 4)
    np.testing.assert_allclose(mx.nd.sparse.dot(f64(a), f64(b)).asnumpy(), a @ b, rtol=1e-12)
    assert mx.nd.sparse.zeros("default", (2, 3)).shape == (2, 3)
    assert mx.nd.sparse.array([1, 2]).stype == "default"
    assert mx.nd.sparse.cast_storage(mx.nd.ones((2,)), "default").stype == "default"


def test_tostype_default_is_a_recorded_copy_and_wait_functions():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x.tostype("default") * 3
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [3, 3])
    y.wait_to_read()
    mx.nd.waitall()
    copy = x.tostype("default")
    copy[:] = 0
    np.testing.assert_array_equal(x.asnumpy(), [1, 2])  # a copy, not a view


def test_methods_on_ndarray():
    x = mx.nd.array([[1.0, -2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(x.sign().asnumpy(), [[1, -1], [1, 1]])
    np.testing.assert_allclose(x.norm().asnumpy(), [np.sqrt(30)], rtol=1e-6)
    np.testing.assert_array_equal(x.tile((1, 2)).asnumpy(), np.tile(x.asnumpy(), (1, 2)))
    np.testing.assert_array_equal(x.repeat(2, axis=0).asnumpy(), np.repeat(x.asnumpy(), 2, 0))
    np.testing.assert_array_equal(x.pick(mx.nd.array([1, 0])).asnumpy(), [-2, 3])
    np.testing.assert_array_equal(x.topk(k=1).asnumpy(), [[0], [1]])


# --- LeakyReLU family, smooth_l1, Embedding ------------------------------------------------
_SELU = (1.6732632423543772, 1.0507009873554805)


@pytest.mark.parametrize("act_type,ref", [
    ("leaky", lambda x: np.where(x > 0, x, 0.1 * x)),
    ("elu", lambda x: np.where(x > 0, x, 0.1 * (np.exp(np.minimum(x, 0)) - 1))),
    ("selu", lambda x: _SELU[1] * np.where(x > 0, x, _SELU[0] * (np.exp(np.minimum(x, 0)) - 1))),
])
def test_leaky_relu_family(act_type, ref):
    x = RNG.uniform(-3, 3, (3, 4))
    x[np.abs(x) < 0.05] = 0.5
    got = mx.nd.LeakyReLU(f64(x), act_type=act_type, slope=0.1).asnumpy()
    np.testing.assert_allclose(got, ref(x), rtol=1e-12)
    check_nd(lambda x: mx.nd.LeakyReLU(x, act_type=act_type, slope=0.1), x)
    big = mx.nd.LeakyReLU(mx.nd.array([1000.0]), act_type=act_type).asnumpy()  # no overflow
    assert np.isfinite(big).all()


def test_prelu_learns_one_slope_per_channel():
    x, gamma = RNG.uniform(-2, 2, (2, 3, 4)), np.array([0.1, 0.2, 0.3])
    x[np.abs(x) < 0.05] = 0.5
    got = mx.nd.LeakyReLU(f64(x), gamma=f64(gamma), act_type="prelu").asnumpy()
    np.testing.assert_allclose(got, np.where(x > 0, x, gamma[None, :, None] * x), rtol=1e-12)
    check_nd(lambda x, g: mx.nd.LeakyReLU(x, gamma=g, act_type="prelu"), x, gamma)
    with pytest.raises(mx.MXNetError, match=r"gamma must have shape \(3,\)"):
        mx.nd.LeakyReLU(f64(x), gamma=mx.nd.ones((2,)), act_type="prelu")
    with pytest.raises(mx.MXNetError, match="act_type must be one of"):
        mx.nd.LeakyReLU(f64(x), act_type="rrelu")


def test_smooth_l1():
    x = np.array([-3.0, -0.4, 0.1, 0.2, 2.5])
    for scalar in (1.0, 2.0):
        s2 = scalar ** 2
        want = np.where(np.abs(x) < 1 / s2, 0.5 * s2 * x * x, np.abs(x) - 0.5 / s2)
        np.testing.assert_allclose(mx.nd.smooth_l1(f64(x), scalar=scalar).asnumpy(), want)
        check_nd(lambda x, s=scalar: mx.nd.smooth_l1(x, scalar=s), x)


def test_embedding_gathers_rows_accumulates_gradients_and_clips():
    w = RNG.normal(size=(5, 3))
    idx = np.array([[0, 4], [4, 2]])
    got = mx.nd.Embedding(mx.nd.array(idx), f64(w), input_dim=5, output_dim=3).asnumpy()
    np.testing.assert_array_equal(got, w[idx])
    check_nd(lambda w: mx.nd.Embedding(mx.nd.array(idx), w, input_dim=5, output_dim=3), w)
    clipped = mx.nd.Embedding(mx.nd.array([7]), f64(w), input_dim=5, output_dim=3).asnumpy()
    np.testing.assert_array_equal(clipped, w[[4]])
    with pytest.raises(mx.MXNetError, match=r"weight must have shape .* \(5, 4\)"):
        mx.nd.Embedding(mx.nd.array(idx), f64(w), input_dim=5, output_dim=4)
