"""REFERENCE.md's PyTorch rows, one test each: autograd.Function, ctx, graph behaviour, gradcheck.

Every test runs on kit.torch and, when it is installed, on real PyTorch: the same code must give
the same result or the same exception type. Lines under `if is_kit(torch)` check what kit says
beyond PyTorch (the fix, the inputs by name, the worst element).
"""

from __future__ import annotations

import warnings

import pytest
from torch_oracle import is_kit, libraries

import kit.torch

pytestmark = pytest.mark.parametrize("torch", libraries())


def function(torch, forward, backward, **extra):
    """A combined-form Function class built from two plain functions."""
    body = {"forward": staticmethod(forward), "backward": staticmethod(backward), **extra}
    return type("F", (torch.autograd.Function,), body)


def vec(torch, values=(1.0, 2.0, 3.0), **kwargs):
    return torch.tensor(list(values), requires_grad=True, **kwargs)


# --- defining and calling ----------------------------------------------------------------

def test_apply_with_keywords_and_non_tensor_args(torch):
    seen = {}

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k=2.0, *, shift=0.0):
            seen["grad_mode"] = torch.is_grad_enabled()
            ctx.k = k
            return x * k + shift

        @staticmethod
        def backward(ctx, g):
            seen["needs"] = ctx.needs_input_grad
            return g * ctx.k, None, None

    x = vec(torch)
    Scale.apply(x, k=3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    assert seen["grad_mode"] is False  # forward runs with grad mode off
    assert seen["needs"][:2] == (True, False)


def test_no_input_requires_grad_gives_a_plain_output(torch):
    double = function(torch, lambda ctx, x: x * 2, lambda ctx, g: g * 2)
    y = double.apply(torch.tensor([1.0]))
    assert (y.requires_grad, y.grad_fn) == (False, None)
    with torch.no_grad():
        y = double.apply(vec(torch))
    assert (y.requires_grad, y.grad_fn) == (False, None)


def test_too_few_gradients(torch):
    mul = function(torch, lambda ctx, a, b: a * b, lambda ctx, g: g)
    y = mul.apply(vec(torch), torch.tensor([1.0, 1.0, 1.0]))
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 2, got 1\)"):
        y.sum().backward()
    if is_kit(torch):
        y = mul.apply(vec(torch), torch.tensor([1.0, 1.0, 1.0]))
        with pytest.raises(RuntimeError, match=r"in order: \[0\] a, \[1\] b \(may be None\)"):
            y.sum().backward()


def test_non_tensor_input_is_named_and_needs_none(torch):
    scale = function(torch, lambda ctx, x, k: x * k, lambda ctx, g: (g, g))
    with pytest.raises(RuntimeError, match="different than None at position"):
        scale.apply(vec(torch), 2.0).sum().backward()
    short = function(torch, lambda ctx, x, name: x * 2, lambda ctx, g: ())
    if is_kit(torch):
        with pytest.raises(RuntimeError, match=r"\[0\] x, \[1\] name \(not a tensor\) -> None"):
            short.apply(vec(torch), "label").sum().backward()


def test_extra_gradients_must_be_none(torch):
    trailing = function(torch, lambda ctx, x: x * 2, lambda ctx, g: (g * 2, None, None))
    x = vec(torch)
    trailing.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    extra = function(torch, lambda ctx, x: x * 2, lambda ctx, g: (g, g))
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 1, got 2\)"):
        extra.apply(vec(torch)).sum().backward()


def test_combined_form_needs_no_gradient_for_an_omitted_default(torch):
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k=2.0):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k  # one gradient: k was not passed

    x = vec(torch)
    Scale.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match=r"\(expected 2, got 1\)"):
        Scale.apply(vec(torch), 3.0).sum().backward()  # passed, so it needs its None


def test_gradient_of_a_wrong_shape(torch):
    five = function(torch, lambda ctx, x: x * 2, lambda ctx, g: torch.ones(5))
    with pytest.raises(RuntimeError, match=r"invalid gradient at index 0 - got \[5\] but "
                                           r"expected shape compatible with \[3\]"):
        five.apply(vec(torch)).sum().backward()


def test_broadcast_gradient_is_summed_and_cast(torch):
    wide = function(torch, lambda ctx, x: x * 2,
                    lambda ctx, g: torch.ones(4, 3, dtype=torch.float64))
    x = vec(torch)
    wide.apply(x).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0, 4.0] and x.grad.dtype == torch.float32


