"""One small network, three styles, one result: a 4-8-3 tanh MLP on a fixed dataset trained for
100 SGD steps (lr 0.1, optionally momentum 0.9) written with kit's core tensors by hand, with
kit.torch's nn + optim (and real PyTorch where installed), and with kit.mx.gluon + Trainer. From
the same initial weights, in float64, all reach the same weights.

The gluon loss is per sample: backward differentiates its sum, and Trainer.step(batch) divides
by the batch size, which is the mean loss the other two styles differentiate. MXNet's momentum
form (mom = m * mom - lr * g; w += mom) equals PyTorch's (buf = m * buf + g; w -= lr * buf) for a
constant learning rate."""

import numpy as np
import pytest

import kit
import kit.torch
from tests.torch_oracle import libraries

STEPS, LR, N = 100, 0.1, 32


def problem():
    rng = np.random.default_rng(42)
    x = rng.standard_normal((N, 4))
    y = rng.integers(0, 3, N)
    w1, b1 = rng.standard_normal((8, 4)) * 0.5, rng.standard_normal(8) * 0.1
    w2, b2 = rng.standard_normal((3, 8)) * 0.5, rng.standard_normal(3) * 0.1
    return x, y, [w1, b1, w2, b2]


def train_core(momentum):
    """kit's core: tensors, kit.cross_entropy, backward, the update by hand under no_grad."""
    x, y, init = problem()
    xt, yt = kit.tensor(x), kit.tensor(y)
    params = [kit.tensor(a.copy(), requires_grad=True) for a in init]
    bufs = [None] * 4
    w1, b1, w2, b2 = params
    for _ in range(STEPS):
        logits = kit.tanh(xt @ w1.mT + b1) @ w2.mT + b2
        kit.cross_entropy(logits, yt).backward()
        with kit.no_grad():
            for i, p in enumerate(params):
                g = p.grad
                if momentum:
                    bufs[i] = g.clone() if bufs[i] is None else bufs[i] * momentum + g
                    g = bufs[i]
                p -= LR * g
                p.grad = None
    return [p.detach().numpy() for p in params]


def train_torch(torch, momentum):
    """torch.nn + torch.optim, as a PyTorch tutorial writes it (kit.torch or PyTorch)."""
    x, y, init = problem()
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    names = ["0.weight", "0.bias", "2.weight", "2.bias"]
    model.load_state_dict({k: torch.tensor(a) for k, a in zip(names, init, strict=True)})
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=momentum)
    xt, yt = torch.tensor(x), torch.tensor(y)
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
    return [p.detach().numpy() for p in model.parameters()]


def train_gluon(momentum):
    """kit.mx.gluon: Dense layers, SoftmaxCrossEntropyLoss, autograd.record, Trainer.step."""
    import kit.mx as mx
    from kit.mx import autograd, gluon

    x, y, init = problem()
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation="tanh", in_units=4, dtype="float64"),
            gluon.nn.Dense(3, in_units=8, dtype="float64"))
    net.initialize()
    params = list(net.collect_params().values())
    for p, a in zip(params, init, strict=True):
        p.set_data(a)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": LR, "momentum": momentum})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    xs, ys = mx.nd.array(x, dtype="float64"), mx.nd.array(y)
    for _ in range(STEPS):
        with autograd.record():
            loss = loss_fn(net(xs), ys)
        loss.backward()
        trainer.step(N)
    return [p.data().asnumpy() for p in params]


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("torch", libraries())
def test_three_styles_train_to_the_same_weights(torch, momentum):
    core = train_core(momentum)
    styles = {"torch": train_torch(torch, momentum), "gluon": train_gluon(momentum)}
    _, _, init = problem()
    assert not np.allclose(core[0], init[0], atol=1e-2)  # training moved the weights
    for name, weights in styles.items():
        for got, want in zip(weights, core, strict=True):
            assert got.dtype == np.float64, name
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=name)


def test_gluon_l2_loss_matches_half_mse_in_torch_style():
    """L2Loss's 1/2 factor and per-sample mean, against kit.torch's MSELoss / 2."""
    import kit.mx as mx
    from kit.mx import autograd, gluon

    x, _, init = problem()
    target = np.sin(x[:, :3])
    net = gluon.nn.Dense(3, in_units=4, dtype="float64")
    net.initialize()
    net.weight.set_data(init[2][:, :4])
    net.bias.set_data(init[3])
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    model = kit.torch.nn.Linear(4, 3).double()
    model.load_state_dict({"weight": kit.torch.tensor(init[2][:, :4]),
                           "bias": kit.torch.tensor(init[3])})
    opt = kit.torch.optim.SGD(model.parameters(), lr=LR)
    mse = kit.torch.nn.MSELoss()
    for _ in range(20):
        with autograd.record():
            loss = gluon.loss.L2Loss()(net(mx.nd.array(x, dtype="float64")),
                                       mx.nd.array(target, dtype="float64"))
        loss.backward()
        trainer.step(N)
        opt.zero_grad()
        # the mean over the batch of each sample's mean over 3 outputs, halved
        (mse(model(kit.torch.tensor(x)), kit.torch.tensor(target)) / 2).backward()
        opt.step()
    np.testing.assert_allclose(net.weight.data().asnumpy(), model.weight.detach().numpy(),
                               rtol=1e-10)
