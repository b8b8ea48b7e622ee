"""Activation checkpointing (kit/checkpoint.py, spelt torch.utils.checkpoint): the same gradients
as without it and as PyTorch, the recomputation PyTorch does (once per backward, stopped early,
with the forward's random draws), its errors, and the memory it saves (tracemalloc)."""

from __future__ import annotations

import gc
import sys
import tracemalloc
import warnings
import weakref

import numpy as np
import pytest

import kit
import kit.torch as ktorch
from kit._creation import rng_state, set_rng_state
from kit.checkpoint import CheckpointError
from tests.torch_oracle import is_kit, libraries

LIBS = libraries()
RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _global_random_states_put_back():
    """Tests here seed kit's and PyTorch's global generators: put them back afterwards, so that
    later tests draw the numbers they would have drawn."""
    kit_state = rng_state()
    real = sys.modules.get("torch")
    torch_state = real.random.get_rng_state() if real is not None else None
    yield
    set_rng_state(kit_state)
    if torch_state is not None:
        real.random.set_rng_state(torch_state)
WEIGHTS = RNG.standard_normal((4, 4)).astype(np.float32)
INPUT = RNG.standard_normal((2, 4)).astype(np.float32)


def values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def setup(torch):
    w = torch.tensor(WEIGHTS, requires_grad=True)
    x = torch.tensor(INPUT, requires_grad=True)
    return x, w, lambda h: torch.tanh(h @ w).sin()


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("torch", LIBS)
def test_gradients_are_those_without_checkpoint(torch, reentrant):
    x, w, f = setup(torch)
    (f(f(x)) * 3).sum().backward()
    want = values(x.grad), values(w.grad)
    x.grad = w.grad = None
    checkpoint = torch.utils.checkpoint.checkpoint
    y = checkpoint(f, checkpoint(f, x, use_reentrant=reentrant), use_reentrant=reentrant)
    (y * 3).sum().backward()
    np.testing.assert_allclose(values(x.grad), want[0], rtol=1e-6)
    np.testing.assert_allclose(values(w.grad), want[1], rtol=1e-6)


def program(torch):
    """A few checkpointed computations, and what PyTorch lets one observe of them."""
    checkpoint = torch.utils.checkpoint.checkpoint
    x, w, f = setup(torch)
    seen = {}
    calls = []

    def traced(h):
        calls.append("sin")
        a = h.sin()
        calls.append("exp")
        b = a.exp()  # the last op that saves a tensor: the recomputation stops here
        calls.append("mul")
        return (b * 2) + 1

    y = checkpoint(traced, x, use_reentrant=False).sum()
    calls.clear()
    y.backward(retain_graph=True)
    seen["recomputed"] = list(calls)
    calls.clear()
    y.backward()
    seen["recomputed again"] = list(calls)
    seen["grad"] = values(x.grad)

    (g,) = torch.autograd.grad(checkpoint(f, x, use_reentrant=False).sum(), x, create_graph=True)
    (seen["double backward"],) = (values(t) for t in torch.autograd.grad(g.sum(), w))

    def inner(h):
        return h.sin().exp()

    def outer(h):
        return checkpoint(inner, h.cos(), use_reentrant=False).tanh()

    x.grad = None
    checkpoint(outer, x, use_reentrant=False).sum().backward()
    seen["nested"] = values(x.grad)

    counts = [0, 0]
    with torch.autograd.graph.saved_tensors_hooks(
            lambda t: counts.__setitem__(0, counts[0] + 1) or t,
            lambda t: counts.__setitem__(1, counts[1] + 1) or t):
        y = checkpoint(f, x, use_reentrant=False)
        seen["outer packs in forward"] = list(counts)
        z = (y * y).sum()
    z.backward()
    seen["outer hook calls"] = list(counts)

    mods = [lambda h: h.tanh(), lambda h: h @ w, lambda h: h.sin(), lambda h: h.exp()]
    x.grad = None
    torch.utils.checkpoint.checkpoint_sequential(mods, 2, x, use_reentrant=False).sum().backward()
    seen["sequential"] = values(x.grad)
    return seen


