"""gluon Block, HybridBlock, Parameter and ParameterDict in the usage patterns of MXNet's
gluon tests and d2l's MXNet chapters (layers and blocks, parameter management, deferred
initialisation, custom layers, file I/O), with NumPy references for MXNet's semantics."""

import re

import numpy as np
import pytest

import kit
import kit.mx as mx
from kit.mx import autograd, gluon, nd
from kit.mx.gluon import nn


def mlp(prefix=None):
    net = nn.Sequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Dense(8, activation="tanh"), nn.Dense(3))
    return net


# --- blocks and children ------------------------------------------------------------------------
class MLP(nn.Block):  # d2l's custom Block
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = nn.Dense(16, activation="relu")
        self.output = nn.Dense(4)

    def forward(self, x):
        return self.output(self.hidden(x))


class FixedHiddenMLP(nn.Block):  # d2l: a constant parameter and Python control flow
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.rand_weight = self.params.get_constant("rand_weight", np.ones((6, 6)))
        self.dense = nn.Dense(6, activation="relu")

    def forward(self, x):
        x = self.dense(x)
        x = nd.relu(nd.dot(x, self.rand_weight.data()) + 1)
        x = self.dense(x)  # the same layer twice: shared parameters
        while x.abs().sum().asscalar() > 1:
            x = x / 2
        return x.sum()


def test_custom_block_registers_children_by_attribute_and_runs():
    net = MLP()
    net.initialize()
    out = net(nd.ones((2, 5)))
    assert out.shape == (2, 4)
    assert list(net._children) == ["hidden", "output"]
    names = list(net.collect_params().keys())
    # made outside net.name_scope(), the children are named globally, as in MXNet
    assert len(names) == 4 and all(re.fullmatch(r"dense\d+_(weight|bias)", n) for n in names)
    assert repr(net) == (
        "MLP(\n  (hidden): Dense(5 -> 16, Activation(relu))\n  (output): Dense(16 -> 4, linear)\n)"
    )


def test_constant_parameter_and_shared_layer_with_control_flow():
    net = FixedHiddenMLP()
    net.initialize()
    y = net(nd.ones((2, 6)))
    assert y.shape == (1,) and abs(y.asscalar()) <= 1
    const = net.rand_weight
    assert const.grad_req == "null"
    np.testing.assert_array_equal(const.data().asnumpy(), np.ones((6, 6)))


def test_sequential_add_index_slice_len_and_repr():
    net = mlp()
    assert len(net) == 2 and isinstance(net[1], nn.Dense)
    assert repr(net) == (
        "Sequential(\n  (0): Dense(None -> 8, Activation(tanh))\n  (1): Dense(None -> 3, "
        "linear)\n)"
    )
    net.initialize()
    net(nd.ones((1, 4)))
    head = net[:1]
    assert len(head) == 1 and head[0] is net[0]


def test_name_scopes_prefix_parameter_names():
    net = mlp(prefix="model_")
    params = net.collect_params()
    assert list(params.keys()) == [
        "model_dense0_weight", "model_dense0_bias", "model_dense1_weight", "model_dense1_bias",
    ]
    assert net.prefix == "model_" and net.name == "model"
    assert net[0].name == "model_dense0"
    # outside any scope, each class counts globally: dense<k>_, dense<k+1>_
    a, b = nn.Dense(2), nn.Dense(2)
    ka, kb = (int(re.fullmatch(r"dense(\d+)_", x.prefix).group(1)) for x in (a, b))
    assert kb == ka + 1


def test_collect_params_select_regex():
    net = mlp(prefix="m_")
    weights = net.collect_params(".*weight")
    assert list(weights.keys()) == ["m_dense0_weight", "m_dense1_weight"]
    both = net.collect_params("m_dense1_weight|.*dense0_bias")
    assert set(both.keys()) == {"m_dense1_weight", "m_dense0_bias"}


