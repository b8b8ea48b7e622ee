"""Bad input, one test each: the error names the op, the shapes or values involved, and the fix."""

import numpy as np
import pytest
from helpers import leaf, rand

import kit
from kit import backend


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "maximum", "minimum"])
def test_binary_shape_mismatch_names_the_op_both_shapes_and_the_fix(op):
    a, b = leaf(rand(2, 3)), leaf(rand(4))
    with pytest.raises(ValueError, match=rf"kit\.{op}: shapes \(2, 3\) and \(4,\) are not "
                                         rf"compatible: they cannot be broadcast together.*"
                                         rf"Fix: reshape or unsqueeze one of them"):
        getattr(kit, op)(a, b)


def test_operator_shape_mismatch_and_where():
    with pytest.raises(ValueError, match=r"kit\.add: shapes \(3,\) and \(2,\)"):
        leaf(rand(3)) + leaf(rand(2))
    with pytest.raises(ValueError, match=r"kit\.where: shapes \(2,\) and \(2, 3\) and \(2, 3\)"):
        kit.where(np.array([True, False]), leaf(rand(2, 3)), leaf(rand(2, 3)))


def test_matmul_mismatch_names_both_shapes_and_the_rule():
    with pytest.raises(ValueError, match=r"kit.matmul: shapes \(2, 3\) and \(4, 5\) cannot be "
                                         r"multiplied: the last dimension of the first \(3\) "
                                         r"must equal the second-to-last dimension of the "
                                         r"second \(4\)"):
        leaf(rand(2, 3)) @ leaf(rand(4, 5))
    with pytest.raises(ValueError, match=r"the only dimension of the second \(4\)"):
        kit.matmul(leaf(rand(2, 3)), leaf(rand(4)))
    with pytest.raises(ValueError, match="kit.matmul: both arguments need at least 1 dimension"):
        kit.matmul(leaf(rand(2, 3)), leaf(2.0))


def test_backward_on_a_non_scalar_says_how_to_reduce():
    y = leaf(rand(3)) * 2
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar "
                                           r"outputs, but output 0 has shape \[3\]\. Fix: reduce "
                                           r"it first \(y.sum\(\).backward\(\)\) or pass"):
        y.backward()


def test_backward_on_a_tensor_without_history():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does "
                                           "not have a grad_fn. Fix: create the inputs with "
                                           "requires_grad=True"):
        kit.tensor([1.0]).sum().backward()


def test_second_backward_says_retain_graph():
    y = (leaf(rand(3)).exp()).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time"
                                           r".*ExpBackward0 released what it saved.*Fix: pass "
                                           r"retain_graph=True"):
        y.backward()


def test_in_place_change_of_a_saved_tensor_names_the_node_and_the_versions():
    x = leaf(rand(3))
    h = x * 1
    y = h.sin()
    h.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: a saved tensor of "
                                           r"shape \[3\] and dtype float64, saved by SinBackward0, "
                                           r"is at version 1; expected version 0 instead\. Fix: "):
        y.sum().backward()


