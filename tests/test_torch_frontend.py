"""`import kit.torch as torch`: the namespace, dtypes, grad modes and Tensor methods lessons use.

Functions and methods are checked three ways: the forward against a NumPy formula, the gradient
against finite differences (kit.gradcheck, float64) and both against real PyTorch when installed.
Behaviour tests run on kit.torch and on real PyTorch with the same code.
"""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pytest
from torch_oracle import libraries

import kit
import kit.torch

RNG = np.random.default_rng(0)
A = RNG.uniform(-2, 2, (3, 4))
B = RNG.uniform(-2, 2, (4, 2))
C = RNG.uniform(-2, 2, (3, 4))
V = RNG.uniform(-2, 2, 4)
W = RNG.uniform(-2, 2, 4)
POS = RNG.uniform(0.5, 2, (3, 4))
LABELS = np.array([2, 0, 3])


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# name: (expression on `torch` and the inputs, input arrays, NumPy reference)
CASES = {
    "dot": (lambda t, v, w: t.dot(v, w), (V, W), lambda v, w: v @ w),
    "mm": (lambda t, a, b: t.mm(a, b), (A, B), lambda a, b: a @ b),
    "matmul": (lambda t, a, b: t.matmul(a, b), (A, B), lambda a, b: a @ b),
    "exp": (lambda t, a: t.exp(a), (A,), np.exp),
    "log": (lambda t, a: t.log(a), (POS,), np.log),
    "tanh": (lambda t, a: t.tanh(a), (A,), np.tanh),
    "sigmoid": (lambda t, a: t.sigmoid(a), (A,), lambda a: 1 / (1 + np.exp(-a))),
    "relu": (lambda t, a: t.relu(a), (A,), lambda a: np.maximum(a, 0)),
    "sum_dim": (lambda t, a: t.sum(a, dim=1), (A,), lambda a: a.sum(1)),
    "mean_keepdim": (lambda t, a: t.mean(a, 0, keepdim=True), (A,),
                     lambda a: a.mean(0, keepdims=True)),
    "max_all": (lambda t, a: t.max(a), (A,), np.max),
    "max_dim": (lambda t, a: t.max(a, dim=1).values, (A,), lambda a: a.max(1)),
    "max_pair": (lambda t, a, c: t.max(a, c), (A, C), np.maximum),
    "clamp": (lambda t, a: t.clamp(a, min=-0.5, max=1.0), (A,), lambda a: np.clip(a, -0.5, 1.0)),
    "where": (lambda t, a, c: t.where(a > c, a, c), (A, C), np.maximum),
    "cat": (lambda t, a, c: t.cat([a, c], dim=1), (A, C), lambda a, c: np.concatenate([a, c], 1)),
    "stack": (lambda t, a, c: t.stack((a, c), dim=1), (A, C), lambda a, c: np.stack([a, c], 1)),
    "sort": (lambda t, a: t.sort(a, dim=0, descending=True).values, (A,),
             lambda a: -np.sort(-a, axis=0)),
    "softmax": (lambda t, a: t.softmax(a, dim=1), (A,), lambda a: _softmax(a, 1)),
    "logsumexp": (lambda t, a: t.logsumexp(a, dim=1), (A,),
                  lambda a: np.log(np.exp(a).sum(1))),
    "F.log_softmax": (lambda t, a: t.nn.functional.log_softmax(a, dim=1), (A,),
                      lambda a: np.log(_softmax(a, 1))),
    "F.cross_entropy": (lambda t, a: t.nn.functional.cross_entropy(a, t.tensor(LABELS)), (A,),
                        lambda a: -np.log(_softmax(a, 1))[np.arange(3), LABELS].mean()),
    "F.mse_loss": (lambda t, a, c: t.nn.functional.mse_loss(a, c), (A, C),
                   lambda a, c: ((a - c) ** 2).mean()),
    "F.relu": (lambda t, a: t.nn.functional.relu(a), (A,), lambda a: np.maximum(a, 0)),
    "t_mm": (lambda t, a, c: a.t().mm(c), (A, C), lambda a, c: a.T @ c),
    "methods": (lambda t, a: a.clamp(min=0).exp().sum(1).unsqueeze(0).mean(dim=1), (A,),
                lambda a: np.exp(np.maximum(a, 0)).sum(1).mean(keepdims=True)),
    "expand_as": (lambda t, v, a: v.unsqueeze(0).expand_as(a) * a, (V, A), lambda v, a: v * a),
    "clone_sort": (lambda t, a: a.clone().sort(dim=1)[0], (A,), lambda a: np.sort(a, 1)),
    "index_add": (lambda t, a, c: t.index_add(a, 0, t.tensor([2, 0, 2]), c), (A, C),
                  lambda a, c: a + np.stack([c[1], 0 * c[0], c[0] + c[2]])),
}


def leaves(torch, arrays):
    return [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]


@pytest.mark.parametrize("name", sorted(CASES))
def test_function_forward_and_gradient(name):
    fn, arrays, reference = CASES[name]
    xs = leaves(kit.torch, arrays)
    np.testing.assert_allclose(fn(kit.torch, *xs).detach().numpy(), reference(*arrays),
                               rtol=1e-12, atol=1e-12)
    assert kit.torch.autograd.gradcheck(lambda *ts: fn(kit.torch, *ts), tuple(xs))


