"""The torch.nn API that real programs stopped on (kit/nn/functional_thresholds.py,
functional_norm_pool.py, functional_losses.py, attention.py, multihead_attention.py and their
modules) against PyTorch 2.13: values and gradients in float32 and float64, at the boundaries
(the shrink thresholds, 0, hinges exactly at 0, hidden attention rows), module reprs, parameter
registration and state-dict keys, and the exception class of each bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kit.torch as ktorch
from tests.differential import _error_class, assert_same_pairs, pair_outcomes

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of these functions")

LIBS = [ktorch, torch]
GRID = [-3.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 3.0]


def F(lib):  # noqa: N802
    return lib.nn.functional


def _tolerances(dtype):
    return (1e-10, 1e-12) if dtype == "float64" else (2e-5, 2e-6)


def _run(lib, fn, arrays, dtype, grads=None):
    """fn(lib, *tensors) on leaves made from `arrays` (floats in `dtype`, requiring grad where
    `grads` says, all floats by default); its outputs and the gradients of a weighted sum."""
    tensors = []
    for i, a in enumerate(arrays):
        a = np.asarray(a)
        if a.dtype.kind == "f":
            wanted = grads is None or grads[i]
            tensors.append(lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=wanted))
        else:
            tensors.append(lib.tensor(a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(lib, *tensors)
    outs = out if isinstance(out, tuple) else (out,)
    outs = [o for o in outs if o is not None]
    total = None
    for k, o in enumerate(outs):
        if o.requires_grad:
            w = np.cos(np.arange(o.numel()) + k).reshape(tuple(o.shape))
            term = (o * lib.tensor(w, dtype=o.dtype)).sum()
            total = term if total is None else total + term
    if total is not None:
        total.backward()
    return ([o.detach().numpy() for o in outs],
            [None if t.grad is None else t.grad.numpy() for t in tensors if t.is_floating_point()])


def _compare(fn, arrays, dtype, grads=None, what="", signs=True, rtol=None):
    (ours, our_grads), (theirs, their_grads) = (_run(lib, fn, arrays, dtype, grads)
                                                for lib in LIBS)
    rtol, atol = (rtol, 0) if rtol else _tolerances(dtype)
    assert len(ours) == len(theirs), what
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
        both = (a == 0) & (b == 0)
        assert not signs or np.array_equal(np.signbit(a[both]), np.signbit(b[both])), what
    for a, b in zip(our_grads, their_grads, strict=True):
        assert (a is None) == (b is None), what
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{what} gradient")


def _outcome(fn, lib):
    """fn(lib)'s value and dtype, or the class of what it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib)
    except Exception as e:  # noqa: BLE001 - the class is the outcome compared
        return _error_class(e)
    out = out[0] if isinstance(out, tuple) else out
    return str(out.dtype).split(".")[-1], out.detach().numpy().tolist()


def _same_outcome(fn, what=""):
    ours, theirs = (_outcome(fn, lib) for lib in LIBS)
    if isinstance(ours, str) or isinstance(theirs, str):
        assert ours == theirs, (what, ours, theirs)
    else:
        assert ours[0] == theirs[0], (what, ours, theirs)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, err_msg=what)


# --- activations ---------------------------------------------------------------------------
ACTIVATIONS = {
    "softshrink": lambda L, x: F(L).softshrink(x),
    "softshrink 1": lambda L, x: F(L).softshrink(x, 1.0),
    "softshrink 0": lambda L, x: F(L).softshrink(x, 0.0),
    "hardshrink": lambda L, x: F(L).hardshrink(x),
    "hardshrink 3": lambda L, x: F(L).hardshrink(x, 3.0),
    "threshold": lambda L, x: F(L).threshold(x, 0.5, -2.0),
    "threshold 0": lambda L, x: F(L).threshold(x, 0.0, 0.0),
    "prelu": lambda L, x: F(L).prelu(x, L.full((1,), 0.25, dtype=x.dtype)),
    "Softshrink": lambda L, x: L.nn.Softshrink(0.25)(x),
    "Hardshrink": lambda L, x: L.nn.Hardshrink(1.0)(x),
    "Threshold": lambda L, x: L.nn.Threshold(-0.5, 7.0)(x),
}
IN_PLACE = {  # on a non-leaf, so that the backward runs through the in-place write
    "relu_": lambda L, y: F(L).relu_(y), "elu_": lambda L, y: F(L).elu_(y, 0.5),
    "selu_": lambda L, y: F(L).selu_(y), "celu_": lambda L, y: F(L).celu_(y, 2.0),
    "leaky_relu_": lambda L, y: F(L).leaky_relu_(y, 0.2),
    "hardtanh_": lambda L, y: F(L).hardtanh_(y, -0.5, 1.0),
    "threshold_": lambda L, y: F(L).threshold_(y, 0.25, 9.0),
    "elu inplace": lambda L, y: F(L).elu(y, inplace=True),
    "hardswish inplace": lambda L, y: F(L).hardswish(y, inplace=True),
    "mish inplace": lambda L, y: F(L).mish(y, inplace=True),
    "silu inplace": lambda L, y: F(L).silu(y, inplace=True),
    "Threshold inplace": lambda L, y: L.nn.Threshold(0.0, 1.0, inplace=True)(y),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_values_and_gradients_are_pytorchs(name, dtype):
    # NOTE: PyTorch's softshrink gives +0.0 or -0.0 between the thresholds depending on where
    # the element lies in the tensor (its vectorised loop or its scalar tail): signs unchecked
    _compare(lambda L, x: ACTIVATIONS[name](L, x), [np.array(GRID)], dtype, what=name,
             signs="shrink" not in name.lower())
    signs = [np.signbit(F(L).softshrink(L.full((64,), -0.25), 0.5)[:32].numpy()).any()
             for L in LIBS]
    assert signs == [False, False]  # (the vectorised loop's +0.0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_spellings_write_into_the_input_as_pytorchs(name, dtype):
    def fn(L, x):
        y = x * 1
        out = IN_PLACE[name](L, y)
        assert out is y  # the very tensor, written in place
        return out

    _compare(fn, [np.array(GRID)], dtype, what=name)


@pytest.mark.parametrize("lib", LIBS, ids=["kit", "pytorch"])
def test_in_place_spellings_refuse_a_leaf_that_requires_grad(lib):
    for name in ("relu_", "elu_", "selu_", "celu_", "leaky_relu_", "hardtanh_"):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            getattr(F(lib), name)(lib.ones(2, requires_grad=True))
    x = lib.tensor([-1.0, 2.0])
    assert F(lib).threshold_(x, 0.0, 5.0) is x and x.tolist() == [5.0, 2.0]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape, weight", [((2, 3, 4), 3), ((2, 3), 3), ((2, 3, 4), 1),
                                           ((5,), 1), ((), 1)])