def test_what_the_recomputation_does_is_what_pytorch_does():
    torch = pytest.importorskip("torch")
    got, want = program(ktorch), program(torch)
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=key)
        else:
            assert got[key] == value, key
    assert want["recomputed"] == ["sin", "exp"]
    assert want["outer hook calls"] == [3, 3]


@pytest.mark.parametrize("torch", LIBS)
def test_the_forwards_random_draws_are_replayed_unless_told_not_to(torch):
    checkpoint = torch.utils.checkpoint.checkpoint
    x = torch.tensor(np.linspace(0.1, 1.0, 64, dtype=np.float32), requires_grad=True)

    def dropped(h):
        return torch.nn.functional.dropout(h, 0.5, training=True).exp()

    def check(preserve):
        torch.manual_seed(1)
        x.grad = None
        y = checkpoint(dropped, x, use_reentrant=False, preserve_rng_state=preserve)
        y.sum().backward()
        kept = values(y) != 1.0
        return np.allclose(values(x.grad), np.where(kept, 2 * values(y), 0.0))

    assert check(True)
    assert not check(False)  # the recomputation drew another mask: wrong gradients


def test_the_recomputation_leaves_the_random_generator_where_it_was():
    def dropped(h):
        return ktorch.nn.functional.dropout(h, 0.5, training=True)

    x = ktorch.ones(8, requires_grad=True)
    ktorch.manual_seed(3)
    dropped(x).sum().backward()
    after_plain = ktorch.rand(4)
    ktorch.manual_seed(3)
    ktorch.utils.checkpoint.checkpoint(dropped, x, use_reentrant=False).sum().backward()
    np.testing.assert_array_equal(values(ktorch.rand(4)), values(after_plain))


@pytest.mark.parametrize("torch", LIBS)
def test_grad_works_through_the_non_reentrant_variant_only(torch):
    checkpoint = torch.utils.checkpoint.checkpoint
    x, w, f = setup(torch)
    (g,) = torch.autograd.grad(checkpoint(f, x, use_reentrant=False).sum(), x)
    (want,) = torch.autograd.grad(f(x).sum(), x)
    np.testing.assert_allclose(values(g), values(want), rtol=1e-6)
    message = "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad()"
    with pytest.raises(RuntimeError, match=message.replace("(", "\\(").replace(")", "\\)")):
        torch.autograd.grad(checkpoint(f, x, use_reentrant=True).sum(), x)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        checkpoint(f, x, use_reentrant=True).sum().backward(inputs=[x])


@pytest.mark.parametrize("torch", LIBS)
def test_reentrant_needs_an_input_that_requires_grad(torch):
    checkpoint = torch.utils.checkpoint.checkpoint
    x, w, f = setup(torch)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(f, x.detach(), use_reentrant=True)
    assert not y.requires_grad  # the weights inside get no gradient
    y = checkpoint(f, x.detach(), use_reentrant=False)
    y.sum().backward()
    assert w.grad is not None


