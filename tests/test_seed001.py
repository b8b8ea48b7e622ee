"""Seed 001 (an article on torch.autograd.Function): its examples, corrected, and its mistakes.

Each example is written against a `torch` argument. Corrected forms run on kit.torch and match
PyTorch; each mistake as printed in the seed fails on real PyTorch and on kit with the same
exception type, and kit's message says what to write instead.
"""

from __future__ import annotations

import pytest
from torch_oracle import libraries

import kit.torch

pytestmark = pytest.mark.filterwarnings(
    # Real PyTorch warns when a Function is instantiated (seed mistake 4); kit raises on the call.
    "ignore:.*should not be instantiated:DeprecationWarning"
)


def add_function(torch):
    class AddFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            c = a + b
            ctx.save_for_backward(a, b)  # 勾配計算に必要な入力を保存
            return c

        @staticmethod
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors  # 保存した入力を取得
            grad_a = grad_output
            grad_b = grad_output
            return grad_a, grad_b

    return AddFunction


def relu_function(torch):
    class ReluFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            output = input.clamp(min=0)
            ctx.save_for_backward(input)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            input = ctx.saved_tensors[0]
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input

    return ReluFunction


def dot_product_function(torch):
    class DotProductFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            inner_product = torch.dot(a, b)
            ctx.save_for_backward(a, b)
            return inner_product

        @staticmethod
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors
            # The seed's text breaks off at `grad_a`; d(a.b)/da = b and d(a.b)/db = a.
            grad_a = grad_output * b
            grad_b = grad_output * a
            return grad_a, grad_b

    return DotProductFunction


def my_function_as_printed(torch):
    class MyFunction(torch.autograd.Function):
        @staticmethod
        def forward(self, a, b):
            output = a + b
            return output

        @staticmethod
        def setup_context(self, a, b):
            self.save_for_backward(a, b)

    return MyFunction


def my_function_corrected(torch):
    class MyFunction(torch.autograd.Function):
        @staticmethod
        def forward(a, b):
            return a + b

        @staticmethod
        def setup_context(ctx, inputs, output):
            a, b = inputs
            ctx.save_for_backward(a, b)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    return MyFunction


# --- the corrected examples ------------------------------------------------------------------

@pytest.mark.parametrize("torch", libraries())
def test_add_corrected(torch):
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = add_function(torch).apply(x, y)
    z.backward()
    assert (z.item(), x.grad.item(), y.grad.item()) == (5.0, 1.0, 1.0)


@pytest.mark.parametrize("torch", libraries())
def test_relu_corrected_and_its_subgradient_at_zero(torch):
    x = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    relu = relu_function(torch).apply(x)
    relu.sum().backward()
    assert relu.tolist() == [0.0, 0.0, 2.0]
    # The seed's backward zeroes only input < 0, so at exactly 0 it passes the gradient (1).
    assert x.grad.tolist() == [0.0, 1.0, 1.0]
    x2 = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    torch.relu(x2).sum().backward()
    assert x2.grad.tolist() == [0.0, 0.0, 1.0]  # the built-in relu picks 0 at 0


@pytest.mark.parametrize("torch", libraries())
def test_dot_corrected(torch):
    a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([4.0, -5.0, 6.0], dtype=torch.float64, requires_grad=True)
    fn = dot_product_function(torch)
    out = fn.apply(a, b)
    out.backward()
    assert out.item() == 12.0
    assert a.grad.tolist() == [4.0, -5.0, 6.0] and b.grad.tolist() == [1.0, 2.0, 3.0]
    assert torch.autograd.gradcheck(fn.apply, (a, b))


@pytest.mark.parametrize("torch", libraries())
def test_both_forms_work(torch):
    """The seed claims forward must not take ctx since 2.0: both forms work, same results."""
    results = []
    for fn in (add_function(torch), my_function_corrected(torch)):
        x = torch.tensor(2.0, requires_grad=True)
        y = torch.tensor(3.0, requires_grad=True)
        z = fn.apply(x, y)
        z.backward()
        results.append((z.item(), x.grad.item(), y.grad.item()))
    assert results == [(5.0, 1.0, 1.0), (5.0, 1.0, 1.0)]


