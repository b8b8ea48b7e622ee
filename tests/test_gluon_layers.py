"""gluon.nn layers and gluon.loss against NumPy references of MXNet's definitions (values and
gradients through mx.autograd), and gluon.data's datasets and loader."""

import numpy as np
import pytest

import kit.mx as mx
from kit.mx import autograd, gluon, nd
from kit.mx.gluon import nn

RNG = np.random.default_rng(0)


def grads_of(block, x, *extra):
    """Forward under record, backward with MXNet's implicit ones; (output, {name: grad})."""
    with autograd.record():
        out = block(x, *extra)
    out.backward()
    return out.asnumpy(), {k: p.grad().asnumpy() for k, p in block.collect_params().items()
                           if p.grad_req != "null"}


def test_dense_flatten_and_in_units_inference_against_numpy():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    layer = nn.Dense(5, activation="tanh")
    layer.initialize(mx.init.Xavier())
    out, grads = grads_of(layer, nd.array(x))
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    assert w.shape == (5, 12)
    ref = np.tanh(x.reshape(2, 12) @ w.T + b)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    dz = 1 - ref**2
    np.testing.assert_allclose(grads[layer.weight.name], dz.T @ x.reshape(2, 12), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(grads[layer.bias.name], dz.sum(0), rtol=1e-5)


def test_dense_flatten_false_applies_to_the_last_axis():
    layer = nn.Dense(2, flatten=False, use_bias=False)
    layer.initialize(mx.init.One())
    out = layer(nd.ones((3, 4, 5)))
    assert out.shape == (3, 4, 2) and layer.weight.shape == (2, 5) and layer.bias is None
    np.testing.assert_array_equal(out.asnumpy(), 5)


@pytest.mark.parametrize("act, ref", [
    ("relu", lambda x: np.maximum(x, 0)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("tanh", np.tanh),
    ("softrelu", lambda x: np.log1p(np.exp(x))),
    ("softsign", lambda x: x / (1 + np.abs(x))),
])
def test_activation_values(act, ref):
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(nn.Activation(act)(nd.array(x)).asnumpy(), ref(x), rtol=1e-5,
                               atol=1e-6)


def test_lambda_blocks_wrap_functions_and_nd_names():
    x = nd.array([[-1.0, 2.0]])
    np.testing.assert_array_equal(nn.Lambda(lambda v: v * 2)(x).asnumpy(), [[-2, 4]])
    np.testing.assert_array_equal(nn.Lambda("relu")(x).asnumpy(), [[0, 2]])
    hybrid = nn.HybridLambda(lambda F, v: F.relu(v) + 1)  # noqa: N803
    np.testing.assert_array_equal(hybrid(x).asnumpy(), [[1, 3]])
    np.testing.assert_allclose(nn.HybridLambda("tanh")(x).asnumpy(), np.tanh([[-1, 2]]), rtol=1e-6)
    assert repr(nn.Lambda("relu")) == "Lambda(relu)"
    with pytest.raises(ValueError, match="no function 'nope'"):
        nn.Lambda("nope")


def test_parametrised_activations_against_numpy():
    x = RNG.standard_normal((3, 4)).astype(np.float32) * 2
    from math import erf

    checks = [
        (nn.LeakyReLU(0.1), np.where(x > 0, x, 0.1 * x)),
        (nn.ELU(0.5), np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
        (nn.SELU(), 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))),
        (nn.Swish(2.0), x / (1 + np.exp(-2 * x))),
        (nn.GELU(), x * 0.5 * (1 + np.vectorize(erf)(x / np.sqrt(2)))),
    ]
    for block, ref in checks:
        np.testing.assert_allclose(block(nd.array(x)).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    prelu = nn.PReLU(in_channels=4)
    prelu.initialize()
    out, grads = grads_of(prelu, nd.array(x))
    np.testing.assert_allclose(out, np.where(x > 0, x, 0.25 * x), rtol=1e-6)
    np.testing.assert_allclose(grads[prelu.alpha.name], np.where(x > 0, 0, x).sum(0), rtol=1e-5)
    assert repr(nn.LeakyReLU(0.1)) == "LeakyReLU(0.1)"


def test_layer_norm_over_last_and_other_axes():
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    ln = nn.LayerNorm()
    ln.initialize()
    out, grads = grads_of(ln, nd.array(x))
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    assert ln.gamma.shape == (5,)
    np.testing.assert_allclose(grads[ln.beta.name], np.full(5, 6.0))
    along1 = nn.LayerNorm(axis=1)
    along1.initialize()
    ref1 = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(along1(nd.array(x)).asnumpy(), ref1, rtol=1e-4, atol=1e-5)
    assert repr(along1) == "LayerNorm(axis=1, eps=1e-05, in_channels=3)"


def test_unknown_activation_lists_mxnet_names():
    with pytest.raises(ValueError, match="softrelu"):
        nn.Activation("swishy")


def test_conv2d_and_pools_against_numpy():
    x = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    conv = nn.Conv2D(4, kernel_size=3, padding=1, strides=1)
    conv.initialize(mx.init.Xavier())
    y = conv(nd.array(x)).asnumpy()
    w, b = conv.weight.data().asnumpy(), conv.bias.data().asnumpy()
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((2, 4, 6, 6), np.float32)
    for i in range(6):
        for j in range(6):
            patch = padded[:, :, i:i + 3, j:j + 3]
            ref[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w) + b
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    pooled = nn.MaxPool2D(pool_size=2)(nd.array(x)).asnumpy()
    np.testing.assert_array_equal(pooled, x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    avg = nn.AvgPool2D(pool_size=2)(nd.array(x)).asnumpy()
    np.testing.assert_allclose(avg, x.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5)
    gap = nn.GlobalAvgPool2D()(nd.array(x)).asnumpy()
    np.testing.assert_allclose(gap, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    assert repr(conv) == "Conv2D(3 -> 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"


def test_lenet_style_network_trains_a_step():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(2, kernel_size=3, activation="relu"), nn.MaxPool2D(), nn.Flatten(),
            nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x, y = nd.array(RNG.standard_normal((4, 1, 8, 8))), nd.array([0, 1, 2, 1])
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _ in range(5):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(4)
        losses.append(loss.mean().asscalar())
    assert net[3].weight.shape == (3, 18) and losses[-1] < losses[0]


def test_dropout_only_while_training_and_with_shared_axes():
    layer = nn.Dropout(0.5)
    x = nd.ones((200, 50))
    np.testing.assert_array_equal(layer(x).asnumpy(), 1)  # predict mode outside record
    with autograd.record():
        y = layer(x).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    with autograd.record():
        shared = nn.Dropout(0.5, axes=(1,))(x).asnumpy()
    assert (shared == shared[:, :1]).all()
    with autograd.record(train_mode=False):
        np.testing.assert_array_equal(layer(x).asnumpy(), 1)


def test_batchnorm_training_statistics_and_mxnet_running_update():
    x = RNG.standard_normal((8, 3, 2, 2)).astype(np.float32) * 2 + 1
    bn = nn.BatchNorm()
    bn.initialize()
    with autograd.record():
        y = bn(nd.array(x))
    mu, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    ref = (x - mu[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    # MXNet: running = momentum * running + (1 - momentum) * batch, biased variance
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), 0.1 * mu, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.data().asnumpy(), 0.9 + 0.1 * var, rtol=1e-5)
    running_mean = bn.running_mean.data().asnumpy()
    running_var = bn.running_var.data().asnumpy()
    out = bn(nd.array(x)).asnumpy()  # predict mode: the running statistics
    ref = (x - running_mean[None, :, None, None]) / np.sqrt(
        running_var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    assert repr(bn).startswith("BatchNorm(axis=1, eps=1e-05, momentum=0.9")


def test_batchnorm_last_axis_and_its_parameter_gradients():
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    bn = nn.BatchNorm(axis=-1, in_channels=4)
    bn.initialize()
    out, grads = grads_of(bn, nd.array(x))
    ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads[bn.beta.name], np.full(4, 6.0), rtol=1e-6)
    np.testing.assert_allclose(grads[bn.gamma.name], ref.sum(0), atol=1e-4)
    assert bn.running_mean.grad_req == "null"


def test_embedding_picks_rows_and_accumulates_their_gradients():
    emb = nn.Embedding(5, 3)
    emb.initialize()
    idx = nd.array([[0, 2], [2, 4]])
    out, grads = grads_of(emb, idx)
    w = emb.weight.data().asnumpy()
    np.testing.assert_array_equal(out, w[[[0, 2], [2, 4]]])
    np.testing.assert_array_equal(grads[emb.weight.name][:, 0], [1, 0, 2, 0, 1])
    assert repr(emb) == "Embedding(5 -> 3, float32)"


# --- losses ---------------------------------------------------------------------------------------
def test_l2_loss_has_mxnet_half_factor_and_per_sample_mean():
    pred = RNG.standard_normal((4, 3)).astype(np.float32)
    label = RNG.standard_normal((4, 3)).astype(np.float32)
    loss = gluon.loss.L2Loss()(nd.array(pred), nd.array(label)).asnumpy()
    np.testing.assert_allclose(loss, 0.5 * ((pred - label) ** 2).mean(1), rtol=1e-5)
    weighted = gluon.loss.L2Loss(weight=3.0)(nd.array(pred), nd.array(label),
                                             nd.array([[1.0], [0.0], [1.0], [2.0]])).asnumpy()
    np.testing.assert_allclose(weighted, 1.5 * ((pred - label) ** 2).mean(1) * [1, 0, 1, 2],
                               rtol=1e-5)
    flat_label = gluon.loss.L2Loss()(nd.array(pred[:, :1]), nd.array(label[:, 0])).asnumpy()
    np.testing.assert_allclose(flat_label, 0.5 * (pred[:, 0] - label[:, 0]) ** 2, rtol=1e-5)


def test_huber_loss():
    pred, label = np.array([[2.0, 0.5, -3.0]]), np.zeros((1, 3))
    d = np.abs(pred)
    ref = np.where(d > 1, d - 0.5, 0.5 * d * d).mean(1)
    np.testing.assert_allclose(gluon.loss.HuberLoss()(nd.array(pred), nd.array(label)).asnumpy(),
                               ref, rtol=1e-6)


def test_l1_loss():
    pred, label = np.array([[1.0, -2.0]]), np.array([[0.0, 0.0]])
    np.testing.assert_allclose(gluon.loss.L1Loss()(nd.array(pred), nd.array(label)).asnumpy(),
                               [1.5])


def _log_softmax(z, axis=-1):
    z = z - z.max(axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis, keepdims=True))


def test_softmax_cross_entropy_sparse_dense_axis_and_logits():
    pred = RNG.standard_normal((5, 4)).astype(np.float32)
    label = np.array([0, 3, 1, 1, 2])
    ref = -_log_softmax(pred)[np.arange(5), label]
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    np.testing.assert_allclose(loss_fn(nd.array(pred), nd.array(label)).asnumpy(), ref,
                               rtol=1e-5)
    dense = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False)
    onehot = np.eye(4)[label]
    np.testing.assert_allclose(dense(nd.array(pred), nd.array(onehot)).asnumpy(), ref, rtol=1e-5)
    logits = gluon.loss.SoftmaxCrossEntropyLoss(from_logits=True)
    np.testing.assert_allclose(logits(nd.array(_log_softmax(pred)), nd.array(label)).asnumpy(),
                               ref, rtol=1e-5)
    along1 = gluon.loss.SoftmaxCrossEntropyLoss(axis=1)
    pred3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)  # classes on axis 1
    label3 = np.array([[0, 1, 2, 0], [2, 2, 1, 0]])
    ref3 = -np.take_along_axis(_log_softmax(pred3, 1), label3[:, None], 1)[:, 0].mean(1)
    np.testing.assert_allclose(along1(nd.array(pred3), nd.array(label3)).asnumpy(), ref3,
                               rtol=1e-5)
    with pytest.raises(IndexError, match="class 7"):
        loss_fn(nd.array(pred), nd.array([7, 0, 0, 0, 0]))


def test_softmax_cross_entropy_gradient_is_softmax_minus_onehot():
    pred = nd.array(RNG.standard_normal((3, 4)))
    pred.attach_grad()
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(pred, nd.array([1, 0, 3]))
    loss.backward()
    p = np.exp(_log_softmax(pred.asnumpy()))
    np.testing.assert_allclose(pred.grad.asnumpy(), p - np.eye(4)[[1, 0, 3]], rtol=1e-5,
                               atol=1e-6)


def test_sigmoid_bce_from_logits_from_sigmoid_and_pos_weight():
    x = RNG.standard_normal((4, 3)).astype(np.float32) * 3
    y = (RNG.random((4, 3)) > 0.5).astype(np.float32)
    s = 1 / (1 + np.exp(-x))
    ref = -(y * np.log(s) + (1 - y) * np.log(1 - s)).mean(1)
    bce = gluon.loss.SigmoidBinaryCrossEntropyLoss()
    np.testing.assert_allclose(bce(nd.array(x), nd.array(y)).asnumpy(), ref, rtol=1e-4)
    from_sig = gluon.loss.SigmoidBCELoss(from_sigmoid=True)
    np.testing.assert_allclose(from_sig(nd.array(s), nd.array(y)).asnumpy(), ref, rtol=1e-4)
    pos = nd.array(np.full((1, 3), 2.0))
    ref_pos = -(2 * y * np.log(s) + (1 - y) * np.log(1 - s)).mean(1)
    np.testing.assert_allclose(bce(nd.array(x), nd.array(y), None, pos).asnumpy(), ref_pos,
                               rtol=1e-4)


# --- data -----------------------------------------------------------------------------------------
def test_array_dataset_and_data_loader_batches_as_ndarrays():
    x = nd.array(np.arange(10).reshape(5, 2))
    y = nd.array(np.arange(5))
    data = gluon.data.ArrayDataset(x, y)
    assert len(data) == 5
    sample_x, sample_y = data[1]
    assert sample_x.shape == (2,) and sample_y == 1.0
    batches = list(gluon.data.DataLoader(data, batch_size=2))
    assert [b[0].shape for b in batches] == [(2, 2), (2, 2), (1, 2)]
    assert isinstance(batches[0][1], mx.nd.NDArray) and batches[0][1].shape == (2,)
    loader = gluon.data.DataLoader(data, batch_size=2, shuffle=True, last_batch="discard")
    assert len(loader) == 2
    seen = sorted(v for _, yb in loader for v in yb.asnumpy().tolist())
    assert len(seen) == 4 and set(seen) <= set(range(5))
    with pytest.raises(ValueError, match="same length"):
        gluon.data.ArrayDataset(x, nd.ones((3,)))
    with pytest.raises(ValueError, match="rollover"):
        gluon.data.DataLoader(data, batch_size=2, last_batch="rollover")


def test_transform_first_and_simple_dataset():
    data = gluon.data.ArrayDataset(np.arange(4.0), np.arange(4))
    scaled = data.transform_first(lambda v: v * 10)
    assert scaled[2] == (20.0, 2)
    eager = data.transform(lambda a, b: a + b, lazy=False)
    assert [eager[i] for i in range(4)] == [0, 2, 4, 6]
    simple = gluon.data.SimpleDataset([1, 2, 3])
    assert [b.asnumpy().tolist() for b in gluon.data.DataLoader(simple, batch_size=2)] == [
        [1, 2], [3]]
