"""kit.compile: what a compiled call computes and how it sits in the caller's graph.

Compiled and eager give the same values and first- and second-order gradients; a replay makes one
node (CompiledFunctionBackward) whose inputs are the function's tensor inputs and captured
tensors; the cache re-traces on a new signature and falls back to eager past its limit; random
ops draw fresh numbers; custom Functions are opaque nodes. Breaks are in test_compile_breaks.py,
fusion in test_compile_fusion.py, the registry's ops and random programs in test_compile_ops.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import kit
import kit.nn.functional as F  # noqa: N812 - PyTorch's spelling
from kit.compiler import config
from kit.engine import AccumulateGrad


def _leaves(*shapes, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [kit.tensor(rng.uniform(-1, 1, s).astype(dtype), requires_grad=True) for s in shapes]


def _grads(fn, inputs, order=1):
    """fn's value, and the gradients of sum(fn) (and of the sum of those, for order 2)."""
    out = fn(*inputs)
    first = kit.grad(out.sum(), inputs, create_graph=order > 1, allow_unused=True)
    result = [out.detach().numpy().copy()] + [None if g is None else g.detach().numpy().copy()
                                              for g in first]
    if order > 1:
        total = sum(g.sum() for g in first if g is not None and g.requires_grad)
        second = kit.grad(total, inputs, allow_unused=True)
        result += [None if g is None else g.numpy().copy() for g in second]
    return result


def _same(a, b, rtol=1e-12, atol=1e-12):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            assert x is None and y is None
        else:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def _chain(x, w):
    return ((x * w + 0.5).tanh() * x).exp() - x.sin() / (1 + w * w)


def _mlp(x, w1, b1, w2):
    return kit.log_softmax(kit.relu(x @ w1 + b1) @ w2, 1)


@pytest.mark.parametrize(("fn", "shapes"), [
    (_chain, [(5,), (5,)]),
    (_chain, [(3, 4), (4,)]),  # broadcasting: w's gradient is summed over rows
    (_mlp, [(6, 4), (4, 5), (5,), (5, 3)]),
    (lambda x: (x.reshape(2, 3).transpose(0, 1) ** 2).mean(0), [(6,)]),
    (lambda x, y: kit.where(x > y, x * y, kit.maximum(x, y)).clamp(-0.5, 0.5), [(4,), (4,)]),
])
@pytest.mark.parametrize("fuse", [True, False])
def test_compiled_equals_eager_values_and_two_orders_of_gradient(fn, shapes, fuse):
    inputs = _leaves(*shapes)
    compiled = kit.compile(fn, fuse=fuse)
    expected = _grads(fn, inputs, order=2)
    for _ in range(2):  # the first call traces, the second replays; both run the graph
        _same(_grads(compiled, inputs, order=2), expected)
    assert not compiled.explain()["eager"]


def test_a_compiled_call_is_one_node_over_its_inputs_and_captured_tensors():
    x, w = _leaves((4,), (4,))
    b = kit.tensor([0.5], requires_grad=True)  # captured: read from the closure

    @kit.compile
    def f(x, w):
        return ((x * w).tanh() + b).sum()

    f(x, w)
    y = f(x, w)
    assert y.grad_fn.name() == "CompiledFunctionBackward"
    leaves = [e[0].variable for e in y.grad_fn.next_functions]
    assert all(isinstance(e[0], AccumulateGrad) for e in y.grad_fn.next_functions)
    assert leaves == [x, w, b]
    z = (y * 3).exp()  # eager code after, and before: the graph goes through the node
    z.backward()
    assert b.grad is not None and x.grad is not None
    np.testing.assert_allclose(b.grad.numpy(), [3 * 4 * z.item()], rtol=1e-6)  # 4 elements


def test_eager_code_before_the_call_gets_its_gradient():
    (x,) = _leaves((3,))
    h = x * 2  # a non-leaf input: the compiled node's edge is h's history
    f = kit.compile(lambda h: (h * h).sum())
    f(h.detach())
    f(h).backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * x.detach().numpy())


