"""Sorting, index_add and the composites (relu, softmax, log_softmax, cross_entropy, mse_loss):
finite differences, second order, PyTorch; composites own no gradient code."""

import numpy as np
import pytest
from helpers import away_from, check_op, compare_torch, host, leaf, rand

import kit


# --- sort, argsort, index_add ---------------------------------------------------------------
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_gradcheck_and_torch(axis, descending, xp_device):
    torch = pytest.importorskip("torch")
    x = rand(3, 4)
    check_op(lambda t: kit.sort(t, axis, descending).values, x, device=xp_device, order=2)
    compare_torch(lambda t: kit.sort(t, axis, descending)[0],
                  lambda t: torch.sort(t, axis, descending)[0], x, device=xp_device)
    indices = kit.sort(leaf(x, xp_device), axis, descending).indices
    np.testing.assert_array_equal(host(indices), torch.sort(torch.from_numpy(x), axis,
                                                            descending)[1].numpy())
    np.testing.assert_array_equal(host(indices), host(kit.argsort(leaf(x), axis, descending)))


def test_sort_is_stable_and_methods_work():
    x = kit.tensor([2.0, 1.0, 2.0, 1.0])
    np.testing.assert_array_equal(x.argsort().data, [1, 3, 0, 2])
    np.testing.assert_array_equal(x.sort(descending=True).indices.data, [0, 2, 1, 3])
    assert not x.argsort().requires_grad
    z = leaf(3.0)  # a 0-d tensor sorts to itself, at index 0 (a 0-d index, as in PyTorch)
    values, indices = kit.sort(z)
    assert values.item() == 3.0 and indices.shape == () and indices.item() == 0
    assert kit.argsort(z).shape == ()


@pytest.mark.parametrize("dim", [0, 1])
def test_index_add_gradcheck_and_torch(dim, xp_device):
    torch = pytest.importorskip("torch")
    index = np.array([0, 2, 0])
    x, src = rand(3, 3), rand(3, 3, rng=np.random.default_rng(7))
    k_index = kit.tensor(index, device=xp_device)

    def fn(t, s):
        return kit.index_add(t, dim, k_index, s, alpha=2.0)

    check_op(fn, x, src, device=xp_device, order=2)
    compare_torch(fn, lambda t, s: t.index_add(dim, torch.from_numpy(index), s, alpha=2.0),
                  x, src, device=xp_device)


def test_index_add_in_place_and_errors():
    x = kit.zeros(3)
    x.index_add_(0, kit.tensor([0, 0, 2]), kit.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x.data, [3.0, 0.0, 3.0])
    with pytest.raises(ValueError, match=r"kit.index_add: source has shape \(2,\) but must have "
                                         r"shape \(3,\)"):
        kit.index_add(x, 0, kit.tensor([0, 1, 2]), kit.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="kit.index_add: index must be 1-D"):
        kit.index_add(x, 0, kit.tensor([[0]]), kit.tensor([1.0]))


# --- composites -----------------------------------------------------------------------------
COMPOSITES = {
    "relu": (lambda x: kit.relu(x), "relu"),
    "softmax_last": (lambda x: kit.softmax(x, -1), lambda t: t.softmax(-1)),
    "softmax_0": (lambda x: x.softmax(0), lambda t: t.softmax(0)),
    "log_softmax_last": (lambda x: kit.log_softmax(x), lambda t: t.log_softmax(-1)),
    "log_softmax_0": (lambda x: x.log_softmax(dim=0), lambda t: t.log_softmax(0)),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_gradcheck_and_torch(name, xp_device):
    torch = pytest.importorskip("torch")
    fn, t_fn = COMPOSITES[name]
    t_fn = getattr(torch, t_fn) if isinstance(t_fn, str) else t_fn
    x = away_from(rand(3, 4), [0.0])
    check_op(fn, x, device=xp_device, order=2)
    compare_torch(fn, t_fn, x, device=xp_device)


def test_relu_gradient_at_zero_is_zero():
    x = leaf([-1.0, 0.0, 2.0])
    x.relu().sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0.0, 0.0, 1.0])


def test_softmax_does_not_overflow():
    x = leaf([[1000.0, 0.0], [-1000.0, -1000.0]])
    np.testing.assert_allclose(host(kit.softmax(x)), [[1.0, 0.0], [0.5, 0.5]])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_class_indices(reduction, xp_device):
    torch = pytest.importorskip("torch")
    target = np.array([2, 0, 1, 2])
    fn = lambda z: kit.cross_entropy(z, kit.tensor(target, device=xp_device), reduction)  # noqa
    check_op(fn, rand(4, 3), device=xp_device, order=2)
    compare_torch(fn, lambda z: torch.nn.functional.cross_entropy(
        z, torch.from_numpy(target), reduction=reduction), rand(4, 3), device=xp_device)