def test_params_sharing_through_params_argument():
    shared = nn.Dense(4, in_units=3, prefix="shared_")
    twin = nn.Dense(4, in_units=3, params=shared.params)
    shared.initialize()
    assert twin.weight is shared.weight
    x = nd.ones((2, 3))
    np.testing.assert_array_equal(twin(x).asnumpy(), shared(x).asnumpy())


def test_assigning_a_block_before_super_init_names_the_fix():
    class Broken(nn.Block):
        def __init__(self):
            self.dense = nn.Dense(2)

    with pytest.raises(AttributeError, match=r"super\(\).__init__"):
        Broken()


def test_forward_hooks_and_detach():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    seen = []
    pre = net.register_forward_pre_hook(lambda block, inputs: seen.append(("pre", len(inputs))))
    post = net.register_forward_hook(lambda block, inputs, out: seen.append(("post", out.shape)))
    net(nd.ones((4, 3)))
    pre.detach()
    post.detach()
    net(nd.ones((4, 3)))
    assert seen == [("pre", 1), ("post", (4, 2))]


def test_apply_visits_children_first():
    net = mlp()
    order = []
    net.apply(lambda block: order.append(type(block).__name__))
    assert order == ["Activation", "Dense", "Dense", "Sequential"]


# --- HybridBlock ----------------------------------------------------------------------------------
class ScaledDense(nn.HybridBlock):  # parameters arrive as keyword arguments of hybrid_forward
    def __init__(self, units, in_units, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(in_units, units))
            self.scale = self.params.get("scale", shape=(1,), init=mx.init.Constant(2.0))

    def hybrid_forward(self, F, x, weight, scale):  # noqa: N803
        return F.broadcast_mul(F.dot(x, weight), scale)


def test_hybrid_forward_gets_F_nd_and_params_as_kwargs_and_hybridize_compiles_it():
    layer = ScaledDense(3, 2)
    layer.initialize(mx.init.One())
    layer.hybridize()
    x = nd.array([[1.0, 2.0]])
    for _ in range(2):  # traced, then replayed (tests/test_compile_frontends.py: the rest)
        np.testing.assert_allclose(layer(x).asnumpy(), 2 * np.full((1, 3), 3.0))
    assert layer._active and layer._graph.size() == 1


class CenteredLayer(nn.HybridBlock):  # d2l's layer without parameters
    def hybrid_forward(self, F, x):  # noqa: N803
        return x - x.mean()


def test_layer_without_parameters_inside_a_network():
    net = nn.HybridSequential()
    net.add(nn.Dense(8), CenteredLayer())
    net.initialize()
    y = net(nd.array(np.random.rand(4, 8)))
    assert abs(y.mean().asscalar()) < 1e-6


def test_hybrid_block_without_a_shape_rule_explains_deferred_shapes():
    class Lazy(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.w = self.params.get("w", shape=(0, 3), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):  # noqa: N803
            return F.dot(x, w)

    net = Lazy()
    net.initialize()
    with pytest.raises(gluon.DeferredInitializationError, match="full shapes"):
        net(nd.ones((2, 5)))


def test_export_names_what_kit_offers_instead():
    with pytest.raises(NotImplementedError, match="save_parameters"):
        nn.Dense(2).export("model")


# --- parameters -----------------------------------------------------------------------------------
def test_parameter_access_as_d2l_does_it():
    net = mlp()
    net.initialize()
    net(nd.ones((2, 4)))
    dense = net[0]
    assert dense.weight.data().shape == (8, 4) and dense.bias.data().shape == (8,)
    np.testing.assert_array_equal(dense.bias.data().asnumpy(), np.zeros(8))
    assert dense.weight.grad().shape == (8, 4)
    full_name = dense.weight.name
    assert net.collect_params()[full_name] is dense.weight
    assert repr(dense.weight) == f"Parameter {full_name} (shape=(8, 4), dtype=float32)"


def test_writing_parameter_data_in_place_as_d2l_does():
    net = nn.Dense(2, in_units=2)
    net.initialize(mx.init.One())
    net.weight.data()[:] += 1
    net.weight.data()[0, 0] = 42
    np.testing.assert_array_equal(net.weight.data().asnumpy(), [[42, 2], [2, 2]])
    net.weight.set_data(net.weight.data() + 1)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), [[43, 3], [3, 3]])


