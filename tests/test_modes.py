"""The one stack of modes (kit/_modes.py): per thread, undone on exceptions, the same mechanism
for grad mode, vmap, kit.func's transforms, jvp and kit.mx; importing kit.viz changes nothing.
The grad-mode objects themselves (decorators, generators, inference_mode): test_grad_mode.py."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import kit
import kit.mx as mx
from kit._modes import STATE, stack, switch
from kit.func import grad, jvp, vjp, vmap

DEFAULTS = {"grad": True, "inference": False, "enabled": True, "anomaly": False,
            "keep_outputs": False, "depth": 0, "transforms": 0, "grad_levels": 0,
            "jvp_backward": None, "recording": False, "training": False}


def switches():
    return {name: switch(name) for name in DEFAULTS}


def assert_clean():
    assert stack() == [] and switches() == DEFAULTS


def in_threads(*targets):
    """Run each target in its own thread; re-raise the first error a thread hit."""
    errors = []

    def guarded(target):
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: interleave their modes
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        sys.setswitchinterval(interval)
    if errors:
        raise errors[0]


# --- per thread -------------------------------------------------------------------------------
def test_no_grad_in_one_thread_does_not_affect_another():
    barrier = threading.Barrier(2, timeout=30)
    seen = {}
    x = kit.tensor([1.0, 2.0], requires_grad=True)

    def frozen():
        with kit.no_grad():
            barrier.wait()  # 1: the other thread looks while this one is inside no_grad
            barrier.wait()  # 2
            seen["frozen"] = (kit.is_grad_enabled(), (x * 2).requires_grad)

    def recording():
        barrier.wait()  # 1
        seen["recording"] = (kit.is_grad_enabled(), (x * 2).requires_grad)
        with kit.enable_grad(), kit.set_grad_enabled(True):
            pass
        barrier.wait()  # 2

    in_threads(frozen, recording)
    assert seen == {"frozen": (False, False), "recording": (True, True)}
    assert_clean()


def test_a_new_thread_starts_with_the_default_modes():
    """As in PyTorch: grad mode is not inherited by a thread started inside no_grad."""
    seen = []
    with kit.no_grad(), mx.autograd.record():
        in_threads(lambda: seen.append((kit.is_grad_enabled(), mx.autograd.is_recording(),
                                        stack())))
    assert seen == [(True, False, [])]


def _chain_loss(x, n):
    y = x
    for i in range(n):
        y = (y * (1.0 + 1e-4 * (i % 3))).sin() + y
    return y.sum()


def test_two_threads_run_backward_on_separate_graphs_at_once():
    n, rounds = 300, 3
    barrier = threading.Barrier(2, timeout=30)
    results = {}
    data = {"a": np.linspace(-1.0, 1.0, 8), "b": np.linspace(0.5, 2.0, 8)}
    expected = {}
    for name, values in data.items():
        x = kit.tensor(values, requires_grad=True)
        _chain_loss(x, n).backward()
        expected[name] = x.grad.numpy().copy()

    def worker(name):
        def run():
            grads = []
            for _ in range(rounds):
                x = kit.tensor(data[name], requires_grad=True)
                loss = _chain_loss(x, n)
                barrier.wait()  # both backward passes start together
                loss.backward()
                # one thread's backward must not turn grad mode off in the other
                assert kit.is_grad_enabled() and (x * 1).requires_grad
                grads.append(x.grad.numpy().copy())
            results[name] = grads
        return run

    in_threads(worker("a"), worker("b"))
    for name in data:
        for g in results[name]:
            np.testing.assert_array_equal(g, expected[name])
    assert_clean()


def test_many_threads_switching_modes_each_see_their_own():
    """The shared view of the switches turns per-thread and back while threads enter and leave
    modes at random; every thread must always see its own mode."""
    x = kit.tensor([1.0], requires_grad=True)

    def worker(seed):
        def run():
            rng = np.random.default_rng(seed)
            for _ in range(300):
                expected = []
                modes = []
                for _ in range(rng.integers(0, 3)):
                    off = bool(rng.integers(0, 2))
                    modes.append(kit.no_grad() if off else kit.enable_grad())
                    expected.append(not off)
                for mode in modes:
                    mode.__enter__()
                want = expected[-1] if expected else True
                assert kit.is_grad_enabled() is want and STATE.enabled is want
                assert (x * 2).requires_grad is want
                for mode in reversed(modes):
                    mode.__exit__(None, None, None)
                assert STATE.enabled and (x * 2).requires_grad
        return run

    in_threads(*(worker(seed) for seed in range(4)))
    with kit.no_grad():
        pass
    assert_clean()


def test_a_thread_that_ends_with_grad_mode_off_leaves_the_others_alone():
    in_threads(lambda: kit.set_grad_enabled(False))  # a plain call: nothing restores it
    assert kit.is_grad_enabled() and STATE.enabled
    assert (kit.tensor([1.0], requires_grad=True) * 2).requires_grad
    with kit.no_grad():
        pass


def test_mxnet_modes_are_per_thread():
    barrier = threading.Barrier(2, timeout=30)
    seen = {}

    def recording():
        x = mx.nd.array([1.0, 2.0])
        x.attach_grad()
        with mx.autograd.record():
            barrier.wait()  # 1
            y = x * 3
            with mx.autograd.pause():
                barrier.wait()  # 2
                seen["paused"] = (mx.autograd.is_recording(), mx.autograd.is_training())
                barrier.wait()  # 3
            barrier.wait()  # 4
        y.backward()
        seen["grad"] = x.grad.asnumpy().tolist()

    def other():
        x = mx.nd.array([1.0])
        x.attach_grad()
        barrier.wait()  # 1: the other thread is recording
        seen["outside"] = (mx.autograd.is_recording(), mx.autograd.is_training())
        z = x * 2
        seen["outside recorded"] = z.tensor.grad_fn is not None
        barrier.wait()  # 2
        with mx.autograd.train_mode():
            barrier.wait()  # 3: the other thread is paused (predict mode) meanwhile
            seen["train_mode"] = (mx.autograd.is_recording(), mx.autograd.is_training())
        barrier.wait()  # 4

    in_threads(recording, other)
    assert seen == {
        "paused": (False, False), "grad": [3.0, 3.0], "outside": (False, False),
        "outside recorded": False, "train_mode": (False, True),
    }
    assert_clean()


def test_vmap_in_one_thread_does_not_batch_another():
    barrier = threading.Barrier(2, timeout=30)
    seen = {}

    def batched(row):
        barrier.wait()  # 1: the other thread computes while this vmap is active
        barrier.wait()  # 2
        return row * 2

    def mapping():
        seen["vmap"] = vmap(batched)(kit.ones(3, 2)).shape

    def plain():
        barrier.wait()  # 1
        seen["plain"] = ((kit.ones(3, 2) * 2).shape, STATE.depth, STATE.transforms)
        barrier.wait()  # 2

    in_threads(mapping, plain)
    assert seen == {"vmap": (3, 2), "plain": ((3, 2), 0, 0)}


def test_kit_func_transforms_in_two_threads_at_once():
    """grad levels, vmap levels and jvp are per thread: nested transforms in two threads at the
    same time each get their own right answer."""
    results = {}

    def second_derivative():
        x = kit.tensor(2.0, dtype=kit.float64)
        results["grad"] = [float(grad(grad(lambda t: t ** 3))(x)) for _ in range(40)]

    def per_sample():
        xs = kit.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=kit.float64)
        results["vmap"] = [vmap(grad(lambda r: (r * r).sum()))(xs).numpy().tolist()
                           for _ in range(40)]
        results["jvp"] = float(jvp(lambda t: t.sin(), (kit.tensor(0.0),), (kit.tensor(1.0),))[1])

    in_threads(second_derivative, per_sample)
    assert results["grad"] == [12.0] * 40
    assert results["vmap"] == [[[2.0, 4.0], [6.0, 8.0]]] * 40
    assert results["jvp"] == pytest.approx(1.0)
    assert_clean()


# --- undone on exceptions ---------------------------------------------------------------------
class BoomError(Exception):
    pass


def _raise(*_):
    raise BoomError


def _no_jvp_backward(x):
    return x.exp() + _raise()


@pytest.mark.parametrize("block", [
    pytest.param(lambda: kit.no_grad(), id="no_grad"),
    pytest.param(lambda: kit.enable_grad(), id="enable_grad"),
    pytest.param(lambda: kit.set_grad_enabled(False), id="set_grad_enabled"),
    pytest.param(lambda: kit.inference_mode(), id="inference_mode"),
    pytest.param(lambda: kit.detect_anomaly(), id="detect_anomaly"),
    pytest.param(lambda: kit.grad_mode.keep_output_refs(), id="keep_output_refs"),
    pytest.param(lambda: mx.autograd.record(), id="mx_record"),
    pytest.param(lambda: mx.autograd.pause(), id="mx_pause"),
    pytest.param(lambda: mx.autograd.train_mode(), id="mx_train_mode"),
])
def test_a_mode_is_undone_when_its_block_raises(block):
    with pytest.raises(BoomError), kit.no_grad(), block():
        with mx.autograd.record():
            raise BoomError
    assert_clean()


@pytest.mark.parametrize("transform", [
    pytest.param(lambda: vmap(_raise)(kit.ones(2, 3)), id="vmap"),
    pytest.param(lambda: vmap(vmap(_raise))(kit.ones(2, 3)), id="nested vmap"),
    pytest.param(lambda: grad(_raise)(kit.ones(3)), id="grad"),
    pytest.param(lambda: vjp(_raise, kit.ones(3)), id="vjp"),
    pytest.param(lambda: vmap(grad(_raise))(kit.ones(2, 3)), id="vmap of grad"),
    pytest.param(lambda: jvp(_raise, (kit.ones(3),), (kit.ones(3),)), id="jvp"),
    pytest.param(lambda: vjp(lambda x: x.exp(), kit.ones(3))[1](_raise()), id="vjp_fn"),
])
def test_transforms_are_undone_when_the_function_raises(transform):
    with pytest.raises(BoomError):
        transform()
    assert_clean()


def test_jvp_recording_a_pullback_is_undone_when_a_function_jvp_raises():
    class Exp(kit.Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(output)

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("jvp must use the jvp staticmethod")

        @staticmethod
        def jvp(ctx, t):
            raise BoomError

    with pytest.raises(BoomError):
        jvp(Exp.apply, (kit.ones(2),), (kit.ones(2),))
    assert_clean()
    x = kit.tensor([0.0, 1.0])
    _, t = jvp(lambda v: v.exp(), (x,), (kit.ones(2),))  # the next jvp works as usual
    np.testing.assert_allclose(t.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)


def test_a_backward_that_raises_restores_grad_mode():
    x = kit.tensor([1.0], requires_grad=True)
    y = x * 2
    y.register_hook(_raise)
    with kit.no_grad(), pytest.raises(BoomError):
        kit.autograd.backward([y], [kit.ones(1)], create_graph=True)
    assert_clean()


# --- importing kit.viz ------------------------------------------------------------------------
def test_importing_kit_viz_changes_nothing_in_what_is_recorded():
    script = """
import kit
from kit._modes import STATE, stack, switch

def recorded():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3).exp()
    return (y.grad_fn.outputs(), y.grad_fn.next_functions[0][0].outputs(),
            sorted(vars(type(STATE)).items(), key=str))

before = recorded()
import kit.viz
assert recorded() == before, (recorded(), before)
assert before[0] == (None,) and before[1] == (None,)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_keep_output_refs_is_a_mode_and_drawings_use_saved_values_without_it():
    from kit.viz import draw_graph, keep_output_refs

    x = kit.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3  # mul's output, saved by the next mul: shown without any mode
    z = (y * y).sum()
    drawing = draw_graph(z)
    (mul_x3,) = [n for n in drawing.nodes if n["kind"] == "op"
                 and n["attributes"].get("value") == [3.0, 6.0]]
    assert mul_x3["attributes"]["op"] == "mul"
    with keep_output_refs():
        h = x + 1  # alive: its node reaches it through a weak reference
        w = h.sum()
    (add,) = [n for n in draw_graph(w).nodes if n["kind"] == "op"
              and n["attributes"]["op"] == "add"]
    assert add["attributes"]["value"] == [2.0, 3.0]
    assert_clean()
