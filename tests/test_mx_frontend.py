"""kit.mx's NDArray, mx.nd operators, mx.autograd and contexts, against MXNet's documented
behaviour (REFERENCE.md) and PyTorch as a gradient oracle."""

import numpy as np
import pytest

import kit
import kit.mx as mx
from kit import backend


def ctx_for(device):
    return mx.cpu() if device == "cpu" else mx.gpu()


# --- NDArray basics ---------------------------------------------------------------------------
def test_array_defaults_to_float32_from_lists_and_numpy():
    assert mx.nd.array([1, 2, 3]).dtype is np.float32
    assert mx.nd.array(np.arange(3.0)).dtype is np.float32  # float64 NumPy -> float32, as MXNet
    assert mx.nd.array([1, 2], dtype="float64").dtype is np.float64
    assert mx.nd.array(mx.nd.array([1], dtype="int32")).dtype is np.int32  # an NDArray keeps it
    assert mx.nd.zeros((2, 3)).dtype is np.float32
    assert mx.nd.arange(3).asnumpy().tolist() == [0.0, 1.0, 2.0]
    assert mx.nd.arange(0, 2, repeat=2).asnumpy().tolist() == [0.0, 0.0, 1.0, 1.0]
    np.testing.assert_array_equal(mx.nd.full((2,), 7).asnumpy(), [7, 7])


def test_repr_is_mxnets():
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    assert repr(x) == "\n[[1. 2. 3.]\n [4. 5. 6.]]\n<NDArray 2x3 @cpu(0)>"


def test_metadata_and_conversions():
    x = mx.nd.array([[1, 2], [3, 4]])
    assert (x.shape, x.size, x.ndim, len(x)) == ((2, 2), 4, 2, 2)
    assert x.context == mx.cpu() and x.ctx == mx.cpu(0)
    a = x.asnumpy()
    a[0, 0] = 100  # asnumpy is a copy, as in MXNet
    assert x.asnumpy()[0, 0] == 1
    assert mx.nd.array([2.5]).asscalar() == np.float32(2.5)
    assert isinstance(mx.nd.array([2.5]).asscalar(), np.float32)
    with pytest.raises(ValueError, match="not a scalar"):
        x.asscalar()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    assert bool(mx.nd.array([1])) and not bool(mx.nd.array([0]))
    assert [r.asnumpy().tolist() for r in x] == [[1, 2], [3, 4]]
    x.wait_to_read()
    mx.nd.waitall()


def test_arithmetic_broadcasts_and_returns_ndarrays():
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    b = mx.nd.array([10, 20, 30])
    for y, want in [
        (x + b, [[11, 22, 33], [14, 25, 36]]), (b - x, [[9, 18, 27], [6, 15, 24]]),
        (x * 2, [[2, 4, 6], [8, 10, 12]]), (2 * x, [[2, 4, 6], [8, 10, 12]]),
        (x / 2, [[0.5, 1, 1.5], [2, 2.5, 3]]), (6 / x, [[6, 3, 2], [1.5, 1.2, 1]]),
        (x ** 2, [[1, 4, 9], [16, 25, 36]]), (-x, [[-1, -2, -3], [-4, -5, -6]]),
        (abs(-x), [[1, 2, 3], [4, 5, 6]]),
    ]:
        assert isinstance(y, mx.nd.NDArray)
        np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)


def test_comparisons_give_zeros_and_ones_in_the_arrays_dtype():
    x = mx.nd.array([1, 2, 3])
    y = x > 1.5
    assert isinstance(y, mx.nd.NDArray) and y.dtype is np.float32
    assert y.asnumpy().tolist() == [0, 1, 1]
    assert (x == 2).asnumpy().tolist() == [0, 1, 0]
    assert (x <= 2).asnumpy().tolist() == [1, 1, 0]


def test_full_reductions_have_shape_1_and_axis_options_work():
    x = mx.nd.array([[1, 5, 3], [4, 2, 6]])
    assert x.sum().shape == (1,) and x.sum().asscalar() == 21
    assert mx.nd.mean(x).asscalar() == 3.5
    assert mx.nd.max(x).asscalar() == 6 and mx.nd.min(x).asscalar() == 1
    assert x.sum(axis=0).asnumpy().tolist() == [5, 7, 9]
    assert x.sum(axis=1, keepdims=True).shape == (2, 1)
    assert mx.nd.sum(x, axis=0, exclude=True).asnumpy().tolist() == [9, 12]
    assert x.max(axis=1).asnumpy().tolist() == [5, 6]
    assert mx.nd.max(x, axis=(0, 1)).shape == (1,)
    assert mx.nd.argmax(x, axis=1).asnumpy().tolist() == [1, 2]
    assert mx.nd.argmax(x, axis=1).dtype is np.float32  # MXNet returns indices as floats
    assert x[0].shape == (3,) and mx.nd.array([7, 8])[1].shape == (1,)  # no 0-d arrays


