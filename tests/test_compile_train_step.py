"""A whole training step compiled (kit.compile, as torch.compile users write one): the forward,
loss.backward(), the optimiser's step and zero_grad, a scheduler's step. A replay runs the
forward and the graph's own reverse schedule on arrays, accumulates into the leaves' .grad as
the engine does, then makes the optimiser's calls again in their order. Compared with the same
step run eagerly, bit for bit, over several steps: the losses, the parameters, the gradients and
the optimiser's state. Where the engine would do more than the schedule (a hook on a parameter,
a captured tensor that is not a leaf, a profiler), the engine runs the backward from the
call's node; what a replay cannot repeat makes the function run eagerly (test_compile_breaks)."""

from __future__ import annotations

import numpy as np
import pytest

import kit
from kit import nn
from kit.compiler.guards import CompileError
from kit.optim import SGD, Adam, AdamW
from kit.optim.lr_scheduler import StepLR


def _data(seed=1):
    rng = np.random.default_rng(seed)
    return (kit.tensor(rng.standard_normal((6, 4)).astype(np.float32)),
            kit.tensor(rng.integers(0, 3, size=6)))


def _params():
    rng = np.random.default_rng(0)
    return [kit.tensor(rng.standard_normal((4, 5)).astype(np.float32), requires_grad=True),
            kit.tensor(rng.standard_normal(5).astype(np.float32), requires_grad=True),
            kit.tensor(rng.standard_normal((5, 3)).astype(np.float32), requires_grad=True)]


def _loss(ps, x, y):
    return kit.cross_entropy(kit.relu(x @ ps[0] + ps[1]) @ ps[2], y)  # (relu: bit-equal fused)


def _run(make_step, compiled, steps=4):
    ps = _params()
    step, opt = make_step(ps)
    fn = kit.compile(step) if compiled else step
    losses = []
    for i in range(steps):
        x, y = _data(i % 2)  # (two batches: the graph is replayed on other data)
        loss = fn(x, y)
        losses.append(loss.detach().numpy().copy())
    grads = [None if p.grad is None else p.grad.numpy().copy() for p in ps]
    state = [{k: v.numpy().copy() if isinstance(v, kit.Tensor) else v for k, v in
              opt.state[p].items()} for p in ps] if opt is not None else []
    return losses, [p.detach().numpy().copy() for p in ps], grads, state, fn


def _assert_same(a, b):
    for got, want in zip(a[:3], b[:3], strict=True):
        for g, w in zip(got, want, strict=True):
            if w is None:
                assert g is None
            else:
                np.testing.assert_array_equal(g, w)
    for g, w in zip(a[3], b[3], strict=True):
        assert g.keys() == w.keys()
        for k in w:
            np.testing.assert_array_equal(g[k], w[k])


def _sgd_step(ps):
    opt = SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)

    def step(x, y):
        opt.zero_grad()
        loss = _loss(ps, x, y)
        loss.backward()
        opt.step()
        return loss

    return step, opt


def _adam_step(ps):
    opt = Adam(ps, lr=0.01, amsgrad=True)

    def step(x, y):
        loss = _loss(ps, x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)  # (zeros in place, after)
        return loss

    return step, opt


def _adamw_scheduled_step(ps):
    opt = AdamW(ps, lr=0.02)
    schedule = StepLR(opt, step_size=1, gamma=0.5)

    def step(x, y):
        loss = _loss(ps, x, y)
        loss.backward()
        opt.step()
        schedule.step()  # the rate halves on every call, replays included
        opt.zero_grad()
        return loss

    return step, opt


def _accumulating_step(ps):  # no zero_grad: gradients add up over the calls, as eagerly

    def step(x, y):
        loss = _loss(ps, x, y) * 0.5
        loss.backward()
        return loss

    return step, None


STEPS = {"sgd": _sgd_step, "adam": _adam_step, "adamw_scheduled": _adamw_scheduled_step,
         "accumulating": _accumulating_step}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_a_compiled_training_step_equals_the_eager_one_bit_for_bit(name):
    compiled = _run(STEPS[name], True)
    _assert_same(compiled, _run(STEPS[name], False))
    info = compiled[4].explain()
    assert not info["eager"] and info["breaks"] == [] and compiled[4].size() == 1
    assert [e["kind"] for e in info["effects"]].count("backward") == 1


