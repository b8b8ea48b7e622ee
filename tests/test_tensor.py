"""The Tensor: creation and dtype rules (PyTorch's), metadata, conversions, graph flags, in-place
operations and their version counter, creation functions."""

import numpy as np
import pytest
from helpers import host, leaf

import kit


# --- dtypes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("data, dtype", [
    (1.5, kit.float32), ([1.0, 2.0], kit.float32), ([1, 2.5], kit.float32), ([1, 2], kit.int64),
    ([True, False], kit.bool_), (np.array([1.0]), kit.float64),
    (np.array([1.0], dtype=np.float16), kit.float16), (np.array([1], dtype=np.int32), kit.int32),
    (np.float64(2.0), kit.float64), ([np.float64(1.0), 2.0], kit.float64),
], ids=str)
def test_default_dtypes_follow_pytorch(data, dtype):
    assert kit.tensor(data).dtype == dtype


@pytest.mark.parametrize("expr, dtype", [
    (lambda i, f: i * 2.5, kit.float32), (lambda i, f: 2.5 * i, kit.float32),
    (lambda i, f: i * 2, kit.int64), (lambda i, f: i / 2, kit.float32),
    (lambda i, f: 3 / i, kit.float32), (lambda i, f: i + f, kit.float32),
    (lambda i, f: f - i, kit.float32), (lambda i, f: f * np.float64(2.0), kit.float32),
    (lambda i, f: np.float64(2.0) * f, kit.float32), (lambda i, f: f + np.ones(2), kit.float64),
    (lambda i, f: kit.tensor([True, False]) + 1, kit.int64),
    (lambda i, f: f.double() * f, kit.float64),
], ids=["int*float", "float*int", "int*int", "int/int", "int_rdiv", "int+f32", "f32-int",
        "f32*np64_scalar", "np64_scalar*f32", "f32+f64_array", "bool+int", "f64*f32"])
def test_result_dtypes_follow_pytorch(expr, dtype):
    i = kit.tensor([1, 2])
    f = kit.tensor([0.5, 1.5])
    assert expr(i, f).dtype == dtype


def test_explicit_dtype_and_copies():
    a = np.array([1.0, 2.0])
    t = kit.tensor(a, dtype=kit.float32)
    assert t.dtype == kit.float32
    u = kit.tensor(a)
    a[0] = 100.0
    assert host(u)[0] == 1.0  # kit.tensor copies
    v = kit.from_numpy(a)
    a[1] = 7.0
    assert host(v)[1] == 7.0 and v.dtype == kit.float64  # from_numpy shares


def test_requires_grad_on_an_integer_tensor_is_a_clear_error():
    with pytest.raises(RuntimeError, match=r"only Tensors of floating point dtype can require "
                                           r"gradients \(requires_grad=True on a int64 tensor\)"
                                           r".*Fix: .*dtype=kit.float32"):
        kit.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"requires_grad=True on a int32 tensor"):
        kit.tensor(np.array([1], dtype=np.int32)).requires_grad_()


@pytest.mark.parametrize("data, name", [
    (np.array([1 + 2j]), "complex128"), ([1j], "complex128"), (np.array(["a"]), "<U1"),
    (np.array([object()]), "object"),
], ids=["complex", "complex_list", "str", "object"])
def test_unsupported_dtype_is_a_clear_error(data, name):
    with pytest.raises(TypeError, match=rf"kit.tensor: unsupported dtype {name} .*kit supports "
                                        rf"float16, float32, float64.*Fix: convert the data"):
        kit.tensor(data)


def test_unsupported_dtype_in_from_numpy_and_casts():
    with pytest.raises(TypeError, match="from_numpy: unsupported dtype complex64"):
        kit.from_numpy(np.ones(2, dtype=np.complex64))
    with pytest.raises(TypeError, match="from_numpy expects a numpy.ndarray, got list"):
        kit.from_numpy([1.0])
    with pytest.raises(TypeError, match="kit.mul: unsupported operand of type str"):
        kit.tensor([1.0]) * "a"


# --- metadata and conversion ----------------------------------------------------------------
def test_metadata():
    t = kit.tensor(np.zeros((2, 3), dtype=np.float32))
    assert t.shape == (2, 3) and t.ndim == 2 and t.dim() == 2 and t.numel() == 6
    assert t.size() == (2, 3) and t.size(1) == 3 and len(t) == 2
    assert t.device == "cpu" and t.is_leaf and not t.requires_grad and t.grad is None
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(kit.tensor(1.0))


