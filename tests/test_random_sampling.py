"""kit/_random.py and logspace: randperm, multinomial, bernoulli, normal and the in-place random
fills. kit draws from its own generator (NumPy's PCG64), so the numbers are not PyTorch's; the
tests check distributions (with fixed seeds), shapes, dtypes, gradients and errors against
PyTorch 2.13."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import host
from test_ops_selection import same_as_pytorch

import kit
import kit.torch as ktorch

torch = pytest.importorskip("torch")


def _shape_and_dtype(program):
    """program's result on kit.torch and PyTorch: the same shape and dtype (or the same error)."""
    def described(m):
        out = program(m)
        return m.tensor(list(out.shape)), m.zeros((), dtype=out.dtype)

    same_as_pytorch(described)


@pytest.mark.parametrize("program", [
    lambda m: m.randperm(5),
    lambda m: m.randperm(3, dtype=m.float32),
    lambda m: m.randperm(0),
    lambda m: m.randperm(-1),
    lambda m: m.multinomial(m.tensor([0.1, 0.0, 0.9]), 2),
    lambda m: m.multinomial(m.tensor([[0.5, 0.5, 0.0], [0.0, 0.2, 0.8]]), 1),
    lambda m: m.multinomial(m.tensor([0.1, 0.0, 0.9]), 5, replacement=True),
    lambda m: m.multinomial(m.tensor([0.1, 0.9]), 3),
    lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 1),
    lambda m: m.multinomial(m.tensor([0.0, 0.0]), 1),
    lambda m: m.multinomial(m.tensor([1, 2]), 1),
    lambda m: m.multinomial(m.ones(2, 2, 2), 1),
    lambda m: m.tensor([1.0, 2.0]).multinomial(1),
    lambda m: m.bernoulli(m.tensor([0.0, 1.0, 0.5])),
    lambda m: m.bernoulli(m.tensor([0.0, 1.0], dtype=m.float64), 0.5),
    lambda m: m.bernoulli(m.tensor([1.5])),
    lambda m: m.bernoulli(m.tensor([1])),
    lambda m: m.tensor([0.5, 0.5]).bernoulli(),
    lambda m: m.normal(m.zeros(3), m.ones(3)),
    lambda m: m.normal(m.zeros(3), 2.0),
    lambda m: m.normal(0.0, m.ones(2, 3)),
    lambda m: m.normal(0.0, 1.0, (2, 3)),
    lambda m: m.normal(0.0, 1.0, size=(2,)),
    lambda m: m.normal(m.zeros(3), m.ones(2, 1)),
    lambda m: m.normal(m.zeros(3), -1.0),
    lambda m: m.zeros(3).normal_(0, 1),
    lambda m: m.zeros(3, dtype=m.float64).uniform_(0, 1),
    lambda m: m.zeros(3).bernoulli_(0.5),
    lambda m: m.zeros(3).bernoulli_(m.tensor([0.0, 1.0, 1.0])),
    lambda m: m.logspace(0, 2, 3),
    lambda m: m.logspace(0, 2, 3, base=2),
    lambda m: m.logspace(0, 2, 3, dtype=m.int64),
])
def test_shapes_dtypes_and_errors_as_pytorch(program):
    _shape_and_dtype(program)


def test_logspace_values_as_pytorch():
    for args, kwargs in [((0, 2, 3), {}), ((-1, 3, 5), {"base": 2}),
                         ((0, 2, 3), {"dtype": "int64"})]:
        dtype = kwargs.pop("dtype", None)
        got = ktorch.logspace(*args, **kwargs, dtype=getattr(ktorch, dtype) if dtype else None)
        expected = torch.logspace(*args, **kwargs, dtype=getattr(torch, dtype) if dtype else None)
        np.testing.assert_allclose(host(got), expected.double().numpy(), rtol=1e-6)


def test_samples_follow_their_distributions():
    kit.manual_seed(0)
    perm = ktorch.randperm(100)
    assert sorted(perm.tolist()) == list(range(100)) and perm.tolist() != list(range(100))
    p = ktorch.tensor([0.2, 0.0, 0.5, 0.3])
    counts = np.bincount(host(ktorch.multinomial(p, 20000, replacement=True)).astype(int),
                         minlength=4)
    np.testing.assert_allclose(counts / 20000, [0.2, 0.0, 0.5, 0.3], atol=0.015)
    first = [ktorch.multinomial(p, 4).tolist() for _ in range(2000)]
    assert all(sorted(row) == [0, 1, 2, 3] and row[-1] == 1 for row in first)  # p=0 comes last
    np.testing.assert_allclose(np.bincount([row[0] for row in first], minlength=4) / 2000,
                               [0.2, 0.0, 0.5, 0.3], atol=0.04)
    draws = host(ktorch.bernoulli(ktorch.full((20000,), 0.3)))
    assert set(np.unique(draws)) <= {0.0, 1.0} and abs(draws.mean() - 0.3) < 0.015
    normal = host(ktorch.normal(ktorch.full((20000,), 2.0), ktorch.full((20000,), 0.5)))
    assert abs(normal.mean() - 2.0) < 0.02 and abs(normal.std() - 0.5) < 0.02
    uniform = host(ktorch.zeros(20000).uniform_(-1, 3))
    assert uniform.min() >= -1 and uniform.max() < 3 and abs(uniform.mean() - 1) < 0.05


def test_a_generator_gives_the_same_draws_again():
    def draws(seed):
        g = ktorch.Generator().manual_seed(seed)
        return [ktorch.randperm(6, generator=g).tolist(),
                ktorch.multinomial(ktorch.ones(5), 3, generator=g).tolist(),
                ktorch.normal(ktorch.zeros(2), 1.0, generator=g).tolist(),
                ktorch.zeros(3).normal_(generator=g).tolist()]

    assert draws(7) == draws(7) and draws(7) != draws(8)


def test_samples_from_parameters_that_require_grad_have_a_zero_gradient_as_pytorch():
    for m in (ktorch, torch):
        mean = m.zeros(3, requires_grad=True)
        std = m.ones(3, requires_grad=True)
        p = m.full((3,), 0.5, requires_grad=True)
        out = m.normal(mean, std).sum() + m.bernoulli(p).sum()
        assert out.requires_grad
        out.backward()
        for t in (mean, std, p):
            assert not np.asarray(t.grad.tolist()).any()


def test_in_place_fills_refuse_a_leaf_that_requires_grad_outside_no_grad():
    w = ktorch.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"leaf Variable that requires grad.*\(normal_\)"):
        w.normal_()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch.zeros(2, requires_grad=True).normal_()
    with ktorch.no_grad():
        assert w.uniform_(2, 3) is w
    assert host(w).min() >= 2
