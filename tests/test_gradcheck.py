"""kit.gradcheck / kit.gradgradcheck: pass on correct gradients, catch wrong ones with a report
naming the output, the input, the worst element and both values; float32 inputs are upcast with a
warning."""

import re

import numpy as np
import pytest
from helpers import leaf

import kit


class WrongSecondInput(kit.Function):
    """x * y**2 whose backward gets d/dy wrong (2y instead of 2xy)."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y * y, g * 2 * y


class FrozenDerivative(kit.Function):
    """x**3 whose backward is right to first order but uses a constant copy of 3x**2, so its
    own derivative (the second derivative) is lost."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * kit.tensor(3 * x._data ** 2)


def test_gradcheck_passes_on_correct_ops():
    x, y = leaf([[0.5, -1.0], [2.0, 0.3]]), leaf([1.5, -0.7])
    assert kit.gradcheck(lambda a, b: (a * b).tanh() @ b, (x, y))
    assert kit.gradcheck(lambda a: (a.exp(), a.sum(0)), (x,))  # several outputs
    assert kit.gradgradcheck(lambda a, b: (a * b).sin().sum(1), (x, y))


def test_gradcheck_report_names_output_input_worst_element_and_values():
    x, y = leaf([1.0, 2.0]), leaf([3.0, -1.0])
    with pytest.raises(kit.GradcheckError) as info:
        kit.gradcheck(WrongSecondInput.apply, (x, y))
    message = str(info.value)
    # d out[0]/d y[0] = 2 x y = 6 (numerical); the wrong backward gives 2 y = 6 too at x=1, so the
    # worst element is the second one: 2 * 2 * -1 = -4 numerical vs 2 * -1 = -2 analytical.
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 1")
    assert "the worst element is d out[0].flat[1] / d in[1].flat[1]" in message
    match = re.search(r"numerical (\S+) vs analytical (\S+)", message)
    assert float(match.group(1)) == pytest.approx(-4.0, abs=1e-6)
    assert float(match.group(2)) == pytest.approx(-2.0)
    assert "1 of 4 elements disagree" in message


def test_gradcheck_without_raising_returns_false():
    x, y = leaf([1.0, 2.0]), leaf([3.0, -1.0])
    assert kit.gradcheck(WrongSecondInput.apply, (x, y), raise_exception=False) is False


def test_gradcheck_names_the_output_that_is_wrong():
    x, y = leaf([1.0, 2.0]), leaf([3.0, -1.0])
    with pytest.raises(kit.GradcheckError, match="for output 1 with respect to input 1"):
        kit.gradcheck(lambda a, b: (a * b, WrongSecondInput.apply(a, b)), (x, y))


def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = leaf([0.5, -1.5])
    assert kit.gradcheck(FrozenDerivative.apply, (x,))
    with pytest.raises(kit.GradcheckError, match="Jacobian mismatch for output 0 with respect "
                                                 "to input 0"):
        kit.gradgradcheck(FrozenDerivative.apply, (x,))


def test_float32_inputs_warn_and_are_checked_in_float64():
    x = kit.tensor([0.5, 1.0], requires_grad=True)
    seen = []

    def f(t):
        seen.append(t.dtype)
        return t.tanh()

    with pytest.warns(UserWarning, match=r"gradcheck: inputs \[0\] are float32/float16; "
                                         r"checking them in float64"):
        assert kit.gradcheck(f, (x,))
    assert set(seen) == {kit.float64}
    assert x.dtype == kit.float32 and x.grad is None


def test_non_contiguous_inputs_are_perturbed_in_place():
    x = kit.from_numpy(np.arange(6.0).reshape(2, 3).T).requires_grad_()
    assert not x._data.flags["C_CONTIGUOUS"]
    assert kit.gradcheck(lambda t: t * t.sum(0), (x,))


def test_non_differentiable_inputs_are_passed_through():
    x = leaf([1.0, 2.0, 3.0])
    idx = kit.tensor([2, 0])
    assert kit.gradcheck(lambda a, i, k: a[i] * k, (x, idx, 3.0))


def test_tolerances_are_pytorchs_rule():
    """|analytical - numerical| <= atol + rtol * |numerical|: a 1% error passes at rtol=0.02."""

    class OnePercentOff(kit.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2.02

    x = leaf([1.0])
    assert not kit.gradcheck(OnePercentOff.apply, (x,), raise_exception=False)
    assert kit.gradcheck(OnePercentOff.apply, (x,), rtol=0.02)


def test_pytorch_only_keywords_are_accepted():
    """Code written for torch.autograd.gradcheck runs unchanged: options kit has no use for
    (check_undefined_grad, fast_mode, nondet_tol, ...) are accepted and have no effect."""
    x = kit.tensor([0.5, -1.0], dtype=kit.float64, requires_grad=True)
    assert kit.gradcheck(kit.tanh, (x,), check_undefined_grad=True, fast_mode=True)
    assert kit.gradgradcheck(kit.tanh, (x,), nondet_tol=0.0)


def test_unknown_options_are_refused_but_pytorchs_are_accepted():
    x = kit.tensor([0.5, -1.0], dtype=kit.float64, requires_grad=True)
    assert kit.gradcheck(kit.tanh, (x,), fast_mode=True, check_undefined_grad=False)
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['atoll'\]"):
        kit.gradcheck(kit.tanh, (x,), atoll=1e-3)
    with pytest.raises(TypeError, match=r"gradgradcheck\(\) got unexpected"):
        kit.gradgradcheck(kit.tanh, (x,), nope=1)
