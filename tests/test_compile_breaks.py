"""kit.compile's graph breaks: every cause is found, split with a guard or run eagerly, and
refused by fullgraph=True with the line and the reason (as torch.compile explains its breaks).

A value read into Python (bool, item, int, float, index, tolist) splits the graph: the replay
checks the value the trace saw and traces again on another. Anything a replay cannot repeat
(printing, NumPy, in-place changes of inputs, backward, hooks, foreign random numbers) makes the
function run eagerly, with the same results as eager code.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import kit
import kit.optim
from kit.compiler import CompileError, config


def _bool(x):
    y = x * 2
    if y.sum() > 0:  # the break
        return y + 1
    return y - 1


def _item(x):
    return x * x.sum().item()  # the break


def _float(x):
    return x * float(x.max())  # the break


def _index(x):
    return x * len(range((x > 0).sum()))  # the break


def _tolist(x):
    return x * len([v for v in x.tolist() if v > 0])  # the break


def _print(x):
    y = x * 2
    print("y =", y)  # the break
    return y + 1


def _format(x):
    y = x.sum()
    text = f"{y:.3f}"  # the break
    return y * len(text)


def _numpy(x):
    return kit.tensor(x.detach().numpy() * 2)  # the break


def _numpy_function(x):
    return np.floor(x.detach())  # the break: NumPy on a Tensor (a Tensor back)


def _inplace_input(x):
    x.mul_(2)  # the break
    return x + 1


def _setitem_input(x):
    x[0] = 5.0  # the break
    return x * 2


def _backward(x):
    y = x * 2
    y.backward(kit.ones_like(y))  # the break (a replay repeats only a scalar loss's backward)
    return y.sum()


def _after_backward(x):
    y = (x * 2).sum()
    y.backward()
    return y * 3  # the break


def _set_grad(x):
    x.grad = None  # the break
    return x * 2


_W = kit.tensor([1.0, 2.0], requires_grad=True)
_OPT = kit.optim.SGD([_W], lr=0.1)


def _effect(x):
    _OPT.step(lambda: None)  # the break
    return x * 2


def _hook(x):
    y = x * 2
    y.register_hook(lambda g: g * 3)  # the break
    return y.sum()


def _foreign_random(x):
    noise = kit._creation._Random.generator.random(x.shape)  # the break
    return x * kit.tensor(noise, dtype=x.dtype)


def _leaf(x):
    w = kit.ones(x.shape, requires_grad=True)  # the break
    return x * w


def _transform(x):
    return kit.func.vmap(lambda r: r.exp().sum())(x)  # the break


def _seed(x):
    kit.manual_seed(3)  # the break
    return x * kit.rand(*x.shape)


def _output(x):
    return x * 2, object()  # the break


SPLIT = {"bool": _bool, "item": _item, "float": _float, "index": _index, "tolist": _tolist}
EAGER = {"print": _print, "format": _format, "numpy": _numpy, "numpy_function": _numpy_function,
         "inplace": _inplace_input, "setitem": _setitem_input, "backward": _backward,
         "after_backward": _after_backward, "grad": _set_grad, "effect": _effect,
         "hook": _hook, "random": _foreign_random, "leaf": _leaf, "transform": _transform,
         "seed": _seed, "output": _output}
WHAT = {"float": "item", "format": "print", "setitem": "inplace"}


def _break_line(fn):
    """The line marked `# the break` (a result that is no tensor is named at the `def`)."""
    lines, first = inspect.getsourcelines(fn)
    if fn is _output:
        return first
    return first + next(i for i, line in enumerate(lines) if "# the break" in line)


def _x(values=(0.5, 1.5, -0.25), requires_grad=False):
    return kit.tensor(list(values), requires_grad=requires_grad)


def _values(out):
    out = out if isinstance(out, tuple) else (out,)
    return [o.detach().numpy().copy() if isinstance(o, kit.Tensor) else type(o) for o in out]


@pytest.mark.parametrize("name", sorted(SPLIT))
def test_a_value_read_into_python_splits_the_graph_with_a_guard(name):
    fn = SPLIT[name]
    compiled = kit.compile(fn)
    for values in ((0.5, 1.5, -0.25), (0.5, 1.5, -0.25), (-3.0, 1.0, 0.0), (0.5, 1.5, -0.25)):
        for got, want in zip(_values(compiled(_x(values))), _values(fn(_x(values))), strict=True):
            np.testing.assert_array_equal(got, want)
    info = compiled.explain()
    assert not info["eager"] and info["counts"]["graphs"] == 2
    (found,) = info["breaks"]
    assert found["what"] == WHAT.get(name, name) and found["split"]
    assert found["line"] == _break_line(fn)
    assert compiled.size() == 2  # one graph per outcome of the guard, then reused


@pytest.mark.parametrize("name", sorted(EAGER))
def test_what_a_replay_cannot_repeat_makes_the_function_run_eagerly(name, capsys):
    fn = EAGER[name]
    compiled = kit.compile(fn)
    x = _x(requires_grad=name in ("backward", "after_backward", "hook"))
    kit.manual_seed(0)
    want = _values(fn(x.detach().clone().requires_grad_(x.requires_grad)))
    kit.manual_seed(0)
    got = _values(compiled(x.detach().clone().requires_grad_(x.requires_grad)))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    info = compiled.explain()
    assert info["eager"]
    found = [b for b in info["breaks"] if not b["split"]]
    assert found[0]["what"] == WHAT.get(name, name)
    assert found[0]["line"] == _break_line(fn)
    assert f"{__file__}:{_break_line(fn)}" in found[0]["message"]
    compiled(x.detach().clone().requires_grad_(x.requires_grad))  # eagerly again
    if name == "print":  # the eager call, then each compiled call
        assert capsys.readouterr().out.count("y =") == 3


@pytest.mark.parametrize("name", sorted(SPLIT) + sorted(EAGER))
def test_fullgraph_refuses_every_break_naming_the_line_and_the_reason(name):
    fn = {**SPLIT, **EAGER}[name]
    what = WHAT.get(name, name)
    with pytest.raises(CompileError) as raised:
        kit.compile(fn, fullgraph=True)(_x(requires_grad=name in ("backward", "after_backward",
                                                                "hook")))
    message = str(raised.value)
    assert f"graph break ({what})" in message
    assert f"{__file__}:{_break_line(fn)}" in message
    assert "Fix:" in message and "fullgraph=True" in message


def test_in_place_changes_of_values_the_function_made_are_recorded_not_broken():
    def f(x):
        y = x * 2
        y += 1
        y[0] = 5.0
        y.clamp_(max=4.0)
        return y.exp().sum()

    x = kit.tensor([0.1, 0.2, 0.3], requires_grad=True)
    compiled = kit.compile(f, fullgraph=True)
    f(x).backward()
    want = x.grad.numpy().copy()
    for _ in range(2):
        x.grad = None
        compiled(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
    assert compiled.explain()["counts"]["breaks"] == 0


def test_an_in_place_change_of_a_value_saved_for_backward_runs_eagerly_and_fails_as_eagerly():
    def f(x):
        y = x.exp()
        z = y * 3  # mul saves y
        y.add_(1)
        return z.sum()

    x = kit.tensor([0.1, 0.2], requires_grad=True)
    compiled = kit.compile(f)
    for fn in (f, compiled):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            fn(x).backward()
    assert compiled.explain()["breaks"][0]["what"] == "inplace"


def test_a_guard_outcome_counts_toward_the_cache_limit():
    compiled = kit.compile(_item, cache_size_limit=2)
    compiled(_x((1.0, 1.0)))
    compiled(_x((2.0, 1.0)))
    with pytest.warns(UserWarning, match="cache_size_limit"):
        np.testing.assert_array_equal(compiled(_x((3.0, 1.0))).numpy(), [12.0, 4.0])


def test_a_value_read_after_a_fused_kernel_is_guarded_on_what_eager_code_computed(monkeypatch):
    """numba's tanh rounds differently from NumPy's: a sum read with .item() after a fused
    group came out a last bit apart from the trace's on the traced inputs themselves, and the
    guard's GuardError escaped. Such a graph replays op by op: bit for bit eager code."""
    pytest.importorskip("numba", reason="numba is not installed (pip install 'kit[jit]')")
    monkeypatch.setattr(config, "cpu_kernel", "numba")

    def f(x, w):
        h = (x * w).tanh()
        return h / h.abs().sum().item()

    compiled = kit.compile(f)
    w = kit.tensor([1.0, -2.0, 0.5, 3.0])
    # tanh(0.05) in float32: numba 0.049958378, NumPy 0.049958374; the sum differs in its last bit
    for values in ([0.1, 0.2, 0.1, 0.1], [0.3, 0.1, -0.2, 0.05]):
        x = kit.tensor(values)
        for _ in range(2):  # traced, then replayed
            np.testing.assert_allclose(compiled(x, w).numpy(), f(x, w).numpy(), rtol=1e-6)
    assert compiled.size() == 2 and not compiled.explain()["eager"]  # a graph per value read
def test_an_optimizer_step_inside_runs_eagerly_and_updates_on_every_call():
    """A replay cannot set .grad, nor compute after an optimiser's step (it runs the whole
    forward first): this function runs eagerly. (tests/test_compile_train_step.py has the
    training steps a replay repeats.)"""
    w = kit.tensor([1.0, 2.0], requires_grad=True)
    opt = kit.optim.SGD([w], lr=0.5)

    def step(g):
        w.grad = g
        opt.step()
        return w * 1  # the break

    compiled = kit.compile(step)
    g = kit.tensor([1.0, -1.0])
    for want in ([0.5, 2.5], [0.0, 3.0], [-0.5, 3.5]):
        np.testing.assert_array_equal(compiled(g).detach().numpy(), want)
    info = compiled.explain()
    assert info["eager"] and info["breaks"][0]["what"] == "grad"  # (w.grad = g)
    assert info["breaks"][1]["what"] == "after_backward"  # (w * 1 after the step)
    assert info["breaks"][1]["line"] == _break_line(step)
    with pytest.raises(CompileError, match="graph break \\(grad\\)"):
        kit.compile(step, fullgraph=True)(g)
