"""Norms (kit/ops/norms.py) and var/std where the generic registry tests cannot look: gradients
at zero (not differentiable there, so no finite differences: PyTorch gives 0, not NaN), the
warning and the inf/NaN of var/std with N <= correction, and the errors. Each test runs on
kit.torch and on real PyTorch with the same code."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from torch_oracle import is_kit, libraries

LIBRARIES = libraries()
NORMS = [
    ("norm", lambda t, x: x.norm()),
    ("norm p=3", lambda t, x: t.norm(x, 3)),
    ("norm inf dim", lambda t, x: t.norm(x, float("inf"), 0).sum()),
    ("vector_norm", lambda t, x: t.linalg.vector_norm(x)),
    ("vector_norm 0.5", lambda t, x: t.linalg.vector_norm(x, 0.5)),
    ("vector_norm 1", lambda t, x: t.linalg.vector_norm(x, 1, dim=1).sum()),
    ("linalg.norm", lambda t, x: t.linalg.norm(x)),
    ("matrix_norm fro", lambda t, x: t.linalg.matrix_norm(x)),
    ("matrix_norm inf", lambda t, x: t.linalg.matrix_norm(x, float("inf"))),
]


@pytest.mark.parametrize("torch", LIBRARIES)
@pytest.mark.parametrize(("name", "fn"), NORMS, ids=[n for n, _ in NORMS])
def test_norm_gradients_at_zero_are_zero(torch, name, fn):
    """All zeros, and zeros next to other values: the gradient is 0 at the zeros and finite
    everywhere (the chain rule through sqrt would give inf * 0 = NaN)."""
    for values in ([[0.0, 0.0], [0.0, 0.0]], [[0.0, -2.0], [0.0, 0.5]]):
        x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        fn(torch, x).backward()
        grad = x.grad.numpy()
        assert np.isfinite(grad).all(), (name, grad)
        assert (grad[np.array(values) == 0] == 0).all(), (name, grad)


def test_norm_gradients_equal_pytorch_next_to_zeros():
    torch = pytest.importorskip("torch")
    import kit.torch as ktorch

    values = [[0.0, -2.0, 0.0], [1.5, 0.0, 0.25]]
    for name, fn in NORMS:
        grads = []
        for lib in (ktorch, torch):
            x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
            fn(lib, x).backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("torch", LIBRARIES)
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_with_no_degrees_of_freedom_warn_and_give_nan_or_inf(torch, op):
    cases = [([1.0], {}, math.nan), ([1.0, 2.0], {"correction": 2}, math.inf),
             ([1.0, 2.0], {"correction": 3}, math.inf), ([], {}, math.nan)]
    for values, kwargs, expected in cases:
        x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            y = getattr(x, op)(**kwargs)
        assert (math.isnan(y.item()) and math.isnan(expected)) or y.item() == expected
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y.backward()
        if values:
            assert not np.isfinite(x.grad.numpy()).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # enough degrees of freedom: no warning
        assert getattr(torch.tensor([[1.0], [3.0]]), op)(0).shape == (1,)


@pytest.mark.parametrize("torch", LIBRARIES)
def test_norm_errors(torch):
    x = torch.ones(2, 2)
    with pytest.raises(TypeError):
        torch.linalg.vector_norm(x, "fro")
    with pytest.raises(RuntimeError, match="floating point"):
        torch.linalg.vector_norm(torch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.linalg.matrix_norm(torch.ones(3))
    with pytest.raises(TypeError):
        torch.linalg.matrix_norm(x, "fro", 1)
    with pytest.raises(RuntimeError, match="2-tuple"):
        torch.linalg.matrix_norm(torch.ones(2, 2, 2), "fro", (0, 1, 2))
    with pytest.raises(RuntimeError, match="not supported"):
        torch.linalg.matrix_norm(x, 3)
    with pytest.raises(RuntimeError, match="1D or 2D" if not is_kit(torch) else "1-D or 2-D"):
        torch.linalg.norm(torch.ones(2, 2, 2), 1)


def test_what_kit_does_not_compute_says_what_it_does():
    import kit.torch as torch

    for call in (lambda: torch.linalg.matrix_norm(torch.ones(2, 2), "nuc"),
                 lambda: torch.linalg.norm(torch.ones(2, 2), 2),
                 lambda: torch.norm(torch.ones(2, 2), "nuc")):
        with pytest.raises(NotImplementedError, match="singular values.*Fix: "):
            call()


@pytest.mark.parametrize("torch", LIBRARIES)
def test_linalg_norm_dispatches_as_pytorch(torch):
    """dim=None: the flattened 2-norm, or with ord a vector (1-D) or matrix (2-D) norm; one dim:
    a vector norm; two: a matrix norm."""
    x = torch.tensor([[1.0, -3.0], [2.0, 0.5]])
    values = [(torch.linalg.norm(x), math.sqrt(14.25)), (torch.linalg.norm(x, 1), 3.5),
              (torch.linalg.norm(x, float("inf")), 4.0),
              (torch.linalg.norm(x, dim=1), [math.sqrt(10), math.sqrt(4.25)]),
              (torch.linalg.norm(x, 1, dim=(0, 1)), 3.5), (torch.norm(x, 1, (0, 1)), 6.5),
              (torch.norm(x, float("inf"), 1), [3.0, 2.0]),
              (torch.linalg.matrix_norm(torch.ones(3, 2, 2), -float("inf")), [2.0] * 3)]
    for got, expected in values:
        np.testing.assert_allclose(got.tolist(), expected, rtol=1e-6)
    assert torch.linalg.vector_norm(x, keepdim=True).shape == (1, 1)
    assert torch.linalg.vector_norm(x, dtype=torch.float64).dtype == torch.float64
