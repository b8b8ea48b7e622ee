"""kit/ops/statistics.py at the edges, against PyTorch 2.13: ties, NaN, integers, empty tensors,
errors, and the gradients PyTorch gives at ties and at zeros."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import host
from test_ops_selection import same_as_pytorch

import kit
import kit.torch as ktorch
from kit.func import vmap

torch = pytest.importorskip("torch")

NAN = float("nan")
TIES = [1.0, 2.0, 2.0, 2.0, 3.0, 2.0, 0.0]
ROWS = [[3.0, 1.0, 2.0, 4.0], [1.0, NAN, 1.0, 2.0], [5.0, 5.0, 5.0, 5.0]]

PROGRAMS = [
    lambda m: m.median(m.tensor([3.0, 1.0, 2.0, 4.0])),
    lambda m: m.median(m.tensor(TIES), 0),
    lambda m: m.median(m.tensor(ROWS), 1),
    lambda m: m.median(m.tensor(ROWS), 1, keepdim=True),
    lambda m: m.median(m.tensor(ROWS)),
    lambda m: m.median(m.tensor([3, 1, 2, 4], dtype=m.int32)),
    lambda m: m.median(m.tensor([[1, 5, 2], [3, 3, 3]], dtype=m.int32), 1),
    lambda m: m.median(m.tensor([])),
    lambda m: m.median(m.ones(0, 3), 1),
    lambda m: m.median(m.ones(0, 3), 0),
    lambda m: m.median(m.tensor(3.0), 0),
    lambda m: m.tensor(ROWS).median(dim=0),
    lambda m: m.nanmedian(m.tensor(ROWS), 1),
    lambda m: m.nanmedian(m.tensor([NAN, NAN]), 0),
    lambda m: m.nanmedian(m.tensor([1.0, NAN, 2.0])),
    lambda m: m.kthvalue(m.tensor([3.0, 1.0, 2.0, 4.0]), 2),
    lambda m: m.kthvalue(m.tensor([3.0, NAN, 1.0]), 3),
    lambda m: m.kthvalue(m.tensor([3.0, 1.0]), 3),
    lambda m: m.kthvalue(m.ones(2, 3), 0, 1),
    lambda m: m.kthvalue(m.tensor(3.0), 1),
    lambda m: m.tensor(ROWS).kthvalue(1, 0, True),
    lambda m: m.count_nonzero(m.tensor([[0, 1], [2, 0]]), 0),
    lambda m: m.count_nonzero(m.tensor([[0.0, NAN], [2.0, -0.0]])),
    lambda m: m.count_nonzero(m.tensor([[0, 1], [2, 0]]), (0, 1)),
    lambda m: m.count_nonzero(m.tensor([True, False])),
    lambda m: m.quantile(m.tensor([1.0, 2.0, 3.0, 4.0]), 0.4),
    lambda m: m.quantile(m.tensor(ROWS), m.tensor([0.25, 0.5]), dim=1, keepdim=True),
    lambda m: m.quantile(m.ones(3, 4), m.tensor([0.25, 0.5])),
    lambda m: m.quantile(m.tensor([[1.0, 2.0], [3.0, 4.0]]), 0.5, keepdim=True),
    lambda m: m.quantile(m.tensor([1, 2]), 0.5),
    lambda m: m.quantile(m.tensor([1.0, 2.0]), 1.5),
    lambda m: m.quantile(m.tensor([1.0, NAN]), 0.5),
    lambda m: m.quantile(m.tensor([]), 0.5),
    lambda m: m.quantile(m.tensor([1.0, 2.0]), m.tensor([0.5], dtype=m.float64)),
    lambda m: m.quantile(m.tensor([1.0, 2.0]), m.tensor([[0.5]])),
    lambda m: m.quantile(m.tensor([1.0, 2.0]), 0.5, interpolation="foo"),
    lambda m: [m.quantile(m.tensor([1.0, 2.0, 3.0, 4.0]), q, interpolation=how)
               for how in ("lower", "higher", "midpoint", "nearest", "linear")
               for q in (0.4, 0.5, 1 / 6, 0.83, 0.0, 1.0)],
    lambda m: m.nanquantile(m.tensor([1.0, NAN, 3.0]), 0.5),
    lambda m: m.nanquantile(m.tensor([NAN, NAN]), 0.5),
    lambda m: m.nanquantile(m.tensor(ROWS), m.tensor([0.1, 0.9]), 1),
    lambda m: m.cumprod(m.tensor([1, 2, 3]), 0),
    lambda m: m.cumprod(m.tensor([True, True, False]), 0),
    lambda m: m.cumprod(m.tensor([[1.0, 2.0], [3.0, 4.0]]), dim=1, dtype=m.float64),
    lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]]).cumprod(0),
    lambda m: m.cumprod(m.tensor(3.0), 0),
    lambda m: m.cumprod(m.ones(0, 2), 0),
    lambda m: m.logcumsumexp(m.tensor([-1000.0, 0.0, 1000.0]), 0),
    lambda m: m.logcumsumexp(m.tensor([-float("inf"), -float("inf"), 1.0]), 0),
    lambda m: m.logcumsumexp(m.tensor([1, 2]), 0),
    lambda m: m.logcumsumexp(m.tensor([[1.0, 2.0], [3.0, 4.0]]), dim=0),
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_as_pytorch(program):
    same_as_pytorch(program)


def _gradients(program):
    results = []
    for m in (ktorch, torch):
        x = m.tensor([2.0, 0.0, 3.0, 0.0, 4.0, 1.0, 2.0, 2.0], dtype=m.float64,
                     requires_grad=True)
        results.append([host(t) if isinstance(t, kit.Tensor) else t.detach().numpy()
                        for t in program(m, x)])
    for got, expected in zip(*results, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_median_shares_its_gradient_among_ties_as_pytorch():
    _gradients(lambda m, x: m.autograd.grad(m.median(x), x))
    _gradients(lambda m, x: m.autograd.grad(m.median(x.reshape(2, 4), 1).values.sum(), x))


def test_quantile_and_kthvalue_gradients_follow_the_stable_sort_as_pytorch():
    _gradients(lambda m, x: m.autograd.grad(m.quantile(x, m.tensor(
        [0.5, 0.9], dtype=m.float64)).sum(), x))
    _gradients(lambda m, x: m.autograd.grad(m.kthvalue(x, 3).values, x))


def test_cumprod_gradients_at_zeros_to_second_order_as_pytorch():
    def program(m, x):
        weights = m.tensor(np.arange(8.0) - 3, dtype=m.float64)
        (g,) = m.autograd.grad((m.cumprod(x, 0) * weights).sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        return g, gg

    _gradients(program)


def test_logcumsumexp_gradient_is_finite_at_extremes_as_pytorch():
    def program(m, x):
        y = x * 400 - 600  # from -600 to 1000: exp overflows and underflows
        return m.autograd.grad((m.logcumsumexp(y, 0) * m.tensor(np.linspace(
            -1, 1, 8), dtype=m.float64)).sum(), x)

    _gradients(program)


def test_kthvalue_at_ties_names_the_stable_sorts_element():
    # PyTorch's quickselect may name another of the tied elements (unspecified); the value agrees
    got = ktorch.kthvalue(ktorch.tensor(TIES), 3)
    expected = torch.kthvalue(torch.tensor(TIES), 3)
    assert got.values.item() == expected.values.item() == 2.0
    assert got.indices.item() == 1 and TIES[expected.indices.item()] == 2.0


def test_order_statistics_batch_under_vmap():
    x = kit.tensor(np.random.default_rng(0).standard_normal((3, 5)))
    for fn in (lambda t: kit.median(t), lambda t: kit.median(t, 0).values,
               lambda t: kit.quantile(t, 0.3), lambda t: kit.kthvalue(t, 2).indices,
               lambda t: kit.cumprod(t, 0), lambda t: kit.logcumsumexp(t, 0)):
        got = vmap(fn)(x)
        np.testing.assert_allclose(host(got), np.stack([host(fn(row)) for row in x]))