def test_the_effects_are_listed_in_their_order_and_the_loss_is_not_an_output():
    step, _ = _sgd_step(_params())
    fn = kit.compile(step)
    fn(*_data())
    info = fn.explain()
    assert [(e["kind"], e["call"]) for e in info["effects"]] == [
        ("effect", "SGD.zero_grad"), ("backward", "backward"), ("effect", "SGD.step")]
    assert info["counts"]["effects"] == 3 and len(info["outputs"]) == 1


def test_the_first_call_updates_once():
    # the trace runs the step for real: it is that call's result (not replayed again)
    _assert_same(_run(_sgd_step, True, steps=1), _run(_sgd_step, False, steps=1))


def test_the_returned_loss_has_a_freed_graph_as_eagerly():
    step, _ = _sgd_step(_params())
    fn = kit.compile(step)
    for _ in range(2):  # traced, then replayed
        loss = fn(*_data())
        assert loss.requires_grad and loss.grad_fn is not None
        with pytest.raises(RuntimeError, match="second time"):
            loss.backward()


def test_a_module_and_its_zero_grad():
    def make(ps):
        model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3))
        with kit.no_grad():
            for p, q in zip(model.parameters(), _params() + [kit.zeros(3)], strict=False):
                p.copy_(q.reshape(p.shape) if q.numel() == p.numel() else p)
        opt = SGD(model.parameters(), lr=0.05)
        ps[:] = list(model.parameters())

        def step(x, y):
            model.zero_grad()
            loss = kit.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step, opt

    compiled = _run(make, True)
    _assert_same(compiled, _run(make, False))
    assert "Sequential.zero_grad" in [e["call"] for e in compiled[4].explain()["effects"]]


def test_a_hook_on_a_parameter_added_between_calls_runs_through_the_engine():
    ps = _params()
    step, _ = _sgd_step(ps)
    fn = kit.compile(step)
    fn(*_data())  # traced without a hook
    ps[0].register_hook(lambda g: g * 0)  # the first weight then gets no update
    before = ps[0].detach().numpy().copy()
    fn(*_data())
    assert fn.size() == 1
    # momentum only: the weight moves by the buffer of the first step, not by a new gradient
    ps2 = _params()
    step2, _ = _sgd_step(ps2)
    step2(*_data())
    ps2[0].register_hook(lambda g: g * 0)
    step2(*_data())
    np.testing.assert_array_equal(ps[0].detach().numpy(), ps2[0].detach().numpy())
    assert not np.array_equal(before, ps[0].detach().numpy())


def test_a_captured_tensor_that_is_not_a_leaf_passes_its_gradient_on():
    w = kit.tensor([1.0, -2.0, 0.5], requires_grad=True)
    scaled = w * 3  # computed outside: the function captures a tensor with a graph

    def step(x):
        loss = (x * scaled).sum()
        loss.backward(retain_graph=False)
        return loss

    fn = kit.compile(step)
    fn(kit.tensor([1.0, 2.0, 3.0]))  # traced: the engine frees scaled's graph, as eagerly
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 6.0, 9.0])
    with pytest.raises(RuntimeError, match="second time"):  # as eager code: scaled's graph is
        fn(kit.tensor([1.0, 2.0, 3.0]))                      # freed by the first backward