def test_backward_twice_needs_retain_graph_as_eager():
    (x,) = _leaves((3,))
    f = kit.compile(lambda x: (x * x).exp().sum())
    y = f(x)
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_an_input_changed_in_place_before_backward_is_refused():
    (x,) = _leaves((3,))
    a = x.detach().clone()
    f = kit.compile(lambda a, x: (a * x).sum())
    y = f(a, x)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_retrace_on_a_new_signature_and_the_cache_limit(monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 3)
    f = kit.compile(lambda x: (x * 2).exp())
    for n in (2, 3, 2, 3):
        assert f(kit.ones(n)).shape == (n,)
    assert f.size() == 2
    f(kit.ones(2, dtype=kit.float64))  # a new dtype
    assert f.size() == 3
    with pytest.warns(UserWarning, match="hit cache_size_limit"):
        y = f(kit.ones(4))
    np.testing.assert_allclose(y.numpy(), np.exp(2) * np.ones(4), rtol=1e-6)
    assert f.size() == 3  # the new shape ran eagerly, nothing was added


def test_requires_grad_and_grad_mode_are_part_of_the_signature():
    f = kit.compile(lambda x: (x * 3).sum())
    x = kit.ones(2)
    assert not f(x).requires_grad
    x.requires_grad_()
    assert f(x).grad_fn is not None
    with kit.no_grad():
        assert f(x).grad_fn is None
    assert f.size() == 3


def test_captured_tensors_are_read_on_every_call_and_guarded():
    w = kit.tensor([1.0, 2.0])
    f = kit.compile(lambda x: x * w)
    x = kit.ones(2)
    assert f(x).tolist() == [1.0, 2.0]
    with kit.no_grad():
        w.mul_(10)  # an optimiser step: the replay reads the new values
    assert f(x).tolist() == [10.0, 20.0]
    w.data = kit.tensor([1.0, 2.0, 3.0])  # a new shape: traced again
    assert f(kit.ones(3)).tolist() == [1.0, 2.0, 3.0]
    assert f.size() == 2


def test_structured_arguments_and_results():
    x, y = _leaves((2,), (2,))

    @kit.compile
    def f(pair, scale=2.0, *, key):
        a, b = pair
        return {"sum": (a + b) * scale, "both": [a * key, b]}

    for _ in range(2):
        out = f((x, y), key=3.0)
        np.testing.assert_allclose(out["sum"].detach().numpy(), (x + y).detach().numpy() * 2)
        assert out["both"][1] is y  # an input given back is the input itself, as eagerly
    f((x, y), scale=5.0, key=3.0)
    assert f.size() == 2  # another Python value: another graph


def test_random_ops_draw_fresh_numbers_and_match_eager_under_one_seed():
    def f(x):
        return F.dropout(x, 0.5) * 3

    g = kit.compile(f)
    x = kit.ones(64)
    kit.manual_seed(7)
    eager = [f(x).numpy().copy() for _ in range(3)]
    kit.manual_seed(7)
    compiled = [g(x).numpy().copy() for _ in range(3)]
    for e, c in zip(eager, compiled, strict=True):
        np.testing.assert_array_equal(e, c)
    assert not np.array_equal(compiled[1], compiled[2])
    assert [s["kind"] for s in g.explain()["steps"]][0] == "random"