@pytest.mark.parametrize("name", sorted(CASES))
def test_function_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    fn, arrays, _ = CASES[name]
    results = []
    for lib in (kit.torch, torch):
        xs = leaves(lib, arrays)
        y = fn(lib, *xs)
        (y * lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum().backward()
        results.append([y.detach().numpy()] + [x.grad.numpy() for x in xs])
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# --- dtypes, creation, devices ----------------------------------------------------------------

def test_dtypes_print_as_pytorch_and_equal_kits():
    torch = kit.torch
    assert repr(torch.float32) == "torch.float32" and str(torch.double) == "torch.float64"
    assert torch.float32 == kit.float32 and kit.float32 == torch.float32
    assert torch.float == torch.float32 and torch.long == torch.int64 and torch.bool != torch.int8
    assert {kit.float64: "double"}[torch.float64] == "double"
    assert torch.float64.is_floating_point and not torch.int64.is_floating_point
    assert np.zeros(2, dtype=torch.float16).dtype == np.float16


@pytest.mark.parametrize("torch", libraries())
@pytest.mark.parametrize("name", ["float16", "float32", "float64", "int8", "int16", "int32",
                                  "int64", "uint8", "bool"])
def test_dtype_properties(torch, name):
    dt = getattr(torch, name)
    flags = (dt.is_floating_point, dt.is_complex, dt.is_signed, dt.itemsize)
    assert flags == (name.startswith("float"), False, name[0] in "fi", np.dtype(name).itemsize)


@pytest.mark.parametrize("torch", libraries())
def test_creation_dtypes(torch):
    assert torch.tensor([1.0, 2.0]).dtype == torch.float32
    assert torch.tensor([1, 2]).dtype == torch.int64
    assert torch.tensor(np.array([1.0])).dtype == torch.float64
    assert torch.tensor([1.0], dtype=torch.float64).dtype == torch.float64
    assert torch.arange(3).dtype == torch.int64 and torch.arange(3.0).dtype == torch.float32
    assert torch.zeros(2, 3, dtype=torch.int64).shape == (2, 3)
    assert torch.ones((2,)).dtype == torch.float32
    x = torch.randn(2, 3, dtype=torch.double, requires_grad=True)
    assert x.dtype == torch.float64 and x.requires_grad and x.size() == (2, 3) and x.size(1) == 3
    assert torch.zeros_like(x).dtype == torch.float64 and torch.ones_like(x).sum().item() == 6.0
    assert x.to(torch.float32).dtype == torch.float32 and x.float().double().dtype == x.dtype
    assert torch.tensor([1.0]).device == torch.device("cpu")


@pytest.mark.parametrize("torch", libraries())
def test_as_tensor_shares_when_it_can(torch):
    a = np.arange(3.0)
    t = torch.as_tensor(a)
    a[0] = 7.0
    assert t.tolist() == [7.0, 1.0, 2.0] and t.dtype == torch.float64
    assert torch.as_tensor(t) is t
    assert torch.as_tensor(t, dtype=torch.float32).dtype == torch.float32
    assert torch.as_tensor([1, 2]).dtype == torch.int64


def test_from_numpy_shares_memory_and_manual_seed_repeats():
    torch = kit.torch
    a = np.arange(3.0)
    t = torch.from_numpy(a)
    a[0] = 7.0
    assert t.tolist() == [7.0, 1.0, 2.0] and t.dtype == torch.float64
    torch.manual_seed(3)
    first = torch.randn(4)
    torch.manual_seed(3)
    assert torch.equal(first, torch.randn(4)) and not torch.equal(first, torch.randn(4))


def test_device_and_cuda():
    torch = kit.torch
    assert torch.device("cuda") == "gpu" and torch.device("cuda:0").type == "gpu"
    assert repr(torch.device("cpu")) == "device(type='cpu')"
    assert torch.cuda.is_available() == kit.backend.gpu_available()
    torch.cuda.synchronize()


# --- comparisons --------------------------------------------------------------------------

@pytest.mark.parametrize("torch", libraries())
def test_allclose_equal_isclose(torch):
    a = torch.tensor([1.0, 2.0, 3.0])
    assert torch.allclose(a, a + 1e-7) and not torch.allclose(a, a + 1e-3)
    assert torch.allclose(a, a + 0.05, atol=0.1)
    assert torch.equal(a, a.clone()) and not torch.equal(a, a[:2])
    assert torch.isclose(a, torch.tensor([1.0, 2.5, 3.0])).tolist() == [True, False, True]
    with pytest.raises(RuntimeError):
        torch.allclose(a, a.double())


# --- grad modes -------------------------------------------------------------------------------

@pytest.mark.parametrize("torch", libraries())
def test_grad_modes(torch):
    x = torch.tensor([1.0], requires_grad=True)
    with torch.no_grad():
        assert not torch.is_grad_enabled() and not (x * 2).requires_grad
        with torch.enable_grad():
            assert (x * 2).requires_grad
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    torch.set_grad_enabled(False)
    assert not torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()

    @torch.no_grad()
    def step():
        return x * 2

    assert not step().requires_grad


# --- Tensor methods -------------------------------------------------------------------------

@pytest.mark.parametrize("torch", libraries())
def test_in_place_methods(torch):
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    x.add_(1).index_add_(0, torch.tensor([1, 1]), torch.ones(2, 2))
    assert x.tolist() == [[2.0, 3.0], [6.0, 7.0]]
    x.zero_()
    assert x.sum().item() == 0.0
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with torch.no_grad():
        w.add_(w.grad, alpha=-0.5)  # the SGD step of lesson code
    w.grad.zero_()
    assert w.tolist() == [0.0, 0.0] and w.grad.tolist() == [0.0, 0.0]
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    y = v.clone()
    y.sub_(v, alpha=3)  # recorded: y = v - 3 v
    torch.add(y, v, alpha=10).sum().backward()
    assert y.tolist() == [-2.0, -4.0] and v.grad.tolist() == [8.0, 8.0]


@pytest.mark.parametrize("torch", libraries())
def test_autograd_methods(torch):
    x = torch.tensor([1.0, 2.0, 3.0]).requires_grad_()
    assert x.requires_grad and x.is_leaf
    y = x * 2
    y.retain_grad()
    handle = y.register_hook(lambda g: g + 1)
    (y * y).sum().backward()
    assert y.grad.tolist() == [5.0, 9.0, 13.0] and x.grad.tolist() == [10.0, 18.0, 26.0]
    handle.remove()
    d = y.detach()
    assert not d.requires_grad and d.numpy().tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(RuntimeError, match="Use tensor.detach"):
        y.numpy()
    assert y.sum().item() == 12.0 and x.dtype == torch.float32 and x.shape == (3,)


# --- import paths -----------------------------------------------------------------------------

def test_pytorch_import_paths():
    import kit.torch.nn.functional as F  # noqa: N812 - PyTorch's convention
    from kit.torch.autograd import Function, backward, grad, gradcheck, gradgradcheck
    from kit.torch.autograd.function import FunctionCtx, once_differentiable

    assert Function is kit.Function and FunctionCtx is kit.FunctionCtx
    assert once_differentiable is kit.once_differentiable
    assert (grad, backward, gradcheck, gradgradcheck) == (
        kit.grad, kit.backward, kit.gradcheck, kit.gradgradcheck)
    assert F is kit.torch.nn.functional and isinstance(kit.torch.tensor(1.0), kit.torch.Tensor)


def test_torch_func_is_kit_func():
    func = pytest.importorskip("kit.func")
    if not hasattr(func, "vmap"):
        pytest.skip("kit.func is not built yet")
    import kit.torch.func

    assert kit.torch.func.vmap is func.vmap and kit.torch.func.grad is func.grad
    assert kit.torch.func is kit.torch.__getattr__("func")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        kit.torch.nope  # noqa: B018


# --- lessons 03 and 03b are PyTorch code --------------------------------------------------------

@pytest.mark.parametrize("name", ["03_custom_ops_pytorch_style.ipynb",
                                  "03b_autograd_function_reference.ipynb"])
def test_lesson_runs_unchanged_on_pytorch(name):
    """Swap the lesson's one import for `import torch`: every cell runs and every check holds,
    except those marked "kit only" (a warning PyTorch does not give); each demonstrated error
    is raised by PyTorch too, with the exception type kit raised in the saved lesson."""
    pytest.importorskip("torch")
    nbformat = pytest.importorskip("nbformat")
    path = pathlib.Path(__file__).parents[1] / "notebooks" / name
    namespace = {}
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert sum("import kit.torch as torch" in c.source for c in cells) == 1
    ran = 0
    for i, cell in enumerate(cells):
        if "kit only" in cell.source.splitlines()[0]:
            continue
        lines = [line for line in cell.source.splitlines() if not line.startswith("%")]
        program = "\n".join(lines).replace("import kit.torch as torch", "import torch")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch's own deprecation notices
            if "raises-exception" in cell.metadata.get("tags", []):
                (kit_error,) = [o.ename for o in cell.outputs if o.output_type == "error"]
                with pytest.raises(Exception) as caught:  # noqa: B017 - compared just below
                    exec(compile(program, f"{name}-cell{i}", "exec"), namespace)
                assert type(caught.value).__name__ == kit_error, (i, caught.value)
            else:
                exec(compile(program, f"{name}-cell{i}", "exec"), namespace)
        ran += 1
    assert namespace["torch"].__name__ == "torch" and ran > 0.9 * len(cells)


@pytest.mark.parametrize("module", [
    "kit.torch", "kit.torch._dtypes", "kit.torch._functions", "kit.torch.autograd",
    "kit.torch.autograd.function", "kit.torch.nn", "kit.torch.nn.functional", "kit.torch.cuda",
    "kit.torch.linalg", "kit._creation", "kit.ops.norms", "kit.torch.autograd.functional",
    "kit.torch.autograd.variable",
])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