def test_wrong_gradients_from_a_function():
    class TwoInputs(kit.Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, g):
            return (g,)

    with pytest.raises(RuntimeError, match=r"TwoInputsBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\).*\[0\] x, \[1\] w"):
        TwoInputs.apply(leaf([1.0]), leaf([2.0])).sum().backward()

    class WrongShape(kit.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return kit.ones(2, 2, dtype=kit.float64)

    with pytest.raises(RuntimeError, match=r"WrongShapeBackward returned an invalid gradient at "
                                           r"index 0 - got \[2, 2\] but expected shape compatible "
                                           r"with \[3\]\. Fix: return a gradient of the input's "
                                           r"shape, \(3,\): .*sum the gradient over the axes"):
        WrongShape.apply(leaf(rand(3))).sum().backward()


class FakeGpuArray(np.ndarray):
    """A NumPy array that kit.backend takes for a CuPy array (its module is named cupy...)."""


FakeGpuArray.__module__ = "cupy._core.core"


@pytest.mark.skipif(backend.gpu_available(), reason="a real GPU is used in test_backend.py")
@pytest.mark.parametrize("op", [
    lambda c, g: c + g, lambda c, g: g * c, lambda c, g: kit.matmul(c, g),
    lambda c, g: kit.cat([c, g]), lambda c, g: kit.stack([c, g]),
    lambda c, g: kit.where(np.array([True, False, True]), c, g),
    lambda c, g: (c * 1).__setitem__(slice(None), g),
], ids=["add", "mul", "matmul", "cat", "stack", "where", "setitem"])
def test_mixed_devices_name_the_op_and_the_fix(op):
    cpu = leaf([1.0, 2.0, 3.0])
    gpu = kit.Tensor(np.ones(3).view(FakeGpuArray))
    assert gpu.device == "gpu"
    with pytest.raises(RuntimeError, match=r"kit\.\w+: expected all tensors to be on the same "
                                           r"device, but found tensors on cpu and gpu\. Fix: move "
                                           r"one explicitly"):
        op(cpu, gpu)


def test_unsupported_dtype():
    with pytest.raises(TypeError, match=r"kit.tensor: unsupported dtype complex128.*Fix: convert "
                                        r"the data first"):
        kit.tensor(np.array([1j]))
    with pytest.raises(RuntimeError, match=r"only Tensors of floating point dtype can require "
                                           r"gradients.*Fix: convert first"):
        kit.tensor([1, 2], requires_grad=True)


@pytest.mark.parametrize("call, op", [
    (lambda x: x.sum(2), "sum"), (lambda x: x.mean(-3), "mean"), (lambda x: x.max(5), "max"),
    (lambda x: x.logsumexp(2), "logsumexp"), (lambda x: x.softmax(2), "softmax"),
    (lambda x: kit.cat([x, x], 2), "cat"), (lambda x: x.squeeze(2), "squeeze"),
    (lambda x: x.sort(2), "sort"), (lambda x: x.flatten(0, 2), "flatten"),
    (lambda x: x.argsort(-3), "argsort"),
], ids=["sum", "mean", "max", "logsumexp", "softmax", "cat", "squeeze", "sort", "flatten",
        "argsort"])
def test_bad_axis_names_the_op_and_the_valid_range(call, op):
    with pytest.raises(IndexError, match=rf"kit\.{op}: dimension -?\d is out of range for a "
                                         rf"tensor with 2 dimensions \(expected to be in range "
                                         rf"\[-2, 1\]\)"):
        call(leaf(rand(2, 3)))


def test_repeated_or_out_of_range_axes_in_a_list():
    x = leaf(rand(2, 3))
    with pytest.raises(RuntimeError, match=r"kit.sum: dim 0 appears multiple times in the list "
                                           r"of dims \[0, -2\]"):
        x.sum((0, -2))  # (also a ValueError, as kit raised before)
    with pytest.raises(ValueError, match=r"kit.permute: \[0, 3\] is not a permutation of the 2 "
                                         r"axes of a tensor of shape \[2, 3\]"):
        x.permute(0, 3)


def test_flatten_and_stack_axis_errors():
    with pytest.raises(ValueError, match="kit.flatten: start_dim 1 comes after end_dim 0"):
        leaf(rand(2, 3)).flatten(1, 0)
    x = leaf(rand(2, 3))  # stacking two makes 3 dimensions: the new axis is in [-3, 2]
    with pytest.raises(IndexError, match=r"kit.stack: dimension -4 is out of range .*\[-3, 2\]"):
        kit.stack([x, x], -4)


def test_reshape_to_the_wrong_size_names_both_shapes():
    with pytest.raises(ValueError, match=r"kit.reshape: shape \[4, 2\] is invalid for input of "
                                         r"size 6 \(shape \[2, 3\]\)"):
        leaf(rand(2, 3)).reshape(4, 2)


def test_cat_shape_mismatch_names_the_shapes_and_the_axis():
    with pytest.raises(ValueError, match=r"kit.cat: shapes \(2, 3\) and \(2, 4\) are not "
                                         r"compatible: all sizes except axis 0 must match"):
        kit.cat([leaf(rand(2, 3)), leaf(rand(2, 4))])