def test_conversions():
    t = kit.tensor([[2.5]])
    assert t.item() == 2.5 and float(t) == 2.5 and int(t) == 2 and bool(t)
    assert t.tolist() == [[2.5]] and np.asarray(t).dtype == np.float32
    assert [10, 20, 30][kit.tensor(1)] == 20
    with pytest.raises(ValueError, match="a Tensor with 2 elements cannot be converted to a "
                                         "Python scalar"):
        kit.tensor([1.0, 2.0]).item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with 2 values is ambiguous"):
        bool(kit.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1][kit.tensor(0.0)]


def test_numpy_refuses_a_tensor_that_requires_grad():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\) instead"):
        x.numpy()
    assert x.detach().numpy() is x._data


def test_repr():
    assert repr(kit.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(kit.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(kit.tensor(np.array([1.0]))) == "tensor([1.], dtype=kit.float64)"
    assert repr(kit.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(kit.tensor([1.0], requires_grad=True) * 2) == (
        "tensor([2.], grad_fn=<MulBackward0>)")


# --- graph flags ----------------------------------------------------------------------------
def test_detach_clone_and_requires_grad_():
    x = leaf([1.0, 2.0])
    c = x.clone()
    assert c.grad_fn is not None and not np.shares_memory(c.data, x.data)
    c.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [1.0, 1.0])
    d = x.detach()
    assert d.is_leaf and not d.requires_grad
    y = kit.tensor([1.0]).requires_grad_()
    assert y.requires_grad and y.is_leaf
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf "
                                           "variables.*var.detach\\(\\)"):
        (x * 2).requires_grad_(False)
    z = (x * 2).detach_()
    assert z.grad_fn is None and not z.requires_grad


def test_grad_assignment_is_checked():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of size '\[1\]' "
                                           r"to a tensor of size '\[2\]'"):
        x.grad = kit.tensor([1.0])
    with pytest.raises(RuntimeError, match=r"gradient with dtype 'float64' to a tensor with "
                                           r"dtype 'float32'"):
        kit.tensor([1.0, 2.0], requires_grad=True).grad = kit.zeros(2, dtype=kit.float64)
    with pytest.raises(TypeError, match="assigned grad must be a Tensor or None, got ndarray"):
        x.grad = np.ones(2)


def test_to_cpu_is_a_no_op_and_dtype_moves_are_recorded():
    x = leaf([1.0, 2.0])
    assert x.to("cpu") is x and x.cpu() is x
    assert x.to(kit.float32).dtype == kit.float32 and x.float().grad_fn is not None
    assert x.long().dtype == kit.int64 and x.int().dtype == kit.int32
    assert x.bool().dtype == kit.bool_ and x.type() == "float64"
    assert x.half().dtype == kit.float16 and x.half().double().grad_fn is not None
    with pytest.raises(TypeError, match=r"to\(\) got unexpected keyword arguments \['copy'\]"):
        x.to("cpu", copy=True)


# --- in place -------------------------------------------------------------------------------
@pytest.mark.parametrize("change", [
    lambda t: t.__iadd__(1.0), lambda t: t.add_(1.0), lambda t: t.__setitem__(0, 5.0),
    lambda t: t.zero_(), lambda t: t.mul_(2.0), lambda t: t.fill_(3.0),
    lambda t: t.copy_(kit.tensor(np.array([4.0, 5.0]))),
], ids=["+=", "add_", "setitem", "zero_", "mul_", "fill_", "copy_"])
def test_in_place_bumps_the_version_and_breaks_saved_tensors(change):
    x = leaf([1.0, 2.0])
    a = x * 1
    b = a * a  # saves a
    version = a._version
    change(a)
    assert a._version == version + 1
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: a saved tensor of "
                                           r"shape \[2\] and dtype float64, saved by "
                                           r"MulBackward0, is at version 1; expected version 0"):
        b.sum().backward()


@pytest.mark.parametrize("change", [
    lambda t: t.__iadd__(1.0), lambda t: t.add_(1.0), lambda t: t.__setitem__(0, 5.0),
    lambda t: t.zero_(),
], ids=["+=", "add_", "setitem", "zero_"])
def test_in_place_on_a_leaf_that_requires_grad_errors(change):
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"a leaf Variable that requires grad is being used "
                                           r"in an in-place operation \(\w+\)\. Fix: "
                                           r".*kit.no_grad\(\)"):
        change(x)


