"""Memory: what backward saved is freed once it has run (unless retain_graph), graphs are freed by
reference counting alone (no cycles), and a training loop's memory stays flat."""

import gc
import tracemalloc
import weakref

import numpy as np
import pytest
from helpers import leaf, rand

import kit


@pytest.fixture
def no_cycle_collector():
    """Run with the cycle collector off: what must die has to die by reference counting."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_saved_intermediate_tensor_dies_after_backward(no_cycle_collector):
    x = leaf(rand(3))
    h = x * 2
    y = (h * h).sum()  # mul saves h
    alive = weakref.ref(h)
    del h
    assert alive() is not None  # kept by the graph for backward
    y.backward()
    assert alive() is None


def test_saved_output_array_is_released_after_backward(no_cycle_collector):
    x = leaf(rand(3))
    e = x.exp()  # exp keeps its output's array for backward
    data = weakref.ref(e._data)
    y = e.sum()
    del e
    assert data() is not None
    y.backward()
    assert data() is None


def test_retain_graph_keeps_saved_values_until_the_graph_goes(no_cycle_collector):
    x = leaf(rand(3))
    h = x.tanh()
    alive = weakref.ref(h)
    y = (h * h).sum()
    del h
    y.backward(retain_graph=True)
    assert alive() is not None
    y.backward()
    assert alive() is None


def test_a_graph_is_freed_without_backward_by_reference_counting(no_cycle_collector):
    x = leaf(rand(3))
    h = x.sin()
    alive, node = weakref.ref(h), weakref.ref(h.grad_fn)
    y = (h * h.exp()).sum()
    del h, y
    assert alive() is None and node() is None
    assert x.grad is None


def test_function_saved_tensors_are_freed_after_backward(no_cycle_collector):
    class Square(kit.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(rand(3))
    h = x + 1
    alive = weakref.ref(h)
    y = Square.apply(h).sum()
    del h
    assert alive() is not None
    y.backward()
    assert alive() is None


def _mlp_step(params, inputs, target):
    w1, b1, w2, b2 = params
    loss = kit.cross_entropy(kit.relu(inputs @ w1 + b1) @ w2 + b2, target)
    loss.backward()
    with kit.no_grad():
        for p in params:
            p -= 0.1 * p.grad
            p.grad.zero_()
    return loss.item()


def test_training_loop_memory_is_flat():
    """1,000 SGD steps of a small MLP: Python-allocated memory grows by less than 64 KiB
    between step 100 and step 1000 (one leaked graph per step would be megabytes)."""
    kit.manual_seed(0)
    rng = np.random.default_rng(0)
    inputs = kit.tensor(rng.standard_normal((32, 8)).astype(np.float32))
    target = kit.tensor(rng.integers(0, 3, 32))
    params = [kit.randn(8, 16, requires_grad=True), kit.zeros(16, requires_grad=True),
              kit.randn(16, 3, requires_grad=True), kit.zeros(3, requires_grad=True)]
    losses = []
    tracemalloc.start()
    try:
        for step in range(1000):
            losses.append(_mlp_step(params, inputs, target))
            if step == 99:
                gc.collect()
                at_100 = tracemalloc.get_traced_memory()[0]
        gc.collect()
        at_1000 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert at_1000 - at_100 < 64 * 1024, f"grew by {at_1000 - at_100} bytes"
    assert losses[-1] < 0.5 * losses[0]  # it did train


def test_a_functions_saved_tensors_are_freed_after_backward_like_a_builtin_ops():
    """Functions and built-in ops keep saved values in one mechanism (Node.saved): both let go
    of them after backward, and both version-check a saved output."""

    class Exp(kit.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            inner = x * 2  # an intermediate, saved too
            ctx.save_for_backward(y, inner)
            return y

        @staticmethod
        def backward(ctx, g):
            y, _ = ctx.saved_tensors
            return g * y

    x = kit.tensor([1.0, 2.0], requires_grad=True)
    y = Exp.apply(x)
    node = y.grad_fn
    inner = weakref.ref(node.saved[1])
    assert type(node.saved[0]).__name__ == "SavedOutput" and inner() is not None
    y.sum().backward()
    assert node.released() and inner() is None and node.saved_values() == ()
    z = Exp.apply(x)
    with kit.no_grad():
        z.mul_(2)
    with pytest.raises(RuntimeError, match="its output, saved by ExpBackward, is at version 1"):
        z.sum().backward()


def test_a_functions_output_that_nothing_saved_is_freed_with_its_tensor(no_cycle_collector):
    """As a built-in op's: the node keeps an output's array only if it saved that output."""

    class Double(kit.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            return 2 * g2 + 3 * g3

    class ExpF(kit.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = leaf(rand(3))
    a, b = Double.apply(x)
    e = ExpF.apply(x)
    arrays = [weakref.ref(a._data), weakref.ref(b._data), weakref.ref(e._data)]
    y = (a.sum() + b.sum()) * e.sum()  # mul keeps both sums, not a and b themselves
    del a, b, e
    assert [r() is None for r in arrays] == [True, True, False]  # ExpF saved its output
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 5 * np.exp(rand(3)).sum() + np.exp(rand(3)) * (
        5 * rand(3).sum()))
