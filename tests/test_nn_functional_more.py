"""torch.nn.functional's signal and vector functions (kit/ops/signal.py, kit/ops/vectors.py) at
the edges: unbatched inputs, dtypes, errors, as PyTorch 2.13 (the generic registry tests check
values, gradients to second order, vmap and the GPU on float samples)."""

from __future__ import annotations

import pytest
from test_ops_selection import same_as_pytorch

torch = pytest.importorskip("torch")


def F(m):  # noqa: N802 - PyTorch's spelling
    return m.nn.functional


def _arange(m, *shape):
    n = 1
    for s in shape:
        n *= s
    return m.arange(float(n)).reshape(*shape)


PROGRAMS = [
    lambda m: F(m).max_pool1d(_arange(m, 2, 5), 2),
    lambda m: F(m).max_pool1d(_arange(m, 1, 2, 5), 2, return_indices=True),
    lambda m: F(m).max_pool1d(_arange(m, 5), 2),
    lambda m: m.max_pool1d(_arange(m, 1, 2, 5), 2, 1, 0, 2),
    lambda m: F(m).avg_pool1d(_arange(m, 1, 2, 5), 3, 2, 1, count_include_pad=False),
    lambda m: m.avg_pool1d(_arange(m, 2, 5), (2,)),
    lambda m: F(m).avg_pool2d(_arange(m, 1, 1, 4, 4), 2),
    lambda m: F(m).conv1d(_arange(m, 2, 5), m.ones(3, 2, 2)),
    lambda m: F(m).conv1d(_arange(m, 1, 2, 5), m.ones(3, 2, 3), padding="same"),
    lambda m: F(m).conv1d(_arange(m, 1, 2, 5), m.ones(3, 2, 2), padding="valid", stride=(2,)),
    lambda m: F(m).conv1d(_arange(m, 1, 2, 5), m.ones(3, 2, 2, 2)),
    lambda m: F(m).conv1d(_arange(m, 1, 2, 5), m.ones(3, 2, 3), padding="same", stride=2),
    lambda m: F(m).pad(m.ones(2, 2), (1, 2)),
    lambda m: F(m).pad(m.ones(2, 3), (-1, 1)),
    lambda m: F(m).pad(m.ones(2, dtype=m.int64), (1, 1), value=2.5),
    lambda m: F(m).pad(m.tensor([True, False]), (1, 0)),
    lambda m: F(m).pad(_arange(m, 1, 4), (2, 1), mode="reflect"),
    lambda m: F(m).pad(_arange(m, 1, 4), (4, 1), mode="reflect"),
    lambda m: F(m).pad(_arange(m, 1, 4), (2, 1, 0, 0), mode="reflect"),
    lambda m: F(m).pad(_arange(m, 4), (2, 1), mode="replicate"),
    lambda m: F(m).pad(_arange(m, 1, 1, 4), (2, 1), mode="replicate"),
    lambda m: F(m).pad(_arange(m, 1, 1, 4), (5, 6), mode="circular"),
    lambda m: F(m).pad(_arange(m, 1, 2, 3, 4), (1, 1, 2, 0), mode="replicate"),
    lambda m: F(m).pad(m.ones(2), (1,)),
    lambda m: F(m).pad(m.ones(2), (1, 1, 1, 1)),
    lambda m: F(m).pad(m.ones(2), (1, 1), mode="foo"),
    lambda m: F(m).interpolate(_arange(m, 1, 1, 3), scale_factor=2),
    lambda m: F(m).interpolate(_arange(m, 1, 1, 3), size=5),
    lambda m: F(m).interpolate(_arange(m, 1, 1, 4, 4), size=(3, 2)),
    lambda m: F(m).interpolate(_arange(m, 1, 1, 4), scale_factor=1.5),
    lambda m: F(m).interpolate(_arange(m, 1, 1, 4), scale_factor=1.5,
                               recompute_scale_factor=True),
    lambda m: F(m).interpolate(_arange(m, 1, 1, 4), scale_factor=0.5, mode="linear"),
    lambda m: F(m).interpolate(_arange(m, 1, 1, 4, 4), size=(3, 3), mode="bilinear",
                               align_corners=True),
    lambda m: F(m).interpolate(_arange(m, 1, 1, 2, 2), size=(3, 3), mode="nearest-exact"),
    lambda m: F(m).interpolate(m.ones(1, 1, 3), scale_factor=2, mode="bilinear"),
    lambda m: F(m).interpolate(m.ones(1, 1, 2, 2), size=3, mode="nearest", align_corners=True),
    lambda m: F(m).interpolate(m.ones(1, 1, 2, 2), size=3, scale_factor=2),
    lambda m: F(m).interpolate(m.ones(1, 1, 2, 2)),
    lambda m: F(m).one_hot(m.tensor([0, 2]), 3),
    lambda m: F(m).one_hot(m.tensor([[0, 2]])),
    lambda m: F(m).one_hot(m.tensor([], dtype=m.int64), 3),
    lambda m: F(m).one_hot(m.tensor([], dtype=m.int64)),
    lambda m: F(m).one_hot(m.tensor([0.0, 2.0])),
    lambda m: F(m).one_hot(m.tensor([-1, 2])),
    lambda m: F(m).one_hot(m.tensor([3]), 3),
    lambda m: F(m).cosine_similarity(m.tensor([[1.0, 0.0], [1.0, 1.0]]), m.tensor([[1.0, 1.0]])),
    lambda m: F(m).cosine_similarity(m.tensor([[0.0, 0.0]]), m.tensor([[1.0, 1.0]])),
    lambda m: m.cosine_similarity(m.tensor([1.0, 0.0]), m.tensor([1.0, 1.0]), dim=0),
    lambda m: F(m).pairwise_distance(m.tensor([[1.0, 0.0], [1.0, 1.0]]), m.tensor([[1.0, 1.0]])),
    lambda m: F(m).pairwise_distance(m.tensor([1.0, 0.0]), m.tensor([1.0, 1.0]), p=1,
                                     keepdim=True),
    lambda m: F(m).normalize(m.tensor([[3.0, 4.0], [0.0, 0.0]])),
    lambda m: F(m).normalize(m.tensor([[3.0, 4.0], [1.0, 0.0]]), p=1, dim=0),
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_as_pytorch(program):
    same_as_pytorch(program)


def test_zero_vectors_have_finite_gradients_as_pytorch():
    import numpy as np
    from helpers import host

    import kit.torch as ktorch

    def program(m):
        a = m.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=m.float64, requires_grad=True)
        b = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64, requires_grad=True)
        out = (F(m).cosine_similarity(a, b) + F(m).pairwise_distance(a, b)
               + F(m).normalize(a).sum(1))
        out.sum().backward()
        return [out, a.grad, b.grad]

    for got, expected in zip(program(ktorch), program(torch), strict=True):
        np.testing.assert_allclose(host(got), expected.detach().numpy(), rtol=1e-7, atol=1e-12)
