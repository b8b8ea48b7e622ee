"""kit/ops/selection.py and kit/ops/rearrange.py, and unbind/split's pieces, at the edges: the
same program on kit.torch and on PyTorch 2.13 gives the same values, dtypes and exception types
(the generic registry tests check values and gradients on float samples)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import host

import kit
import kit.torch as ktorch
from kit.func import vmap

torch = pytest.importorskip("torch")


def _run(program, module):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = program(module)
    except (RuntimeError, TypeError, IndexError, ValueError, NotImplementedError,
            UserWarning) as exc:
        return exc
    return out


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _flat(o)]
    return [out]


def same_as_pytorch(program):
    """program(kit.torch) and program(torch): equal results (to float32 rounding), or the same
    built-in exception class."""
    got, expected = _run(program, ktorch), _run(program, torch)
    if isinstance(expected, Exception):  # the same built-in class (torch's LinAlgError: Runtime)
        kind = next(c for c in type(expected).__mro__ if c.__module__ == "builtins")
        assert isinstance(got, kind), (got, expected)
        return got
    assert not isinstance(got, Exception), got
    for g, e in zip(_flat(got), _flat(expected), strict=True):
        if not isinstance(e, torch.Tensor):
            assert g == e
            continue
        assert tuple(g.shape) == tuple(e.shape), (g.shape, e.shape)
        assert np.dtype(g.dtype) == e.numpy().dtype, (g.dtype, e.dtype)
        np.testing.assert_allclose(host(g), e.double().numpy(), rtol=1e-6, equal_nan=True)
    return got


X = [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]
INDEXING = [
    lambda m: m.index_select(m.tensor(X), 1, m.tensor([2, 0, 2])),
    lambda m: m.tensor(X).index_select(0, m.tensor([1], dtype=m.int32)),
    lambda m: m.index_select(m.tensor(5.0), 0, m.tensor([0])),
    lambda m: m.index_select(m.tensor(X), 1, m.tensor(1)),
    lambda m: m.index_select(m.tensor(X), 1, m.tensor([[2, 0]])),
    lambda m: m.index_select(m.tensor(X), 1, m.tensor([2.0])),
    lambda m: m.index_select(m.tensor(X), 1, m.tensor([4])),
    lambda m: m.index_select(m.tensor(X), 1, m.tensor([-1])),
    lambda m: m.index_select(m.tensor(X), 2, m.tensor([0])),
    lambda m: m.masked_select(m.tensor(X), m.tensor([True, False, True, False])),
    lambda m: m.masked_select(m.tensor([1, 2]), m.tensor([[True], [False]])),
    lambda m: m.masked_select(m.tensor(X), m.tensor([1, 0, 1, 0])),
    lambda m: m.take_along_dim(m.tensor(X), m.tensor([[0], [1], [2]]), 1),
    lambda m: m.take_along_dim(m.tensor(X), m.tensor([0, 5])),
    lambda m: m.take_along_dim(m.tensor(X), m.tensor([[0, 1]]), 1),
    lambda m: m.tensor(X).take_along_dim(m.tensor([[0], [2]]), 0),
    lambda m: m.repeat_interleave(m.tensor(X), 2),
    lambda m: m.repeat_interleave(m.tensor(X), m.tensor([1, 2, 0]), dim=0),
    lambda m: m.repeat_interleave(m.tensor([1, 2, 0])),
    lambda m: m.tensor([True, False]).repeat_interleave(3),
    lambda m: m.repeat_interleave(m.tensor(X), -1),
    lambda m: m.repeat_interleave(m.tensor(X), m.tensor([1, 2]), dim=0),
    lambda m: m.repeat_interleave(m.tensor(2.0), 3),
    lambda m: m.nonzero(m.tensor([[0, 1], [2, 0]])),
    lambda m: m.nonzero(m.tensor([[0, 1], [2, 0]]), as_tuple=True),
    lambda m: m.nonzero(m.tensor(3.0)),
    lambda m: m.nonzero(m.tensor(0.0), as_tuple=True),
    lambda m: m.tensor([float("nan"), 0.0, -0.0, 2.0]).nonzero(),
    lambda m: m.argwhere(m.tensor([[0, 1], [True, 0]])),
    lambda m: m.unique(m.tensor([3, 1, 2, 3, 1])),
    lambda m: m.unique(m.tensor([3, 1, 2, 3, 1]), return_inverse=True, return_counts=True),
    lambda m: m.unique(m.tensor([3.0, 1.0]), sorted=False),
    lambda m: m.unique(m.tensor([float("nan"), 1.0, float("nan")]), return_counts=True),
    lambda m: m.unique(m.tensor([[1, 2], [1, 2], [0, 1]]), dim=0, return_inverse=True),
    lambda m: m.unique(m.tensor([[1, 2], [1, 3]]), return_inverse=True),
    lambda m: m.tensor([True, False, True]).unique(return_counts=True),
    lambda m: m.unique(m.tensor(7)),
]


@pytest.mark.parametrize("program", INDEXING)
def test_selection_as_pytorch(program):
    same_as_pytorch(program)


REARRANGING = [
    lambda m: m.flip(m.tensor(X), [0, 1]),
    lambda m: m.flip(m.tensor(X), 1),
    lambda m: m.tensor(X).flip(0, 1),
    lambda m: m.flip(m.tensor(3.0), [0]),
    lambda m: m.fliplr(m.tensor([1, 2])),
    lambda m: m.tensor([[True, False]]).fliplr(),
    lambda m: m.roll(m.tensor(X), 1),
    lambda m: m.roll(m.tensor(X), (1, -1), (0, 1)),
    lambda m: m.roll(m.tensor(X), 1, (0, 1)),
    lambda m: m.roll(m.tensor(X), (1, 2), 0),
    lambda m: m.roll(m.tensor(X), -9, 1),
    lambda m: m.roll(m.tensor(3.0), 1),
    lambda m: m.tensor(X).roll(1, 0),
    lambda m: m.tril(m.tensor(X), -1),
    lambda m: m.triu(m.tensor(X), 5),
    lambda m: m.tril(m.tensor([1.0, 2.0])),
    lambda m: m.tril(m.ones(2, 2, dtype=m.int32)),
    lambda m: m.triu(m.ones(2, 2, dtype=m.bool)),
    lambda m: m.tril(m.tensor([[float("nan"), float("nan")], [1.0, 2.0]])),
    lambda m: m.tril(m.ones(2, 3, 4), 1),
    lambda m: m.diag(m.tensor([1, 2]), -1),
    lambda m: m.diag(m.tensor([True, False])),
    lambda m: m.diag(m.tensor(X), 2),
    lambda m: m.diag(m.tensor(X), -5),
    lambda m: m.diag(m.ones(2, 2, 2)),
    lambda m: m.diag(m.tensor(1.0)),
    lambda m: m.diag_embed(m.tensor([[1, 2], [3, 4]]), 1),
    lambda m: m.diag_embed(m.tensor([[1.0, 2.0], [3.0, 4.0]]), 0, 0, 2),
    lambda m: m.diag_embed(m.tensor([1.0, 2.0]), 0, 1, 0),
    lambda m: m.diag_embed(m.tensor([1.0, 2.0]), 0, 0, 0),
    lambda m: m.trace(m.tensor(X)),
    lambda m: m.trace(m.ones(2, 3, dtype=m.int32)),
    lambda m: m.trace(m.ones(2, 3, dtype=m.bool)),
    lambda m: m.trace(m.ones(2, 3, 3)),
    lambda m: m.hstack([m.tensor([1.0, 2.0]), m.tensor(3.0)]),
    lambda m: m.hstack([m.ones(2, 1), m.zeros(2, 2)]),
    lambda m: m.vstack([m.tensor([1, 2]), m.tensor([[3, 4], [5, 6]])]),
    lambda m: m.row_stack([m.tensor(1), m.tensor(2)]),
    lambda m: m.dstack([m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0])]),
    lambda m: m.dstack([m.ones(2, 3), m.zeros(2, 3)]),
    lambda m: m.column_stack([m.tensor([1, 2]), m.ones(2, 2, dtype=m.int64)]),
    lambda m: m.hstack([]),
    lambda m: m.atleast_3d(m.tensor(1.0), m.tensor([1.0, 2.0])),
    lambda m: m.atleast_2d([m.tensor([1.0])]),
    lambda m: m.atleast_1d(m.tensor(4)),
    lambda m: m.meshgrid(m.tensor([1, 2]), m.tensor([1, 2, 3]), indexing="ij"),
    lambda m: m.meshgrid([m.tensor([1, 2]), m.tensor([1, 2, 3])], indexing="xy"),
    lambda m: m.meshgrid(m.tensor(1), m.tensor([1, 2, 3]), indexing="ij"),
    lambda m: m.meshgrid(m.ones(2, 2), indexing="ij"),
    lambda m: m.meshgrid(m.ones(2), indexing="foo"),
    lambda m: m.meshgrid(m.ones(2), m.ones(3)),
    lambda m: m.kron(m.tensor([[1.0, 2.0], [3.0, 4.0]]), m.tensor([[0.0, 1.0], [1.0, 0.0]])),
    lambda m: m.kron(m.tensor([1, 2]), m.ones(2, 2)),
    lambda m: m.kron(m.tensor([1, 2]), m.tensor([1.5, 2.0])),
    lambda m: m.tensor([[1, 2]]).kron(m.tensor(3)),
]


@pytest.mark.parametrize("program", REARRANGING)
def test_rearranging_as_pytorch(program):
    same_as_pytorch(program)


def test_a_dim_twice_is_refused():
    # (kit.normalize_axis's error: a ShapeError, a RuntimeError too, once issue 11 is merged)
    with pytest.raises((RuntimeError, ValueError), match="more than once|multiple times"):
        ktorch.flip(ktorch.ones(2, 2), (1, 1))


def test_flip_roll_and_diag_are_copies_and_meshgrid_views_as_in_pytorch():
    x = ktorch.arange(6.0).reshape(2, 3)
    for y in (x.flip(0), x.roll(1), ktorch.diag(x), ktorch.tril(x)):
        y.add_(100)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    a, b = ktorch.meshgrid(ktorch.tensor([1, 2]), ktorch.tensor([3, 4, 5]), indexing="ij")
    assert a._base is not None and b._base is not None


def test_tril_and_triu_in_place_and_their_gradients():
    def program(m):
        a = m.tensor(np.arange(1.0, 10.0).reshape(3, 3), dtype=m.float64, requires_grad=True)
        y = a * 2
        y.tril_(-1)
        z = (a * 3).triu_(1) + y
        (z * z).sum().backward()
        return [z, a.grad]

    for got, expected in zip(program(ktorch), program(torch), strict=True):
        np.testing.assert_allclose(host(got), expected.detach().numpy())


def test_unique_and_nonzero_are_not_differentiable_and_not_batched():
    x = ktorch.tensor([3.0, 1.0, 3.0], requires_grad=True)
    u = ktorch.unique(x)
    assert u.requires_grad  # recorded, as PyTorch, so that backward can say why it fails
    with pytest.raises(NotImplementedError, match="derivative for unique is not implemented"):
        u.sum().backward()
    with pytest.raises(NotImplementedError, match="derivative for '_unique2' is not implemented"):
        torch.unique(torch.tensor([3.0, 1.0], requires_grad=True)).sum().backward()
    assert not ktorch.nonzero(x).requires_grad
    for fn in (ktorch.nonzero, ktorch.unique, ktorch.argwhere):
        with pytest.raises(NotImplementedError, match="depends on the data.*outside vmap"):
            vmap(fn)(kit.ones(2, 3))


def test_unbind_and_split_pieces_are_outputs_of_one_node_as_in_pytorch():
    def numbers(m, x):
        return [[p.output_nr for p in pieces] + [type(pieces[0].grad_fn).__name__]
                for pieces in (m.unbind(x), x.split(1), x.split([2, 1]), x.chunk(2, 1))]

    x = ktorch.ones(3, 4, requires_grad=True)
    assert numbers(ktorch, x) == numbers(torch, torch.ones(3, 4, requires_grad=True))
    assert numbers(ktorch, x)[0] == [0, 1, 2, "UnbindBackward0"]
    assert [p.output_nr for p in ktorch.unbind(x.detach())] == [0, 0, 0]  # no node: as PyTorch


def test_pieces_are_views_that_refuse_in_place_changes_while_recorded_as_in_pytorch():
    def program(m, recorded):
        leaf = m.tensor(np.arange(12.0).reshape(3, 4), dtype=m.float64,
                        requires_grad=recorded)
        x = leaf * 1
        first, _, last = x.unbind()
        a, b = x.split([1, 3], 1)
        try:
            first.mul_(2)
        except RuntimeError as exc:
            return str(exc)
        b.add_(last.sum())
        return [x, first, b]

    message = program(ktorch, True)
    assert "Output 0 of UnbindBackward0 is a view and is being modified inplace" in message
    assert "returns multiple views" in program(torch, True)
    for got, expected in zip(program(ktorch, False), program(torch, False), strict=True):
        np.testing.assert_allclose(host(got), expected.numpy())


def test_pieces_second_order_and_unused_pieces():
    def program(m):
        leaf = m.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=m.float64,
                        requires_grad=True)
        a, b = leaf.split([1, 3], 1)
        rows = leaf.unbind(0)
        loss = (b ** 3).sum() + (rows[2] ** 2).sum()
        (g,) = m.autograd.grad(loss, leaf, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), leaf)
        return [g, gg]

    for got, expected in zip(program(ktorch), program(torch), strict=True):
        np.testing.assert_allclose(host(got), expected.detach().numpy(), rtol=1e-12)