def test_prelu_gradients_reach_input_and_weight(shape, weight, dtype):
    x = np.linspace(-2, 2, int(np.prod(shape))).reshape(shape)
    x.flat[len(x.flat) // 2] = 0.0
    w = np.array([0.25, -0.5, 1.5][:weight])
    _compare(lambda L, a, b: F(L).prelu(a, b), [x, w], dtype, what=str(shape))


def test_integer_and_bad_inputs_of_the_activations_are_refused_as_pytorchs():
    calls = {
        "softshrink": lambda L, x: F(L).softshrink(x),
        "hardshrink": lambda L, x: F(L).hardshrink(x),
        "threshold": lambda L, x: F(L).threshold(x, 0.5, 2.5),
        "prelu": lambda L, x: F(L).prelu(x, L.ones(1)),
        "relu_": lambda L, x: F(L).relu_(x), "elu_": lambda L, x: F(L).elu_(x),
        "selu_": lambda L, x: F(L).selu_(x), "celu_": lambda L, x: F(L).celu_(x),
        "leaky_relu_": lambda L, x: F(L).leaky_relu_(x),
        "hardtanh_": lambda L, x: F(L).hardtanh_(x), "threshold_": lambda L, x: F(L).threshold_(
            x, 0.0, 1.0),
        "group_norm": lambda L, x: F(L).group_norm(x.reshape(1, 2, 2), 1),
        "rms_norm": lambda L, x: F(L).rms_norm(x, (4,)),
        "adaptive_avg_pool1d": lambda L, x: F(L).adaptive_avg_pool1d(x.reshape(1, 1, 4), 2),
        "adaptive_avg_pool2d": lambda L, x: F(L).adaptive_avg_pool2d(x.reshape(1, 1, 2, 2), 2),
        "adaptive_avg_pool2d 1": lambda L, x: F(L).adaptive_avg_pool2d(x.reshape(1, 2, 2), 1),
    }
    for name, call in calls.items():
        for dtype in ("int64", "bool"):
            _same_outcome(lambda L, call=call, dtype=dtype: call(
                L, L.tensor([1, 0, 3, -2]).to(getattr(L, dtype))), f"{name} {dtype}")
    x = [-1.0, 0.0, 2.0]
    bad = [lambda L: F(L).softshrink(L.tensor(x), -1.0),
           lambda L: F(L).prelu(L.tensor(x), L.ones(2)),
           lambda L: F(L).prelu(L.tensor([x]), L.ones(2)),
           lambda L: F(L).prelu(L.tensor(x, dtype=L.float64), L.ones(1)),
           lambda L: F(L).prelu(L.tensor(x), L.ones(1, 1)),
           lambda L: F(L).hardshrink(L.tensor(x), -1.0)]
    for i, call in enumerate(bad):
        _same_outcome(call, f"bad activation call {i}")


# --- normalisation and pooling -------------------------------------------------------------
NORMS = {
    "group_norm": (lambda L, x, w, b: F(L).group_norm(x, 2, w, b), (2, 4, 3), (4,)),
    "group_norm 4-d eps": (lambda L, x, w, b: F(L).group_norm(x, 1, w, b, eps=0.1),
                           (2, 2, 3, 2), (2,)),
    "group_norm no affine": (lambda L, x, w, b: F(L).group_norm(x, 4) + 0 * (w.sum() + b.sum()),
                             (3, 4, 5), (4,)),
    "rms_norm": (lambda L, x, w, b: F(L).rms_norm(x, (3,), w) + 0 * b.sum(), (2, 4, 3), (3,)),
    "rms_norm 2 dims eps": (lambda L, x, w, b: F(L).rms_norm(x, [4, 3], eps=1e-3)
                            + 0 * (w.sum() + b.sum()), (2, 4, 3), (4, 3)),
    "rms_norm eps None": (lambda L, x, w, b: F(L).rms_norm(x * 1e-4, (3,), w) + 0 * b.sum(),
                          (2, 4, 3), (3,)),
    "GroupNorm": (lambda L, x, w, b: L.nn.GroupNorm(2, 4).to(x.dtype)(x) + 0 * (w.sum()
                                                                                + b.sum()),
                  (2, 4, 3), (4,)),
    "RMSNorm": (lambda L, x, w, b: L.nn.RMSNorm(3).to(x.dtype)(x) + 0 * (w.sum() + b.sum()),
                (2, 4, 3), (3,)),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(NORMS))
def test_norms_values_and_gradients_are_pytorchs(name, dtype):
    fn, shape, wshape = NORMS[name]
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=shape), rng.normal(size=wshape) + 1, rng.normal(size=wshape[:1])]
    if name.startswith("rms_norm"):
        arrays[2] = np.zeros(1)
    _compare(fn, arrays, dtype, what=name)


