"""torch.linalg's functions of square matrices (kit/ops/square_matrices.py) and the batched
products (kit/ops/linalg.py) at the edges, against PyTorch 2.13: singular matrices (values and
gradients to second order), errors, batches and broadcasting, vmap."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import host
from test_ops_selection import same_as_pytorch

import kit
import kit.torch as ktorch
from kit.func import vmap

torch = pytest.importorskip("torch")

RANK_2 = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
RANK_1 = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]]
A = [[2.0, 1.0], [1.0, 3.0]]

PROGRAMS = [
    lambda m: m.linalg.det(m.tensor(A)),
    lambda m: m.det(m.ones(3, 2, 2)),
    lambda m: m.linalg.det(m.ones(0, 0)),
    lambda m: m.linalg.det(m.eye(2, dtype=m.int64)),
    lambda m: m.linalg.det(m.ones(2, 3)),
    lambda m: m.linalg.det(m.ones(2)),
    lambda m: m.linalg.inv(m.tensor(A)),
    lambda m: m.tensor(A).inverse(),
    lambda m: m.linalg.inv(m.ones(2, 2)),
    lambda m: m.linalg.inv(m.ones(0, 0)),
    lambda m: m.linalg.slogdet(m.tensor([[1.0, 2.0], [3.0, 1.0]])),
    lambda m: m.linalg.slogdet(m.ones(2, 2)),
    lambda m: m.logdet(m.tensor([[1.0, 2.0], [3.0, 1.0]])),
    lambda m: m.logdet(m.ones(2, 2)),
    lambda m: m.linalg.solve(m.tensor(A), m.tensor([1.0, 2.0])),
    lambda m: m.linalg.solve(m.tensor(A), m.ones(2, 3)),
    lambda m: m.linalg.solve(m.stack([m.tensor(A)] * 3), m.ones(3, 2)),
    lambda m: m.linalg.solve(m.stack([m.tensor(A)] * 3), m.ones(2, 3)),
    lambda m: m.linalg.solve(m.tensor(A), m.ones(4, 2, 3)),
    lambda m: m.linalg.solve(m.tensor(A), m.ones(3, 2), left=False),
    lambda m: m.linalg.solve(m.ones(2, 2), m.ones(2)),
    lambda m: m.linalg.solve(m.tensor(A), m.ones(3)),
    lambda m: m.linalg.solve(m.tensor(A), m.ones(2, dtype=m.float64)),
    lambda m: m.linalg.cholesky(m.tensor(A)),
    lambda m: m.linalg.cholesky(m.tensor(A), upper=True),
    lambda m: m.linalg.cholesky(m.tensor([[2.0, 5.0], [1.0, 3.0]])),  # the lower triangle only
    lambda m: m.linalg.cholesky(m.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda m: m.linalg.eigh(m.tensor(A)).eigenvalues,
    lambda m: m.linalg.eigh(m.tensor([[2.0, 9.0], [1.0, 2.0]]), UPLO="U").eigenvalues,
    lambda m: m.linalg.eigh(m.ones(2, 3)),
    lambda m: m.bmm(m.ones(2, 2, 3), m.ones(2, 3, 4)),
    lambda m: m.bmm(m.ones(2, 3), m.ones(3, 2)),
    lambda m: m.bmm(m.ones(1, 2, 3), m.ones(2, 3, 2)),
    lambda m: m.bmm(m.ones(2, 2, 3), m.ones(2, 3, 2, dtype=m.float64)),
    lambda m: m.addmm(m.ones(3), m.ones(2, 3), m.ones(3, 3), beta=0.5, alpha=2),
    lambda m: m.addmm(m.full((3,), float("nan")), m.ones(2, 3), m.ones(3, 3), beta=0),
    lambda m: m.addmm(m.ones(3, dtype=m.int64), m.ones(2, 3, dtype=m.int64),
                      m.ones(3, 3, dtype=m.int64)),
    lambda m: m.addmm(m.ones(4), m.ones(2, 3), m.ones(3, 3)),
    lambda m: m.ones(2, 2).addmm_(m.ones(2, 3), m.ones(3, 2), alpha=3),
    lambda m: m.baddbmm(m.zeros(2, 2, 2), m.ones(2, 2, 3), m.ones(2, 3, 2), alpha=3),
    lambda m: m.tensordot(m.ones(2, 3, 4), m.ones(3, 4, 5), dims=2),
    lambda m: m.tensordot(m.ones(2, 3, 4), m.ones(4, 3, 5), dims=([1, 2], [1, 0])),
    lambda m: m.tensordot(m.ones(2), m.ones(3), dims=0),
    lambda m: m.tensordot(m.ones(2, 3), m.ones(3, 5), dims=m.tensor(1)),
    lambda m: m.tensordot(m.ones(2, 3), m.ones(4, 5), dims=1),
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_as_pytorch(program):
    same_as_pytorch(program)


def test_linalg_errors_are_runtime_errors_that_say_the_fix():
    with pytest.raises(ktorch.linalg.LinAlgError, match="singular.*Fix"):
        ktorch.linalg.inv(ktorch.ones(2, 2))
    with pytest.raises(RuntimeError, match="not positive-definite.*Fix"):
        ktorch.linalg.cholesky(-ktorch.eye(2))
    for name in ("qr", "svd"):
        with pytest.raises(NotImplementedError, match="det, slogdet, inv, solve, cholesky and "
                                                      "eigh"):
            getattr(ktorch.linalg, name)(ktorch.eye(2))
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        np.testing.assert_allclose(host(ktorch.cholesky(ktorch.tensor(A))),
                                   np.linalg.cholesky(np.array(A)), rtol=1e-6)


@pytest.mark.parametrize("matrix", [RANK_2, RANK_1, A], ids=["rank2", "rank1", "full"])
def test_det_gradients_at_singular_matrices_as_pytorch(matrix):
    def program(m):
        x = m.tensor(matrix, dtype=m.float64, requires_grad=True)
        (g,) = m.autograd.grad(m.linalg.det(x), x, create_graph=True)
        (gg,) = m.autograd.grad((g * m.tensor(np.arange(x.numel()).reshape(x.shape) + 1.0,
                                             dtype=m.float64)).sum(), x)
        return g, gg

    (g, gg), (tg, tgg) = program(ktorch), program(torch)
    np.testing.assert_allclose(host(g), tg.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(host(gg), tgg.numpy(), atol=1e-12)
    x = ktorch.tensor(matrix, dtype=ktorch.float64, requires_grad=True)
    ktorch.linalg.det(x).backward()  # first order only: the SVD path
    np.testing.assert_allclose(host(x.grad), tg.detach().numpy(), atol=1e-12)


def test_det_of_the_zero_matrix_has_zero_derivatives_where_pytorch_gives_nan():
    x = ktorch.zeros(3, 3, dtype=ktorch.float64, requires_grad=True)
    (g,) = ktorch.autograd.grad(ktorch.linalg.det(x), x, create_graph=True)
    (gg,) = ktorch.autograd.grad(g.sum(), x)
    assert not host(g).any() and not host(gg).any()  # det is cubic: both are 0 at 0


def test_gradients_of_batched_and_broadcast_solves_as_pytorch():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 1, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((4, 3, 2))

    def program(m):
        x = m.tensor(a, requires_grad=True)
        y = m.tensor(b, requires_grad=True)
        out = m.linalg.solve(x, y)
        (out * out).sum().backward()
        return out, x.grad, y.grad

    for got, expected in zip(program(ktorch), program(torch), strict=True):
        np.testing.assert_allclose(host(got), expected.detach().numpy(), rtol=1e-10)


def test_eigh_gradient_of_the_eigenvectors_is_pytorchs_symmetric_one():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 4, 4))
    a = a + np.swapaxes(a, -1, -2)
    weights = rng.standard_normal((2, 4, 4))

    def program(m):
        x = m.tensor(a, requires_grad=True)
        w, v = m.linalg.eigh(x)
        # sign-free: each column times its own sign-carrying first entry
        ((v * v[..., :1, :]) * m.tensor(weights)).sum().add((w * w).sum()).backward()
        return w, x.grad

    for got, expected in zip(program(ktorch), program(torch), strict=True):
        np.testing.assert_allclose(host(got), expected.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_vmap_of_solve_with_a_shared_matrix_and_vector_samples():
    a = kit.tensor(np.array(A) + 0.0)
    b = kit.tensor(np.arange(6.0).reshape(3, 2))
    got = vmap(kit.solve, in_dims=(None, 0))(a, b)
    expected = np.stack([np.linalg.solve(np.array(A), row) for row in np.arange(6.0).reshape(3, 2)])
    np.testing.assert_allclose(host(got), expected)
    got = vmap(kit.det)(kit.tensor(np.stack([np.array(A)] * 2)))
    np.testing.assert_allclose(host(got), [5.0, 5.0])


@pytest.mark.parametrize("name, shapes", [
    ("addmm", [(2, 3), (2, 4), (4, 3)]), ("addmm", [(3,), (2, 4), (4, 3)]),
    ("addmv", [(2,), (2, 3), (3,)]), ("addr", [(2, 3), (2,), (3,)]),
    ("baddbmm", [(2, 2, 3), (2, 2, 4), (2, 4, 3)])])
def test_beta_zero_ignores_the_input_but_still_gives_it_a_zero_gradient(name, shapes):
    """beta=0: the input's values (its NaNs too) stay out of the result, as in PyTorch, and the
    input still gets PyTorch's gradient beta * g, zeros (kit gave None: an optimiser with
    momentum or weight decay then skipped that parameter)."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    arrays[0].flat[0] = np.nan
    arrays[1].flat[0] = -0.0 if name == "addr" else arrays[1].flat[0]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours = [kit.tensor(a, requires_grad=True) for a in arrays]
    want = getattr(torch, name)(*theirs, beta=0, alpha=2)
    got = getattr(kit, name)(*ours, beta=0, alpha=2)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert not np.isnan(got.detach().numpy()).any()
    assert np.array_equal(np.signbit(got.detach().numpy()), np.signbit(want.detach().numpy()))
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_array_equal(ours[0].grad.numpy(), theirs[0].grad.numpy())
    for o, t in zip(ours[1:], theirs[1:], strict=True):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-6)
    with kit.no_grad():  # (no graph: nothing added)
        assert getattr(kit, name)(*ours, beta=0).grad_fn is None
