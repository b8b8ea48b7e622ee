"""Movement: reshape, permute/transpose, (un)squeeze, flatten, expand, indexing (basic, advanced
with repeats, boolean), setitem, cat, stack, dtype casts; finite differences, second order,
PyTorch."""

import numpy as np
import pytest
from helpers import check_op, compare_torch, host, leaf, rand

import kit

# (kit expression, PyTorch expression, input shape)
SHAPE_OPS = {
    "reshape": (lambda x: x.reshape(3, -1), lambda t: t.reshape(3, -1), (2, 3, 2)),
    "reshape_tuple": (lambda x: kit.reshape(x, (12,)), lambda t: t.reshape(12), (2, 3, 2)),
    "view": (lambda x: x.view(6, 2), lambda t: t.view(6, 2), (2, 3, 2)),
    "permute": (lambda x: x.permute(2, 0, 1), lambda t: t.permute(2, 0, 1), (2, 3, 4)),
    "permute_neg": (lambda x: kit.permute(x, (-1, 0, 1)), lambda t: t.permute(-1, 0, 1),
                    (2, 3, 4)),
    "transpose": (lambda x: x.transpose(0, 2), lambda t: t.transpose(0, 2), (2, 3, 4)),
    "T": (lambda x: x.T, lambda t: t.permute(1, 0), (2, 3)),
    "mT": (lambda x: x.mT, lambda t: t.mT, (4, 2, 3)),
    "t": (lambda x: x.t(), lambda t: t.t(), (2, 3)),
    "unsqueeze": (lambda x: x.unsqueeze(1), lambda t: t.unsqueeze(1), (2, 3)),
    "unsqueeze_neg": (lambda x: x.unsqueeze(-1), lambda t: t.unsqueeze(-1), (2, 3)),
    "squeeze_all": (lambda x: x.squeeze(), lambda t: t.squeeze(), (1, 3, 1)),
    "squeeze_dim": (lambda x: x.squeeze(2), lambda t: t.squeeze(2), (1, 3, 1)),
    "squeeze_noop": (lambda x: x.squeeze(1), lambda t: t.squeeze(1), (1, 3, 1)),
    "flatten": (lambda x: x.flatten(), lambda t: t.flatten(), (2, 3, 2)),
    "flatten_range": (lambda x: x.flatten(1), lambda t: t.flatten(1), (2, 3, 2)),
    "flatten_0d": (lambda x: kit.flatten(x), lambda t: t.flatten(), ()),
    "expand": (lambda x: x.expand(2, 3, 4), lambda t: t.expand(2, 3, 4), (3, 1)),
    "expand_keep": (lambda x: x.expand(-1, 4), lambda t: t.expand(-1, 4), (3, 1)),
    "broadcast_to": (lambda x: kit.broadcast_to(x, (2, 3)), lambda t: t.broadcast_to((2, 3)),
                     (3,)),
}

# (index built from kit's data, input shape); each compared with PyTorch's x[index]
INDICES = {
    "int": (1, (3, 4)),
    "slice": ((slice(None), slice(1, None, 2)), (3, 4)),
    "negative_int": ((slice(None), -1), (3, 4)),
    "ellipsis_none": ((Ellipsis, None, 0), (2, 3, 4)),
    "full_int": ((1, 2), (3, 4)),
    "advanced_repeats": (np.array([0, 2, 0, 0]), (3, 4)),
    "advanced_pairs_repeats": ((np.array([0, 1, 0]), np.array([2, 2, 2])), (3, 4)),
    "advanced_2d": (np.array([[0, 1], [1, 1]]), (3, 2)),
    "advanced_mixed_slice": ((slice(None), np.array([3, 0, 3])), (2, 4)),
    "boolean": (np.array([True, False, True]), (3, 2)),
    "boolean_full": (np.array([[True, False], [False, True], [True, True]]), (3, 2)),
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_ops_gradcheck_and_torch(name, xp_device):
    fn, t_fn, shape = SHAPE_OPS[name]
    x = rand(*shape)
    check_op(fn, x, device=xp_device, order=2)
    compare_torch(fn, t_fn, x, device=xp_device)


def _convert_index(index, convert):
    """The index with its arrays converted (to device Tensors, or to PyTorch tensors)."""
    if isinstance(index, tuple):
        return tuple(_convert_index(i, convert) for i in index)
    return convert(index) if isinstance(index, np.ndarray) else index


@pytest.mark.parametrize("name", sorted(INDICES))
def test_getitem_gradcheck_and_torch(name, xp_device):
    index, shape = INDICES[name]
    index = _convert_index(index, lambda a: kit.tensor(a, device=xp_device))
    x = rand(*shape)
    check_op(lambda t: t[index], x, device=xp_device, order=2)
    torch = pytest.importorskip("torch")
    t_index = _convert_index(INDICES[name][0], torch.from_numpy)
    compare_torch(lambda t: t[index], lambda t: t[t_index], x, device=xp_device)


def test_advanced_index_repeats_accumulate():
    x = leaf([1.0, 2.0, 3.0])
    x[np.array([0, 0, 2, 0])].sum().backward()
    np.testing.assert_array_equal(host(x.grad), [3.0, 0.0, 1.0])


def test_tensor_indices_and_boolean_tensor_masks():
    x = leaf([[1.0, -2.0], [3.0, -4.0]])
    y = x[x > 0]
    np.testing.assert_array_equal(host(y), [1.0, 3.0])
    idx = kit.tensor([1, 1])
    (y.sum() + x[idx, kit.tensor([0, 1])].sum()).backward()
    np.testing.assert_array_equal(host(x.grad), [[1.0, 0.0], [2.0, 1.0]])


def test_index_errors_name_the_shape():
    x = leaf(rand(2, 3))
    with pytest.raises(IndexError, match=r"kit indexing a tensor of shape \[2, 3\]"):
        x[5]


# --- setitem and index_put ------------------------------------------------------------------
def test_index_put_gradcheck_both_inputs(xp_device):
    check_op(lambda x, v: kit.index_put(x, (slice(None), 1), v), rand(3, 4), rand(3),
             device=xp_device, order=2)
    check_op(lambda x, v: kit.index_put(x, np.array([0, 2]), v), rand(3, 2), rand(2),
             device=xp_device, order=2)


def test_setitem_matches_torch():
    def overwrite_column(x, v):  # the same code runs on kit and PyTorch tensors
        y = x * 1
        y[1:, 0] = v
        return y * 2

    compare_torch(overwrite_column, overwrite_column, rand(3, 2), rand(2))


def test_setitem_with_a_scalar_and_a_mask():
    x = leaf(rand(2, 3))
    y = x.clone()
    y[y.detach() > 0] = 0.0
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), (host(x) <= 0).astype(float))


