"""The fused cross-entropy primitive (class-index targets) against its composite spelling,
finite differences to second order, and PyTorch."""

import numpy as np
import pytest

import kit

REDUCTIONS = ["mean", "sum", "none"]


def composite_cross_entropy(logits, target, reduction):
    """The same loss spelt with primitives only: -log_softmax(x)[range(N), t], reduced."""
    n = logits.shape[0]
    picked = -kit.log_softmax(logits, 1)[np.arange(n), target._data]
    return {"mean": picked.mean, "sum": picked.sum, "none": lambda: picked}[reduction]()


def logits_and_target(seed=0, n=5, c=4, scale=3.0):
    rng = np.random.default_rng(seed)
    x = kit.tensor(scale * rng.standard_normal((n, c)), requires_grad=True)
    t = kit.tensor(rng.integers(0, c, size=n))
    return x, t


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_fused_matches_the_composite_spelling(reduction):
    x, t = logits_and_target()
    fused = kit.cross_entropy(x, t, reduction=reduction)
    x2 = x.detach().requires_grad_()
    plain = composite_cross_entropy(x2, t, reduction)
    np.testing.assert_allclose(fused._data, plain._data, rtol=1e-12)
    seed = np.arange(1.0, 1.0 + fused._data.size).reshape(fused.shape)
    fused.backward(kit.tensor(seed))
    plain.backward(kit.tensor(seed))
    np.testing.assert_allclose(x.grad._data, x2.grad._data, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_fused_gradient_first_and_second_order(reduction):
    x, t = logits_and_target(seed=1)
    fn = lambda x: kit.cross_entropy(x, t, reduction=reduction)  # noqa: E731
    assert kit.gradcheck(fn, (x,))
    assert kit.gradgradcheck(fn, (x,))


def test_fused_is_stable_for_huge_logits():
    x = kit.tensor([[1000.0, 0.0], [0.0, -1000.0]], requires_grad=True)
    loss = kit.cross_entropy(x, kit.tensor([1, 1]), reduction="none")
    np.testing.assert_allclose(loss._data, [1000.0, 1000.0])
    loss.sum().backward()
    np.testing.assert_allclose(x.grad._data, [[1.0, -1.0], [1.0, -1.0]])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_fused_matches_pytorch(reduction):
    torch = pytest.importorskip("torch")
    x, t = logits_and_target(seed=2, n=7, c=3)
    xt = torch.tensor(x._data, requires_grad=True)
    ours = kit.cross_entropy(x, t, reduction=reduction)
    theirs = torch.nn.functional.cross_entropy(xt, torch.tensor(t._data), reduction=reduction)
    np.testing.assert_allclose(ours._data, theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(x.grad._data, xt.grad.numpy(), rtol=1e-10, atol=1e-15)


def test_float32_stays_float32():
    x = kit.randn(4, 3, requires_grad=True)
    loss = kit.cross_entropy(x, kit.tensor([0, 1, 2, 0]))
    loss.backward()
    assert loss.dtype == kit.float32 and x.grad.dtype == kit.float32