class _Cube(kit.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


def test_a_custom_function_is_an_opaque_node():
    def f(x, w):
        return _Cube.apply((x * w).sin()).exp()

    inputs = _leaves((4,), (4,))
    g = kit.compile(f)
    expected = _grads(f, inputs, order=2)
    for _ in range(2):
        _same(_grads(g, inputs, order=2), expected)
    info = g.explain()
    assert [s["kind"] for s in info["steps"] if s["op"] == "_Cube"] == ["island"]
    assert info["counts"]["islands"] == 1


def test_an_mxnet_custom_op_is_an_opaque_node():
    import kit.mx as mx

    class Twice(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * 2)

    @mx.operator.register("compile_twice")
    class TwiceProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Twice()

    def f(x):
        y = x.exp()
        return mx.nd.Custom(mx.nd.NDArray(y), op_type="compile_twice")._t.sum()

    (x,) = _leaves((3,))
    g = kit.compile(f)
    with mx.autograd.record():
        for _ in range(2):
            x.grad = None
            g(x).backward()
            np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()))
    assert g.explain()["counts"]["islands"] == 1


def test_inside_vmap_a_compiled_function_runs_eagerly_and_nested_ones_inline():
    inner = kit.compile(lambda x: x.exp() * 2)
    outer = kit.compile(lambda x: inner(x).sum())
    xs = kit.tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(kit.func.vmap(inner)(xs).numpy(), np.exp(xs.numpy()) * 2)
    assert inner.size() == 0
    outer(xs)
    assert [s["op"] for s in outer.explain()["steps"]] == ["exp", "mul", "sum"]


def test_explain_describes_the_graph():
    f = kit.compile(lambda x, y: ((x * y).tanh() + 1).sum())
    with pytest.raises(RuntimeError, match="has not been called yet"):
        f.explain()
    f(*_leaves((3,), (3,)))
    info = f.explain()
    assert [s["op"] for s in info["steps"]] == ["mul", "tanh", "add", "sum"]
    assert [s["elementwise"] for s in info["steps"]] == [True, True, True, False]
    assert info["counts"]["ops"] == 4 and info["counts"]["breaks"] == 0
    assert info["counts"]["graphs"] == 1 and info["inputs"] == [0, 1]
    assert "def forward(v0, v1)" in info["source"]["forward"]
    assert "def backward(saved, go0)" in info["source"]["backward"]


def test_dynamic_true_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="specialises each graph to its input shapes"):
        kit.compile(lambda x: x, dynamic=True)
    with pytest.raises(TypeError, match="expected a function or a module"):
        kit.compile(3)


@pytest.mark.parametrize("module", ["kit.compiler.expr", "kit.compiler.function",
                                    "kit.compiler.functions", "kit.torch._functions"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0


def test_a_module_called_inside_is_guarded_on_its_training_flag():
    # a closure over a model: after model.eval() its dropout must stop, as eagerly (the graph
    # traced in training mode would keep dropping); back in training mode the first graph serves
    from kit import nn

    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    compiled = kit.compile(lambda x: model(x))
    x = kit.ones(3, 4)
    compiled(x)
    model.eval()
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())
    model.train()
    compiled(x)
    assert compiled.size() == 2
    model[1].eval()  # one submodule's flag is enough
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())


def test_a_parameter_assigned_anew_traces_again():
    from kit import nn

    layer = nn.Linear(3, 2)
    norm = nn.BatchNorm1d(2).eval()
    compiled = kit.compile(lambda x: norm(layer(x)))
    x = kit.ones(4, 3)
    for _ in range(2):
        compiled(x)
    assert compiled.size() == 1  # (batch norm in eval mode: replayed, its buffers unchanged)
    layer.weight = nn.Parameter(kit.ones(2, 3))
    np.testing.assert_array_equal(compiled(x).detach().numpy(), norm(layer(x)).detach().numpy())
    assert compiled.size() == 2


_SCALE = 2.0


def test_a_python_number_read_from_outside_is_baked_in():
    # what lesson 13 says kit cannot guard: a global read while tracing stays in the graph
    global _SCALE
    compiled = kit.compile(lambda x: x * _SCALE)
    x = kit.ones(2)
    try:
        compiled(x)
        _SCALE = 3.0
        np.testing.assert_array_equal(compiled(x).numpy(), [2.0, 2.0])  # the traced 2.0
        assert compiled.size() == 1
    finally:
        _SCALE = 2.0
