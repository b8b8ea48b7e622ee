"""kit.compile as the front ends spell it (torch.compile, gluon's hybridize), custom Functions
that declare themselves elementwise, kit.viz drawing a compiled function's graph, and the
profiler seeing a compiled call as PyTorch's does (CompiledFunction, its fused kernels)."""

from __future__ import annotations

import numpy as np
import pytest

import kit
import kit.mx as mx
import kit.torch as torch
from kit.compiler import config
from kit.viz import draw_graph


# --- torch.compile ---------------------------------------------------------------------------
def test_torch_compile_as_a_decorator_and_on_a_module():
    @torch.compile
    def f(x):
        return (x * 2).relu().sum()

    @torch.compile(fullgraph=True, mode="reduce-overhead")
    def g(x):
        return (x - 1).exp()

    x = torch.tensor([1.0, -1.0])
    assert f(x).item() == 2.0 and g(x).shape == (2,)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Dropout(0.5),
                                torch.nn.Linear(4, 2))
    compiled = torch.compile(model)
    assert len(list(compiled.parameters())) == 4  # still the module
    data = torch.randn(5, 3)
    for mode in ("train", "eval"):
        getattr(model, mode)()
        torch.manual_seed(1)
        expected = model(data)
        expected.sum().backward()
        want = [p.grad.numpy().copy() for p in model.parameters()]
        model.zero_grad()
        torch.manual_seed(1)
        got = compiled(data)
        got.sum().backward()
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
        for p, w in zip(model.parameters(), want, strict=True):
            np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-5, atol=1e-7)
        model.zero_grad()
    assert compiled.size() == 2  # train() and eval() are two graphs


def test_torch_compile_backends_and_refusals():
    x = torch.tensor([0.5, 1.5])
    eager = torch.compile(lambda x: (x * 2 + 1).tanh(), backend="eager")
    eager(x)
    assert eager.explain()["groups"] == [] and eager.explain()["counts"]["ops"] == 3
    model = torch.nn.Linear(2, 2)
    assert torch.compile(model, disable=True) is model
    with pytest.raises(ValueError, match="backends"):
        torch.compile(model, backend="cudagraphs")
    with pytest.raises(ValueError, match="unknown mode"):
        torch.compile(model, mode="fastest")
    with pytest.raises(ValueError, match="options"):
        torch.compile(model, options={"trace.enabled": True})


# --- gluon hybridize ---------------------------------------------------------------------------
def _net(seed):
    mx.random.seed(seed)
    kit.manual_seed(seed)  # the initialisers draw from kit's generator
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(8, activation="relu", in_units=5), mx.gluon.nn.Dense(3, in_units=8))
    net.initialize(mx.init.Xavier())
    return net


def test_hybridize_runs_the_block_as_one_graph_and_trains_as_eagerly():
    data = mx.nd.array(np.random.default_rng(0).uniform(-1, 1, (4, 5)))
    label = mx.nd.array([0, 1, 2, 1])
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    runs = []
    for hybrid in (False, True):
        net = _net(3)
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
        losses = []
        for _ in range(3):
            with mx.autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(4)
            losses.append(loss.mean().asscalar())
        runs.append((losses, net(data).asnumpy(), net))
    (eager_losses, eager_out, _), (losses, out, net) = runs
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    np.testing.assert_allclose(out, eager_out, rtol=1e-5, atol=1e-7)
    info = net._graph.explain()
    assert net._graph.size() == 2  # recording (training) and not (the last call)
    assert [s["op"] for s in info["steps"]] == ["linear", "relu", "linear"]  # Dense: one node
    net.hybridize(False)
    assert net._graph is None


# --- custom Functions ----------------------------------------------------------------------------
class _StraightThrough(kit.Function):
    """sign(x) forward, the identity backward: a custom gradient that must stay custom."""

    elementwise = True

    @staticmethod
    def forward(ctx, x):
        return x.sign()

    @staticmethod
    def backward(ctx, g):
        return g * 1.0


class _Normalise(kit.Function):
    """Says it is elementwise but reduces (a sum): kit.compile keeps it opaque."""

    elementwise = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x / x.sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = x.sum()
        return g / s - (g * x).sum() / (s * s)


