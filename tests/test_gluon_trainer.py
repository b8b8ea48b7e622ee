"""mx.optimizer and gluon.Trainer: MXNet's update formulas (rescale_grad, wd, momentum form,
clipping, Adam's folded bias correction) against NumPy references, Trainer.step's 1/batch_size,
lr/wd multipliers, state save/resume, and training loops as d2l's MXNet chapters write them,
including a CustomOp inside a Block trained like a built-in layer."""

import numpy as np
import pytest

import kit
import kit.mx as mx
from kit.mx import autograd, gluon, nd
from kit.mx.gluon import nn

RNG = np.random.default_rng(1)


def numpy_sgd(w, grads, lr, momentum=0.0, wd=0.0, rescale=1.0, clip=None):
    """MXNet's SGD written out: mom = momentum*mom - lr*(clip(rescale*g) + wd*w); w += mom."""
    w, mom = w.copy(), np.zeros_like(w)
    for g in grads:
        g = rescale * g
        if clip is not None:
            g = np.clip(g, -clip, clip)
        mom = momentum * mom - lr * (g + wd * w)
        w = w + mom
    return w


def numpy_adam(w, grads, lr, beta1=0.9, beta2=0.999, eps=1e-8, wd=0.0, rescale=1.0):
    w, m, v = w.copy(), np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        g = rescale * g + wd * w
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        w = w - lr * np.sqrt(1 - beta2**t) / (1 - beta1**t) * m / (np.sqrt(v) + eps)
    return w


def run_optimizer(opt, w0, grads):
    w = nd.array(w0, dtype="float64")
    state = opt.create_state(0, w)
    for g in grads:
        opt.update(0, w, nd.array(g, dtype="float64"), state)
    return w.asnumpy()


W0 = RNG.standard_normal(5)
GRADS = [RNG.standard_normal(5) for _ in range(6)]


@pytest.mark.parametrize("kwargs", [
    {"learning_rate": 0.1},
    {"learning_rate": 0.1, "momentum": 0.9},
    {"learning_rate": 0.05, "momentum": 0.8, "wd": 0.01, "rescale_grad": 0.25},
    {"learning_rate": 0.1, "wd": 0.1},
    {"learning_rate": 0.1, "momentum": 0.5, "clip_gradient": 0.3},
])
def test_sgd_matches_mxnet_formula(kwargs):
    opt = mx.optimizer.SGD(**kwargs)
    ref = numpy_sgd(W0, GRADS, kwargs["learning_rate"], kwargs.get("momentum", 0.0),
                    kwargs.get("wd", 0.0), kwargs.get("rescale_grad", 1.0),
                    kwargs.get("clip_gradient"))
    np.testing.assert_allclose(run_optimizer(opt, W0, GRADS), ref, rtol=1e-12)


@pytest.mark.parametrize("kwargs", [
    {},
    {"learning_rate": 0.01, "wd": 0.1, "rescale_grad": 0.5},
    {"learning_rate": 0.1, "beta1": 0.5, "beta2": 0.9, "epsilon": 0.1},
])
def test_adam_matches_mxnet_formula(kwargs):
    opt = mx.optimizer.Adam(**kwargs)
    ref = numpy_adam(W0, GRADS, kwargs.get("learning_rate", 0.001), kwargs.get("beta1", 0.9),
                     kwargs.get("beta2", 0.999), kwargs.get("epsilon", 1e-8),
                     kwargs.get("wd", 0.0), kwargs.get("rescale_grad", 1.0))
    np.testing.assert_allclose(run_optimizer(opt, W0, GRADS), ref, rtol=1e-12)


def test_mxnet_adam_differs_from_pytorch_adam_where_epsilon_matters():
    """MXNet adds epsilon to sqrt(v) before the bias correction; PyTorch after."""
    mxnet = run_optimizer(mx.optimizer.Adam(learning_rate=0.1, epsilon=0.1), W0, GRADS)
    p = kit.tensor(W0.copy(), requires_grad=True)
    torch_style = kit.optim.Adam([p], lr=0.1, eps=0.1)
    for g in GRADS:
        p.grad = kit.tensor(g)
        torch_style.step()
    assert not np.allclose(mxnet, p.detach().numpy(), rtol=1e-6)


