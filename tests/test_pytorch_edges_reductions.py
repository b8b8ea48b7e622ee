"""Reductions at the edges, run on kit.torch and (where installed) real PyTorch: dim=[] in var,
std and the norms, var/std of empty tensors, the inf norms over several dims (and their
gradients at ties), amax/amin of empty tensors with repeated dims."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from tests.torch_oracle import libraries

LIBS = libraries()
X = np.arange(6.0).reshape(2, 3)


def values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


@pytest.mark.parametrize("torch", LIBS)
@pytest.mark.parametrize("call, want, shape", [
    (lambda torch, x: x.var(dim=[]), 3.5, ()),
    (lambda torch, x: x.std(dim=()), math.sqrt(3.5), ()),
    (lambda torch, x: torch.var(x, dim=[], keepdim=True), 3.5, (1, 1)),
    (lambda torch, x: x.norm(dim=[]), math.sqrt(55), ()),
    (lambda torch, x: torch.norm(x, 1, dim=[]), 15.0, ()),
    (lambda torch, x: x.norm(math.inf, dim=[]), 5.0, ()),
    (lambda torch, x: torch.linalg.vector_norm(x, dim=[]), math.sqrt(55), ()),
], ids=["var", "std ()", "torch.var keepdim", "norm", "norm 1", "norm inf", "vector_norm"])
def test_dim_empty_list_reduces_every_dim(torch, call, want, shape):
    out = call(torch, torch.tensor(X))
    assert tuple(out.shape) == shape
    np.testing.assert_allclose(values(out), want)


@pytest.mark.parametrize("torch", LIBS)
@pytest.mark.parametrize("shape, dim, want", [
    ((0,), None, ()), ((0, 3), 0, (3,)), ((0, 3), 1, (0,)), ((2, 0), 0, (0,)),
    ((2, 0), 1, (2,)), ((1,), None, ()),
])
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_and_std_warn_on_an_empty_tensor_whatever_the_dims(torch, shape, dim, want, op):
    x = torch.zeros(shape, dtype=torch.float64)
    with pytest.warns(UserWarning, match=rf"{op}\(\): degrees of freedom is <= 0"):
        out = getattr(x, op)() if dim is None else getattr(x, op)(dim)
    assert tuple(out.shape) == want and np.isnan(values(out)).all()


@pytest.mark.parametrize("torch", LIBS)
def test_var_of_a_non_empty_reduction_does_not_warn(torch):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert values(torch.ones(2, 3).var(1)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("torch", LIBS)
@pytest.mark.parametrize("call, want, grad", [
    (lambda torch, x: x.norm(math.inf), 1.0, [[0.5, -0.5], [0.0, 0.0]]),
    (lambda torch, x: torch.linalg.vector_norm(x, math.inf, dim=(0, 1)), 1.0,
     [[0.5, -0.5], [0.0, 0.0]]),
    (lambda torch, x: torch.linalg.vector_norm(x, -math.inf, dim=(0, 1), keepdim=True).sum(),
     0.5, [[0.0, 0.0], [1.0, 0.0]]),
    (lambda torch, x: torch.linalg.vector_norm(x, math.inf, dim=1).sum(), 1.75,
     [[0.5, -0.5], [0.0, 1.0]]),
    (lambda torch, x: torch.linalg.matrix_norm(x, math.inf), 2.0, [[1.0, -1.0], [0.0, 0.0]]),
], ids=["norm inf", "vector_norm inf 2 dims", "-inf keepdim", "inf dim 1", "matrix inf"])
def test_inf_norms_over_several_dims_share_the_gradient_among_ties(torch, call, want, grad):
    x = torch.tensor([[1.0, -1.0], [0.5, 0.75]], dtype=torch.float64, requires_grad=True)
    out = call(torch, x)
    out.backward()
    assert out.item() == want
    np.testing.assert_allclose(values(x.grad), grad)


@pytest.mark.parametrize("torch", LIBS)
def test_inf_norm_over_an_empty_dim_is_an_error_and_over_others_empty(torch):
    x = torch.zeros(0, 3)
    assert tuple(torch.linalg.vector_norm(x, math.inf, dim=1).shape) == (0,)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on the dimension 0"):
        torch.linalg.vector_norm(x, math.inf, dim=0)


@pytest.mark.parametrize("torch", LIBS)
@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dims, error", [
    ((0, 0), IndexError), ((1, 1, 0), IndexError), ((0, 5), IndexError), ((5, 0), IndexError),
    ((1, 1), RuntimeError), ((1, -1), RuntimeError),
])
def test_amax_of_an_empty_tensor_checks_sizes_before_repeated_dims(torch, op, dims, error):
    with pytest.raises(error) as caught:
        getattr(torch.zeros(0, 3), op)(dim=dims)
    assert error is not RuntimeError or "appears multiple times" in str(caught.value)