def test_setitem_shape_mismatch_names_the_shapes():
    y = kit.zeros(3, 4)
    with pytest.raises(ValueError, match=r"kit.setitem: shapes \(3,\) and \(2,\) are not "
                                         r"compatible: the value cannot be broadcast"):
        kit.index_put(y, (slice(None), 0), np.ones(2, dtype=np.float32))


# --- cat and stack --------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cat_gradcheck_and_torch(axis, xp_device):
    torch = pytest.importorskip("torch")
    shapes = {0: [(1, 3), (2, 3), (4, 3)], 1: [(2, 1), (2, 2), (2, 3)],
              -1: [(2, 1), (2, 2), (2, 3)]}[axis]
    arrays = [rand(*s, rng=np.random.default_rng(i)) for i, s in enumerate(shapes)]
    fn = lambda *ts: kit.cat(ts, axis)  # noqa: E731
    check_op(fn, *arrays, device=xp_device, order=2)
    compare_torch(fn, lambda *ts: torch.cat(ts, axis), *arrays, device=xp_device)
    assert kit.concatenate is kit.cat


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_gradcheck_and_torch(axis, xp_device):
    torch = pytest.importorskip("torch")
    arrays = [rand(2, 3, rng=np.random.default_rng(i)) for i in range(3)]
    fn = lambda *ts: kit.stack(ts, axis)  # noqa: E731
    check_op(fn, *arrays, device=xp_device, order=2)
    compare_torch(fn, lambda *ts: torch.stack(ts, axis), *arrays, device=xp_device)


def test_cat_with_a_constant_input_gives_it_no_gradient():
    a = leaf(rand(2))
    b = kit.tensor(rand(3))
    kit.cat([a, b]).sum().backward()
    np.testing.assert_array_equal(host(a.grad), [1.0, 1.0])
    assert b.grad is None


def test_cat_and_stack_errors():  # cat's shape mismatch: test_errors.py
    a, b = leaf(rand(2, 3)), leaf(rand(2, 4))
    with pytest.raises(ValueError, match=r"kit.stack: shapes \(2, 3\) and \(2, 4\) are not "
                                         r"compatible: all tensors must have the same shape"):
        kit.stack([a, b])
    with pytest.raises(ValueError, match="kit.cat: expected a non-empty list"):
        kit.cat([])
    with pytest.raises(TypeError, match="kit.stack: item 1 is a ndarray, expected a Tensor"):
        kit.stack([a, np.ones((2, 3))])


# --- errors ---------------------------------------------------------------------------------
def test_shape_op_errors():
    x = leaf(rand(2, 3))
    with pytest.raises(ValueError, match=r"kit.permute: \[0, 0\] is not a permutation"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match=r"kit.unsqueeze: dimension 3 is out of range"):
        x.unsqueeze(3)
    with pytest.raises(IndexError, match=r"kit.transpose: dimension 5 is out of range"):
        x.transpose(0, 5)
    with pytest.raises(ValueError, match=r"kit.expand: shapes \(2, 3\) and \(2, 4\) are not "
                                         r"compatible"):
        x.expand(2, 4)
    with pytest.raises(ValueError, match=r"kit.expand: the number of sizes \(1\)"):
        x.expand(6)
    with pytest.raises(TypeError, match="kit.reshape: expected a Tensor, got ndarray"):
        kit.reshape(np.ones(3), (3,))


# --- dtype casts ----------------------------------------------------------------------------
def test_astype_is_recorded_and_casts_the_gradient_back():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    y = x.double()
    assert y.dtype == kit.float64 and y.grad_fn.name() == "ToCopyBackward0"
    (y * y).sum().backward()
    assert x.grad.dtype == kit.float32
    np.testing.assert_array_equal(host(x.grad), [2.0, 4.0])
    assert x.to(kit.float32) is x and x.to("float64").dtype == kit.float64
    with pytest.raises(TypeError, match="kit: unsupported dtype complex128"):
        x.to(np.complex128)


def test_views_share_data_but_not_history():
    x = leaf(rand(2, 3))
    y = x.reshape(6)
    assert np.shares_memory(y.data, x.data)
    assert y.grad_fn.next_functions[0][0].variable is x