@pytest.mark.parametrize("torch", LIBS)
def test_reentrant_refuses_a_function_whose_outputs_need_no_gradient(torch):
    x, _, _ = setup(torch)
    y = torch.utils.checkpoint.checkpoint(lambda h: h.detach().sin(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="none of output has requires_grad=True, this "
                                           "checkpoint\\(\\) is not necessary"):
        y.sum().backward()


def test_reentrant_gradients_refuse_a_second_derivative_that_pytorch_drops():
    x, w, f = setup(ktorch)
    y = ktorch.utils.checkpoint.checkpoint(f, x, use_reentrant=True).sum()
    (g,) = ktorch.autograd.grad(f(x).sum(), x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y.backward(create_graph=True)
    np.testing.assert_allclose(values(x.grad), values(g), rtol=1e-6)
    with pytest.raises(RuntimeError, match="use_reentrant=True gives first-order gradients only"):
        x.grad.sum().backward()


def test_pytorch_returns_reentrant_gradients_without_history():
    torch = pytest.importorskip("torch")
    x, w, f = setup(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.utils.checkpoint.checkpoint(f, x, use_reentrant=True).sum().backward(
            create_graph=True)
    assert x.grad.grad_fn is None


@pytest.mark.parametrize("torch", LIBS)
def test_a_function_reading_saved_tensors_twice_is_refused(torch):
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, h):
            ctx.save_for_backward(h)
            return h * h

        @staticmethod
        def backward(ctx, g):
            (h,) = ctx.saved_tensors
            ctx.saved_tensors  # noqa: B018 - a second unpack: the value was handed over already
            return 2 * h * g

    x, _, _ = setup(torch)
    y = torch.utils.checkpoint.checkpoint(lambda h: Square.apply(h.sin()), x, use_reentrant=False)
    error = CheckpointError if is_kit(torch) else torch.utils.checkpoint.CheckpointError
    with pytest.raises(error, match="Unpack is being triggered for a tensor that was already "
                                    "unpacked once"):
        y.sum().backward()


@pytest.mark.parametrize("torch", LIBS)
def test_a_recomputation_that_differs_is_refused(torch):
    checkpoint = torch.utils.checkpoint.checkpoint
    error = CheckpointError if is_kit(torch) else torch.utils.checkpoint.CheckpointError
    x, _, _ = setup(torch)
    runs = []

    def fewer(h):
        runs.append(1)
        return h.exp().sin().sum() if len(runs) == 1 else h.exp().sum()

    def narrower(h):
        runs.append(1)
        return h[: 2 if len(runs) == 1 else 1].exp().sum()

    with pytest.raises(error, match="A different number of tensors was saved during the original "
                                    "forward and recomputation.\nNumber of tensors saved during "
                                    "forward: 2\nNumber of tensors saved during recomputation: 1"):
        checkpoint(fewer, x, use_reentrant=False).backward()
    runs.clear()
    with pytest.raises(error, match="Recomputed values for the following tensors have different "
                                    "metadata than during the forward pass.\ntensor at position "
                                    "0:\nsaved metadata: {'shape': "):
        checkpoint(narrower, x, use_reentrant=False).backward()
    runs.clear()
    y = checkpoint(narrower, x, use_reentrant=False, determinism_check="none")
    if is_kit(torch):  # kit still refuses a value of another shape, where it is unpacked
        with pytest.raises(RuntimeError, match="unpack_hook returned a tensor of shape \\[1, 4\\]"
                                               ".*ExpBackward0 saved with shape \\[2, 4\\]"):
            y.backward()
    else:  # PyTorch computes with it: a wrong gradient, silently
        y.backward()


@pytest.mark.parametrize("torch", LIBS)
def test_an_input_changed_in_place_before_backward_is_refused(torch):
    x, _, f = setup(torch)
    h = x * 1
    y = torch.utils.checkpoint.checkpoint(f, h, use_reentrant=False).sum()
    with torch.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("torch", LIBS)
def test_arguments_as_pytorch_takes_them(torch):
    checkpoint = torch.utils.checkpoint.checkpoint
    x, _, f = setup(torch)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed "
                                         "explicitly"):
        checkpoint(f, x)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        torch.utils.checkpoint.checkpoint_sequential([f, f], 2, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(f, x, use_reentrant=True, scale=2)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        torch.utils.checkpoint.checkpoint_sequential([f, f], 2, x, use_reentrant=False, scale=2)
    y = checkpoint(lambda h, scale: h * scale, x, use_reentrant=False, scale=2.0)
    np.testing.assert_allclose(values(y), 2 * INPUT)
    with pytest.raises(ValueError, match="determinism_check should be one of \\['default', "
                                         "'none'\\], but got sometimes"):
        checkpoint(f, x, use_reentrant=False, determinism_check="sometimes")
    with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported when "
                                         "use_reentrant=False"):
        checkpoint(f, x, use_reentrant=True, debug=True)
    out, label = checkpoint(lambda h: (h.sin(), "label"), x, use_reentrant=False)
    assert label == "label" and out.requires_grad
    with torch.no_grad():
        assert not checkpoint(f, x, use_reentrant=False).requires_grad


def test_kit_refuses_the_options_it_does_not_have():
    x, _, f = setup(ktorch)
    with pytest.raises(NotImplementedError, match="context_fn .selective checkpointing. or "
                                                  "debug"):
        ktorch.utils.checkpoint.checkpoint(f, x, use_reentrant=False, debug=True)
    for segments in (0, 3, 1.5):
        with pytest.raises(ValueError, match="segments must be an int from 1 to the number of "
                                             "functions \\(2\\)"):
            ktorch.utils.checkpoint.checkpoint_sequential([f, f], segments, x,
                                                          use_reentrant=False)


def test_checkpoint_sequential_takes_a_sequential_and_matches_the_plain_model():
    kit.manual_seed(0)
    model = ktorch.nn.Sequential(*(m for _ in range(3)
                                   for m in (ktorch.nn.Linear(8, 8), ktorch.nn.Tanh())))
    x = ktorch.randn(5, 8)
    model(x).pow(2).sum().backward()
    want = [values(p.grad) for p in model.parameters()]
    model.zero_grad()
    ktorch.utils.checkpoint.checkpoint_sequential(model, 3, x, use_reentrant=False).pow(2).sum(
    ).backward()
    for p, g in zip(model.parameters(), want, strict=True):
        np.testing.assert_allclose(values(p.grad), g, rtol=1e-5, atol=1e-7)


def test_a_checkpointed_regions_activations_are_freed_after_its_forward():
    x = kit.tensor(np.ones(8, np.float32), requires_grad=True)
    inside = []

    def region(h):
        a = h.exp()
        inside.append(weakref.ref(a))
        return a.sin()  # exp saves its output `a`, sin its input `a`

    gc.collect()
    y = kit.checkpoint.checkpoint(region, x, use_reentrant=False)
    assert inside[0]() is None  # a placeholder was kept instead
    plain = region(x)
    assert inside[1]() is not None  # kept by exp for backward
    y.sum().backward()
    del plain


def peak_bytes(n_layers, segments, width=32, batch=512):
    """Peak traced memory of a forward and backward through `n_layers` tanh layers, checkpointed
    in `segments` segments (0: no checkpoint), in units of one activation."""
    rng = np.random.default_rng(0)
    weights = [kit.tensor(rng.standard_normal((width, width)).astype(np.float32) / 6,
                          requires_grad=True) for _ in range(n_layers)]
    layers = [lambda h, w=w: (h @ w).tanh() for w in weights]
    x = kit.tensor(rng.standard_normal((batch, width)).astype(np.float32))
    gc.collect()
    tracemalloc.start()
    try:
        if segments:
            y = kit.checkpoint.checkpoint_sequential(layers, segments, x, use_reentrant=False)
        else:
            y = x
            for layer in layers:
                y = layer(y)
        y.sum().backward()
        del y
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / (batch * width * 4)


def test_checkpointing_in_sqrt_n_segments_keeps_about_2_sqrt_n_activations():
    """16 layers: without checkpoints every layer's output is kept (16 activations, then a
    gradient or two); in k segments, k - 1 segment inputs and the 16 / k activations of the
    segment being differentiated, which is least at k = 4 = sqrt(16)."""
    peaks = {k: peak_bytes(16, k) for k in (0, 1, 2, 4, 8, 16)}
    assert 17 < peaks[0] < 21
    assert abs(peaks[1] - peaks[0]) < 0.5  # one segment: the last is never checkpointed
    assert min(peaks, key=peaks.get) == 4
    assert peaks[4] < 0.65 * peaks[0]
    assert peaks[2] > peaks[4] < peaks[8] < peaks[16]


@pytest.mark.parametrize("torch", LIBS)
def test_a_once_differentiable_function_in_a_region_under_create_graph(torch):
    """kit's @once_differentiable looks at the saved tensors too (to refuse a second derivative
    that would miss terms) without unpacking them a second time."""

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, h):
            ctx.save_for_backward(h)
            return h ** 3

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (h,) = ctx.saved_tensors
            return 3 * h * h * g

    x, _, _ = setup(torch)
    y = torch.utils.checkpoint.checkpoint(lambda h: Cube.apply(h.sin()), x, use_reentrant=False)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    xs = values(x)
    np.testing.assert_allclose(values(g), 3 * np.sin(xs) ** 2 * np.cos(xs), rtol=1e-5)
    if is_kit(torch):
        with pytest.raises(RuntimeError, match="differentiate twice a function that was marked "
                                               "with @once_differentiable"):
            g.sum().backward()
