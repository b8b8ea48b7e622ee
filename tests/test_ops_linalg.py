"""Linear algebra: matmul over 1-D, 2-D, batched and broadcast shapes, dot, outer, mm;
finite differences, second order, PyTorch; shape errors."""

import numpy as np
import pytest
from helpers import check_op, compare_torch, host, leaf, rand

import kit

MATMUL_SHAPES = [
    ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((5, 2, 3), (5, 3, 4)),
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((2, 1, 2, 3), (4, 3, 2)), ((3,), (4, 3, 2)),
    ((4, 2, 3), (3,)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_gradcheck_and_torch(shapes, xp_device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    a, b = rand(*shapes[0], rng=rng), rand(*shapes[1], rng=rng)
    check_op(kit.matmul, a, b, device=xp_device, order=2)
    compare_torch(kit.matmul, torch.matmul, a, b, device=xp_device)
    out = leaf(a, xp_device) @ leaf(b, xp_device)
    assert out.shape == np.matmul(a, b).shape


def test_matmul_with_one_constant_operand():
    w = leaf(rand(3, 2))
    x = rand(4, 3)
    (x @ w).sum().backward()  # ndarray @ Tensor defers to Tensor.__rmatmul__
    np.testing.assert_allclose(host(w.grad), x.sum(0)[:, None] * np.ones((3, 2)))


@pytest.mark.parametrize("name", ["dot", "outer", "mm"])
def test_dot_outer_mm(name, xp_device):
    torch = pytest.importorskip("torch")
    shapes = {"dot": ((4,), (4,)), "outer": ((3,), (4,)), "mm": ((2, 3), (3, 4))}[name]
    rng = np.random.default_rng(5)
    a, b = rand(*shapes[0], rng=rng), rand(*shapes[1], rng=rng)
    check_op(getattr(kit, name), a, b, device=xp_device, order=2)
    compare_torch(getattr(kit, name), getattr(torch, name), a, b, device=xp_device)


def test_matmul_refuses_python_scalars():
    with pytest.raises(TypeError, match="kit.matmul: both operands must be tensors or arrays"):
        kit.matmul(leaf(rand(2, 3)), 2.0)


def test_dot_and_mm_errors():
    with pytest.raises(ValueError, match=r"kit.dot: 1D tensors expected, but got 2D and 1D"):
        kit.dot(leaf(rand(2, 2)), leaf(rand(2)))
    with pytest.raises(ValueError, match=r"kit.dot: inconsistent tensor size, expected tensor "
                                         r"\[3\] and src \[2\]"):
        kit.dot(leaf(rand(3)), leaf(rand(2)))
    with pytest.raises(ValueError, match=r"kit.mm: expected 2-D tensors, got shapes \(3,\)"):
        kit.mm(leaf(rand(3)), leaf(rand(3, 2)))


def test_outer_is_a_composite():
    y = kit.outer(leaf(rand(3)), leaf(rand(2)))
    assert y.grad_fn.op == "mul"
