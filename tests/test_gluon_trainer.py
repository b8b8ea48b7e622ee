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


def test_stale_gradients_are_an_error_unless_ignored():
    """MXNet's Trainer refuses a Parameter no backward reached since the last step (a model that
    used a subset of its Blocks), before updating anything; ignore_stale_grad skips it."""
    used, unused = nn.Dense(1, in_units=2), nn.Dense(1, in_units=2)
    for layer in (used, unused):
        layer.initialize(mx.init.One())
    params = list(used.collect_params().values()) + list(unused.collect_params().values())
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.5})
    with pytest.raises(UserWarning, match="has not been updated by backward since last `step`"):
        trainer.step(1)  # no backward yet
    with autograd.record():
        out = used(nd.ones((1, 2)))
    out.backward()
    with pytest.raises(UserWarning, match=f"`{unused.weight.name}`.*ignore_stale_grad=True"):
        trainer.step(1)
    np.testing.assert_array_equal(used.weight.data().asnumpy(), 1)  # nothing was updated
    trainer.step(1, ignore_stale_grad=True)
    np.testing.assert_array_equal(used.weight.data().asnumpy(), 0.5)  # 1 - 0.5 * 1
    np.testing.assert_array_equal(unused.weight.data().asnumpy(), 1)
    trainer.step(1, ignore_stale_grad=True)  # the used ones are stale now too: no change
    np.testing.assert_array_equal(used.weight.data().asnumpy(), 0.5)
    with pytest.raises(UserWarning, match=used.weight.name):
        gluon.Trainer(used.collect_params(), "sgd", {"learning_rate": 0.5}).update(1)
