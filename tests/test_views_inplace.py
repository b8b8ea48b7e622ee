"""Views and in-place ops, as PyTorch's own view and in-place tests check them.

Each behaviour test runs on kit.torch and, where installed, on real PyTorch with the same
expectations; the differential test at the end runs random sequences of views and in-place ops on
both and compares values and first- and second-order gradients.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.torch_oracle import is_kit, libraries

LIBS = libraries()


def values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


@pytest.mark.parametrize("torch", LIBS)
def test_in_place_on_a_slice_changes_the_base_and_its_gradient(torch):
    root = torch.ones(2, 2, requires_grad=True)
    x = root.clone()
    x[0:1].mul_(2)
    x.sum().backward()
    np.testing.assert_array_equal(values(x), [[2, 2], [1, 1]])
    np.testing.assert_array_equal(values(root.grad), [[2, 2], [1, 1]])
    assert type(x.grad_fn).__name__ == "CopySlices"


@pytest.mark.parametrize("torch", LIBS)
def test_in_place_on_a_view_of_a_leaf_is_refused(torch):
    w = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being "
                                           "used in an in-place operation"):
        w[0:1].mul_(2)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        w.mul_(2)
    with torch.no_grad():  # an optimiser step: allowed, and it changes the leaf's storage
        w[0:1].mul_(2)
    np.testing.assert_array_equal(values(w), [2, 1, 1])


@pytest.mark.parametrize("torch", LIBS)
def test_views_share_storage_and_version_counter(torch):
    base = torch.zeros(2, 3)
    added = 0
    for view in (base[0], base.t(), base.reshape(6), base.view(3, 2), base.unsqueeze(0),
                 base.narrow(1, 1, 2), base.transpose(0, 1), base.permute(1, 0),
                 base.unbind(1)[0], base.split(1, dim=1)[2], base.chunk(3, 1)[1],
                 base.diagonal(), base.expand(4, 2, 3), base[:, None]):
        assert view._is_view() and view._base is base
        before = base._version
        if view.shape != base.expand(4, 2, 3).shape:
            view.add_(1)
            added += view.numel()
            assert base._version == view._version == before + 1
    assert not base.clone()._is_view() and not base.sum()._is_view()
    assert float(base.sum()) == added  # every add_ reached the base


@pytest.mark.parametrize("torch", LIBS)
def test_a_view_of_a_view_has_the_first_base(torch):
    base = torch.zeros(4, 4)
    v = base[1:3][:, 1:3].t()
    assert v._base is base
    v.fill_(7)
    assert float(base.sum()) == 28.0


@pytest.mark.parametrize("torch", LIBS)
def test_detach_shares_the_version_counter_and_data_does_not(torch):
    a = torch.ones(3, requires_grad=True)
    y = a * 2
    z = y.exp()  # exp saves its output, y's values matter no more; y itself is saved by nothing
    s = (y * y).sum()  # mul saves y
    d = y.detach()
    assert not d.requires_grad and not d._is_view()
    d.add_(1)  # the same storage, the same version counter: backward must refuse
    assert y._version == 1 and values(y)[0] == 3.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.backward()
    b = torch.ones(3, requires_grad=True)
    t = b * 2
    u = (t * t).sum()
    t.data.add_(1)  # .data: the storage is shared, the version counter is not: no error
    assert t._version == 0
    u.backward()
    np.testing.assert_array_equal(values(b.grad), [12, 12, 12])  # 2 * (2 * 3): the new value
    del z


@pytest.mark.parametrize("torch", LIBS)
def test_data_is_a_tensor_and_old_update_idioms_work_in_place(torch):
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    ref = w.grad
    assert isinstance(w.data, torch.Tensor) and not w.data.requires_grad
    w.data -= 0.5 * w.grad  # the classic tutorial step
    np.testing.assert_allclose(values(w), [0.0, 0.0])
    w.grad.data.zero_()
    np.testing.assert_array_equal(values(ref), [0.0, 0.0])  # the same .grad tensor
    w.data = torch.tensor([5.0, 6.0, 7.0])  # swaps the storage, shape may change
    assert tuple(w.shape) == (3,) and w.requires_grad


@pytest.mark.parametrize("torch", LIBS)
def test_grad_accumulates_in_place(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    first = x.grad
    (x * 4).sum().backward()
    assert x.grad is first
    np.testing.assert_array_equal(values(first), [7.0, 7.0])


@pytest.mark.parametrize("torch", LIBS)
def test_sibling_views_see_the_new_history(torch):
    a = torch.ones(4, requires_grad=True)
    b = a * 1
    v1, v2 = b[0:2], b[2:4]
    v1.mul_(3)
    assert type(v1.grad_fn).__name__ == "AsStridedBackward0"
    (v1 * 10 + v2.sum() * 100).sum().backward()
    np.testing.assert_array_equal(values(a.grad), [30, 30, 200, 200])


@pytest.mark.parametrize("torch", LIBS)
def test_copy_into_a_slice_of_a_constant_makes_it_require_grad(torch):
    z = torch.zeros(3)
    w = torch.tensor([2.0], requires_grad=True)
    later = z[2:3]  # made before z had any history
    z[1:2].copy_(w * 3)
    assert z.requires_grad and later.requires_grad
    (z.sum() + later.sum() * 5).backward()
    np.testing.assert_array_equal(values(w.grad), [3.0])


@pytest.mark.parametrize("torch", LIBS)
def test_in_place_on_a_transposed_view(torch):
    a = torch.arange(6.0).reshape(2, 3).requires_grad_()
    b = a * 1
    b.t()[0].mul_(10)  # the first column of b
    np.testing.assert_array_equal(values(b), [[0, 1, 2], [30, 4, 5]])
    (b * torch.arange(6.0).reshape(2, 3)).sum().backward()
    np.testing.assert_array_equal(values(a.grad), [[0, 1, 2], [30, 4, 5]])


@pytest.mark.parametrize("torch", LIBS)
def test_view_made_under_no_grad_cannot_be_changed_with_grad_on(torch):
    b = torch.ones(3, requires_grad=True).clone()
    with torch.no_grad():
        v = b[0:1]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being "
                                           "modified inplace with grad mode enabled"):
        v.mul_(2)


@pytest.mark.parametrize("torch", LIBS)
def test_saved_tensor_changed_through_a_view_is_caught(torch):
    a = torch.ones(3, requires_grad=True)
    y = a.exp()  # saves its output
    y[0:1].mul_(2)  # through a view: the base's version moves
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("torch", LIBS)
def test_retain_grad_on_a_tensor_changed_in_place(torch):
    a = torch.ones(2, requires_grad=True)
    y = a * 2
    y.retain_grad()
    y.mul_(3)
    y.sum().backward()
    np.testing.assert_array_equal(values(a.grad), [6.0, 6.0])
    np.testing.assert_array_equal(values(y.grad), [1.0, 1.0])


@pytest.mark.parametrize("torch", LIBS)
def test_in_place_with_an_operand_that_requires_grad(torch):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    x = a.clone()
    x.mul_(b)  # d/db needs the old value of x: it must not be overwritten
    x.sum().backward()
    np.testing.assert_array_equal(values(a.grad), [3.0, 4.0])
    np.testing.assert_array_equal(values(b.grad), [1.0, 2.0])


@pytest.mark.parametrize("torch", LIBS)
def test_view_refuses_what_needs_a_copy(torch):
    x = torch.zeros(2, 3).t()
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size "
                                           "and stride"):
        x.view(6)
    assert tuple(x.reshape(6).shape) == (6,)


@pytest.mark.parametrize("torch", LIBS)
def test_legacy_constructor_makes_float32(torch):
    assert torch.Tensor([1, 2]).dtype == torch.float32
    assert tuple(torch.Tensor(2, 3).shape) == (2, 3)


@pytest.mark.parametrize("torch", LIBS)
def test_node_types_are_named_as_pytorch_names_them(torch):
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"


def test_kit_messages_say_how_to_fix():
    import kit.torch as torch

    w = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Fix: change the leaf under `with kit.no_grad\(\):`"):
        w[1:].zero_()
    assert is_kit(torch)


# --- differential: random programs of views and in-place ops, kit against PyTorch --------------
VIEWS = [
    ("row", lambda t: t[1]), ("slice", lambda t: t[:, 1:3]), ("t", lambda t: t.t()),
    ("reshape", lambda t: t.reshape(4, 3)), ("narrow", lambda t: t.narrow(0, 1, 2)),
    ("diag", lambda t: t.diagonal()), ("step", lambda t: t[::2, ::3]),
    ("unsq", lambda t: t.unsqueeze(0)),
]
CHANGES = [
    ("mul_", lambda v, w: v.mul_(w[0])), ("add_", lambda v, w: v.add_(w[1] * 2)),
    ("div_", lambda v, w: v.div_(2.0)), ("fill", lambda v, w: v.fill_(1.5)),
    ("setitem", lambda v, w: v.__setitem__(..., w[2] * v.detach() + 1)),
    ("copy", lambda v, w: v.copy_(v * w[0] + 1)),
    ("sub_", lambda v, w: v.sub_(v.detach() * 0.5)),
]


def _program(torch, steps, data, weights):
    x = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    w = torch.tensor(weights, dtype=torch.float64, requires_grad=True)
    base = x * 1.0
    kept = []
    for view_i, change_i, keep in steps:
        view = VIEWS[view_i][1](base)
        CHANGES[change_i][1](view, w)
        if keep:
            kept.append(view)
    loss = (base * base).sum() + sum((v * v).sum() for v in kept)
    gx, gw = torch.autograd.grad(loss, (x, w), create_graph=True, allow_unused=True)
    if gw is None:
        return [values(base), values(gx), None]
    second = torch.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (x, w), allow_unused=True)
    return [values(base), values(gx), values(gw)] + [
        None if g is None else values(g) for g in second]


def _outcome(torch, *args):
    """The program's numbers, or the class of the error it raised."""
    try:
        return _program(torch, *args)
    except RuntimeError as exc:
        return type(exc)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.integers(0, len(VIEWS) - 1), st.integers(0, len(CHANGES) - 1),
                                st.booleans()), min_size=1, max_size=4),
       seed=st.integers(0, 2**16))