def test_norms_errors_are_pytorchs():
    calls = [lambda L: F(L).group_norm(L.ones(2, 4, 3), 3),
             lambda L: F(L).group_norm(L.ones(4), 1),
             lambda L: F(L).group_norm(L.ones(2, 4, 3), 2, L.ones(3)),
             lambda L: F(L).group_norm(L.ones(1, 2, 1), 2),
             lambda L: L.nn.GroupNorm(3, 4),
             lambda L: F(L).rms_norm(L.ones(2, 4, 3), (4,)),
             lambda L: F(L).rms_norm(L.ones(2, 4, 3), ()),
             lambda L: F(L).rms_norm(L.ones(2, 4, 3), (3,), L.ones(4)),
             lambda L: F(L).group_norm(L.ones(1, 3, 2), 3, L.ones(3, dtype=L.float64)),
             lambda L: F(L).group_norm(L.ones(1, 3, 2, dtype=L.float64), 3, None, L.ones(3)),
             lambda L: F(L).rms_norm(L.ones(2, 3, dtype=L.float64), (3,), L.ones(3)),
             lambda L: F(L).rms_norm(L.ones(2, 3), (3,), L.ones(3, dtype=L.float64))]
    for i, call in enumerate(calls):
        _same_outcome(call, f"norm call {i}")


POOLS = [("adaptive_avg_pool1d", (2, 3, 7), s) for s in (1, 2, 3, 4, 7, 9, (5,))]
POOLS += [("adaptive_avg_pool1d", (3, 5), 2)]
POOLS += [("adaptive_avg_pool2d", (2, 3, 5, 7), s)
          for s in (1, 2, (1, 1), (3, 4), (5, None), (None, 2), (6, 8), (1, 3))]
POOLS += [("adaptive_avg_pool2d", (3, 4, 6), (2, 3))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, shape, size", POOLS)
def test_adaptive_pools_are_pytorchs(name, shape, size, dtype):
    x = np.random.default_rng(1).normal(size=shape)
    _compare(lambda L, a: getattr(F(L), name)(a, size), [x], dtype, what=f"{name} {size}")
    module = {"adaptive_avg_pool1d": "AdaptiveAvgPool1d",
              "adaptive_avg_pool2d": "AdaptiveAvgPool2d"}[name]
    _compare(lambda L, a: getattr(L.nn, module)(size)(a), [x], dtype, what=module)


def test_a_global_average_pool_is_exactly_the_mean():
    x = ktorch.tensor(np.random.default_rng(2).normal(size=(2, 3, 5, 7)), dtype=ktorch.float32)
    np.testing.assert_array_equal(F(ktorch).adaptive_avg_pool2d(x, 1).numpy(),
                                  x.mean((-2, -1), keepdim=True).numpy())
    np.testing.assert_array_equal(F(ktorch).adaptive_avg_pool1d(x[0], 1).numpy(),
                                  x[0].mean(-1, keepdim=True).numpy())
    theirs = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(x.numpy()), 1)
    np.testing.assert_allclose(F(ktorch).adaptive_avg_pool2d(x, 1).numpy(), theirs.numpy(),
                               rtol=1e-6)


def test_adaptive_pool_errors_are_pytorchs():
    calls = [lambda L: F(L).adaptive_avg_pool1d(L.ones(3), 2),
             lambda L: F(L).adaptive_avg_pool2d(L.ones(3, 3), 2),
             lambda L: F(L).adaptive_avg_pool1d(L.ones(2, 3, 4), (2, 2)),
             lambda L: F(L).adaptive_avg_pool1d(L.ones(2, 3, 0), 2),
             lambda L: F(L).adaptive_avg_pool2d(L.ones(1, 1, 4, 4), -1),
             lambda L: F(L).adaptive_avg_pool1d(L.ones(2, 3, 4), 0)]
    for i, call in enumerate(calls):
        _same_outcome(call, f"pool call {i}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv1d_and_the_1d_pools_as_modules_are_pytorchs(dtype):
    x = np.random.default_rng(3).normal(size=(2, 4, 9))
    for name, args, kwargs in [("Conv1d", (4, 6, 3), {}),
                               ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "dilation": 2,
                                                      "groups": 2, "bias": False}),
                               ("Conv1d", (4, 2, 3), {"padding": "same"}),
                               ("MaxPool1d", (3,), {}), ("MaxPool1d", (3, 2, 1), {}),
                               ("AvgPool1d", (3,), {}), ("AvgPool1d", (3, 2, 1), {}),
                               ("AvgPool1d", (3, 1, 1, False, False), {})]:
        def fn(L, a, name=name, args=args, kwargs=kwargs):
            module = getattr(L.nn, name)(*args, **kwargs)
            if name == "Conv1d":  # the same weights in both
                w = np.sin(np.arange(np.prod(tuple(module.weight.shape))))
                module.weight = L.nn.Parameter(L.tensor(w.reshape(tuple(module.weight.shape)),
                                                        dtype=a.dtype))
                if module.bias is not None:
                    module.bias = L.nn.Parameter(L.linspace(-1, 1, args[1], dtype=a.dtype))
            return module(a)

        _compare(fn, [x], dtype, what=f"{name}{args}{kwargs}")


