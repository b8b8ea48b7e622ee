"""PyTorch's semantics at the edges: copies, pickling, formatting, NumPy functions, assigned
gradients, hooks and error classes, each run on kit.torch and (where installed) real PyTorch."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

from tests.torch_oracle import is_kit, libraries

LIBS = libraries()


def values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


@pytest.mark.parametrize("torch", LIBS)
def test_deepcopy_of_a_leaf_is_an_independent_leaf(torch):
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    (w * 2).sum().backward()
    c = copy.deepcopy(w)
    assert c is not w and c.is_leaf and c.requires_grad
    np.testing.assert_array_equal(values(c.grad), [2.0, 2.0])
    (c * 3).sum().backward()
    np.testing.assert_array_equal(values(c.grad), [5.0, 5.0])
    np.testing.assert_array_equal(values(w.grad), [2.0, 2.0])  # gradients land on the copy only
    with torch.no_grad():
        c.add_(1)
    np.testing.assert_array_equal(values(w), [1.0, 2.0])


@pytest.mark.parametrize("torch", LIBS)
def test_deepcopy_of_a_non_leaf_raises(torch):
    y = torch.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(y)


@pytest.mark.parametrize("torch", LIBS)
def test_pickle_round_trips_data_and_requires_grad(torch):
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = w * 2
    for t, want in ((w, [1.0, 2.0]), (y, [2.0, 4.0]), (torch.tensor([1, 2]), [1, 2])):
        back = pickle.loads(pickle.dumps(t))
        assert back.is_leaf and back.requires_grad == t.requires_grad and back.dtype == t.dtype
        np.testing.assert_array_equal(values(back), want)


@pytest.mark.parametrize("torch", LIBS)
def test_pickling_a_tensor_with_a_hook_warns_that_the_hook_is_dropped(torch):
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="will not be serialized"):
        back = pickle.loads(pickle.dumps(w))
    assert back.requires_grad


@pytest.mark.parametrize("torch", LIBS)
def test_format_of_a_one_element_tensor(torch):
    loss = torch.tensor(3.14159)
    assert f"{loss:.2f}" == "3.14" and f"{loss}" == str(loss.item())
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{torch.tensor([1.0, 2.0]):.2f}"  # noqa: B018


@pytest.mark.parametrize("torch", LIBS)
def test_numpy_ufuncs_give_tensors_and_never_drop_the_graph_silently(torch):
    t = torch.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PyTorch's __array_wrap__ on NumPy 2
        out = np.exp(t)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(values(out), np.exp([1.0, 2.0]), rtol=1e-6)
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    if is_kit(torch):  # kit runs a ufunc that is a kit op as that op: the graph is kept
        y = np.exp(w)
        y.sum().backward()
        np.testing.assert_allclose(values(w.grad), np.exp([1.0, 2.0]), rtol=1e-6)
        with pytest.raises(RuntimeError, match="Can't call numpy"):
            np.arctan(w)  # not a kit op: refused rather than silently cut from the graph
    else:
        with pytest.raises(RuntimeError, match="Can't call numpy"):
            np.exp(w)


@pytest.mark.parametrize("torch", LIBS)
def test_assigned_grad_must_match_dtype_and_shape(torch):
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient"):
        w.grad = torch.zeros(2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size"):
        w.grad = torch.zeros(3)


@pytest.mark.parametrize("torch", LIBS)
def test_a_hook_may_not_change_the_dtype(torch):
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        (w * 2).sum().backward()


@pytest.mark.parametrize("torch", LIBS)
def test_requires_grad_flags(torch):
    y = torch.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad = True  # even True, as an attribute
    assert y.requires_grad_() is y  # the method with True is a no-op
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        torch.tensor([1, 2]).requires_grad = True


@pytest.mark.parametrize("torch", LIBS)
def test_shape_mismatch_is_a_runtime_error(torch):
    with pytest.raises(RuntimeError):
        torch.ones(2) + torch.ones(3)


def test_kit_shape_errors_are_still_value_errors():
    import kit

    with pytest.raises(ValueError, match="kit.add: shapes"):
        kit.ones(2) + kit.ones(3)


@pytest.mark.parametrize("torch", LIBS)
def test_gradcheck_needs_an_input_that_requires_grad(torch):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require "
                                         "gradient"):
        torch.autograd.gradcheck(lambda t: t * 2, (x,))


def test_gradcheck_restores_the_inputs_when_the_function_raises():
    """(PyTorch 2.13 leaves the element it was perturbing at x - eps; kit restores it.)"""
    import kit.torch as torch

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    calls = []

    def flaky(t):
        calls.append(1)
        if len(calls) > 1:  # the first call passes, a perturbed one raises
            raise ValueError("boom")
        return t * 2

    with pytest.raises(ValueError, match="boom"):
        torch.autograd.gradcheck(flaky, (x,))
    np.testing.assert_array_equal(values(x), [1.0, 2.0])


def test_gradcheck_refuses_a_python_number_and_checks_expanded_inputs():
    import kit

    x = kit.tensor([1.0, 2.0], dtype=kit.float64, requires_grad=True)
    with pytest.raises(TypeError, match="must return a Tensor .* it returned float"):
        kit.gradcheck(lambda t: 3.0, (x,))
    e = kit.tensor([1.5], dtype=kit.float64, requires_grad=True).expand(3)
    assert kit.gradcheck(lambda t: t * t, (e,))  # PyTorch refuses stride-0 inputs; kit copies


@pytest.mark.parametrize("torch", LIBS)
def test_integer_results_are_not_tracked(torch):
    x = torch.tensor([1.5, -2.0], requires_grad=True)
    for y in (x.long(), x.int(), x.bool(), x.argmax(), x > 0):
        assert not y.requires_grad and y.grad_fn is None
    s = x.sign()  # tracked, with a zero gradient
    assert s.requires_grad
    f = x.double()
    assert f.requires_grad and type(f.grad_fn).__name__ == "ToCopyBackward0"


@pytest.mark.parametrize("torch", LIBS)
def test_old_tutorials_update_through_data_in_place(torch):
    """`w.data -= lr * w.grad` and `w.grad.data.zero_()` (pre-0.4 tutorials) update in place:
    w stays the same leaf, its version does not move (.data has its own counter) and the next
    backward works."""
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    x = torch.tensor([3.0, -2.0])
    expected = np.array([1.0, 2.0])
    for _ in range(2):
        loss = ((w * x).sum() - 1.0) ** 2
        loss.backward()
        w.data -= 0.1 * w.grad
        w.grad.data.zero_()
        expected -= 0.1 * 2 * (expected @ [3.0, -2.0] - 1.0) * np.array([3.0, -2.0])
    assert w.is_leaf and w.requires_grad and w._version == 0
    np.testing.assert_allclose(values(w), expected, rtol=1e-6)
    np.testing.assert_array_equal(values(w.grad), [0.0, 0.0])
    saved = w * 2  # a saved value of w is not invalidated by a .data update, as in PyTorch
    w.data.mul_(2)
    saved.sum().backward()
    np.testing.assert_array_equal(values(w.grad), [2.0, 2.0])


# --- conversions that PyTorch warns about (issue 11) ------------------------------------------
COPY_CONSTRUCT = (r"To copy construct from a tensor, it is recommended to use "
                  r"sourceTensor\.detach\(\)\.clone\(\) or sourceTensor\.detach\(\)\.clone\(\)"
                  r"\.requires_grad_\(True\), rather than {}\(sourceTensor\)\.")


@pytest.mark.parametrize("torch", LIBS)
def test_tensor_of_a_tensor_warns_to_detach_and_clone(torch):
    source = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=COPY_CONSTRUCT.format(r"torch\.tensor")):
        copy = torch.tensor(source)
    assert copy.is_leaf and not copy.requires_grad
    with pytest.warns(UserWarning, match=COPY_CONSTRUCT.format(r"tensor\.new_tensor")):
        torch.zeros(1).new_tensor(source)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a list of tensors, as_tensor and Tensor stay silent
        torch.tensor([torch.tensor(1.0), torch.tensor(2.0)])
        torch.as_tensor(source.detach())
        source.detach().clone()


@pytest.mark.parametrize("torch", LIBS)
def test_float_of_a_tensor_that_requires_grad_warns_int_and_item_do_not(torch):
    x = torch.tensor(2.0, requires_grad=True)
    # NOTE: PyTorch warns once per process (TORCH_WARN_ONCE) unless warn_always is on; kit
    # warns at each call, and Python's filters show it once per line.
    always = getattr(torch, "is_warn_always_enabled", lambda: None)()
    if always is not None:
        torch.set_warn_always(True)
    try:
        for convert in (float, complex):
            with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True "
                                                 "to a scalar may lead to unexpected behavior"):
                convert(x * 2)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert (int(x), x.item(), bool(x)) == (2, 2.0, True)
            with torch.no_grad():
                assert float(x) == 2.0
    finally:
        if always is not None:
            torch.set_warn_always(always)


@pytest.mark.parametrize("torch", LIBS)
def test_numpy_array_of_a_tensor_that_requires_grad_raises_as_numpy(torch):
    x = torch.tensor([2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PyTorch's __array__ on NumPy 2
        with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires "
                                               "grad"):
            np.array(x)
        np.testing.assert_array_equal(np.array(x.detach()), [2.0])
