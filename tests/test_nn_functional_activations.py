"""The ELU family, the hard activations, mish, logsigmoid, softsign, tanhshrink, softmin, glu
and the L1, smooth L1, Huber and KL-divergence losses (kit/nn/functional_more.py) against
PyTorch 2.13: values and gradients on a grid that includes each function's boundaries (where
PyTorch's gradient is one-sided or 0), infinities and NaN; integer inputs refused as PyTorch
refuses them; the module forms."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import kit.torch as ktorch
from tests.differential import assert_same_pairs, pair_outcomes

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of these functions")

GRID = [-25.0, -3.5, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 3.5, 6.0, 7.0, 25.0]
SPECIAL = [-math.inf, math.inf, math.nan]


def F(lib):  # noqa: N802
    return lib.nn.functional


FUNCTIONS = {
    "elu": lambda L, x: F(L).elu(x), "elu alpha": lambda L, x: F(L).elu(x, 0.5),
    "selu": lambda L, x: F(L).selu(x), "celu": lambda L, x: F(L).celu(x, 2.0),
    "hardtanh": lambda L, x: F(L).hardtanh(x), "hardtanh bounds": lambda L, x: F(L).hardtanh(
        x, -0.5, 3.0), "relu6": lambda L, x: F(L).relu6(x),
    "softsign": lambda L, x: F(L).softsign(x), "mish": lambda L, x: F(L).mish(x),
    "hardswish": lambda L, x: F(L).hardswish(x), "hardsigmoid": lambda L, x: F(L).hardsigmoid(x),
    "logsigmoid": lambda L, x: F(L).logsigmoid(x), "tanhshrink": lambda L, x: F(L).tanhshrink(x),
    "softmin": lambda L, x: F(L).softmin(x, 0), "glu": lambda L, x: F(L).glu(x[:12]),
    "glu 2-d": lambda L, x: F(L).glu(x[:12].reshape(4, 3), 0),
    "l1_loss": lambda L, x: F(L).l1_loss(x, x.detach() * 0.5 + 0.25),
    "smooth_l1_loss": lambda L, x: F(L).smooth_l1_loss(x, x.detach() * 0 + 0.5, beta=0.7),
    "smooth_l1_loss beta 0": lambda L, x: F(L).smooth_l1_loss(x, x.detach() * 0, beta=0.0),
    "huber_loss": lambda L, x: F(L).huber_loss(x, x.detach() * 0 + 0.5, delta=1.5,
                                               reduction="sum"),
    "kl_div batchmean": lambda L, x: F(L).kl_div(
        L.log_softmax(x, 0), L.softmax(x.detach() * 0.3, 0), reduction="batchmean"),
    "kl_div log_target": lambda L, x: F(L).kl_div(
        L.log_softmax(x, 0), L.log_softmax(x.detach() * 0.3, 0), reduction="sum",
        log_target=True),
    "kl_div zeros in target": lambda L, x: F(L).kl_div(
        L.log_softmax(x, 0), (x.detach() > 0).to(x.dtype) / 7, reduction="none"),
}


def _run(lib, fn, values, dtype):
    x = lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # (NumPy's inf - inf warning)
        warnings.simplefilter("ignore")
        y = fn(lib, x)
        y.sum().backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_values_and_gradients_are_pytorchs(name, dtype):
    rtol, atol = (1e-10, 1e-12) if dtype == "float64" else (2e-6, 1e-7)
    if name == "hardsigmoid":  # PyTorch's backward multiplies by a float32 1/6, also in float64
        rtol = 1e-7
    for values in (GRID, GRID[:10] + SPECIAL):
        if name.startswith(("softmin", "kl_div")) and values is not GRID:
            continue  # a softmax over infinities is NaN everywhere in both: nothing to compare
        ours = _run(ktorch, FUNCTIONS[name], values, dtype)
        theirs = _run(torch, FUNCTIONS[name], values, dtype)
        # NOTE: gradients are compared on finite inputs: at inf and NaN kit's composites give
        # the chain rule's 0 or NaN where PyTorch's fused kernels may give 1 (a difference left)
        compared = ("values", "gradients") if values is GRID else ("values",)
        for a, b, what in zip(ours, theirs, compared, strict=False):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{name} {what} on {values}")
            both = (a == 0) & (b == 0)
            assert np.array_equal(np.signbit(a[both]), np.signbit(b[both])), (name, what)


@pytest.mark.parametrize("lib", [ktorch, torch], ids=["kit", "pytorch"])
def test_integer_inputs_are_refused_as_pytorch_refuses_them(lib):
    x = lib.tensor([1, 2])
    for name in ("elu", "selu", "celu", "mish", "hardswish", "hardsigmoid", "logsigmoid", "glu"):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            getattr(F(lib), name)(x)
    for call in (lambda: F(lib).softmin(x, 0), lambda: F(lib).smooth_l1_loss(x, x),
                 lambda: F(lib).huber_loss(x, x)):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            call()
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        F(lib).l1_loss(x, x)
    with pytest.raises(RuntimeError, match="Integral inputs not supported"):
        F(lib).kl_div(x, x, reduction="batchmean")
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F(lib).glu(lib.ones(3))
    assert F(lib).hardtanh(x).tolist() == [1, 1] and F(lib).relu6(x).tolist() == [1, 2]


@pytest.mark.parametrize("lib", [ktorch, torch], ids=["kit", "pytorch"])
def test_losses_broadcast_with_pytorchs_warning_and_kl_div_mean_warns(lib):
    with pytest.warns(UserWarning, match="Using a target size"):
        loss = F(lib).l1_loss(lib.tensor([1.0, 3.0]), lib.tensor(2.0))
    assert float(loss) == 1.0
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F(lib).kl_div(lib.zeros(2, 3), lib.ones(2, 3) / 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        out = F(lib).softmin(lib.tensor([[1.0, 2.0], [3.0, 5.0]]))
    np.testing.assert_allclose(out.numpy(), [[0.731059, 0.268941], [0.880797, 0.119203]],
                               rtol=1e-5)


MODULES = [("ELU", (), {"alpha": 0.5}), ("SELU", (), {}), ("CELU", (), {"alpha": 2.0}),
           ("Hardtanh", (-0.5, 2.0), {}), ("ReLU6", (), {}), ("Softsign", (), {}),
           ("Mish", (), {}), ("Hardswish", (), {}), ("Hardsigmoid", (), {}),
           ("LogSigmoid", (), {}), ("Tanhshrink", (), {}), ("Softmin", (), {"dim": 0}),
           ("GLU", (), {"dim": 0})]


@pytest.mark.parametrize("name, args, kwargs", MODULES, ids=[m[0] for m in MODULES])
def test_activation_modules_as_pytorchs(name, args, kwargs):
    values = GRID[:12]
    outs = []
    for lib in (ktorch, torch):
        module = getattr(lib.nn, name)(*args, **kwargs)
        outs.append((module(lib.tensor(values, dtype=lib.float64)).numpy(), repr(module)))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12, atol=1e-14)
    assert outs[0][1] == outs[1][1]


@pytest.mark.parametrize("name, kwargs", [("L1Loss", {}), ("SmoothL1Loss", {"beta": 0.5}),
                                          ("HuberLoss", {"delta": 2.0}),
                                          ("KLDivLoss", {"reduction": "batchmean"})])
def test_loss_modules_as_pytorchs(name, kwargs):
    outs = []
    for lib in (ktorch, torch):
        a = lib.tensor([[-1.0, 0.25, 3.0], [0.5, -2.0, 0.0]], dtype=lib.float64)
        b = lib.tensor([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=lib.float64)
        outs.append(float(getattr(lib.nn, name)(**kwargs)(a, b)))
    assert outs[0] == pytest.approx(outs[1], rel=1e-12)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                                  "binary_cross_entropy_with_logits", "kl_div"])
def test_losses_of_mixed_dtypes_shapes_and_grads_are_pytorchs(name):
    # huber_loss computes in the input's dtype and its backward refuses a target of another
    # dtype; the others promote: each as PyTorch 2.13
    shapes = [((3,), (3,)), ((), (3,)), ((3,), ()), ((2, 0), ())]

    def call(functional, x, t):
        return getattr(functional, name)(x, t, reduction="sum")

    assert_same_pairs(pair_outcomes(ktorch, call, shapes), pair_outcomes(torch, call, shapes))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        x = ktorch.ones(2, requires_grad=True)
        F(ktorch).huber_loss(x, ktorch.zeros(2, dtype=ktorch.float64)).backward()


@pytest.mark.parametrize("lib", [ktorch, torch], ids=["kit", "pytorch"])
def test_huber_loss_of_integers_refuses_shapes_before_the_dtype(lib):
    # (found by tests/test_differential.py: kit refused the dtype first)
    with pytest.raises(RuntimeError) as caught, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F(lib).huber_loss(lib.zeros(0, dtype=lib.int64), lib.zeros(3, dtype=lib.int64))
    assert not isinstance(caught.value, NotImplementedError)
