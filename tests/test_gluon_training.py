"""Training loops as d2l's MXNet chapters and MXNet's examples write them: concise linear
regression, a softmax classifier, a CNN with BatchNorm and Dropout saved and reloaded, and a
CustomOp inside a Block trained to the same weights as the built-in activation."""

import numpy as np

import kit
import kit.mx as mx
from kit.mx import autograd, gluon, nd
from kit.mx.gluon import nn

RNG = np.random.default_rng(2)


def test_linear_regression_concise_as_d2l():
    true_w, true_b = np.array([2.0, -3.4]), 4.2
    features = RNG.standard_normal((1000, 2))
    labels = features @ true_w + true_b + RNG.normal(0, 0.01, 1000)
    dataset = gluon.data.ArrayDataset(nd.array(features), nd.array(labels))
    data_iter = gluon.data.DataLoader(dataset, batch_size=10, shuffle=True)
    net = nn.Sequential()
    net.add(nn.Dense(1))
    net.initialize(mx.init.Normal(sigma=0.01))
    loss = gluon.loss.L2Loss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.03})
    for _ in range(3):
        for X, y in data_iter:  # noqa: N806 - d2l's names
            with autograd.record():
                batch_loss = loss(net(X), y)
            batch_loss.backward()
            trainer.step(10)
    np.testing.assert_allclose(net[0].weight.data().asnumpy()[0], true_w, atol=2e-3)
    np.testing.assert_allclose(net[0].bias.data().asnumpy(), [true_b], atol=2e-3)
    final = loss(net(nd.array(features)), nd.array(labels)).mean().asscalar()
    assert final < 1e-4


def test_softmax_classifier_reaches_high_accuracy():
    centres = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.5]])
    labels = RNG.integers(0, 3, 300)
    features = centres[labels] + RNG.normal(0, 0.5, (300, 2))
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(features), nd.array(labels)),
                                   batch_size=30, shuffle=True)
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2, "momentum": 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(5):
        for X, y in loader:  # noqa: N806
            with autograd.record():
                loss = loss_fn(net(X), y)
            loss.backward()
            trainer.step(X.shape[0])
    predicted = net(nd.array(features)).asnumpy().argmax(1)
    assert (predicted == labels).mean() > 0.95


class TanhOp(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.tanh(in_data[0]))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0]
        self.assign(in_grad[0], req[0], out_grad[0] * (1 - y * y))


@mx.operator.register("gluon_test_tanh")
class TanhProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return TanhOp()


class CustomTanhNet(nn.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = nn.Dense(8, in_units=4)
        self.out = nn.Dense(3, in_units=8)

    def forward(self, x):
        return self.out(mx.nd.Custom(self.hidden(x), op_type="gluon_test_tanh"))


def test_custom_op_inside_a_block_trains_like_the_builtin_activation():
    x = nd.array(RNG.standard_normal((16, 4)))
    y = nd.array(RNG.integers(0, 3, 16))

    def train(net):
        kit.manual_seed(7)
        net.initialize(mx.init.Xavier())
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        for _ in range(20):
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(16)
        return [p.data().asnumpy() for p in net.collect_params().values()]

    builtin = nn.Sequential()
    builtin.add(nn.Dense(8, in_units=4, activation="tanh"), nn.Dense(3, in_units=8))
    custom = train(CustomTanhNet())
    reference = train(builtin)
    assert len(custom) == len(reference) == 4
    for a, b in zip(custom, reference, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_cnn_with_batchnorm_and_dropout_trains_saves_and_predicts_the_same(tmp_path):
    def build():
        net = nn.HybridSequential()
        net.add(nn.Conv2D(4, kernel_size=3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(), nn.Flatten(), nn.Dropout(0.3), nn.Dense(2))
        return net

    images = RNG.standard_normal((24, 1, 6, 6))
    labels = (images.mean(axis=(1, 2, 3)) > 0).astype(np.float32)
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(images), nd.array(labels)),
                                   batch_size=8, shuffle=True, last_batch="discard")
    net = build()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(3):
        for X, y in loader:  # noqa: N806
            with autograd.record():
                loss = loss_fn(net(X), y)
            loss.backward()
            trainer.step(X.shape[0])
    bn = net[1]
    assert not np.allclose(bn.running_mean.data().asnumpy(), 0)
    path = str(tmp_path / "cnn.params")
    net.save_parameters(path)
    with np.load(path) as archive:  # running statistics are saved with the weights
        assert {"1.running_mean", "1.running_var", "1.gamma", "1.beta"} <= set(archive.files)
    clone = build()
    clone.load_parameters(path)
    x = nd.array(images[:5])
    np.testing.assert_allclose(clone(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)