# --- module reprs and registration ---------------------------------------------------------
REPRS = [("Softshrink", (), {}), ("Hardshrink", (0.3,), {}), ("Threshold", (0.1, 20), {}),
         ("Threshold", (0.1, 20, True), {}), ("PReLU", (), {}), ("PReLU", (3, 0.1), {}),
         ("GroupNorm", (2, 4), {}), ("GroupNorm", (2, 4), {"affine": False}),
         ("GroupNorm", (2, 4), {"bias": False}), ("RMSNorm", (4,), {}),
         ("RMSNorm", ([2, 3],), {"eps": 1e-3, "elementwise_affine": False}),
         ("AdaptiveAvgPool1d", (3,), {}), ("AdaptiveAvgPool2d", ((2, None),), {}),
         ("AdaptiveAvgPool2d", (1,), {}), ("MaxPool1d", (3,), {}),
         ("MaxPool1d", (3, 2, 1), {"return_indices": True}), ("MaxPool1d", ((3,),), {}),
         ("AvgPool1d", (3,), {}), ("AvgPool1d", (3, 1, 1, True, False), {}),
         ("Conv1d", (2, 4, 3), {}), ("Conv1d", (2, 4, 3), {"padding": "same"}),
         ("Conv1d", (2, 4, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2,
                                "bias": False}),
         ("Unflatten", (1, (2, 3)), {}), ("Unflatten", (1, [2, 3]), {}),
         ("CosineSimilarity", (), {}), ("PairwiseDistance", (1, 1e-3, True), {}),
         ("SoftMarginLoss", (), {}), ("MarginRankingLoss", (), {"margin": 0.5}),
         ("HingeEmbeddingLoss", (), {}), ("CosineEmbeddingLoss", (), {}),
         ("TripletMarginLoss", (), {"swap": True}), ("PoissonNLLLoss", (), {}),
         ("GaussianNLLLoss", (), {}), ("MultiLabelSoftMarginLoss", (), {}),
         ("MultiMarginLoss", (), {"p": 2}), ("MultiheadAttention", (4, 2), {}),
         ("MultiheadAttention", (4, 2), {"bias": False, "kdim": 3, "vdim": 5}),
         ("ParameterList", (), {})]


@pytest.mark.parametrize("name, args, kwargs", REPRS, ids=[r[0] for r in REPRS])
def test_module_reprs_and_registration_are_pytorchs(name, args, kwargs):
    ours, theirs = (getattr(lib.nn, name)(*args, **kwargs) for lib in LIBS)
    assert repr(ours) == repr(theirs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        if name in ("PReLU", "GroupNorm", "RMSNorm") or (name == "MultiheadAttention"
                                                         and "bias" in n):  # fixed inits
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)


def _containers(lib):
    nn = lib.nn
    plist = nn.ParameterList([nn.Parameter(lib.ones(2, 3)), lib.zeros(3),
                              nn.Parameter(lib.ones(1, dtype=lib.float64), requires_grad=False)])
    plist.append(nn.Parameter(lib.ones(())))
    plist.extend([nn.Parameter(lib.ones(4))])
    plist[1] = nn.Parameter(lib.zeros(5))
    pdict = nn.ParameterDict({"b": nn.Parameter(lib.ones(2)), "a": lib.zeros(2, 2)})
    pdict["c"] = nn.Parameter(lib.ones(1, dtype=lib.float64))
    pdict.update({"e": lib.ones(1), "d": lib.ones(3)})
    popped = pdict.pop("b")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([nn.Parameter(lib.ones(2))])
            self.d = nn.ParameterDict({"w": nn.Parameter(lib.ones(1))})
            self.lin = nn.Linear(1, 1)

    net = Net()
    return [repr(plist), repr(pdict), repr(net), repr(plist[1:3]), len(plist), len(pdict),
            list(pdict), "c" in pdict, "b" in pdict, tuple(popped.shape),
            type(plist[1]).__name__, type(pdict["a"]).__name__,
            [(n, tuple(p.shape), p.requires_grad) for n, p in plist.named_parameters()],
            [(n, tuple(p.shape)) for n, p in pdict.named_parameters()],
            list(net.state_dict()), [n for n, _ in net.named_parameters()],
            sum(p.numel() for p in net.parameters())]


def test_parameter_list_and_dict_register_and_print_as_pytorchs():
    assert _containers(ktorch) == _containers(torch)
    for lib in LIBS:
        with pytest.raises(IndexError):
            lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2))])[3]
        with pytest.raises(AttributeError):  # (PyTorch's: not a KeyError)
            lib.nn.ParameterDict()["missing"]