def test_shape_operators():
    x = mx.nd.arange(24).reshape((2, 3, 4))
    assert x.reshape((0, -1)).shape == (2, 12)  # 0 keeps a dimension, as MXNet's reshape
    assert x.reshape(4, 6).shape == (4, 6)
    assert mx.nd.reshape(x, shape=(0, 0, 2, 2)).shape == (2, 3, 2, 2)
    assert mx.nd.transpose(x).shape == (4, 3, 2)
    assert x.transpose((1, 0, 2)).shape == (3, 2, 4)
    assert mx.nd.flatten(x).shape == (2, 12)  # MXNet's flatten keeps axis 0
    assert mx.nd.expand_dims(x, 0).shape == (1, 2, 3, 4)
    a, b = mx.nd.ones((2, 1)), mx.nd.zeros((2, 2))
    assert mx.nd.concat(a, b).shape == (2, 3)  # dim=1 by default
    assert mx.nd.concat(a, a, dim=0).shape == (4, 1)
    m = mx.nd.array([[1, 2], [3, 4]])
    assert m.T.asnumpy().tolist() == [[1, 3], [2, 4]]
    with pytest.raises(ValueError, match="special values"):
        x.reshape((-2,))


def test_dot_contracts_last_axis_with_first_axis():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    got = mx.nd.dot(mx.nd.array(a), mx.nd.array(b)).asnumpy()
    np.testing.assert_allclose(got, np.tensordot(a, b, axes=1), rtol=1e-5)
    m, n = rng.standard_normal((3, 2)), rng.standard_normal((3, 4))
    got = mx.nd.dot(mx.nd.array(m), mx.nd.array(n), transpose_a=True).asnumpy()
    np.testing.assert_allclose(got, m.T @ n, rtol=1e-5)
    v = mx.nd.array([1, 2, 3])
    assert mx.nd.dot(v, v).shape == (1,) and mx.nd.dot(v, v).asscalar() == 14


def test_softmax_family_and_one_hot():
    x = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    p = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(mx.nd.softmax(mx.nd.array(x)).asnumpy(), p, rtol=1e-6)
    np.testing.assert_allclose(mx.nd.log_softmax(mx.nd.array(x)).asnumpy(), np.log(p),
                               rtol=1e-5)
    # temperature divides the logits first; axis picks the normalised axis
    cool = np.exp(x / 2) / np.exp(x / 2).sum(axis=0, keepdims=True)
    np.testing.assert_allclose(mx.nd.softmax(mx.nd.array(x), axis=0, temperature=2).asnumpy(),
                               cool, rtol=1e-6)
    np.testing.assert_allclose(
        mx.nd.log_softmax(mx.nd.array(x), axis=0, temperature=2).asnumpy(), np.log(cool),
        rtol=1e-5)
    label = mx.nd.array([2, 0])
    loss = mx.nd.softmax_cross_entropy(mx.nd.array(x), label)
    assert loss.shape == (1,)  # summed over the batch, as in MXNet
    np.testing.assert_allclose(loss.asscalar(), -np.log(p[0, 2]) - np.log(p[1, 0]), rtol=1e-5)
    assert mx.nd.one_hot(label, 3).asnumpy().tolist() == [[0, 0, 1], [1, 0, 0]]


def test_setitem_slicing_and_inplace_ops():
    x = mx.nd.zeros((2, 3))
    x[:] = 1
    x[0, 1] = 5
    x[1] += mx.nd.array([1, 2, 3])
    assert x.asnumpy().tolist() == [[1, 5, 1], [2, 3, 4]]
    view = x[0]
    view[:] = 0  # a basic slice is a view, as in MXNet
    assert x.asnumpy()[0].tolist() == [0, 0, 0]
    x *= 2
    assert x.asnumpy()[1].tolist() == [4, 6, 8]
    idx = mx.nd.array([1, 0])  # MXNet indexes with float arrays
    assert x[idx].asnumpy()[0].tolist() == [4, 6, 8]


