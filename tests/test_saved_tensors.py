"""Saved-tensor hooks (kit/saved_tensors.py, spelt torch.autograd.graph): which tensors are
packed, when pack and unpack run, what unpack gives back, and kit's errors on misuse; each
program run on kit.torch and on real PyTorch and compared where PyTorch is installed."""

from __future__ import annotations

import doctest
import gc
import threading
import weakref

import fake_cupy
import numpy as np
import pytest

import kit
import kit.checkpoint
import kit.saved_tensors
import kit.torch as ktorch
import kit.viz
from kit.saved_tensors import SavedTensor
from tests.torch_oracle import is_kit, libraries

LIBS = libraries()
RNG = np.random.default_rng(0)
X = RNG.standard_normal(3).astype(np.float32)
M = RNG.standard_normal((4, 3)).astype(np.float32)


def values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def tensors(torch):
    """x (a leaf needing grad), w (a constant), W (a constant matrix), V (a matrix needing grad)."""
    return (torch.tensor(X, requires_grad=True), torch.tensor(X * 0.5 + 2), torch.tensor(M),
            torch.tensor(M, requires_grad=True))


def counted(torch, program):
    """(packs during the forward, unpacks during backward, gradients) of `program`."""
    calls = {"pack": 0, "unpack": 0}

    def pack(t):
        calls["pack"] += 1
        return t

    def unpack(t):
        calls["unpack"] += 1
        return t

    inputs = tensors(torch)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = program(torch, *inputs)
    packs = calls["pack"]
    y.sum().backward()
    grads = [values(t.grad) for t in inputs if t.grad is not None]
    return packs, calls["unpack"], grads


# Programs after which kit keeps exactly what PyTorch keeps: each op saves only what the
# gradients of the inputs that need one use (mul keeps w, not x, for x * w with a constant w).
SAME_AS_PYTORCH = {
    # softmax and log_softmax are primitives that keep their output, as PyTorch's
    "softmax": lambda t, x, w, W, V: x.softmax(0),
    "log_softmax": lambda t, x, w, W, V: t.nn.functional.log_softmax(x, 0),
    "x * w": lambda t, x, w, W, V: x * w,
    "x * 2": lambda t, x, w, W, V: x * 2,
    "x * x": lambda t, x, w, W, V: x * x,
    "x ** 2": lambda t, x, w, W, V: x ** 2,
    "x ** w": lambda t, x, w, W, V: x ** w,
    "w ** x": lambda t, x, w, W, V: w ** x,
    "2 ** x": lambda t, x, w, W, V: 2 ** x,
    "x / w": lambda t, x, w, W, V: x / w,
    "w / x": lambda t, x, w, W, V: w / x,
    "x + w - 1": lambda t, x, w, W, V: x + w - 1,
    "exp, sin, cos, tanh": lambda t, x, w, W, V: x.exp().sin().cos().tanh(),
    "relu, sigmoid, abs": lambda t, x, w, W, V: x.relu().sigmoid() + x.abs(),
    "log, sqrt, log1p": lambda t, x, w, W, V: (x * x + 1).sqrt().log() + (x * x).log1p(),
    "sum, mean, logsumexp": lambda t, x, w, W, V: x.sum() + x.mean() + x.logsumexp(0),
    "views": lambda t, x, w, W, V: x[1:].reshape(2, 1).expand(2, 3) * 3,
    "clamp, where, maximum": lambda t, x, w, W, V: t.where(x > 0, x.clamp(-0.5, 0.5),
                                                           t.maximum(x, w)),
    "W @ x": lambda t, x, w, W, V: W @ x,
    "V @ w": lambda t, x, w, W, V: V @ w,
    "V @ x": lambda t, x, w, W, V: V @ x,
    "linear": lambda t, x, w, W, V: t.nn.functional.linear(x.reshape(1, 3), V),
    "linear, constant input": lambda t, x, w, W, V: t.nn.functional.linear(w.reshape(1, 3), V),
    "linear, constant weight": lambda t, x, w, W, V: t.nn.functional.linear(x.reshape(1, 3), W),
    "mlp": lambda t, x, w, W, V: t.nn.functional.mse_loss(
        t.sigmoid(t.nn.functional.linear(x.reshape(1, 3), V)).tanh(), t.zeros(1, 4)),
    "max (its input and output)": lambda t, x, w, W, V: x.max(),
    "cat, clone, detach": lambda t, x, w, W, V: t.cat([x.clone(), w]) * t.cat([x.detach(), w]),
}