# --- losses --------------------------------------------------------------------------------
def _losses():
    rng = np.random.default_rng(4)
    x, y, z = (rng.normal(size=(4, 3)) for _ in range(3))
    sign = np.array([1.0, -1.0, 1.0, -1.0])
    labels = np.array([0, 2, 1, 2])
    grid = np.array(GRID)
    return {
        "soft_margin": (lambda L, a, t, r: F(L).soft_margin_loss(a, t, reduction=r),
                        [x, np.sign(y)]),
        "soft_margin broadcast": (lambda L, a, t, r: F(L).soft_margin_loss(a, t, reduction=r),
                                  [x, np.array([1.0, -1.0, 1.0])]),
        "margin_ranking": (lambda L, a, b, t, r: F(L).margin_ranking_loss(
            a, b, t, 0.5, reduction=r), [x[:, 0], y[:, 0], sign]),
        "margin_ranking at the hinge": (lambda L, a, b, t, r: F(L).margin_ranking_loss(
            a, b, t, reduction=r), [grid, grid * 0, np.ones(9)]),
        "hinge_embedding": (lambda L, a, t, r: F(L).hinge_embedding_loss(a, t, 0.5, reduction=r),
                            [np.abs(x), np.where(y > 0, 1.0, -1.0)]),
        "hinge_embedding at the margin": (lambda L, a, t, r: F(L).hinge_embedding_loss(
            a, t, reduction=r), [grid, -np.ones(9)]),
        "hinge_embedding other targets": (lambda L, a, t, r: F(L).hinge_embedding_loss(
            a, t, reduction=r), [x, np.round(y)]),
        "cosine_embedding": (lambda L, a, b, t, r: F(L).cosine_embedding_loss(
            a, b, t, 0.1, reduction=r), [x, y, sign]),
        "cosine_embedding 1-d": (lambda L, a, b, t, r: F(L).cosine_embedding_loss(
            a, b, t, reduction=r), [x[0], y[0], np.array(-1.0)]),
        "cosine_embedding zero vector": (lambda L, a, b, t, r: F(L).cosine_embedding_loss(
            a, b, t, reduction=r), [x * [[0], [1], [1], [1]], y, sign]),
        "triplet_margin": (lambda L, a, p, n, r: F(L).triplet_margin_loss(a, p, n, reduction=r),
                           [x, y, z]),
        "triplet_margin swap p1": (lambda L, a, p, n, r: F(L).triplet_margin_loss(
            a, p, n, 0.5, 1, swap=True, reduction=r), [x, y, z]),
        "triplet_margin 1-d": (lambda L, a, p, n, r: F(L).triplet_margin_loss(
            a, p, n, reduction=r), [x[0], y[0], z[0]]),
        "poisson_nll": (lambda L, a, t, r: F(L).poisson_nll_loss(a, t, reduction=r),
                        [x, np.abs(y) * 3]),
        "poisson_nll not log full": (lambda L, a, t, r: F(L).poisson_nll_loss(
            a, t, False, True, reduction=r), [np.abs(x), np.abs(y) * 3 + [[0], [1], [0.5], [2]]]),
        "gaussian_nll": (lambda L, a, t, v, r: F(L).gaussian_nll_loss(a, t, v, reduction=r),
                         [x, y, np.abs(z)]),
        "gaussian_nll full, one var per sample": (lambda L, a, t, v, r: F(L).gaussian_nll_loss(
            a, t, v, True, reduction=r), [x, y, np.abs(z[:, 0])]),
        "gaussian_nll clamped var": (lambda L, a, t, v, r: F(L).gaussian_nll_loss(
            a, t, v, eps=0.5, reduction=r), [x, y, np.abs(z) * [[0], [1], [0.1], [2]]]),
        "gaussian_nll var size 1": (lambda L, a, t, v, r: F(L).gaussian_nll_loss(
            a, t, v, reduction=r), [x, y, np.abs(z[:, :1])]),
        "gaussian_nll float var": (lambda L, a, t, r: F(L).gaussian_nll_loss(
            a, t, 0.5, reduction=r), [x, y]),
        "multilabel_soft_margin": (lambda L, a, t, r: F(L).multilabel_soft_margin_loss(
            a, t, reduction=r), [x, (y > 0) * 1.0]),
        "multilabel_soft_margin weight": (lambda L, a, t, w, r: F(L).multilabel_soft_margin_loss(
            a, t, w, reduction=r), [x, (y > 0) * 1.0, np.array([0.5, 1.0, 2.0])]),
        "multi_margin": (lambda L, a, t, r: F(L).multi_margin_loss(a, t, reduction=r),
                         [x, labels]),
        "multi_margin p2 weight": (lambda L, a, t, w, r: F(L).multi_margin_loss(
            a, t, 2, 0.5, w, reduction=r), [x, labels, np.array([0.5, 1.0, 2.0])]),
        "multi_margin at the hinge": (lambda L, a, t, r: F(L).multi_margin_loss(
            a, t, reduction=r), [np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 2.0]]), np.array([0, 1])]),
        "multi_margin 1-d": (lambda L, a, t, r: F(L).multi_margin_loss(a, t, reduction=r),
                             [x[0], np.array(1)]),
    }


LOSSES = _losses()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_values_and_gradients_are_pytorchs(name, reduction, dtype):
    fn, arrays = LOSSES[name]
    grads = _grads(name, arrays)
    # (the zero vector's gradient is ~1e6, of the 1e-12 added to its squared norm: its rounding
    # differs in the 10th digit)
    _compare(lambda L, *ts: fn(L, *ts, reduction), arrays, dtype, grads, name,
             rtol=1e-8 if "zero vector" in name and dtype == "float64" else None)


NO_GRADIENT = {"soft_margin": 1, "multi_margin": 2}  # PyTorch's kernels refuse these


def _grads(case, arrays):
    return [all(i != j for op, j in NO_GRADIENT.items() if case.startswith(op))
            for i in range(len(arrays))]


def test_losses_refuse_a_gradient_their_pytorch_kernels_do_not_compute():
    for lib in LIBS:
        x, y = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="not differentiable with respect to argument"):
            F(lib).soft_margin_loss(x, y)
        with pytest.raises(RuntimeError, match="not differentiable with respect to argument"):
            F(lib).multi_margin_loss(x[None], lib.tensor([1]), weight=y)
        with lib.no_grad():
            F(lib).soft_margin_loss(x, y)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_refuse_a_bad_reduction_as_pytorch(name):
    fn, arrays = LOSSES[name]
    for lib in LIBS:
        tensors = [lib.tensor(a) for a in arrays]
        with pytest.raises(ValueError, match="bad is not"):
            fn(lib, *tensors, "bad")


MODULE_LOSSES = [("SoftMarginLoss", {}, "soft_margin"), ("MarginRankingLoss", {"margin": 0.5},
                                                          "margin_ranking"),
                 ("HingeEmbeddingLoss", {"margin": 0.5}, "hinge_embedding"),
                 ("CosineEmbeddingLoss", {"margin": 0.1}, "cosine_embedding"),
                 ("TripletMarginLoss", {"swap": True}, "triplet_margin"),
                 ("PoissonNLLLoss", {"log_input": False, "full": True},
                  "poisson_nll not log full"),
                 ("GaussianNLLLoss", {"full": True}, "gaussian_nll"),
                 ("MultiLabelSoftMarginLoss", {}, "multilabel_soft_margin"),
                 ("MultiMarginLoss", {"p": 2}, "multi_margin")]


@pytest.mark.parametrize("name, kwargs, case", MODULE_LOSSES, ids=[m[0] for m in MODULE_LOSSES])
def test_loss_modules_are_pytorchs(name, kwargs, case):
    arrays = LOSSES[case][1]
    for reduction in ("none", "sum"):
        _compare(lambda L, *ts, reduction=reduction: getattr(L.nn, name)(
                     **kwargs, reduction=reduction)(*ts),
                 arrays, "float64", _grads(case, arrays), name)


