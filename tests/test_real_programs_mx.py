"""Programs written the way MXNet 1.x code writes them (d2l's MXNet chapters on autograd, model
construction, parameters and custom layers; MXNet's custom-op unit tests and examples), in kit's
own words, run under `import kit.mx as mx` and checked against NumPy: control flow under
record(), hand-made Blocks with constants and a data-dependent loop, parameter access by regular
expression, re-initialisation and a custom Initializer, shared parameters training as one, a
CustomOp with auxiliary states and one with no inputs, and a CustomOp inside a HybridBlock
trained with Adam, saved, loaded and trained on identically."""

from __future__ import annotations

import numpy as np
import pytest

import kit.mx as mx
from kit.mx import autograd, gluon, init, nd
from kit.mx.gluon import nn

RNG = np.random.default_rng(3)


def test_control_flow_under_record():
    x = nd.arange(4).reshape((4, 1))
    x.attach_grad()
    with autograd.record():
        y = 2 * nd.dot(x.T, x)
    y.backward()
    assert (x.grad - 4 * x).norm().asscalar() == 0
    assert not autograd.is_training()
    with autograd.record():
        assert autograd.is_training()

    def doubling(a):
        b = a * 2
        while b.norm().asscalar() < 1000:
            b = b * 2
        return b if b.sum().asscalar() > 0 else 100 * b

    for start in (0.7, -0.3):
        a = nd.array([start])
        a.attach_grad()
        with autograd.record():
            c = doubling(a)
        c.backward()
        np.testing.assert_allclose(a.grad.asnumpy(), (c / a).asnumpy(), rtol=1e-6)


class _Fancy(nn.Block):
    """A constant weight (no gradient), one Dense used twice, a loop on the data's norm (in place
    as d2l writes it; MXNet refuses that on a recorded array, so `inplace = False` there)."""

    inplace = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.constant = self.params.get_constant("constant", RNG.uniform(size=(6, 6)))
        self.dense = nn.Dense(6, in_units=6, activation="relu")

    def forward(self, x):
        x = self.dense(x)
        x = nd.relu(nd.dot(x, self.constant.data()) + 1)
        x = self.dense(x)
        while x.norm().asscalar() > 1:
            if self.inplace:
                x /= 2
            else:
                x = x / 2
        if x.norm().asscalar() < 0.8:
            x = x * 10
        return x.sum()


class _ByChildren(nn.Block):
    """d2l's own Sequential: children kept in the Block's _children dictionary."""

    def add(self, block):
        self._children[block.name] = block

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x


def test_hand_made_blocks_match_numpy():
    net = _ByChildren()
    net.add(nn.Dense(6, in_units=4, activation="relu"))
    net.add(_Fancy())
    net.initialize(init.Constant(0.05))
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    out = net(nd.array(x))
    fancy = list(net._children.values())[1]
    assert len(fancy.collect_params()) == 3  # the constant, the Dense's weight and bias
    # the global Constant(0.05) initialises the weights; a Dense's bias keeps its own 'zeros'
    h = np.maximum(x @ np.full((4, 6), 0.05), 0)
    w = np.full((6, 6), 0.05)
    h = np.maximum(np.maximum(h @ w, 0) @ fancy.constant.data().asnumpy() + 1, 0)
    h = np.maximum(h @ w, 0)
    while np.linalg.norm(h) > 1:
        h = h / 2
    if np.linalg.norm(h) < 0.8:
        h = h * 10
    np.testing.assert_allclose(out.asscalar(), h.sum(), rtol=1e-5)
    with pytest.raises(mx.base.MXNetError, match="Inplace operations .* not supported when "
                                                 "recording"), autograd.record():
        net(nd.array(x))  # x /= 2 on a recorded array: MXNet's own refusal
    fancy.inplace = False
    with autograd.record():
        loss = net(nd.array(x))
    loss.backward()
    np.testing.assert_allclose(loss.asscalar(), h.sum(), rtol=1e-5)
    assert fancy.constant.grad_req == "null"


class _Symmetric(init.Initializer):
    """d2l's custom Initializer: uniform in [-10, 10], small values zeroed."""

    def _init_weight(self, name, data):
        data[:] = nd.random.uniform(low=-10, high=10, shape=data.shape)
        data *= data.abs() >= 5