# --- the mistakes, as printed -------------------------------------------------------------

@pytest.mark.parametrize("torch", libraries())
def test_backward_without_requires_grad(torch):
    x = torch.tensor(2.0)  # as printed: no requires_grad=True
    y = torch.tensor(3.0)
    z = add_function(torch).apply(x, y)
    with pytest.raises(RuntimeError, match="does not require grad") as info:
        z.backward()
    if torch is kit.torch:
        assert "Fix: create the inputs with requires_grad=True" in str(info.value)


@pytest.mark.parametrize("torch", libraries())
def test_backward_on_a_vector(torch):
    x = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    relu = relu_function(torch).apply(x)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        relu.backward()
    if torch is kit.torch:
        with pytest.raises(RuntimeError, match=r"shape \[3\]. Fix: .*\.sum\(\)\.backward\(\)"):
            relu.backward()
    relu.backward(torch.ones_like(relu))  # the other fix: pass the gradient
    assert x.grad.tolist() == [0.0, 1.0, 1.0]


@pytest.mark.parametrize("torch", libraries())
def test_calling_an_instance(torch):
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0)
    f = my_function_corrected(torch)()
    with pytest.raises(RuntimeError, match="Legacy autograd function") as info:
        z = f(x, y)  # noqa: F841 - the seed's line
    if torch is kit.torch:
        assert str(info.value).endswith("\n    z = MyFunction.apply(x, y)")
        MyFunction = type(f)
        with pytest.raises(RuntimeError, match=r"\n    MyFunction\.apply\(x, y\) \* 2$"):
            MyFunction()(x, y) * 2


@pytest.mark.parametrize("torch", libraries())
def test_separate_forward_that_takes_ctx(torch):
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0)
    with pytest.raises(TypeError, match="missing a required argument: 'b'") as info:
        my_function_as_printed(torch).apply(x, y)
    if torch is kit.torch:
        assert "forward must not take ctx: its first parameter 'self'" in str(info.value)


@pytest.mark.parametrize("torch", libraries())
def test_setup_context_that_saves_the_inputs_tuple(torch):
    class MyFunction(my_function_as_printed(torch)):
        @staticmethod
        def forward(a, b):  # forward fixed, the seed's setup_context(self, a, b) kept
            return a + b

    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0)
    with pytest.raises(TypeError, match="save_for_backward can only save") as info:
        MyFunction.apply(x, y)
    if torch is kit.torch:
        assert "unpack the tuple" in str(info.value) and "x, y = inputs" in str(info.value)


@pytest.mark.parametrize("torch", libraries())
def test_missing_backward(torch):
    class MyFunction(torch.autograd.Function):
        @staticmethod
        def forward(a, b):
            return a + b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

    z = MyFunction.apply(torch.tensor(2.0, requires_grad=True), torch.tensor(3.0))
    assert z.item() == 5.0  # forward alone works: a Function without backward is legal
    with pytest.raises(NotImplementedError, match="must implement either the backward or vjp"):
        z.backward()


def test_vmap_of_the_class():
    """vmap(MyFunction) is wrong; vmap(MyFunction.apply) with a vmap rule is right (kit.func)."""
    func = pytest.importorskip("kit.func")
    if not hasattr(func, "vmap"):
        pytest.skip("kit.func.vmap is not built yet")
    my_function = my_function_corrected(kit.torch)
    x = kit.torch.tensor([1.0, 2.0, 3.0])
    y = kit.torch.tensor([2.0, 3.0, 4.0])
    with pytest.raises((TypeError, RuntimeError, ValueError), match=r"MyFunction\.apply"):
        func.vmap(my_function)(x, y)

    class Batched(my_function):
        generate_vmap_rule = True

    assert func.vmap(Batched.apply)(x, y).tolist() == [3.0, 5.0, 7.0]