def test_optimizer_registry_learning_rate_and_multipliers():
    opt = mx.optimizer.create("sgd", learning_rate=0.5, wd=0.1)
    assert isinstance(opt, mx.optimizer.SGD) and opt.learning_rate == 0.5
    opt.set_learning_rate(0.25)
    opt.set_lr_mult({0: 2.0})
    opt.set_wd_mult({"b": 0.0})
    opt.idx2name = {1: "b"}
    assert opt._get_lr(0) == 0.5 and opt._get_wd(1) == 0.0 and opt._get_wd(2) == 0.1
    with pytest.raises(ValueError, match="Cannot find optimizer"):
        mx.optimizer.create("nadamax")
    scheduled = mx.optimizer.SGD(learning_rate=1.0, lr_scheduler=lambda n: 1.0 / (1 + n))
    with pytest.raises(UserWarning, match="LRScheduler"):
        scheduled.set_learning_rate(0.1)


def test_updater_creates_state_once_and_round_trips_it():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    updater = mx.optimizer.get_updater(opt)
    w = nd.array(W0, dtype="float64")
    for g in GRADS[:3]:
        updater(0, nd.array(g, dtype="float64"), w)
    blob = updater.get_states()
    other = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    other.set_states(blob)
    w2 = w.copy()
    for g in GRADS[3:]:
        updater(0, nd.array(g, dtype="float64"), w)
        other(0, nd.array(g, dtype="float64"), w2)
    np.testing.assert_array_equal(w.asnumpy(), w2.asnumpy())
    np.testing.assert_allclose(w.asnumpy(), numpy_sgd(W0, GRADS, 0.1, 0.9), rtol=1e-12)


# --- Trainer --------------------------------------------------------------------------------------
def linear_model(w, b):
    net = nn.Dense(1, in_units=w.shape[0], dtype="float64")
    net.initialize()
    net.weight.set_data(w.reshape(1, -1))
    net.bias.set_data(b)
    return net


def test_trainer_step_divides_gradients_by_batch_size():
    x = RNG.standard_normal((4, 3))
    y = RNG.standard_normal((4, 1))
    w, b = RNG.standard_normal(3), np.zeros(1)
    net = linear_model(w, b)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "wd": 0.01})
    with autograd.record():
        loss = gluon.loss.L2Loss()(net(nd.array(x, dtype="float64")),
                                   nd.array(y, dtype="float64"))
    loss.backward()  # the gradient of the per-sample losses' sum
    trainer.step(4)
    resid = x @ w + b - y[:, 0]
    grad_w, grad_b = x.T @ resid / 4, resid.sum(keepdims=True) / 4  # of the mean loss
    np.testing.assert_allclose(net.weight.data().asnumpy()[0],
                               w - 0.1 * (grad_w + 0.01 * w), rtol=1e-12)
    np.testing.assert_allclose(net.bias.data().asnumpy(), b - 0.1 * grad_b, rtol=1e-12)
    assert trainer.learning_rate == 0.1
    trainer.set_learning_rate(0.2)
    assert trainer.learning_rate == 0.2 and trainer.optimizer.lr == 0.2


def test_trainer_uses_parameter_lr_mult_and_wd_mult_and_skips_null():
    net = nn.Dense(2, in_units=2)
    net.initialize(mx.init.One())
    net.weight.lr_mult = 0.0
    net.bias.wd_mult = 0.0
    frozen = gluon.Parameter("frozen", shape=(2,), grad_req="null")
    frozen.initialize(mx.init.One())
    params = net.collect_params()
    trainer = gluon.Trainer(list(params.values()) + [frozen], "sgd",
                            {"learning_rate": 1.0, "wd": 0.5})
    with autograd.record():
        out = net(nd.ones((1, 2)))
    out.backward()
    trainer.step(1)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), 1)  # lr_mult 0
    np.testing.assert_array_equal(net.bias.data().asnumpy(), [-1, -1])  # grad 1, no wd
    np.testing.assert_array_equal(frozen.data().asnumpy(), [1, 1])


def test_trainer_arguments_errors():
    net = nn.Dense(1, in_units=1)
    with pytest.raises(ValueError, match="list or dict of Parameters"):
        gluon.Trainer(net, "sgd")
    with pytest.raises(ValueError, match="optimizer_params must be None"):
        gluon.Trainer(net.collect_params(), mx.optimizer.SGD(), {"learning_rate": 0.1})
    optimizer = mx.optimizer.Adam(learning_rate=0.01)
    assert gluon.Trainer(net.collect_params(), optimizer).optimizer is optimizer