def test_in_place_change_of_a_saved_output_is_caught():
    x = leaf([1.0, 2.0])
    y = x.exp()  # exp saves its output
    with kit.no_grad():
        y[0] = 100.0
    with pytest.raises(RuntimeError, match="its output, saved by ExpBackward0, is at version 1"):
        y.sum().backward()


def test_recorded_in_place_ops_give_the_right_gradient():
    x = leaf([1.0, 2.0])
    a = x * 1
    a += x * x
    a[1] = x[0] * 3
    a.sum().backward()
    assert a.grad_fn is not None
    np.testing.assert_array_equal(host(x.grad), [1.0 + 2.0 + 3.0, 0.0])


@pytest.mark.parametrize("recorded", [False, True])
def test_in_place_cannot_change_the_shape(recorded):
    target = leaf([1.0, 2.0, 3.0]) * 1 if recorded else kit.tensor(np.ones(3))
    with pytest.raises(RuntimeError, match=r"kit.__iadd__: an in-place op cannot change the shape "
                                           r"of the tensor it writes into: shapes \[3\] and "
                                           r"\[2, 3\] do not broadcast to \[3\]. Fix: use the "
                                           r"out-of-place form"):
        target += kit.tensor(np.ones((2, 3)))
    assert target.shape == (3,) and target._version == 0


@pytest.mark.parametrize("change", [
    lambda t: t.__iadd__(1.0), lambda t: t.__setitem__((slice(None), 0), 5.0),
], ids=["+=", "setitem"])
def test_in_place_on_a_broadcast_view_says_to_clone(change):
    # (zero_, fill_ and a setitem on a part without shared elements are allowed, as in PyTorch:
    # tests/test_pytorch_edges_inplace.py)
    view = kit.ones(2).expand(3, 2)
    with pytest.raises(RuntimeError, match=r"more than one element of the written-to tensor refers "
                                           r"to a single memory location .*Fix: \.clone\(\) it"):
        change(view)
    copy = view.clone()
    change(copy)
    assert copy._version == 1


def test_in_place_dtype_errors():
    i = kit.tensor([1, 2])
    with pytest.raises(TypeError, match="kit.__iadd__: Cannot cast ufunc 'add' output"):
        i += 1.5


def test_views_share_the_version_counter():
    x = leaf([1.0, 2.0])
    a = x * 1
    d = a.detach()
    b = a * a
    with kit.no_grad():
        d += 1
    assert a._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


# --- creation functions ---------------------------------------------------------------------
def test_creation_functions():
    assert kit.zeros(2, 3).shape == (2, 3) and kit.zeros((2, 3)).dtype == kit.float32
    assert kit.ones(2, dtype=kit.float64).dtype == kit.float64
    np.testing.assert_array_equal(kit.full((2,), 3.0).data, [3.0, 3.0])
    assert kit.arange(3).dtype == kit.int64 and kit.arange(0, 1, 0.5).dtype == kit.float32
    np.testing.assert_array_equal(kit.linspace(0, 1, 3).data, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(kit.eye(2).data, np.eye(2))
    like = kit.zeros_like(kit.tensor([1, 2]))
    assert like.dtype == kit.int64 and kit.ones_like(like, dtype=kit.float32).dtype == kit.float32
    assert kit.randn(2, 3, requires_grad=True).requires_grad
    assert kit.randint(0, 5, (4,)).dtype == kit.int64 and kit.rand(3).data.max() < 1


def test_manual_seed_makes_random_functions_reproducible():
    kit.manual_seed(3)
    a, n = kit.randn(4), kit.randint(10, size=(3,))
    kit.manual_seed(3)
    np.testing.assert_array_equal(kit.randn(4).data, a.data)
    np.testing.assert_array_equal(kit.randint(10, size=(3,)).data, n.data)


@pytest.mark.parametrize("values", [
    [0.5, -1.0], [1.0, 5.4366], [1.0, 2.0], [1e-5, 1.0], [1e6, 1.0], [1000.0, 1.0],
    [float("nan"), 1.5, float("inf")], [0.0], [123456789.0, 1.5], 2.5, [[1.5, -2.25], [3.0, 4.0]],
    [1, 2], [True, False],
])
def test_repr_prints_numbers_as_pytorch_does(values):
    torch = pytest.importorskip("torch")
    assert repr(kit.tensor(values)) == repr(torch.tensor(values))