def test_cross_entropy_with_probabilities(xp_device):
    torch = pytest.importorskip("torch")
    p = np.random.default_rng(8).dirichlet(np.ones(3), size=4)
    check_op(lambda z, q: kit.cross_entropy(z, q), rand(4, 3), p, device=xp_device, order=2)
    compare_torch(kit.cross_entropy, torch.nn.functional.cross_entropy, rand(4, 3), p,
                  device=xp_device)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction, xp_device):
    torch = pytest.importorskip("torch")
    fn = lambda a, b: kit.mse_loss(a, b, reduction)  # noqa: E731
    check_op(fn, rand(3, 2), rand(3, 2, rng=np.random.default_rng(9)), device=xp_device,
             order=2)
    compare_torch(fn, lambda a, b: torch.nn.functional.mse_loss(a, b, reduction=reduction),
                  rand(3, 2), rand(3, 2, rng=np.random.default_rng(9)), device=xp_device)


def test_composite_errors_name_the_op_and_the_fix():
    z = leaf(rand(4, 3))
    with pytest.raises(IndexError, match=r"kit.cross_entropy: target holds class 3 but logits "
                                         r"have 3 classes \(valid: 0..2\)"):
        kit.cross_entropy(z, kit.tensor([0, 1, 2, 3]))
    # a negative class, which NumPy's indexing would count from the end; each integer dtype;
    # float64, float32 (the NumPy path) and float16 logits; eager and compiled
    for logits in (z, leaf(rand(4, 3).astype(np.float32)), leaf(rand(4, 3).astype(np.float16))):
        for dtype in ("int64", "int32", "int8", "uint8"):
            for bad, cls in (([0, 1, -1, 2], -1), ([0, 1, 5, 2], 5)):
                if cls < 0 and dtype == "uint8":
                    continue
                target = kit.tensor(np.array(bad, dtype=dtype))
                compiled = kit.compile(kit.cross_entropy)
                compiled(logits, kit.tensor(np.array([0, 1, 2, 0], dtype=dtype)))  # (traced)
                for fn in (kit.cross_entropy, compiled):  # (compiled: a replay)
                    with pytest.raises(IndexError, match=rf"target holds class {cls} but logits "
                                                         rf"have 3 classes \(valid: 0..2\)"):
                        fn(logits, target)
    with pytest.raises(ValueError, match=r"kit.cross_entropy: class-index target must have "
                                         r"shape \(4,\)"):
        kit.cross_entropy(z, kit.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"kit.cross_entropy: expected logits of shape \(N, C\)"):
        kit.cross_entropy(leaf(rand(3)), kit.tensor([0]))
    with pytest.raises(ValueError, match=r"kit.cross_entropy: reduction must be 'mean', 'sum' "
                                         r"or 'none', got 'avg'"):
        kit.cross_entropy(z, kit.tensor([0, 1, 2, 0]), reduction="avg")
    with pytest.warns(UserWarning, match=r"Using a target size \(torch.Size\(\[4, 1\]\)\) that "
                      r"is different to the input size \(torch.Size\(\[4, 3\]\)\).*kit.mse_loss"):
        kit.mse_loss(z, leaf(rand(4, 1)))  # broadcast, as PyTorch does, with its warning


def test_composites_are_built_from_primitives():
    """No composite owns gradient code: their graphs contain only primitive nodes. (Cross-entropy
    against class indices is a fused primitive, with its reason in kit/ops/losses.py; relu and
    log_softmax are primitives, as PyTorch's, with theirs in kit/ops/composite.py.)"""
    z = leaf(rand(2, 3))
    probs = kit.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]], dtype=kit.float64)
    loss = kit.cross_entropy(kit.relu(z), probs) + kit.mse_loss(z, z * 0)
    primitives = {"add", "sub", "mul", "neg", "where", "log_softmax", "getitem", "mean", "sum",
                  "relu"}
    seen, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node.name() == "AccumulateGrad" or node in seen:
            continue
        seen.add(node)
        assert node.op in primitives, node.op
        stack.extend(edge[0] for edge in node.next_functions if edge[0] is not None)
    assert {"log_softmax", "relu", "sum"} <= {node.op for node in seen}
    fused = kit.cross_entropy(z, kit.tensor([0, 2]))
    assert fused.grad_fn.op == "cross_entropy"
    assert [edge[0].name() for edge in fused.grad_fn.next_functions] == ["AccumulateGrad"]