def test_float_instead_of_a_tensor(torch):
    number = function(torch, lambda ctx, x: x * 2, lambda ctx, g: 1.0)
    with pytest.raises(RuntimeError, match=r"or None \(got float\)"):
        number.apply(vec(torch)).sum().backward()


def test_both_backward_and_vjp(torch):
    both = function(torch, lambda ctx, x: x * 2, lambda ctx, g: g, vjp=staticmethod(lambda c, g: g))
    with pytest.raises(RuntimeError, match="both 'backward' and 'vjp'"):
        both.apply(vec(torch)).sum().backward()


# --- ctx -----------------------------------------------------------------------------------

class ExpF:
    """exp saving its output, built for either library."""

    @staticmethod
    def make(torch):
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

        return function(torch, forward, backward)


def test_saved_output_modified_in_place(torch):
    y = ExpF.make(torch).apply(vec(torch))
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; "
                                           "expected version 0 instead"):
        y.sum().backward()


def test_saved_input_modified_in_place(torch):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

    x = vec(torch).clone()
    y = function(torch, forward, backward).apply(x)
    x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_tensors_are_freed_after_backward(torch):
    x = vec(torch)
    y = ExpF.make(torch).apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()  # retained: works, and gradients accumulate
    assert torch.allclose(x.grad, 2 * x.detach().exp())
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_grad_fn_is_the_ctx(torch):
    """`y.grad_fn` of a custom Function exposes ctx: saved tensors and attributes."""
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        ctx.k = 3
        return y

    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y

    y = function(torch, forward, backward).apply(vec(torch))
    (saved,) = y.grad_fn.saved_tensors
    assert torch.equal(saved, y) and y.grad_fn.k == 3
    y.sum().backward()
    with pytest.raises(RuntimeError, match="directly access saved tensors after they have already "
                                           "been freed"):
        y.grad_fn.saved_tensors  # noqa: B018
    with pytest.raises(AttributeError):
        y.grad_fn.no_such_attribute  # noqa: B018


def test_vjp_instead_of_backward(torch):
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 2

    x = vec(torch)
    Double.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_second_backward_with_nothing_saved_succeeds(torch):
    x = vec(torch)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_save_for_backward_rejects_non_tensors_and_replaces(torch):
    def forward(ctx, x):
        ctx.save_for_backward(x, None)
        ctx.save_for_backward(x * 3)  # a second call replaces the first
        return x * 2

    def backward(ctx, g):
        (x3,) = ctx.saved_tensors
        return g * x3

    x = vec(torch)
    function(torch, forward, backward).apply(x).sum().backward()
    assert x.grad.tolist() == [3.0, 6.0, 9.0]
    bad = function(torch, lambda ctx, x: ctx.save_for_backward(x, 3) or x * 2, lambda ctx, g: g)
    with pytest.raises(TypeError, match="save_for_backward can only save"):
        bad.apply(vec(torch))


def test_tensor_stored_on_ctx_warns(torch):
    def forward(ctx, x):
        ctx.doubled = x * 2
        return x * 2

    store = function(torch, forward, lambda ctx, g: g * 2)
    if is_kit(torch):
        with pytest.warns(UserWarning, match=r"Use ctx.save_for_backward\(doubled\)"):
            store.apply(vec(torch))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            store.apply(vec(torch))  # PyTorch accepts it silently