def test_under_the_profiler_the_backward_is_the_engines_with_its_events():
    ps = _params()
    step, _ = _sgd_step(ps)
    fn = kit.compile(step)
    fn(*_data())
    with kit.profiler.profile() as prof:
        fn(*_data())
    names = {e.name for e in prof.events()}
    assert "CompiledFunction" in names and "Optimizer.step#SGD.step" in names
    eager = _params()
    eager_step, _ = _sgd_step(eager)
    for _ in range(2):
        eager_step(*_data())
    for p, q in zip(ps, eager, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_a_new_shape_traces_again():
    ps = _params()
    step, _ = _sgd_step(ps)
    fn = kit.compile(step)
    x, y = _data()
    fn(x, y)
    fn(x[:3], y[:3])
    fn(x[:3], y[:3])
    assert fn.size() == 2 and not fn.explain()["eager"]


def test_fullgraph_accepts_a_training_step_and_refuses_an_op_after_it():
    ps = _params()
    step, _ = _sgd_step(ps)
    kit.compile(step, fullgraph=True)(*_data())

    def after(x, y):
        loss = _loss(ps, x, y)
        loss.backward()
        return loss * 2

    with pytest.raises(CompileError, match="graph break \\(after_backward\\)"):
        kit.compile(after, fullgraph=True)(*_data())


def test_mxnet_backward_inside_runs_eagerly():
    # mx.autograd.backward fills the variables' grad buffers, which a replay would not
    import kit.mx as mx

    w = mx.nd.array([1.0, 2.0])
    w.attach_grad()

    def step(x):
        with mx.autograd.record():
            loss = (w * x).sum()
        loss.backward()
        return loss

    fn = kit.compile(step)
    for scale in (1.0, 3.0):
        fn(mx.nd.array([scale, -scale]).tensor)
        np.testing.assert_array_equal(w.grad.asnumpy(), [scale, -scale])
    info = fn.explain()
    assert info["eager"] and info["breaks"][0]["what"] == "backward"


def test_a_function_of_effects_only_replays_them():
    ps, qs = _params(), _params()
    opts = [SGD(ps, lr=0.1, momentum=0.5), SGD(qs, lr=0.1, momentum=0.5)]

    def update(opt):
        return lambda: (opt.step(), opt.zero_grad())[0]

    compiled, eager = kit.compile(update(opts[0])), update(opts[1])
    for i in range(3):
        for group, fn in ((ps, compiled), (qs, eager)):
            _loss(group, *_data(i % 2)).backward()
            fn()
    for p, q in zip(ps, qs, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
        assert p.grad is None and q.grad is None
    assert [e["call"] for e in compiled.explain()["effects"]] == ["SGD.step", "SGD.zero_grad"]


def test_a_scheduler_given_a_metric_inside_runs_eagerly():
    # a replay would pass the traced metric again: the function runs eagerly instead
    from kit.optim.lr_scheduler import ReduceLROnPlateau

    ps = _params()
    opt = SGD(ps, lr=0.1)
    plateau = ReduceLROnPlateau(opt, patience=0)
    metrics = iter([1.0, 2.0, 3.0])

    def step(x, y):
        loss = _loss(ps, x, y)
        loss.backward()
        opt.step()
        plateau.step(next(metrics))  # the break
        return loss

    fn = kit.compile(step)
    for _ in range(3):
        fn(*_data())
    assert opt.param_groups[0]["lr"] < 0.1 * 0.1 * 1.0001  # reduced twice: 2.0 and 3.0
    info = fn.explain()
    assert info["eager"] and info["breaks"][0]["what"] == "effect"


def test_reading_a_grad_inside_runs_eagerly():
    # .grad is another tensor on every step: a replay would return the traced one
    ps = _params()
    step, _ = _sgd_step(ps)

    def with_grad(x, y):
        loss = _loss(ps, x, y)
        loss.backward()
        return loss, ps[2].grad  # the break

    fn = kit.compile(with_grad)
    for i in range(2):
        ps[2].grad = None
        _, g = fn(*_data(i))
        ps2 = _params()
        _loss(ps2, *_data(i)).backward()
        np.testing.assert_array_equal(g.numpy(), ps2[2].grad.numpy())
    assert fn.explain()["eager"] and fn.explain()["breaks"][0]["what"] == "after_backward"

    def reads_first(x, y):
        before = ps[2].grad  # the break: the .grad of the previous call
        loss = _loss(ps, x, y)
        return loss if before is None else loss + before.sum()

    fn = kit.compile(reads_first)
    fn(*_data())
    assert fn.explain()["eager"] and fn.explain()["breaks"][0]["what"] == "grad"
