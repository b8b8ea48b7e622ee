"""PyTorch's semantics at the edges of shapes, reductions and sorting (issue 11), each run on
kit.torch and, where installed, on PyTorch: dim=[] and repeated dims, empty tensors, NaN in sorts
and in gradients, and a sweep of every reduction over empty tensors and bad dims in which no raw
NumPy message may reach the user."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from helpers import compare_torch

import kit
from tests.torch_oracle import libraries

LIBS = libraries()
NAN, INF = float("nan"), float("inf")


def values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


# --- shapes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("torch", LIBS)
def test_shape_misuse_raises_pytorchs_classes(torch):
    with pytest.raises(RuntimeError, match="leading, non-existing dimension|new leading"):
        torch.ones(3).expand(-1, 3)
    assert torch.ones(3).expand(2, -1).shape == (2, 3)
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 dimensions"):
        torch.ones(2, 3, 4).t()
    assert torch.ones(3).t().shape == (3,) and torch.ones(2, 3).t().shape == (3, 2)
    for call in (lambda x: x.reshape(2.5, 2), lambda x: x.reshape((2.5, 2)),
                 lambda x: x.reshape(True, 4), lambda x: x.view(2.0, 2),
                 lambda x: x.permute(0.0,), lambda x: x.expand(2.0, 4)):
        with pytest.raises(TypeError):
            call(torch.ones(4))
    assert torch.ones(4).reshape(np.int64(2), 2).shape == (2, 2)
    with pytest.raises(RuntimeError, match="invalid for input of size"):
        torch.ones(2, 3).reshape(4, 2)
    with pytest.raises(IndexError):
        torch.ones(2, 3).permute(0, 3)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).permute(0, 0)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).expand(3)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).flatten(1, 0)


# --- dims of reductions ---------------------------------------------------------------------------
@pytest.mark.parametrize("torch", LIBS)
def test_dim_list_empty_reduces_every_dim(torch):
    x = torch.tensor([[1.0, 5.0, 2.0], [3.0, -1.0, 4.0]], requires_grad=True)
    for name, want in (("sum", 14.0), ("mean", 14.0 / 6), ("amax", 5.0), ("amin", -1.0)):
        for dim in ([], ()):
            out = getattr(x, name)(dim=dim)
            assert out.shape == () and values(out) == pytest.approx(want), name
            out = getattr(torch, name)(x, dim, keepdim=True)
            assert out.shape == (1, 1), name
    s = torch.sum(x, dim=[])
    s.backward()
    assert values(x.grad).tolist() == [[1.0] * 3] * 2
    for t in (torch.tensor(2.0), torch.ones(0, 3)):  # PyTorch's logsumexp(dim=[]) on these
        np.testing.assert_allclose(values(torch.logsumexp(t, dim=[])), values(t.sum()) if
                                   t.ndim == 0 else -np.inf)


def test_logsumexp_dim_empty_reduces_every_dim_of_any_tensor():
    """PyTorch 2.13 raises an internal shape error ("output with shape [] doesn't match the
    broadcast shape [1, 1]") for an n-d non-empty tensor; kit reduces every dim, as PyTorch does
    for 0-d and empty ones (the note in kit/ops/reductions.py)."""
    import kit.torch as torch

    x = torch.tensor([[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_allclose(values(torch.logsumexp(x, dim=[])),
                               np.log(np.exp([0.0, 1.0, 2.0, 3.0]).sum()), rtol=1e-6)


@pytest.mark.parametrize("torch", LIBS)
def test_repeated_and_negative_dims(torch):
    x = torch.ones(2, 3)
    for call in (lambda: x.sum(dim=(0, 0)), lambda: x.sum(dim=(0, -2)), lambda: x.mean((1, -1)),
                 lambda: x.amax((1, -1)), lambda: torch.logsumexp(x, (1, -1)),
                 lambda: torch.tensor(1.0).sum(dim=(0, -1))):
        with pytest.raises(RuntimeError, match="appears multiple times"):
            call()
    assert x.sum(dim=(-1, 0)).shape == () and x.sum(-2).shape == (3,)
    for call in (lambda: x.sum(-3), lambda: x.argmax(2), lambda: x.max(dim=2),
                 lambda: x.softmax(-3), lambda: x.sort(dim=2), lambda: x.cumsum(5)):
        with pytest.raises(IndexError, match="out of range"):
            call()
    for call in (lambda: x.max(dim=(0, 1)), lambda: x.argmax(dim=[]), lambda: x.sort(dim=[0]),
                 lambda: x.softmax(dim=[1]), lambda: x.cumsum([]), lambda: x.topk(1, dim=())):
        with pytest.raises(TypeError):
            call()


# --- empty tensors --------------------------------------------------------------------------------
@pytest.mark.parametrize("torch", LIBS)
def test_empty_tensors_give_pytorchs_empty_results(torch):
    e = torch.ones(0, 3)
    assert torch.softmax(e, dim=0).shape == (0, 3) and torch.log_softmax(e, dim=1).shape == (0, 3)
    assert values(torch.logsumexp(e, dim=0)).tolist() == [-INF] * 3
    assert torch.logsumexp(e, dim=1).shape == (0,)
    assert np.isnan(values(e.mean())) and values(e.mean(0)).shape == (3,)
    assert values(e.sum()) == 0.0
    v, i = e.max(dim=1)
    assert v.shape == i.shape == (0,) and i.dtype == torch.int64
    assert e.argmax(dim=1).shape == (0,) and e.amax(dim=1).shape == (0,)
    assert torch.sort(torch.ones(0)).values.shape == (0,)
    assert torch.msort(torch.ones(0)).shape == (0,)
    assert torch.topk(torch.ones(0), 0).values.shape == (0,)


@pytest.mark.parametrize("torch", LIBS)
def test_the_max_of_nothing_raises_pytorchs_classes(torch):
    e = torch.ones(0, 3)
    for call in (e.max, e.min, e.amax, e.amin, lambda: e.amax(dim=[])):
        with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
            call()
    for call in (e.argmax, e.argmin, lambda: e.max(dim=0), lambda: e.argmin(0),
                 lambda: e.amax(dim=(0, 1))):
        with pytest.raises(IndexError, match="non-zero size|numel\\(\\) == 0"):
            call()


@pytest.mark.parametrize("torch", LIBS)
def test_empty_tensors_print_as_pytorch(torch):
    want = {(0,): "tensor([])", (0, 3): "tensor([], size=(0, 3))"}
    for shape, text in want.items():
        assert repr(torch.ones(shape)) == text
    assert repr(torch.ones(0, dtype=torch.int64)).endswith("int64)")


# --- sorting --------------------------------------------------------------------------------------
@pytest.mark.parametrize("torch", LIBS)
def test_sort_places_nan_as_the_largest_value(torch):
    x = torch.tensor([1.0, NAN, 0.0, NAN, -INF, INF])
    down = torch.sort(x, descending=True)
    assert np.isnan(values(down.values[:2])).all()
    assert values(down.values[2:]).tolist() == [INF, 1.0, 0.0, -INF]
    assert down.indices.tolist() == [1, 3, 5, 0, 2, 4]
    up = torch.sort(x)
    assert up.indices.tolist() == [4, 2, 0, 5, 1, 3]
    assert torch.argsort(x, descending=True, stable=True).tolist() == [1, 3, 5, 0, 2, 4]
    top = torch.topk(x, 3)
    assert top.indices.tolist() == [1, 3, 5]
    assert torch.topk(x, 3, largest=False).indices.tolist() == [4, 2, 0]


@pytest.mark.parametrize("torch", LIBS)
def test_sort_of_integers_and_bool_descending_and_stable(torch):
    low = -(2**63)
    assert torch.sort(torch.tensor([0, low, 5]), descending=True).values.tolist() == [5, 0, low]
    u = torch.tensor([0, 200, 5], dtype=torch.uint8)
    assert torch.sort(u, descending=True).values.tolist() == [200, 5, 0]
    b = torch.tensor([True, False, True])
    assert torch.sort(b).indices.tolist() == [1, 0, 2]
    assert torch.sort(b, descending=True, stable=True).indices.tolist() == [0, 2, 1]
    ties = torch.tensor([1, 0, 1, 0, 2, 1, 0] * 40)
    for descending in (False, True):
        got = torch.sort(ties, stable=True, descending=descending).indices.tolist()
        order = sorted(range(len(got)), key=lambda i: (-ties[i].item() if descending else
                                                       ties[i].item(), i))
        assert got == order
    m = torch.tensor([[3, 1], [2, 4]])
    assert m.sort(dim=0, descending=True).values.tolist() == [[3, 4], [2, 1]]
    assert torch.msort(m).tolist() == [[2, 1], [3, 4]]


def test_sort_gradients_follow_the_values_with_nan():
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, np.nan, 0.5], [2.0, -1.0, 2.0]])
    compare_torch(lambda t: kit.sort(t, 1, True).values * kit.tensor([[1.0, 2.0, 3.0]]),
                  lambda t: torch.sort(t, 1, True).values * torch.tensor([[1.0, 2.0, 3.0]]), x)


# --- NaN and infinity in values and gradients -----------------------------------------------------
def test_nan_and_inf_gradients_match_pytorch():
    """The three differences the differential programs found: softmax over infinities, the
    gradient of max() next to a NaN, maximum/minimum where the incoming gradient is inf.
    (NumPy warns where inf - inf makes a NaN; PyTorch is silent: a known difference, see
    tests/test_differential.py.)"""
    torch = pytest.importorskip("torch")
    with np.errstate(invalid="ignore"):
        _nan_and_inf_gradients(torch)


def _nan_and_inf_gradients(torch):
    compare_torch(lambda x: kit.softmax(x, -1), lambda x: torch.softmax(x, -1),
                  np.array([[INF, 1.0, INF], [-INF, -INF, -INF], [0.0, 1.0, -INF]]))
    compare_torch(lambda x: kit.log_softmax(x, 0), lambda x: torch.log_softmax(x, 0),
                  np.array([INF, 1.0, 2.0]))
    compare_torch(lambda x: (kit.max(x).cos() + x).sum(), lambda x: (x.max().cos() + x).sum(),
                  np.array([0.5, 0.5, np.nan]))
    compare_torch(lambda x: (kit.max(x, 1).values * NAN).sum() + x.sum(),
                  lambda x: (x.max(1).values * NAN).sum() + x.sum(),
                  np.array([[1.0, 3.0], [2.0, 0.0]]))
    for op in ("maximum", "minimum"):
        compare_torch(lambda a, b, op=op: getattr(kit, op)(a, b) * kit.tensor([INF, 1.0, NAN]),
                      lambda a, b, op=op: getattr(torch, op)(a, b) * torch.tensor([INF, 1.0, NAN]),
                      np.array([1.0, 2.0, 3.0]), np.array([0.5, 2.0, 4.0]))
    compare_torch(lambda x: kit.amax(x, 1), lambda x: torch.amax(x, 1),
                  np.array([[1.0, 3.0, 3.0], [-2.0, np.nan, -2.0], [0.5, 0.5, 0.5]]))


# --- the sweep: every reduction, empty tensors and bad dims, no NumPy message ---------------------
REDUCTIONS = {
    "sum": lambda T, x, d: x.sum(**d), "mean": lambda T, x, d: x.mean(**d),
    "amax": lambda T, x, d: x.amax(**d), "amin": lambda T, x, d: x.amin(**d),
    "max": lambda T, x, d: x.max(**d), "min": lambda T, x, d: x.min(**d),
    "argmax": lambda T, x, d: x.argmax(**d), "argmin": lambda T, x, d: x.argmin(**d),
    "logsumexp": lambda T, x, d: T.logsumexp(x, **d),
    "softmax": lambda T, x, d: T.softmax(x, **d),
    "log_softmax": lambda T, x, d: T.log_softmax(x, **d),
    "prod": lambda T, x, d: x.prod(**d), "all": lambda T, x, d: x.all(**d),
    "any": lambda T, x, d: x.any(**d), "cumsum": lambda T, x, d: x.cumsum(**d),
    "sort": lambda T, x, d: x.sort(**d), "argsort": lambda T, x, d: x.argsort(**d),
    "topk": lambda T, x, d: x.topk(1, **d), "norm": lambda T, x, d: x.norm(**d),
}
SHAPES = [(0, 3), (0,), (2, 0), (), (2, 3)]
DIMS = [{"dim": 0}, {"dim": 1}, {"dim": -1}, {"dim": 2}, {"dim": []}, {"dim": (0, 0)},
        {"dim": (0, 1)}, {}]
RAW_NUMPY = ("zero-size array", "tuple index out of range", "axis ", "AxisError",
             "out of bounds for array", "attempt to get arg")
# Known and kept, each with its reason:
KNOWN = {
    # PyTorch checks the size of a repeated dim first (IndexError); kit checks the repetition
    # first (RuntimeError, PyTorch's class for it on any non-empty tensor).
    ("amax", (0, 3), "(0, 0)"), ("amin", (0, 3), "(0, 0)"),
    ("amax", (0,), "(0, 0)"), ("amin", (0,), "(0, 0)"),
    # see test_logsumexp_dim_empty_reduces_every_dim_of_any_tensor
    ("logsumexp", (2, 3), "[]"),
    # norm's dim=[] (PyTorch: every dim) is issue 12's (kit/ops/extra.py)
    ("norm", (0, 3), "[]"), ("norm", (0,), "[]"), ("norm", (2, 0), "[]"), ("norm", (2, 3), "[]"),
}


def _outcome(lib, name, shape, dims):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's var/std warnings
            out = REDUCTIONS[name](lib, lib.ones(shape), dims)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome
        return exc
    outs = out if isinstance(out, tuple) else (out,)
    return [(tuple(t.shape), str(t.dtype).split(".")[-1], values(t).tolist()) for t in outs]


def _builtin_class(exc):
    return next(c for c in type(exc).__mro__ if c.__module__ == "builtins")


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_over_empty_tensors_and_bad_dims(name):
    import kit.torch as kt

    try:
        import torch
    except ImportError:
        torch = None
    for shape, dims in itertools.product(SHAPES, DIMS):
        key = (name, shape, str(dims.get("dim")))
        ours = _outcome(kt, name, shape, dims)
        if isinstance(ours, Exception):
            message = f"{type(ours).__name__}: {ours}"
            assert not any(raw in message for raw in RAW_NUMPY), (key, message)
            named = str(ours).startswith(("kit", "mx.nd")) or "argument" in str(ours)
            assert named, (key, message)
        if torch is None or key in KNOWN:
            continue
        theirs = _outcome(torch, name, shape, dims)
        if isinstance(theirs, Exception):
            assert isinstance(ours, _builtin_class(theirs)), (key, ours, theirs)
        else:
            assert not isinstance(ours, Exception), (key, ours, theirs)
            for (s1, d1, v1), (s2, d2, v2) in zip(ours, theirs, strict=True):
                assert (s1, d1) == (s2, d2), key
                np.testing.assert_allclose(v1, v2, rtol=1e-6, err_msg=str(key))


def test_kit_errors_in_the_sweep_keep_kits_earlier_classes():
    """The new PyTorch classes derive from the ones kit raised before, so old `except` clauses
    still work."""
    x = kit.ones(2, 3)
    with pytest.raises(ValueError):
        x.sum((0, 0))  # now also a RuntimeError
    with pytest.raises(ValueError):
        kit.max(x, (0, 1))  # now also a TypeError
    with pytest.raises(ValueError):
        x.permute(0, 3)  # now also an IndexError


@pytest.mark.parametrize("fn", [
    lambda t: kit.softmax(t[0], 0), lambda t: t.argmax(keepdim=True), lambda t: t.sum(dim=[]),
    lambda t: t.amax(dim=[]), lambda t: kit.log_softmax(t, -1),
    lambda t: t.sort(descending=True).values, lambda t: t.argsort(dim=0, descending=True),
], ids=["softmax-0d", "argmax-keepdim", "sum-dims-empty", "amax-dims-empty", "log_softmax",
        "sort-down", "argsort-down"])
def test_vmap_of_the_edges_matches_a_loop(fn):
    from kit.func import vmap

    x = kit.tensor([[[1.0, NAN, 0.0], [2.0, 2.0, -1.0]], [[0.5, 3.0, 3.0], [-INF, 1.0, 0.0]]])
    with np.errstate(invalid="ignore"):
        got = vmap(fn)(x)
        loop = np.stack([values(fn(x[k])) for k in range(2)])
    np.testing.assert_array_equal(values(got), loop)


@pytest.mark.parametrize("torch", LIBS)
def test_where_with_nan_on_the_unused_side(torch):
    """The naive where(x > 0, sqrt(x), 0) has a NaN gradient at x < 0 (0 * inf... the unused
    side's NaN comes back through sqrt), in PyTorch as in kit; the double where keeps it
    finite."""
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    with np.errstate(invalid="ignore"):
        torch.where(x > 0, torch.sqrt(x), torch.zeros(2)).sum().backward()
    assert np.isnan(values(x.grad)[0]) and values(x.grad)[1] == 0.25
    x.grad = None
    safe = torch.where(x > 0, x, torch.ones(2))
    torch.where(x > 0, torch.sqrt(safe), torch.zeros(2)).sum().backward()
    assert values(x.grad).tolist() == [0.0, 0.25]


def test_mx_reductions_take_axis_empty_as_every_axis():
    """MXNet's reductions default to axis=(), which means every axis (a (1,) result)."""
    import kit.mx as mx

    x = mx.nd.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert mx.nd.sum(x, axis=()).asnumpy().tolist() == [21.0]
    assert mx.nd.mean(x, axis=[], keepdims=True).shape == (1, 1)
    assert mx.nd.max(x, axis=()).asnumpy().tolist() == [6.0]


@pytest.mark.parametrize("torch", LIBS)
def test_true_division_of_integers_uses_their_own_values(torch):
    """uint8 / 300 and int64 0-d / uint8 are computed in float32 from each operand's value
    (the promoted integer dtype, uint8, would wrap 300 to 44 and 570 to 58)."""
    u = torch.tensor([64, 255], dtype=torch.uint8)
    np.testing.assert_allclose(values(torch.tensor(570) / u), [570 / 64, 570 / 255], rtol=1e-6)
    np.testing.assert_allclose(values(u / 300), [64 / 300, 255 / 300], rtol=1e-6)
    np.testing.assert_allclose(values(u / torch.tensor(300)), [64 / 300, 255 / 300], rtol=1e-6)
    assert (u / u).dtype == torch.float32
    assert (torch.tensor(570) < u).tolist() == [True, True]  # comparisons do wrap (570 -> 58)


@pytest.mark.parametrize("torch", LIBS)
def test_sums_of_integers_are_int64(torch):
    for dtype in (torch.uint8, torch.int8, torch.int32, torch.bool):
        s = torch.ones(3, dtype=dtype).sum()
        assert s.dtype == torch.int64 and s.item() == 3
    assert torch.tensor([200, 100], dtype=torch.uint8).sum().item() == 300