def test_an_elementwise_function_fuses_and_keeps_its_own_gradient():
    def f(x):
        return (_StraightThrough.apply(x * 3) * x).tanh()

    x = kit.tensor([0.5, -0.2, 0.1], requires_grad=True)
    f(x).sum().backward()
    want = x.grad.numpy().copy()
    compiled = kit.compile(f)
    for _ in range(2):
        x.grad = None
        compiled(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
    (group,) = compiled.explain()["groups"]
    assert group["ops"] == ["mul", "_StraightThrough", "mul", "tanh"]
    assert compiled.explain()["counts"]["islands"] == 0


def test_a_function_that_is_not_elementwise_stays_opaque():
    x = kit.tensor([0.5, 1.0, 2.0], requires_grad=True)
    compiled = kit.compile(lambda x: _Normalise.apply(x.exp()))
    for fn in (lambda x: _Normalise.apply(x.exp()), compiled, compiled):
        x.grad = None
        (fn(x) * kit.tensor([1.0, 2.0, 3.0])).sum().backward()
        got = x.grad.numpy().copy()
    x.grad = None
    (_Normalise.apply(x.exp()) * kit.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-6)
    assert compiled.explain()["counts"]["islands"] == 1


# --- kit.viz ------------------------------------------------------------------------------------
def test_draw_graph_of_a_compiled_function_boxes_its_fused_groups():
    w = kit.tensor([1.0, 2.0], requires_grad=True)

    @kit.compile
    def f(x):
        h = (x * w + 1).tanh()
        if h.sum() > 0:
            h = _StraightThrough.apply(h)
        return (h @ kit.ones(2, 2)).exp().sum()

    with pytest.raises(ValueError, match="has not been called yet"):
        draw_graph(f)
    f(kit.tensor([0.1, 0.2]))
    drawing = draw_graph(f)
    kinds = [n["kind"] for n in drawing.nodes]
    assert kinds.count("guard") == 1 and kinds.count("tensor") == 3  # x, w (captured), output
    assert kinds.count("custom") == 0  # the elementwise Function is an op
    (cluster, *others) = drawing.clusters
    members = {n["id"]: n["attributes"]["op"] for n in drawing.nodes if n["kind"] == "op"}
    assert [members[m] for m in cluster["nodes"]] == ["mul", "add", "tanh"]
    assert "B/element" in cluster["label"] and others == []  # exp alone is no group
    roles = {n["attributes"].get("role") for n in drawing.nodes if n["kind"] == "tensor"}
    assert roles == {"leaf", "parameter", "intermediate"}
    pytest.importorskip("pygraphviz")
    assert "cluster_fused0" in drawing.svg


# --- kit.profiler -------------------------------------------------------------------------------
def _under_profiler(fn, *args, **options):
    from kit.torch.profiler import profile

    with profile(**options) as prof:
        fn(*args).backward()
    return prof


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_the_profiler_sees_the_replay_its_fused_kernels_and_the_one_backward_node(
        kernel, monkeypatch):
    from test_profiler import check_trace

    if kernel == "numba":
        pytest.importorskip("numba", reason="numba is not installed (pip install 'kit[jit]')")
    monkeypatch.setattr(config, "cpu_kernel", kernel)

    def f(x, w):
        return ((x * w + 0.5).tanh() * x).exp().sum()

    x = torch.tensor(np.linspace(-1, 1, 50), requires_grad=True)
    w = torch.ones(50, dtype=torch.float64)
    compiled = torch.compile(f)
    eager = _under_profiler(f, x, w)
    traced = _under_profiler(compiled, x, w, profile_memory=True)  # the first call traces
    want = x.grad.numpy().copy()
    x.grad = None
    prof = _under_profiler(compiled, x, w, profile_memory=True)
    np.testing.assert_allclose(x.grad.numpy(), want / 2)  # the replay's gradient, as eagerly
    assert compiled.size() == 1 and not compiled.explain()["eager"]
    assert {"aten::mul", "aten::tanh", "MulBackward0"} <= {e.key for e in eager.key_averages()}
    assert "aten::tanh" in {e.key for e in traced.key_averages()}  # the trace ran eagerly
    rows = {e.key: e for e in prof.key_averages()}
    name = "fused_add_exp_mul_tanh_0"
    assert set(rows) == {"CompiledFunction", name, "aten::sum", "CompiledFunctionBackward",
                         f"{name}_backward"}
    assert all(e.count == 1 for e in rows.values())
    assert compiled.explain()["groups"][0]["kernel"] == name
    events = {e.name: e for e in prof.events()}
    assert events[name].parent is events["aten::sum"].parent is events["CompiledFunction"]
    assert events[f"{name}_backward"].parent is events["CompiledFunctionBackward"]
    # the kernel writes the output and keeps tanh's value: 2 x 50 float64 of new memory
    assert rows[name].self_cpu_memory_usage == 2 * 50 * 8
    assert rows["CompiledFunction"].cpu_memory_usage == 2 * 50 * 8 + 8
    check_trace(prof.chrome_trace(), set(rows))


def test_under_the_profiler_a_kit_func_transform_still_runs_the_function_as_python():
    from kit.torch.profiler import profile

    inner = torch.compile(lambda x: (x.exp() * 2).sum())
    xs = torch.tensor(np.arange(6.0).reshape(2, 3))
    with profile() as prof:
        got = kit.func.vmap(inner)(xs)
    np.testing.assert_allclose(got.numpy(), 2 * np.exp(xs.numpy()).sum(1))
    assert inner.size() == 0 and "CompiledFunction" not in {e.key for e in prof.key_averages()}


# --- replays on arrays -----------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
def test_a_compiled_linear_mlp_replays_on_arrays_with_eagers_bits(bias, monkeypatch):
    """F.linear, matmul and cross_entropy have array forms (the registry's `array=`): a replay
    makes no Tensor but its output, and its values and gradients are eager's, bit for bit."""
    F = torch.nn.functional
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((4, 5)).astype("float32"))
    y = torch.tensor([0, 1, 2, 1])
    w1 = torch.tensor(rng.standard_normal((6, 5)).astype("float32"), requires_grad=True)
    b1 = torch.tensor(rng.standard_normal(6).astype("float32"), requires_grad=True)
    w2 = torch.tensor(rng.standard_normal((6, 3)).astype("float32"), requires_grad=True)
    params = (w1, b1, w2)

    def f(x, y):
        return F.cross_entropy(F.linear(x, w1, b1 if bias else None).relu() @ w2, y)

    def run(fn):
        for p in params:
            p.grad = None
        loss = fn(x, y)
        loss.backward()
        return [loss.detach().numpy()] + [p.grad.numpy() for p in params if p.grad is not None]

    compiled = kit.compile(f)
    run(compiled)
    made = []
    original = kit.Tensor.__init__

    def counting(self, *args, **kwargs):
        made.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(kit.Tensor, "__init__", counting)
    loss = compiled(x, y)
    monkeypatch.setattr(kit.Tensor, "__init__", original)
    assert len(made) == 1 and loss.grad_fn.name() == "CompiledFunctionBackward"
    for got, want in zip(run(compiled), run(f), strict=True):
        np.testing.assert_array_equal(got, want)