def test_loss_errors_and_integer_inputs_are_pytorchs():
    x = [[0.5, -1.0, 2.0]]
    calls = {
        "margin_ranking ranks": lambda L: F(L).margin_ranking_loss(L.ones(2, 3), L.ones(2, 3),
                                                                   L.ones(3)),
        "soft_margin shapes": lambda L: F(L).soft_margin_loss(L.ones(3), L.ones(2, 3)),
        "multi_margin p": lambda L: F(L).multi_margin_loss(L.tensor(x), L.tensor([1]), p=3),
        "multi_margin range": lambda L: F(L).multi_margin_loss(L.tensor(x), L.tensor([5])),
        "multi_margin float target": lambda L: F(L).multi_margin_loss(L.tensor(x),
                                                                      L.tensor([1.0])),
        "multi_margin weight": lambda L: F(L).multi_margin_loss(L.tensor(x), L.tensor([1]),
                                                                weight=L.ones(3, 1)),
        "multi_margin target size": lambda L: F(L).multi_margin_loss(L.tensor(x),
                                                                     L.tensor([1, 2])),
        "cosine_embedding ranks": lambda L: F(L).cosine_embedding_loss(L.ones(3), L.ones(3),
                                                                       L.ones(3)),
        "triplet ranks": lambda L: F(L).triplet_margin_loss(L.ones(3), L.ones(1, 3), L.ones(3)),
        "triplet margin": lambda L: F(L).triplet_margin_loss(L.ones(3), L.ones(3), L.ones(3),
                                                             margin=0.0),
        "gaussian negative var": lambda L: F(L).gaussian_nll_loss(L.ones(3), L.ones(3),
                                                                  -L.ones(3)),
        "gaussian var size": lambda L: F(L).gaussian_nll_loss(L.ones(2, 3), L.ones(2, 3),
                                                              L.ones(3, 2)),
        "gaussian float var": lambda L: F(L).gaussian_nll_loss(L.ones(3), L.ones(3), -1.0),
        "MultiMarginLoss p": lambda L: L.nn.MultiMarginLoss(p=3),
    }
    ints = {
        "soft_margin": lambda L, t: F(L).soft_margin_loss(t, t),
        "hinge_embedding": lambda L, t: F(L).hinge_embedding_loss(t, t),
        "hinge_embedding none": lambda L, t: F(L).hinge_embedding_loss(t, t, reduction="none"),
        "poisson_nll": lambda L, t: F(L).poisson_nll_loss(t, t),
        "margin_ranking": lambda L, t: F(L).margin_ranking_loss(t, t, t),
        "cosine_embedding": lambda L, t: F(L).cosine_embedding_loss(t[None], t[None], t[:1]),
        "triplet": lambda L, t: F(L).triplet_margin_loss(t, t, t),
        "multilabel_soft_margin": lambda L, t: F(L).multilabel_soft_margin_loss(t, t),
        "gaussian_nll": lambda L, t: F(L).gaussian_nll_loss(t, t, t),
        "multi_margin": lambda L, t: F(L).multi_margin_loss(t[None], L.tensor([1])),
    }
    for name, call in calls.items():
        _same_outcome(call, name)
    for name, call in ints.items():
        _same_outcome(lambda L, call=call: call(L, L.tensor([1, 0, 1])), f"{name} int64")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cosine_similarity_and_pairwise_distance_modules_are_pytorchs(dtype):
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    b[0] = a[0]  # (pairwise_distance's eps keeps this gradient finite)
    _compare(lambda L, x, y: L.nn.CosineSimilarity()(x, y), [a, b], dtype)
    _compare(lambda L, x, y: L.nn.CosineSimilarity(0, 1e-3)(x, y), [a, b], dtype)
    _compare(lambda L, x, y: L.nn.PairwiseDistance()(x, y), [a, b], dtype)
    _compare(lambda L, x, y: L.nn.PairwiseDistance(1, 1e-3, True)(x, y), [a, b], dtype)


def test_unflatten_is_pytorchs():
    x = np.arange(24.0).reshape(4, 6)
    for dim, sizes in [(1, (2, 3)), (-1, (2, -1)), (0, [2, 2])]:
        _compare(lambda L, a, dim=dim, sizes=sizes: L.nn.Unflatten(dim, sizes)(a), [x],
                 "float64", what=str(sizes))


# --- attention -----------------------------------------------------------------------------
def _attention_inputs(shape_q=(2, 3, 5, 4), shape_k=(2, 3, 6, 4), ev=3, seed=6):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape_q), rng.normal(size=shape_k),
            rng.normal(size=shape_k[:-1] + (ev,))]


def _hiding(length, source):
    """A bool mask (True: attend) that hides all keys from query 1 and some from the others."""
    mask = np.arange(source)[None, :] <= np.arange(length)[:, None] + 1
    mask[1] = False
    return mask


SDPA = {
    "plain": lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v),
    "scale": lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, scale=0.3),
    "causal": lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, is_causal=True),
    "bool mask, a row hidden": lambda L, q, k, v: F(L).scaled_dot_product_attention(
        q, k, v, attn_mask=L.tensor(_hiding(5, 6))),
    "float mask": lambda L, q, k, v: F(L).scaled_dot_product_attention(
        q, k, v, attn_mask=L.tensor(np.cos(np.arange(30.0)).reshape(5, 6), dtype=q.dtype)),
    "float mask, a row of -inf": lambda L, q, k, v: F(L).scaled_dot_product_attention(
        q, k, v, attn_mask=L.tensor(np.where(_hiding(5, 6), 0.0, -np.inf), dtype=q.dtype)),
    "per-head mask": lambda L, q, k, v: F(L).scaled_dot_product_attention(
        q, k, v, attn_mask=L.tensor(np.arange(90).reshape(3, 5, 6) % 4 != 0)),
    "dropout 0": lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, dropout_p=0.0),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(SDPA))