def test_mark_dirty(torch):
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    inplace = function(torch, forward, lambda ctx, g: g)
    a = vec(torch).clone()
    out = inplace.apply(a)
    assert out is a and a.grad_fn.name() == "FBackward" and a.tolist() == [2.0, 3.0, 4.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        inplace.apply(vec(torch))

    def forward_not_returned(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x * 2

    hidden = function(torch, forward_not_returned, lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not "
                                           "returned"):
        hidden.apply(vec(torch).clone())


def test_mark_non_differentiable_still_gets_a_zero_slot(torch):
    seen = []

    def forward(ctx, x):
        mask = (x > 1.5).to(x.dtype)
        ctx.mark_non_differentiable(mask)
        return x * 2, mask

    def backward(ctx, g, g_mask):
        seen.append(g_mask.tolist())
        return g * 2

    x = vec(torch)
    y, mask = function(torch, forward, backward).apply(x)
    assert mask.requires_grad is False and y.requires_grad is True
    y.sum().backward()
    assert seen == [[0.0, 0.0, 0.0]] and x.grad.tolist() == [2.0, 2.0, 2.0]


def test_an_integer_output_has_no_gradient_even_unmarked(torch):
    seen = []

    def forward(ctx, x):
        index = x.argmax()
        ctx.save_for_backward(x, index)
        return x[index] * 1, index

    def backward(ctx, g, g_index):
        seen.append(g_index.tolist())
        x, index = ctx.saved_tensors
        grad = torch.zeros_like(x)
        grad[index] = g
        return grad

    x = vec(torch, (1.0, 5.0, 2.0))
    value, index = function(torch, forward, backward).apply(x)
    assert index.requires_grad is False and index.grad_fn is None and value.requires_grad
    value.backward()
    assert seen == [0] and x.grad.tolist() == [0.0, 1.0, 0.0]


def test_set_materialize_grads_false_gives_none(torch):
    seen = []

    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    def backward(ctx, g1, g2):
        seen.append(g2)
        return g1 * 2

    y1, _ = function(torch, forward, backward).apply(vec(torch))
    y1.sum().backward()
    assert seen == [None]


def test_once_differentiable_double_backward(torch):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

    square = function(torch, forward, torch.autograd.function.once_differentiable(backward))
    x = vec(torch)
    (g,) = torch.autograd.grad((square.apply(x) ** 2).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()
    (g,) = torch.autograd.grad(square.apply(x).sum(), x, create_graph=True)
    if is_kit(torch):  # the term through the saved x is not silently dropped
        with pytest.raises(RuntimeError, match="@once_differentiable"):
            g.sum().backward()
    else:
        assert g.requires_grad is False  # PyTorch: no graph, the x-dependence is lost


# --- graph behaviour ------------------------------------------------------------------------

def test_backward_needs_a_scalar_or_a_gradient(torch):
    x = vec(torch)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    (x[:1] * 2).backward()  # one element is fine
    (x * 2).backward(torch.tensor([1.0, 10.0, 100.0]))
    assert x.grad.tolist() == [4.0, 20.0, 200.0]  # and gradients accumulate into .grad


def test_backward_without_a_graph(torch):
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does "
                                           "not have a grad_fn"):
        torch.tensor([1.0]).sum().backward()


def test_grad_of_a_non_leaf_warns_and_retain_grad_keeps_it(torch):
    x = vec(torch)
    y = x * 2
    z = x * 3
    z.retain_grad()
    (y + z).sum().backward()
    with pytest.warns(UserWarning, match="retain_grad"):
        assert y.grad is None
    assert z.grad.tolist() == [1.0, 1.0, 1.0]


def test_register_hook_replaces_the_gradient(torch):
    x = vec(torch)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 20.0, 20.0]


def test_create_graph_makes_the_gradient_differentiable(torch):
    x = vec(torch)
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert g.tolist() == [3.0, 12.0, 27.0] and gg.tolist() == [6.0, 12.0, 18.0]


# --- gradcheck ------------------------------------------------------------------------------

def wrong_square(torch):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * g  # wrong on purpose: d(x^2)/dx is 2x

    return function(torch, forward, backward)


def test_gradcheck_catches_a_wrong_backward(torch):
    x = vec(torch, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda t: t.exp() * t, (x,))
    mismatch = "Jacobian mismatch for output 0 with respect to input 0"
    with pytest.raises(RuntimeError, match=mismatch):
        torch.autograd.gradcheck(wrong_square(torch).apply, (x,))
    assert torch.autograd.gradcheck(wrong_square(torch).apply, (x,), raise_exception=False) is False
    if is_kit(torch):
        with pytest.raises(RuntimeError, match=r"worst element .* numerical 6 vs analytical 9"):
            torch.autograd.gradcheck(wrong_square(torch).apply, (x,))


def test_gradcheck_of_float32_inputs(torch):
    x = vec(torch)  # float32
    if is_kit(torch):  # kit checks in float64 instead, and says so
        with pytest.warns(UserWarning, match="checking them in float64"):
            assert torch.autograd.gradcheck(lambda t: t * t, (x,))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            with pytest.raises(RuntimeError, match="Jacobian mismatch"):
                torch.autograd.gradcheck(lambda t: t * t, (x,))


def test_gradgradcheck_catches_a_backward_that_is_not_differentiable(torch):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x.detach() ** 2 * g  # detached: the second derivative is lost

    cube = function(torch, forward, backward)
    x = vec(torch, dtype=torch.float64)
    assert torch.autograd.gradcheck(cube.apply, (x,))
    assert torch.autograd.gradgradcheck(cube.apply, (x,), raise_exception=False) is False


def test_kit_function_is_the_core_function(torch):
    if is_kit(torch):
        assert torch.autograd.Function is kit.Function