def test_copies_and_dtype_conversion():
    x = mx.nd.array([1, 2])
    y = x.copy()
    y[:] = 0
    assert x.asnumpy().tolist() == [1, 2]
    z = mx.nd.zeros((2,))
    assert x.copyto(z) is z and z.asnumpy().tolist() == [1, 2]
    assert x.as_in_context(mx.cpu()) is x
    assert x.copyto(mx.cpu()).asnumpy().tolist() == [1, 2]
    assert x.astype("float64").dtype is np.float64
    with pytest.raises(ValueError, match="shape mismatch"):
        x.copyto(mx.nd.zeros((3,)))


def test_out_argument_and_elementwise_helpers():
    x = mx.nd.array([-2.0, 0.5, 3.0])
    y = mx.nd.zeros_like(x)
    assert mx.nd.exp(x, out=y) is y
    np.testing.assert_allclose(y.asnumpy(), np.exp([-2.0, 0.5, 3.0]), rtol=1e-6)
    assert mx.nd.abs(x).asnumpy().tolist() == [2, 0.5, 3]
    assert mx.nd.clip(x, -1, 1).asnumpy().tolist() == [-1, 0.5, 1]
    assert mx.nd.maximum(x, 0).asnumpy().tolist() == [0, 0.5, 3]
    assert mx.nd.minimum(x, mx.nd.ones_like(x)).asnumpy().tolist() == [-2, 0.5, 1]
    assert mx.nd.empty((2,)).asnumpy().tolist() == [0, 0]  # zeros, never garbage
    assert mx.nd.negative(x).asnumpy().tolist() == [2, -0.5, -3]
    assert mx.nd.power(x, 2).asnumpy().tolist() == [4, 0.25, 9]
    np.testing.assert_allclose(mx.nd.sin(x).asnumpy() ** 2 + mx.nd.cos(x).asnumpy() ** 2, 1,
                               rtol=1e-6)
    m = mx.nd.array([[1, 2], [3, 4]])
    assert mx.nd.broadcast_mul(m, mx.nd.array([10, 100])).asnumpy().tolist() == [
        [10, 200], [30, 400]]
    assert mx.nd.elemwise_add(m, m).asnumpy().tolist() == [[2, 4], [6, 8]]
    with pytest.raises(ValueError, match="do not broadcast"):
        mx.nd.elemwise_sub(m, mx.nd.array([1, 2]))


def test_default_context_scope_places_new_arrays():
    with mx.cpu(0):
        assert mx.nd.zeros((1,)).context == mx.cpu()
    with pytest.raises(TypeError, match="mx.Context"):
        mx.nd.zeros((1,), ctx="cpu")


# --- gradients of the operators, PyTorch as the oracle ----------------------------------------
OPS = [
    ("square", lambda m, x: m.square(x), lambda t, x: x * x),
    ("sqrt", lambda m, x: m.sqrt(x), lambda t, x: t.sqrt(x)),
    ("exp", lambda m, x: m.exp(x), lambda t, x: t.exp(x)),
    ("log", lambda m, x: m.log(x), lambda t, x: t.log(x)),
    ("relu", lambda m, x: m.relu(x - 1), lambda t, x: t.relu(x - 1)),
    ("sigmoid", lambda m, x: m.sigmoid(x), lambda t, x: t.sigmoid(x)),
    ("tanh", lambda m, x: m.tanh(x), lambda t, x: t.tanh(x)),
    ("softmax", lambda m, x: m.softmax(x) * x, lambda t, x: t.softmax(x, -1) * x),
    ("log_softmax", lambda m, x: m.log_softmax(x, axis=0) * x,
     lambda t, x: t.log_softmax(x, 0) * x),
    ("mean", lambda m, x: m.mean(x, axis=1) * 3, lambda t, x: x.mean(1) * 3),
    ("max", lambda m, x: m.max(x, axis=0), lambda t, x: x.max(0).values),
    ("transpose", lambda m, x: m.dot(m.transpose(x), x), lambda t, x: x.T @ x),
    ("reshape_concat", lambda m, x: m.concat(x.reshape((3, 2)), x.reshape((3, 2)) ** 2),
     lambda t, x: t.cat([x.reshape(3, 2), x.reshape(3, 2) ** 2], 1)),
]