# kit builds these from primitives that each save what they need; PyTorch has one fused node.
# (kit's packs, PyTorch's packs): a change on either side shows here.
DIFFERENT = {
    "gelu": (lambda t, x, w, W, V: t.nn.functional.gelu(x), (3, 1)),
}


@pytest.mark.parametrize("name", sorted(SAME_AS_PYTORCH))
def test_pack_and_unpack_counts_and_gradients_are_pytorchs(name):
    torch = pytest.importorskip("torch")
    packs, unpacks, grads = counted(ktorch, SAME_AS_PYTORCH[name])
    want_packs, want_unpacks, want_grads = counted(torch, SAME_AS_PYTORCH[name])
    assert (packs, unpacks) == (want_packs, want_unpacks)
    assert packs == unpacks
    for got, want in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("torch", LIBS)
@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_fused_pytorch_nodes_save_less_than_kits_composites(torch, name):
    program, (kit_packs, torch_packs) = DIFFERENT[name]
    packs, unpacks, _ = counted(torch, program)
    assert packs == unpacks == (kit_packs if is_kit(torch) else torch_packs)


@pytest.mark.parametrize("torch", LIBS)
def test_pack_gets_the_tensor_itself_and_its_output_under_no_grad(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def pack(t):
        seen.append((t, torch.is_grad_enabled()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        s = x.sin()  # saves its input
        e = x.exp()  # saves its output
        with torch.no_grad():
            x.cos()  # records nothing, saves nothing
    assert [t for t, _ in seen] == [x, e] and seen[0][0] is x and seen[1][0] is e
    assert not any(grad_mode for _, grad_mode in seen)
    assert s.requires_grad


@pytest.mark.parametrize("torch", LIBS)
def test_nested_hooks_only_the_innermost_packs_and_a_node_unpacks_with_its_own(torch):
    log = []

    def hooks(tag):
        return (lambda t: log.append(("pack", tag)) or t,
                lambda t: log.append(("unpack", tag)) or t)

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(*hooks("outer")):
        y = x.sin()
        with torch.autograd.graph.saved_tensors_hooks(*hooks("inner")):
            z = y.cos()
        w = z.exp()
    w.sum().backward()
    assert log == [("pack", "outer"), ("pack", "inner"), ("pack", "outer"),
                   ("unpack", "outer"), ("unpack", "inner"), ("unpack", "outer")]


@pytest.mark.parametrize("torch", LIBS)
def test_a_functions_saved_tensors_are_packed_after_forward_and_unpacked_per_access(torch):
    log = []

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            y = x * k
            ctx.save_for_backward(x, None, y)
            log.append("saved")
            return y

        @staticmethod
        def backward(ctx, g):
            x, none, y = ctx.saved_tensors
            assert none is None and y.grad_fn is ctx_node[0]
            log.append("first access")
            ctx.saved_tensors  # noqa: B018 - a second access unpacks again
            return g * 2, None

    ctx_node = []
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: log.append("pack") or t,
                                                  lambda t: log.append("unpack") or t):
        y = Scale.apply(x, 2.0)
        log.append("applied")
    ctx_node.append(y.grad_fn)
    y.sum().backward()
    assert log == ["saved", "pack", "pack", "applied", "unpack", "unpack", "first access",
                   "unpack", "unpack"]
    np.testing.assert_array_equal(values(x.grad), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("torch", LIBS)
def test_unpack_runs_in_the_backwards_grad_mode_and_retain_graph_unpacks_again(torch):
    modes = []
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(
            lambda t: t, lambda t: modes.append(torch.is_grad_enabled()) or t):
        y = (x.sin() * x).sum()
    torch.autograd.grad(y, x, retain_graph=True)
    torch.autograd.grad(y, x, create_graph=True)
    assert modes == [False] * 3 + [True] * 3


@pytest.mark.parametrize("torch", LIBS)
def test_a_tensor_packed_as_a_copy_gives_the_double_backward_of_the_original(torch):
    x = torch.tensor([0.3, -1.2, 2.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = (x.sin() * x.exp()).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    xs = values(x)
    want = 2 * np.cos(xs) * np.exp(xs)  # d2/dx2 sin(x) e^x
    np.testing.assert_allclose(values(gg), want, rtol=1e-5)


@pytest.mark.parametrize("torch", LIBS)
def test_a_copy_made_by_pack_survives_an_in_place_change_of_the_original(torch):
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        h = x * 1
        y = h.sin().sum()
    with torch.no_grad():
        h.add_(1)  # the graph kept a copy: backward still uses the old h
    y.backward()
    np.testing.assert_allclose(values(x.grad), np.cos([0.5, 1.0]), rtol=1e-6)


@pytest.mark.parametrize("torch", LIBS)
def test_unpack_must_return_a_tensor(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: None, lambda packed: packed):
        y = x.sin().sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of "
                                        "type NoneType"):
        y.backward()


@pytest.mark.parametrize("torch", LIBS)
def test_pack_may_not_change_its_input_in_place(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
        h = x * 1
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            h.sin()


def test_an_unpacked_tensor_of_another_shape_or_dtype_is_refused_naming_the_op():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    for wrong, what in ((kit.zeros(5), "shape \\[5\\], dtype float32"),
                        (kit.zeros(2, dtype=kit.float64), "shape \\[2\\], dtype float64")):
        with kit.saved_tensors.saved_tensors_hooks(lambda t: t, lambda t, w=wrong: w):
            y = x.sin().sum()
        with pytest.raises(RuntimeError, match=f"unpack_hook returned a tensor of {what} on cpu "
                                               f"for one that SinBackward0 saved with shape "
                                               f"\\[2\\], dtype float32"):
            y.backward()


def test_identity_hooks_keep_the_in_place_check_that_pytorch_drops():
    """PyTorch skips the version check once hooks are set: with identity hooks an in-place
    change of a saved output gives a wrong gradient silently (zeros here). kit still checks
    a tensor that unpack gives back unchanged."""
    x = kit.tensor([0.5, 1.0], requires_grad=True)
    with kit.saved_tensors.saved_tensors_hooks(lambda t: t, lambda t: t):
        e = x.exp()
    with kit.no_grad():
        e.mul_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*ExpBackward0 and "
                                           "given back unchanged by unpack_hook"):
        e.sum().backward()


def test_pytorch_drops_the_in_place_check_under_identity_hooks():
    torch = pytest.importorskip("torch")
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        e = x.exp()
    with torch.no_grad():
        e.mul_(0)
    e.sum().backward()
    np.testing.assert_array_equal(values(x.grad), [0.0, 0.0])  # wrong: e^x was expected


def test_a_pack_hook_that_saves_under_its_own_hooks_is_refused():
    """PyTorch recurses until RecursionError; kit says why at the first nested save."""
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    first = [True]

    def pack(t):
        if first.pop() if first else False:
            with kit.enable_grad():
                t.detach().requires_grad_().sin()  # saves a tensor: packed by this same hook
        return t

    with kit.saved_tensors.saved_tensors_hooks(pack, lambda t: t):
        with pytest.raises(RuntimeError, match="pack hook saved a tensor for backward under "
                                               "its own hooks"):
            x.sin()
        y = x.exp()  # the hooks still work after the error
    assert type(y.grad_fn.saved_values()[0]) is SavedTensor
    assert kit.is_grad_enabled()


def test_hooks_stay_active_inside_an_unpack_hook():
    log = []

    def unpack(t):
        log.append("unpack")
        with kit.enable_grad():
            t.detach().requires_grad_().sin()
        return t

    x = kit.tensor([1.0, 2.0], requires_grad=True)
    with kit.saved_tensors.saved_tensors_hooks(lambda t: log.append("pack") or t, unpack):
        y = x.sin().sum()
        log.clear()
        y.backward()
    assert log == ["unpack", "pack"]  # as PyTorch


def test_hooks_are_per_thread():
    packed = []
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    other = []
    worker = threading.Thread(target=lambda: other.append(x.sin().grad_fn.saved_values()))
    with kit.saved_tensors.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        worker.start()
        worker.join()
    assert packed == [] and isinstance(other[0][0], kit.Tensor)


def test_saved_values_show_what_was_packed_without_unpacking_it():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    unpacked = []
    with kit.saved_tensors.saved_tensors_hooks(lambda t: "a ticket",
                                               lambda p: unpacked.append(p) or x):
        y = x * x
    (name_a, a), (name_b, b) = y.grad_fn.saved_items()
    assert (name_a, name_b) == ("a", "b") and type(a) is SavedTensor
    assert (a.packed, a.shape, a.dtype, a.device, a.requires_grad) == (
        "a ticket", (2,), kit.float32, "cpu", True)
    assert "SavedTensor(shape=[2], dtype=float32, packed=str)" == repr(a)
    assert unpacked == []
    d = kit.viz.draw_graph(y, show_saved=True)
    assert sum(1 for n in d.nodes if n["label"].startswith("saved (packed)")) == 2


def test_saved_items_name_what_each_op_keeps():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    w = kit.tensor([3.0, 4.0])
    assert [n for n, _ in x.sin().grad_fn.saved_items()] == ["x"]
    ((name, out),) = x.exp().grad_fn.saved_items()
    assert name == "output" and isinstance(out, np.ndarray)
    (a, none), (b, kept) = (x * w).grad_fn.saved_items()
    assert (a, none, b, kept is w) == ("a", None, "b", True)  # x is not needed for w's gradient
    y = x * 3
    y.sum().backward()
    assert y.grad_fn.saved_items() == ()  # released after backward


def test_a_functions_saved_items_are_its_saved_tensors():
    class Square(kit.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = kit.tensor([1.0, 2.0], requires_grad=True)
    ((name, value),) = Square.apply(x).grad_fn.saved_items()
    assert name == "saved_tensors[0]" and value is x


def test_save_on_cpu_makes_no_reference_cycle():
    x = kit.tensor([0.5, -1.0], requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        with ktorch.autograd.graph.save_on_cpu():
            y = x.exp()  # exp keeps its output
        alive = weakref.ref(y)
        del y
        assert alive() is None  # freed by reference counting, no cycle through the node
    finally:
        gc.enable()


@pytest.mark.parametrize("torch", LIBS)
def test_save_on_cpu_on_the_cpu_gives_the_same_gradients(torch):
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with torch.autograd.graph.save_on_cpu():
        y = (x.exp() * x.sin()).sum()
    y.backward()
    xs = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(values(x.grad), np.exp(xs) * (np.sin(xs) + np.cos(xs)), rtol=1e-6)


def test_save_on_cpu_keeps_gpu_tensors_in_host_memory_and_brings_them_back():
    with fake_cupy.installed():
        x = kit.tensor([0.5, -1.0, 2.0], device="gpu", requires_grad=True)
        with ktorch.autograd.graph.save_on_cpu(pin_memory=True):
            y = x.exp()
            z = (y * x).sum()
        device, kept = y.grad_fn.saved_values()[0].packed
        assert (device, kept.device) == ("gpu", "cpu")
        z.backward()
        assert x.grad.device == "gpu"
        xs = np.array([0.5, -1.0, 2.0])
        np.testing.assert_allclose(np.asarray(x.grad._data), np.exp(xs) * (xs + 1), rtol=1e-6)


def test_the_modules_examples_run():
    for module in (kit.saved_tensors, kit.checkpoint, ktorch.autograd.graph,
                   ktorch.utils.checkpoint):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