def test_one_layer_used_twice_shares_parameters_and_sums_their_gradients():
    shared = nn.Dense(2, in_units=2, use_bias=False)
    net = nn.Sequential()
    net.add(shared, nn.Activation("relu"), shared)
    net.initialize(mx.init.One())
    assert len(net.collect_params()) == 1
    x = nd.array([[1.0, 2.0]])
    with autograd.record():
        y = net(x).sum()
    y.backward()
    # y = sum(W relu(W x)), W = ones: the outer use gives 1 h^T (h = W x), the inner W^T 1 x^T
    h = np.ones((2, 2)) @ np.array([1.0, 2.0])
    expected = np.outer(np.ones(2), h) + np.outer(np.ones((2, 2)).T @ np.ones(2), [1.0, 2.0])
    np.testing.assert_allclose(shared.weight.grad().asnumpy(), expected)


def test_deferred_initialisation_waits_for_the_first_batch():
    net = mlp()
    net.initialize()
    weight = net[0].weight
    assert weight.shape == (8, 0)
    with pytest.raises(gluon.DeferredInitializationError, match="first forward pass"):
        weight.data()
    net(nd.ones((2, 4)))
    assert weight.shape == (8, 4) and net[1].weight.shape == (3, 8)


def test_uninitialized_parameter_says_to_call_initialize():
    net = nn.Dense(2, in_units=3)
    with pytest.raises(RuntimeError, match="has not been initialized"):
        net.weight.data()


def test_initialize_twice_warns_and_force_reinit_reinitialises():
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.One())
    with pytest.warns(UserWarning, match="already initialized"):
        net.initialize(mx.init.Zero())
    assert net.weight.data().asnumpy().sum() == 6
    net.initialize(mx.init.Zero(), force_reinit=True)
    assert net.weight.data().asnumpy().sum() == 0


def test_set_data_and_zero_grad_and_grad_req():
    p = gluon.Parameter("w", shape=(2,))
    p.initialize()
    p.set_data(nd.array([3.0, 4.0]))
    np.testing.assert_array_equal(p.data().asnumpy(), [3, 4])
    p.grad_req = "add"
    for _ in range(2):
        with autograd.record():
            y = (p.data() * p.data()).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), 2 * 2 * np.array([3, 4]))
    p.zero_grad()
    np.testing.assert_array_equal(p.grad().asnumpy(), [0, 0])
    p.grad_req = "null"
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        p.grad()
    with pytest.raises(ValueError, match="does not match"):
        p.set_data(nd.ones((3,)))


def test_setattr_on_collected_params_freezes_them():
    net = mlp()
    net.initialize()
    net.collect_params(".*weight").setattr("grad_req", "null")
    assert {p.grad_req for p in net.collect_params().values()} == {"null", "write"}
    assert all(p.grad_req == "null" for p in net.collect_params(".*weight").values())


def test_parameter_shape_conflicts_are_errors():
    p = gluon.Parameter("w", shape=(3, 0))
    p.shape = (3, 5)
    with pytest.raises(ValueError, match="incompatible"):
        p.shape = (4, 5)
    with pytest.raises(ValueError, match="invalid shape"):
        gluon.Parameter("v", shape=(0,)).initialize()
    with pytest.raises(ValueError, match="one device"):
        gluon.Parameter("u", shape=(1,)).initialize(ctx=[mx.cpu(), mx.cpu(1)])


def test_cast_changes_parameters_dtype_and_the_output():
    net = mlp()
    net.initialize()
    net(nd.ones((1, 4)))
    net.cast("float64")
    assert net[0].weight.data().dtype == np.float64
    assert net(nd.ones((1, 4), dtype="float64")).dtype == np.float64