@pytest.mark.parametrize("name,mx_fn,torch_fn", OPS, ids=[o[0] for o in OPS])
def test_op_gradients_match_pytorch(name, mx_fn, torch_fn):
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(1).uniform(0.5, 2.0, (2, 3))
    x = mx.nd.array(data, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = mx_fn(mx.nd, x)
    weights = np.random.default_rng(2).standard_normal(y.shape)
    y.backward(mx.nd.array(weights, dtype="float64"))
    tx = torch.tensor(data, requires_grad=True)
    ty = torch_fn(torch, tx)
    ty.backward(torch.tensor(weights))
    np.testing.assert_allclose(y.asnumpy(), ty.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(x.grad.asnumpy(), tx.grad.numpy(), rtol=1e-10)


def test_softmax_cross_entropy_gradient():
    data = np.array([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]])
    x = mx.nd.array(data)
    x.attach_grad()
    with mx.autograd.record():
        loss = mx.nd.softmax_cross_entropy(x, mx.nd.array([1, 2]))
    loss.backward()
    p = np.exp(data) / np.exp(data).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(x.grad.asnumpy(), p - np.eye(3)[[1, 2]], rtol=1e-5, atol=1e-7)


# --- autograd ---------------------------------------------------------------------------------
def test_nothing_is_recorded_outside_record():
    x = mx.nd.array([1, 2])
    x.attach_grad()
    y = x * 2
    assert y._t.grad_fn is None
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        y.backward()
    with mx.autograd.record():
        with mx.autograd.pause():
            z = x * 2
    assert z._t.grad_fn is None


def test_recording_and_training_flags():
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    with mx.autograd.record():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        with mx.autograd.pause():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
        with mx.autograd.predict_mode():
            assert mx.autograd.is_recording() and not mx.autograd.is_training()
    with mx.autograd.record(train_mode=False):
        assert mx.autograd.is_recording() and not mx.autograd.is_training()
    with mx.autograd.train_mode():
        assert mx.autograd.is_training() and not mx.autograd.is_recording()
    assert mx.autograd.set_recording(True) is False
    assert mx.autograd.set_recording(False) is True
    assert not mx.autograd.is_recording()


def test_non_scalar_backward_uses_implicit_ones_and_head_grads():
    x = mx.nd.array([1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = x * x
    y.backward()  # no error, unlike PyTorch
    assert x.grad.asnumpy().tolist() == [2, 4, 6]
    with mx.autograd.record():
        y = x * x
    mx.autograd.backward([y], [mx.nd.array([1, 0, 2])])
    assert x.grad.asnumpy().tolist() == [2, 0, 12]


def test_grad_req_write_overwrites_and_add_accumulates():
    w = mx.nd.array([1, 2])
    a = mx.nd.array([1, 2])
    w.attach_grad()
    a.attach_grad(grad_req="add")
    held = w.grad  # the buffer is updated in place, as in MXNet
    for _ in range(3):
        with mx.autograd.record():
            y = (w * 3 + a * 3).sum()
        y.backward()
    assert w.grad.asnumpy().tolist() == [3, 3] and held is w.grad
    assert held.asnumpy().tolist() == [3, 3]
    assert a.grad.asnumpy().tolist() == [9, 9]
    n = mx.nd.array([1, 2])
    n.attach_grad(grad_req="null")
    with mx.autograd.record():
        y = (w * n).sum()
    y.backward()
    assert n.grad.asnumpy().tolist() == [0, 0] and w.grad.asnumpy().tolist() == [1, 2]


def test_second_backward_needs_retain_graph():
    x = mx.nd.array([1, 2])
    x.attach_grad()
    with mx.autograd.record():
        y = (x + 1).sum()  # nothing saved: PyTorch would allow the second pass, MXNet does not
    y.backward()
    with pytest.raises(mx.MXNetError, match="retain_graph=True"):
        y.backward()
    with mx.autograd.record():
        y = (x * x).sum()
        z = y * 2
    z.backward()
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        y.backward()  # part of the freed graph
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.asnumpy().tolist() == [2, 4]


def test_attach_grad_makes_a_new_variable_and_checks_its_arguments():
    x = mx.nd.array([1, 2])
    x.attach_grad()
    with mx.autograd.record():
        h = x * 2
        h.attach_grad()  # cuts the history: h is a variable now
        y = (h * h).sum()
    y.backward()
    assert h.grad.asnumpy().tolist() == [4, 8] and x.grad.asnumpy().tolist() == [0, 0]
    with pytest.raises(ValueError, match="grad_req"):
        x.attach_grad("sometimes")
    with pytest.raises(TypeError, match="floating-point"):
        mx.nd.array([1], dtype="int32").attach_grad()


def test_setitem_inside_record_is_differentiable():
    x = mx.nd.array([1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.zeros((3,))
        y[1:] = x[1:] * x[1:]
        s = y.sum()
    s.backward()
    assert x.grad.asnumpy().tolist() == [0, 4, 6]


def test_grad_returns_arrays_and_supports_higher_order():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = (x ** 3).sum()
        dx = mx.autograd.grad(y, [x], create_graph=True)
    assert isinstance(dx, list) and dx[0].asnumpy().tolist() == [3, 12]
    dx[0].backward()
    assert x.grad.asnumpy().tolist() == [6, 12]
    with mx.autograd.record():
        y = (x ** 2).sum()
    g = mx.autograd.grad(y, x)
    assert isinstance(g, mx.nd.NDArray) and g.asnumpy().tolist() == [2, 4]
    with pytest.raises(mx.MXNetError, match="retain_graph=True"):
        y.backward()  # grad freed the graph (retain_graph defaults to create_graph)
    with pytest.raises(mx.MXNetError, match="attach_grad"):
        mx.autograd.grad(y, mx.nd.array([1.0]))


def test_mark_variables_uses_the_given_buffers():
    x = mx.nd.array([1, 2])
    buf = mx.nd.array([10, 10])
    mx.autograd.mark_variables([x], [buf], grad_reqs="add")
    with mx.autograd.record():
        y = (x * 2).sum()
    y.backward()
    assert x.grad is buf and buf.asnumpy().tolist() == [12, 12]


def test_backward_inside_record_as_mxnet_tutorials_do():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = (mx.nd.sigmoid(x) * x).sum()
        y.backward()
    s = 1 / (1 + np.exp(-np.array([1.0, 2.0])))
    np.testing.assert_allclose(x.grad.asnumpy(), s + np.array([1, 2]) * s * (1 - s), rtol=1e-6)


def test_ops_record_kit_nodes_with_kit_names():
    x = mx.nd.array([1, 2])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.exp(x)
    assert y.tensor.grad_fn.op == "exp" and y.tensor is y._t


# --- contexts ---------------------------------------------------------------------------------
def test_context_objects_and_default_scope():
    assert repr(mx.cpu()) == "cpu(0)" and mx.cpu() == mx.context.cpu(0)
    assert mx.context.current_context() == mx.cpu()
    with mx.Context("cpu", 1):
        assert mx.context.current_context().device_id == 1
    assert mx.context.num_gpus() == (1 if backend.gpu_available() else 0)


def test_gpu_without_a_usable_gpu_says_why():
    if backend.gpu_available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(mx.MXNetError, match="no usable GPU") as info:
        mx.gpu()
    assert backend.gpu_unavailable_reason() in str(info.value)


def test_arrays_and_gradients_on_each_device(xp_device):
    ctx = ctx_for(xp_device)
    x = mx.nd.array([[1, 2], [3, 4]], ctx=ctx)
    assert x.context == ctx
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.dot(x, x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [[7, 11], [9, 13]])
    assert x.as_in_context(mx.cpu()).context == mx.cpu()
    assert kit.backend.device_of(x._t.data) == xp_device


def test_a_training_loop_updates_parameters_in_place():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((32, 1))
    data, target = mx.nd.array(xs), mx.nd.array(2 * xs + 1)
    w, b = mx.nd.zeros((1, 1)), mx.nd.zeros((1,))
    for p in (w, b):
        p.attach_grad()
    for _ in range(200):
        with mx.autograd.record():
            loss = mx.nd.mean(mx.nd.square(mx.nd.dot(data, w) + b - target))
        loss.backward()
        w -= 0.1 * w.grad  # outside record: a plain in-place update, as in MXNet
        b[:] = b - 0.1 * b.grad
    np.testing.assert_allclose([w.asscalar(), b.asscalar()], [2, 1], atol=1e-3)
    assert w.tensor.grad_fn is None and w.tensor.requires_grad


def test_in_place_writes_to_recorded_arrays_inside_record_are_refused_as_mxnet():
    """MXNet's Imperative::RecordOp refuses `+=`, `x[:] =`... on an array that is in the graph
    while recording (its message, at the write); outside record, or on an array with no
    history, they work."""
    w = mx.nd.array([1.0, 2.0])
    w.attach_grad()
    with mx.autograd.record():
        y = w * 2
        for write in (lambda: y.__itruediv__(2), lambda: y.__setitem__(0, 5.0),
                      lambda: w.__iadd__(1)):
            with pytest.raises(mx.base.MXNetError, match=r"Inplace operations \(\+=, -=, x\[:\]=, "
                                                         r"etc\) are not supported when recording"):
                write()
        plain = mx.nd.zeros(2)
        plain += 1  # not in the graph
        y = y / 2  # the fix: a new array
    y.backward()
    assert w.grad.asnumpy().tolist() == [1.0, 1.0]
    y += 1  # after record
    assert y.asnumpy().tolist() == [2.0, 3.0]