def test_parameter_access_reinitialisation_and_sharing():
    net = nn.Sequential()
    shared = nn.Dense(3, in_units=3, activation="relu")
    net.add(nn.Dense(3, in_units=2, activation="relu"), shared,
            nn.Dense(3, in_units=3, activation="relu", params=shared.params), nn.Dense(1))
    net.initialize()
    x = nd.array(RNG.standard_normal((4, 2)))
    net(x)
    weights = net.collect_params(".*weight")
    assert len(weights) == 3 and all(name.endswith("weight") for name in weights)
    assert len(net.collect_params()) == 6  # the shared layer's two parameters counted once
    net.initialize(init=init.Normal(sigma=0.01), force_reinit=True)
    assert abs(net[0].weight.data().asnumpy()).max() < 0.1
    net[0].weight.initialize(init=init.Xavier(), force_reinit=True)
    net[3].initialize(init=init.Constant(42), force_reinit=True)
    assert (net[3].weight.data().asnumpy() == 42).all()
    net.initialize(_Symmetric(), force_reinit=True)
    w = net[0].weight.data().asnumpy()
    assert ((w == 0) | (abs(w) >= 5)).all() and abs(w).max() <= 10
    net[0].weight.set_data(net[0].weight.data() + 1)
    np.testing.assert_array_equal(net[0].weight.data().asnumpy(), w + 1)
    net[1].weight.data()[0, 0] = 100  # one array: both uses see it
    assert net[2].weight.data()[0, 0].asscalar() == 100

    net.initialize(init.Constant(0.1), force_reinit=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    grad = net[1].weight.grad().asnumpy().copy()
    assert np.abs(grad).sum() > 0 and net[2].weight.grad() is net[1].weight.grad()
    trainer.step(1)
    np.testing.assert_allclose(net[2].weight.data().asnumpy(), 0.1 - 0.1 * grad, rtol=1e-6)


class _SquareWithCount(mx.operator.CustomOp):
    """x * x, counting its forward and backward calls in an auxiliary state."""

    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] += 1
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        aux[0][:] += 10
        self.assign(in_grad[0], req[0], 2 * mx.nd.sparse.elemwise_mul(in_data[0], out_grad[0]))


@mx.operator.register("real_programs_square")
class _SquareWithCountProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]

    def infer_type(self, in_type):
        return in_type, [in_type[0]], [in_type[0]]

    def create_operator(self, ctx, shapes, dtypes):
        return _SquareWithCount()


class _Constant(mx.operator.CustomOp):
    def __init__(self, rows, columns):
        super().__init__()
        self.value = np.full((rows, columns), 0.5, dtype=np.float32)

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], self.value)


@mx.operator.register("real_programs_constant")
class _ConstantProp(mx.operator.CustomOpProp):
    """An operator with no inputs (its shape comes from its string kwargs)."""

    def __init__(self, rows, columns):
        super().__init__()
        self.rows, self.columns = int(rows), int(columns)

    def list_arguments(self):
        return []

    def infer_shape(self, in_shape):
        return (), [(self.rows, self.columns)], ()

    def infer_type(self, in_type):
        return [], [np.float32], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Constant(self.rows, self.columns)


def test_custom_ops_with_aux_states_and_without_inputs():
    x = nd.array(RNG.uniform(-1, 1, size=(4, 5)))
    count = nd.zeros_like(x)
    x.attach_grad()
    with autograd.record():
        y = nd.Custom(x, count, name="sqr", op_type="real_programs_square")
    y.backward()
    nd.waitall()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x.asnumpy(), rtol=1e-6)
    assert (count.asnumpy() == 11).all() and count.grad is None
    with autograd.record():
        c = nd.Custom(rows=2, columns=3, op_type="real_programs_constant")
    assert c.shape == (2, 3) and (c.asnumpy() == 0.5).all()


class _Swish(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        self.assign(out_data[0], req[0], x / (1 + nd.exp(-x)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x = in_data[0]
        s = 1 / (1 + nd.exp(-x))
        self.assign(in_grad[0], req[0], out_grad[0] * (s + x * s * (1 - s)))


@mx.operator.register("real_programs_swish")
class _SwishProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return _Swish()


class _Net(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.hidden = nn.Dense(8, in_units=3)
            self.out = nn.Dense(1, in_units=8)

    def hybrid_forward(self, F, x):  # noqa: N803 - MXNet's spelling
        return self.out(F.Custom(self.hidden(x), op_type="real_programs_swish"))


def _train(net, trainer, x, y, steps):
    loss_fn = gluon.loss.L2Loss()
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
    return loss.mean().asscalar()


def test_custom_op_in_a_hybrid_block_trains_saves_loads_and_resumes(tmp_path):
    x = nd.array(RNG.standard_normal((16, 3)))
    y = nd.array(RNG.standard_normal((16, 1)))
    net = _Net()
    net.initialize(init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    first = _train(net, trainer, x, y, 1)
    last = _train(net, trainer, x, y, 60)
    assert last < first
    net.save_parameters(str(tmp_path / "net.params"))
    trainer.save_states(str(tmp_path / "net.states"))
    again = _Net()
    again.load_parameters(str(tmp_path / "net.params"))
    np.testing.assert_array_equal(again(x).asnumpy(), net(x).asnumpy())
    resumed = gluon.Trainer(again.collect_params(), "adam", {"learning_rate": 0.01})
    resumed.load_states(str(tmp_path / "net.states"))
    np.testing.assert_allclose(_train(again, resumed, x, y, 5), _train(net, trainer, x, y, 5),
                               rtol=1e-6)
    with pytest.raises(UserWarning, match="ignore_stale_grad"):
        trainer.step(16)  # no backward since the last step
