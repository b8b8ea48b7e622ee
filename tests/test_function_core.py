"""kit.Function, the one extension contract, as the engine sees it: both forms, apply's
arguments, ctx, mark_dirty / mark_non_differentiable / set_materialize_grads,
once_differentiable, and the errors for wrong gradients. (The PyTorch-style front end is tested
in test_torch_frontend.py and test_extending_pytorch.py.)"""

import numpy as np
import pytest
from helpers import host, leaf

import kit


class Cube(kit.Function):
    """Combined form; backward made of kit ops, so it is differentiable again."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class ScaledExp(kit.Function):
    """Separate form, a non-tensor argument with a default, and a saved output."""

    @staticmethod
    def forward(x, scale=1.0):
        return (x * scale).exp()

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, ctx.scale = inputs
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * ctx.scale, None


def test_both_forms_match_finite_differences_first_and_second_order():
    x = leaf([0.5, -1.0, 2.0])
    assert kit.gradcheck(Cube.apply, (x,)) and kit.gradgradcheck(Cube.apply, (x,))
    assert kit.gradcheck(lambda t: ScaledExp.apply(t, scale=0.5), (x,))
    assert kit.gradgradcheck(lambda t: ScaledExp.apply(t, 0.5), (x,))


def test_a_function_call_is_an_ordinary_graph_node():
    x = leaf([1.0, 2.0])
    y = Cube.apply(x * 2)
    node = y.grad_fn
    assert node.name() == "CubeBackward" and node.kind == "custom" and node.op == "Cube"
    assert node.next_functions[0][0].name() == "MulBackward0"
    assert node.frontend == "PyTorch-style"
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), 3 * (2 * host(x)) ** 2 * 2)
    assert node.released()


def test_forward_runs_without_recording_and_sees_plain_arguments():
    seen = {}

    class Probe(kit.Function):
        @staticmethod
        def forward(ctx, x, n, label="a"):
            seen.update(grad=kit.is_grad_enabled(), n=n, label=label,
                        needs=ctx.needs_input_grad)
            y = x * n
            seen["inner_recorded"] = y.requires_grad
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    x = leaf([1.0])
    Probe.apply(x, 2, label="b")
    assert seen == {"grad": False, "n": 2, "label": "b", "needs": (True, False, False),
                    "inner_recorded": False}


def test_no_input_requiring_grad_or_no_grad_gives_a_plain_output():
    assert Cube.apply(kit.tensor([1.0])).grad_fn is None
    with kit.no_grad():
        y = Cube.apply(leaf([1.0]))
    assert y.grad_fn is None and not y.requires_grad


def test_needs_input_grad_in_backward():
    needs = []

    class Mul(kit.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            needs.append(ctx.needs_input_grad)
            a, b = ctx.saved_tensors
            return (g * b if ctx.needs_input_grad[0] else None,
                    g * a if ctx.needs_input_grad[1] else None)

    a, b = leaf([2.0]), kit.tensor(np.array([5.0]))
    Mul.apply(a, b).sum().backward()
    assert needs == [(True, False)] and a.grad.item() == 5.0 and b.grad is None


def test_saved_tensor_changed_in_place_is_caught():
    x = leaf([1.0, 2.0])
    h = x * 1
    y = Cube.apply(h)
    with kit.no_grad():
        h += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_output_changed_in_place_is_caught():
    x = leaf([1.0, 2.0])
    y = ScaledExp.apply(x)
    with kit.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_tensors_are_freed_after_backward():
    x = leaf([1.0, 2.0])
    y = Cube.apply(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


# --- ctx flags ------------------------------------------------------------------------------
def test_mark_dirty_returns_the_modified_input_with_new_history():
    class AddOneInPlace(kit.Function):
        @staticmethod
        def forward(ctx, x):
            x.data += 1
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0, 2.0])
    h = x * 2
    version = h._version
    out = AddOneInPlace.apply(h)
    assert out is h and h._version == version + 1 and h.grad_fn.name() == "AddOneInPlaceBackward"
    (out * 3).sum().backward()
    np.testing.assert_array_equal(host(h), [3.0, 5.0])
    np.testing.assert_array_equal(host(x.grad), [6.0, 6.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in "
                                           "an in-place operation"):
        AddOneInPlace.apply(leaf([1.0]))


def test_mark_dirty_on_an_input_that_is_not_returned_errors():
    class Forgets(kit.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not "
                                           "returned"):
        Forgets.apply(leaf([1.0]) * 1)


class SortWithIndices(kit.Function):
    """Two outputs, the second non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        idx = kit.tensor(np.argsort(x.data))
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return x.data[idx.data], idx

    @staticmethod
    def backward(ctx, g_values, g_idx):
        (idx,) = ctx.saved_tensors
        assert g_idx is not None and not host(g_idx).any()  # materialised zeros
        out = kit.zeros(*g_values.shape, dtype=g_values.dtype)
        with kit.no_grad():
            out[idx] = g_values
        return out