def test_scaled_dot_product_attention_is_pytorchs(name, dtype):
    _compare(SDPA[name], _attention_inputs(), dtype, what=name)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_scaled_dot_product_attention_unbatched_and_grouped_query(dtype):
    _compare(SDPA["causal"], _attention_inputs((5, 4), (6, 4)), dtype, what="2-d")
    _compare(lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, enable_gqa=True),
             _attention_inputs((2, 4, 5, 4), (2, 2, 6, 4)), dtype, what="gqa")


def test_scaled_dot_product_attention_errors_and_dropout_are_pytorchs():
    q, k, v = _attention_inputs()
    calls = [lambda L: F(L).scaled_dot_product_attention(
                 L.tensor(q), L.tensor(k), L.tensor(v), attn_mask=L.ones(5, 6, dtype=L.bool),
                 is_causal=True),
             lambda L: F(L).scaled_dot_product_attention(L.tensor(q), L.tensor(k, dtype=L.float64),
                                                         L.tensor(v)),
             lambda L: F(L).scaled_dot_product_attention(*(L.tensor(a).long() for a in (q, k, v))),
             lambda L: F(L).scaled_dot_product_attention(
                 L.tensor(q), L.tensor(k), L.tensor(v), attn_mask=L.ones(5, 6, dtype=L.int64)),
             lambda L: F(L).scaled_dot_product_attention(
                 L.tensor(q), L.tensor(k), L.tensor(v), dropout_p=1.0),
             lambda L: F(L).scaled_dot_product_attention(
                 *(L.tensor(a, dtype=L.float32) for a in (q, k, v)),
                 attn_mask=L.zeros(5, 6, dtype=L.float64)),
             lambda L: F(L).scaled_dot_product_attention(
                 *(L.tensor(a, dtype=L.float64) for a in (q, k, v)),
                 attn_mask=L.full((5, 6), 0.5, dtype=L.float32))]
    for i, call in enumerate(calls):
        _same_outcome(call, f"sdpa call {i}")
    out = F(ktorch).scaled_dot_product_attention(*(ktorch.tensor(a) for a in (q, k, v)),
                                                 dropout_p=0.5)
    assert tuple(out.shape) == (2, 3, 5, 3)  # (kit's random numbers: compared in shape only)


def _attention_module(L, options, dtype):
    """A MultiheadAttention with the same deterministic weights in kit and PyTorch."""
    module = L.nn.MultiheadAttention(**options, dtype=getattr(L, dtype))
    state = module.state_dict()
    for i, key in enumerate(state):
        values = np.sin(np.arange(state[key].numel()) * 0.7 + i).reshape(tuple(state[key].shape))
        state[key] = L.tensor(values * 0.5, dtype=getattr(L, dtype))
    module.load_state_dict(state)
    return module.eval()


MHA = {  # options, call keywords (masks built per library), batched
    "default": ({}, {}),
    "batch first, per-head weights": ({"batch_first": True}, {"average_attn_weights": False}),
    "no weights": ({}, {"need_weights": False}),
    "bool mask and key padding": ({}, {"attn_mask": "bool", "key_padding_mask": "bool"}),
    "float mask and key padding": ({}, {"attn_mask": "float", "key_padding_mask": "float"}),
    "no weights, bool masks": ({"batch_first": True},
                               {"attn_mask": "bool", "key_padding_mask": "bool",
                                "need_weights": False}),
    "causal hint": ({}, {"attn_mask": "causal", "is_causal": True}),
    "3-d mask": ({}, {"attn_mask": "3-d"}),
    "kdim vdim no bias": ({"kdim": 3, "vdim": 5, "bias": False}, {}),
    "bias kv, zero attn": ({"add_bias_kv": True, "add_zero_attn": True},
                           {"attn_mask": "bool", "key_padding_mask": "bool"}),
    "unbatched": ({}, {"key_padding_mask": "bool"}),
}


def _masks(L, keywords, length, source, batch, heads, dtype):
    made = dict(keywords)
    hidden = ~_hiding(length, source)
    hidden[1] = False  # (a query that sees nothing gives NaN with the weights, 0 without)
    masks = {"bool": L.tensor(hidden),
             "float": L.tensor(np.where(hidden, -np.inf, 0.1), dtype=getattr(L, dtype)),
             "causal": L.tensor(np.triu(np.ones((length, source), bool), 1)),
             "3-d": L.tensor(np.arange(batch * heads * length * source).reshape(
                 batch * heads, length, source) % 3 == 0)}
    padding = np.zeros((batch, source), bool)
    padding[:, -1] = True
    if "attn_mask" in made:
        made["attn_mask"] = masks[made["attn_mask"]]
    if made.get("key_padding_mask") == "bool":
        made["key_padding_mask"] = L.tensor(padding if batch else padding[0])
    elif made.get("key_padding_mask") == "float":
        made["key_padding_mask"] = L.tensor(np.where(padding, -np.inf, 0.0),
                                            dtype=getattr(L, dtype))
    return made


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(MHA))
def test_multihead_attention_is_pytorchs_with_the_same_weights(name, dtype):
    options, keywords = MHA[name]
    options = {"embed_dim": 4, "num_heads": 2, **options}
    batch_first = options.get("batch_first", False)
    length, source, batch = 5, 6, 0 if name == "unbatched" else 2
    rng = np.random.default_rng(7)

    def shaped(n, width):
        if not batch:
            return rng.normal(size=(n, width))
        return rng.normal(size=(batch, n, width) if batch_first else (n, batch, width))

    arrays = [shaped(length, 4), shaped(source, options.get("kdim", 4)),
              shaped(source, options.get("vdim", 4))]

    def fn(L, q, k, v):
        module = _attention_module(L, options, dtype)
        made = _masks(L, keywords, length, source, batch or 1, 2, dtype)
        if not batch and "key_padding_mask" in made:
            made["key_padding_mask"] = made["key_padding_mask"].reshape(-1)
        return module(q, k, v, **made)

    _compare(fn, arrays, dtype, what=name)