# --- initialisers ---------------------------------------------------------------------------------
def test_xavier_uses_mxnet_defaults_uniform_avg_magnitude_3():
    kit.manual_seed(0)
    layer = nn.Dense(300, in_units=200)
    layer.initialize(mx.init.Xavier())
    w = layer.weight.data().asnumpy()
    bound = np.sqrt(3.0 / ((200 + 300) / 2))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.01 * bound  # uniform's std
    np.testing.assert_array_equal(layer.bias.data().asnumpy(), 0)  # bias keeps 'zeros'


def test_xavier_gaussian_in_and_normal_and_uniform_scales():
    kit.manual_seed(1)
    for init, std in [
        (mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2), np.sqrt(2 / 400)),
        (mx.init.Normal(0.05), 0.05),
        (mx.init.Uniform(0.3), 0.3 / np.sqrt(3)),
    ]:
        p = gluon.Parameter("w", shape=(300, 400))
        p.initialize(init)
        assert abs(p.data().asnumpy().std() - std) < 0.03 * std, init


def test_default_initializer_is_uniform_007():
    p = gluon.Parameter("w", shape=(100, 100))
    p.initialize()
    w = p.data().asnumpy()
    assert np.abs(w).max() <= 0.07 and np.abs(w).max() > 0.069


def test_parameter_init_overrides_the_global_one_and_names_and_strings_work():
    net = nn.Dense(2, in_units=2, weight_initializer="ones")
    net.initialize(mx.init.Zero())
    np.testing.assert_array_equal(net.weight.data().asnumpy(), 1)
    assert isinstance(mx.init.create("xavier"), mx.init.Xavier)
    assert mx.initializer is mx.init
    with pytest.raises(ValueError, match="unknown initializer"):
        mx.init.create("nope")


def test_xavier_on_a_vector_names_the_parameter_and_the_fix():
    p = gluon.Parameter("my_bias", shape=(3,))
    with pytest.raises(ValueError, match="my_bias.*at least 2D.*init="):
        p.initialize(mx.init.Xavier())


def test_custom_initializer_as_d2l_writes_it():
    class MyInit(mx.init.Initializer):
        def _init_weight(self, name, data):
            data[:] = nd.array(np.arange(data.size).reshape(data.shape))
            data *= data >= 2

    net = nn.Dense(2, in_units=2)
    net.initialize(MyInit())
    np.testing.assert_array_equal(net.weight.data().asnumpy(), [[0, 0], [2, 3]])


def test_symbolic_apis_exist_and_name_what_to_use_instead():
    with pytest.raises(NotImplementedError, match="HybridBlock"):
        mx.sym.FullyConnected(data=None, num_hidden=2)
    with pytest.raises(NotImplementedError, match="HybridBlock"):
        mx.symbol.Variable("x")
    with pytest.raises(NotImplementedError, match="gluon.Trainer"):
        mx.mod.Module(None)
    with pytest.raises(NotImplementedError, match="no symbolic API"):
        gluon.Parameter("w").var()
    with pytest.raises(NotImplementedError, match="sparse"):
        gluon.Parameter("w", stype="row_sparse")
    with pytest.raises(NotImplementedError, match="row_sparse"):
        nn.Embedding(3, 2, sparse_grad=True)


@pytest.mark.parametrize("module", [
    "kit.mx.gluon", "kit.mx.gluon.block",
    "kit.mx.gluon.parameter", "kit.mx.gluon.parameter_dict",
    "kit.mx.gluon.nn", "kit.mx.gluon.nn.basic_layers", "kit.mx.gluon.nn.conv_layers",
    "kit.mx.gluon.nn.activations",
    "kit.mx.gluon.loss", "kit.mx.gluon.trainer", "kit.mx.gluon.data", "kit.mx.gluon.utils",
    "kit.mx.init",
    "kit.mx.optimizer", "kit.optim.maths",
])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