def test_mark_non_differentiable_output():
    x = leaf([3.0, 1.0, 2.0])
    values, idx = SortWithIndices.apply(x)
    assert values.requires_grad and not idx.requires_grad and idx.grad_fn is None
    (values * kit.tensor(np.array([1.0, 10.0, 100.0]))).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [100.0, 1.0, 10.0])


def test_set_materialize_grads_false_gives_none_for_unused_outputs():
    received = []

    class Split(kit.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            received.append(gb)
            return ga * 2 + (0 if gb is None else gb * 3), None

    for materialize in (False, True):
        x = leaf([1.0])
        a, _ = Split.apply(x, materialize)
        a.sum().backward()
        assert x.grad.item() == 2.0
    assert received[0] is None
    assert isinstance(received[1], kit.Tensor) and received[1].item() == 0.0


def test_once_differentiable_blocks_double_backward_with_a_clear_error():
    class NumpySquare(kit.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.data ** 2

        @staticmethod
        @kit.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x.data * g.data

    x = leaf([3.0])
    y = NumpySquare.apply(x)
    (g,) = kit.grad(y.sum(), x, create_graph=True)
    assert g.item() == 6.0
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was "
                                           "marked with @once_differentiable"):
        g.sum().backward()
    z = leaf([2.0])
    NumpySquare.apply(z).sum().backward()  # first order is fine
    assert z.grad.item() == 4.0


# --- wrong gradients ------------------------------------------------------------------------
def _function(backward):
    """A one-input Function (named Bad) with the given backward."""

    def forward(ctx, x):
        return x * 1

    return type("Bad", (kit.Function,), {"forward": staticmethod(forward),
                                         "backward": staticmethod(backward)})


def test_too_few_gradients_names_the_forward_inputs():
    class TwoInputs(kit.Function):
        @staticmethod
        def forward(ctx, x, weight):
            return x * weight

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match=r"function TwoInputsBackward returned an incorrect "
                                           r"number of gradients \(expected 2, got 1\).*\[0\] x, "
                                           r"\[1\] weight"):
        TwoInputs.apply(leaf([1.0]), leaf([2.0])).sum().backward()


def test_extra_trailing_none_is_allowed_but_not_an_extra_gradient():
    ok = _function(lambda ctx, g: (g, None, None))
    x = leaf([1.0])
    ok.apply(x).sum().backward()
    assert x.grad.item() == 1.0
    bad = _function(lambda ctx, g: (g, g))
    with pytest.raises(RuntimeError, match="incorrect number of gradients.*extra gradient at "
                                           "index 1 must be None"):
        bad.apply(leaf([1.0])).sum().backward()


def test_wrong_gradient_shape_says_what_was_expected():
    bad = _function(lambda ctx, g: kit.ones(5, dtype=kit.float64))
    with pytest.raises(RuntimeError, match=r"BadBackward returned an invalid gradient at index 0 "
                                           r"- got \[5\] but expected shape compatible with \[3\]"):
        bad.apply(leaf([1.0, 2.0, 3.0])).sum().backward()


def test_broadcastable_gradient_is_summed_and_cast():
    bigger = _function(lambda ctx, g: kit.ones(4, 3, dtype=kit.float32))
    x = leaf([1.0, 2.0, 3.0])
    bigger.apply(x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [4.0, 4.0, 4.0])
    assert x.grad.dtype == kit.float64


def test_a_float_instead_of_a_tensor_is_refused():
    bad = _function(lambda ctx, g: 1.0)
    # NOTE: RuntimeError, as PyTorch's "expected Variable or None (got float)".
    with pytest.raises(RuntimeError, match=r"BadBackward returned a gradient of type float at "
                                           r"index 0 \(for input x\): expected Tensor or None "
                                           r"\(got float\)"):
        bad.apply(leaf([1.0])).sum().backward()


def test_gradient_for_a_non_tensor_argument_must_be_none():
    class Scale(kit.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match=r"position 1, but the corresponding forward input "
                                           r"\(k \(not a tensor\)\) is not a Tensor"):
        Scale.apply(leaf([1.0]), 2.0).sum().backward()


def test_calling_an_instance_shows_apply():
    with pytest.raises(RuntimeError, match=r"Legacy autograd function with non-static forward "
                                           r"(.|\n)*Cube.apply\(leaf\(\[1.0\]\)\)"):
        Cube()(leaf([1.0]))


def test_tensor_stored_on_ctx_warns():
    class Stores(kit.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.warns(UserWarning, match=r"ctx.x = <Tensor>.*ctx.save_for_backward\(x\)"):
        Stores.apply(leaf([1.0]))


def test_save_for_backward_rejects_non_tensors_and_both_backward_and_vjp_error():
    class SavesInt(kit.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

    with pytest.raises(TypeError, match="save_for_backward can only save tensors, but argument 1 "
                                        "is of type int"):
        SavesInt.apply(leaf([1.0]))

    class Both(kit.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vjp(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="implementing both 'backward' and 'vjp'"):
        Both.apply(leaf([1.0])).sum().backward()