def test_random_views_and_in_place_match_pytorch(steps, seed):
    real = pytest.importorskip("torch", reason="PyTorch is the oracle here")
    import kit.torch

    rng = np.random.default_rng(seed)
    data = rng.uniform(0.5, 2.0, (3, 4))
    weights = rng.uniform(0.5, 2.0, 3)
    ours = _outcome(kit.torch, steps, data, weights)
    theirs = _outcome(real, steps, data, weights)
    if isinstance(theirs, type) or isinstance(ours, type):
        assert ours == theirs
        return
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        if b is None:
            assert a is None or not np.any(a)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("torch", LIBS)
def test_next_functions_hold_none_for_inputs_without_gradient(torch):
    x = torch.ones(2, requires_grad=True)
    y = x * torch.ones(2)
    z = x * 2
    assert y.grad_fn.next_functions[1] == (None, 0)
    assert type(z.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    assert [fn is None for fn, _ in y.grad_fn.next_functions] == [False, True]


def test_node_classes_are_given_when_looked_at():
    """record() makes plain Nodes (one type keeps the reverse pass fast); grad_fn gives each
    node, and every node below it, its PyTorch-named class."""
    import kit
    from kit.engine import Node

    x = kit.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).exp()
    inner = y._grad_fn.next_functions[0][0]
    assert type(inner) is Node
    assert type(y.grad_fn).__name__ == "ExpBackward0"
    assert type(inner).__name__ == "MulBackward0"  # typed with the node above it
    y.sum().backward()
    np.testing.assert_allclose(values(x.grad), 2 * np.exp([2.0, 4.0]), rtol=1e-6)
