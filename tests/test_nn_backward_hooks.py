"""Module backward hooks (kit/nn/hooks.py): register_full_backward_hook and
register_full_backward_pre_hook, run on kit.torch and, where installed, on real PyTorch."""

import numpy as np
import pytest
from torch_oracle import is_kit, libraries

import kit
import kit.nn.hooks
import kit.torch

LIBS = libraries()
QUIET = pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # PyTorch's, not kit's


def values(grads):
    return [None if g is None else g.detach().numpy().round(6).tolist() for g in grads]


def linear(torch):
    layer = torch.nn.Linear(2, 1)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, 2.0]]))
        layer.bias.zero_()
    return layer


@pytest.mark.parametrize("torch", LIBS)
@QUIET
def test_the_hook_sees_grad_input_and_grad_output(torch):
    layer, seen = linear(torch), []
    handle = layer.register_full_backward_hook(
        lambda m, gi, go: seen.append((m is layer, values(gi), values(go))))
    x = torch.tensor([[1.0, 1.0]], requires_grad=True)
    (layer(x) * 3).sum().backward()
    (layer(torch.tensor([[1.0, 1.0]])) * 3).sum().backward()  # no input requires grad
    handle.remove()
    layer(x).sum().backward()
    assert seen == [(True, [[[3.0, 6.0]]], [[[3.0]]]), (True, [None], [[[3.0]]])]


@pytest.mark.parametrize("torch", LIBS)
def test_hooks_may_replace_gradients(torch):
    layer = linear(torch)
    layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 0.5,))
    seen = []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append((values(gi), values(go))))
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10,))
    x = torch.tensor([[1.0, 1.0]], requires_grad=True)
    (layer(x) * 3).sum().backward()
    assert seen == [([[[1.5, 3.0]]], [[[1.5]]])]
    assert x.grad.tolist() == [[15.0, 30.0]]
    assert layer.weight.grad.tolist() == [[1.5, 1.5]]  # the pre-hook's grad_output reached it


@pytest.mark.parametrize("torch", LIBS)
def test_several_inputs_and_outputs(torch):
    class Two(torch.nn.Module):
        def forward(self, a, k, b):
            return a * k + b, a - b

    module, seen = Two(), []
    module.register_full_backward_hook(lambda m, gi, go: seen.append((values(gi), values(go))))
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    first, _ = module(a, 2.0, b)
    first.sum().backward()  # the second output is unused: its grad_output is None
    assert seen == [([[2.0, 2.0], None, [1.0, 1.0]], [[1.0, 1.0], None])]


@pytest.mark.parametrize("torch", LIBS)
def test_an_input_without_grad_is_none_in_kit(torch):
    class Two(torch.nn.Module):
        def forward(self, a, b):
            return a * b

    module, seen = Two(), []
    module.register_full_backward_hook(lambda m, gi, go: seen.append(values(gi)))
    module(torch.tensor([1.0], requires_grad=True), torch.tensor([3.0])).sum().backward()
    # NOTE: PyTorch hands zeros for b, which does not require grad; kit hands None
    assert seen == [[[3.0], None if is_kit(torch) else [0.0]]]


@pytest.mark.parametrize("torch", LIBS)
def test_order_reuse_and_no_grad(torch):
    torch.manual_seed(0)
    seq = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh())
    order = []
    for name, module in seq.named_modules():
        module.register_full_backward_hook(lambda m, gi, go, name=name: order.append(name))
    seq(torch.ones(1, 2, requires_grad=True)).sum().backward()
    assert order == ["1", "0", ""]  # from the output back to the input
    layer, calls = seq[0], []
    layer.register_full_backward_hook(lambda m, gi, go: calls.append(values(go)))
    layer(layer(torch.ones(1, 2, requires_grad=True))).sum().backward()
    assert len(calls) == 2 and calls[0] == [[[1.0, 1.0]]]  # the outer call's first
    with torch.no_grad():
        assert not layer(torch.ones(1, 2)).requires_grad


@pytest.mark.parametrize("torch", LIBS)
def test_a_hook_returning_the_wrong_number_of_gradients(torch):
    layer = linear(torch)
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                           "grad_input, got 2, but expected 1"):
        layer(torch.ones(1, 2, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("torch", LIBS)
@pytest.mark.parametrize("returned", [3.0, (3.0,)], ids=["a float", "a tuple of a float"])
def test_a_hook_returning_something_else_than_gradients(torch, returned):
    layer = linear(torch)
    layer.register_full_backward_hook(lambda m, gi, go: returned)
    with pytest.raises(TypeError):
        layer(torch.ones(1, 2, requires_grad=True)).sum().backward()


def test_kit_says_a_lambda_returned_its_value():
    layer = linear(kit.torch)
    seen = {}
    layer.register_full_backward_hook(lambda m, gi, go: seen.setdefault("norm", 1.5))
    with pytest.raises(TypeError, match="a backward hook of Linear returned float: it must return "
                                        "None .* use a def that returns nothing"):
        layer(kit.ones(1, 2, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("torch", LIBS)
def test_gradients_are_unchanged_and_double_backward_works(torch):
    torch.manual_seed(1)
    layer = torch.nn.Linear(3, 3).double()
    x = torch.tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)

    def second_derivative():
        (gx,) = torch.autograd.grad(torch.tanh(layer(x)).pow(2).sum(), x, create_graph=True)
        (ggx,) = torch.autograd.grad(gx.sum(), x)
        return gx.detach().numpy(), ggx.numpy()

    plain = second_derivative()
    layer.register_full_backward_hook(lambda m, gi, go: None)
    hooked = second_derivative()
    for a, b in zip(plain, hooked, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_kit_gives_right_gradients_where_pytorch_forbids_an_inplace_change():
    # PyTorch raises "Output 0 of BackwardHookFunction is a view and is being modified inplace";
    # kit's views rewrite the history instead (kit/_inplace.py), so the hook sees true values.
    class Doubles(kit.nn.Module):
        def forward(self, x):
            return x.mul_(2)

    module, seen = Doubles(), []
    module.register_full_backward_hook(lambda m, gi, go: seen.append((values(gi), values(go))))
    x = kit.ones(2, requires_grad=True)
    (module(x * 1) * 3).sum().backward()
    assert seen == [([[6.0, 6.0]], [[3.0, 3.0]])] and x.grad.tolist() == [6.0, 6.0]


def test_the_docstring_example_runs():
    import doctest

    result = doctest.testmod(kit.nn.hooks)
    assert result.attempted >= 5 and result.failed == 0