def test_multihead_attention_errors_are_pytorchs():
    x = np.ones((3, 2, 4), np.float32)
    calls = [lambda L: L.nn.MultiheadAttention(5, 2), lambda L: L.nn.MultiheadAttention(0, 2),
             lambda L: L.nn.MultiheadAttention(4, 2)(*(L.tensor(x),) * 3, is_causal=True),
             lambda L: L.nn.MultiheadAttention(4, 2)(
                 *(L.tensor(x),) * 3, attn_mask=L.ones(3, 3, dtype=L.int64)),
             lambda L: L.nn.MultiheadAttention(4, 2)(
                 *(L.tensor(x),) * 3, attn_mask=L.ones(2, 3, 3, dtype=L.bool)),
             lambda L: L.nn.MultiheadAttention(4, 2)(L.tensor(x), L.tensor(x[..., :3]),
                                                     L.tensor(x))]
    for i, call in enumerate(calls):
        _same_outcome(call, f"MultiheadAttention call {i}")


def test_a_replaced_parameter_or_submodule_keeps_its_place_as_in_pytorch():
    def names(lib):
        net = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))
        net[0].weight = lib.nn.Parameter(lib.ones(3, 2))
        net[0] = lib.nn.Linear(2, 3, bias=False)
        net[2].weight = lib.nn.Parameter(lib.ones(1, 3))
        return [n for n, _ in net.named_parameters()], list(net.state_dict()), repr(net)

    assert names(ktorch) == names(torch)


def test_infinities_and_nan_give_pytorchs_values_without_numpy_warnings():
    special = [-np.inf, np.inf, np.nan, -0.25, 0.25]
    for name in ("softshrink", "hardshrink", "threshold", "prelu", "Softshrink", "Threshold"):
        ours, theirs = (ACTIVATIONS[name](L, L.tensor(special, requires_grad=True))
                        for L in LIBS)  # (kit's warnings are errors here)
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy(), name)
        ours.backward(ktorch.ones(5))
    ours, theirs = (F(L).soft_margin_loss(L.tensor([-1000.0, 0.0]), L.ones(2), reduction="none")
                    for L in LIBS)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


MIXED = {
    "soft_margin_loss": lambda F, x, t: F.soft_margin_loss(x, t, reduction="sum"),
    "hinge_embedding_loss": lambda F, x, t: F.hinge_embedding_loss(x, t, reduction="sum"),
    "poisson_nll_loss": lambda F, x, t: F.poisson_nll_loss(x, t, reduction="sum"),
    "poisson_nll_loss full": lambda F, x, t: F.poisson_nll_loss(x, t, False, True,
                                                                reduction="sum"),
    "multilabel_soft_margin_loss": lambda F, x, t: F.multilabel_soft_margin_loss(
        x, t, reduction="sum"),
    "gaussian_nll_loss": lambda F, x, t: F.gaussian_nll_loss(
        x, t, x.detach().abs() + 1 if x.is_floating_point() else x, reduction="sum"),
    "margin_ranking_loss": lambda F, x, t: F.margin_ranking_loss(x, t, t, reduction="sum"),
    "triplet_margin_loss": lambda F, x, t: F.triplet_margin_loss(x, t, t, reduction="sum"),
    "cosine_embedding_loss": lambda F, x, t: F.cosine_embedding_loss(
        x, t, t.sum(-1).sign() if t.ndim else t, reduction="sum"),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_losses_of_mixed_dtypes_shapes_and_grads_are_pytorchs(name):
    shapes = [((2, 3), (2, 3)), ((3,), (2, 3)), ((2, 3), (3,)), ((2, 3), ())]
    assert_same_pairs(pair_outcomes(ktorch, MIXED[name], shapes, int_value=1),
                      pair_outcomes(torch, MIXED[name], shapes, int_value=1))


INSTANCE_NORMS = [("InstanceNorm1d", {}, (2, 3, 5)), ("InstanceNorm1d", {}, (3, 5)),
                  ("InstanceNorm1d", {"affine": True, "eps": 0.1}, (2, 3, 5)),
                  ("InstanceNorm2d", {"track_running_stats": True}, (2, 3, 4, 5)),
                  ("InstanceNorm2d", {"affine": True, "track_running_stats": True,
                                      "momentum": None}, (3, 4, 5))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, options, shape", INSTANCE_NORMS)
def test_instance_norm_is_pytorchs_with_its_running_statistics(name, options, shape, dtype):
    x = np.random.default_rng(8).normal(size=shape) * 2 + 1
    modules = {}

    def fn(L, a):
        module = getattr(L.nn, name)(3, **options).to(a.dtype)
        if module.weight is not None:
            module.weight = L.nn.Parameter(L.tensor([0.5, 1.0, 2.0], dtype=a.dtype))
        out = module(a) + module(a * 2)  # (two steps of the running statistics)
        modules[L] = module
        return out

    _compare(fn, [x], dtype, what=name)
    ours, theirs = (modules[L] for L in LIBS)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    rtol, atol = _tolerances(dtype)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol, atol,
                                   err_msg=key)
    ours.eval(), theirs.eval()
    _compare(lambda L, a: modules[L](a), [x], dtype, what=f"{name} eval")


def test_instance_norm_errors_are_pytorchs():
    x = np.ones((2, 3, 5))
    calls = [lambda L: L.nn.InstanceNorm1d(4, affine=True)(L.tensor(x)),
             lambda L: L.nn.InstanceNorm1d(3)(L.ones(2, 3, 1)),
             lambda L: L.nn.InstanceNorm1d(3)(L.ones(2, 2, 3, 5)),
             lambda L: F(L).instance_norm(L.tensor(x), use_input_stats=False)]
    for i, call in enumerate(calls):
        _same_outcome(call, f"instance norm call {i}")
    for lib in LIBS:
        with pytest.warns(UserWarning, match="does not match num_features"):
            lib.nn.InstanceNorm1d(4)(lib.tensor(x))