def test_trainer_created_before_deferred_initialisation():
    net = nn.Sequential()
    net.add(nn.Dense(4, activation="relu"), nn.Dense(1))
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    x, y = nd.array(RNG.standard_normal((8, 3))), nd.array(RNG.standard_normal((8, 1)))
    before = None
    for _ in range(3):
        with autograd.record():
            loss = gluon.loss.L2Loss()(net(x), y)
        loss.backward()
        if before is None:
            before = net[0].weight.data().asnumpy()
        trainer.step(8)
    assert not np.allclose(before, net[0].weight.data().asnumpy())


def test_trainer_save_and_load_states_resume_exactly(tmp_path):
    x, y = nd.array(RNG.standard_normal((6, 3))), nd.array(RNG.standard_normal((6, 1)))

    def make():
        kit.manual_seed(3)
        net = nn.Dense(1, in_units=3)
        net.initialize(mx.init.Xavier())
        return net, gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})

    def train(net, trainer, steps):
        for _ in range(steps):
            with autograd.record():
                loss = gluon.loss.L2Loss()(net(x), y)
            loss.backward()
            trainer.step(6)

    net, trainer = make()
    train(net, trainer, 5)
    net_path, state_path = str(tmp_path / "n.params"), str(tmp_path / "t.states")
    net.save_parameters(net_path)
    trainer.save_states(state_path)
    train(net, trainer, 5)
    resumed, resumed_trainer = make()
    resumed.load_parameters(net_path)
    resumed_trainer.load_states(state_path)
    train(resumed, resumed_trainer, 5)
    np.testing.assert_array_equal(resumed.weight.data().asnumpy(), net.weight.data().asnumpy())


def test_gradient_accumulation_with_grad_req_add():
    x = nd.array(RNG.standard_normal((8, 2)))
    y = nd.array(RNG.standard_normal((8, 1)))
    whole = nn.Dense(1, in_units=2)
    whole.initialize(mx.init.One())
    parts = nn.Dense(1, in_units=2)
    parts.initialize(mx.init.One())
    parts.collect_params().setattr("grad_req", "add")
    loss_fn = gluon.loss.L2Loss()
    with autograd.record():
        loss = loss_fn(whole(x), y)
    loss.backward()
    for i in (0, 4):
        with autograd.record():
            loss = loss_fn(parts(x[i:i + 4]), y[i:i + 4])
        loss.backward()
    for name in ("weight", "bias"):
        np.testing.assert_allclose(getattr(parts, name).grad().asnumpy(),
                                   getattr(whole, name).grad().asnumpy(), rtol=1e-5)
    gluon.Trainer(parts.collect_params(), "sgd", {"learning_rate": 0.1}).step(8)
    parts.collect_params().zero_grad()
    assert parts.weight.grad().asnumpy().sum() == 0


def test_clip_global_norm_and_split_and_load():
    grads = [nd.array([[3.0, 0.0]]), nd.array([4.0])]
    total = gluon.utils.clip_global_norm(grads, 2.5)
    assert total == pytest.approx(5.0)
    np.testing.assert_allclose(grads[0].asnumpy(), [[1.5, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), [2.0], rtol=1e-6)
    small = [nd.array([0.1])]
    assert gluon.utils.clip_global_norm(small, 1.0) == pytest.approx(0.1)
    np.testing.assert_allclose(small[0].asnumpy(), [0.1], rtol=1e-6)
    with pytest.warns(UserWarning, match="nan or inf"):
        gluon.utils.clip_global_norm([nd.array([np.inf])], 1.0)
    batch = nd.array(np.arange(12).reshape(6, 2))
    (whole,) = gluon.utils.split_and_load(batch, [mx.cpu()])
    np.testing.assert_array_equal(whole.asnumpy(), batch.asnumpy())
    parts = gluon.utils.split_and_load(batch, [mx.cpu(0), mx.cpu(1), mx.cpu(2)])
    assert [p.shape for p in parts] == [(2, 2)] * 3
    with pytest.raises(ValueError, match="evenly split"):
        gluon.utils.split_and_load(batch, [mx.cpu(0)] * 4)
    uneven = gluon.utils.split_and_load(batch, [mx.cpu(0)] * 4, even_split=False)
    assert sum(p.shape[0] for p in uneven) == 6


# --- training loops, d2l style --------------------------------------------------------------------
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
